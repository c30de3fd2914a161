/* SPDX-License-Identifier: MIT */
/* The fast backend: libcrypto EVP for AES-GCM, ChaCha20-Poly1305 and the AES
 * block cipher. XChaCha20-Poly1305 is not in OpenSSL and comes from
 * libsodium. */
#ifdef SS_HAVE_OPENSSL

/* SHA-1 low-level calls: the only allocation-free way to hash with
 * libcrypto, and HKDF runs once per connection and once per datagram. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "crypto/primitives.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sodium.h>

#include "crypto/cpu.h"
#include "crypto/hkdf_sha1.h"

typedef struct {
	EVP_CIPHER_CTX *ctx;
	const EVP_CIPHER *cipher; /* what ctx is set up for, NULL if nothing yet */
	uint8_t key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES]; /* XChaCha20's */
} ossl_state_t;

_Static_assert(sizeof(ossl_state_t) <= SS_AEAD_LIB_STATE_SIZE, "grow SS_AEAD_LIB_STATE_SIZE");

static ossl_state_t *st(ss_aead_t *a)
{
	return (ossl_state_t *)a->state;
}

/* libcrypto's AVX-512 ChaCha20-Poly1305 returns with the upper halves of
 * the vector registers dirty. Until a vzeroupper, every legacy-SSE
 * instruction after it pays a transition penalty: the SHA-1 of the next
 * datagram's HKDF ran at half speed, and each datagram cost 2 µs more
 * through both relays. Clearing the state after every EVP call, whatever
 * the cipher, costs a cycle; test_primitives checks it stays clean. */
static inline void vec_clean(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (ss_cpu_has(SS_CPU_AVX))
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

static const char *ossl_aead_impl(ss_aead_alg_t alg, size_t key_len, char *buf, size_t len)
{
	(void)key_len;
	if (alg == SS_AEAD_XCHACHA20_POLY1305)
		snprintf(buf, len, "libsodium %s", sodium_version_string());
	else
#if OPENSSL_VERSION_MAJOR >= 3
		snprintf(buf, len, "OpenSSL %s EVP", OpenSSL_version(OPENSSL_VERSION_STRING));
#else
		snprintf(buf, len, "%s EVP", OpenSSL_version(OPENSSL_VERSION));
#endif
	return buf;
}

static const EVP_CIPHER *cipher_for(ss_aead_alg_t alg, size_t key_len)
{
	switch (alg) {
	case SS_AEAD_AES_GCM:
		if (key_len == 16)
			return EVP_aes_128_gcm();
		if (key_len == 24)
			return EVP_aes_192_gcm();
		if (key_len == 32)
			return EVP_aes_256_gcm();
		return NULL;
	case SS_AEAD_CHACHA20_POLY1305:
		return key_len == 32 ? EVP_chacha20_poly1305() : NULL;
	default:
		return NULL;
	}
}

static int ossl_aead_init(ss_aead_t *a, ss_aead_alg_t alg)
{
	ossl_state_t *s;

	if (alg != SS_AEAD_AES_GCM && alg != SS_AEAD_CHACHA20_POLY1305 &&
	    alg != SS_AEAD_XCHACHA20_POLY1305)
		return -ENOTSUP;
	memset(a, 0, sizeof(*a));
	a->alg = alg;
	if (alg == SS_AEAD_XCHACHA20_POLY1305)
		return 0;
	s = st(a);
	s->ctx = EVP_CIPHER_CTX_new();
	return s->ctx ? 0 : -ENOMEM;
}

static void ossl_aead_wipe(ss_aead_t *a)
{
	ossl_state_t *s = st(a);
	static const uint8_t zero[SS_AEAD_MAX_KEY_LEN];

	sodium_memzero(s->key, sizeof(s->key));
	/* Overwrite the key schedule inside the context with an all-zero key,
	 * keeping the context for the next connection. */
	if (s->ctx && s->cipher)
		(void)EVP_CipherInit_ex(s->ctx, NULL, NULL, zero, NULL, 1);
	a->keyed = false;
	a->key_len = 0;
}

static int ossl_aead_setkey(ss_aead_t *a, const uint8_t *key, size_t key_len)
{
	ossl_state_t *s = st(a);
	const EVP_CIPHER *cipher;

	a->keyed = false;
	if (a->alg == SS_AEAD_XCHACHA20_POLY1305) {
		if (key_len != sizeof(s->key))
			goto bad;
		memcpy(s->key, key, key_len);
		goto keyed;
	}
	cipher = cipher_for(a->alg, key_len);
	if (!cipher || !s->ctx)
		goto bad;
	if (cipher == s->cipher) {
		/* Same algorithm: only the key schedule changes, no allocation. */
		if (!EVP_CipherInit_ex(s->ctx, NULL, NULL, key, NULL, 1))
			goto bad;
	} else {
		/* First key of this slot (or a new key size): set the cipher up. */
		EVP_CIPHER_CTX_reset(s->ctx);
		s->cipher = NULL;
		if (!EVP_CipherInit_ex(s->ctx, cipher, NULL, key, NULL, 1))
			goto bad;
		s->cipher = cipher;
	}
keyed:
	a->key_len = (uint8_t)key_len;
	a->keyed = true;
	return 0;
bad:
	ossl_aead_wipe(a);
	return -EINVAL;
}

static int ossl_aead_seal(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			  size_t len)
{
	ossl_state_t *s = st(a);
	int outl, rc = -EINVAL;

	if (!a->keyed || len > INT_MAX - SS_AEAD_TAG_LEN)
		goto fail;
	if (a->alg == SS_AEAD_XCHACHA20_POLY1305) {
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(out, out + len, NULL, in, len,
								    NULL, 0, NULL, nonce, s->key);
		return 0;
	}
	rc = -EIO;
	if (!EVP_CipherInit_ex(s->ctx, NULL, NULL, NULL, nonce, 1))
		goto fail;
	if (len > 0 && !EVP_CipherUpdate(s->ctx, out, &outl, in, (int)len))
		goto fail;
	/* Stream-like AEAD modes write nothing here. */
	if (!EVP_CipherFinal_ex(s->ctx, out + len, &outl))
		goto fail;
	if (!EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_GET_TAG, SS_AEAD_TAG_LEN, out + len))
		goto fail;
	vec_clean();
	return 0;
fail:
	vec_clean();
	sodium_memzero(out, len + SS_AEAD_TAG_LEN);
	return rc;
}

