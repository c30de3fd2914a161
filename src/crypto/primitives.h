/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_PRIMITIVES_H
#define SS_CRYPTO_PRIMITIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Crypto primitives behind one interface, one backend per file:
 * primitives_sodium.c (libsodium + mbedtls, always built, the reference) and
 * primitives_openssl.c (libcrypto EVP, built when found), each the
 * libraries' code only. Our own code for a primitive (own.c, built with
 * SS_OWN_CRYPTO) wraps a library backend in a table of the same shape,
 * serving the keys it is measured to be faster on and handing everything
 * else to the library beneath. Generic code never looks inside
 * ss_aead_t or ss_aes_block_t; it only calls through the backend table. */

#define SS_AEAD_TAG_LEN 16
#define SS_AEAD_MAX_KEY_LEN 32
#define SS_AEAD_MAX_NONCE_LEN 24

typedef enum {
	SS_AEAD_AES_GCM,            /* key 16, 24 or 32; nonce 12 */
	SS_AEAD_CHACHA20_POLY1305,  /* IETF, key 32, nonce 12 */
	SS_AEAD_XCHACHA20_POLY1305, /* key 32, nonce 24 */
} ss_aead_alg_t;

/* Per-direction AEAD state. It lives inside the connection slot: aead_init
 * once per slot, aead_setkey per connection (re-keys without allocating where
 * the backend allows it), aead_free when the slot is destroyed. The storage is
 * opaque: a library backend's state takes at most SS_AEAD_LIB_STATE_SIZE
 * bytes of it; where our own code serves the key, its state (the VAES key
 * schedule, 576 bytes) takes the place of the library's. */
#define SS_AEAD_LIB_STATE_SIZE 544
#ifdef SS_OWN_CRYPTO
#define SS_AEAD_STATE_SIZE 576
#else
#define SS_AEAD_STATE_SIZE SS_AEAD_LIB_STATE_SIZE
#endif
struct ss_crypto_backend;
typedef struct ss_aead {
	ss_aead_alg_t alg;
	uint8_t key_len;
	bool keyed;
	/* Our own code's (own.c): which code serves the key, and the library
	 * backend beneath. A library's aead_init zeroes them with the rest;
	 * nothing else of a library's touches them. */
	uint8_t route;
	const struct ss_crypto_backend *lib;
	_Alignas(64) unsigned char state[SS_AEAD_STATE_SIZE];
} ss_aead_t;

/* AES on single 16-byte blocks (ECB, no padding), for the 2022 UDP separate
 * header and the identity headers. Set up once with aes_init, keyed with
 * aes_setkey (both the encryption and the decryption schedule, so a key set
 * once serves every block after it), released with aes_free. Once keyed it
 * must not be copied or moved: a backend may point into its own storage. */
#define SS_AES_BLOCK_LEN 16
#define SS_AES_STATE_SIZE 640
typedef struct ss_aes_block {
	uint8_t key_len;
	bool keyed;
	/* The library backend beneath our own code's table (own.c). */
	const struct ss_crypto_backend *lib;
	_Alignas(16) unsigned char state[SS_AES_STATE_SIZE];
} ss_aes_block_t;

