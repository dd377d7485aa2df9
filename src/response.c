#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "response.h"

/* Start an empty response. */
void
response_init(struct response *r)
{
	r->status = 0;
	buf_init(&r->headers, RESPONSE_HEADERS_MAX);
	buf_init(&r->body, RESPONSE_BODY_MAX);
	r->outcome = OUTCOME_NONE;
	r->code = PROBLEM_NONE;
}

/* Release the storage of a response. */
void
response_clear(struct response *r)
{
	if (r == NULL)
		return;
	buf_free(&r->headers);
	buf_free(&r->body);
}

/* Empty a response so that it can be filled again. */
void
response_reset(struct response *r)
{
	r->status = 0;
	buf_reset(&r->headers);
	buf_reset(&r->body);
	r->outcome = OUTCOME_NONE;
	r->code = PROBLEM_NONE;
}

/* Append one header line; the value is formatted like printf. */
int
response_header(struct response *r, const char *name, const char *fmt, ...)
{
	va_list	 ap;
	int	 rc;

	rc = buf_printf(&r->headers, "%s: ", name);
	if (rc != BUF_OK)
		return rc;
	va_start(ap, fmt);
	rc = buf_vprintf(&r->headers, fmt, ap);
	va_end(ap);
	if (rc != BUF_OK)
		return rc;
	return buf_adds(&r->headers, "\r\n");
}

/* Replace the response by a problem+json error. */
int
response_problem(struct response *r, const struct problem *p)
{
	response_reset(r);
	r->status = p->status;
	r->code = p->code;
	r->outcome = problem_outcome(p->code);
	if (response_header(r, "Content-Type", "application/problem+json") != 0)
		return -1;
	return problem_render(p, &r->body);
}

/*
 * Replace the response by a problem of code (its status and outcome from
 * the problem table); detail is formatted like printf.
 */
int
response_error(struct response *r, enum problem_code code, const char *fmt,
    ...)
{
	struct problem	 p;
	va_list		 ap;

	va_start(ap, fmt);
	problem_vset(&p, code, fmt, ap);
	va_end(ap);
	return response_problem(r, &p);
}

/* Replace the response by a JSON document. */
int
response_json(struct response *r, int status, const char *json, size_t len)
{
	response_reset(r);
	r->status = status;
	if (response_header(r, "Content-Type", "application/json") != 0)
		return -1;
	return buf_add(&r->body, json, len);
}
