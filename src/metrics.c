#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "buf.h"
#include "db.h"
#include "ledger.h"
#include "metrics.h"

/*
 * A cell per worker, claimed by its pid on its first request.  A worker
 * that finds none counts in in_flight_uncelled, which the master cannot
 * take back after its death; 1024 cells leave room for two full pools
 * of 512 during a reload.
 */
#define METRICS_CELLS	1024

/*
 * Counters shared between processes must not fall back to a lock that
 * lives in one process only.
 */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics take a lock");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics take a lock");

struct metrics_cell {
	atomic_int		 pid;		/* 0: free */
	atomic_int		 in_flight;
};

struct metrics_shm {
	atomic_ullong		 requests[OUTCOME_COUNT];
	atomic_ullong		 operation_requests[MOP_COUNT][OUTCOME_COUNT];
	atomic_ullong		 attempts;
	atomic_ullong		 duration_buckets[METRICS_BUCKETS + 1];
	atomic_ullong		 duration_sum_us;
	atomic_ullong		 db_errors[MDB_COUNT];
	atomic_ullong		 worker_starts;
	atomic_ullong		 worker_crashes;
	atomic_ullong		 worker_recycles;
	atomic_ullong		 stock_changed;
	atomic_llong		 in_flight_uncelled;	/* all cells taken */
	struct metrics_cell	 cells[METRICS_CELLS];
};

const double metrics_bucket_le[METRICS_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
	10,
};

/* The same bounds as written in the exposition. */
static const char *const bucket_le_text[METRICS_BUCKETS] = {
	"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
	"0.5", "1", "2.5", "5", "10",
};

/* The operation label values (the ledger's operation column). */
static const char *const operation_names[MOP_COUNT] = {
	[MOP_NONE] = NULL,
	[MOP_CREATE_ORDER] = LEDGER_OPERATION_CREATE_ORDER,
	[MOP_CANCEL_ORDER] = LEDGER_OPERATION_CANCEL_ORDER,
};

/* The db_err class counted under each label, in label order. */
static const int db_classes[MDB_OTHER] = {
	[MDB_DUPLICATE] = DB_DUPLICATE,
	[MDB_TRANSIENT] = DB_TRANSIENT,
	[MDB_LOST] = DB_LOST,
	[MDB_UNKNOWN] = DB_UNKNOWN,
	[MDB_UNAVAILABLE] = DB_UNAVAILABLE,
	[MDB_FATAL] = DB_ERROR,
};

static struct metrics_shm	*shm;
static int			 my_cell = -1;
static pid_t			 my_cell_pid;	/* who looked for my_cell */

/*
 * Map the shared counters.  The master calls this once, before it forks
 * the first worker; the mapping is inherited and never unmapped.
 */
int
metrics_init(void)
{
	void	*p;

	if (shm != NULL)
		return 0;
	p = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	shm = p;	/* anonymous memory starts zeroed: all counters 0 */
	return 0;
}

/* Count a worker the master has forked. */
void
metrics_worker_started(void)
{
	if (shm != NULL)
		atomic_fetch_add_explicit(&shm->worker_starts, 1,
		    memory_order_relaxed);
}

/*
 * Count a reaped worker: clean (it served its max_requests or was asked
 * to stop) or a crash (killed by a signal, a failure status).  Its cell
 * is freed, and what it left in flight with it.
 */
void
metrics_worker_exited(pid_t pid, int clean)
{
	int	 i;

	if (shm == NULL)
		return;
	atomic_fetch_add_explicit(clean ? &shm->worker_recycles :
	    &shm->worker_crashes, 1, memory_order_relaxed);
	for (i = 0; i < METRICS_CELLS; i++) {
		if (atomic_load(&shm->cells[i].pid) != (int)pid)
			continue;
		atomic_store(&shm->cells[i].in_flight, 0);
		atomic_store(&shm->cells[i].pid, 0);
	}
}

/*
 * This worker's cell, claimed on first use; -1 when all were taken then
 * (for the worker's whole life, so that a request begun without a cell
 * also ends without one).
 */
