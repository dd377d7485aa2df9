#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "buf.h"
#include "order_input.h"
#include "problem.h"

#define E_KEY_MISSING	"IDEMPOTENCY_KEY_MISSING"
#define E_KEY_INVALID	"IDEMPOTENCY_KEY_INVALID"
#define E_MEDIA_TYPE	"UNSUPPORTED_MEDIA_TYPE"
#define E_MALFORMED	"MALFORMED_JSON"
#define E_VALIDATION	"VALIDATION_FAILED"
#define E_INTERNAL	"INTERNAL_ERROR"

#define CANONICAL_MAX	(64 * 1024)	/* far above the largest valid order */
#define NAME_SHOW_MAX	48		/* bytes of a member name in a detail */
#define PATH_MAX_LEN	160

/*
 * The strict JSON scan that follows json-c's parse.  objs[] holds every
 * object in document order (opening braces) with its member count, to be
 * compared with json-c's objects, which keep only the last of repeated
 * names.
 */
struct scan_obj {
	size_t	 off;		/* of the opening brace */
	size_t	 members;
};

struct scan {
	const unsigned char	*s;
	size_t			 len;
	size_t			 off;
	struct scan_obj		*objs;
	size_t			 nobj;
	size_t			 objcap;
	struct problem		*pb;
};

struct path {
	char	 p[PATH_MAX_LEN];
	size_t	 len;
};

static const char *const top_members[] = {
	"amount", "currency", "items", "note", "shipping",
};

static const char *const item_members[] = {
	"qty", "sku",
};

static int	scan_value(struct scan *, int);

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

/* Tell whether c is HTTP optional whitespace. */
static int
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Tell whether c is JSON insignificant whitespace. */
static int
is_json_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Lower-case an ASCII letter, independently of the locale. */
static int
ascii_lower(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 'a';
	return c;
}

/*
 * Unquote an RFC 8941 sf-string s..e (s at the opening quote) into key,
 * which holds IDEM_KEY_MAX + 1 bytes.  *lenp receives the full unquoted
 * length even when it does not fit; only then is key left incomplete.
 */
static int
key_unquote(const char *s, const char *e, char *key, size_t *lenp,
    struct problem *pb)
{
	const char	*p;
	size_t		 n;
	unsigned char	 c;

	n = 0;
	for (p = s + 1; p < e; p++) {
		c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c == '\\') {
			if (p + 1 == e || (p[1] != '"' && p[1] != '\\')) {
				problem_set(pb, 400, E_KEY_INVALID,
				    "Idempotency-Key is a bad quoted string: "
				    "a backslash at position %zu must precede "
				    "'\"' or '\\'", (size_t)(p - s) + 1);
				return -1;
			}
			c = (unsigned char)*++p;
		} else if (c < 0x20 || c > 0x7e) {
			problem_set(pb, 400, E_KEY_INVALID,
			    "Idempotency-Key is a bad quoted string: "
			    "invalid character 0x%02x at position %zu",
			    c, (size_t)(p - s) + 1);
			return -1;
		}
		if (n < IDEM_KEY_MAX)
			key[n] = (char)c;
		n++;
	}
	if (p == e) {
		problem_set(pb, 400, E_KEY_INVALID,
		    "Idempotency-Key is a bad quoted string: "
		    "no closing quote");
		return -1;
	}
	if (p + 1 != e) {
		problem_set(pb, 400, E_KEY_INVALID,
		    "Idempotency-Key is a bad quoted string: "
		    "data after the closing quote at position %zu",
		    (size_t)(p - s) + 2);
		return -1;
	}
	*lenp = n;
	return 0;
}

/* Check an unquoted key of n bytes: 1..IDEM_KEY_MAX of visible ASCII. */
static int
key_check(const char *key, size_t n, struct problem *pb)
{
	size_t		 i;
	unsigned char	 c;

	if (n == 0) {
		problem_set(pb, 400, E_KEY_INVALID, "Idempotency-Key is empty");
		return -1;
	}
	if (n > IDEM_KEY_MAX) {
		problem_set(pb, 400, E_KEY_INVALID,
		    "Idempotency-Key is %zu bytes long; at most %d are allowed",
		    n, IDEM_KEY_MAX);
		return -1;
	}
	for (i = 0; i < n; i++) {
		c = (unsigned char)key[i];
		if (c < 0x21 || c > 0x7e) {
			problem_set(pb, 400, E_KEY_INVALID,
			    "Idempotency-Key has an invalid character 0x%02x "
			    "at position %zu; only visible ASCII is allowed",
			    c, i + 1);
			return -1;
		}
	}
	return 0;
}

