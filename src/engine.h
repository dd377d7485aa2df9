/*
 * The idempotency engine: one key, one operation, exactly once.  It owns
 * what is about any operation: the retry loop (attempts, deadline,
 * backoff), the claim of the scope (principal, operation, key) in the
 * ledger, the answers from a committed ledger row (replay, 409/422 for
 * another body, 410 after expiry, retry while PROCESSING), the
 * unknown-COMMIT path, and the final rejection (ROLLBACK TO SAVEPOINT,
 * FAILED_FINAL with the error response, COMMIT).  An operation supplies
 * the rest in a row of struct engine_op: its name, the size of its
 * state, the statements it adds to the claim's round trip, and its work
 * after the claim (judge, write), which ends in engine_finish(): the
 * event, the ledger row with the answer, COMMIT.  The engine allocates
 * the run (struct engine, opaque: the hooks use the accessors below)
 * and the operation's state, and answers with its own result.
 */
#ifndef IDEMORDERS_ENGINE_H
#define IDEMORDERS_ENGINE_H

#include <stddef.h>

#include "events.h"
#include "fault.h"
#include "problem.h"

struct conf;
struct db;
struct db_batch;
struct response;

/* What one step of an attempt tells the next. */
enum engine_step {
	ENGINE_NEXT,		/* go on with the next step */
	ENGINE_REJECT,		/* a final rejection: engine_rejection()
				   says which */
	ENGINE_DONE,		/* resp is the answer */
	ENGINE_RETRY,		/* retry; resp is the answer once spent */
	ENGINE_DROP,		/* answer nothing */
	ENGINE_STALE,		/* the rows judged changed before the lock */
};

/* What the worker does with the response. */
enum engine_result {
	ENGINE_ANSWER = 0,	/* send the response */
	ENGINE_SILENT,		/* fault injection: send nothing */
};

/* One request's run (engine.c); an operation sees it through accessors. */
struct engine;

/* What an operation supplies. */
struct engine_op {
	const char	*name;		/* the ledger's operation column */
	size_t		 state_size;	/* the operation's state, zeroed once
					   for the run: engine_state() */
	/* Words for the engine's answers. */
	const char	*noun;		/* "order": "a new key for a new order" */
	const char	*effect;	/* what an unknown COMMIT may have done:
					   "the order may have been stored" */
	/* The final rejection a `final` fault raises (fault injection). */
	enum problem_code final_code;
	/*
	 * Add the operation's reads after the SAVEPOINT to the claim's
	 * round trip (-1 when the batch is full), then read their results
	 * once it ran; first is the index of the first statement added.
	 */
	int		 (*claim_batch)(struct engine *, struct db_batch *);
	void		 (*claimed)(struct engine *, struct db_batch *, int);
	const char	*claim_what;	/* what claim_batch reads, for logs */
	/* After the claim: judge, write, store the answer, COMMIT. */
	enum engine_step (*work)(struct engine *, struct response *);
	const char	*work_what;	/* its write batch, for logs */
	/*
	 * A final rejection, before anything is recorded: ENGINE_NEXT to
	 * record it, or another step (answered without a record); NULL:
	 * always recorded.
	 */
	enum engine_step (*refuse)(struct engine *, struct response *);
	/* After ROLLBACK TO SAVEPOINT, before the record; NULL: nothing. */
	enum engine_step (*undo)(struct engine *, struct response *);
	/*
	 * A write batch failed with a duplicate key at the statement the
	 * operation named in engine_run_part(): ENGINE_NEXT when that is no
	 * business of the operation (another key: a fresh id will do);
	 * NULL: never.
	 */
	enum engine_step (*duplicate)(struct engine *, struct response *);
};

struct engine_request {
	const char		*principal;
	const char		*key;
	const char		*fingerprint;
	const void		*input;		/* the operation's: its header
						   names the type */
	const struct fault_plan	*fault;		/* NULL: no faults */
};

enum engine_result engine_run(struct db *, const struct conf *,
	    const struct engine_op *, const struct engine_request *,
	    struct response *, int *);

/* What an operation's hooks may read and set of the run. */
void	*engine_state(struct engine *);
const void *engine_input(struct engine *);
const char *engine_principal(struct engine *);
const char *engine_key(struct engine *);
struct db *engine_db(struct engine *);
const struct conf *engine_conf(struct engine *);
struct db_batch *engine_batch(struct engine *);
unsigned long long engine_claim_id(struct engine *);
int	engine_attempt(struct engine *);
struct problem *engine_rejection(struct engine *);
int	engine_locked(struct engine *);
void	engine_set_locked(struct engine *);
void	engine_guard(struct engine *, int);

/* For an operation's work. */
enum engine_step engine_failed(struct engine *, int, const char *,
	    struct response *);
enum engine_step engine_too_big(struct engine *, struct response *);
enum engine_step engine_fault_at(struct engine *, enum fault_point,
	    const char *, struct response *);
enum engine_step engine_split_at(struct engine *, enum fault_point,
	    const char *, int *, struct response *);
enum engine_step engine_finish(struct engine *, enum event_type,
	    unsigned long long, const char *, int, struct response *);
enum engine_step engine_answer_committed(struct engine *, struct response *);
enum engine_step engine_answer_expired(struct engine *, const char *,
	    struct response *);

#endif