static int ossl_aead_open(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			  size_t len)
{
	ossl_state_t *s = st(a);
	size_t n = len < SS_AEAD_TAG_LEN ? 0 : len - SS_AEAD_TAG_LEN;
	int outl, rc = -EBADMSG;

	if (!a->keyed || len > INT_MAX) {
		rc = -EINVAL;
		goto fail;
	}
	if (len < SS_AEAD_TAG_LEN)
		goto fail;
	if (a->alg == SS_AEAD_XCHACHA20_POLY1305) {
		if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(out, NULL, in, n, in + n,
									NULL, 0, nonce, s->key))
			goto fail;
		return 0;
	}
	rc = -EIO;
	if (!EVP_CipherInit_ex(s->ctx, NULL, NULL, NULL, nonce, 0))
		goto fail;
	/* Set before the update: in place, the tag sits right after the
	 * ciphertext and is never overwritten, but out may differ from in. */
	if (!EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_TAG, SS_AEAD_TAG_LEN, (void *)(in + n)))
		goto fail;
	if (n > 0 && !EVP_CipherUpdate(s->ctx, out, &outl, in, (int)n))
		goto fail;
	/* A tag that does not match fails here, after the update has written
	 * the unauthenticated plaintext to out. */
	if (EVP_CipherFinal_ex(s->ctx, out + n, &outl) <= 0) {
		rc = -EBADMSG;
		goto fail;
	}
	vec_clean();
	return 0;
fail:
	vec_clean();
	sodium_memzero(out, n);
	return rc;
}

static void ossl_aead_free(ss_aead_t *a)
{
	ossl_state_t *s = st(a);

	sodium_memzero(s->key, sizeof(s->key));
	/* EVP_CIPHER_CTX_free clears the key schedule before freeing. */
	EVP_CIPHER_CTX_free(s->ctx);
	s->ctx = NULL;
	s->cipher = NULL;
	a->keyed = false;
	a->key_len = 0;
}

#ifndef OPENSSL_NO_DEPRECATED_3_0
_Static_assert(sizeof(SHA_CTX) <= SS_SHA1_CTX_MAX, "SHA-1 context too large");

static void sha1_ossl_init(void *ctx)
{
	SHA1_Init(ctx);
}

static void sha1_ossl_update(void *ctx, const uint8_t *p, size_t n)
{
	SHA1_Update(ctx, p, n);
}

static void sha1_ossl_final(void *ctx, uint8_t out[SS_SHA1_LEN])
{
	SHA1_Final(out, ctx);
}

static const ss_sha1_ops_t sha1_ossl = {
    .ctx_size = sizeof(SHA_CTX),
    .init = sha1_ossl_init,
    .update = sha1_ossl_update,
    .final = sha1_ossl_final,
};
#define SHA1_OPS (&sha1_ossl)
#else
#define SHA1_OPS (&ss_sha1_mbedtls)
#endif

static int ossl_hkdf_sha1(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
			  const uint8_t *info, size_t info_len, uint8_t *okm, size_t okm_len)
{
	return ss_hkdf_sha1_with(SHA1_OPS, salt, salt_len, ikm, ikm_len, info, info_len, okm,
				 okm_len);
}

/* AES-ECB without padding, one context per direction. The contexts are made
 * by aes_init; a new key of the same size only reloads the schedule, so
 * setkey and the per-block calls never allocate after the first key. */
