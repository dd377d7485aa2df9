#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "buf.h"
#include "fuzz_check.h"
#include "problem.h"

/* Report a broken property and abort, so that the input is kept. */
void
fuzz_fail(const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "fuzz property failed: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* Return a NUL-terminated copy of the input; the caller frees it. */
char *
fuzz_cstr(const uint8_t *data, size_t size)
{
	char	*s;

	s = malloc(size + 1);
	if (s == NULL)
		fuzz_fail("out of memory");
	if (size > 0)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Tell whether n bytes are well-formed UTF-8, by the table of the Unicode
 * standard (3.9, table 3-7); written apart from src/ so that it judges
 * the service's own UTF-8 code instead of repeating it.
 */
int
fuzz_utf8_valid(const char *str, size_t n)
{
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 i, k, need;
	unsigned char		 c, lo, hi;

	for (i = 0; i < n; i += need + 1) {
		c = s[i];
		lo = 0x80;
		hi = 0xbf;
		if (c < 0x80)
			need = 0;
		else if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c == 0xe0) {
			need = 2;
			lo = 0xa0;
		} else if (c == 0xed) {
			need = 2;
			hi = 0x9f;
		} else if (c >= 0xe1 && c <= 0xef)
			need = 2;
		else if (c == 0xf0) {
			need = 3;
			lo = 0x90;
		} else if (c >= 0xf1 && c <= 0xf3)
			need = 3;
		else if (c == 0xf4) {
			need = 3;
			hi = 0x8f;
		} else
			return 0;
		if (need == 0)
			continue;
		if (n - i - 1 < need)
			return 0;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

/*
 * Check a problem as a client would receive it: the expected status, one
 * of the (one or two) expected codes, a non-empty detail of valid UTF-8,
 * and a problem+json rendering that is valid JSON and carries the detail
 * unchanged.
 */
void
fuzz_check_problem(const struct problem *pb, int status, const char *code1,
    const char *code2)
{
	struct json_tokener	*tok;
	struct json_object	*o, *v;
	struct buf		 b;
	const char		*code = problem_code_name(pb->code);
	size_t			 len;

	if (pb->status != status)
		fuzz_fail("status %d, expected %d (detail: %s)", pb->status,
		    status, pb->detail);
	if (code == NULL || (strcmp(code, code1) != 0 &&
	    (code2 == NULL || strcmp(code, code2) != 0)))
		fuzz_fail("code %s, expected %s", code ? code : "NULL",
		    code1);
	if (problem_title(pb->code) == NULL)
		fuzz_fail("code %s has no title", code);
	if (memchr(pb->detail, '\0', sizeof(pb->detail)) == NULL)
		fuzz_fail("detail not NUL-terminated");
	len = strlen(pb->detail);
	if (len == 0)
		fuzz_fail("empty detail for %s", code);
	if (!fuzz_utf8_valid(pb->detail, len))
		fuzz_fail("detail is not valid UTF-8: %s", pb->detail);

	buf_init(&b, 4096);
	if (problem_render(pb, &b) != 0)
		fuzz_fail("problem_render failed");
	if (!fuzz_utf8_valid(b.p, b.len))
		fuzz_fail("problem+json body is not valid UTF-8");
	tok = json_tokener_new();
	if (tok == NULL)
		fuzz_fail("out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, b.p, (int)b.len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != b.len)
		fuzz_fail("problem+json body is not JSON: %s", b.p);
	if (!json_object_object_get_ex(o, "detail", &v) ||
	    strcmp(json_object_get_string(v), pb->detail) != 0)
		fuzz_fail("detail changed in the problem+json body: %s", b.p);
	json_object_put(o);
	json_tokener_free(tok);
	buf_free(&b);
}
