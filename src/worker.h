/*
 * A responder process: accepts FastCGI requests on the shared listening
 * socket, one at a time, with one persistent database connection.
 */
#ifndef IDEMORDERS_WORKER_H
#define IDEMORDERS_WORKER_H

#include "request.h"

struct conf;
struct db;
struct response;

/* Answers one request; db is NULL when the handler needs none. */
typedef enum handler_result (*request_handler)(struct db *,
    const struct conf *, struct request *, struct response *);

/* Completes every answer, whoever made it (may be NULL). */
typedef void (*answer_finisher)(const struct request *, struct response *);

struct worker_ops {
	request_handler	 handle;
	int		 needs_db;
	answer_finisher	 finish;
};

/* Exit statuses a worker reports to the supervisor. */
#define WORKER_EXIT_RECYCLE	0	/* served max_requests, or asked to stop */
#define WORKER_EXIT_FAILURE	1	/* could not serve: a crash for the rate limit */

int	worker_main(const struct conf *, int, const struct worker_ops *);

#endif
