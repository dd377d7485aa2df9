#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

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

/* Count the code points of valid UTF-8. */
size_t
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
 * The length of the longest prefix of s (len bytes of UTF-8) that has
 * at most max bytes and ends on a character boundary.
 */
size_t
utf8_cut(const char *s, size_t len, size_t max)
{
	size_t	 n;

	if (len <= max)
		return len;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}
