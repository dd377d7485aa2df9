/*
 * What became of a request: the word of the request log and the label
 * of idemorders_requests_total{outcome=...}.  Handlers set one on the
 * response; the log and the metrics print its name from one table.
 */
#ifndef IDEMORDERS_OUTCOME_H
#define IDEMORDERS_OUTCOME_H

enum outcome {
	OUTCOME_NONE = 0,	/* not set: no word in the log */
	OUTCOME_ERROR,		/* a problem answer: labelled by its status */

	/* The metrics labels, in the order of the exposition. */
	OUTCOME_CREATED,
	OUTCOME_CANCELLED,
	OUTCOME_REPLAYED,
	OUTCOME_RECOVERED,
	OUTCOME_CONFLICT,
	OUTCOME_EXPIRED,
	OUTCOME_REJECTED,
	OUTCOME_OUT_OF_STOCK,
	OUTCOME_IN_PROGRESS,
	OUTCOME_UNCONFIRMED,
	OUTCOME_RETRY_LIMIT,
	OUTCOME_DEADLINE,
	OUTCOME_DROPPED,
	OUTCOME_OK,
	OUTCOME_BAD_REQUEST,
	OUTCOME_UNAUTHENTICATED,
	OUTCOME_FORBIDDEN,
	OUTCOME_NOT_FOUND,
	OUTCOME_METHOD_NOT_ALLOWED,
	OUTCOME_UNAVAILABLE,
	OUTCOME_INTERNAL_ERROR,
	OUTCOME_OTHER,
	OUTCOME_COUNT,
};

#define OUTCOME_LABEL_FIRST	OUTCOME_CREATED

const char *outcome_name(enum outcome);

#endif
