#ifndef SS_CRYPTO_METHOD_H
#define SS_CRYPTO_METHOD_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/primitives.h"

#define SS_MAX_KEY_LEN 32
#define SS_MAX_SALT_LEN 32

typedef enum {
	SS_METHOD_AEAD, /* SIP004 */
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
 * one iteration): key gets m->key_len bytes. */
void ss_key_from_password(const ss_method_t *m, const char *password, uint8_t *key);

/* Base64 (standard or URL-safe alphabet, padding optional) to key.
 * 0, or -EINVAL when it does not decode to exactly m->key_len bytes. */
int ss_key_from_base64(const ss_method_t *m, const char *b64, uint8_t *key);

#endif
