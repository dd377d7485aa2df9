#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"

struct problem_type {
	const char		*code;
	const char		*title;
	int			 status;	/* its HTTP status */
	enum outcome		 outcome;	/* its word in log and metrics */
	enum problem_retry	 retry;		/* its Should-Retry */
	int			 retry_after;	/* s, where Should-Retry, or 0 */
};

#define NO		PROBLEM_RETRY_NO
#define YES		PROBLEM_RETRY_YES
#define UNRECORDED	PROBLEM_RETRY_UNRECORDED
#define ERROR		OUTCOME_ERROR

/*
 * Every answer the service gives with a problem: its code, human title,
 * HTTP status, outcome (the word of the request log and the metrics;
 * "error" is labelled by the status), whether the same key and body sent
 * again may get another answer (Should-Retry), and the Retry-After it
 * then carries.  No handler writes these by hand: the status of
 * IDEMPOTENCY_KEY_REUSED alone moves with key_reused_status.  A code
 * without a title of its own is titled by the reason phrase of its
 * status; two rows may share a code where one answer has two causes.
 */
static const struct problem_type problem_types[PROBLEM_COUNT] = {
	[PROBLEM_NONE] = { NULL, NULL, 200, OUTCOME_NONE, NO, 0 },
	[PROBLEM_UNAUTHENTICATED] = { "UNAUTHENTICATED",
	    "Authentication required", 401, ERROR, NO, 0 },
	[PROBLEM_FRONTEND_SECRET_MISMATCH] = { "FRONTEND_SECRET_MISMATCH",
	    "Request did not come through the web server", 403,
	    OUTCOME_FORBIDDEN, NO, 0 },
	[PROBLEM_FORBIDDEN] = { "FORBIDDEN", "Forbidden", 403, ERROR, NO, 0 },
	[PROBLEM_NOT_FOUND] = { "NOT_FOUND", "No such resource", 404, ERROR,
	    NO, 0 },
	[PROBLEM_METHOD_NOT_ALLOWED] = { "METHOD_NOT_ALLOWED",
	    "Method not allowed", 405, ERROR, NO, 0 },
	[PROBLEM_ORDER_NOT_FOUND] = { "ORDER_NOT_FOUND", "Order not found",
	    404, ERROR, NO, 0 },
	[PROBLEM_IDEMPOTENCY_KEY_MISSING] = { "IDEMPOTENCY_KEY_MISSING",
	    "Idempotency-Key header required", 400, ERROR, NO, 0 },
	[PROBLEM_IDEMPOTENCY_KEY_INVALID] = { "IDEMPOTENCY_KEY_INVALID",
	    "Idempotency-Key header invalid", 400, ERROR, NO, 0 },
	[PROBLEM_UNSUPPORTED_MEDIA_TYPE] = { "UNSUPPORTED_MEDIA_TYPE",
	    "Content-Type must be application/json", 415, ERROR, NO, 0 },
	[PROBLEM_PAYLOAD_TOO_LARGE] = { "PAYLOAD_TOO_LARGE",
	    "Request body too large", 413, ERROR, NO, 0 },
	[PROBLEM_MALFORMED_JSON] = { "MALFORMED_JSON",
	    "Request body is not valid JSON", 400, ERROR, NO, 0 },
	[PROBLEM_VALIDATION_FAILED] = { "VALIDATION_FAILED",
	    "Request body failed validation", 400, ERROR, NO, 0 },
	[PROBLEM_IDEMPOTENCY_KEY_REUSED] = { "IDEMPOTENCY_KEY_REUSED",
	    "Idempotency-Key already used for another request", 409,
	    OUTCOME_CONFLICT, NO, 0 },
	[PROBLEM_IDEMPOTENCY_KEY_EXPIRED] = { "IDEMPOTENCY_KEY_EXPIRED",
	    "Idempotency-Key expired", 410, OUTCOME_EXPIRED, NO, 0 },
	[PROBLEM_REQUEST_IN_PROGRESS] = { "REQUEST_IN_PROGRESS",
	    "A request with this Idempotency-Key is in progress", 409,
	    OUTCOME_IN_PROGRESS, YES, 1 },
	[PROBLEM_REQUEST_STATUS_UNCONFIRMED] = { "REQUEST_STATUS_UNCONFIRMED",
	    "The outcome of the earlier request is not confirmed yet", 409,
	    OUTCOME_UNCONFIRMED, YES, 1 },
	[PROBLEM_COMMIT_UNCONFIRMED] = { "REQUEST_STATUS_UNCONFIRMED",
	    "The outcome of the earlier request is not confirmed yet", 503,
	    OUTCOME_UNCONFIRMED, YES, 1 },
	[PROBLEM_UNKNOWN_IDEMPOTENCY_STATE] = { "UNKNOWN_IDEMPOTENCY_STATE",
	    "Unknown idempotency record state", 500, OUTCOME_INTERNAL_ERROR,
	    NO, 0 },
	[PROBLEM_UNKNOWN_SKU] = { "UNKNOWN_SKU", "Unknown SKU", 422, ERROR,
	    NO, 0 },
	[PROBLEM_CURRENCY_MISMATCH] = { "CURRENCY_MISMATCH",
	    "Currency does not match the SKU", 422, ERROR, NO, 0 },
	[PROBLEM_AMOUNT_MISMATCH] = { "AMOUNT_MISMATCH",
	    "Amount does not match the items", 422, ERROR, NO, 0 },
	[PROBLEM_OUT_OF_STOCK] = { "OUT_OF_STOCK", "Out of stock", 409,
	    OUTCOME_OUT_OF_STOCK, UNRECORDED, 60 },
	[PROBLEM_ORDER_ALREADY_CANCELLED] = { "ORDER_ALREADY_CANCELLED",
	    "Order already cancelled", 409, ERROR, NO, 0 },
	[PROBLEM_ORDER_NOT_CANCELLABLE] = { "ORDER_NOT_CANCELLABLE",
	    "Order can no longer be cancelled", 409, ERROR, NO, 0 },
	[PROBLEM_STOCK_ROW_MISSING] = { "STOCK_ROW_MISSING",
	    "An item's stock row is missing", 500, OUTCOME_INTERNAL_ERROR, YES,
	    0 },
	[PROBLEM_RETRY_LIMIT_REACHED] = { "RETRY_LIMIT_REACHED",
	    "Retry limit reached", 503, OUTCOME_RETRY_LIMIT, YES, 1 },
	[PROBLEM_RETRY_DEADLINE_EXCEEDED] = { "RETRY_DEADLINE_EXCEEDED",
	    "Request deadline exceeded", 503, OUTCOME_DEADLINE, YES, 1 },
	[PROBLEM_SERVICE_UNAVAILABLE] = { "SERVICE_UNAVAILABLE",
	    "Service unavailable", 503, ERROR, YES, 5 },
	[PROBLEM_NOT_IMPLEMENTED] = { "NOT_IMPLEMENTED", "Not implemented",
	    501, ERROR, NO, 0 },
	[PROBLEM_INTERNAL_ERROR] = { "INTERNAL_ERROR", "Internal error", 500,
	    OUTCOME_INTERNAL_ERROR, YES, 0 },
	[PROBLEM_DATABASE_UNAVAILABLE] = { "DATABASE_UNAVAILABLE", NULL, 503,
	    OUTCOME_UNAVAILABLE, YES, 5 },
	[PROBLEM_DATABASE_OUT_OF_SPACE] = { "DATABASE_UNAVAILABLE", NULL, 503,
	    OUTCOME_UNAVAILABLE, YES, 30 },
	[PROBLEM_FAULT_SPEC_INVALID] = { "FAULT_SPEC_INVALID", NULL, 400,
	    ERROR, NO, 0 },
};

