#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "buf.h"
#include "json_strict.h"
#include "order_input.h"
#include "problem.h"
#include "utf8.h"

#define CANONICAL_MAX	(64 * 1024)	/* far above the largest valid order */
#define NAME_SHOW_MAX	JSON_STRICT_NAME_SHOW_MAX

static const char *const top_members[] = {
	"amount", "currency", "items", "note", "shipping",
};

static const char *const item_members[] = {
	"qty", "sku",
};

/* Return the name of a shipping method. */
const char *
shipping_name(enum shipping s)
{
	return s == SHIPPING_EXPRESS ? "express" : "standard";
}

/* Release what a parsed order holds and leave it zeroed. */
void
order_input_clear(struct order_input *in)
{
	if (in == NULL)
		return;
	free(in->note);
	free(in->canonical);
	memset(in, 0, sizeof(*in));
}

/* Describe a JSON value's type for a detail. */
static const char *
type_desc(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
	case json_type_int:
		return "a number";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "unknown";
}

/* Reject a member whose name is not in the list. */
static int
check_members(struct json_object *o, const char *const *names, size_t n,
    const char *prefix, struct problem *pb)
{
	struct json_object_iterator	 it, end;
	const char			*key;
	char				 shown[NAME_SHOW_MAX + 4];
	size_t				 i;

	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	while (!json_object_iter_equal(&it, &end)) {
		key = json_object_iter_peek_name(&it);
		for (i = 0; i < n; i++) {
			if (strcmp(key, names[i]) == 0)
				break;
		}
		if (i == n) {
			json_strict_show_name(shown, sizeof(shown), key);
			problem_set(pb, PROBLEM_VALIDATION_FAILED,
			    "member \"%s%s\" is not allowed", prefix, shown);
			return -1;
		}
		json_object_iter_next(&it);
	}
	return 0;
}

/* Take a string value that holds no U+0000. */
static int
get_string(struct json_object *v, const char *path, const char **sp,
    size_t *lenp, struct problem *pb)
{
	const char	*s;
	size_t		 len;

	if (!json_object_is_type(v, json_type_string)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be a string, not %s", path, type_desc(v));
		return -1;
	}
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (memchr(s, '\0', len) != NULL) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must not contain U+0000", path);
		return -1;
	}
	*sp = s;
	*lenp = len;
	return 0;
}

/*
 * Take an integer value within min..max.  json-c clamps integers outside
 * int64 to INT64_MIN, INT64_MAX or UINT64_MAX, all outside every range
 * used here, so a clamped value is rejected as out of range.
 */
static int
get_int(struct json_object *v, const char *path, long long min,
    long long max, long long *out, struct problem *pb)
{
	int64_t	 n;

	if (json_object_is_type(v, json_type_double)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be an integer (no fraction or exponent)", path);
		return -1;
	}
	if (!json_object_is_type(v, json_type_int)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be an integer, not %s", path, type_desc(v));
		return -1;
	}
	n = json_object_get_int64(v);
	if (n < min || n > max) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be an integer from %lld to %lld", path, min, max);
		return -1;
	}
	*out = n;
	return 0;
}

/* Tell whether c may appear in a SKU. */
static int
sku_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Validate one entry of items into it. */
static int
parse_item(struct json_object *o, size_t i, struct order_item *it,
    struct problem *pb)
{
	struct json_object	*v;
	char			 prefix[32], path[40];
	const char		*s;
	size_t			 len, k;
	long long		 qty;

	snprintf(prefix, sizeof(prefix), "items[%zu]", i);
	if (!json_object_is_type(o, json_type_object)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be an object, not %s", prefix, type_desc(o));
		return -1;
	}
	snprintf(prefix, sizeof(prefix), "items[%zu].", i);
	if (check_members(o, item_members, 2, prefix, pb) == -1)
		return -1;

	snprintf(path, sizeof(path), "items[%zu].sku", i);
	if (!json_object_object_get_ex(o, "sku", &v)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED, "%s is "
		    "required", path);
		return -1;
	}
	if (get_string(v, path, &s, &len, pb) == -1)
		return -1;
	if (len < 1 || len > ORDER_SKU_MAX) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "%s must be 1 to %d characters long, not %zu", path,
		    ORDER_SKU_MAX, utf8_count(s, len));
		return -1;
	}
	for (k = 0; k < len; k++) {
		if (!sku_char((unsigned char)s[k])) {
			problem_set(pb, PROBLEM_VALIDATION_FAILED,
			    "%s has an invalid character at position %zu "
			    "(allowed: A-Z a-z 0-9 . _ -)", path, k + 1);
			return -1;
		}
	}
	memcpy(it->sku, s, len);
	it->sku[len] = '\0';

	snprintf(path, sizeof(path), "items[%zu].qty", i);
	if (!json_object_object_get_ex(o, "qty", &v)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED, "%s is "
		    "required", path);
		return -1;
	}
	if (get_int(v, path, 1, ORDER_QTY_MAX, &qty, pb) == -1)
		return -1;
	it->qty = (int)qty;
	return 0;
}

