#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "buf.h"
#include "fingerprint.h"
#include "order_input.h"
#include "problem.h"
#include "unit.h"
#include "utf8.h"

/* An assertion reported at the caller's line. */
#define CHECK_AT(line, cond)						\
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE,		\
	    (unsigned int)(line), #cond, __FILE__, "", CU_FALSE)

#define S(lit)			(lit), sizeof(lit) - 1
#define OK(body)		expect_ok(__LINE__, S(body))
#define BAD(body, st, code, field)					\
	expect_bad(__LINE__, S(body), (st), (code), (field))
#define BADN(body, len, st, code, field)				\
	expect_bad(__LINE__, (body), (len), (st), (code), (field))
#define INVALID(body, field)	BAD(body, 400, "VALIDATION_FAILED", field)
#define MALFORMED(body, what)	BAD(body, 400, "MALFORMED_JSON", what)

#define CUR	"\"currency\":\"KRW\""
#define ITEMS	"\"items\":[{\"sku\":\"A-10\",\"qty\":2}]"
#define AMT	"\"amount\":12000"
#define BASE	"{" CUR "," ITEMS "," AMT "}"
#define WITH(m)	"{" CUR "," ITEMS "," AMT "," m "}"
#define ITEMSX(i) "{" CUR ",\"items\":" i "," AMT "}"
#define AMTX(a)	"{" CUR "," ITEMS ",\"amount\":" a "}"
#define QTYX(q)	ITEMSX("[{\"sku\":\"A-10\",\"qty\":" q "}]")
#define SKUX(s)	ITEMSX("[{\"sku\":" s ",\"qty\":1}]")
#define CURX(c)	"{\"currency\":" c "," ITEMS "," AMT "}"

#define BASE_CANON "{\"amount\":12000,\"currency\":\"KRW\"," \
	"\"items\":[{\"qty\":2,\"sku\":\"A-10\"}],\"note\":\"\"," \
	"\"shipping\":\"standard\"}"

/* Tell whether an order_input holds nothing at all. */
static int
is_clear(const struct order_input *in)
{
	static const struct order_input	 zero;

	return memcmp(in, &zero, sizeof(zero)) == 0;
}

/* Parse a body into a zeroed order. */
static int
parse(struct order_input *in, struct problem *pb, const char *body,
    size_t len)
{
	memset(in, 0, sizeof(*in));
	memset(pb, 0, sizeof(*pb));
	return order_input_parse(in, body, len, pb);
}

/* The code of a problem as a client reads it, or "(null)". */
static const char *
code_of(const struct problem *pb)
{
	const char	*name = problem_code_name(pb->code);

	return name != NULL ? name : "(null)";
}

/* Assert that a body is accepted; the order is cleared afterwards. */
static void
expect_ok(int line, const char *body, size_t len)
{
	struct order_input	 in;
	struct problem		 pb;
	int			 rc;

	rc = parse(&in, &pb, body, len);
	CHECK_AT(line, rc == 0);
	CHECK_AT(line, rc != 0 || in.canonical != NULL);
	if (rc != 0)
		fprintf(stderr, "\nline %d: rejected: %d %s: %s\n", line,
		    pb.status, code_of(&pb), pb.detail);
	order_input_clear(&in);
	CHECK_AT(line, is_clear(&in));
}

/*
 * Assert that a body is refused with status and code, that the detail
 * holds field (when not NULL) and that nothing is left in the order.
 */
static void
expect_bad(int line, const char *body, size_t len, int status,
    const char *code, const char *field)
{
	struct order_input	 in;
	struct problem		 pb;
	int			 rc, good;

	rc = parse(&in, &pb, body, len);
	good = rc == -1 && pb.status == status &&
	    strcmp(code_of(&pb), code) == 0 &&
	    (field == NULL || strstr(pb.detail, field) != NULL);
	CHECK_AT(line, rc == -1);
	CHECK_AT(line, pb.status == status);
	CHECK_AT(line, strcmp(code_of(&pb), code) == 0);
	if (field != NULL)
		CHECK_AT(line, strstr(pb.detail, field) != NULL);
	CHECK_AT(line, is_clear(&in));
	if (!good)
		fprintf(stderr, "\nline %d: want %d %s [%s], got rc %d: "
		    "%d %s: %s\n", line, status, code, field ? field : "",
		    rc, pb.status, code_of(&pb), pb.detail);
	order_input_clear(&in);
	order_input_clear(&in);
	CHECK_AT(line, is_clear(&in));
}

/* Parse a body that must be accepted and return its canonical form. */
static char *
canon(int line, const char *body, size_t len)
{
	struct order_input	 in;
	struct problem		 pb;
	char			*c = NULL;

	if (parse(&in, &pb, body, len) == 0) {
		c = malloc(in.canonical_len + 1);
		if (c != NULL)
			memcpy(c, in.canonical, in.canonical_len + 1);
		CHECK_AT(line, strlen(in.canonical) == in.canonical_len);
	} else
		fprintf(stderr, "\nline %d: rejected: %s: %s\n", line,
		    code_of(&pb), pb.detail);
	CHECK_AT(line, c != NULL);
	order_input_clear(&in);
	return c;
}

