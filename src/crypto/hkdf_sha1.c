/* SPDX-License-Identifier: MIT */
#include "crypto/hkdf_sha1.h"

#include <errno.h>
#include <string.h>

#include "crypto/mbedtls_hash.h"
#include "crypto/primitives.h"

typedef union {
	max_align_t align;
	unsigned char b[SS_SHA1_CTX_MAX];
} sha1_ctx_t;

/* An HMAC key absorbed once: the inner and outer states after their padded
 * key block, so each MAC under the same key costs two block copies instead of
 * two extra compressions. */
typedef struct {
	sha1_ctx_t inner;
	sha1_ctx_t outer;
} hmac_key_t;

static void hmac_setkey(const ss_sha1_ops_t *h, hmac_key_t *k, const uint8_t *key, size_t key_len)
{
	uint8_t block[SS_SHA1_BLOCK] = {0};

	if (key_len > SS_SHA1_BLOCK) {
		h->init(k->inner.b);
		h->update(k->inner.b, key, key_len);
		h->final(k->inner.b, block);
	} else if (key_len > 0) {
		memcpy(block, key, key_len);
	}
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] ^= 0x36;
	h->init(k->inner.b);
	h->update(k->inner.b, block, sizeof(block));
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] ^= 0x36 ^ 0x5c;
	h->init(k->outer.b);
	h->update(k->outer.b, block, sizeof(block));
	ss_wipe(block, sizeof(block));
}

/* The inner hash runs in *work, which the caller starts from k->inner and
 * feeds the message into. */
static void hmac_finish(const ss_sha1_ops_t *h, const hmac_key_t *k, sha1_ctx_t *work,
			uint8_t out[SS_SHA1_LEN])
{
	uint8_t inner[SS_SHA1_LEN];

	h->final(work->b, inner);
	memcpy(work->b, k->outer.b, h->ctx_size);
	h->update(work->b, inner, sizeof(inner));
	h->final(work->b, out);
	ss_wipe(inner, sizeof(inner));
}

int ss_hkdf_sha1_with(const ss_sha1_ops_t *h, const uint8_t *salt, size_t salt_len,
		      const uint8_t *ikm, size_t ikm_len, const uint8_t *info, size_t info_len,
		      uint8_t *okm, size_t okm_len)
{
	hmac_key_t k;
	sha1_ctx_t work;
	uint8_t prk[SS_SHA1_LEN], t[SS_SHA1_LEN];
	size_t done = 0;
	uint8_t counter = 0;

	if (okm_len > 255 * SS_SHA1_LEN || h->ctx_size > SS_SHA1_CTX_MAX)
		return -EINVAL;

	/* Extract: PRK = HMAC(salt, IKM); a missing salt is HashLen zeros,
	 * which HMAC's zero padding makes the same as an empty key. */
	hmac_setkey(h, &k, salt, salt_len);
	memcpy(work.b, k.inner.b, h->ctx_size);
	h->update(work.b, ikm, ikm_len);
	hmac_finish(h, &k, &work, prk);

	/* Expand: T(i) = HMAC(PRK, T(i-1) || info || i). */
	hmac_setkey(h, &k, prk, sizeof(prk));
	while (done < okm_len) {
		size_t n = okm_len - done < SS_SHA1_LEN ? okm_len - done : SS_SHA1_LEN;

		counter++;
		memcpy(work.b, k.inner.b, h->ctx_size);
		if (counter > 1)
			h->update(work.b, t, sizeof(t));
		if (info_len > 0)
			h->update(work.b, info, info_len);
		h->update(work.b, &counter, 1);
		hmac_finish(h, &k, &work, t);
		memcpy(okm + done, t, n);
		done += n;
	}

	ss_wipe(&k, sizeof(k));
	ss_wipe(&work, sizeof(work));
	ss_wipe(prk, sizeof(prk));
	ss_wipe(t, sizeof(t));
	return 0;
}

_Static_assert(sizeof(mbedtls_sha1_context) <= SS_SHA1_CTX_MAX, "SHA-1 context too large");

static void sha1_mb_init(void *ctx)
{
	mbedtls_sha1_init(ctx);
	(void)SS_MBEDTLS_SHA1_STARTS(ctx);
}

static void sha1_mb_update(void *ctx, const uint8_t *p, size_t n)
{
	(void)SS_MBEDTLS_SHA1_UPDATE(ctx, p, n);
}

static void sha1_mb_final(void *ctx, uint8_t out[SS_SHA1_LEN])
{
	(void)SS_MBEDTLS_SHA1_FINISH(ctx, out);
}

const ss_sha1_ops_t ss_sha1_mbedtls = {
    .ctx_size = sizeof(mbedtls_sha1_context),
    .init = sha1_mb_init,
    .update = sha1_mb_update,
    .final = sha1_mb_final,
};
