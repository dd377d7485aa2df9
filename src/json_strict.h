/*
 * A strict JSON reader for request bodies, as a pure function of bytes.
 * The bytes are checked for UTF-8 first, json-c builds the tree (depth
 * and syntax), and a scan of the text catches what json-c lets through
 * (NaN, single quotes, raw control characters, lone surrogate escapes,
 * leading zeros, U+0000 in a member name) and counts members, so that a
 * name given twice in one object is refused instead of the last winning.
 */
#ifndef IDEMORDERS_JSON_STRICT_H
#define IDEMORDERS_JSON_STRICT_H

#include <stddef.h>

#include "problem.h"

#define JSON_STRICT_NAME_SHOW_MAX	48	/* bytes of a name in a detail */

struct json_object;

/*
 * Parse len bytes holding one JSON object, nested at most maxdepth
 * levels, with nothing but whitespace around it.  Returns the tree, which
 * the caller releases with json_object_put(), or NULL with pb filled:
 * 400 MALFORMED_JSON, 400 VALIDATION_FAILED (a repeated member name or
 * U+0000 in a name, the detail naming it and its path), 500 when out of
 * memory.
 */
struct json_object *json_strict_parse(const char *, size_t, int,
	    struct problem *);

/*
 * Copy a member name into dst (dstsz at least 4, JSON_STRICT_NAME_SHOW_MAX
 * + 4 to show the most) for a detail: cut on a character boundary and
 * marked "...", with quotes, backslashes and controls shown as '?'.
 */
void	json_strict_show_name(char *, size_t, const char *);

#endif
