/*
 * The POST /orders body: parse, validate, canonicalize.
 *
 * Rejected: a 400 MALFORMED_JSON or VALIDATION_FAILED whose detail is
 * valid UTF-8 in a valid problem+json body, and nothing left allocated.
 * Accepted: the body is valid UTF-8 and valid JSON to json-c, with the
 * whole input consumed; the canonical form means the same document
 * (defaults filled, items sorted) and is a fixed point: parsed again it
 * is accepted with the same fields, the same bytes and the same
 * fingerprint.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fingerprint.h"
#include "fuzz_check.h"
#include "order_input.h"
#include "problem.h"

/* Tell whether c is JSON insignificant whitespace. */
static int
json_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Order two items of a json-c array by their "sku" member. */
static int
item_sort(const void *a, const void *b)
{
	struct json_object	*x = *(struct json_object *const *)a;
	struct json_object	*y = *(struct json_object *const *)b;
	struct json_object	*sx, *sy;

	json_object_object_get_ex(x, "sku", &sx);
	json_object_object_get_ex(y, "sku", &sy);
	return strcmp(json_object_get_string(sx), json_object_get_string(sy));
}

/*
 * Parse an accepted body with json-c alone: json_tokener_parse_verbose on
 * a C string, then a tokener over the exact bytes that must consume all
 * but trailing whitespace.  Returns the second tree.
 */
static struct json_object *
json_c_parse(const uint8_t *data, size_t size)
{
	struct json_tokener	*tok;
	struct json_object	*o;
	enum json_tokener_error	 err;
	char			*s;
	size_t			 i, end;

	s = fuzz_cstr(data, size);
	o = json_tokener_parse_verbose(s, &err);
	if (o == NULL || err != json_tokener_success)
		fuzz_fail("accepted body is not JSON to json-c: %s",
		    json_tokener_error_desc(err));
	json_object_put(o);
	free(s);

	tok = json_tokener_new();
	if (tok == NULL)
		fuzz_fail("out of memory");
	o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success)
		fuzz_fail("accepted body is not JSON to json_tokener_parse_ex");
	end = json_tokener_get_parse_end(tok);
	for (i = end; i < size; i++)
		if (!json_ws(data[i]))
			fuzz_fail("json-c stops at offset %zu of %zu", end,
			    size);
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object))
		fuzz_fail("accepted body is not an object to json-c");
	return o;
}

