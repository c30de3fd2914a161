/* SPDX-License-Identifier: MIT */
/* The reference backend: libsodium for ChaCha20-Poly1305, XChaCha20-Poly1305
 * and, on CPUs with AES-NI, AES-256-GCM; mbedtls for every other AES-GCM and
 * for the AES block cipher. The portable variant takes AES-GCM from mbedtls
 * only. */
#include "crypto/primitives.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/aes.h>
#include <mbedtls/gcm.h>
#include <mbedtls/version.h>
#include <sodium.h>

#include "crypto/hkdf_sha1.h"

typedef enum {
	IMPL_NONE = 0, /* a zeroed ss_aead_t, or no key yet */
	IMPL_SODIUM_AES,
	IMPL_MBEDTLS_GCM,
	IMPL_CHACHA,
	IMPL_XCHACHA,
} impl_t;

typedef struct {
	union {
		crypto_aead_aes256gcm_state aes;
		mbedtls_gcm_context gcm;
		uint8_t key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
	} u;
	uint8_t impl;
	bool portable; /* never use libsodium's AES-GCM */
} sodium_state_t;

_Static_assert(sizeof(sodium_state_t) <= SS_AEAD_LIB_STATE_SIZE, "grow SS_AEAD_LIB_STATE_SIZE");
_Static_assert(_Alignof(sodium_state_t) <= 64, "ss_aead_t.state is 64-aligned");
_Static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12, "IETF nonce");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == 24, "XChaCha nonce");
_Static_assert(crypto_aead_aes256gcm_NPUBBYTES == 12, "GCM nonce");

static sodium_state_t *st(ss_aead_t *a)
{
	return (sodium_state_t *)a->state;
}

/* Whether AES-GCM with a key_len-byte key runs on libsodium's AES-NI code. */
static bool sodium_aes_ok(size_t key_len, bool portable)
{
	return key_len == 32 && !portable && crypto_aead_aes256gcm_is_available();
}

static const char *impl_name(ss_aead_alg_t alg, size_t key_len, bool portable, char *buf,
			     size_t len)
{
	if (alg == SS_AEAD_AES_GCM && !sodium_aes_ok(key_len, portable))
		snprintf(buf, len, "Mbed TLS %s", MBEDTLS_VERSION_STRING);
	else
		snprintf(buf, len, "libsodium %s", sodium_version_string());
	return buf;
}

static const char *sodium_aead_impl(ss_aead_alg_t alg, size_t key_len, char *buf, size_t len)
{
	return impl_name(alg, key_len, false, buf, len);
}

static const char *portable_aead_impl(ss_aead_alg_t alg, size_t key_len, char *buf, size_t len)
{
	return impl_name(alg, key_len, true, buf, len);
}

/* Forgets the key; frees what mbedtls allocated in its last setkey. */
static void state_clear(sodium_state_t *s)
{
	if (s->impl == IMPL_MBEDTLS_GCM)
		mbedtls_gcm_free(&s->u.gcm);
	sodium_memzero(&s->u, sizeof(s->u));
	s->impl = IMPL_NONE;
}

static int init_common(ss_aead_t *a, ss_aead_alg_t alg, bool portable)
{
	if (alg != SS_AEAD_AES_GCM && alg != SS_AEAD_CHACHA20_POLY1305 &&
	    alg != SS_AEAD_XCHACHA20_POLY1305)
		return -ENOTSUP;
	memset(a, 0, sizeof(*a));
	a->alg = alg;
	st(a)->portable = portable;
	return 0;
}

static int sodium_aead_init(ss_aead_t *a, ss_aead_alg_t alg)
{
	return init_common(a, alg, false);
}

static int portable_aead_init(ss_aead_t *a, ss_aead_alg_t alg)
{
	return init_common(a, alg, true);
}

