/*
 * The Idempotency-Key request header, as a pure
 * function of bytes.  The key may be sent bare ("abc-1", as Stripe's
 * clients do) or as an RFC 8941 sf-string ("\"abc-1\"", as the IETF
 * httpapi draft specifies); both name the same key abc-1.
 */
#ifndef IDEMORDERS_IDEM_KEY_H
#define IDEMORDERS_IDEM_KEY_H

#include "problem.h"

#define IDEM_KEY_MAX		255

/*
 * Parse a header value into key (at least IDEM_KEY_MAX + 1 bytes), which
 * is left empty on failure.  NULL header: 400 IDEMPOTENCY_KEY_MISSING;
 * empty, over IDEM_KEY_MAX bytes, not visible ASCII or a bad sf-string:
 * 400 IDEMPOTENCY_KEY_INVALID.  Returns 0 or -1 with pb filled.
 */
int	idem_key_parse(const char *, char *, struct problem *);

#endif
