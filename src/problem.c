#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"

struct problem_type {
	const char	*code;
	const char	*title;
};

/* Every code the service answers with, and its human title. */
static const struct problem_type problem_types[] = {
	{ "UNAUTHENTICATED", "Authentication required" },
	{ "FRONTEND_SECRET_MISMATCH", "Request did not come through the web server" },
	{ "FORBIDDEN", "Forbidden" },
	{ "NOT_FOUND", "No such resource" },
	{ "METHOD_NOT_ALLOWED", "Method not allowed" },
	{ "ORDER_NOT_FOUND", "Order not found" },
	{ "IDEMPOTENCY_KEY_MISSING", "Idempotency-Key header required" },
	{ "IDEMPOTENCY_KEY_INVALID", "Idempotency-Key header invalid" },
	{ "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json" },
	{ "PAYLOAD_TOO_LARGE", "Request body too large" },
	{ "MALFORMED_JSON", "Request body is not valid JSON" },
	{ "VALIDATION_FAILED", "Request body failed validation" },
	{ "IDEMPOTENCY_KEY_REUSED",
	    "Idempotency-Key already used for another request" },
	{ "IDEMPOTENCY_KEY_EXPIRED", "Idempotency-Key expired" },
	{ "REQUEST_IN_PROGRESS",
	    "A request with this Idempotency-Key is in progress" },
	{ "REQUEST_STATUS_UNCONFIRMED",
	    "The outcome of the earlier request is not confirmed yet" },
	{ "UNKNOWN_IDEMPOTENCY_STATE", "Unknown idempotency record state" },
	{ "UNKNOWN_SKU", "Unknown SKU" },
	{ "CURRENCY_MISMATCH", "Currency does not match the SKU" },
	{ "AMOUNT_MISMATCH", "Amount does not match the items" },
	{ "OUT_OF_STOCK", "Out of stock" },
	{ "RETRY_LIMIT_REACHED", "Retry limit reached" },
	{ "RETRY_DEADLINE_EXCEEDED", "Request deadline exceeded" },
	{ "SERVICE_UNAVAILABLE", "Service unavailable" },
	{ "NOT_IMPLEMENTED", "Not implemented" },
	{ "INTERNAL_ERROR", "Internal error" },
};

/* Fill a problem; detail is formatted like printf. */
void
problem_set(struct problem *p, int status, const char *code,
    const char *fmt, ...)
{
	va_list	 ap;

	p->status = status;
	p->code = code;
	p->order_id[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
	va_end(ap);
}

/* Return the title for a code, or the status text for unknown codes. */
const char *
problem_title(const char *code)
{
	size_t	 i;

	for (i = 0; i < sizeof(problem_types) / sizeof(problem_types[0]); i++)
		if (strcmp(problem_types[i].code, code) == 0)
			return problem_types[i].title;
	return NULL;
}

/* Return the reason phrase of an HTTP status. */
const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

/*
 * Render the problem as an RFC 9457 JSON object.  The type is a tag URI
 * derived from the code, so that clients can switch on either.
 */
int
problem_render(const struct problem *p, struct buf *out)
{
	const char	*title;
	char		 type[96];
	size_t		 i;
	int		 rc;

	title = problem_title(p->code);
	if (title == NULL)
		title = http_reason(p->status);
	snprintf(type, sizeof(type), "tag:idemorders,2026:problem:%s", p->code);
	for (i = strlen("tag:idemorders,2026:problem:"); type[i] != '\0'; i++)
		type[i] = type[i] == '_' ? '-' : (char)(type[i] | 0x20);
	rc = buf_adds(out, "{\"type\":");
	if (rc == 0)
		rc = buf_add_json_string(out, type, strlen(type));
	if (rc == 0)
		rc = buf_adds(out, ",\"title\":");
	if (rc == 0)
		rc = buf_add_json_string(out, title, strlen(title));
	if (rc == 0)
		rc = buf_printf(out, ",\"status\":%d,\"detail\":", p->status);
	if (rc == 0)
		rc = buf_add_json_string(out, p->detail, strlen(p->detail));
	if (rc == 0 && p->order_id[0] != '\0') {
		rc = buf_adds(out, ",\"orderId\":");
		if (rc == 0)
			rc = buf_add_json_string(out, p->order_id,
			    strlen(p->order_id));
	}
	if (rc == 0)
		rc = buf_adds(out, ",\"code\":");
	if (rc == 0)
		rc = buf_add_json_string(out, p->code, strlen(p->code));
	if (rc == 0)
		rc = buf_addc(out, '}');
	return rc;
}