#undef NO
#undef YES
#undef UNRECORDED
#undef ERROR

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

/*
 * The Retry-After, in seconds, of an answer with code where
 * problem_should_retry() says yes, or 0 for none.
 */
int
problem_retry_after(enum problem_code code, int recorded, int replayed)
{
	if (!problem_should_retry(code, recorded, replayed))
		return 0;
	return problem_types[code].retry_after;
}

/* Fill a problem of code, with its status; detail is formatted like printf. */
void
problem_set(struct problem *p, enum problem_code code, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	problem_vset(p, code, fmt, ap);
	va_end(ap);
}

/* problem_set() with a va_list. */
void
problem_vset(struct problem *p, enum problem_code code, const char *fmt,
    va_list ap)
{
	p->status = problem_status(code);
	p->code = code;
	p->order_id[0] = '\0';
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
}

/* Return the HTTP status of a code. */
int
problem_status(enum problem_code code)
{
	if ((unsigned int)code >= PROBLEM_COUNT)
		return 500;
	return problem_types[code].status;
}

/* Return the outcome (log and metrics) of an answer with code. */
enum outcome
problem_outcome(enum problem_code code)
{
	if ((unsigned int)code >= PROBLEM_COUNT)
		return OUTCOME_ERROR;
	return problem_types[code].outcome;
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
