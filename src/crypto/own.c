/* SPDX-License-Identifier: MIT */
/* Our own code for a primitive, routed once, above the library backends: a
 * table per library (ss_crypto_openssl_own, ss_crypto_sodium_own) of the
 * same shape as the library's, whose setkey decides per key what serves it.
 *   - AES-128/256-GCM on CPUs with VAES and AVX-512: gcm_vaes.c alone. Its
 *     key schedule takes the place of the library's state, which is set up
 *     only once a key needs the library (AES-192), so an idle connection
 *     carries no library context it does not use.
 *   - Everything else (AES-192-GCM, ChaCha20-Poly1305, XChaCha20-Poly1305,
 *     CPUs without VAES), and the AES block cipher and HKDF: the library,
 *     straight through.
 * docs/performance.md ("Our own crypto code") has the measurements behind
 * it, and those of the code that did not earn its place; -DSS_OWN_CRYPTO=OFF
 * leaves this file out of the build and the environment variable
 * SS_OWN_CRYPTO=0 out of the programs (crypto.c). */
#include "crypto/primitives.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crypto/gcm_vaes.h"

/* ss_aead_t.route */
enum {
	ROUTE_NONE = 0, /* the library not set up: a zeroed or fresh state */
	ROUTE_LIB,      /* the library serves everything */
	ROUTE_VAES,     /* gcm_vaes.c; the library not set up */
};

_Static_assert(sizeof(ss_vgcm_t) <= SS_AEAD_STATE_SIZE, "grow SS_AEAD_STATE_SIZE");
_Static_assert(_Alignof(ss_vgcm_t) <= 64, "ss_aead_t.state is 64-aligned");

static ss_vgcm_t *vg(ss_aead_t *a)
{
	return (ss_vgcm_t *)a->state;
}

/* What serves alg with a key_len-byte key on this CPU. */
static int own_route(ss_aead_alg_t alg, size_t key_len)
{
	if (alg == SS_AEAD_AES_GCM && (key_len == 16 || key_len == 32) && ss_vgcm_available())
		return ROUTE_VAES;
	return ROUTE_LIB;
}

static const char *own_aead_impl(const ss_crypto_backend_t *lib, ss_aead_alg_t alg, size_t key_len,
				 char *buf, size_t len)
{
	if (own_route(alg, key_len) != ROUTE_VAES)
		return lib->aead_impl(alg, key_len, buf, len);
	snprintf(buf, len, "own VAES/AVX-512 code");
	return buf;
}

/* Sets the library up in a; its aead_init zeroes a, our fields too. */
static int own_lib_init(ss_aead_t *a, ss_aead_alg_t alg, const ss_crypto_backend_t *lib)
{
	int rc = lib->aead_init(a, alg);

	a->lib = lib;
	a->route = rc == 0 ? ROUTE_LIB : ROUTE_NONE;
	return rc;
}

static int own_aead_init(ss_aead_t *a, ss_aead_alg_t alg, const ss_crypto_backend_t *lib)
{
	if (alg == SS_AEAD_AES_GCM && ss_vgcm_available()) {
		/* Our code may serve every key: the library waits for one that
		 * needs it. */
		memset(a, 0, sizeof(*a));
		a->alg = alg;
		a->lib = lib;
		return 0;
	}
	return own_lib_init(a, alg, lib);
}

static int own_aead_setkey(ss_aead_t *a, const uint8_t *key, size_t key_len)
{
	int route = own_route(a->alg, key_len), rc;

	a->keyed = false;
	if (route == ROUTE_VAES) {
		/* The library's state gives way to our key schedule. */
		if (a->route == ROUTE_LIB)
			a->lib->aead_free(a);
		a->route = ROUTE_VAES;
		/* Cannot fail: own_route checked the length and the CPU. */
		if (ss_vgcm_setkey(vg(a), key, key_len) != 0)
			return -EINVAL;
		a->key_len = (uint8_t)key_len;
		a->keyed = true;
		return 0;
	}
	if (a->route == ROUTE_VAES || a->route == ROUTE_NONE) {
		ss_vgcm_wipe(vg(a));
		rc = own_lib_init(a, a->alg, a->lib);
		if (rc < 0)
			return rc;
	}
	return a->lib->aead_setkey(a, key, key_len);
}

static int own_aead_seal(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			 size_t len)
{
	switch (a->route) {
	case ROUTE_VAES:
		return ss_vgcm_seal(vg(a), nonce, out, in, len);
	case ROUTE_LIB:
		return a->lib->aead_seal(a, nonce, out, in, len);
	default:
		ss_wipe(out, len + SS_AEAD_TAG_LEN);
		return -EINVAL;
	}
}

