/*
 * RFC 9457 problem details: the error every handler returns and the one
 * place that renders it.  A problem is plain data, so that pure modules
 * (input validation) can report one without knowing about HTTP.
 */
#ifndef IDEMORDERS_PROBLEM_H
#define IDEMORDERS_PROBLEM_H

#include "buf.h"

struct problem {
	int		 status;	/* HTTP status */
	const char	*code;		/* static UPPER_CASE code */
	char		 detail[256];
	char		 order_id[32];	/* extension member "orderId" if set */
};

void	problem_set(struct problem *, int, const char *, const char *, ...)
	    __attribute__((format(printf, 4, 5)));
const char *problem_title(const char *);
int	problem_render(const struct problem *, struct buf *);
const char *http_reason(int);

#endif
