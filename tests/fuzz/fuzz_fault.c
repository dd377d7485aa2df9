/*
 * The X-Idemorders-Fault header (fault injection builds only): any value
 * either gives a plan of known actions, or an error message; never a
 * memory error.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "fuzz_check.h"

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fault_plan	 plan;
	char			*hdr, err[256];
	int			 i, rc;

	if (size > 4096)
		return 0;
	hdr = fuzz_cstr(data, size);
	memset(err, 'Z', sizeof(err));
	memset(&plan, 0x5a, sizeof(plan));
	rc = fault_parse(&plan, hdr, err, sizeof(err));
	if (rc == -1) {
		if (memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0')
			fuzz_fail("fault error not a message");
	} else if (rc != 0)
		fuzz_fail("fault_parse returned %d", rc);
	for (i = 0; rc == 0 && i < FP_COUNT; i++) {
		if ((int)plan.action[i] < (int)FAULT_NONE ||
		    (int)plan.action[i] > (int)FAULT_PAUSE)
			fuzz_fail("point %d: action %d", i, plan.action[i]);
		if (plan.action[i] == FAULT_NULL && i != FP_CONFLICT_READ)
			fuzz_fail("null at point %d", i);
		/* work_pause takes K:MS and nothing else; only it pauses. */
		if ((plan.action[i] == FAULT_PAUSE) != (i == FP_WORK_PAUSE &&
		    plan.action[i] != FAULT_NONE))
			fuzz_fail("point %d: action %d", i, plan.action[i]);
		/* A later item for the same point replaces the action. */
		if (plan.sleep_ms[i] < 0 || plan.sleep_ms[i] > 600000)
			fuzz_fail("point %d: sleep %d", i, plan.sleep_ms[i]);
	}
	if (rc == 0 && (plan.pause_after < 0 || plan.pause_after > 64))
		fuzz_fail("work_pause after %d statements", plan.pause_after);
	free(hdr);
	return 0;
}