/* Build "{...,"items":[n distinct items],...}"; the caller frees it. */
static char *
body_with_items(size_t n, size_t *lenp)
{
	struct buf	 b;
	size_t		 i;

	buf_init(&b, 1 << 20);
	buf_adds(&b, "{\"currency\":\"KRW\",\"amount\":1,\"items\":[");
	for (i = 0; i < n; i++)
		buf_printf(&b, "%s{\"sku\":\"S-%03zu\",\"qty\":1}",
		    i ? "," : "", n - i);
	buf_adds(&b, "]}");
	return buf_detach(&b, lenp);
}

/* Build a body whose note repeats unit n times; the caller frees it. */
static char *
body_with_note(const char *unit, size_t n, size_t *lenp)
{
	struct buf	 b;
	size_t		 i;

	buf_init(&b, 1 << 20);
	buf_adds(&b, WITH("\"note\":\"\""));
	b.len -= 2;		/* drop the closing "} to append the note */
	b.p[b.len] = '\0';
	for (i = 0; i < n; i++)
		buf_adds(&b, unit);
	buf_adds(&b, "\"}");
	return buf_detach(&b, lenp);
}

/* A minimal valid body fills every field and the defaults. */
static void
test_parse_minimal(void)
{
	struct order_input	 in;
	struct problem		 pb;

	CU_ASSERT_EQUAL_FATAL(parse(&in, &pb, S(BASE)), 0);
	CU_ASSERT_STRING_EQUAL(in.currency, "KRW");
	CU_ASSERT_EQUAL(in.amount, 12000);
	CU_ASSERT_EQUAL(in.nitems, 1);
	CU_ASSERT_STRING_EQUAL(in.items[0].sku, "A-10");
	CU_ASSERT_EQUAL(in.items[0].qty, 2);
	CU_ASSERT_EQUAL(in.shipping, SHIPPING_STANDARD);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in.note);
	CU_ASSERT_STRING_EQUAL(in.note, "");
	CU_ASSERT_EQUAL(in.note_len, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in.canonical);
	CU_ASSERT_STRING_EQUAL(in.canonical, BASE_CANON);
	CU_ASSERT_EQUAL(in.canonical_len, strlen(BASE_CANON));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
}

