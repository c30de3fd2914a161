/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_METHOD_H
#define SS_CRYPTO_METHOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/primitives.h"

#define SS_MAX_KEY_LEN 32
#define SS_MAX_SALT_LEN 32

typedef enum {
	SS_METHOD_AEAD, /* SIP004 */
	SS_METHOD_2022, /* SIP022, with SIP023 identity headers for the AES ones */
	SS_METHOD_NONE, /* no encryption: the address header, then the bytes as they are */
} ss_method_kind_t;

typedef struct ss_method {
	const char *name;
	ss_method_kind_t kind;
	ss_aead_alg_t alg;
	uint8_t key_len;
	uint8_t salt_len;
	uint8_t nonce_len;
} ss_method_t;

#define SS_DEFAULT_METHOD "chacha20-ietf-poly1305"

/* Finds a method by name (case-sensitive, as libev).
 * 0 on success; -ENOENT for an unknown name (err lists the supported
 * methods); -EPROTONOSUPPORT for a removed stream cipher (err names the
 * method, says it was removed as insecure and names the AEAD one to use).
 * err gets one line without a trailing newline. */
int ss_method_lookup(const char *name, const ss_method_t **out, char *err, size_t errlen);

/* The supported method names, NULL-terminated, for help text. */
const char *const *ss_method_names(void);

/* Password to key as shadowsocks-libev (OpenSSL EVP_BytesToKey, MD5, no salt,
 * one iteration): key gets m->key_len bytes. Only for SS_METHOD_AEAD: SIP022
 * forbids deriving a 2022 key from a password; use ss_psk_parse there. */
void ss_key_from_password(const ss_method_t *m, const char *password, uint8_t *key);

/* Base64 (standard or URL-safe alphabet, padding optional) to key.
 * 0, or -EINVAL when it does not decode to exactly m->key_len bytes. */
int ss_key_from_base64(const ss_method_t *m, const char *b64, uint8_t *key);

/* SIP022/SIP023 pre-shared keys: "PSK", or "iPSK1:...:iPSKn:uPSK" where
 * every part is the base64 (as ss_key_from_base64) of exactly m->key_len
 * bytes. keys[n - 1] is the PSK that keys the sessions (the user PSK); the
 * ones before it are identity PSKs, one identity header each. */
#define SS_PSK_MAX 8
typedef struct ss_psk_list {
	uint8_t n;
	uint8_t keys[SS_PSK_MAX][SS_MAX_KEY_LEN];
} ss_psk_list_t;

/* Parses text for a SS_METHOD_2022 method into out. 0 on success; -EINVAL
 * with one line in err (the method, which part, the expected length and how
 * to make a key with `openssl rand -base64 <len>`; never the key text) for
 * an empty or malformed part, a wrong length, more than SS_PSK_MAX parts,
 * identity PSKs with a method that has no identity headers (ChaCha20), or a
 * method that is not a 2022 one. out is wiped on failure; the caller wipes
 * it when done. */
int ss_psk_parse(const ss_method_t *m, const char *text, ss_psk_list_t *out, char *err,
		 size_t errlen);

/* What seals m's traffic through be on this CPU, one line into buf: e.g.
 * "AES-256-GCM: own VAES/AVX-512 code", "ChaCha20-Poly1305: OpenSSL 3.0.19
 * EVP", "no encryption". For the start-up line and --version. Returns buf. */
const char *ss_crypto_describe(const ss_crypto_backend_t *be, const ss_method_t *m, char *buf,
			       size_t len);

/* Whether m carries SIP023 identity headers (the 2022 AES methods). */
bool ss_method_has_identity(const ss_method_t *m);

#endif