/* Validate items, rejecting a SKU given twice. */
static int
parse_items(struct order_input *in, struct json_object *v,
    struct problem *pb)
{
	size_t	 i, j, n;

	if (!json_object_is_type(v, json_type_array)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "items must be an array, not %s", type_desc(v));
		return -1;
	}
	n = json_object_array_length(v);
	if (n < 1 || n > ORDER_ITEMS_MAX) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "items must have 1 to %d entries, not %zu",
		    ORDER_ITEMS_MAX, n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (parse_item(json_object_array_get_idx(v, i), i,
		    &in->items[i], pb) == -1)
			return -1;
		for (j = 0; j < i; j++) {
			if (strcmp(in->items[i].sku, in->items[j].sku) != 0)
				continue;
			problem_set(pb, PROBLEM_VALIDATION_FAILED,
			    "items[%zu].sku \"%s\" repeats items[%zu].sku",
			    i, in->items[i].sku, j);
			return -1;
		}
	}
	in->nitems = n;
	return 0;
}

/* Validate the top-level object into in. */
static int
parse_order(struct order_input *in, struct json_object *root,
    struct problem *pb)
{
	struct json_object	*v;
	const char		*s;
	size_t			 len, n;

	if (check_members(root, top_members, 5, "", pb) == -1)
		return -1;