static int
cell_of_self(void)
{
	pid_t	 self = getpid();
	int	 i, expected;

	if (my_cell_pid == self)
		return my_cell;
	my_cell = -1;
	my_cell_pid = self;
	for (i = 0; i < METRICS_CELLS; i++) {
		expected = 0;
		if (atomic_compare_exchange_strong(&shm->cells[i].pid,
		    &expected, (int)self)) {
			my_cell = i;
			break;
		}
	}
	return my_cell;
}

/* Count a request as in flight, from its arrival at the worker. */
void
metrics_request_begin(void)
{
	int	 c;

	if (shm == NULL)
		return;
	c = cell_of_self();
	if (c >= 0)
		atomic_fetch_add_explicit(&shm->cells[c].in_flight, 1,
		    memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&shm->in_flight_uncelled, 1,
		    memory_order_relaxed);
}

/*
 * Count an answered request: its outcome (labelled with its status by
 * metrics_label_of()), its database attempts and its duration in
 * milliseconds.
 */
void
metrics_request_end(int status, enum outcome outcome, int attempts, double ms)
{
	double			 us;
	int			 c;

	if (shm == NULL)
		return;
	c = cell_of_self();
	if (c >= 0)
		atomic_fetch_sub_explicit(&shm->cells[c].in_flight, 1,
		    memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&shm->in_flight_uncelled, 1,
		    memory_order_relaxed);
	atomic_fetch_add_explicit(&shm->requests[metrics_label_of(status,
	    outcome)], 1, memory_order_relaxed);
	if (attempts > 0)
		atomic_fetch_add_explicit(&shm->attempts,
		    (unsigned long long)attempts, memory_order_relaxed);
	if (ms < 0)
		ms = 0;
	atomic_fetch_add_explicit(&shm->duration_buckets[metrics_bucket_of(
	    ms / 1000)], 1, memory_order_relaxed);
	us = ms * 1000 + 0.5;
	atomic_fetch_add_explicit(&shm->duration_sum_us,
	    (unsigned long long)us, memory_order_relaxed);
}

/*
 * Count an answered request under its operation too (its outcome
 * labelled as metrics_request_end() labels it); MOP_NONE: nothing.
 */
void
metrics_operation_end(enum metrics_operation op, int status,
    enum outcome outcome)
{
	if (shm == NULL || op <= MOP_NONE || op >= MOP_COUNT)
		return;
	atomic_fetch_add_explicit(&shm->operation_requests[op][
	    metrics_label_of(status, outcome)], 1, memory_order_relaxed);
}

/*
 * Count a request that met a database failure, by the class of its last
 * one (an enum db_err; DB_OK counts nothing).
 */
void
metrics_db_error(int cls)
{
	int	 k;

	if (shm == NULL || cls == DB_OK)
		return;
	for (k = 0; k < MDB_OTHER; k++)
		if (db_classes[k] == cls)
			break;
	atomic_fetch_add_explicit(&shm->db_errors[k], 1, memory_order_relaxed);
}

/*
 * Count a create whose stock rows, read without a lock, no longer held
 * what was judged once the final round trip locked them, so that it was
 * judged again under the lock.
 */
void
metrics_stock_changed(void)
{
	if (shm != NULL)
		atomic_fetch_add_explicit(&shm->stock_changed, 1,
		    memory_order_relaxed);
}

/* Copy the counters into s; zeros without a mapping. */
void
metrics_snapshot(struct metrics_snapshot *s)
{
	int	 i, j;

	memset(s, 0, sizeof(*s));
	if (shm == NULL)
		return;
	for (i = 0; i < OUTCOME_COUNT; i++)
		s->requests[i] = atomic_load_explicit(&shm->requests[i],
		    memory_order_relaxed);
	for (i = 0; i < MOP_COUNT; i++)
		for (j = 0; j < OUTCOME_COUNT; j++)
			s->operation_requests[i][j] = atomic_load_explicit(
			    &shm->operation_requests[i][j],
			    memory_order_relaxed);
	s->attempts = atomic_load_explicit(&shm->attempts,
	    memory_order_relaxed);
	for (i = 0; i <= METRICS_BUCKETS; i++)
		s->duration_buckets[i] = atomic_load_explicit(
		    &shm->duration_buckets[i], memory_order_relaxed);
	s->duration_sum_us = atomic_load_explicit(&shm->duration_sum_us,
	    memory_order_relaxed);
	for (i = 0; i < MDB_COUNT; i++)
		s->db_errors[i] = atomic_load_explicit(&shm->db_errors[i],
		    memory_order_relaxed);
	s->worker_starts = atomic_load_explicit(&shm->worker_starts,
	    memory_order_relaxed);
	s->worker_crashes = atomic_load_explicit(&shm->worker_crashes,
	    memory_order_relaxed);
	s->worker_recycles = atomic_load_explicit(&shm->worker_recycles,
	    memory_order_relaxed);
	s->stock_changed = atomic_load_explicit(&shm->stock_changed,
	    memory_order_relaxed);
	s->in_flight = atomic_load_explicit(&shm->in_flight_uncelled,
	    memory_order_relaxed);
	for (i = 0; i < METRICS_CELLS; i++)
		s->in_flight += atomic_load_explicit(&shm->cells[i].in_flight,
		    memory_order_relaxed);
}