/* Parse an Idempotency-Key header value, bare or an sf-string. */
int
order_input_key(const char *hv, char *key, struct problem *pb)
{
	const char	*s, *e;
	size_t		 n;

	key[0] = '\0';
	if (hv == NULL) {
		problem_set(pb, 400, E_KEY_MISSING,
		    "the Idempotency-Key header is required");
		return -1;
	}
	s = hv;
	while (is_ows(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_ows(e[-1]))
		e--;

	if (s < e && *s == '"') {
		if (key_unquote(s, e, key, &n, pb) == -1) {
			key[0] = '\0';
			return -1;
		}
	} else {
		n = (size_t)(e - s);
		if (n <= IDEM_KEY_MAX)
			memcpy(key, s, n);
	}
	if (key_check(key, n, pb) == -1) {
		key[0] = '\0';
		return -1;
	}
	key[n] = '\0';
	return 0;
}

/* Tell whether a Content-Type names application/json. */
static int
media_type_is_json(const char *ct)
{
	static const char	 want[] = "application/json";
	const char		*s;
	size_t			 i;

	s = ct;
	while (is_ows(*s))
		s++;
	for (i = 0; i < sizeof(want) - 1; i++) {
		if (ascii_lower((unsigned char)s[i]) != want[i])
			return 0;
	}
	s += sizeof(want) - 1;
	while (is_ows(*s))
		s++;
	return *s == '\0' || *s == ';';
}

/* Accept application/json with optional parameters, else 415. */
int
order_input_content_type(const char *ct, struct problem *pb)
{
	if (ct == NULL) {
		problem_set(pb, 415, E_MEDIA_TYPE,
		    "a Content-Type of application/json is required");
		return -1;
	}
	if (!media_type_is_json(ct)) {
		problem_set(pb, 415, E_MEDIA_TYPE,
		    "the Content-Type must be application/json");
		return -1;
	}
	return 0;
}

/*
 * Return the length of the UTF-8 sequence at s (avail bytes left), or 0
 * when it is not valid: overlong, a surrogate, above U+10FFFF, cut short.
 */
size_t
utf8_seq_len(const unsigned char *s, size_t avail)
{
	size_t		 k, n;
	uint32_t	 cp, min;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 1;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 2;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 3;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	if (avail - 1 < n)
		return 0;
	for (k = 1; k <= n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n + 1;
}

/* Check that a body is valid UTF-8 without NUL bytes. */
static int
body_check_bytes(const unsigned char *s, size_t len, struct problem *pb)
{
	size_t	 i, n;

	for (i = 0; i < len; i += n) {
		if (s[i] == 0) {
			problem_set(pb, 400, E_MALFORMED,
			    "NUL byte at offset %zu", i);
			return -1;
		}
		n = utf8_seq_len(s + i, len - i);
		if (n == 0) {
			problem_set(pb, 400, E_MALFORMED,
			    "invalid UTF-8 at offset %zu", i);
			return -1;
		}
	}
	return 0;
}

/* Count the code points of valid UTF-8. */
static size_t
utf8_count(const char *s, size_t len)
{
	size_t	 i, n;

	n = 0;
	for (i = 0; i < len; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	}
	return n;
}

/*
 * Copy a member name for a detail: at most NAME_SHOW_MAX bytes, cut on a
 * character boundary, with quotes, backslashes and controls shown as '?'.
 */
static void
show_name(char *dst, size_t dstsz, const char *src)
{
	size_t		 i, max;
	unsigned char	 c;

	max = dstsz - 4;
	if (max > NAME_SHOW_MAX)
		max = NAME_SHOW_MAX;
	for (i = 0; src[i] != '\0'; i++) {
		c = (unsigned char)src[i];
		if (i >= max) {
			while (i > 0 && ((unsigned char)src[i] & 0xc0) == 0x80)
				i--;
			memcpy(dst + i, "...", 4);
			return;
		}
		if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)
			c = '?';
		dst[i] = (char)c;
	}
	dst[i] = '\0';
}

/* Report a malformed spot found by the strict scan. */
static int
scan_fail(struct scan *sc, const char *what)
{
	problem_set(sc->pb, 400, E_MALFORMED, "%s at offset %zu", what,
	    sc->off);
	return -1;
}

/* Skip JSON whitespace. */
static void
scan_ws(struct scan *sc)
{
	while (sc->off < sc->len && is_json_ws(sc->s[sc->off]))
		sc->off++;
}

/* Read four hex digits at the offset into *up. */
static int
scan_hex4(struct scan *sc, unsigned int *up)
{
	size_t		 i;
	unsigned int	 u;
	unsigned char	 c;

	if (sc->len - sc->off < 4)
		return scan_fail(sc, "truncated \\u escape");
	u = 0;
	for (i = 0; i < 4; i++) {
		c = sc->s[sc->off + i];
		if (c >= '0' && c <= '9')
			u = u * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			u = u * 16 + (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			u = u * 16 + (c - 'A' + 10);
		else
			return scan_fail(sc, "bad \\u escape");
	}
	sc->off += 4;
	*up = u;
	return 0;
}

/*
 * Scan a string: no raw control characters, known escapes only, every
 * surrogate escape paired, and no U+0000 in a member name (json-c would
 * cut the name there).
 */
static int
scan_string(struct scan *sc, int iskey)
{
	unsigned int	 u, lo;
	unsigned char	 c;

	if (sc->off >= sc->len || sc->s[sc->off] != '"')
		return scan_fail(sc, "expected a string");
	sc->off++;
	for (;;) {
		if (sc->off >= sc->len)
			return scan_fail(sc, "unterminated string");
		c = sc->s[sc->off];
		if (c == '"') {
			sc->off++;
			return 0;
		}
		if (c < 0x20)
			return scan_fail(sc, "unescaped control character");
		if (c != '\\') {
			sc->off++;
			continue;
		}
		sc->off++;
		if (sc->off >= sc->len)
			return scan_fail(sc, "unterminated string");
		c = sc->s[sc->off++];
		if (c != '\0' && strchr("\"\\/bfnrt", c) != NULL)
			continue;
		if (c != 'u') {
			sc->off--;
			return scan_fail(sc, "invalid escape");
		}
		if (scan_hex4(sc, &u) == -1)
			return -1;
		if (u == 0 && iskey) {
			problem_set(sc->pb, 400, E_VALIDATION,
			    "a member name contains U+0000 (offset %zu)",
			    sc->off - 6);
			return -1;
		}
		if (u >= 0xdc00 && u <= 0xdfff) {
			sc->off -= 6;
			return scan_fail(sc, "unpaired surrogate escape");
		}
		if (u < 0xd800 || u > 0xdbff)
			continue;
		if (sc->len - sc->off < 6 || sc->s[sc->off] != '\\' ||
		    sc->s[sc->off + 1] != 'u') {
			sc->off -= 6;
			return scan_fail(sc, "unpaired surrogate escape");
		}
		sc->off += 2;
		if (scan_hex4(sc, &lo) == -1)
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff) {
			sc->off -= 12;
			return scan_fail(sc, "unpaired surrogate escape");
		}
	}
}

/* Skip a run of digits and return how many there were. */
static size_t
scan_digits(struct scan *sc)
{
	size_t	 start;

	start = sc->off;
	while (sc->off < sc->len && sc->s[sc->off] >= '0' &&
	    sc->s[sc->off] <= '9')
		sc->off++;
	return sc->off - start;
}

/* Scan a number exactly as RFC 8259 spells it. */
static int
scan_number(struct scan *sc)
{
	if (sc->off < sc->len && sc->s[sc->off] == '-')
		sc->off++;
	if (sc->off < sc->len && sc->s[sc->off] == '0') {
		sc->off++;
		if (sc->off < sc->len && sc->s[sc->off] >= '0' &&
		    sc->s[sc->off] <= '9')
			return scan_fail(sc, "leading zero in a number");
	} else if (scan_digits(sc) == 0)
		return scan_fail(sc, "invalid number");
	if (sc->off < sc->len && sc->s[sc->off] == '.') {
		sc->off++;
		if (scan_digits(sc) == 0)
			return scan_fail(sc, "digit expected after '.'");
	}
	if (sc->off < sc->len && (sc->s[sc->off] == 'e' ||
	    sc->s[sc->off] == 'E')) {
		sc->off++;
		if (sc->off < sc->len && (sc->s[sc->off] == '+' ||
		    sc->s[sc->off] == '-'))
			sc->off++;
		if (scan_digits(sc) == 0)
			return scan_fail(sc, "digit expected in exponent");
	}
	return 0;
}

/* Scan one of the literals true, false and null. */
static int
scan_literal(struct scan *sc, const char *lit)
{
	size_t	 n;

	n = strlen(lit);
	if (sc->len - sc->off < n || memcmp(sc->s + sc->off, lit, n) != 0)
		return scan_fail(sc, "unexpected character");
	sc->off += n;
	return 0;
}

/* Scan an object and record its member count. */
static int
scan_object(struct scan *sc, int depth)
{
	struct scan_obj	*np;
	size_t		 idx;

	if (sc->nobj == sc->objcap) {
		sc->objcap = sc->objcap ? sc->objcap * 2 : 16;
		np = realloc(sc->objs, sc->objcap * sizeof(*np));
		if (np == NULL) {
			problem_set(sc->pb, 500, E_INTERNAL, "out of memory");
			return -1;
		}
		sc->objs = np;
	}
	idx = sc->nobj++;
	sc->objs[idx].off = sc->off;
	sc->objs[idx].members = 0;
	sc->off++;
	scan_ws(sc);
	if (sc->off < sc->len && sc->s[sc->off] == '}') {
		sc->off++;
		return 0;
	}
	for (;;) {
		scan_ws(sc);
		if (scan_string(sc, 1) == -1)
			return -1;
		scan_ws(sc);
		if (sc->off >= sc->len || sc->s[sc->off] != ':')
			return scan_fail(sc, "expected ':'");
		sc->off++;
		if (scan_value(sc, depth) == -1)
			return -1;
		sc->objs[idx].members++;
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == ',') {
			sc->off++;
			continue;
		}
		if (sc->off < sc->len && sc->s[sc->off] == '}') {
			sc->off++;
			return 0;
		}
		return scan_fail(sc, "expected ',' or '}'");
	}
}

