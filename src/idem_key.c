#include "config.h"

#include <string.h>

#include "idem_key.h"
#include "problem.h"
#include "text.h"

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
				problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
				    "Idempotency-Key is a bad quoted string: a "
				    "backslash at position %zu must precede "
				    "'\"' or '\\'", (size_t)(p - s) + 1);
				return -1;
			}
			c = (unsigned char)*++p;
		} else if (c < 0x20 || c > 0x7e) {
			problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
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
		problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
		    "Idempotency-Key is a bad quoted string: "
		    "no closing quote");
		return -1;
	}
	if (p + 1 != e) {
		problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
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
		problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
		    "Idempotency-Key is empty");
		return -1;
	}
	if (n > IDEM_KEY_MAX) {
		problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
		    "Idempotency-Key is %zu bytes long; at most %d are allowed",
		    n, IDEM_KEY_MAX);
		return -1;
	}
	for (i = 0; i < n; i++) {
		c = (unsigned char)key[i];
		if (c < 0x21 || c > 0x7e) {
			problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_INVALID,
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
idem_key_parse(const char *hv, char *key, struct problem *pb)
{
	const char	*s, *e;
	size_t		 n;

	key[0] = '\0';
	if (hv == NULL) {
		problem_set(pb, PROBLEM_IDEMPOTENCY_KEY_MISSING,
		    "the Idempotency-Key header is required");
		return -1;
	}
	s = hv;
	while (text_is_ows(*s))
		s++;
	e = s + strlen(s);
	while (e > s && text_is_ows(e[-1]))
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
