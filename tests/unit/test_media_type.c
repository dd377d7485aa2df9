#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "media_type.h"
#include "problem.h"
#include "unit.h"

/* An assertion reported at the caller's line. */
#define CHECK_AT(line, cond)						\
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE,		\
	    (unsigned int)(line), #cond, __FILE__, "", CU_FALSE)

/* Assert a Content-Type verdict. */
static void
ct_check(int line, const char *ct, int ok)
{
	struct problem	 pb;
	int		 rc;

	memset(&pb, 0, sizeof(pb));
	rc = media_type_json(ct, &pb);
	if (ok) {
		CHECK_AT(line, rc == 0);
		return;
	}
	CHECK_AT(line, rc == -1);
	CHECK_AT(line, pb.status == 415);
	CHECK_AT(line, problem_code_name(pb.code) != NULL &&
	    strcmp(problem_code_name(pb.code), "UNSUPPORTED_MEDIA_TYPE") ==
	    0);
}

/* application/json with any case and parameters, nothing else. */
static void
test_content_type(void)
{
	ct_check(__LINE__, "application/json", 1);
	ct_check(__LINE__, "Application/JSON; charset=utf-8", 1);
	ct_check(__LINE__, "APPLICATION/JSON", 1);
	ct_check(__LINE__, " application/json ", 1);
	ct_check(__LINE__, "application/json;charset=UTF-8", 1);
	ct_check(__LINE__, "application/json\t;\tcharset=utf-8", 1);

	ct_check(__LINE__, NULL, 0);
	ct_check(__LINE__, "", 0);
	ct_check(__LINE__, "text/plain", 0);
	ct_check(__LINE__, "application/jsonx", 0);
	ct_check(__LINE__, "application/json-patch+json", 0);
	ct_check(__LINE__, "application/problem+json", 0);
	ct_check(__LINE__, "application/json x", 0);
	ct_check(__LINE__, "application/jso", 0);
	ct_check(__LINE__, "application/x-www-form-urlencoded", 0);
	ct_check(__LINE__, "text/json", 0);
}

/* The media_type suite. */
static const struct unit_test tests[] = {
	{ "content type", test_content_type },
	{ NULL, NULL },
};

const struct unit_suite test_media_type_suite = {
	"media_type", NULL, NULL, tests
};
