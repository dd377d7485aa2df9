#include "config.h"

#include <stddef.h>

#include "outcome.h"

/* The word of each outcome, as the log and the metrics print it. */
static const char *const outcome_names[OUTCOME_COUNT] = {
	[OUTCOME_NONE] = NULL,
	[OUTCOME_ERROR] = "error",
	[OUTCOME_CREATED] = "created",
	[OUTCOME_CANCELLED] = "cancelled",
	[OUTCOME_REPLAYED] = "replayed",
	[OUTCOME_RECOVERED] = "recovered",
	[OUTCOME_CONFLICT] = "conflict",
	[OUTCOME_EXPIRED] = "expired",
	[OUTCOME_REJECTED] = "rejected",
	[OUTCOME_OUT_OF_STOCK] = "out_of_stock",
	[OUTCOME_IN_PROGRESS] = "in_progress",
	[OUTCOME_UNCONFIRMED] = "unconfirmed",
	[OUTCOME_RETRY_LIMIT] = "retry_limit",
	[OUTCOME_DEADLINE] = "deadline",
	[OUTCOME_DROPPED] = "dropped",
	[OUTCOME_OK] = "ok",
	[OUTCOME_BAD_REQUEST] = "bad_request",
	[OUTCOME_UNAUTHENTICATED] = "unauthenticated",
	[OUTCOME_FORBIDDEN] = "forbidden",
	[OUTCOME_NOT_FOUND] = "not_found",
	[OUTCOME_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[OUTCOME_UNAVAILABLE] = "unavailable",
	[OUTCOME_INTERNAL_ERROR] = "internal_error",
	[OUTCOME_OTHER] = "other",
};

/* Return the word of an outcome, or NULL when none was set. */
const char *
outcome_name(enum outcome o)
{
	if ((unsigned int)o >= OUTCOME_COUNT)
		return NULL;
	return outcome_names[o];
}