/* Scan an array. */
static int
scan_array(struct scan *sc, int depth)
{
	sc->off++;
	scan_ws(sc);
	if (sc->off < sc->len && sc->s[sc->off] == ']') {
		sc->off++;
		return 0;
	}
	for (;;) {
		if (scan_value(sc, depth) == -1)
			return -1;
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == ',') {
			sc->off++;
			continue;
		}
		if (sc->off < sc->len && sc->s[sc->off] == ']') {
			sc->off++;
			return 0;
		}
		return scan_fail(sc, "expected ',' or ']'");
	}
}

/* Scan one JSON value at nesting depth (containers opened so far). */
static int
scan_value(struct scan *sc, int depth)
{
	unsigned char	 c;

	scan_ws(sc);
	if (sc->off >= sc->len)
		return scan_fail(sc, "unexpected end of JSON input");
	c = sc->s[sc->off];
	if (c == '{' || c == '[') {
		if (depth >= ORDER_JSON_DEPTH) {
			problem_set(sc->pb, 400, E_MALFORMED,
			    "nesting deeper than %d", ORDER_JSON_DEPTH);
			return -1;
		}
		if (c == '{')
			return scan_object(sc, depth + 1);
		return scan_array(sc, depth + 1);
	}
	if (c == '"')
		return scan_string(sc, 0);
	if (c == '-' || (c >= '0' && c <= '9'))
		return scan_number(sc);
	if (c == 't')
		return scan_literal(sc, "true");
	if (c == 'f')
		return scan_literal(sc, "false");
	if (c == 'n')
		return scan_literal(sc, "null");
	return scan_fail(sc, "unexpected character");
}

