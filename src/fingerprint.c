#include "config.h"

#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "fingerprint.h"
#include "text.h"

/* Fixed domain tag; a new canonical form or layout gets a new tag. */
#define FP_TAG		"idemorders-fp-v1"
#define SHA256_LEN	32

static EVP_MD	*sha256;	/* kept for the life of the process */

/* Feed one field: its length as 8 bytes big-endian, then its bytes. */
static int
fp_field(EVP_MD_CTX *ctx, const void *p, size_t len)
{
	unsigned char	 be[8];
	uint64_t	 n;
	int		 i;

	n = (uint64_t)len;
	for (i = 7; i >= 0; i--) {
		be[i] = (unsigned char)(n & 0xff);
		n >>= 8;
	}
	if (EVP_DigestUpdate(ctx, be, sizeof(be)) != 1)
		return -1;
	if (len > 0 && EVP_DigestUpdate(ctx, p, len) != 1)
		return -1;
	return 0;
}

/*
 * SHA-256 over FP_TAG, then the operation, the principal and the
 * canonical body, each length-prefixed, as lower-case hex in out.
 * Returns 0, or -1 (out empty) on bad arguments or an OpenSSL failure.
 */
int
fingerprint(const char *op, const char *principal, const char *body,
    size_t bodylen, char out[FINGERPRINT_HEX_LEN + 1])
{
	EVP_MD_CTX		*ctx = NULL;
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen;
	int			 rv = -1;

	out[0] = '\0';
	if (op == NULL || principal == NULL || (body == NULL && bodylen > 0))
		goto out;
	/* Fetched once: an implicit fetch per digest costs more than it. */
	if (sha256 == NULL)
		sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (sha256 == NULL)
		goto out;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		goto out;
	if (EVP_DigestInit_ex(ctx, sha256, NULL) != 1 ||
	    EVP_DigestUpdate(ctx, FP_TAG, sizeof(FP_TAG) - 1) != 1 ||
	    fp_field(ctx, op, strlen(op)) == -1 ||
	    fp_field(ctx, principal, strlen(principal)) == -1 ||
	    fp_field(ctx, body, bodylen) == -1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
		goto out;
	if (mdlen != SHA256_LEN)
		goto out;
	text_hex(out, md, mdlen);
	out[2 * mdlen] = '\0';
	rv = 0;

out:
	EVP_MD_CTX_free(ctx);
	return rv;
}
