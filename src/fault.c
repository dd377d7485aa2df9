#include "config.h"

#ifdef ENABLE_FAULT_INJECTION

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "log.h"
#include "mono.h"

static const char *fault_points[FP_COUNT] = {
	"before_ledger_insert", "after_ledger_insert", "after_order_insert",
	"after_stock_decrease", "before_commit", "after_commit",
	"conflict_read", "after_judge", "work_pause",
};

/* Parse work_pause's "K:MS" into plan: 0, or -1 when malformed. */
static int
parse_pause(struct fault_plan *plan, const char *s)
{
	char	*end;
	long	 k, ms;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	k = strtol(s, &end, 10);
	if (errno != 0 || *end != ':' || k > 64 || end[1] < '0' ||
	    end[1] > '9')
		return -1;
	ms = strtol(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || ms > 600000)
		return -1;
	plan->action[FP_WORK_PAUSE] = FAULT_PAUSE;
	plan->pause_after = (int)k;
	plan->sleep_ms[FP_WORK_PAUSE] = (int)ms;
	return 0;
}

/*
 * Parse a fault header into plan (zeroed here).  Returns 0, or -1 with
 * a message in err for a malformed header, so that a typo in a test
 * never passes silently.
 */
int
fault_parse(struct fault_plan *plan, const char *hdr, char *err, size_t errsz)
{
	char		 spec[512], *item, *save, *eq, *end;
	int		 i, pt;
	long		 ms;

	memset(plan, 0, sizeof(*plan));
	if (hdr == NULL)
		return 0;
	if (strlen(hdr) >= sizeof(spec)) {
		snprintf(err, errsz, "fault header too long");
		return -1;
	}
	strcpy(spec, hdr);
	for (item = strtok_r(spec, ", ", &save); item != NULL;
	    item = strtok_r(NULL, ", ", &save)) {
		eq = strchr(item, '=');
		if (eq == NULL) {
			snprintf(err, errsz, "fault \"%s\": expected "
			    "POINT=ACTION", item);
			return -1;
		}
		*eq++ = '\0';
		pt = -1;
		for (i = 0; i < FP_COUNT; i++)
			if (strcmp(item, fault_points[i]) == 0)
				pt = i;
		if (pt == -1) {
			snprintf(err, errsz, "unknown fault point \"%s\"", item);
			return -1;
		}
		if (pt == FP_WORK_PAUSE) {
			if (parse_pause(plan, eq) == -1) {
				snprintf(err, errsz, "bad pause \"%s\" at %s "
				    "(K:MS)", eq, item);
				return -1;
			}
			continue;
		}
		if (strcmp(eq, "crash") == 0)
			plan->action[pt] = FAULT_CRASH;
		else if (strcmp(eq, "transient") == 0)
			plan->action[pt] = FAULT_TRANSIENT;
		else if (strcmp(eq, "transient1") == 0)
			plan->action[pt] = FAULT_TRANSIENT1;
		else if (strcmp(eq, "final") == 0)
			plan->action[pt] = FAULT_FINAL;
		else if (strcmp(eq, "drop") == 0)
			plan->action[pt] = FAULT_DROP;
		else if (strcmp(eq, "null") == 0 && pt == FP_CONFLICT_READ)
			plan->action[pt] = FAULT_NULL;
		else if (strncmp(eq, "sleep", 5) == 0 && eq[5] >= '0' &&
		    eq[5] <= '9') {
			errno = 0;
			ms = strtol(eq + 5, &end, 10);
			if (errno != 0 || *end != '\0' || ms > 600000) {
				snprintf(err, errsz, "bad sleep \"%s\"", eq);
				return -1;
			}
			plan->action[pt] = FAULT_SLEEP;
			plan->sleep_ms[pt] = (int)ms;
		} else {
			snprintf(err, errsz, "unknown fault action \"%s\" at "
			    "%s", eq, item);
			return -1;
		}
		if ((pt == FP_AFTER_COMMIT || pt == FP_CONFLICT_READ) &&
		    (plan->action[pt] == FAULT_TRANSIENT ||
		    plan->action[pt] == FAULT_TRANSIENT1 ||
		    plan->action[pt] == FAULT_FINAL)) {
			snprintf(err, errsz, "fault action \"%s\" cannot "
			    "happen at %s (%s)", eq, item,
			    pt == FP_AFTER_COMMIT ? "the transaction is "
			    "committed" : "no transaction is open");
			return -1;
		}
		if (pt == FP_CONFLICT_READ && plan->action[pt] == FAULT_DROP) {
			snprintf(err, errsz, "fault action \"drop\" cannot "
			    "happen at %s", item);
			return -1;
		}
	}
	return 0;
}

/*
 * Act on the fault planned at point for this attempt: crash and sleep
 * happen here; the caller acts on the others.
 */
enum fault_action
fault_hit(const struct fault_plan *plan, enum fault_point pt, int attempt)
{
	enum fault_action a;

	if (plan == NULL)
		return FAULT_NONE;
	a = plan->action[pt];
	switch (a) {
	case FAULT_NONE:
		return FAULT_NONE;
	case FAULT_CRASH:
		log_warnx("fault injection: crash at %s", fault_points[pt]);
		_exit(70);
	case FAULT_SLEEP:
		log_info("fault injection: sleep %d ms at %s", plan->sleep_ms[pt],
		    fault_points[pt]);
		mono_sleep_ms(plan->sleep_ms[pt]);
		return FAULT_NONE;
	case FAULT_PAUSE:
		return FAULT_PAUSE;	/* db_batch_run() pauses */
	case FAULT_TRANSIENT1:
		return attempt == 1 ? FAULT_TRANSIENT : FAULT_NONE;
	default:
		log_info("fault injection: %s at %s", a == FAULT_TRANSIENT ?
		    "transient" : a == FAULT_FINAL ? "final" : a == FAULT_DROP ?
		    "drop" : "null", fault_points[pt]);
		return a;
	}
}

#endif /* ENABLE_FAULT_INJECTION */
