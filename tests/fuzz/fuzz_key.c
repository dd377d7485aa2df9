/*
 * The Idempotency-Key header, bare or an RFC 8941 sf-string, judged
 * against a reference reading of contract section 3 written here: the
 * same inputs are accepted, to the same key; a rejection is a 400
 * IDEMPOTENCY_KEY_INVALID with a valid detail; an accepted key, sent
 * again bare or quoted, names the same key.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "idem_key.h"
#include "problem.h"

/*
 * The reference: optional whitespace trimmed; a value starting with a
 * quote is an sf-string (printable ASCII, escapes \" and \\ only,
 * nothing after the closing quote); the key is 1..IDEM_KEY_MAX visible
 * ASCII bytes.  Returns the key length, or -1 when rejected.
 */
static int
ref_key(const char *hv, char *out)
{
	const char	*s, *e, *p;
	size_t		 n = 0;

	s = hv;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (s < e && *s == '"') {
		for (p = s + 1; p < e && *p != '"'; p++) {
			if (*p == '\\') {
				if (p + 1 == e || (p[1] != '"' && p[1] != '\\'))
					return -1;
				p++;
			} else if ((unsigned char)*p < 0x20 ||
			    (unsigned char)*p > 0x7e)
				return -1;
			if (n == IDEM_KEY_MAX)
				return -1;
			out[n++] = *p;
		}
		if (p == e || p + 1 != e)
			return -1;
	} else {
		for (p = s; p < e; p++) {
			if (n == IDEM_KEY_MAX)
				return -1;
			out[n++] = *p;
		}
	}
	if (n == 0)
		return -1;
	for (p = out; p < out + n; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return -1;
	out[n] = '\0';
	return (int)n;
}

/* Parse hv into a key buffer of exactly IDEM_KEY_MAX + 1 bytes. */
static int
parse(const char *hv, char *key, struct problem *pb)
{
	memset(pb, 0, sizeof(*pb));
	memset(key, 'Z', IDEM_KEY_MAX + 1);
	return idem_key_parse(hv, key, pb);
}

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct problem	 pb;
	char		*hv, *key, *again, *quoted, *q;
	char		 ref[IDEM_KEY_MAX + 1];
	const char	*p;
	int		 rc, want;

	if (size > 4096)
		return 0;
	hv = fuzz_cstr(data, size);
	key = malloc(IDEM_KEY_MAX + 1);		/* exact: ASan sees overruns */
	again = malloc(IDEM_KEY_MAX + 1);
	quoted = malloc(2 * IDEM_KEY_MAX + 3);
	if (key == NULL || again == NULL || quoted == NULL)
		fuzz_fail("out of memory");

	rc = parse(hv, key, &pb);
	want = ref_key(hv, ref);
	if (rc == -1) {
		if (want != -1)
			fuzz_fail("key \"%s\" rejected (%s), the reference "
			    "accepts it as \"%s\"", hv, pb.detail, ref);
		if (key[0] != '\0')
			fuzz_fail("a rejected key left bytes in the buffer");
		fuzz_check_problem(&pb, 400, "IDEMPOTENCY_KEY_INVALID", NULL);
		goto out;
	}
	if (want == -1)
		fuzz_fail("key \"%s\" accepted as \"%s\", the reference "
		    "rejects it", hv, key);
	if (memchr(key, '\0', IDEM_KEY_MAX + 1) == NULL ||
	    strcmp(key, ref) != 0)
		fuzz_fail("key \"%s\" parsed as \"%s\", the reference says "
		    "\"%s\"", hv, key, ref);

	/*
	 * The same key sent bare (unless it starts with a quote, which
	 * only an sf-string can carry), then as an sf-string.
	 */
	if (key[0] != '"' && (parse(key, again, &pb) == -1 ||
	    strcmp(again, key) != 0))
		fuzz_fail("bare key \"%s\" does not parse to itself", key);
	q = quoted;
	*q++ = '"';
	for (p = key; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			*q++ = '\\';
		*q++ = *p;
	}
	*q++ = '"';
	*q = '\0';
	if (parse(quoted, again, &pb) == -1 || strcmp(again, key) != 0)
		fuzz_fail("quoted key %s does not parse to \"%s\"", quoted,
		    key);

out:
	free(quoted);
	free(again);
	free(key);
	free(hv);
	return 0;
}