/* The canonical form of a full body, byte for byte. */
static void
test_canonical_exact(void)
{
	static const char	 body[] = " {\n\t\"note\" : \"caf\\u00e9 "
	    "\\\"x\\\" \\/ a\\\\b\\n\\u0001\", \"shipping\":\"express\","
	    "\"items\":[{\"qty\":1,\"sku\":\"b-1\"},{\"sku\":\"B-2\","
	    "\"qty\":10000},{\"sku\":\"A.3\",\"qty\":3},"
	    "{\"sku\":\"A-3\",\"qty\":4}],\"amount\":1000000000000000,"
	    "\"currency\":\"USD\"}\r\n";
	static const char	 want[] = "{\"amount\":1000000000000000,"
	    "\"currency\":\"USD\",\"items\":[{\"qty\":4,\"sku\":\"A-3\"},"
	    "{\"qty\":3,\"sku\":\"A.3\"},{\"qty\":10000,\"sku\":\"B-2\"},"
	    "{\"qty\":1,\"sku\":\"b-1\"}],\"note\":\"caf\xc3\xa9 \\\"x\\\" "
	    "/ a\\\\b\\n\\u0001\",\"shipping\":\"express\"}";
	struct order_input	 in;
	struct problem		 pb;

	CU_ASSERT_EQUAL_FATAL(parse(&in, &pb, S(body)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in.canonical);
	CU_ASSERT_STRING_EQUAL(in.canonical, want);
	CU_ASSERT_EQUAL(in.canonical_len, sizeof(want) - 1);
	CU_ASSERT_EQUAL(in.shipping, SHIPPING_EXPRESS);
	CU_ASSERT_EQUAL(in.amount, 1000000000000000LL);
	CU_ASSERT_EQUAL(in.nitems, 4);
	CU_ASSERT_STRING_EQUAL(in.items[0].sku, "A-3");
	CU_ASSERT_STRING_EQUAL(in.items[1].sku, "A.3");
	CU_ASSERT_STRING_EQUAL(in.items[2].sku, "B-2");
	CU_ASSERT_STRING_EQUAL(in.items[3].sku, "b-1");
	CU_ASSERT_EQUAL(in.items[2].qty, 10000);
	CU_ASSERT_STRING_EQUAL(in.note, "caf\xc3\xa9 \"x\" / a\\b\n\x01");
	CU_ASSERT_EQUAL(in.note_len, strlen(in.note));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
}

struct canon_vector {
	const char	*what;
	const char	*a;
	const char	*b;
	int		 same;
};

static const struct canon_vector canon_vectors[] = {
	/* Equal pairs. */
	{ "whitespace", BASE, " {\n\t" CUR " ,\r\n" ITEMS " , " AMT "\n} \n",
	    1 },
	{ "member order", BASE, "{" AMT "," ITEMS "," CUR "}", 1 },
	{ "item member order", BASE,
	    ITEMSX("[{\"qty\":2,\"sku\":\"A-10\"}]"), 1 },
	{ "item order",
	    ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"B-20\",\"qty\":1}]"),
	    ITEMSX("[{\"sku\":\"B-20\",\"qty\":1},{\"sku\":\"A-10\",\"qty\":2}]"),
	    1 },
	{ "default shipping", BASE, WITH("\"shipping\":\"standard\""), 1 },
	{ "default note", BASE, WITH("\"note\":\"\""), 1 },
	{ "both defaults", BASE,
	    WITH("\"note\":\"\",\"shipping\":\"standard\""), 1 },
	{ "\\u00e9 vs literal", WITH("\"note\":\"caf\\u00e9\""),
	    WITH("\"note\":\"caf\xc3\xa9\""), 1 },
	{ "\\u00E9 vs \\u00e9", WITH("\"note\":\"\\u00E9\""),
	    WITH("\"note\":\"\\u00e9\""), 1 },
	{ "\\/ vs /", WITH("\"note\":\"a\\/b\""), WITH("\"note\":\"a/b\""), 1 },
	{ "surrogate pair vs literal", WITH("\"note\":\"\\ud83d\\ude00\""),
	    WITH("\"note\":\"\xf0\x9f\x98\x80\""), 1 },
	{ "\\t vs \\u0009", WITH("\"note\":\"\\t\""),
	    WITH("\"note\":\"\\u0009\""), 1 },
	{ "\\\" vs \\u0022", WITH("\"note\":\"\\\"\""),
	    WITH("\"note\":\"\\u0022\""), 1 },
	{ "escaped sku", BASE, ITEMSX("[{\"sku\":\"\\u0041-10\",\"qty\":2}]"),
	    1 },
	{ "escaped currency", BASE, CURX("\"\\u004bRW\""), 1 },
	{ "escaped member name", BASE, "{" CUR "," ITEMS ",\"\\u0061mount\":"
	    "12000}", 1 },
	{ "-0 vs 0", AMTX("0"), AMTX("-0"), 1 },

	/* Different pairs. */
	{ "currency", BASE, CURX("\"USD\""), 0 },
	{ "sku", BASE, ITEMSX("[{\"sku\":\"A-11\",\"qty\":2}]"), 0 },
	{ "sku case", BASE, ITEMSX("[{\"sku\":\"a-10\",\"qty\":2}]"), 0 },
	{ "qty", BASE, QTYX("3"), 0 },
	{ "amount", BASE, AMTX("12001"), 0 },
	{ "shipping", BASE, WITH("\"shipping\":\"express\""), 0 },
	{ "note empty vs space", BASE, WITH("\"note\":\" \""), 0 },
	{ "note case", WITH("\"note\":\"a\""), WITH("\"note\":\"A\""), 0 },
	{ "note NFC vs NFD", WITH("\"note\":\"\\u00e9\""),
	    WITH("\"note\":\"e\\u0301\""), 0 },
	{ "note newline vs backslash-n", WITH("\"note\":\"\\n\""),
	    WITH("\"note\":\"\\\\n\""), 0 },
	{ "extra item", BASE,
	    ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"B-20\",\"qty\":1}]"),
	    0 },
	{ "qty moved between items",
	    ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"B-20\",\"qty\":1}]"),
	    ITEMSX("[{\"sku\":\"A-10\",\"qty\":1},{\"sku\":\"B-20\",\"qty\":2}]"),
	    0 },
	{ "sku split", ITEMSX("[{\"sku\":\"AB\",\"qty\":1},{\"sku\":\"C\","
	    "\"qty\":1}]"), ITEMSX("[{\"sku\":\"A\",\"qty\":1},{\"sku\":\"BC\","
	    "\"qty\":1}]"), 0 },
};

/*
 * Each vector: both bodies are accepted, their canonical forms and
 * fingerprints are equal exactly when they should be, and the canonical
 * form is a fixed point.
 */
static void
test_canonical_vectors(void)
{
	const struct canon_vector	*v;
	char				*a, *b, *aa;
	char				 fa[FINGERPRINT_HEX_LEN + 1];
	char				 fb[FINGERPRINT_HEX_LEN + 1];
	size_t				 i, n;

	n = sizeof(canon_vectors) / sizeof(canon_vectors[0]);
	CU_ASSERT(n >= 25);
	for (i = 0; i < n; i++) {
		v = &canon_vectors[i];
		a = canon(__LINE__, v->a, strlen(v->a));
		b = canon(__LINE__, v->b, strlen(v->b));
		if (a == NULL || b == NULL) {
			fprintf(stderr, "\nvector \"%s\" rejected\n", v->what);
			free(a);
			free(b);
			continue;
		}
		CU_ASSERT_EQUAL((strcmp(a, b) == 0), v->same);
		CU_ASSERT_EQUAL_FATAL(fingerprint("create-order", "alice", a,
		    strlen(a), fa), 0);
		CU_ASSERT_EQUAL_FATAL(fingerprint("create-order", "alice", b,
		    strlen(b), fb), 0);
		CU_ASSERT_EQUAL((strcmp(fa, fb) == 0), v->same);
		if ((strcmp(a, b) == 0) != v->same)
			fprintf(stderr, "\nvector \"%s\": %s vs %s\n", v->what,
			    a, b);
		aa = canon(__LINE__, a, strlen(a));
		CU_ASSERT(aa != NULL && strcmp(aa, a) == 0);
		free(aa);
		free(a);
		free(b);
	}
}

