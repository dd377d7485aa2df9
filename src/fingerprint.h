/*
 * Request fingerprint: SHA-256 over the operation, the principal and the
 * canonical body, each length-prefixed so that no choice of bytes in one
 * field can imitate another split.
 */
#ifndef IDEMORDERS_FINGERPRINT_H
#define IDEMORDERS_FINGERPRINT_H

#include <stddef.h>

#define FINGERPRINT_HEX_LEN	64

/* Write the lower-case hex digest and a NUL into out (65 bytes). */
int	fingerprint(const char *, const char *, const char *, size_t,
	    char out[FINGERPRINT_HEX_LEN + 1]);

#endif
