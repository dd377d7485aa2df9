/*
 * An HTTP response under construction: status, header lines and body.
 * Handlers fill one; the worker writes it to FastCGI.  The ledger stores
 * status, headers and body of a final response and replays them as they
 * are.
 */
#ifndef IDEMORDERS_RESPONSE_H
#define IDEMORDERS_RESPONSE_H

#include "buf.h"
#include "outcome.h"
#include "problem.h"

#define RESPONSE_HEADERS_MAX	4096
#define RESPONSE_BODY_MAX	(256 * 1024)

struct response {
	int			 status;
	struct buf		 headers;	/* "Name: value\r\n" lines */
	struct buf		 body;
	enum outcome		 outcome;	/* for the log and the metrics */
	enum problem_code	 code;		/* or PROBLEM_NONE */
};

void	response_init(struct response *);
void	response_clear(struct response *);
void	response_reset(struct response *);
int	response_header(struct response *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	response_problem(struct response *, const struct problem *);
int	response_error(struct response *, enum problem_code, const char *,
	    ...) __attribute__((format(printf, 3, 4)));
int	response_json(struct response *, int, const char *, size_t);

#endif