static int sodium_aead_setkey(ss_aead_t *a, const uint8_t *key, size_t key_len)
{
	sodium_state_t *s = st(a);

	a->keyed = false;
	switch (a->alg) {
	case SS_AEAD_AES_GCM:
		if (key_len != 16 && key_len != 24 && key_len != 32)
			goto bad;
		if (sodium_aes_ok(key_len, s->portable)) {
			if (s->impl != IMPL_SODIUM_AES)
				state_clear(s);
			crypto_aead_aes256gcm_beforenm(&s->u.aes, key);
			s->impl = IMPL_SODIUM_AES;
			break;
		}
		if (s->impl != IMPL_MBEDTLS_GCM) {
			state_clear(s);
			mbedtls_gcm_init(&s->u.gcm);
			s->impl = IMPL_MBEDTLS_GCM;
		}
		/* mbedtls_gcm_setkey releases the previous key itself. */
		if (mbedtls_gcm_setkey(&s->u.gcm, MBEDTLS_CIPHER_ID_AES, key,
				       (unsigned)key_len * 8) != 0)
			goto bad;
		break;
	case SS_AEAD_CHACHA20_POLY1305:
	case SS_AEAD_XCHACHA20_POLY1305:
		if (key_len != sizeof(s->u.key))
			goto bad;
		memcpy(s->u.key, key, key_len);
		s->impl = a->alg == SS_AEAD_CHACHA20_POLY1305 ? IMPL_CHACHA : IMPL_XCHACHA;
		break;
	default:
		goto bad;
	}
	a->key_len = (uint8_t)key_len;
	a->keyed = true;
	return 0;
bad:
	/* No half-keyed state: seal and open refuse until the next setkey. */
	state_clear(s);
	return -EINVAL;
}

static int sodium_aead_seal(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			    size_t len)
{
	sodium_state_t *s = st(a);
	uint8_t *tag = out + len;

	switch (s->impl) {
	case IMPL_SODIUM_AES:
		crypto_aead_aes256gcm_encrypt_detached_afternm(out, tag, NULL, in, len, NULL, 0,
							       NULL, nonce, &s->u.aes);
		return 0;
	case IMPL_MBEDTLS_GCM:
		if (mbedtls_gcm_crypt_and_tag(&s->u.gcm, MBEDTLS_GCM_ENCRYPT, len, nonce, 12, NULL,
					      0, in, out, SS_AEAD_TAG_LEN, tag) != 0)
			break;
		return 0;
	case IMPL_CHACHA:
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, tag, NULL, in, len, NULL, 0,
								   NULL, nonce, s->u.key);
		return 0;
	case IMPL_XCHACHA:
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(out, tag, NULL, in, len, NULL,
								    0, NULL, nonce, s->u.key);
		return 0;
	default:
		break;
	}
	sodium_memzero(out, len + SS_AEAD_TAG_LEN);
	return s->impl == IMPL_NONE ? -EINVAL : -EIO;
}

static int sodium_aead_open(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			    size_t len)
{
	sodium_state_t *s = st(a);
	size_t n = len < SS_AEAD_TAG_LEN ? 0 : len - SS_AEAD_TAG_LEN;
	const uint8_t *tag = in + n;
	int rc = -1;

	if (s->impl != IMPL_NONE && len < SS_AEAD_TAG_LEN)
		return -EBADMSG;
	switch (s->impl) {
	case IMPL_SODIUM_AES:
		rc = crypto_aead_aes256gcm_decrypt_detached_afternm(out, NULL, in, n, tag, NULL, 0,
								    nonce, &s->u.aes);
		break;
	case IMPL_MBEDTLS_GCM:
		rc = mbedtls_gcm_auth_decrypt(&s->u.gcm, n, nonce, 12, NULL, 0, tag,
					      SS_AEAD_TAG_LEN, in, out);
		break;
	case IMPL_CHACHA:
		rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(out, NULL, in, n, tag, NULL,
									0, nonce, s->u.key);
		break;
	case IMPL_XCHACHA:
		rc = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(out, NULL, in, n, tag,
									 NULL, 0, nonce, s->u.key);
		break;
	default:
		break;
	}
	if (rc == 0)
		return 0;
	/* The libraries may have zeroed out already: not relied on. */
	sodium_memzero(out, n);
	return s->impl == IMPL_NONE ? -EINVAL : -EBADMSG;
}

static void sodium_aead_wipe(ss_aead_t *a)
{
	state_clear(st(a));
	a->keyed = false;
	a->key_len = 0;
}

static void sodium_aead_free(ss_aead_t *a)
{
	/* Nothing outlives a wipe here: mbedtls allocates per key. */
	sodium_aead_wipe(a);
}

static int sodium_hkdf_sha1(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
			    size_t ikm_len, const uint8_t *info, size_t info_len, uint8_t *okm,
			    size_t okm_len)
{
	return ss_hkdf_sha1_with(&ss_sha1_mbedtls, salt, salt_len, ikm, ikm_len, info, info_len,
				 okm, okm_len);
}

