#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "fingerprint.h"
#include "order_input.h"
#include "problem.h"
#include "unit.h"

#define OP	"create-order"
#define CANON	"{\"amount\":12000,\"currency\":\"KRW\"," \
	"\"items\":[{\"qty\":2,\"sku\":\"A-10\"}],\"note\":\"\"," \
	"\"shipping\":\"standard\"}"

/*
 * Digests computed independently with Python's hashlib:
 *   sha256(b"idemorders-fp-v1" + be64(len(op)) + op
 *       + be64(len(principal)) + principal + be64(len(body)) + body)
 */
#define CANON_ALICE_FP \
	"bb5543cc75c080ade5649f8993f07d8698d1639abc06b3504bc9adb6b5322650"
#define EMPTY_FP \
	"96ec36d3ec5087310aff6bf7bb8fbe69b05d0d5150fec6f598af59ed05c52709"

/* Fingerprint NUL-terminated fields, asserting success. */
static void
fp(const char *op, const char *principal, const char *body,
    char out[FINGERPRINT_HEX_LEN + 1])
{
	memset(out, 'z', FINGERPRINT_HEX_LEN + 1);
	CU_ASSERT_EQUAL(fingerprint(op, principal, body, strlen(body), out),
	    0);
}

/* The digest of a fixed input pins the tag, the order and the lengths. */
static void
test_known_digest(void)
{
	char	 out[FINGERPRINT_HEX_LEN + 1];

	fp(OP, "alice", CANON, out);
	CU_ASSERT_STRING_EQUAL(out, CANON_ALICE_FP);
	fp("", "", "", out);
	CU_ASSERT_STRING_EQUAL(out, EMPTY_FP);
	CU_ASSERT_EQUAL(fingerprint("", "", NULL, 0, out), 0);
	CU_ASSERT_STRING_EQUAL(out, EMPTY_FP);
}

/* The output is 64 lower-case hex digits and stable. */
static void
test_format(void)
{
	char	 a[FINGERPRINT_HEX_LEN + 1], b[FINGERPRINT_HEX_LEN + 1];
	size_t	 i;

	fp(OP, "alice", CANON, a);
	CU_ASSERT_EQUAL(strlen(a), FINGERPRINT_HEX_LEN);
	for (i = 0; i < FINGERPRINT_HEX_LEN; i++)
		CU_ASSERT(strchr("0123456789abcdef", a[i]) != NULL &&
		    a[i] != '\0');
	fp(OP, "alice", CANON, b);
	CU_ASSERT_STRING_EQUAL(a, b);
}

/* Moving bytes from one field to the next changes the digest. */
static void
test_splits(void)
{
	char	 a[FINGERPRINT_HEX_LEN + 1], b[FINGERPRINT_HEX_LEN + 1];

	fp("ab", "c", CANON, a);
	fp("a", "bc", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);

	fp(OP, "ab", "c", a);
	fp(OP, "a", "bc", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);

	fp("ab", "", "c", a);
	fp("a", "", "bc", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);

	fp("", "abc", "", a);
	fp("abc", "", "", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);

	fp("", "", "abc", a);
	fp("", "abc", "", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

/* The principal and the operation are part of the fingerprint. */
static void
test_principal_operation(void)
{
	char	 a[FINGERPRINT_HEX_LEN + 1], b[FINGERPRINT_HEX_LEN + 1];

	fp(OP, "alice", CANON, a);
	fp(OP, "bob", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp(OP, "Alice", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp(OP, "alice ", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp("create-orders", "alice", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp("cancel-order", "alice", CANON, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp(OP, "alice", CANON " ", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

/* The body length is honoured, NUL bytes included. */
static void
test_body_length(void)
{
	char	 a[FINGERPRINT_HEX_LEN + 1], b[FINGERPRINT_HEX_LEN + 1];

	CU_ASSERT_EQUAL(fingerprint(OP, "alice", "a\0b", 3, a), 0);
	CU_ASSERT_EQUAL(fingerprint(OP, "alice", "a\0c", 3, b), 0);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	CU_ASSERT_EQUAL(fingerprint(OP, "alice", "ab", 1, a), 0);
	fp(OP, "alice", "a", b);
	CU_ASSERT_STRING_EQUAL(a, b);
}

/* Missing arguments fail and leave an empty string. */
static void
test_bad_arguments(void)
{
	char	 out[FINGERPRINT_HEX_LEN + 1];

	memset(out, 'z', sizeof(out));
	CU_ASSERT_EQUAL(fingerprint(NULL, "alice", "x", 1, out), -1);
	CU_ASSERT_EQUAL(out[0], '\0');
	memset(out, 'z', sizeof(out));
	CU_ASSERT_EQUAL(fingerprint(OP, NULL, "x", 1, out), -1);
	CU_ASSERT_EQUAL(out[0], '\0');
	memset(out, 'z', sizeof(out));
	CU_ASSERT_EQUAL(fingerprint(OP, "alice", NULL, 1, out), -1);
	CU_ASSERT_EQUAL(out[0], '\0');
}

/* Equivalent bodies give one fingerprint through order_input. */
static void
test_from_bodies(void)
{
	static const char	 a[] = "{\"currency\":\"KRW\",\"amount\":12000,"
	    "\"items\":[{\"sku\":\"A-10\",\"qty\":2}]}";
	static const char	 b[] = " { \"items\" : [ { \"qty\" : 2 , "
	    "\"sku\" : \"A-\\u0031\\u0030\" } ] , \"note\" : \"\" , "
	    "\"shipping\" : \"standard\" , \"amount\" : 12000 , "
	    "\"currency\" : \"KRW\" } ";
	struct order_input	 ia, ib;
	struct problem		 pb;
	char			 fa[FINGERPRINT_HEX_LEN + 1];
	char			 fb[FINGERPRINT_HEX_LEN + 1];

	memset(&ia, 0, sizeof(ia));
	memset(&ib, 0, sizeof(ib));
	CU_ASSERT_EQUAL_FATAL(order_input_parse(&ia, a, sizeof(a) - 1, &pb),
	    0);
	CU_ASSERT_EQUAL_FATAL(order_input_parse(&ib, b, sizeof(b) - 1, &pb),
	    0);
	CU_ASSERT_STRING_EQUAL(ia.canonical, CANON);
	CU_ASSERT_EQUAL(fingerprint(OP, "alice", ia.canonical,
	    ia.canonical_len, fa), 0);
	CU_ASSERT_EQUAL(fingerprint(OP, "alice", ib.canonical,
	    ib.canonical_len, fb), 0);
	CU_ASSERT_STRING_EQUAL(fa, fb);
	CU_ASSERT_STRING_EQUAL(fa, CANON_ALICE_FP);
	CU_ASSERT_EQUAL(fingerprint(OP, "bob", ib.canonical,
	    ib.canonical_len, fb), 0);
	CU_ASSERT_STRING_NOT_EQUAL(fa, fb);
	order_input_clear(&ia);
	order_input_clear(&ib);
}

/* The fingerprint suite. */
static const struct unit_test tests[] = {
	{ "known digest", test_known_digest },
	{ "format", test_format },
	{ "field splits", test_splits },
	{ "principal and operation", test_principal_operation },
	{ "body length", test_body_length },
	{ "bad arguments", test_bad_arguments },
	{ "from bodies", test_from_bodies },
	{ NULL, NULL },
};

const struct unit_suite test_fingerprint_suite = {
	"fingerprint", NULL, NULL, tests
};