/* qty is an integer from 1 to 10000. */
static void
test_qty(void)
{
	OK(QTYX("1"));
	OK(QTYX("10000"));
	INVALID(QTYX("0"), "items[0].qty");
	INVALID(QTYX("10001"), "items[0].qty");
	INVALID(QTYX("-1"), "items[0].qty");
	INVALID(QTYX("-0"), "items[0].qty");
	INVALID(QTYX("2.0"), "items[0].qty must be an integer");
	INVALID(QTYX("2e0"), "items[0].qty must be an integer");
	INVALID(QTYX("1E3"), "items[0].qty must be an integer");
	INVALID(QTYX("2.5"), "items[0].qty must be an integer");
	INVALID(QTYX("99999999999999999999"), "items[0].qty");
	INVALID(QTYX("-99999999999999999999"), "items[0].qty");
	INVALID(QTYX("4294967297"), "items[0].qty");
	INVALID(QTYX("\"2\""), "items[0].qty must be an integer");
	INVALID(QTYX("null"), "items[0].qty must be an integer");
	INVALID(QTYX("true"), "items[0].qty must be an integer");
	INVALID(QTYX("[2]"), "items[0].qty must be an integer");
	INVALID(QTYX("{}"), "items[0].qty must be an integer");
	INVALID(ITEMSX("[{\"sku\":\"A-10\",\"qty\":1},{\"sku\":\"B\","
	    "\"qty\":0}]"), "items[1].qty");
}

/* amount is an integer from 0 to 10^15. */
static void
test_amount(void)
{
	OK(AMTX("0"));
	OK(AMTX("1000000000000000"));
	INVALID(AMTX("-1"), "amount");
	INVALID(AMTX("1000000000000001"), "amount");
	INVALID(AMTX("99999999999999999999"), "amount");
	INVALID(AMTX("-99999999999999999999"), "amount");
	INVALID(AMTX("9223372036854775807"), "amount");
	INVALID(AMTX("9223372036854775808"), "amount");
	INVALID(AMTX("18446744073709551616"), "amount");
	INVALID(AMTX("2.0"), "amount must be an integer");
	INVALID(AMTX("2e0"), "amount must be an integer");
	INVALID(AMTX("1E3"), "amount must be an integer");
	INVALID(AMTX("1e400"), "amount must be an integer");
	INVALID(AMTX("\"100\""), "amount must be an integer");
	INVALID(AMTX("true"), "amount must be an integer");
	INVALID(AMTX("false"), "amount must be an integer");
	INVALID(AMTX("null"), "amount must be an integer");
	INVALID("{" CUR "," ITEMS "}", "amount is required");
}

/* items holds 1 to 100 objects. */
static void
test_items_count(void)
{
	struct order_input	 in;
	struct problem		 pb;
	char			*body;
	size_t			 len, i;

	body = body_with_items(100, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	CU_ASSERT_EQUAL(parse(&in, &pb, body, len), 0);
	CU_ASSERT_EQUAL(in.nitems, 100);
	for (i = 1; i < in.nitems; i++)
		CU_ASSERT(strcmp(in.items[i - 1].sku, in.items[i].sku) < 0);
	order_input_clear(&in);
	free(body);

	body = body_with_items(101, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	BADN(body, len, 400, "VALIDATION_FAILED", "items");
	CU_ASSERT_EQUAL(parse(&in, &pb, body, len), -1);
	CU_ASSERT(strstr(pb.detail, "101") != NULL);
	free(body);

	OK(ITEMSX("[{\"sku\":\"A\",\"qty\":1}]"));
	INVALID(ITEMSX("[]"), "items");
	INVALID(ITEMSX("{}"), "items must be an array");
	INVALID(ITEMSX("\"A-10\""), "items must be an array");
	INVALID(ITEMSX("null"), "items must be an array");
	INVALID(ITEMSX("[1]"), "items[0] must be an object");
	INVALID(ITEMSX("[{\"sku\":\"A\",\"qty\":1},[]]"),
	    "items[1] must be an object");
	INVALID("{" CUR "," AMT "}", "items is required");
}

/* Items have exactly sku and qty, and no SKU twice. */
static void
test_items_members(void)
{
	INVALID(ITEMSX("[{\"sku\":\"A-10\",\"qty\":2,\"color\":\"red\"}]"),
	    "\"items[0].color\" is not allowed");
	INVALID(ITEMSX("[{\"sku\":\"A\",\"qty\":1},{\"sku\":\"B\",\"qty\":1,"
	    "\"price\":5}]"), "items[1].price");
	INVALID(ITEMSX("[{\"qty\":2}]"), "items[0].sku is required");
	INVALID(ITEMSX("[{\"sku\":\"A-10\"}]"), "items[0].qty is required");
	INVALID(ITEMSX("[{}]"), "items[0].sku");
	INVALID(ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"B-20\","
	    "\"qty\":1},{\"sku\":\"A-10\",\"qty\":3}]"), "\"A-10\"");
	INVALID(ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"B-20\","
	    "\"qty\":1},{\"sku\":\"A-10\",\"qty\":3}]"), "items[2].sku");
	INVALID(ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"A-\\u0031"
	    "0\",\"qty\":2}]"), "\"A-10\"");
	OK(ITEMSX("[{\"sku\":\"A-10\",\"qty\":2},{\"sku\":\"a-10\","
	    "\"qty\":2}]"));
}

