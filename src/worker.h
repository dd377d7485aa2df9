/*
 * A responder process: accepts FastCGI requests on the shared listening
 * socket, one at a time, with one persistent database connection.
 */
#ifndef IDEMORDERS_WORKER_H
#define IDEMORDERS_WORKER_H

struct conf;

/* Exit statuses a worker reports to the supervisor. */
#define WORKER_EXIT_RECYCLE	0	/* served max_requests, or asked to stop */
#define WORKER_EXIT_FAILURE	1

int	worker_main(const struct conf *, int);

#endif
