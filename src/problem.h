/*
 * RFC 9457 problem details: the error every handler returns and the one
 * place that renders it.  A problem is plain data, so that pure modules
 * (input validation) can report one without knowing about HTTP.
 */
#ifndef IDEMORDERS_PROBLEM_H
#define IDEMORDERS_PROBLEM_H

#include <stdarg.h>

#include "buf.h"
#include "outcome.h"

/*
 * The answers a problem can be: problem.c gives each its UPPER_CASE code,
 * title, status, outcome, Should-Retry and Retry-After.
 */
enum problem_code {
	PROBLEM_NONE = 0,	/* no problem: no code in the log */
	PROBLEM_UNAUTHENTICATED,
	PROBLEM_FRONTEND_SECRET_MISMATCH,
	PROBLEM_FORBIDDEN,
	PROBLEM_NOT_FOUND,
	PROBLEM_METHOD_NOT_ALLOWED,
	PROBLEM_ORDER_NOT_FOUND,
	PROBLEM_IDEMPOTENCY_KEY_MISSING,
	PROBLEM_IDEMPOTENCY_KEY_INVALID,
	PROBLEM_UNSUPPORTED_MEDIA_TYPE,
	PROBLEM_PAYLOAD_TOO_LARGE,
	PROBLEM_MALFORMED_JSON,
	PROBLEM_VALIDATION_FAILED,
	PROBLEM_IDEMPOTENCY_KEY_REUSED,
	PROBLEM_IDEMPOTENCY_KEY_EXPIRED,
	PROBLEM_REQUEST_IN_PROGRESS,
	PROBLEM_REQUEST_STATUS_UNCONFIRMED,	/* no ledger row seen: 409 */
	PROBLEM_COMMIT_UNCONFIRMED,	/* the same code, a COMMIT unknown: 503 */
	PROBLEM_UNKNOWN_IDEMPOTENCY_STATE,
	PROBLEM_UNKNOWN_SKU,
	PROBLEM_CURRENCY_MISMATCH,
	PROBLEM_AMOUNT_MISMATCH,
	PROBLEM_OUT_OF_STOCK,
	PROBLEM_ORDER_ALREADY_CANCELLED,
	PROBLEM_ORDER_NOT_CANCELLABLE,
	PROBLEM_STOCK_ROW_MISSING,
	PROBLEM_RETRY_LIMIT_REACHED,
	PROBLEM_RETRY_DEADLINE_EXCEEDED,
	PROBLEM_SERVICE_UNAVAILABLE,
	PROBLEM_NOT_IMPLEMENTED,
	PROBLEM_INTERNAL_ERROR,

	/* Titled by their status text. */
	PROBLEM_DATABASE_UNAVAILABLE,
	PROBLEM_DATABASE_OUT_OF_SPACE,	/* the same code, a longer wait */
	PROBLEM_FAULT_SPEC_INVALID,
	PROBLEM_COUNT,
};

/* Whether the same key and body sent again may get another answer. */
enum problem_retry {
	PROBLEM_RETRY_NO = 0,
	PROBLEM_RETRY_YES,		/* transient, unconfirmed, in progress */
	PROBLEM_RETRY_UNRECORDED,	/* yes unless recorded as final */
};

struct problem {
	int			 status;	/* HTTP status */
	enum problem_code	 code;
	char			 detail[256];
	char			 order_id[32];	/* "orderId", if set */
};

void	problem_set(struct problem *, enum problem_code, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	problem_vset(struct problem *, enum problem_code, const char *,
	    va_list) __attribute__((format(printf, 3, 0)));
int	problem_status(enum problem_code);
enum outcome problem_outcome(enum problem_code);
int	problem_retry_after(enum problem_code, int, int);
const char *problem_code_name(enum problem_code);
const char *problem_title(enum problem_code);
int	problem_should_retry(enum problem_code, int, int);
int	problem_render(const struct problem *, struct buf *);
const char *http_reason(int);

#endif