/* sku is 1 to 64 characters of [A-Za-z0-9._-]. */
static void
test_sku(void)
{
	OK(SKUX("\"Az09._-\""));
	OK(SKUX("\"1234567890123456789012345678901234567890"
	    "123456789012345678901234\""));
	INVALID(SKUX("\"1234567890123456789012345678901234567890"
	    "1234567890123456789012345\""), "items[0].sku");
	INVALID(SKUX("\"\""), "items[0].sku");
	INVALID(SKUX("\"A 10\""), "items[0].sku");
	INVALID(SKUX("\"A/10\""), "items[0].sku");
	INVALID(SKUX("\"A+10\""), "items[0].sku");
	INVALID(SKUX("\"caf\xc3\xa9\""), "items[0].sku");
	INVALID(SKUX("\"A\\u0000\""), "items[0].sku");
	INVALID(SKUX("10"), "items[0].sku must be a string");
	INVALID(SKUX("null"), "items[0].sku must be a string");
}

/* currency is three upper-case letters. */
static void
test_currency(void)
{
	OK(CURX("\"USD\""));
	INVALID(CURX("\"krw\""), "currency");
	INVALID(CURX("\"KRWX\""), "currency");
	INVALID(CURX("\"KR\""), "currency");
	INVALID(CURX("\"\""), "currency");
	INVALID(CURX("\"K1W\""), "currency");
	INVALID(CURX("\"K\\u00c9W\""), "currency");
	INVALID(CURX("\"KR\\u0000\""), "currency");
	INVALID(CURX("123"), "currency must be a string");
	INVALID(CURX("null"), "currency must be a string");
	INVALID("{" ITEMS "," AMT "}", "currency is required");
}

/* shipping is standard or express. */
static void
test_shipping(void)
{
	struct order_input	 in;
	struct problem		 pb;

	OK(WITH("\"shipping\":\"express\""));
	OK(WITH("\"shipping\":\"standard\""));
	INVALID(WITH("\"shipping\":\"Express\""), "shipping");
	INVALID(WITH("\"shipping\":\"\""), "shipping");
	INVALID(WITH("\"shipping\":\"overnight\""), "shipping");
	INVALID(WITH("\"shipping\":\"express\\u0000\""), "shipping");
	INVALID(WITH("\"shipping\":null"), "shipping must be a string");
	INVALID(WITH("\"shipping\":1"), "shipping must be a string");

	CU_ASSERT_STRING_EQUAL(shipping_name(SHIPPING_STANDARD), "standard");
	CU_ASSERT_STRING_EQUAL(shipping_name(SHIPPING_EXPRESS), "express");
	CU_ASSERT_EQUAL_FATAL(parse(&in, &pb,
	    S(WITH("\"shipping\":\"express\""))), 0);
	CU_ASSERT_EQUAL(in.shipping, SHIPPING_EXPRESS);
	order_input_clear(&in);
}

