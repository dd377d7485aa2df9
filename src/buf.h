/*
 * Growable byte buffers with a hard cap, in the spirit of curl's dynbuf.
 * Every buffer that input can grow has a cap; an append past it fails
 * with BUF_TOO_BIG and leaves the buffer as it was.
 */
#ifndef IDEMORDERS_BUF_H
#define IDEMORDERS_BUF_H

#include <stddef.h>
#include <stdarg.h>

enum buf_err {
	BUF_OK = 0,
	BUF_NOMEM = -1,
	BUF_TOO_BIG = -2,
};

struct buf {
	char	*p;	/* owned, always NUL-terminated when non-NULL */
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* largest len allowed */
};

void	buf_init(struct buf *, size_t max);
void	buf_free(struct buf *);
void	buf_reset(struct buf *);
int	buf_add(struct buf *, const void *, size_t);
int	buf_adds(struct buf *, const char *);
int	buf_addc(struct buf *, char);
int	buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	buf_vprintf(struct buf *, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));
int	buf_add_json_string(struct buf *, const char *, size_t);
char   *buf_detach(struct buf *, size_t *);

#endif
