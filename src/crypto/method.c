/* SPDX-License-Identifier: MIT */
#include "crypto/method.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "crypto/mbedtls_hash.h"
#include "util/result.h"

static const ss_method_t methods[] = {
    {"aes-128-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 16, 16, 12},
    {"aes-192-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 24, 24, 12},
    {"aes-256-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 32, 32, 12},
    {"chacha20-ietf-poly1305", SS_METHOD_AEAD, SS_AEAD_CHACHA20_POLY1305, 32, 32, 12},
    {"xchacha20-ietf-poly1305", SS_METHOD_AEAD, SS_AEAD_XCHACHA20_POLY1305, 32, 32, 24},
    {"2022-blake3-aes-128-gcm", SS_METHOD_2022, SS_AEAD_AES_GCM, 16, 16, 12},
    {"2022-blake3-aes-256-gcm", SS_METHOD_2022, SS_AEAD_AES_GCM, 32, 32, 12},
    /* TCP is ChaCha20-Poly1305 with a 12-byte nonce; UDP uses
     * XChaCha20-Poly1305 with the PSK (SIP022 section 4.1). */
    {"2022-blake3-chacha20-poly1305", SS_METHOD_2022, SS_AEAD_CHACHA20_POLY1305, 32, 32, 12},
    /* For links that are already encrypted (a TLS plugin); "plain" is
     * shadowsocks-rust's other name for it. */
    {"none", SS_METHOD_NONE, SS_AEAD_AES_GCM, 0, 0, 0},
    {"plain", SS_METHOD_NONE, SS_AEAD_AES_GCM, 0, 0, 0},
};

static const char *const method_names[] = {
    "aes-128-gcm",
    "aes-192-gcm",
    "aes-256-gcm",
    "chacha20-ietf-poly1305",
    "xchacha20-ietf-poly1305",
    "2022-blake3-aes-128-gcm",
    "2022-blake3-aes-256-gcm",
    "2022-blake3-chacha20-poly1305",
    "none",
    "plain",
    NULL,
};

_Static_assert(SS_ARRAY_LEN(method_names) == SS_ARRAY_LEN(methods) + 1, "names match methods");

/* The stream ciphers shadowsocks-libev 3.3.5 still accepted, each with the
 * AEAD method to move to: the same key size for AES and Camellia, otherwise
 * ChaCha20-Poly1305. */
static const struct {
	const char *name;
	const char *instead;
} removed[] = {
    {"table", "chacha20-ietf-poly1305"},     {"rc4", "chacha20-ietf-poly1305"},
    {"rc4-md5", "chacha20-ietf-poly1305"},   {"rc4-md5-6", "chacha20-ietf-poly1305"},
    {"aes-128-cfb", "aes-128-gcm"},          {"aes-192-cfb", "aes-192-gcm"},
    {"aes-256-cfb", "aes-256-gcm"},          {"aes-128-ctr", "aes-128-gcm"},
    {"aes-192-ctr", "aes-192-gcm"},          {"aes-256-ctr", "aes-256-gcm"},
    {"bf-cfb", "chacha20-ietf-poly1305"},    {"camellia-128-cfb", "aes-128-gcm"},
    {"camellia-192-cfb", "aes-192-gcm"},     {"camellia-256-cfb", "aes-256-gcm"},
    {"cast5-cfb", "chacha20-ietf-poly1305"}, {"des-cfb", "chacha20-ietf-poly1305"},
    {"idea-cfb", "chacha20-ietf-poly1305"},  {"rc2-cfb", "chacha20-ietf-poly1305"},
    {"seed-cfb", "chacha20-ietf-poly1305"},  {"salsa20", "chacha20-ietf-poly1305"},
    {"chacha20", "chacha20-ietf-poly1305"},  {"chacha20-ietf", "chacha20-ietf-poly1305"},
};

int ss_method_lookup(const char *name, const ss_method_t **out, char *err, size_t errlen)
{
	size_t i, used;
	int n;

	for (i = 0; i < SS_ARRAY_LEN(methods); i++) {
		if (strcmp(name, methods[i].name) == 0) {
			*out = &methods[i];
			return 0;
		}
	}
	for (i = 0; i < SS_ARRAY_LEN(removed); i++) {
		if (strcmp(name, removed[i].name) == 0) {
			if (errlen > 0)
				snprintf(err, errlen,
					 "method '%s' was removed as insecure (stream ciphers have "
					 "no authentication); use %s instead",
					 name, removed[i].instead);
			return -EPROTONOSUPPORT;
		}
	}
	if (errlen > 0) {
		n = snprintf(err, errlen, "unknown method '%s'; supported:", name);
		used = n < 0 ? errlen : (size_t)n;
		for (i = 0; i < SS_ARRAY_LEN(methods) && used < errlen; i++) {
			n = snprintf(err + used, errlen - used, "%s %s", i ? "," : "",
				     methods[i].name);
			used += n < 0 ? errlen : (size_t)n;
		}
	}
	return -ENOENT;
}

const char *const *ss_method_names(void)
{
	return method_names;
}

void ss_key_from_password(const ss_method_t *m, const char *password, uint8_t *key)
{
	/* EVP_BytesToKey(MD5, no salt, count 1):
	 * D_1 = MD5(password), D_i = MD5(D_{i-1} || password), key = D_1 || D_2 ... */
	mbedtls_md5_context ctx;
	uint8_t d[16];
	size_t pw_len = strlen(password), done = 0;

	mbedtls_md5_init(&ctx);
	while (done < m->key_len) {
		size_t n = m->key_len - done < sizeof(d) ? m->key_len - done : sizeof(d);

		(void)SS_MBEDTLS_MD5_STARTS(&ctx);
		if (done > 0)
			(void)SS_MBEDTLS_MD5_UPDATE(&ctx, d, sizeof(d));
		(void)SS_MBEDTLS_MD5_UPDATE(&ctx, (const uint8_t *)password, pw_len);
		(void)SS_MBEDTLS_MD5_FINISH(&ctx, d);
		memcpy(key + done, d, n);
		done += n;
	}
	mbedtls_md5_free(&ctx);
	sodium_memzero(d, sizeof(d));
}

int ss_key_from_base64(const ss_method_t *m, const char *b64, uint8_t *key)
{
	static const int variants[] = {
	    sodium_base64_VARIANT_ORIGINAL,
	    sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
	    sodium_base64_VARIANT_URLSAFE,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING,
	};
	size_t b64_len = strlen(b64);

	for (size_t i = 0; i < SS_ARRAY_LEN(variants); i++) {
		const char *end = NULL;
		size_t n = 0;

		/* The buffer holds exactly key_len: longer input fails here. */
		if (sodium_base642bin(key, m->key_len, b64, b64_len, NULL, &n, &end, variants[i]) ==
			0 &&
		    end == b64 + b64_len && n == m->key_len)
			return 0;
	}
	sodium_memzero(key, m->key_len);
	return -EINVAL;
}

bool ss_method_has_identity(const ss_method_t *m)
{
	return m->kind == SS_METHOD_2022 && m->alg == SS_AEAD_AES_GCM;
}

static void psk_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int ss_psk_parse(const ss_method_t *m, const char *text, ss_psk_list_t *out, char *err,
		 size_t errlen)
{
	/* Longer than any base64 of 32 bytes: such a part is wrong anyway. */
	char part[64];
	const char *p = text;
	size_t nparts = 1;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (m->kind != SS_METHOD_2022) {
		psk_err(err, errlen, "method %s takes a password, not a PSK", m->name);
		return -EINVAL;
	}
	for (const char *c = text; *c; c++)
		nparts += *c == ':';
	if (nparts > SS_PSK_MAX) {
		psk_err(err, errlen, "too many PSKs for %s: %zu given, at most %d", m->name, nparts,
			SS_PSK_MAX);
		goto out;
	}
	if (nparts > 1 && !ss_method_has_identity(m)) {
		psk_err(err, errlen,
			"%s has no identity headers, so it takes one PSK, not a list "
			"(iPSK:uPSK); use 2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm "
			"for multiple users",
			m->name);
		goto out;
	}
	for (size_t i = 0; i < nparts; i++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool ok = len > 0 && len < sizeof(part);

		if (ok) {
			memcpy(part, p, len);
			part[len] = '\0';
			ok = ss_key_from_base64(m, part, out->keys[i]) == 0;
		}
		if (!ok) {
			char which[40] = "";

			if (nparts > 1)
				snprintf(which, sizeof(which), " (part %zu of %zu)", i + 1, nparts);
			psk_err(err, errlen,
				"%s PSK%s for %s: it must be the base64 of exactly %u bytes "
				"(make one with: openssl rand -base64 %u)",
				len == 0 ? "empty" : "invalid", which, m->name, m->key_len,
				m->key_len);
			goto out;
		}
		p += len + 1;
	}
	out->n = (uint8_t)nparts;
	rc = 0;
out:
	sodium_memzero(part, sizeof(part));
	if (rc != 0)
		sodium_memzero(out, sizeof(*out));
	return rc;
}
