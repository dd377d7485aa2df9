/*
 * What the worker hands a handler and what a handler answers.  A request
 * is plain data filled by the worker from FastCGI, so that the handlers
 * never see libfcgi; the strings are the worker's, valid until the
 * answer is sent.
 */
#ifndef IDEMORDERS_REQUEST_H
#define IDEMORDERS_REQUEST_H

#include <stddef.h>

#define REQUEST_LOG_KEY_MAX	255	/* bytes of the key in the log */

struct request {
	const char	*method;
	const char	*uri;
	const char	*principal;	/* from the web server, or NULL */
	const char	*remote_addr;	/* REMOTE_ADDR, or NULL */
	const char	*content_type;
	const char	*idempotency_key;	/* raw header value */
	const char	*fault;		/* raw X-Idemorders-Fault header */
	const char	*body;
	size_t		 body_len;
	int		 body_too_large;

	/* Filled by the handler for the request log. */
	char		 log_key[REQUEST_LOG_KEY_MAX + 1];	/* "": none */
	int		 attempts;
	int		 operation;	/* enum metrics_operation, 0: none */
};

/* What the worker does with the response a handler made. */
enum handler_result {
	HANDLER_ANSWER = 0,	/* send it */
	HANDLER_DROP,		/* fault injection: send nothing */
};

#endif