static int own_aead_open(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			 size_t len)
{
	switch (a->route) {
	case ROUTE_VAES:
		return ss_vgcm_open(vg(a), nonce, out, in, len);
	case ROUTE_LIB:
		return a->lib->aead_open(a, nonce, out, in, len);
	default:
		if (len > SS_AEAD_TAG_LEN)
			ss_wipe(out, len - SS_AEAD_TAG_LEN);
		return -EINVAL;
	}
}

static void own_aead_wipe(ss_aead_t *a)
{
	switch (a->route) {
	case ROUTE_VAES:
		ss_vgcm_wipe(vg(a));
		break;
	case ROUTE_LIB:
		a->lib->aead_wipe(a);
		break;
	default:
		break;
	}
	a->keyed = false;
	a->key_len = 0;
}

static void own_aead_free(ss_aead_t *a)
{
	own_aead_wipe(a);
	if (a->route == ROUTE_LIB)
		a->lib->aead_free(a);
	a->route = ROUTE_NONE;
}

/* The AES block cipher: the library's, straight through. */
static int own_aes_init(ss_aes_block_t *b, const ss_crypto_backend_t *lib)
{
	int rc = lib->aes_init(b);

	b->lib = lib;
	return rc;
}

static int own_aes_setkey(ss_aes_block_t *b, const uint8_t *key, size_t key_len)
{
	return b->lib ? b->lib->aes_setkey(b, key, key_len) : -EINVAL;
}

static int own_aes_encrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			   uint8_t out[static SS_AES_BLOCK_LEN])
{
	return b->lib ? b->lib->aes_encrypt(b, in, out) : -EINVAL;
}

static int own_aes_decrypt(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			   uint8_t out[static SS_AES_BLOCK_LEN])
{
	return b->lib ? b->lib->aes_decrypt(b, in, out) : -EINVAL;
}

static void own_aes_wipe(ss_aes_block_t *b)
{
	if (b->lib)
		b->lib->aes_wipe(b);
}

static void own_aes_free(ss_aes_block_t *b)
{
	if (b->lib)
		b->lib->aes_free(b);
}

/* One table over the library backend LIB: the entries that cannot find the
 * library in their state (set-up, naming, HKDF) call it by name. */
#define OWN_BACKEND(var, LIB, label)                                                               \
	static int var##_aead_init(ss_aead_t *a, ss_aead_alg_t alg)                                \
	{                                                                                          \
		return own_aead_init(a, alg, &LIB);                                                \
	}                                                                                          \
	static const char *var##_aead_impl(ss_aead_alg_t alg, size_t key_len, char *buf,           \
					   size_t len)                                             \
	{                                                                                          \
		return own_aead_impl(&LIB, alg, key_len, buf, len);                                \
	}                                                                                          \
	static int var##_aes_init(ss_aes_block_t *b)                                               \
	{                                                                                          \
		return own_aes_init(b, &LIB);                                                      \
	}                                                                                          \
	static int var##_hkdf_sha1(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,       \
				   size_t ikm_len, const uint8_t *info, size_t info_len,           \
				   uint8_t *okm, size_t okm_len)                                   \
	{                                                                                          \
		return LIB.hkdf_sha1(salt, salt_len, ikm, ikm_len, info, info_len, okm, okm_len);  \
	}                                                                                          \
	const ss_crypto_backend_t var = {                                                          \
	    .name = label,                                                                         \
	    .lib = &LIB,                                                                           \
	    .aead_impl = var##_aead_impl,                                                          \
	    .aead_init = var##_aead_init,                                                          \
	    .aead_setkey = own_aead_setkey,                                                        \
	    .aead_seal = own_aead_seal,                                                            \
	    .aead_open = own_aead_open,                                                            \
	    .aead_free = own_aead_free,                                                            \
	    .hkdf_sha1 = var##_hkdf_sha1,                                                          \
	    .aead_wipe = own_aead_wipe,                                                            \
	    .aes_init = var##_aes_init,                                                            \
	    .aes_setkey = own_aes_setkey,                                                          \
	    .aes_encrypt = own_aes_encrypt,                                                        \
	    .aes_decrypt = own_aes_decrypt,                                                        \
	    .aes_wipe = own_aes_wipe,                                                              \
	    .aes_free = own_aes_free,                                                              \
	}

OWN_BACKEND(ss_crypto_sodium_own, ss_crypto_sodium, "sodium+own");
#ifdef SS_HAVE_OPENSSL
OWN_BACKEND(ss_crypto_openssl_own, ss_crypto_openssl, "openssl+own");
#endif
