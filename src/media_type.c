#include "config.h"

#include <stddef.h>

#include "media_type.h"
#include "problem.h"
#include "text.h"

/* Lower-case an ASCII letter, independently of the locale. */
static int
ascii_lower(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 'a';
	return c;
}

/* Tell whether a Content-Type names application/json. */
static int
media_type_is_json(const char *ct)
{
	static const char	 want[] = "application/json";
	const char		*s;
	size_t			 i;

	s = ct;
	while (text_is_ows(*s))
		s++;
	for (i = 0; i < sizeof(want) - 1; i++) {
		if (ascii_lower((unsigned char)s[i]) != want[i])
			return 0;
	}
	s += sizeof(want) - 1;
	while (text_is_ows(*s))
		s++;
	return *s == '\0' || *s == ';';
}

/* Accept application/json with optional parameters, else 415. */
int
media_type_json(const char *ct, struct problem *pb)
{
	if (ct == NULL) {
		problem_set(pb, PROBLEM_UNSUPPORTED_MEDIA_TYPE,
		    "a Content-Type of application/json is required");
		return -1;
	}
	if (!media_type_is_json(ct)) {
		problem_set(pb, PROBLEM_UNSUPPORTED_MEDIA_TYPE,
		    "the Content-Type must be application/json");
		return -1;
	}
	return 0;
}
