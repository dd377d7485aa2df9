/*
 * Small text helpers: HTTP optional whitespace, trimming in place, and
 * the one hex alphabet (digests, ids, \u escapes, SQL hex literals).
 */
#ifndef IDEMORDERS_TEXT_H
#define IDEMORDERS_TEXT_H

#include <stddef.h>

int	text_is_ows(int);
char   *text_trim(char *);
char   *text_trim_line(char *);
void	text_hex(char *, const void *, size_t);
void	text_hex_upper(char *, const void *, size_t);

#endif