typedef struct {
	EVP_CIPHER_CTX *ctx[2]; /* [0] decrypts, [1] encrypts (EVP's enc flag) */
	const EVP_CIPHER *cipher;
} ossl_aes_t;

_Static_assert(sizeof(ossl_aes_t) <= SS_AES_STATE_SIZE, "grow SS_AES_STATE_SIZE");

static ossl_aes_t *aes_st(ss_aes_block_t *b)
{
	return (ossl_aes_t *)b->state;
}

static void ossl_aes_free(ss_aes_block_t *b)
{
	ossl_aes_t *s = aes_st(b);

	/* EVP_CIPHER_CTX_free clears the key schedule before freeing. */
	for (int enc = 0; enc < 2; enc++) {
		EVP_CIPHER_CTX_free(s->ctx[enc]);
		s->ctx[enc] = NULL;
	}
	s->cipher = NULL;
	b->keyed = false;
	b->key_len = 0;
}

static int ossl_aes_init(ss_aes_block_t *b)
{
	ossl_aes_t *s = aes_st(b);

	memset(b, 0, sizeof(*b));
	s->ctx[0] = EVP_CIPHER_CTX_new();
	s->ctx[1] = EVP_CIPHER_CTX_new();
	if (!s->ctx[0] || !s->ctx[1]) {
		ossl_aes_free(b);
		return -ENOMEM;
	}
	return 0;
}

static int ossl_aes_setkey(ss_aes_block_t *b, const uint8_t *key, size_t key_len)
{
	ossl_aes_t *s = aes_st(b);
	const EVP_CIPHER *cipher = NULL;

	if (key_len == 16)
		cipher = EVP_aes_128_ecb();
	else if (key_len == 32)
		cipher = EVP_aes_256_ecb();
	b->keyed = false;
	if (!cipher || !s->ctx[0] || !s->ctx[1])
		return -EINVAL;
	for (int enc = 0; enc < 2; enc++) {
		EVP_CIPHER_CTX *ctx = s->ctx[enc];

		if (cipher == s->cipher) {
			if (!EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, enc))
				goto bad;
		} else {
			EVP_CIPHER_CTX_reset(ctx);
			if (!EVP_CipherInit_ex(ctx, cipher, NULL, key, NULL, enc))
				goto bad;
		}
		/* Whole blocks only: nothing is held back for padding. */
		if (!EVP_CIPHER_CTX_set_padding(ctx, 0))
			goto bad;
	}
	s->cipher = cipher;
	b->key_len = (uint8_t)key_len;
	b->keyed = true;
	return 0;
bad:
	/* Neither context is trusted to match the other now. */
	EVP_CIPHER_CTX_reset(s->ctx[0]);
	EVP_CIPHER_CTX_reset(s->ctx[1]);
	s->cipher = NULL;
	return -EINVAL;
}

static int ossl_aes_crypt(ss_aes_block_t *b, int enc, const uint8_t *in, uint8_t *out)
{
	int outl = 0;

	if (!b->keyed)
		return -EINVAL;
	if (!EVP_CipherUpdate(aes_st(b)->ctx[enc], out, &outl, in, SS_AES_BLOCK_LEN) ||
	    outl != SS_AES_BLOCK_LEN)
		return -EIO;
	return 0;
}

static int ossl_aes_encrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			    uint8_t out[static SS_AES_BLOCK_LEN])
{
	return ossl_aes_crypt(b, 1, in, out);
}

static int ossl_aes_decrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			    uint8_t out[static SS_AES_BLOCK_LEN])
{
	return ossl_aes_crypt(b, 0, in, out);
}

static void ossl_aes_wipe(ss_aes_block_t *b)
{
	static const uint8_t zero[32];
	ossl_aes_t *s = aes_st(b);

	/* Overwrite both schedules with an all-zero key of the same size,
	 * keeping the contexts for the next key. */
	if (s->cipher && b->keyed)
		for (int enc = 0; enc < 2; enc++)
			(void)EVP_CipherInit_ex(s->ctx[enc], NULL, NULL, zero, NULL, enc);
	b->keyed = false;
	b->key_len = 0;
}

const ss_crypto_backend_t ss_crypto_openssl = {
    .name = "openssl",
    .aead_impl = ossl_aead_impl,
    .aead_init = ossl_aead_init,
    .aead_setkey = ossl_aead_setkey,
    .aead_seal = ossl_aead_seal,
    .aead_open = ossl_aead_open,
    .aead_free = ossl_aead_free,
    .hkdf_sha1 = ossl_hkdf_sha1,
    .aead_wipe = ossl_aead_wipe,
    .aes_init = ossl_aes_init,
    .aes_setkey = ossl_aes_setkey,
    .aes_encrypt = ossl_aes_encrypt,
    .aes_decrypt = ossl_aes_decrypt,
    .aes_wipe = ossl_aes_wipe,
    .aes_free = ossl_aes_free,
};

#endif /* SS_HAVE_OPENSSL */
