/*
 * UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates,
 * nothing above U+10FFFF.
 */
#ifndef IDEMORDERS_UTF8_H
#define IDEMORDERS_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (avail bytes), 0 if invalid. */
size_t	utf8_seq_len(const unsigned char *, size_t);

/* Count the code points of len bytes of valid UTF-8. */
size_t	utf8_count(const char *, size_t);

/* Bytes of s (len bytes) to keep for at most max, not cutting a char. */
size_t	utf8_cut(const char *, size_t, size_t);

#endif
