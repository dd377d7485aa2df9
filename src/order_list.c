#include "config.h"

#include <stdio.h>
#include <string.h>

#include "order_list.h"
#include "order_view.h"

#define PARAM_MAX	64	/* bytes of a decoded name or value */

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode n bytes of s (application/x-www-form-urlencoded: %XX and '+')
 * into out; -1 when malformed, too long or holding a NUL.
 */
static int
decode(const char *s, size_t n, char *out, size_t outsz)
{
	size_t	 i, o = 0;
	int	 hi, lo, c;

	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+')
			c = ' ';
		if (c == 0 || o + 1 >= outsz)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* Whether a parameter name is safe to echo in a problem's detail. */
static int
name_printable(const char *s)
{
	size_t	 n = strlen(s);

	if (n == 0 || n > 32)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.-[]") == n;
}

/* Parse "1".."100" without sign, spaces or leading zeros. */
static int
parse_limit(const char *s, int *limit)
{
	size_t	 n = strlen(s), i;
	int	 v = 0;

	if (n == 0 || n > 3 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > ORDER_LIST_LIMIT_MAX)
		return -1;
	*limit = v;
	return 0;
}

/*
 * Parse the query string of GET /orders (NULL or "" for none; it ends at
 * a '#').  Every parameter once at most, no unknown one, not both
 * cursors; a bad one is a 400 VALIDATION_FAILED naming it.  Whether a
 * cursor is an order of the principal's is the reader's to check.
 */
int
order_list_parse(const char *query, struct order_list_query *q,
    struct problem *p)
{
	char		 name[PARAM_MAX + 1], value[PARAM_MAX + 1];
	const char	*s, *amp, *eq;
	size_t		 len, n;
	int		 seen_limit = 0, seen_after = 0, seen_before = 0;
	int		 after;
	unsigned long long id;

	q->limit = ORDER_LIST_LIMIT_DEFAULT;
	q->dir = ORDER_LIST_FIRST;
	q->cursor = 0;
	if (query == NULL)
		return 0;
	len = strcspn(query, "#");
	for (s = query; s < query + len; s = amp + 1) {
		amp = memchr(s, '&', (size_t)(query + len - s));
		if (amp == NULL)
			amp = query + len;
		n = (size_t)(amp - s);
		if (n == 0)
			continue;
		eq = memchr(s, '=', n);
		if (decode(s, eq ? (size_t)(eq - s) : n, name,
		    sizeof(name)) == -1) {
			problem_set(p, PROBLEM_VALIDATION_FAILED, "a query "
			    "parameter's name is malformed or unknown");
			return -1;
		}
		/* A missing or malformed value fails its parameter's check. */
		if (eq == NULL || decode(eq + 1, (size_t)(amp - eq - 1), value,
		    sizeof(value)) == -1)
			value[0] = '\0';
		if (strcmp(name, "limit") == 0) {
			if (seen_limit++ || parse_limit(value, &q->limit) ==
			    -1) {
				problem_set(p, PROBLEM_VALIDATION_FAILED,
				    "limit must be given once, an integer from "
				    "1 to %d", ORDER_LIST_LIMIT_MAX);
				return -1;
			}
		} else if (strcmp(name, "starting_after") == 0 ||
		    strcmp(name, "ending_before") == 0) {
			after = name[0] == 's';
			if ((after ? seen_after++ : seen_before++) ||
			    order_id_parse(value, &id) == -1) {
				problem_set(p, PROBLEM_VALIDATION_FAILED,
				    "%s must be given once, the id of one of "
				    "your orders", name);
				return -1;
			}
			q->dir = after ? ORDER_LIST_AFTER : ORDER_LIST_BEFORE;
			q->cursor = id;
		} else {
			if (name_printable(name))
				problem_set(p, PROBLEM_VALIDATION_FAILED,
				    "unknown query parameter %s (known: limit, "
				    "starting_after, ending_before)", name);
			else
				problem_set(p, PROBLEM_VALIDATION_FAILED,
				    "a query parameter's name is malformed or "
				    "unknown");
			return -1;
		}
	}
	if (seen_after && seen_before) {
		problem_set(p, PROBLEM_VALIDATION_FAILED, "starting_after "
		    "and ending_before cannot be given together");
		return -1;
	}
	return 0;
}
