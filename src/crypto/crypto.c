/* SPDX-License-Identifier: MIT */
#include "crypto/primitives.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "crypto/method.h"

int ss_crypto_global_init(void)
{
	/* 1 means it was already initialised, which is fine. */
	return sodium_init() < 0 ? -1 : 0;
}

#ifdef SS_CRYPTO_DEFAULT_OPENSSL
#define LIB_DEFAULT ss_crypto_openssl
#define OWN_DEFAULT ss_crypto_openssl_own
#else
#define LIB_DEFAULT ss_crypto_sodium
#define OWN_DEFAULT ss_crypto_sodium_own
#endif

#ifdef SS_OWN_CRYPTO
/* Whether the environment leaves our own code on: SS_OWN_CRYPTO unset, or
 * anything but 0, off and no. *value gets the variable's value. */
static bool own_wanted(const char **value)
{
	const char *v = getenv("SS_OWN_CRYPTO");

	*value = v;
	return v == NULL ||
	       !(strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0);
}
#endif

const ss_crypto_backend_t *ss_crypto_default(void)
{
#ifdef SS_OWN_CRYPTO
	const char *v;

	if (own_wanted(&v))
		return &OWN_DEFAULT;
#endif
	return &LIB_DEFAULT;
}

const char *ss_crypto_own_setting(const ss_crypto_backend_t *be, char *buf, size_t len)
{
#ifdef SS_OWN_CRYPTO
	const char *v;

	if (be->lib != NULL)
		snprintf(buf, len,
			 "own code built in (SS_OWN_CRYPTO=ON) and in use; SS_OWN_CRYPTO=0 in the "
			 "environment turns it off");
	else if (!own_wanted(&v))
		snprintf(buf, len,
			 "own code built in (SS_OWN_CRYPTO=ON), turned off by "
			 "SS_OWN_CRYPTO=%.8s in the environment",
			 v);
	else
		snprintf(buf, len,
			 "own code built in (SS_OWN_CRYPTO=ON), not used by the %s backend",
			 be->name);
#else
	(void)be;
	snprintf(buf, len, "own code not built (SS_OWN_CRYPTO=OFF)");
#endif
	return buf;
}

const char *ss_crypto_describe(const ss_crypto_backend_t *be, const ss_method_t *m, char *buf,
			       size_t len)
{
	char impl[128], alg[32];
	int n;

	if (m->kind == SS_METHOD_NONE) {
		snprintf(buf, len, "no encryption");
		return buf;
	}
	if (m->alg == SS_AEAD_AES_GCM)
		snprintf(alg, sizeof(alg), "AES-%u-GCM", m->key_len * 8u);
	else
		snprintf(alg, sizeof(alg), "%s",
			 m->alg == SS_AEAD_CHACHA20_POLY1305 ? "ChaCha20-Poly1305"
							     : "XChaCha20-Poly1305");
	n = snprintf(buf, len, "%s: %s", alg,
		     be->aead_impl(m->alg, m->key_len, impl, sizeof(impl)));
	/* SIP022 seals ChaCha20 datagrams with XChaCha20-Poly1305. */
	if (m->kind == SS_METHOD_2022 && m->alg == SS_AEAD_CHACHA20_POLY1305 && n > 0 &&
	    (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; XChaCha20-Poly1305 (UDP): %s",
			 be->aead_impl(SS_AEAD_XCHACHA20_POLY1305, m->key_len, impl, sizeof(impl)));
	return buf;
}

bool ss_ct_equal(const void *a, const void *b, size_t len)
{
	return sodium_memcmp(a, b, len) == 0;
}

void ss_wipe(void *buf, size_t len)
{
	sodium_memzero(buf, len);
}
