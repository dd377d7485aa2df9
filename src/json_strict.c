#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_strict.h"
#include "problem.h"
#include "utf8.h"

#define NAME_SHOW_MAX	JSON_STRICT_NAME_SHOW_MAX
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
	int			 maxdepth;	/* containers allowed */
	struct problem		*pb;
};

struct path {
	char	 p[PATH_MAX_LEN];
	size_t	 len;
};

static int	scan_value(struct scan *, int);

/* Tell whether c is JSON insignificant whitespace. */
static int
is_json_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Check that a body is valid UTF-8 without NUL bytes. */
static int
body_check_bytes(const unsigned char *s, size_t len, struct problem *pb)
{
	size_t	 i, n;

	for (i = 0; i < len; i += n) {
		if (s[i] == 0) {
			problem_set(pb, PROBLEM_MALFORMED_JSON,
			    "NUL byte at offset %zu", i);
			return -1;
		}
		n = utf8_seq_len(s + i, len - i);
		if (n == 0) {
			problem_set(pb, PROBLEM_MALFORMED_JSON,
			    "invalid UTF-8 at offset %zu", i);
			return -1;
		}
	}
	return 0;
}

/*
 * Copy a member name for a detail: at most NAME_SHOW_MAX bytes, cut on a
 * character boundary, with quotes, backslashes and controls shown as '?'.
 */
void
json_strict_show_name(char *dst, size_t dstsz, const char *src)
{
	size_t		 i, max;
	unsigned char	 c;

	max = dstsz - 4;
	if (max > NAME_SHOW_MAX)
		max = NAME_SHOW_MAX;
	for (i = 0; src[i] != '\0'; i++) {
		c = (unsigned char)src[i];
		if (i >= max) {
			i = utf8_cut(src, strlen(src), max);
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
	problem_set(sc->pb, PROBLEM_MALFORMED_JSON, "%s at offset %zu",
	    what, sc->off);
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
			problem_set(sc->pb, PROBLEM_VALIDATION_FAILED,
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
			problem_set(sc->pb, PROBLEM_INTERNAL_ERROR, "out "
			    "of memory");
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
		if (depth >= sc->maxdepth) {
			problem_set(sc->pb, PROBLEM_MALFORMED_JSON,
			    "nesting deeper than %d", sc->maxdepth);
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
	t.maxdepth = sc->maxdepth;
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
			json_strict_show_name(name, namesz, key);
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
		problem_set(pb, PROBLEM_VALIDATION_FAILED,
		    "member \"%s\" appears more than once in %s",
		    name[0] != '\0' ? name : "name", pa->len ? pa->p :
		    "the top-level object");
		return -1;
	}
	(*idx)++;
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	while (!json_object_iter_equal(&it, &end)) {
		json_strict_show_name(name, sizeof(name),
		    json_object_iter_peek_name(&it));
		old = path_push_name(pa, name);
		if (dup_check(json_object_iter_peek_value(&it), sc, idx, pa,
		    pb) == -1)
			return -1;
		path_pop(pa, old);
		json_object_iter_next(&it);
	}
	return 0;
}

/*
 * Parse len bytes holding one JSON object: UTF-8 and NUL first, then
 * json-c (depth and syntax; trailing data is allowed there only to be
 * reported by name here), then the strict scan and the repeated names.
 */
struct json_object *
json_strict_parse(const char *body, size_t len, int maxdepth,
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
		problem_set(pb, PROBLEM_MALFORMED_JSON, "body too large "
		    "to parse");
		goto out;
	}
	if (body == NULL)
		len = 0;
	if (body_check_bytes(s, len, pb) == -1)
		goto out;
	for (i = 0; i < len && is_json_ws(s[i]); i++)
		;
	if (i == len) {
		problem_set(pb, PROBLEM_MALFORMED_JSON, "empty body");
		goto out;
	}
	if (len - i >= 3 && memcmp(s + i, "\xef\xbb\xbf", 3) == 0) {
		problem_set(pb, PROBLEM_MALFORMED_JSON,
		    "a byte order mark is not allowed");
		goto out;
	}
	if (s[i] != '{') {
		problem_set(pb, PROBLEM_MALFORMED_JSON,
		    "the top-level value must be an object");
		goto out;
	}

	/*
	 * json-c's depth counts the nesting levels it allows plus one;
	 * trailing data is allowed here only to be reported by name below.
	 */
	tok = json_tokener_new_ex(maxdepth + 1);
	if (tok == NULL) {
		problem_set(pb, PROBLEM_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8 | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	root = json_tokener_parse_ex(tok, body, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (root == NULL || jerr != json_tokener_success) {
		if (jerr == json_tokener_error_depth)
			problem_set(pb, PROBLEM_MALFORMED_JSON,
			    "nesting deeper than %d", maxdepth);
		else if (jerr == json_tokener_continue)
			problem_set(pb, PROBLEM_MALFORMED_JSON,
			    "unexpected end of JSON input");
		else
			problem_set(pb, PROBLEM_MALFORMED_JSON, "%s at "
			    "offset %zu", json_tokener_error_desc(jerr), end);
		goto out;
	}
	for (i = end; i < len; i++) {
		if (!is_json_ws(s[i])) {
			problem_set(pb, PROBLEM_MALFORMED_JSON,
			    "trailing data after JSON value at offset %zu", i);
			goto out;
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		problem_set(pb, PROBLEM_MALFORMED_JSON,
		    "the top-level value must be an object");
		goto out;
	}

	sc.s = s;
	sc.len = len;
	sc.maxdepth = maxdepth;
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

	rv = 0;

out:
	if (rv == -1) {
		json_object_put(root);
		root = NULL;
	}
	free(sc.objs);
	if (tok != NULL)
		json_tokener_free(tok);
	return root;
}