/* note is at most 500 code points, whatever their byte length. */
static void
test_note(void)
{
	static const char *const units[] = {
		"x", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"\\u00e9", "\\ud83d\\ude00", "\\n",
	};
	struct order_input	 in;
	struct problem		 pb;
	char			*body;
	size_t			 len, i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		body = body_with_note(units[i], ORDER_NOTE_MAX, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		CU_ASSERT_EQUAL(parse(&in, &pb, body, len), 0);
		CU_ASSERT_PTR_NOT_NULL(in.note);
		order_input_clear(&in);
		free(body);

		body = body_with_note(units[i], ORDER_NOTE_MAX + 1, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		BADN(body, len, 400, "VALIDATION_FAILED", "note");
		CU_ASSERT_EQUAL(parse(&in, &pb, body, len), -1);
		CU_ASSERT(strstr(pb.detail, "501") != NULL);
		free(body);
	}

	body = body_with_note("\xc3\xa9", ORDER_NOTE_MAX, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	CU_ASSERT_EQUAL_FATAL(parse(&in, &pb, body, len), 0);
	CU_ASSERT_EQUAL(in.note_len, 2 * ORDER_NOTE_MAX);
	CU_ASSERT_EQUAL(strlen(in.note), 2 * ORDER_NOTE_MAX);
	order_input_clear(&in);
	free(body);

	INVALID(WITH("\"note\":\"a\\u0000b\""), "note");
	INVALID(WITH("\"note\":\"\\u0000\""), "note must not contain U+0000");
	INVALID(WITH("\"note\":1"), "note must be a string");
	INVALID(WITH("\"note\":null"), "note must be a string");
	INVALID(WITH("\"note\":[\"x\"]"), "note must be a string");
	INVALID(WITH("\"note\":{\"a\":\"b\"}"), "note must be a string");
}

/* Members outside the schema are named. */
static void
test_unknown_member(void)
{
	INVALID(WITH("\"foo\":1"), "foo");
	INVALID(WITH("\"Currency\":\"KRW\""), "Currency");
	INVALID(WITH("\"discount\":null"), "\"discount\" is not allowed");
	INVALID(WITH("\"\":1"), "member \"\" is not allowed");
	INVALID(WITH("\"caf\xc3\xa9\":1"), "caf\xc3\xa9");
	INVALID(WITH("\"a\\\"b\":1"), "a?b");
	INVALID(WITH("\"" "0123456789012345678901234567890123456789"
	    "0123456789\":1"), "...");
}

/* A name given twice in one object is refused, not last-wins. */
static void
test_duplicate_member(void)
{
	INVALID("{" CUR "," ITEMS "," AMT ",\"amount\":1}",
	    "member \"amount\" appears more than once in the top-level object");
	INVALID("{" CUR "," CUR "," ITEMS "," AMT "}", "\"currency\"");
	INVALID("{" CUR "," ITEMS "," AMT ",\"\\u0061mount\":12000}",
	    "\"amount\"");
	INVALID(ITEMSX("[{\"sku\":\"A\",\"sku\":\"B\",\"qty\":1}]"),
	    "\"sku\" appears more than once in items[0]");
	INVALID(ITEMSX("[{\"sku\":\"A\",\"qty\":1},{\"sku\":\"B\",\"qty\":1,"
	    "\"qty\":2}]"), "\"qty\" appears more than once in items[1]");
	INVALID(WITH("\"note\":{\"a\":1},\"note\":\"x\""), "\"note\"");
	INVALID(WITH("\"x\":[{\"a\":[1,{\"b\":2}],\"a\":1}]"),
	    "\"a\" appears more than once in x[0]");
	INVALID(WITH("\"x\":{\"a\":{\"b\":{},\"b\":{}}}"),
	    "\"b\" appears more than once in x.a");
}

/* Not JSON, not an object, or more than one value. */
static void
test_malformed(void)
{
	MALFORMED(BASE " x", "trailing data");
	MALFORMED(BASE "{}", "trailing data");
	MALFORMED(BASE ",", "trailing data");
	MALFORMED(BASE "\n\"x\"", "trailing data");
	OK(BASE " \r\n\t");
	OK("\n " BASE);
	MALFORMED("", "empty");
	MALFORMED(" \n ", "empty");
	MALFORMED("[]", "object");
	MALFORMED("[" BASE "]", "object");
	MALFORMED("\"x\"", "object");
	MALFORMED("2", "object");
	MALFORMED("null", "object");
	MALFORMED("{", NULL);
	MALFORMED("{" CUR, NULL);
	MALFORMED("{" CUR ",}", NULL);
	MALFORMED("{" CUR "," ITEMS "," AMT ",}", NULL);
	MALFORMED("{'currency':'KRW'," ITEMS "," AMT "}", NULL);
	MALFORMED("{\"currency\":'KRW'," ITEMS "," AMT "}", NULL);
	MALFORMED("{currency:\"KRW\"," ITEMS "," AMT "}", NULL);
	MALFORMED(AMTX("NaN"), NULL);
	MALFORMED(AMTX("Infinity"), NULL);
	MALFORMED(AMTX("-Infinity"), NULL);
	MALFORMED(AMTX("-01"), NULL);
	MALFORMED(AMTX("012"), NULL);
	MALFORMED(AMTX("1."), NULL);
	MALFORMED(AMTX("1.e5"), NULL);
	MALFORMED(AMTX(".5"), NULL);
	MALFORMED(AMTX("+1"), NULL);
	MALFORMED(AMTX("0x10"), NULL);
	MALFORMED(AMTX("1 2"), NULL);
	MALFORMED(BASE "/* c */", NULL);
	MALFORMED("/* c */" BASE, NULL);
	MALFORMED("\xef\xbb\xbf" BASE, "byte order mark");
	MALFORMED(WITH("\"note\":\"a\tb\""), "control character");
	MALFORMED(WITH("\"note\":\"a\nb\""), "control character");
	MALFORMED(WITH("\"note\":\"a\x1f" "b\""), "control character");
	MALFORMED(WITH("\"note\":\"\\a\""), NULL);
	MALFORMED(WITH("\"note\":\"\\x41\""), NULL);
	MALFORMED(WITH("\"note\":\"\\u00\""), NULL);
	MALFORMED(WITH("\"note\":\"\\U00e9\""), NULL);
	MALFORMED(WITH("\"note\":tru"), NULL);
	MALFORMED(WITH("\"note\":True"), NULL);
	BADN("{\"note\":\"a\0b\"}", 14, 400, "MALFORMED_JSON", "NUL");
	BADN(BASE "\0", sizeof(BASE), 400, "MALFORMED_JSON", "NUL");
	BADN("\0" BASE, sizeof(BASE), 400, "MALFORMED_JSON", "NUL");
	BADN(NULL, 0, 400, "MALFORMED_JSON", "empty");
}

/* Bytes that are not UTF-8 are refused before json-c sees them. */
static void
test_utf8(void)
{
	MALFORMED(WITH("\"note\":\"\xc3\x28\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xc0\xaf\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xc1\xbf\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xe0\x80\xaf\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xf0\x80\x80\xaf\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xed\xa0\x80\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xed\xbf\xbf\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xf4\x90\x80\x80\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xf5\x80\x80\x80\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xff\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\x80\""), "UTF-8");
	MALFORMED(WITH("\"note\":\"\xe2\x82\""), "UTF-8");
	MALFORMED(BASE "\xc3", "UTF-8");
	MALFORMED("{\"\xc3\x28\":1}", "UTF-8");
	BAD("\xc3\x28", 400, "MALFORMED_JSON", "offset 0");
	OK(WITH("\"note\":\"\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf\""));
	OK(WITH("\"note\":\"\xc2\x80\xe0\xa0\x80\xf0\x90\x80\x80\""));
}

/* Escapes of lone surrogates are refused; json-c would emit U+FFFD. */
static void
test_surrogates(void)
{
	struct order_input	 in;
	struct problem		 pb;

	MALFORMED(WITH("\"note\":\"\\ud800\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\uDBFF\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\udc00\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\ud800x\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\ud800\\u0041\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\ud800\\ud800\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\ude00\\ud83d\""), "surrogate");
	MALFORMED(WITH("\"note\":\"\\ud800\\n\""), "surrogate");
	MALFORMED(WITH("\"x\\ud800\":1"), "surrogate");

	CU_ASSERT_EQUAL_FATAL(parse(&in, &pb,
	    S(WITH("\"note\":\"\\ud83d\\ude00\\uFFFD\""))), 0);
	CU_ASSERT_STRING_EQUAL(in.note,
	    "\xf0\x9f\x98\x80\xef\xbf\xbd");
	order_input_clear(&in);
}

/* U+0000 is refused in values (naming the field) and member names. */
static void
test_nul(void)
{
	INVALID(WITH("\"note\":\"x\\u0000\""), "note");
	INVALID(WITH("\"note\\u0000x\":\"y\""), "U+0000");
	INVALID(WITH("\"\\u0000\":1"), "U+0000");
	INVALID("{\"currency\\u0000\":\"KRW\"," ITEMS "," AMT "}", "U+0000");
}

/* Eight levels of nesting parse; nine do not. */
static void
test_depth(void)
{
	INVALID(WITH("\"note\":[[[[[[[\"x\"]]]]]]]"),
	    "note must be a string");
	MALFORMED(WITH("\"note\":[[[[[[[[\"x\"]]]]]]]]"),
	    "nesting deeper than 8");
	MALFORMED(WITH("\"note\":[[[[[[[[[[[[[[[[[[[[\"x\"]]]]]]]]]]]]]]]]]]]]"),
	    "nesting deeper than 8");
	MALFORMED(WITH("\"note\":[[[[[[[[[[[[[[[[[[[[\"x\""),
	    "nesting deeper than 8");
	MALFORMED(ITEMSX("[{\"sku\":\"A\",\"qty\":{\"a\":{\"b\":{\"c\":"
	    "{\"d\":{\"e\":{\"f\":1}}}}}}}]"), "nesting deeper than 8");
}

/* Clearing is safe on zeroed, parsed and cleared orders. */
static void
test_clear(void)
{
	struct order_input	 in;
	struct problem		 pb;

	memset(&in, 0, sizeof(in));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
	order_input_clear(NULL);

	CU_ASSERT_EQUAL(parse(&in, &pb, S(WITH("\"note\":\"hello\""))), 0);
	CU_ASSERT_FALSE(is_clear(&in));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
	order_input_clear(&in);
	CU_ASSERT(is_clear(&in));
}

/*
 * A detail whose field path is cut at its cap still ends on a character
 * boundary: the path of a repeated member deep under long names.
 */
static void
test_detail_utf8(void)
{
	struct order_input	 in;
	struct problem		 pb;
	char			 body[512];
	const char		*n48 =
	    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";
	size_t			 i, k, len, shift;

	/* Shift the cut across every byte of the two-byte character. */
	for (shift = 0; shift < 4; shift++) {
		len = (size_t)snprintf(body, sizeof(body),
		    "{\"%s\":{\"%s\":{\"%s\":{\"%.*sxxxxxxxxxxx\xc3\xa9\":"
		    "{\"a\":1,\"a\":2}}}}}", n48, n48, n48, (int)shift, "yyyy");
		CU_ASSERT_EQUAL_FATAL(parse(&in, &pb, body, len), -1);
		CU_ASSERT_EQUAL(pb.status, 400);
		CU_ASSERT_STRING_EQUAL(code_of(&pb), "VALIDATION_FAILED");
		CU_ASSERT_PTR_NOT_NULL(strstr(pb.detail, "more than once"));
		for (i = 0; pb.detail[i] != '\0'; i += k) {
			k = utf8_seq_len((const unsigned char *)pb.detail + i,
			    strlen(pb.detail + i));
			CU_ASSERT_NOT_EQUAL_FATAL(k, 0);
		}
	}
}

/* The order_input suite. */
/*
 * Parse a cancel body for order id into in (which the caller clears);
 * the return value of cancel_input_parse().
 */
static int
cancel_parse(struct cancel_input *in, const char *id, const char *body,
    size_t len, struct problem *p)
{
	memset(in, 0, sizeof(*in));
	memset(p, 0, sizeof(*p));
	return cancel_input_parse(in, id, body, len, p);
}

/* Expect a cancel body refused with status and code, nothing kept. */
static void
expect_cancel_bad(int line, const char *body, size_t len, int st,
    const char *code, const char *part)
{
	struct cancel_input	 in;
	struct problem		 p;

	CHECK_AT(line, cancel_parse(&in, "o-7", body, len, &p) == -1);
	CHECK_AT(line, p.status == st);
	CHECK_AT(line, strcmp(problem_code_name(p.code), code) == 0);
	CHECK_AT(line, part == NULL || strstr(p.detail, part) != NULL);
	CHECK_AT(line, in.reason == NULL && in.canonical == NULL);
}
#define CANCEL_BAD(body, st, code, part)				\
	expect_cancel_bad(__LINE__, S(body), (st), (code), (part))

/*
 * A cancel's body: none and {} are the same request, a reason of at
 * most 500 bytes, nothing else; the canonical form names the order id
 * as it was sent, so that another id is another request.
 */
static void
test_cancel_body(void)
{
	struct cancel_input	 in;
	struct problem		 p;
	char			 big[600];

	CU_ASSERT_EQUAL(cancel_parse(&in, "o-7", "", 0, &p), 0);
	CU_ASSERT_STRING_EQUAL(in.canonical,
	    "{\"orderId\":\"o-7\",\"reason\":\"\"}");
	CU_ASSERT_EQUAL(in.reason_len, 0);
	cancel_input_clear(&in);
	CU_ASSERT_EQUAL(cancel_parse(&in, "o-7", S(" { } "), &p), 0);
	CU_ASSERT_STRING_EQUAL(in.canonical,
	    "{\"orderId\":\"o-7\",\"reason\":\"\"}");
	cancel_input_clear(&in);
	CU_ASSERT_EQUAL(cancel_parse(&in, "o-7",
	    S("{\"reason\":\"caf\\u00e9 \\\"x\\\"\"}"), &p), 0);
	CU_ASSERT_STRING_EQUAL(in.reason, "caf\xc3\xa9 \"x\"");
	CU_ASSERT_EQUAL(in.reason_len, 9);
	CU_ASSERT_STRING_EQUAL(in.canonical, "{\"orderId\":\"o-7\","
	    "\"reason\":\"caf\xc3\xa9 \\\"x\\\"\"}");
	cancel_input_clear(&in);
	/* An id that is not one is kept as sent, escaped. */
	CU_ASSERT_EQUAL(cancel_parse(&in, "x\"1", "", 0, &p), 0);
	CU_ASSERT_STRING_EQUAL(in.canonical,
	    "{\"orderId\":\"x\\\"1\",\"reason\":\"\"}");
	cancel_input_clear(&in);
	/* 500 bytes pass, 501 do not. */
	memset(big, 'y', sizeof(big));
	memcpy(big, "{\"reason\":\"", 11);
	memcpy(big + 11 + 500, "\"}", 2);
	CU_ASSERT_EQUAL(cancel_parse(&in, "o-7", big, 11 + 500 + 2, &p), 0);
	CU_ASSERT_EQUAL(in.reason_len, 500);
	cancel_input_clear(&in);
	memset(big, 'y', sizeof(big));
	memcpy(big, "{\"reason\":\"", 11);
	memcpy(big + 11 + 501, "\"}", 2);
	CU_ASSERT_EQUAL(cancel_parse(&in, "o-7", big, 11 + 501 + 2, &p), -1);
	CU_ASSERT_EQUAL(p.code, PROBLEM_VALIDATION_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.detail, "at most 500 bytes"));
	CU_ASSERT_PTR_NULL(in.reason);
	CANCEL_BAD("reason=x", 400, "MALFORMED_JSON", NULL);
	CANCEL_BAD("[\"reason\"]", 400, "MALFORMED_JSON", NULL);
	CANCEL_BAD("{} x", 400, "MALFORMED_JSON", NULL);
	CANCEL_BAD("{\"reason\":5}", 400, "VALIDATION_FAILED", "reason");
	CANCEL_BAD("{\"reason\":null}", 400, "VALIDATION_FAILED", "reason");
	CANCEL_BAD("{\"why\":\"x\"}", 400, "VALIDATION_FAILED", "why");
	CANCEL_BAD("{\"reason\":\"a\",\"reason\":\"b\"}", 400,
	    "VALIDATION_FAILED", "more than once");
	CANCEL_BAD("{\"reason\":\"\xff\"}", 400, "MALFORMED_JSON", NULL);
}

static const struct unit_test tests[] = {
	{ "parse minimal", test_parse_minimal },
	{ "canonical exact", test_canonical_exact },
	{ "canonical vectors", test_canonical_vectors },
	{ "qty", test_qty },
	{ "amount", test_amount },
	{ "items count", test_items_count },
	{ "items members", test_items_members },
	{ "sku", test_sku },
	{ "currency", test_currency },
	{ "shipping", test_shipping },
	{ "note", test_note },
	{ "unknown member", test_unknown_member },
	{ "duplicate member", test_duplicate_member },
	{ "malformed", test_malformed },
	{ "utf-8", test_utf8 },
	{ "surrogates", test_surrogates },
	{ "nul", test_nul },
	{ "depth", test_depth },
	{ "clear", test_clear },
	{ "detail utf-8", test_detail_utf8 },
	{ "cancel body", test_cancel_body },
	{ NULL, NULL },
};

const struct unit_suite test_order_input_suite = {
	"order_input", NULL, NULL, tests
};