/*
 * The label an answer is counted under: its outcome; a plain error is
 * labelled by its status, and an answer without an outcome is "other".
 */
enum outcome
metrics_label_of(int status, enum outcome outcome)
{
	if (outcome == OUTCOME_ERROR) {
		switch (status) {
		case 401:
			return OUTCOME_UNAUTHENTICATED;
		case 403:
			return OUTCOME_FORBIDDEN;
		case 404:
			return OUTCOME_NOT_FOUND;
		case 405:
			return OUTCOME_METHOD_NOT_ALLOWED;
		case 503:
			return OUTCOME_UNAVAILABLE;
		default:
			break;
		}
		if (status >= 400 && status < 500)
			return OUTCOME_BAD_REQUEST;
		if (status >= 500 && status < 600)
			return OUTCOME_INTERNAL_ERROR;
		return OUTCOME_OTHER;
	}
	if (outcome < OUTCOME_LABEL_FIRST || outcome >= OUTCOME_COUNT)
		return OUTCOME_OTHER;
	return outcome;
}

/* The bucket of a duration in seconds: METRICS_BUCKETS is +Inf. */
int
metrics_bucket_of(double seconds)
{
	int	 i;

	for (i = 0; i < METRICS_BUCKETS; i++)
		if (seconds <= metrics_bucket_le[i])
			return i;
	return METRICS_BUCKETS;
}

/* Append the HELP and TYPE lines of a metric. */
static int
family(struct buf *b, const char *name, const char *type, const char *help)
{
	return buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
	    type);
}

/* Append a counter without labels: its HELP and TYPE lines, its value. */
static int
counter(struct buf *b, const char *name, const char *help,
    unsigned long long v)
{
	int	 rc;

	rc = family(b, name, "counter", help);
	return rc == BUF_OK ? buf_printf(b, "%s %llu\n", name, v) : rc;
}

/*
 * Render s in the Prometheus text exposition format, version 0.0.4,
 * appending to b.  Returns 0, or a buf error.
 */
