/*
 * Standard Webhooks signing (https://www.standardwebhooks.com/): the
 * secret ("whsec_" and base64 of 24 to 64 bytes), the signature
 * "v1,<base64 of HMAC-SHA256(key, id "." timestamp "." body)>", and the
 * body sent for an event.  Pure: bytes in, bytes out.
 */
#ifndef IDEMORDERS_WEBHOOK_H
#define IDEMORDERS_WEBHOOK_H

#include <stddef.h>

#include "buf.h"

#define WEBHOOK_KEY_MIN		24	/* bytes of a decoded secret */
#define WEBHOOK_KEY_MAX		64
#define WEBHOOK_SIG_MAX		64	/* "v1," and 44 base64 characters */

struct webhook_key {
	unsigned char	 key[WEBHOOK_KEY_MAX];
	size_t		 len;
};

int	webhook_key_parse(const char *, struct webhook_key *, char *, size_t);
int	webhook_sign(const struct webhook_key *, const char *, long long,
	    const char *, size_t, char *, size_t);
int	webhook_body(struct buf *, const char *, const char *, const char *,
	    size_t);

#endif
