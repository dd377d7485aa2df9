#include "config.h"

#include <string.h>

#include "text.h"

/* Tell whether c is HTTP optional whitespace: a space or a tab. */
int
text_is_ows(int c)
{
	return c == ' ' || c == '\t';
}

/* Trim whitespace at both ends, in place; cr: also '\r' at the end. */
static char *
trim(char *s, int cr)
{
	char	*e;

	while (text_is_ows(*s))
		s++;
	e = s + strlen(s);
	while (e > s && (text_is_ows(e[-1]) || (cr && e[-1] == '\r')))
		*--e = '\0';
	return s;
}

/* Trim spaces and tabs at both ends, in place (a CSV field). */
char *
text_trim(char *s)
{
	return trim(s, 0);
}

/*
 * Trim spaces and tabs at both ends and a '\r' among them at the end, in
 * place (a line of a file that may have CRLF line ends).
 */
char *
text_trim_line(char *s)
{
	return trim(s, 1);
}

/* Write n bytes of src as 2n hex digits to dst (no NUL); upper: A-F. */
static void
hex(char *dst, const void *src, size_t n, int upper)
{
	static const char	 digits[] = "0123456789abcdef"
				    "0123456789ABCDEF";
	const unsigned char	*p = src;
	const char		*d = digits + (upper ? 16 : 0);
	size_t			 i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = d[p[i] >> 4];
		dst[2 * i + 1] = d[p[i] & 0x0f];
	}
}

/* Write n bytes of src as 2n lower-case hex digits to dst (no NUL). */
void
text_hex(char *dst, const void *src, size_t n)
{
	hex(dst, src, n, 0);
}

/* Write n bytes of src as 2n upper-case hex digits to dst (no NUL). */
void
text_hex_upper(char *dst, const void *src, size_t n)
{
	hex(dst, src, n, 1);
}
