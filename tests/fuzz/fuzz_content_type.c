/*
 * The Content-Type check, judged against a reference reading: optional
 * whitespace, application/json in any case, then optional whitespace
 * and the end or a ';' starting parameters.  A rejection is a 415
 * UNSUPPORTED_MEDIA_TYPE with a valid detail.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_check.h"
#include "media_type.h"
#include "problem.h"

/* The reference: 1 when ct names application/json. */
static int
ref_is_json(const char *ct)
{
	const char	*s = ct;

	s += strspn(s, " \t");
	if (strncasecmp(s, "application/json", 16) != 0)
		return 0;
	s += 16;
	s += strspn(s, " \t");
	return *s == '\0' || *s == ';';
}

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct problem	 pb;
	char		*ct;
	int		 rc, want;

	if (size > 4096)
		return 0;
	ct = fuzz_cstr(data, size);
	memset(&pb, 0, sizeof(pb));
	rc = media_type_json(ct, &pb);
	want = ref_is_json(ct);
	if (rc == 0 && !want)
		fuzz_fail("Content-Type \"%s\" accepted", ct);
	if (rc == -1 && want)
		fuzz_fail("Content-Type \"%s\" rejected", ct);
	if (rc == -1)
		fuzz_check_problem(&pb, 415, "UNSUPPORTED_MEDIA_TYPE", NULL);
	free(ct);
	return 0;
}
