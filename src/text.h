/*
 * Small text helpers shared by the parsers: HTTP optional whitespace and
 * trimming in place.
 */
#ifndef IDEMORDERS_TEXT_H
#define IDEMORDERS_TEXT_H

int	text_is_ows(int);
char   *text_trim(char *);
char   *text_trim_line(char *);

#endif
