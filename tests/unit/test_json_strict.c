#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <json-c/json.h>

#include "json_strict.h"
#include "problem.h"
#include "unit.h"

#define S(lit)	(lit), sizeof(lit) - 1

/* Parse text at maxdepth, expecting a rejection whose detail has want. */
static void
expect_bad(const char *text, size_t len, int maxdepth, const char *code,
    const char *want)
{
	struct json_object	*o;
	struct problem		 pb;

	memset(&pb, 0, sizeof(pb));
	o = json_strict_parse(text, len, maxdepth, &pb);
	CU_ASSERT_PTR_NULL(o);
	json_object_put(o);
	CU_ASSERT_EQUAL(pb.status, 400);
	CU_ASSERT_TRUE(problem_code_name(pb.code) != NULL &&
	    strcmp(problem_code_name(pb.code), code) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(pb.detail, want));
	if (strstr(pb.detail, want) == NULL)
		fprintf(stderr, "\n%s: detail \"%s\", want \"%s\"\n", text,
		    pb.detail, want);
}

/* Any object parses into json-c's tree; the depth is the caller's. */
static void
test_parse_depth(void)
{
	struct json_object	*o, *v;
	struct problem		 pb;

	memset(&pb, 0, sizeof(pb));
	o = json_strict_parse(S(" {\"a\":[1,{\"b\":\"c\"}]} "), 3, &pb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_TRUE(json_object_object_get_ex(o, "a", &v));
	CU_ASSERT_EQUAL(json_object_array_length(v), 2);
	json_object_put(o);

	expect_bad(S("{\"a\":[1,{\"b\":\"c\"}]}"), 2, "MALFORMED_JSON",
	    "nesting deeper than 2");
	expect_bad(S("{\"a\":[[[1]]]}"), 3, "MALFORMED_JSON",
	    "nesting deeper than 3");
	expect_bad(S("[1]"), 3, "MALFORMED_JSON", "must be an object");
	expect_bad(S("{} {}"), 3, "MALFORMED_JSON", "trailing data");
	expect_bad(S("{\"a\":\"\\ud800\"}"), 3, "MALFORMED_JSON",
	    "unpaired surrogate");
	expect_bad(NULL, 0, 3, "MALFORMED_JSON", "empty body");
}

/*
 * A repeated name is found at any depth the caller allows, also when a
 * value before it nests containers, and named with its path.
 */
static void
test_repeated_names(void)
{
	expect_bad(S("{\"x\":{\"y\":1,\"y\":2}}"), 4, "VALIDATION_FAILED",
	    "member \"y\" appears more than once in x");
	expect_bad(S("{\"a\":{\"k\":[[{\"z\":1}]],\"k\":2}}"), 5,
	    "VALIDATION_FAILED", "member \"k\" appears more than once in a");
	expect_bad(S("{\"l\":[0,{\"k\":1,\"\\u006b\":2}]}"), 3,
	    "VALIDATION_FAILED", "member \"k\" appears more than once in l[1]");
}

/* A name shown in a detail is cut on a character boundary. */
static void
test_show_name(void)
{
	char	 out[JSON_STRICT_NAME_SHOW_MAX + 4], small[8];
	char	 name[80];

	json_strict_show_name(out, sizeof(out), "a\"b\\c\x01");
	CU_ASSERT_STRING_EQUAL(out, "a?b?c?");

	memset(name, 'n', sizeof(name));
	name[sizeof(name) - 1] = '\0';
	json_strict_show_name(out, sizeof(out), name);
	CU_ASSERT_EQUAL(strlen(out), JSON_STRICT_NAME_SHOW_MAX + 3);
	CU_ASSERT_STRING_EQUAL(out + JSON_STRICT_NAME_SHOW_MAX, "...");

	/* "xxx" then U+00E9 across the cut of a 4-byte room. */
	json_strict_show_name(small, sizeof(small), "xxx\xc3\xa9yy");
	CU_ASSERT_STRING_EQUAL(small, "xxx...");
	json_strict_show_name(small, sizeof(small), "xxxx");
	CU_ASSERT_STRING_EQUAL(small, "xxxx");
}

/* The json_strict suite. */
static const struct unit_test tests[] = {
	{ "parse and depth", test_parse_depth },
	{ "repeated names", test_repeated_names },
	{ "show name", test_show_name },
	{ NULL, NULL },
};

const struct unit_suite test_json_strict_suite = {
	"json_strict", NULL, NULL, tests
};
