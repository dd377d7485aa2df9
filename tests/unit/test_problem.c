#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>
#include <json-c/json.h>

#include "problem.h"
#include "response.h"
#include "unit.h"

static void
test_render(void)
{
	struct problem		 p;
	struct buf		 b;
	struct json_object	*o, *v;

	problem_set(&p, PROBLEM_IDEMPOTENCY_KEY_REUSED,
	    "key \"%s\" differs", "k-1");
	buf_init(&b, 4096);
	CU_ASSERT_EQUAL(problem_render(&p, &b), 0);
	CU_ASSERT_STRING_EQUAL(b.p, "{\"type\":\"tag:idemorders,2026:problem:"
	    "idempotency-key-reused\",\"title\":\"Idempotency-Key already used "
	    "for another request\",\"status\":409,\"detail\":\"key \\\"k-1\\\" "
	    "differs\",\"code\":\"IDEMPOTENCY_KEY_REUSED\"}");
	o = json_tokener_parse(b.p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_TRUE(json_object_object_get_ex(o, "status", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 409);
	json_object_put(o);
	buf_free(&b);
}

static void
test_order_id_member(void)
{
	struct problem	 p;
	struct buf	 b;

	problem_set(&p, PROBLEM_IDEMPOTENCY_KEY_EXPIRED, "expired");
	strcpy(p.order_id, "o-9");
	buf_init(&b, 4096);
	CU_ASSERT_EQUAL(problem_render(&p, &b), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, ",\"orderId\":\"o-9\","));
	buf_free(&b);
	/* problem_set forgets an earlier order id. */
	problem_set(&p, PROBLEM_ORDER_NOT_FOUND, "none");
	CU_ASSERT_EQUAL(p.order_id[0], '\0');
}

static void
test_unknown_code_and_reason(void)
{
	struct problem	 p;
	struct buf	 b;

	problem_set(&p, PROBLEM_DATABASE_UNAVAILABLE, "x");
	buf_init(&b, 4096);
	CU_ASSERT_EQUAL(problem_render(&p, &b), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "\"title\":\"Service Unavailable\""));
	buf_free(&b);
	CU_ASSERT_STRING_EQUAL(http_reason(201), "Created");
	CU_ASSERT_STRING_EQUAL(http_reason(410), "Gone");
	CU_ASSERT_STRING_EQUAL(http_reason(599), "Unknown");
}

static void
test_response(void)
{
	struct response	 r;

	response_init(&r);
	CU_ASSERT_EQUAL(response_error(&r, PROBLEM_METHOD_NOT_ALLOWED,
	    "no"), 0);
	CU_ASSERT_EQUAL(response_header(&r, "Allow", "%s", "POST"), 0);
	CU_ASSERT_EQUAL(r.status, 405);
	CU_ASSERT_STRING_EQUAL(r.headers.p, "Content-Type: "
	    "application/problem+json\r\nAllow: POST\r\n");
	CU_ASSERT_STRING_EQUAL(problem_code_name(r.code),
	    "METHOD_NOT_ALLOWED");
	CU_ASSERT_EQUAL(response_json(&r, 200, "{}", 2), 0);
	CU_ASSERT_STRING_EQUAL(r.headers.p, "Content-Type: application/json\r\n");
	CU_ASSERT_STRING_EQUAL(r.body.p, "{}");
	CU_ASSERT_PTR_NULL(problem_code_name(r.code));
	response_clear(&r);
}

