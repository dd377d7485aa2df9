/*
 * The pool's counters for GET /orders/_metrics (Prometheus text format
 * 0.0.4).  They live in one shared anonymous mapping that the master
 * makes before it forks: every worker adds to it with relaxed C11
 * atomics, so a scrape answered by any worker shows the totals of the
 * whole pool, and they outlive a worker's death and a reload (the
 * mapping stays with the master).  Without metrics_init() every hook
 * does nothing and a snapshot is all zeros.
 *
 * Requests in flight are kept per worker (a cell claimed by its pid), so
 * that the master can take back what a worker killed in mid-request
 * left counted.
 */
#ifndef IDEMORDERS_METRICS_H
#define IDEMORDERS_METRICS_H

#include <sys/types.h>

#include "outcome.h"

struct buf;

/*
 * The label values of idemorders_requests_total{outcome=...}: the
 * outcomes from OUTCOME_LABEL_FIRST on (a plain error is counted under
 * the label of its status).
 */
#define METRICS_OUTCOMES	(OUTCOME_COUNT - OUTCOME_LABEL_FIRST)

/*
 * The label values of idemorders_db_errors_total{class=...}: the names
 * db_class_name() gives the classes of enum db_err, and "other".
 */
enum metrics_db_class {
	MDB_DUPLICATE = 0,
	MDB_TRANSIENT,
	MDB_LOST,
	MDB_UNKNOWN,
	MDB_UNAVAILABLE,
	MDB_FATAL,
	MDB_OTHER,
	MDB_COUNT,
};

/*
 * The label values of idemorders_operation_requests_total{operation=...}:
 * the operations of the ledger (ledger.h), each request counted under
 * the one whose handler answered it.
 */
enum metrics_operation {
	MOP_NONE = 0,		/* no operation: not counted there */
	MOP_CREATE_ORDER,
	MOP_CANCEL_ORDER,
	MOP_COUNT,
};

/* Upper bounds of the duration buckets, seconds; +Inf comes after. */
#define METRICS_BUCKETS		13
extern const double metrics_bucket_le[METRICS_BUCKETS];

/* A copy of the counters, read one by one (not one atomic snapshot). */
struct metrics_snapshot {
	unsigned long long	 requests[OUTCOME_COUNT];	/* by label */
	unsigned long long	 operation_requests[MOP_COUNT][OUTCOME_COUNT];
	unsigned long long	 attempts;
	unsigned long long	 duration_buckets[METRICS_BUCKETS + 1];
					/* per bucket, not cumulative */
	unsigned long long	 duration_sum_us;
	unsigned long long	 db_errors[MDB_COUNT];
	unsigned long long	 worker_starts;
	unsigned long long	 worker_crashes;
	unsigned long long	 worker_recycles;
	unsigned long long	 stock_changed;
	long long		 in_flight;
};

int	metrics_init(void);
void	metrics_worker_started(void);
void	metrics_worker_exited(pid_t, int);
void	metrics_request_begin(void);
void	metrics_request_end(int, enum outcome, int, double);
void	metrics_operation_end(enum metrics_operation, int, enum outcome);
void	metrics_db_error(int);
void	metrics_stock_changed(void);
void	metrics_snapshot(struct metrics_snapshot *);

enum outcome metrics_label_of(int, enum outcome);
int	metrics_bucket_of(double);
int	metrics_render(const struct metrics_snapshot *, struct buf *);
int	metrics_render_events(long long, long long, long long, struct buf *);
int	metrics_render_deliveries(const char *const *, const long long *, int,
	    struct buf *);

#endif
