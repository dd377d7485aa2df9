#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"

struct problem_type {
	const char		*code;
	const char		*title;
	enum problem_retry	 retry;		/* its Should-Retry */
};

#define NO		PROBLEM_RETRY_NO
#define YES		PROBLEM_RETRY_YES
#define UNRECORDED	PROBLEM_RETRY_UNRECORDED

/*
 * Every code the service answers with, its human title and whether the
 * same key and body sent again may get another answer (Should-Retry). A
 * code without a title of its own is titled by the reason phrase of its
 * status.
 */
static const struct problem_type problem_types[PROBLEM_COUNT] = {
	[PROBLEM_NONE] = { NULL, NULL, NO },
	[PROBLEM_UNAUTHENTICATED] = { "UNAUTHENTICATED",
	    "Authentication required", NO },
	[PROBLEM_FRONTEND_SECRET_MISMATCH] = { "FRONTEND_SECRET_MISMATCH",
	    "Request did not come through the web server", NO },
	[PROBLEM_FORBIDDEN] = { "FORBIDDEN", "Forbidden", NO },
	[PROBLEM_NOT_FOUND] = { "NOT_FOUND", "No such resource", NO },
	[PROBLEM_METHOD_NOT_ALLOWED] = { "METHOD_NOT_ALLOWED",
	    "Method not allowed", NO },
	[PROBLEM_ORDER_NOT_FOUND] = { "ORDER_NOT_FOUND", "Order not found",
	    NO },
	[PROBLEM_IDEMPOTENCY_KEY_MISSING] = { "IDEMPOTENCY_KEY_MISSING",
	    "Idempotency-Key header required", NO },
	[PROBLEM_IDEMPOTENCY_KEY_INVALID] = { "IDEMPOTENCY_KEY_INVALID",
	    "Idempotency-Key header invalid", NO },
	[PROBLEM_UNSUPPORTED_MEDIA_TYPE] = { "UNSUPPORTED_MEDIA_TYPE",
	    "Content-Type must be application/json", NO },
	[PROBLEM_PAYLOAD_TOO_LARGE] = { "PAYLOAD_TOO_LARGE",
	    "Request body too large", NO },
	[PROBLEM_MALFORMED_JSON] = { "MALFORMED_JSON",
	    "Request body is not valid JSON", NO },
	[PROBLEM_VALIDATION_FAILED] = { "VALIDATION_FAILED",
	    "Request body failed validation", NO },
	[PROBLEM_IDEMPOTENCY_KEY_REUSED] = { "IDEMPOTENCY_KEY_REUSED",
	    "Idempotency-Key already used for another request", NO },
	[PROBLEM_IDEMPOTENCY_KEY_EXPIRED] = { "IDEMPOTENCY_KEY_EXPIRED",
	    "Idempotency-Key expired", NO },
	[PROBLEM_REQUEST_IN_PROGRESS] = { "REQUEST_IN_PROGRESS",
	    "A request with this Idempotency-Key is in progress", YES },
	[PROBLEM_REQUEST_STATUS_UNCONFIRMED] = { "REQUEST_STATUS_UNCONFIRMED",
	    "The outcome of the earlier request is not confirmed yet", YES },
	[PROBLEM_UNKNOWN_IDEMPOTENCY_STATE] = { "UNKNOWN_IDEMPOTENCY_STATE",
	    "Unknown idempotency record state", NO },
	[PROBLEM_UNKNOWN_SKU] = { "UNKNOWN_SKU", "Unknown SKU", NO },
	[PROBLEM_CURRENCY_MISMATCH] = { "CURRENCY_MISMATCH",
	    "Currency does not match the SKU", NO },
	[PROBLEM_AMOUNT_MISMATCH] = { "AMOUNT_MISMATCH",
	    "Amount does not match the items", NO },
	[PROBLEM_OUT_OF_STOCK] = { "OUT_OF_STOCK", "Out of stock", UNRECORDED },
	[PROBLEM_ORDER_ALREADY_CANCELLED] = { "ORDER_ALREADY_CANCELLED",
	    "Order already cancelled", NO },
	[PROBLEM_ORDER_NOT_CANCELLABLE] = { "ORDER_NOT_CANCELLABLE",
	    "Order can no longer be cancelled", NO },
	[PROBLEM_STOCK_ROW_MISSING] = { "STOCK_ROW_MISSING",
	    "An item's stock row is missing", YES },
	[PROBLEM_RETRY_LIMIT_REACHED] = { "RETRY_LIMIT_REACHED",
	    "Retry limit reached", YES },
	[PROBLEM_RETRY_DEADLINE_EXCEEDED] = { "RETRY_DEADLINE_EXCEEDED",
	    "Request deadline exceeded", YES },
	[PROBLEM_SERVICE_UNAVAILABLE] = { "SERVICE_UNAVAILABLE",
	    "Service unavailable", YES },
	[PROBLEM_NOT_IMPLEMENTED] = { "NOT_IMPLEMENTED", "Not implemented",
	    NO },
	[PROBLEM_INTERNAL_ERROR] = { "INTERNAL_ERROR", "Internal error", YES },
	[PROBLEM_DATABASE_UNAVAILABLE] = { "DATABASE_UNAVAILABLE", NULL, YES },
	[PROBLEM_FAULT_SPEC_INVALID] = { "FAULT_SPEC_INVALID", NULL, NO },
};

#undef NO
#undef YES
#undef UNRECORDED

/*
 * Whether the answer with code (PROBLEM_NONE: a success) may change when
 * the same key and body are sent again, the answer recorded in the
 * ledger (a final rejection) or a stored answer replayed (replayed).
 */
int
problem_should_retry(enum problem_code code, int recorded, int replayed)
{
	if (replayed || (unsigned int)code >= PROBLEM_COUNT)
		return 0;
	switch (problem_types[code].retry) {
	case PROBLEM_RETRY_YES:
		return 1;
	case PROBLEM_RETRY_UNRECORDED:
		return !recorded;
	default:
		return 0;
	}
}

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
