/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_HKDF_SHA1_H
#define SS_CRYPTO_HKDF_SHA1_H

#include <stddef.h>
#include <stdint.h>

/* RFC 2104 HMAC and RFC 5869 HKDF over SHA-1, written once and run on either
 * backend's SHA-1. Internal to src/crypto: the backends call it from their
 * hkdf_sha1 entry. Nothing is allocated: the hash contexts live on the stack
 * and are copied with memcpy, so a backend's context must be plain data. */

#define SS_SHA1_LEN 20
#define SS_SHA1_BLOCK 64
#define SS_SHA1_CTX_MAX 128

typedef struct ss_sha1_ops {
	size_t ctx_size; /* <= SS_SHA1_CTX_MAX */
	void (*init)(void *ctx);
	void (*update)(void *ctx, const uint8_t *p, size_t n);
	void (*final)(void *ctx, uint8_t out[SS_SHA1_LEN]);
} ss_sha1_ops_t;

/* SHA-1 from mbedtls, always available. */
extern const ss_sha1_ops_t ss_sha1_mbedtls;

/* HKDF-SHA1(salt, ikm, info) -> okm_len bytes. salt may be NULL when
 * salt_len is 0, info likewise. 0, or -EINVAL when okm_len > 255 * 20. */
int ss_hkdf_sha1_with(const ss_sha1_ops_t *h, const uint8_t *salt, size_t salt_len,
		      const uint8_t *ikm, size_t ikm_len, const uint8_t *info, size_t info_len,
		      uint8_t *okm, size_t okm_len);

#endif
