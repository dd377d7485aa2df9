/*
 * Fault injection for tests.  Compiled only with
 * ./configure --enable-fault-injection; otherwise FAULT() is a constant
 * FAULT_NONE and no request header is read.
 *
 * X-Idemorders-Fault: POINT=ACTION[,POINT=ACTION]
 *
 * work_pause=K:MS is not a point between round trips: the batch that
 * ends in COMMIT gets a DO SLEEP of MS milliseconds after its K-th
 * statement (guards not counted; 0: before the first), in the same
 * round trip, so that a conflicting writeset from another cluster node
 * can land while a statement of the batch is running.
 */
#ifndef IDEMORDERS_FAULT_H
#define IDEMORDERS_FAULT_H

enum fault_point {
	FP_BEFORE_LEDGER_INSERT = 0,
	FP_AFTER_LEDGER_INSERT,
	FP_AFTER_ORDER_INSERT,
	FP_AFTER_STOCK_DECREASE,
	FP_BEFORE_COMMIT,
	FP_AFTER_COMMIT,
	FP_CONFLICT_READ,
	FP_AFTER_JUDGE,
	FP_WORK_PAUSE,		/* inside the batch that ends in COMMIT */
	FP_COUNT,
};

enum fault_action {
	FAULT_NONE = 0,
	FAULT_CRASH,		/* the worker exits at once */
	FAULT_TRANSIENT,	/* a simulated deadlock, every attempt */
	FAULT_TRANSIENT1,	/* a simulated deadlock, first attempt only */
	FAULT_FINAL,		/* a final business rejection */
	FAULT_DROP,		/* no answer at all */
	FAULT_SLEEP,		/* delay, then go on */
	FAULT_NULL,		/* conflict_read sees no row */
	FAULT_PAUSE,		/* work_pause: DO SLEEP inside the batch */
};

struct fault_plan {
	enum fault_action	 action[FP_COUNT];
	int			 sleep_ms[FP_COUNT];
	int			 pause_after;	/* work_pause: statements */
};

#ifdef ENABLE_FAULT_INJECTION
int		 fault_parse(struct fault_plan *, const char *, char *, size_t);
enum fault_action fault_hit(const struct fault_plan *, enum fault_point, int);
#define FAULT(plan, point, attempt)	fault_hit((plan), (point), (attempt))
/* Whether an action is planned at point: batches are split there. */
#define FAULT_PLANNED(plan, point)	\
	((plan) != NULL && (plan)->action[(point)] != FAULT_NONE)
#else
#define FAULT(plan, point, attempt)	((void)(plan), FAULT_NONE)
#define FAULT_PLANNED(plan, point)	((void)(plan), 0)
#endif

#endif
