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

/* Write n bytes of src as 2n lower-case hex digits to dst (no NUL). */
void
text_hex(char *dst, const void *src, size_t n)
{
	static const char	 digits[] = "0123456789abcdef";
	const unsigned char	*p = src;
	size_t			 i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = digits[p[i] >> 4];
		dst[2 * i + 1] = digits[p[i] & 0x0f];
	}
}
