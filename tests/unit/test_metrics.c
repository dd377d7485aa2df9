#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <CUnit/CUnit.h>

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "metrics.h"
#include "unit.h"

/* Render s into a fresh buffer; the caller frees it with buf_free(). */
static int
render(const struct metrics_snapshot *s, struct buf *b)
{
	buf_init(b, 1 << 20);
	return metrics_render(s, b);
}

/* Tell whether the exposition b has exactly this line. */
static int
has_line(const struct buf *b, const char *line)
{
	const char	*p = b->p;
	size_t		 n = strlen(line);

	while (p != NULL && *p != '\0') {
		if (strncmp(p, line, n) == 0 && p[n] == '\n')
			return 1;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return 0;
}

/* Count the lines of b that start with prefix. */
static int
count_lines(const struct buf *b, const char *prefix)
{
	const char	*p = b->p;
	int		 n = 0;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			n++;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return n;
}

static void
test_render_zero(void)
{
	struct metrics_snapshot	 s;
	struct buf		 b;

	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL(render(&s, &b), BUF_OK);
	CU_ASSERT_TRUE(has_line(&b, "# TYPE idemorders_requests_total counter"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_requests_total{outcome=\"created\"} 0"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_requests_total{outcome=\"internal_error\"} 0"));
	CU_ASSERT_EQUAL(count_lines(&b, "idemorders_requests_total{"),
	    METRICS_OUTCOMES);
	CU_ASSERT_TRUE(has_line(&b, "# TYPE idemorders_request_duration_seconds "
	    "histogram"));
	CU_ASSERT_EQUAL(count_lines(&b,
	    "idemorders_request_duration_seconds_bucket{"),
	    METRICS_BUCKETS + 1);
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_sum 0.000000"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_requests_in_flight 0"));
	CU_ASSERT_TRUE(has_line(&b, "# TYPE idemorders_requests_in_flight gauge"));
	/* Every sample line ends the text with a newline. */
	CU_ASSERT_EQUAL(b.p[b.len - 1], '\n');
	buf_free(&b);
}

static void
test_render_values(void)
{
	struct metrics_snapshot	 s;
	struct buf		 b;

	memset(&s, 0, sizeof(s));
	s.requests[OUTCOME_CREATED] = 3;
	s.requests[OUTCOME_REPLAYED] = 1;
	s.requests[OUTCOME_BAD_REQUEST] = 12345678901ULL;
	s.attempts = 7;
	s.duration_buckets[0] = 2;	/* <= 1 ms */
	s.duration_buckets[3] = 1;	/* <= 10 ms */
	s.duration_buckets[METRICS_BUCKETS] = 4;	/* > 10 s */
	s.duration_sum_us = 41234567;
	s.db_errors[MDB_DUPLICATE] = 5;
	s.db_errors[MDB_TRANSIENT] = 2;
	s.worker_starts = 9;
	s.worker_crashes = 1;
	s.worker_recycles = 4;
	s.stock_changed = 6;
	s.in_flight = 1;
	s.operation_requests[MOP_CANCEL_ORDER][OUTCOME_CANCELLED] = 2;
	s.operation_requests[MOP_CREATE_ORDER][OUTCOME_CREATED] = 3;
	CU_ASSERT_EQUAL(render(&s, &b), BUF_OK);
	CU_ASSERT_TRUE(has_line(&b, "idemorders_operation_requests_total{"
	    "operation=\"cancel-order\",outcome=\"cancelled\"} 2"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_operation_requests_total{"
	    "operation=\"create-order\",outcome=\"created\"} 3"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_operation_requests_total{"
	    "operation=\"cancel-order\",outcome=\"created\"} 0"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_requests_total{outcome=\"created\"} 3"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_requests_total{outcome=\"replayed\"} 1"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_requests_total{outcome=\"bad_request\"} 12345678901"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_attempts_total 7"));
	/* Buckets are cumulative and +Inf equals the count. */
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_bucket{le=\"0.001\"} 2"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_bucket{le=\"0.005\"} 2"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_bucket{le=\"0.01\"} 3"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_bucket{le=\"10\"} 3"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_bucket{le=\"+Inf\"} 7"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_count 7"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_request_duration_seconds_sum 41.234567"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"duplicate\"} 5"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"transient\"} 2"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"fatal\"} 0"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"outcome-unknown\"} 0"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"unavailable\"} 0"));
	CU_ASSERT_TRUE(has_line(&b,
	    "idemorders_db_errors_total{class=\"other\"} 0"));
	CU_ASSERT_EQUAL(count_lines(&b, "idemorders_db_errors_total{"),
	    MDB_COUNT);
	CU_ASSERT_TRUE(has_line(&b, "idemorders_worker_starts_total 9"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_worker_crashes_total 1"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_worker_recycles_total 4"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_stock_changed_total 6"));
	CU_ASSERT_TRUE(has_line(&b, "idemorders_requests_in_flight 1"));
	buf_free(&b);
}

static void
test_render_cap(void)
{
	struct metrics_snapshot	 s;
	struct buf		 b;

	memset(&s, 0, sizeof(s));
	buf_init(&b, 100);
	CU_ASSERT_EQUAL(metrics_render(&s, &b), BUF_TOO_BIG);
	buf_free(&b);
}

static void
test_outcome_of(void)
{
	static const struct {
		int		 status;
		enum outcome	 outcome;
		enum outcome	 want;
	} cases[] = {
		{ 201, OUTCOME_CREATED, OUTCOME_CREATED },
		{ 201, OUTCOME_REPLAYED, OUTCOME_REPLAYED },
		{ 201, OUTCOME_RECOVERED, OUTCOME_RECOVERED },
		{ 409, OUTCOME_CONFLICT, OUTCOME_CONFLICT },
		{ 422, OUTCOME_CONFLICT, OUTCOME_CONFLICT },
		{ 410, OUTCOME_EXPIRED, OUTCOME_EXPIRED },
		{ 422, OUTCOME_REJECTED, OUTCOME_REJECTED },
		{ 409, OUTCOME_OUT_OF_STOCK, OUTCOME_OUT_OF_STOCK },
		{ 409, OUTCOME_IN_PROGRESS, OUTCOME_IN_PROGRESS },
		{ 409, OUTCOME_UNCONFIRMED, OUTCOME_UNCONFIRMED },
		{ 503, OUTCOME_RETRY_LIMIT, OUTCOME_RETRY_LIMIT },
		{ 503, OUTCOME_DEADLINE, OUTCOME_DEADLINE },
		{ 0, OUTCOME_DROPPED, OUTCOME_DROPPED },
		{ 200, OUTCOME_OK, OUTCOME_OK },
		{ 400, OUTCOME_ERROR, OUTCOME_BAD_REQUEST },
		{ 413, OUTCOME_ERROR, OUTCOME_BAD_REQUEST },
		{ 415, OUTCOME_ERROR, OUTCOME_BAD_REQUEST },
		{ 401, OUTCOME_ERROR, OUTCOME_UNAUTHENTICATED },
		{ 403, OUTCOME_ERROR, OUTCOME_FORBIDDEN },
		{ 404, OUTCOME_ERROR, OUTCOME_NOT_FOUND },
		{ 405, OUTCOME_ERROR, OUTCOME_METHOD_NOT_ALLOWED },
		{ 503, OUTCOME_ERROR, OUTCOME_UNAVAILABLE },
		{ 500, OUTCOME_ERROR, OUTCOME_INTERNAL_ERROR },
		{ 200, OUTCOME_ERROR, OUTCOME_OTHER },
		{ 200, OUTCOME_NONE, OUTCOME_OTHER },
		{ 200, OUTCOME_COUNT, OUTCOME_OTHER },
		{ 503, OUTCOME_UNAVAILABLE, OUTCOME_UNAVAILABLE },
		{ 500, OUTCOME_INTERNAL_ERROR, OUTCOME_INTERNAL_ERROR },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CU_ASSERT_EQUAL(metrics_label_of(cases[i].status,
		    cases[i].outcome), cases[i].want);
		if (metrics_label_of(cases[i].status, cases[i].outcome) !=
		    cases[i].want)
			fprintf(stderr, "outcome case %zu: %d %s\n", i,
			    cases[i].status, outcome_name(cases[i].outcome) ?
			    outcome_name(cases[i].outcome) : "NULL");
	}
}

static void
test_bucket_of(void)
{
	CU_ASSERT_EQUAL(metrics_bucket_of(0), 0);
	CU_ASSERT_EQUAL(metrics_bucket_of(0.001), 0);	/* le: inclusive */
	CU_ASSERT_EQUAL(metrics_bucket_of(0.0011), 1);
	CU_ASSERT_EQUAL(metrics_bucket_of(0.3), 8);
	CU_ASSERT_EQUAL(metrics_bucket_of(10), METRICS_BUCKETS - 1);
	CU_ASSERT_EQUAL(metrics_bucket_of(10.5), METRICS_BUCKETS);
}

/*
 * The hooks against a real shared mapping: a forked child's counts are
 * seen by the parent, and what a dead child left in flight is taken
 * back when it is reaped.
 */
static void
test_shared_counts(void)
{
	struct metrics_snapshot	 a, b;
	pid_t			 pid;
	int			 status;

	CU_ASSERT_EQUAL_FATAL(metrics_init(), 0);
	metrics_snapshot(&a);
	metrics_worker_started();
	pid = fork();
	CU_ASSERT_TRUE_FATAL(pid != -1);
	if (pid == 0) {
		metrics_request_begin();
		metrics_request_end(201, OUTCOME_CREATED, 2, 3.5);
		metrics_operation_end(MOP_CREATE_ORDER, 201, OUTCOME_CREATED);
		metrics_request_begin();
		metrics_request_end(400, OUTCOME_ERROR, 0, 0.2);
		metrics_operation_end(MOP_CANCEL_ORDER, 400, OUTCOME_ERROR);
		metrics_operation_end(MOP_NONE, 200, OUTCOME_OK);
		metrics_operation_end(MOP_COUNT, 200, OUTCOME_OK);
		metrics_db_error(DB_DUPLICATE);
		metrics_db_error(DB_TRANSIENT);
		metrics_db_error(DB_UNAVAILABLE);
		metrics_db_error(DB_ERROR);
		metrics_db_error(DB_OK);
		metrics_db_error(-99);
		metrics_request_begin();	/* dies with one in flight */
		_exit(7);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	metrics_snapshot(&b);
	CU_ASSERT_EQUAL(b.in_flight - a.in_flight, 1);
	metrics_worker_exited(pid, 0);
	metrics_snapshot(&b);
	CU_ASSERT_EQUAL(b.in_flight, a.in_flight);
	CU_ASSERT_EQUAL(b.worker_starts - a.worker_starts, 1);
	CU_ASSERT_EQUAL(b.worker_crashes - a.worker_crashes, 1);
	CU_ASSERT_EQUAL(b.worker_recycles, a.worker_recycles);
	CU_ASSERT_EQUAL(b.requests[OUTCOME_CREATED] - a.requests[OUTCOME_CREATED], 1);
	CU_ASSERT_EQUAL(b.requests[OUTCOME_BAD_REQUEST] -
	    a.requests[OUTCOME_BAD_REQUEST], 1);
	CU_ASSERT_EQUAL(b.attempts - a.attempts, 2);
	CU_ASSERT_EQUAL(b.operation_requests[MOP_CREATE_ORDER][OUTCOME_CREATED] -
	    a.operation_requests[MOP_CREATE_ORDER][OUTCOME_CREATED], 1);
	CU_ASSERT_EQUAL(b.operation_requests[MOP_CANCEL_ORDER][
	    OUTCOME_BAD_REQUEST] - a.operation_requests[MOP_CANCEL_ORDER][
	    OUTCOME_BAD_REQUEST], 1);
	CU_ASSERT_EQUAL(b.operation_requests[MOP_NONE][OUTCOME_OK],
	    a.operation_requests[MOP_NONE][OUTCOME_OK]);
	CU_ASSERT_EQUAL(b.duration_buckets[0] - a.duration_buckets[0], 1);
	CU_ASSERT_EQUAL(b.duration_buckets[1] - a.duration_buckets[1], 0);
	CU_ASSERT_EQUAL(b.duration_buckets[2] - a.duration_buckets[2], 1);
	CU_ASSERT_EQUAL(b.duration_sum_us - a.duration_sum_us, 3700);
	CU_ASSERT_EQUAL(b.db_errors[MDB_DUPLICATE] -
	    a.db_errors[MDB_DUPLICATE], 1);
	CU_ASSERT_EQUAL(b.db_errors[MDB_TRANSIENT] -
	    a.db_errors[MDB_TRANSIENT], 1);
	CU_ASSERT_EQUAL(b.db_errors[MDB_OTHER] - a.db_errors[MDB_OTHER], 1);
	CU_ASSERT_EQUAL(b.db_errors[MDB_UNAVAILABLE] -
	    a.db_errors[MDB_UNAVAILABLE], 1);
	CU_ASSERT_EQUAL(b.db_errors[MDB_FATAL] - a.db_errors[MDB_FATAL], 1);
	CU_ASSERT_EQUAL(b.db_errors[MDB_LOST], a.db_errors[MDB_LOST]);
	CU_ASSERT_EQUAL(b.db_errors[MDB_UNKNOWN], a.db_errors[MDB_UNKNOWN]);

	/* A clean exit is a recycle. */
	pid = fork();
	CU_ASSERT_TRUE_FATAL(pid != -1);
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	metrics_worker_exited(pid, 1);
	metrics_snapshot(&a);
	CU_ASSERT_EQUAL(a.worker_recycles - b.worker_recycles, 1);
	CU_ASSERT_EQUAL(a.worker_crashes, b.worker_crashes);
}

static void
test_conf_key(void)
{
	struct conf	 c;
	char		 err[256];
	const char	*on = "metrics = on\n", *off = "metrics = off\n";
	const char	*bad = "metrics = yes\n";

	conf_defaults(&c);
	CU_ASSERT_EQUAL(c.metrics, 0);
	CU_ASSERT_EQUAL(conf_parse(&c, "t.conf", on, strlen(on), err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.metrics, 1);
	CU_ASSERT_EQUAL(conf_parse(&c, "t.conf", off, strlen(off), err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.metrics, 0);
	CU_ASSERT_EQUAL(conf_parse(&c, "t.conf", bad, strlen(bad), err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "metrics must be on or off"));
	conf_clear(&c);
}

/* The metrics suite. */
static const struct unit_test tests[] = {
	{ "render zeros", test_render_zero },
	{ "render values", test_render_values },
	{ "render cap", test_render_cap },
	{ "outcome labels", test_outcome_of },
	{ "duration buckets", test_bucket_of },
	{ "shared counts", test_shared_counts },
	{ "conf key", test_conf_key },
	{ NULL, NULL },
};

const struct unit_suite test_metrics_suite = { "metrics", NULL, NULL, tests };