/*
 * Note how much of a path was used after snprintf appended to it.  A cut
 * path ends on a character boundary, so that a detail quoting it stays
 * valid UTF-8.
 */
static void
path_grew(struct path *pa, size_t old, int n)
{
	size_t	 i, k, end;

	if (n >= 0 && (size_t)n < sizeof(pa->p) - old) {
		pa->len = old + (size_t)n;
		return;
	}
	end = sizeof(pa->p) - 1;
	for (i = old; i < end; i += k) {
		k = utf8_seq_len((const unsigned char *)pa->p + i, end - i);
		if (k == 0)
			break;
	}
	pa->len = i;
	pa->p[i] = '\0';
}

/* Append a member name to a path; return the old length. */
static size_t
path_push_name(struct path *pa, const char *name)
{
	size_t	 old;

	old = pa->len;
	path_grew(pa, old, snprintf(pa->p + old, sizeof(pa->p) - old,
	    old ? ".%s" : "%s", name));
	return old;
}

/* Append an array index to a path; return the old length. */
static size_t
path_push_index(struct path *pa, size_t idx)
{
	size_t	 old;

	old = pa->len;
	path_grew(pa, old, snprintf(pa->p + old, sizeof(pa->p) - old,
	    "[%zu]", idx));
	return old;
}

