/*
 * The HTTP handlers: route, authenticate, check, dispatch.  A request is
 * plain data filled by the worker from FastCGI, so that the handlers
 * never see libfcgi.
 */
#ifndef IDEMORDERS_ORDER_API_H
#define IDEMORDERS_ORDER_API_H

#include <stddef.h>

#include "order_create.h"

struct conf;
struct db;
struct response;

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
	const char	*log_key;
	int		 attempts;
};

enum create_result order_api_handle(struct db *, const struct conf *,
	    struct request *, struct response *);
void	order_api_echo_key(const struct request *, struct response *);

#endif