typedef struct ss_crypto_backend {
	const char *name;
	/* The library backend our own code wraps in this table; NULL when this
	 * is a library backend. */
	const struct ss_crypto_backend *lib;
	/* What seals alg with a key_len-byte key on this CPU, one phrase into
	 * buf: "OpenSSL 3.0.19 EVP", "own VAES/AVX-512 code". Returns buf. */
	const char *(*aead_impl)(ss_aead_alg_t alg, size_t key_len, char *buf, size_t len);
	/* Prepares a for alg; 0 or -errno (-ENOMEM, -ENOTSUP). */
	int (*aead_init)(ss_aead_t *a, ss_aead_alg_t alg);
	/* Sets the key (key_len must match alg); 0 or -EINVAL (a is then
	 * unkeyed and holds nothing of the last key). Our own code's tables
	 * may set the library up here, for a key that needs it after one that
	 * did not: -ENOMEM then as from aead_init. */
	int (*aead_setkey)(ss_aead_t *a, const uint8_t *key, size_t key_len);
	/* Seals len bytes of in to out: len bytes of ciphertext then the 16-byte
	 * tag at out + len. in == out is allowed (in place); other overlaps are
	 * not. No associated data. Returns 0 or -errno (out's len + 16 bytes
	 * are then zero). */
	int (*aead_seal)(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			 size_t len);
	/* Opens len bytes (ciphertext followed by tag, len >= 16) of in to out,
	 * writing len - 16 bytes. in == out allowed. Returns 0, or -EBADMSG when
	 * authentication fails or len < 16, -EINVAL when a has no key; out's
	 * len - 16 bytes are then zero. */
	int (*aead_open)(ss_aead_t *a, const uint8_t *nonce, uint8_t *out, const uint8_t *in,
			 size_t len);
	/* Releases what aead_init took and wipes the key. Safe on a zeroed ss_aead_t. */
	void (*aead_free)(ss_aead_t *a);
	/* RFC 5869 HKDF with SHA-1. Returns 0 or -EINVAL. */
	int (*hkdf_sha1)(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
			 const uint8_t *info, size_t info_len, uint8_t *okm, size_t okm_len);
	/* Wipes the key (and anything derived from it) but keeps what
	 * aead_init took, so the next aead_setkey can reuse it. Safe on a
	 * zeroed or unkeyed ss_aead_t. */
	void (*aead_wipe)(ss_aead_t *a);
	/* Prepares b (not yet keyed); 0 or -ENOMEM. */
	int (*aes_init)(ss_aes_block_t *b);
	/* Sets a 16- or 32-byte key; 0, or -EINVAL for another length (b is
	 * then unkeyed). */
	int (*aes_setkey)(ss_aes_block_t *b, const uint8_t *key, size_t key_len);
	/* One block from in to out; in == out is allowed. 0, or -EINVAL when
	 * b has no key. */
	int (*aes_encrypt)(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			   uint8_t out[static SS_AES_BLOCK_LEN]);
	int (*aes_decrypt)(ss_aes_block_t *b, const uint8_t in[static SS_AES_BLOCK_LEN],
			   uint8_t out[static SS_AES_BLOCK_LEN]);
	/* Wipes the key schedules, keeping what aes_init took for the next
	 * aes_setkey. Safe on a zeroed or unkeyed ss_aes_block_t. */
	void (*aes_wipe)(ss_aes_block_t *b);
	/* Wipes and releases what aes_init took. Safe on a zeroed
	 * ss_aes_block_t, and twice. */
	void (*aes_free)(ss_aes_block_t *b);
} ss_crypto_backend_t;

extern const ss_crypto_backend_t ss_crypto_sodium;
/* The sodium backend as it runs on a CPU without AES-NI: AES-GCM always from
 * mbedtls. For tests, so that path is covered on any machine. */
extern const ss_crypto_backend_t ss_crypto_sodium_portable;
#ifdef SS_HAVE_OPENSSL
extern const ss_crypto_backend_t ss_crypto_openssl;
#endif
#ifdef SS_OWN_CRYPTO
/* The library backends with our own code where it serves (own.c). */
extern const ss_crypto_backend_t ss_crypto_sodium_own;
#ifdef SS_HAVE_OPENSSL
extern const ss_crypto_backend_t ss_crypto_openssl_own;
#endif
#endif

/* The backend the programs use: the library chosen at build time
 * (-DSS_CRYPTO=), wrapped in our own code where it was built
 * (-DSS_OWN_CRYPTO=ON) unless the environment variable SS_OWN_CRYPTO is 0,
 * off or no (read on every call). */
const ss_crypto_backend_t *ss_crypto_default(void);

/* One line on our own code for --version: whether it was built, and
 * whether be runs it (and if not, why). Returns buf. */
const char *ss_crypto_own_setting(const ss_crypto_backend_t *be, char *buf, size_t len);

/* Initialises the libraries once per process (sodium_init). 0 or -1. */
int ss_crypto_global_init(void);

/* Shared helpers, the same for both backends. */
void ss_random_bytes(void *buf, size_t len);
bool ss_ct_equal(const void *a, const void *b, size_t len);
void ss_wipe(void *buf, size_t len);

#endif
