/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_BACKENDS_H
#define SS_CRYPTO_BACKENDS_H

#include "crypto/primitives.h"

/* Every backend table this build has, the libraries' and our own code's
 * over them, for the tests and benchmarks that run or pick each. The
 * programs take ss_crypto_default(). */
static const ss_crypto_backend_t *const ss_crypto_backends[] = {
    &ss_crypto_sodium,          /* libsodium, mbedtls */
    &ss_crypto_sodium_portable, /* AES-GCM from mbedtls only */
#ifdef SS_HAVE_OPENSSL
    &ss_crypto_openssl,
#endif
#ifdef SS_OWN_CRYPTO
    &ss_crypto_sodium_own,
#ifdef SS_HAVE_OPENSSL
    &ss_crypto_openssl_own,
#endif
#endif
};

#endif