/* Check the fields of an accepted order against the schema. */
static void
check_fields(const struct order_input *in)
{
	size_t	 i;

	if (strlen(in->currency) != 3)
		fuzz_fail("currency \"%s\"", in->currency);
	for (i = 0; i < 3; i++)
		if (in->currency[i] < 'A' || in->currency[i] > 'Z')
			fuzz_fail("currency \"%s\"", in->currency);
	if (in->amount < 0 || in->amount > ORDER_AMOUNT_MAX)
		fuzz_fail("amount %lld", in->amount);
	if (in->nitems < 1 || in->nitems > ORDER_ITEMS_MAX)
		fuzz_fail("%zu items", in->nitems);
	for (i = 0; i < in->nitems; i++) {
		if (in->items[i].qty < 1 || in->items[i].qty > ORDER_QTY_MAX)
			fuzz_fail("qty %d", in->items[i].qty);
		if (strlen(in->items[i].sku) < 1 ||
		    strspn(in->items[i].sku, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789._-") !=
		    strlen(in->items[i].sku))
			fuzz_fail("sku \"%s\"", in->items[i].sku);
		if (i > 0 && strcmp(in->items[i - 1].sku,
		    in->items[i].sku) >= 0)
			fuzz_fail("items not sorted or repeated: %s, %s",
			    in->items[i - 1].sku, in->items[i].sku);
	}
	if (in->shipping != SHIPPING_STANDARD &&
	    in->shipping != SHIPPING_EXPRESS)
		fuzz_fail("shipping %d", (int)in->shipping);
	if (in->note == NULL || strlen(in->note) != in->note_len ||
	    !fuzz_utf8_valid(in->note, in->note_len))
		fuzz_fail("note is not a valid C string of UTF-8");
	if (in->canonical == NULL || in->canonical_len == 0 ||
	    strlen(in->canonical) != in->canonical_len ||
	    !fuzz_utf8_valid(in->canonical, in->canonical_len))
		fuzz_fail("canonical form is not a valid C string of UTF-8");
}

/*
 * The canonical form means what the body means: json-c's tree of the
 * body, with the defaults added and the items sorted, equals json-c's
 * tree of the canonical form.
 */
static void
check_same_document(struct json_object *body, const struct order_input *in)
{
	struct json_tokener	*tok;
	struct json_object	*canon, *items;

	if (!json_object_object_get_ex(body, "note", NULL))
		json_object_object_add(body, "note",
		    json_object_new_string(""));
	if (!json_object_object_get_ex(body, "shipping", NULL))
		json_object_object_add(body, "shipping",
		    json_object_new_string("standard"));
	if (!json_object_object_get_ex(body, "items", &items))
		fuzz_fail("accepted body has no items to json-c");
	json_object_array_sort(items, item_sort);

	tok = json_tokener_new();
	if (tok == NULL)
		fuzz_fail("out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	canon = json_tokener_parse_ex(tok, in->canonical,
	    (int)in->canonical_len);
	if (canon == NULL ||
	    json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != in->canonical_len)
		fuzz_fail("canonical form is not strict JSON: %s",
		    in->canonical);
	if (!json_object_equal(body, canon))
		fuzz_fail("canonical form %s means another document than "
		    "the body %s", in->canonical,
		    json_object_to_json_string(body));
	json_object_put(canon);
	json_tokener_free(tok);
}

/* Parsing the canonical form again changes nothing. */
static void
check_fixed_point(const struct order_input *in)
{
	struct order_input	 again;
	struct problem		 pb;
	char			 fp1[FINGERPRINT_HEX_LEN + 1];
	char			 fp2[FINGERPRINT_HEX_LEN + 1];
	size_t			 i;

	memset(&again, 0, sizeof(again));
	memset(&pb, 0, sizeof(pb));
	if (order_input_parse(&again, in->canonical, in->canonical_len,
	    &pb) == -1)
		fuzz_fail("canonical form %s rejected: %s", in->canonical,
		    pb.detail);
	if (again.canonical_len != in->canonical_len ||
	    memcmp(again.canonical, in->canonical, in->canonical_len) != 0)
		fuzz_fail("canonical form not a fixed point: %s became %s",
		    in->canonical, again.canonical);
	if (strcmp(again.currency, in->currency) != 0 ||
	    again.amount != in->amount || again.shipping != in->shipping ||
	    again.nitems != in->nitems || again.note_len != in->note_len ||
	    memcmp(again.note, in->note, in->note_len) != 0)
		fuzz_fail("fields changed through the canonical form");
	for (i = 0; i < in->nitems; i++)
		if (strcmp(again.items[i].sku, in->items[i].sku) != 0 ||
		    again.items[i].qty != in->items[i].qty)
			fuzz_fail("item %zu changed through the canonical form",
			    i);
	if (fingerprint("create-order", "fuzz", in->canonical,
	    in->canonical_len, fp1) == -1 ||
	    fingerprint("create-order", "fuzz", again.canonical,
	    again.canonical_len, fp2) == -1)
		fuzz_fail("fingerprint failed");
	if (strcmp(fp1, fp2) != 0 || strlen(fp1) != FINGERPRINT_HEX_LEN)
		fuzz_fail("fingerprint changed: %s, %s", fp1, fp2);
	order_input_clear(&again);
}

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct order_input	 zero;
	struct order_input		*in;
	struct json_object		*body;
	struct problem			 pb;

	/* The largest max_body_bytes is 16 MiB; the default is 64 KiB. */
	if (size > 64 * 1024)
		return 0;
	in = calloc(1, sizeof(*in));
	if (in == NULL)
		fuzz_fail("out of memory");
	memset(&pb, 0, sizeof(pb));
	if (order_input_parse(in, (const char *)data, size, &pb) == -1) {
		if (memcmp(in, &zero, sizeof(zero)) != 0)
			fuzz_fail("a rejected body left the order filled");
		fuzz_check_problem(&pb, 400, "MALFORMED_JSON",
		    "VALIDATION_FAILED");
		free(in);
		return 0;
	}
	if (memchr(data, '\0', size) != NULL ||
	    !fuzz_utf8_valid((const char *)data, size))
		fuzz_fail("accepted body is not UTF-8 without NUL");
	check_fields(in);
	body = json_c_parse(data, size);
	check_same_document(body, in);
	json_object_put(body);
	check_fixed_point(in);
	order_input_clear(in);
	free(in);
	return 0;
}