/* Should-Retry: true only where the same request may be answered anew. */
static void
test_should_retry(void)
{
	static const enum problem_code yes[] = {
		PROBLEM_REQUEST_IN_PROGRESS, PROBLEM_REQUEST_STATUS_UNCONFIRMED,
		PROBLEM_COMMIT_UNCONFIRMED, PROBLEM_RETRY_LIMIT_REACHED,
		PROBLEM_RETRY_DEADLINE_EXCEEDED, PROBLEM_SERVICE_UNAVAILABLE,
		PROBLEM_DATABASE_UNAVAILABLE, PROBLEM_DATABASE_OUT_OF_SPACE,
		PROBLEM_INTERNAL_ERROR, PROBLEM_STOCK_ROW_MISSING,
	};
	enum problem_code	 c;
	size_t			 i;
	int			 want;

	for (c = PROBLEM_NONE; c < PROBLEM_COUNT; c++) {
		want = 0;
		for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
			if (yes[i] == c)
				want = 1;
		if (c == PROBLEM_OUT_OF_STOCK)
			want = 1;	/* not recorded: a restock may help */
		CU_ASSERT_EQUAL(problem_should_retry(c, 0, 0), want);
		/* A replayed answer is what the key will always get. */
		CU_ASSERT_EQUAL(problem_should_retry(c, 0, 1), 0);
	}
	CU_ASSERT_EQUAL(problem_should_retry(PROBLEM_OUT_OF_STOCK, 1, 0), 0);
	CU_ASSERT_EQUAL(problem_should_retry(PROBLEM_AMOUNT_MISMATCH, 1, 0), 0);
	CU_ASSERT_EQUAL(problem_should_retry(PROBLEM_COUNT, 0, 0), 0);
}

/*
 * The table: each code its status and outcome; Retry-After only where
 * Should-Retry says true, and on every 503 and 409 that does.
 */
static void
test_table(void)
{
	struct response		 r;
	enum problem_code	 c;
	int			 status, after;

	response_init(&r);
	for (c = PROBLEM_NONE + 1; c < PROBLEM_COUNT; c++) {
		status = problem_status(c);
		CU_ASSERT_TRUE(status >= 400 && status <= 599);
		CU_ASSERT_PTR_NOT_NULL(problem_code_name(c));
		CU_ASSERT_EQUAL(response_error(&r, c, "x"), 0);
		CU_ASSERT_EQUAL(r.status, status);
		CU_ASSERT_EQUAL(r.outcome, problem_outcome(c));
		after = problem_retry_after(c, 0, 0);
		CU_ASSERT_TRUE(after >= 0);
		if (after > 0)
			CU_ASSERT_TRUE(problem_should_retry(c, 0, 0));
		if ((status == 503 || status == 409) &&
		    problem_should_retry(c, 0, 0))
			CU_ASSERT_TRUE(after > 0);
		CU_ASSERT_EQUAL(problem_retry_after(c, 0, 1), 0);
	}
	response_clear(&r);
	/* One code, two causes: the status and the wait tell them apart. */
	CU_ASSERT_STRING_EQUAL(problem_code_name(PROBLEM_COMMIT_UNCONFIRMED),
	    "REQUEST_STATUS_UNCONFIRMED");
	CU_ASSERT_EQUAL(problem_status(PROBLEM_REQUEST_STATUS_UNCONFIRMED), 409);
	CU_ASSERT_EQUAL(problem_status(PROBLEM_COMMIT_UNCONFIRMED), 503);
	CU_ASSERT_EQUAL(problem_retry_after(PROBLEM_DATABASE_UNAVAILABLE, 0, 0),
	    5);
	CU_ASSERT_EQUAL(problem_retry_after(PROBLEM_DATABASE_OUT_OF_SPACE, 0,
	    0), 30);
	/* Out of stock: a wait only while nothing was recorded. */
	CU_ASSERT_EQUAL(problem_retry_after(PROBLEM_OUT_OF_STOCK, 0, 0), 60);
	CU_ASSERT_EQUAL(problem_retry_after(PROBLEM_OUT_OF_STOCK, 1, 0), 0);
	CU_ASSERT_EQUAL(problem_status(PROBLEM_COUNT), 500);
}

/* The problem suite. */
static const struct unit_test tests[] = {
	{ "render", test_render },
	{ "orderId member", test_order_id_member },
	{ "unknown code", test_unknown_code_and_reason },
	{ "response", test_response },
	{ "Should-Retry", test_should_retry },
	{ "the table", test_table },
	{ NULL, NULL },
};

const struct unit_suite test_problem_suite = { "problem", NULL, NULL, tests };