/* Both schedules live inside the contexts (in 2.x and 3.x alike): no
 * allocation. */
typedef struct {
	mbedtls_aes_context enc, dec;
} mbed_aes_t;

_Static_assert(sizeof(mbed_aes_t) <= SS_AES_STATE_SIZE, "grow SS_AES_STATE_SIZE");
_Static_assert(_Alignof(mbed_aes_t) <= 16, "ss_aes_block_t.state is 16-aligned");

static mbed_aes_t *aes_st(ss_aes_block_t *b)
{
	return (mbed_aes_t *)b->state;
}

static int mbed_aes_init(ss_aes_block_t *b)
{
	memset(b, 0, sizeof(*b));
	mbedtls_aes_init(&aes_st(b)->enc);
	mbedtls_aes_init(&aes_st(b)->dec);
	return 0;
}

static void mbed_aes_wipe(ss_aes_block_t *b)
{
	mbed_aes_t *s = aes_st(b);

	/* mbedtls_aes_free zeroes the context; init makes it usable again. */
	mbedtls_aes_free(&s->enc);
	mbedtls_aes_free(&s->dec);
	mbedtls_aes_init(&s->enc);
	mbedtls_aes_init(&s->dec);
	b->keyed = false;
	b->key_len = 0;
}

static int mbed_aes_setkey(ss_aes_block_t *b, const uint8_t *key, size_t key_len)
{
	mbed_aes_t *s = aes_st(b);

	b->keyed = false;
	if ((key_len != 16 && key_len != 32) ||
	    mbedtls_aes_setkey_enc(&s->enc, key, (unsigned)key_len * 8) != 0 ||
	    mbedtls_aes_setkey_dec(&s->dec, key, (unsigned)key_len * 8) != 0) {
		mbed_aes_wipe(b);
		return -EINVAL;
	}
	b->key_len = (uint8_t)key_len;
	b->keyed = true;
	return 0;
}

static int mbed_aes_encrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			    uint8_t out[static SS_AES_BLOCK_LEN])
{
	if (!b->keyed)
		return -EINVAL;
	return mbedtls_aes_crypt_ecb(&aes_st(b)->enc, MBEDTLS_AES_ENCRYPT, in, out) == 0 ? 0 : -EIO;
}

static int mbed_aes_decrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			    uint8_t out[static SS_AES_BLOCK_LEN])
{
	if (!b->keyed)
		return -EINVAL;
	return mbedtls_aes_crypt_ecb(&aes_st(b)->dec, MBEDTLS_AES_DECRYPT, in, out) == 0 ? 0 : -EIO;
}

static void mbed_aes_free(ss_aes_block_t *b)
{
	mbed_aes_t *s = aes_st(b);

	mbedtls_aes_free(&s->enc);
	mbedtls_aes_free(&s->dec);
	b->keyed = false;
	b->key_len = 0;
}

const ss_crypto_backend_t ss_crypto_sodium = {
    .name = "sodium",
    .aead_impl = sodium_aead_impl,
    .aead_init = sodium_aead_init,
    .aead_setkey = sodium_aead_setkey,
    .aead_seal = sodium_aead_seal,
    .aead_open = sodium_aead_open,
    .aead_free = sodium_aead_free,
    .hkdf_sha1 = sodium_hkdf_sha1,
    .aead_wipe = sodium_aead_wipe,
    .aes_init = mbed_aes_init,
    .aes_setkey = mbed_aes_setkey,
    .aes_encrypt = mbed_aes_encrypt,
    .aes_decrypt = mbed_aes_decrypt,
    .aes_wipe = mbed_aes_wipe,
    .aes_free = mbed_aes_free,
};

const ss_crypto_backend_t ss_crypto_sodium_portable = {
    .name = "sodium-portable",
    .aead_impl = portable_aead_impl,
    .aead_init = portable_aead_init,
    .aead_setkey = sodium_aead_setkey,
    .aead_seal = sodium_aead_seal,
    .aead_open = sodium_aead_open,
    .aead_free = sodium_aead_free,
    .hkdf_sha1 = sodium_hkdf_sha1,
    .aead_wipe = sodium_aead_wipe,
    .aes_init = mbed_aes_init,
    .aes_setkey = mbed_aes_setkey,
    .aes_encrypt = mbed_aes_encrypt,
    .aes_decrypt = mbed_aes_decrypt,
    .aes_wipe = mbed_aes_wipe,
    .aes_free = mbed_aes_free,
};
