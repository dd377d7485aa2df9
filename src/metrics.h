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

struct buf;

/*
 * The label values of idemorders_requests_total{outcome=...}: the outcome
 * words the handlers set, and for a plain error ("error") a label by its
 * status.
 */
enum metrics_outcome {
	MO_CREATED = 0,
	MO_REPLAYED,
	MO_RECOVERED,
	MO_CONFLICT,
	MO_EXPIRED,
	MO_REJECTED,
	MO_OUT_OF_STOCK,
	MO_IN_PROGRESS,
	MO_UNCONFIRMED,
	MO_RETRY_LIMIT,
	MO_DEADLINE,
	MO_DROPPED,
	MO_OK,
	MO_BAD_REQUEST,
	MO_UNAUTHENTICATED,
	MO_FORBIDDEN,
	MO_NOT_FOUND,
	MO_METHOD_NOT_ALLOWED,
	MO_UNAVAILABLE,
	MO_INTERNAL_ERROR,
	MO_OTHER,
	MO_COUNT,
};

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

/* Upper bounds of the duration buckets, seconds; +Inf comes after. */
#define METRICS_BUCKETS		13
extern const double metrics_bucket_le[METRICS_BUCKETS];

/* A copy of the counters, read one by one (not one atomic snapshot). */
struct metrics_snapshot {
	unsigned long long	 requests[MO_COUNT];
	unsigned long long	 attempts;
	unsigned long long	 duration_buckets[METRICS_BUCKETS + 1];
					/* per bucket, not cumulative */
	unsigned long long	 duration_sum_us;
	unsigned long long	 db_errors[MDB_COUNT];
	unsigned long long	 worker_starts;
	unsigned long long	 worker_crashes;
	unsigned long long	 worker_recycles;
	long long		 in_flight;
};

int	metrics_init(void);
void	metrics_worker_started(void);
void	metrics_worker_exited(pid_t, int);
void	metrics_request_begin(void);
void	metrics_request_end(int, const char *, int, double);
void	metrics_db_error(int);
void	metrics_snapshot(struct metrics_snapshot *);

enum metrics_outcome metrics_outcome_of(int, const char *);
int	metrics_bucket_of(double);
int	metrics_peer_is_loopback(const char *);
int	metrics_render(const struct metrics_snapshot *, struct buf *);

#endif