/* Cut a path back to an earlier length. */
static void
path_pop(struct path *pa, size_t len)
{
	pa->len = len;
	pa->p[len] = '\0';
}

/*
 * Find the first repeated member name of the object whose brace is at
 * off, for a detail; name stays empty if that fails.  Only called once a
 * repeat is known, so the cost stays off the normal path.
 */
static void
dup_name(const struct scan *sc, size_t off, char *name, size_t namesz)
{
	struct scan		 t;
	struct problem		 scratch;
	struct json_tokener	*tok = NULL;
	struct json_object	*set = NULL, *k;
	const char		*key;
	size_t			 start;
	int			 seen;

	memset(&t, 0, sizeof(t));
	t.s = sc->s;
	t.len = sc->len;
	t.off = off + 1;
	t.pb = &scratch;
	tok = json_tokener_new();
	set = json_object_new_object();
	if (tok == NULL || set == NULL)
		goto out;
	for (;;) {
		scan_ws(&t);
		start = t.off;
		if (scan_string(&t, 1) == -1)
			goto out;
		json_tokener_reset(tok);
		k = json_tokener_parse_ex(tok, (const char *)t.s + start,
		    (int)(t.off - start));
		if (!json_object_is_type(k, json_type_string)) {
			json_object_put(k);
			goto out;
		}
		key = json_object_get_string(k);
		seen = json_object_object_get_ex(set, key, NULL);
		if (seen)
			show_name(name, namesz, key);
		else if (json_object_object_add(set, key, NULL) != 0)
			seen = -1;
		json_object_put(k);
		if (seen)
			goto out;
		scan_ws(&t);
		if (t.off >= t.len || t.s[t.off] != ':')
			goto out;
		t.off++;
		if (scan_value(&t, 1) == -1)
			goto out;
		scan_ws(&t);
		if (t.off >= t.len || t.s[t.off] != ',')
			goto out;
		t.off++;
	}

out:
	free(t.objs);
	json_object_put(set);
	if (tok != NULL)
		json_tokener_free(tok);
}

/*
 * Walk json-c's tree in document order and compare each object's member
 * count with the text's.  The first object that came out smaller is the
 * first one holding a repeated name: every object before it is identical
 * in both.
 */
static int
dup_check(struct json_object *o, const struct scan *sc, size_t *idx,
    struct path *pa, struct problem *pb)
{
	struct json_object_iterator	 it, end;
	char				 name[NAME_SHOW_MAX + 4];
	size_t				 i, n, old;