int
metrics_render(const struct metrics_snapshot *s, struct buf *b)
{
	unsigned long long	 cum = 0;
	int			 i, op, rc;

	rc = family(b, "idemorders_requests_total", "counter",
	    "Requests answered by the workers, by outcome.");
	for (i = OUTCOME_LABEL_FIRST; rc == BUF_OK && i < OUTCOME_COUNT; i++)
		rc = buf_printf(b, "idemorders_requests_total{outcome=\"%s\"} "
		    "%llu\n", outcome_name(i), s->requests[i]);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_operation_requests_total", "counter",
		    "Requests answered by the handler of an operation of the "
		    "ledger, by operation and outcome.");
	for (op = MOP_NONE + 1; rc == BUF_OK && op < MOP_COUNT; op++)
		for (i = OUTCOME_LABEL_FIRST; rc == BUF_OK &&
		    i < OUTCOME_COUNT; i++)
			rc = buf_printf(b, "idemorders_operation_requests_total"
			    "{operation=\"%s\",outcome=\"%s\"} %llu\n",
			    operation_names[op], outcome_name(i),
			    s->operation_requests[op][i]);
	if (rc == BUF_OK)
		rc = counter(b, "idemorders_attempts_total", "Database "
		    "transaction attempts made for POST requests.",
		    s->attempts);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_request_duration_seconds",
		    "histogram", "Time from a request's arrival at a worker "
		    "to its answer.");
	for (i = 0; rc == BUF_OK && i < METRICS_BUCKETS; i++) {
		cum += s->duration_buckets[i];
		rc = buf_printf(b, "idemorders_request_duration_seconds_bucket"
		    "{le=\"%s\"} %llu\n", bucket_le_text[i], cum);
	}
	cum += s->duration_buckets[METRICS_BUCKETS];
	if (rc == BUF_OK)
		rc = buf_printf(b, "idemorders_request_duration_seconds_bucket"
		    "{le=\"+Inf\"} %llu\n"
		    "idemorders_request_duration_seconds_sum %llu.%06llu\n"
		    "idemorders_request_duration_seconds_count %llu\n", cum,
		    s->duration_sum_us / 1000000, s->duration_sum_us % 1000000,
		    cum);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_db_errors_total", "counter",
		    "Requests that met a database failure, by the class of the "
		    "last one.");
	for (i = 0; rc == BUF_OK && i < MDB_COUNT; i++)
		rc = buf_printf(b, "idemorders_db_errors_total{class=\"%s\"} "
		    "%llu\n", i < MDB_OTHER ? db_class_name(db_classes[i]) :
		    "other", s->db_errors[i]);
	if (rc == BUF_OK)
		rc = counter(b, "idemorders_worker_starts_total", "Workers "
		    "forked by the master.", s->worker_starts);
	if (rc == BUF_OK)
		rc = counter(b, "idemorders_worker_crashes_total", "Workers that "
		    "died of a signal or a failure status.", s->worker_crashes);
	if (rc == BUF_OK)
		rc = counter(b, "idemorders_worker_recycles_total", "Workers that "
		    "exited cleanly: max_requests served, or replaced by a "
		    "reload.", s->worker_recycles);
	if (rc == BUF_OK)
		rc = counter(b, "idemorders_stock_changed_total", "Creates whose "
		    "stock rows, read without a lock, no longer held what was "
		    "judged once locked: judged again under the lock.",
		    s->stock_changed);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_requests_in_flight", "gauge",
		    "Requests being served now, this scrape included.");
	if (rc == BUF_OK)
		rc = buf_printf(b, "idemorders_requests_in_flight %lld\n",
		    s->in_flight);
	return rc;
}

/*
 * The outbox's gauges, read from the database at the scrape: pending
 * events, the age of the oldest (seconds), dead-lettered events.
 */
int
metrics_render_events(long long pending, long long oldest_us, long long dead,
    struct buf *b)
{
	int	 rc;

	rc = family(b, "idemorders_events_pending", "gauge", "Events not yet "
	    "delivered (nor dead-lettered).");
	if (rc == BUF_OK)
		rc = buf_printf(b, "idemorders_events_pending %lld\n", pending);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_events_oldest_pending_age_seconds",
		    "gauge", "Age of the oldest pending event (0: none).");
	if (rc == BUF_OK)
		rc = buf_printf(b, "idemorders_events_oldest_pending_age_seconds "
		    "%lld.%06lld\n", oldest_us / 1000000, oldest_us % 1000000);
	if (rc == BUF_OK)
		rc = family(b, "idemorders_events_dead", "gauge", "Events "
		    "dead-lettered after event_max_age (idemorders events "
		    "redeliver).");
	if (rc == BUF_OK)
		rc = buf_printf(b, "idemorders_events_dead %lld\n", dead);
	return rc;
}

/*
 * The relays' deliveries by outcome (n outcomes, names[i] counted
 * count[i] times), read from the database at the scrape.
 */
int
metrics_render_deliveries(const char *const *names, const long long *count,
    int n, struct buf *b)
{
	int	 rc, i;

	rc = family(b, "idemorders_event_deliveries_total", "counter",
	    "Deliveries the relays made, by outcome: delivered (2xx), retry "
	    "(anything else), dead (failed past event_max_age), gone (410).");
	for (i = 0; rc == BUF_OK && i < n; i++)
		rc = buf_printf(b, "idemorders_event_deliveries_total"
		    "{outcome=\"%s\"} %lld\n", names[i], count[i]);
	return rc;
}
