#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "text.h"

/* Start an empty buffer that may grow to max bytes. */
void
buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* Release the storage; the buffer may be reused after buf_init. */
void
buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Forget the contents but keep the storage. */
void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

/* Make room for n more bytes plus the terminating NUL. */
static int
buf_grow(struct buf *b, size_t n)
{
	size_t	 want, ncap;
	char	*np;

	if (n > b->max || b->len > b->max - n)
		return BUF_TOO_BIG;
	want = b->len + n + 1;
	if (want <= b->cap)
		return BUF_OK;
	ncap = b->cap ? b->cap : 256;
	while (ncap < want)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (np == NULL)
		return BUF_NOMEM;
	b->p = np;
	b->cap = ncap;
	return BUF_OK;
}

/* Append n bytes. */
int
buf_add(struct buf *b, const void *data, size_t n)
{
	int	 rc;

	rc = buf_grow(b, n);
	if (rc != BUF_OK)
		return rc;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return BUF_OK;
}

/* Append a NUL-terminated string. */
int
buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

/* Append one byte. */
int
buf_addc(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

/* Append formatted text; formats once when it fits the spare room. */
int
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list	 ap2;
	size_t	 room;
	int	 n, rc;

	room = b->cap > b->len ? b->cap - b->len : 0;
	va_copy(ap2, ap);
	n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return BUF_NOMEM;
	if ((size_t)n < room) {
		if ((size_t)n > b->max - b->len || b->len > b->max) {
			b->p[b->len] = '\0';
			return BUF_TOO_BIG;
		}
		b->len += (size_t)n;
		return BUF_OK;
	}
	if (room > 0)
		b->p[b->len] = '\0';
	rc = buf_grow(b, (size_t)n);
	if (rc != BUF_OK)
		return rc;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return BUF_OK;
}

/* Append formatted text. */
int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Append s as a JSON string literal.  The input must be valid UTF-8; the
 * output escapes only '"', '\\' and control characters, with the short
 * forms where JSON has them, so that equal strings always give equal bytes.
 */
int
buf_add_json_string(struct buf *b, const char *s, size_t n)
{
	size_t		 i, start, old;
	unsigned char	 c;
	char		 esc[7];
	int		 rc;

	old = b->len;
	rc = buf_addc(b, '"');
	if (rc != BUF_OK)
		goto out;
	start = 0;
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		rc = buf_add(b, s + start, i - start);
		if (rc != BUF_OK)
			goto out;
		start = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			text_hex(esc + 4, &c, 1);
			rc = buf_add(b, esc, 6);
			if (rc != BUF_OK)
				goto out;
			continue;
		}
		rc = buf_add(b, esc, 2);
		if (rc != BUF_OK)
			goto out;
	}
	rc = buf_add(b, s + start, n - start);
	if (rc != BUF_OK)
		goto out;
	rc = buf_addc(b, '"');

out:
	/* A failed append leaves the buffer as it was (buf.h). */
	if (rc != BUF_OK && b->p != NULL) {
		b->len = old;
		b->p[old] = '\0';
	}
	return rc;
}

/*
 * Hand the storage to the caller, who frees it; the buffer is left empty.
 * Returns an empty string (still owned by the caller) for an empty buffer.
 */
char *
buf_detach(struct buf *b, size_t *lenp)
{
	char	*p;

	if (b->p == NULL) {
		if (buf_grow(b, 0) != BUF_OK)
			return NULL;
		b->p[0] = '\0';
	}
	p = b->p;
	if (lenp != NULL)
		*lenp = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}