	if (json_object_is_type(o, json_type_array)) {
		n = json_object_array_length(o);
		for (i = 0; i < n; i++) {
			old = path_push_index(pa, i);
			if (dup_check(json_object_array_get_idx(o, i), sc, idx,
			    pa, pb) == -1)
				return -1;
			path_pop(pa, old);
		}
		return 0;
	}
	if (!json_object_is_type(o, json_type_object))
		return 0;
	if (*idx >= sc->nobj || (size_t)json_object_object_length(o) !=
	    sc->objs[*idx].members) {
		name[0] = '\0';
		if (*idx < sc->nobj)
			dup_name(sc, sc->objs[*idx].off, name, sizeof(name));
		problem_set(pb, 400, E_VALIDATION,
		    "member \"%s\" appears more than once in %s",
		    name[0] != '\0' ? name : "name", pa->len ? pa->p :
		    "the top-level object");
		return -1;
	}
	(*idx)++;
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	while (!json_object_iter_equal(&it, &end)) {
		show_name(name, sizeof(name), json_object_iter_peek_name(&it));
		old = path_push_name(pa, name);
		if (dup_check(json_object_iter_peek_value(&it), sc, idx, pa,
		    pb) == -1)
			return -1;
		path_pop(pa, old);
		json_object_iter_next(&it);
	}
	return 0;
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
			show_name(shown, sizeof(shown), key);
			problem_set(pb, 400, E_VALIDATION,
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
		problem_set(pb, 400, E_VALIDATION,
		    "%s must be a string, not %s", path, type_desc(v));
		return -1;
	}
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (memchr(s, '\0', len) != NULL) {
		problem_set(pb, 400, E_VALIDATION,
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
		problem_set(pb, 400, E_VALIDATION,
		    "%s must be an integer (no fraction or exponent)", path);
		return -1;
	}
	if (!json_object_is_type(v, json_type_int)) {
		problem_set(pb, 400, E_VALIDATION,
		    "%s must be an integer, not %s", path, type_desc(v));
		return -1;
	}
	n = json_object_get_int64(v);
	if (n < min || n > max) {
		problem_set(pb, 400, E_VALIDATION,
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
		problem_set(pb, 400, E_VALIDATION,
		    "%s must be an object, not %s", prefix, type_desc(o));
		return -1;
	}
	snprintf(prefix, sizeof(prefix), "items[%zu].", i);
	if (check_members(o, item_members, 2, prefix, pb) == -1)
		return -1;

	snprintf(path, sizeof(path), "items[%zu].sku", i);
	if (!json_object_object_get_ex(o, "sku", &v)) {
		problem_set(pb, 400, E_VALIDATION, "%s is required", path);
		return -1;
	}
	if (get_string(v, path, &s, &len, pb) == -1)
		return -1;
	if (len < 1 || len > ORDER_SKU_MAX) {
		problem_set(pb, 400, E_VALIDATION,
		    "%s must be 1 to %d characters long, not %zu", path,
		    ORDER_SKU_MAX, utf8_count(s, len));
		return -1;
	}
	for (k = 0; k < len; k++) {
		if (!sku_char((unsigned char)s[k])) {
			problem_set(pb, 400, E_VALIDATION,
			    "%s has an invalid character at position %zu "
			    "(allowed: A-Z a-z 0-9 . _ -)", path, k + 1);
			return -1;
		}
	}
	memcpy(it->sku, s, len);
	it->sku[len] = '\0';

	snprintf(path, sizeof(path), "items[%zu].qty", i);
	if (!json_object_object_get_ex(o, "qty", &v)) {
		problem_set(pb, 400, E_VALIDATION, "%s is required", path);
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
		problem_set(pb, 400, E_VALIDATION,
		    "items must be an array, not %s", type_desc(v));
		return -1;
	}
	n = json_object_array_length(v);
	if (n < 1 || n > ORDER_ITEMS_MAX) {
		problem_set(pb, 400, E_VALIDATION,
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
			problem_set(pb, 400, E_VALIDATION,
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
		problem_set(pb, 400, E_VALIDATION, "currency is required");
		return -1;
	}
	if (get_string(v, "currency", &s, &len, pb) == -1)
		return -1;
	if (len != 3 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' ||
	    s[1] > 'Z' || s[2] < 'A' || s[2] > 'Z') {
		problem_set(pb, 400, E_VALIDATION,
		    "currency must be three upper-case letters A-Z");
		return -1;
	}
	memcpy(in->currency, s, 3);
	in->currency[3] = '\0';

	if (!json_object_object_get_ex(root, "items", &v)) {
		problem_set(pb, 400, E_VALIDATION, "items is required");
		return -1;
	}
	if (parse_items(in, v, pb) == -1)
		return -1;

	if (!json_object_object_get_ex(root, "amount", &v)) {
		problem_set(pb, 400, E_VALIDATION, "amount is required");
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
			problem_set(pb, 400, E_VALIDATION,
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
			problem_set(pb, 400, E_VALIDATION,
			    "note must be at most %d characters, not %zu",
			    ORDER_NOTE_MAX, n);
			return -1;
		}
	}
	in->note = malloc(len + 1);
	if (in->note == NULL) {
		problem_set(pb, 500, E_INTERNAL, "out of memory");
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
		problem_set(pb, 500, E_INTERNAL,
		    "cannot build the canonical request");
	buf_free(&b);
	return rv;
}

/*
 * Parse and validate a body.  The bytes are checked for UTF-8 first,
 * json-c builds the tree (depth and syntax), a strict scan catches what
 * json-c lets through (NaN, single quotes, raw control characters, lone
 * surrogate escapes, leading zeros) and counts members so that repeated
 * names are caught; then the schema and the canonical form.
 */
int
order_input_parse(struct order_input *in, const char *body, size_t len,
    struct problem *pb)
{
	struct json_tokener	*tok = NULL;
	struct json_object	*root = NULL;
	struct scan		 sc;
	struct path		 pa;
	enum json_tokener_error	 jerr;
	const unsigned char	*s = (const unsigned char *)body;
	size_t			 i, end, idx;
	int			 rv = -1;

	memset(&sc, 0, sizeof(sc));
	if (len > INT_MAX) {
		problem_set(pb, 400, E_MALFORMED, "body too large to parse");
		goto out;
	}
	if (body == NULL)
		len = 0;
	if (body_check_bytes(s, len, pb) == -1)
		goto out;
	for (i = 0; i < len && is_json_ws(s[i]); i++)
		;
	if (i == len) {
		problem_set(pb, 400, E_MALFORMED, "empty body");
		goto out;
	}
	if (len - i >= 3 && memcmp(s + i, "\xef\xbb\xbf", 3) == 0) {
		problem_set(pb, 400, E_MALFORMED,
		    "a byte order mark is not allowed");
		goto out;
	}
	if (s[i] != '{') {
		problem_set(pb, 400, E_MALFORMED,
		    "the top-level value must be an object");
		goto out;
	}

	/*
	 * json-c's depth counts the nesting levels it allows plus one;
	 * trailing data is allowed here only to be reported by name below.
	 */
	tok = json_tokener_new_ex(ORDER_JSON_DEPTH + 1);
	if (tok == NULL) {
		problem_set(pb, 500, E_INTERNAL, "out of memory");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8 | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	root = json_tokener_parse_ex(tok, body, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (root == NULL || jerr != json_tokener_success) {
		if (jerr == json_tokener_error_depth)
			problem_set(pb, 400, E_MALFORMED,
			    "nesting deeper than %d", ORDER_JSON_DEPTH);
		else if (jerr == json_tokener_continue)
			problem_set(pb, 400, E_MALFORMED,
			    "unexpected end of JSON input");
		else
			problem_set(pb, 400, E_MALFORMED, "%s at offset %zu",
			    json_tokener_error_desc(jerr), end);
		goto out;
	}
	for (i = end; i < len; i++) {
		if (!is_json_ws(s[i])) {
			problem_set(pb, 400, E_MALFORMED,
			    "trailing data after JSON value at offset %zu", i);
			goto out;
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		problem_set(pb, 400, E_MALFORMED,
		    "the top-level value must be an object");
		goto out;
	}

	sc.s = s;
	sc.len = len;
	sc.pb = pb;
	if (scan_value(&sc, 0) == -1)
		goto out;
	scan_ws(&sc);
	if (sc.off != len) {
		scan_fail(&sc, "trailing data after JSON value");
		goto out;
	}
	idx = 0;
	pa.len = 0;
	pa.p[0] = '\0';
	if (dup_check(root, &sc, &idx, &pa, pb) == -1)
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
	free(sc.objs);
	json_object_put(root);
	if (tok != NULL)
		json_tokener_free(tok);
	return rv;
}
