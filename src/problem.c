#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"

struct problem_type {
	const char	*code;
	const char	*title;
};

/*
 * Every code the service answers with, and its human title.  A code
 * without a title of its own is titled by the reason phrase of its
 * status.
 */
static const struct problem_type problem_types[PROBLEM_COUNT] = {
	[PROBLEM_NONE] = { NULL, NULL },
	[PROBLEM_UNAUTHENTICATED] = { "UNAUTHENTICATED",
	    "Authentication required" },
	[PROBLEM_FRONTEND_SECRET_MISMATCH] = { "FRONTEND_SECRET_MISMATCH",
	    "Request did not come through the web server" },
	[PROBLEM_FORBIDDEN] = { "FORBIDDEN", "Forbidden" },
	[PROBLEM_NOT_FOUND] = { "NOT_FOUND", "No such resource" },
	[PROBLEM_METHOD_NOT_ALLOWED] = { "METHOD_NOT_ALLOWED",
	    "Method not allowed" },
	[PROBLEM_ORDER_NOT_FOUND] = { "ORDER_NOT_FOUND", "Order not found" },
	[PROBLEM_IDEMPOTENCY_KEY_MISSING] = { "IDEMPOTENCY_KEY_MISSING",
	    "Idempotency-Key header required" },
	[PROBLEM_IDEMPOTENCY_KEY_INVALID] = { "IDEMPOTENCY_KEY_INVALID",
	    "Idempotency-Key header invalid" },
	[PROBLEM_UNSUPPORTED_MEDIA_TYPE] = { "UNSUPPORTED_MEDIA_TYPE",
	    "Content-Type must be application/json" },
	[PROBLEM_PAYLOAD_TOO_LARGE] = { "PAYLOAD_TOO_LARGE",
	    "Request body too large" },
	[PROBLEM_MALFORMED_JSON] = { "MALFORMED_JSON",
	    "Request body is not valid JSON" },
	[PROBLEM_VALIDATION_FAILED] = { "VALIDATION_FAILED",
	    "Request body failed validation" },
	[PROBLEM_IDEMPOTENCY_KEY_REUSED] = { "IDEMPOTENCY_KEY_REUSED",
	    "Idempotency-Key already used for another request" },
	[PROBLEM_IDEMPOTENCY_KEY_EXPIRED] = { "IDEMPOTENCY_KEY_EXPIRED",
	    "Idempotency-Key expired" },
	[PROBLEM_REQUEST_IN_PROGRESS] = { "REQUEST_IN_PROGRESS",
	    "A request with this Idempotency-Key is in progress" },
	[PROBLEM_REQUEST_STATUS_UNCONFIRMED] = { "REQUEST_STATUS_UNCONFIRMED",
	    "The outcome of the earlier request is not confirmed yet" },
	[PROBLEM_UNKNOWN_IDEMPOTENCY_STATE] = { "UNKNOWN_IDEMPOTENCY_STATE",
	    "Unknown idempotency record state" },
	[PROBLEM_UNKNOWN_SKU] = { "UNKNOWN_SKU", "Unknown SKU" },
	[PROBLEM_CURRENCY_MISMATCH] = { "CURRENCY_MISMATCH",
	    "Currency does not match the SKU" },
	[PROBLEM_AMOUNT_MISMATCH] = { "AMOUNT_MISMATCH",
	    "Amount does not match the items" },
	[PROBLEM_OUT_OF_STOCK] = { "OUT_OF_STOCK", "Out of stock" },
	[PROBLEM_ORDER_ALREADY_CANCELLED] = { "ORDER_ALREADY_CANCELLED",
	    "Order already cancelled" },
	[PROBLEM_ORDER_NOT_CANCELLABLE] = { "ORDER_NOT_CANCELLABLE",
	    "Order can no longer be cancelled" },
	[PROBLEM_RETRY_LIMIT_REACHED] = { "RETRY_LIMIT_REACHED",
	    "Retry limit reached" },
	[PROBLEM_RETRY_DEADLINE_EXCEEDED] = { "RETRY_DEADLINE_EXCEEDED",
	    "Request deadline exceeded" },
	[PROBLEM_SERVICE_UNAVAILABLE] = { "SERVICE_UNAVAILABLE",
	    "Service unavailable" },
	[PROBLEM_NOT_IMPLEMENTED] = { "NOT_IMPLEMENTED", "Not implemented" },
	[PROBLEM_INTERNAL_ERROR] = { "INTERNAL_ERROR", "Internal error" },
	[PROBLEM_DATABASE_UNAVAILABLE] = { "DATABASE_UNAVAILABLE", NULL },
	[PROBLEM_FAULT_SPEC_INVALID] = { "FAULT_SPEC_INVALID", NULL },
};

/* Fill a problem; detail is formatted like printf. */
void
problem_set(struct problem *p, int status, enum problem_code code,
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

/* Return the UPPER_CASE word of a code, or NULL for PROBLEM_NONE. */
const char *
problem_code_name(enum problem_code code)
{
	if ((unsigned int)code >= PROBLEM_COUNT)
		return NULL;
	return problem_types[code].code;
}

/* Return the title of a code, or NULL when it has none of its own. */
const char *
problem_title(enum problem_code code)
{
	if ((unsigned int)code >= PROBLEM_COUNT)
		return NULL;
	return problem_types[code].title;
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
	const char	*title, *code;
	char		 type[96];
	size_t		 i;
	int		 rc;

	code = problem_code_name(p->code);
	if (code == NULL)
		code = "";
	title = problem_title(p->code);
	if (title == NULL)
		title = http_reason(p->status);
	snprintf(type, sizeof(type), "tag:idemorders,2026:problem:%s", code);
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
		rc = buf_add_json_string(out, code, strlen(code));
	if (rc == 0)
		rc = buf_addc(out, '}');
	return rc;
}
