#include "config.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "buf.h"
#include "webhook.h"

#define WEBHOOK_PREFIX	"whsec_"

/* The value of a base64 character, or -1. */
static int
b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decode the base64 text s (padded to a multiple of 4) into out (size
 * bytes); the decoded length, or -1 when it is not base64 or too long.
 */
static long
b64_decode(const char *s, unsigned char *out, size_t size)
{
	size_t		 n = strlen(s), i, len = 0, pad = 0;
	unsigned long	 acc = 0;
	int		 v, bits = 0;

	if (n == 0 || n % 4 != 0)
		return -1;
	if (s[n - 1] == '=')
		pad++;
	if (n > 1 && s[n - 2] == '=')
		pad++;
	for (i = 0; i < n - pad; i++) {
		v = b64_value((unsigned char)s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned long)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len == size)
				return -1;
			out[len++] = (unsigned char)(acc >> bits);
			acc &= (1UL << bits) - 1;
		}
	}
	return (long)len;
}

/*
 * Parse a webhook secret: "whsec_" and the base64 of 24 to 64 random
 * bytes, the key.  err says what is wrong, never the secret.
 */
int
webhook_key_parse(const char *s, struct webhook_key *k, char *err,
    size_t errsz)
{
	long	 n;

	memset(k, 0, sizeof(*k));
	if (strncmp(s, WEBHOOK_PREFIX, strlen(WEBHOOK_PREFIX)) != 0) {
		snprintf(err, errsz, "a webhook secret begins with \"whsec_\" "
		    "followed by base64 (make one with: echo whsec_$(head -c "
		    "32 /dev/urandom | base64))");
		return -1;
	}
	n = b64_decode(s + strlen(WEBHOOK_PREFIX), k->key, sizeof(k->key));
	if (n < 0 && strlen(s + strlen(WEBHOOK_PREFIX)) > 4 * 22) {
		snprintf(err, errsz, "the webhook secret is longer than %d "
		    "bytes once decoded", WEBHOOK_KEY_MAX);
		return -1;
	}
	if (n < 0) {
		snprintf(err, errsz, "the webhook secret after \"whsec_\" is "
		    "not base64 (A-Z a-z 0-9 + / and = padding)");
		return -1;
	}
	if (n < WEBHOOK_KEY_MIN) {
		explicit_bzero(k, sizeof(*k));
		snprintf(err, errsz, "the webhook secret is too short: %ld "
		    "bytes once decoded, at least %d needed (make one with: "
		    "echo whsec_$(head -c 32 /dev/urandom | base64))", n,
		    WEBHOOK_KEY_MIN);
		return -1;
	}
	k->len = (size_t)n;
	return 0;
}

/*
 * Write the signature of (id, ts, body) under k into out: "v1," and the
 * base64 of HMAC-SHA256(key, id.ts.body).  0, or -1.
 */
int
webhook_sign(const struct webhook_key *k, const char *id, long long ts,
    const char *body, size_t len, char *out, size_t size)
{
	unsigned char	 mac[EVP_MAX_MD_SIZE];
	unsigned int	 maclen = 0;
	struct buf	 msg;
	int		 rc = -1;

	buf_init(&msg, 32 * 1024 * 1024);
	if (buf_printf(&msg, "%s.%lld.", id, ts) != BUF_OK ||
	    buf_add(&msg, body, len) != BUF_OK)
		goto out;
	if (HMAC(EVP_sha256(), k->key, (int)k->len,
	    (const unsigned char *)msg.p, msg.len, mac, &maclen) == NULL)
		goto out;
	if (size < 3 + 4 * ((maclen + 2) / 3) + 1)
		goto out;
	memcpy(out, "v1,", 3);
	EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
	rc = 0;
out:
	buf_free(&msg);
	return rc;
}

/*
 * Write the body of an event into out: {"type":..., "timestamp": its
 * creation time, "data": the order's JSON as stored}, the same bytes on
 * every delivery.  type and created are program-made text.
 */
int
webhook_body(struct buf *out, const char *type, const char *created,
    const char *data, size_t len)
{
	if (buf_printf(out, "{\"type\":\"%s\",\"timestamp\":\"%s\","
	    "\"data\":", type, created) != BUF_OK ||
	    buf_add(out, data, len) != BUF_OK || buf_addc(out, '}') != BUF_OK)
		return -1;
	return 0;
}