	if (!json_object_object_get_ex(root, "currency", &v)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED, "currency is "
		    "required");
		return -1;
	}
	if (get_string(v, "currency", &s, &len, pb) == -1)
		return -1;
	if (len != 3 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' ||
	    s[1] > 'Z' || s[2] < 'A' || s[2] > 'Z') {
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "currency must be three upper-case letters A-Z");
		return -1;
	}
	memcpy(in->currency, s, 3);
	in->currency[3] = '\0';

	if (!json_object_object_get_ex(root, "items", &v)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED, "items is "
		    "required");
		return -1;
	}
	if (parse_items(in, v, pb) == -1)
		return -1;

	if (!json_object_object_get_ex(root, "amount", &v)) {
		problem_set(pb, PROBLEM_VALIDATION_FAILED, "amount is "
		    "required");
		return -1;
	}
	if (get_int(v, "amount", 0, ORDER_AMOUNT_MAX, &in->amount, pb) == -1)
		return -1;

	in->shipping = SHIPPING_STANDARD;
	if (json_object_object_get_ex(root, "shipping", &v)) {
		if (get_string(v, "shipping", &s, &len, pb) == -1)
			return -1;
		if (strcmp(s, "express") == 0)
			in->shipping = SHIPPING_EXPRESS;
		else if (strcmp(s, "standard") != 0) {
			problem_set(pb, PROBLEM_VALIDATION_FAILED,
			    "shipping must be \"standard\" or \"express\"");
			return -1;
		}
	}

	s = "";
	len = 0;
	if (json_object_object_get_ex(root, "note", &v)) {
		if (get_string(v, "note", &s, &len, pb) == -1)
			return -1;
		n = utf8_count(s, len);
		if (n > ORDER_NOTE_MAX) {
			problem_set(pb, PROBLEM_VALIDATION_FAILED,
			    "note must be at most %d characters, not %zu",
			    ORDER_NOTE_MAX, n);
			return -1;
		}
	}
	in->note = malloc(len + 1);
	if (in->note == NULL) {
		problem_set(pb, PROBLEM_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	memcpy(in->note, s, len);
	in->note[len] = '\0';
	in->note_len = len;
	return 0;
}

/* Order items by SKU, byte for byte. */
static int
item_cmp(const void *a, const void *b)
{
	const struct order_item	*x = a, *y = b;

	return strcmp(x->sku, y->sku);
}

/* Write the canonical form of a validated order into in->canonical. */
static int
canonicalize(struct order_input *in, struct problem *pb)
{
	struct buf	 b;
	size_t		 i;
	int		 rv = -1;

	buf_init(&b, CANONICAL_MAX);
	if (buf_printf(&b, "{\"amount\":%lld,\"currency\":", in->amount) ||
	    buf_add_json_string(&b, in->currency, 3) ||
	    buf_adds(&b, ",\"items\":["))
		goto out;
	for (i = 0; i < in->nitems; i++) {
		if (buf_printf(&b, "%s{\"qty\":%d,\"sku\":", i ? "," : "",
		    in->items[i].qty) ||
		    buf_add_json_string(&b, in->items[i].sku,
		    strlen(in->items[i].sku)) ||
		    buf_addc(&b, '}'))
			goto out;
	}
	if (buf_adds(&b, "],\"note\":") ||
	    buf_add_json_string(&b, in->note, in->note_len) ||
	    buf_adds(&b, ",\"shipping\":") ||
	    buf_add_json_string(&b, shipping_name(in->shipping),
	    strlen(shipping_name(in->shipping))) ||
	    buf_addc(&b, '}'))
		goto out;
	in->canonical = buf_detach(&b, &in->canonical_len);
	if (in->canonical != NULL)
		rv = 0;

out:
	if (rv == -1)
		problem_set(pb, PROBLEM_INTERNAL_ERROR,
		    "cannot build the canonical request");
	buf_free(&b);
	return rv;
}

/*
 * Parse and validate a body: the strict JSON reader, then the schema,
 * the items sorted by SKU and the canonical form.
 */
int
order_input_parse(struct order_input *in, const char *body, size_t len,
    struct problem *pb)
{
	struct json_object	*root;
	int			 rv = -1;

	root = json_strict_parse(body, len, ORDER_JSON_DEPTH, pb);
	if (root == NULL)
		goto out;
	if (parse_order(in, root, pb) == -1)
		goto out;
	qsort(in->items, in->nitems, sizeof(in->items[0]), item_cmp);
	if (canonicalize(in, pb) == -1)
		goto out;
	rv = 0;

out:
	if (rv == -1)
		order_input_clear(in);
	json_object_put(root);
	return rv;
}

/*
 * The POST /orders/{orderId}/cancel body: empty, or an object with at
 * most "reason" (a string of at most ORDER_REASON_MAX bytes, default
 * ""), and the canonical form over the order id and the reason.
 */
static const char *const cancel_members[] = {
	"reason",
};

/* Write the canonical form of a validated cancel into in->canonical. */
static int
cancel_canonicalize(struct cancel_input *in, const char *order_id,
    struct problem *pb)
{
	struct buf	 b;
	int		 rv = -1;

	buf_init(&b, CANONICAL_MAX);
	if (buf_adds(&b, "{\"orderId\":") == 0 &&
	    buf_add_json_string(&b, order_id, strlen(order_id)) == 0 &&
	    buf_adds(&b, ",\"reason\":") == 0 &&
	    buf_add_json_string(&b, in->reason, in->reason_len) == 0 &&
	    buf_addc(&b, '}') == 0)
		in->canonical = buf_detach(&b, &in->canonical_len);
	if (in->canonical != NULL)
		rv = 0;
	else
		problem_set(pb, PROBLEM_INTERNAL_ERROR,
		    "cannot build the canonical request");
	buf_free(&b);
	return rv;
}

/*
 * Parse and validate a cancel's body of len bytes (0: no body) for the
 * order order_id ("o-N") into in, which the caller zeroes first and
 * releases with cancel_input_clear().  400 MALFORMED_JSON or 400
 * VALIDATION_FAILED on failure, with nothing left allocated.
 */
int
cancel_input_parse(struct cancel_input *in, const char *order_id,
    const char *body, size_t len, struct problem *pb)
{
	struct json_object	*root = NULL, *v;
	const char		*s = "";
	size_t			 n = 0;
	int			 rv = -1;

	if (len > 0) {
		root = json_strict_parse(body, len, ORDER_JSON_DEPTH, pb);
		if (root == NULL)
			goto out;
		if (check_members(root, cancel_members, 1, "", pb) == -1)
			goto out;
		if (json_object_object_get_ex(root, "reason", &v)) {
			if (get_string(v, "reason", &s, &n, pb) == -1)
				goto out;
			if (n > ORDER_REASON_MAX) {
				problem_set(pb, PROBLEM_VALIDATION_FAILED,
				    "reason must be at most %d bytes, not %zu",
				    ORDER_REASON_MAX, n);
				goto out;
			}
		}
	}
	in->reason = malloc(n + 1);
	if (in->reason == NULL) {
		problem_set(pb, PROBLEM_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	memcpy(in->reason, s, n);
	in->reason[n] = '\0';
	in->reason_len = n;
	if (cancel_canonicalize(in, order_id, pb) == -1)
		goto out;
	rv = 0;
out:
	if (rv == -1)
		cancel_input_clear(in);
	json_object_put(root);
	return rv;
}

/* Release what cancel_input_parse() allocated. */
void
cancel_input_clear(struct cancel_input *in)
{
	free(in->reason);
	free(in->canonical);
	in->reason = in->canonical = NULL;
	in->reason_len = in->canonical_len = 0;
}
