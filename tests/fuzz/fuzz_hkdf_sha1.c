/* SPDX-License-Identifier: MIT */
/* libFuzzer target: our HKDF-SHA1 (src/crypto/hkdf_sha1.c, on mbedtls's
 * SHA-1) against mbedtls's HKDF and OpenSSL's, byte for byte. The input
 * picks salt (absent, empty or up to 100 bytes: longer than a SHA-1 block
 * too), input key material, info and output length (0 to past the
 * 255 * 20 bytes HKDF allows, which must be refused). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#ifdef SS_HAVE_OPENSSL
#include <openssl/evp.h>
#include <openssl/kdf.h>
#endif

#include "crypto/hkdf_sha1.h"
#include "fuzz_util.h"

#define OKM_MAX (255 * SS_SHA1_LEN)

#ifdef SS_HAVE_OPENSSL
static void openssl_hkdf(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
			 const uint8_t *info, size_t info_len, const uint8_t *want, size_t okm_len)
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	uint8_t *got = malloc(okm_len + 1);
	size_t n = okm_len;

	/* OpenSSL wants a key and output; salt and info it takes as given. */
	FZ_CHECK(c != NULL && EVP_PKEY_derive_init(c) == 1);
	FZ_CHECK(EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha1()) == 1);
	FZ_CHECK(EVP_PKEY_CTX_set1_hkdf_salt(c, salt, (int)salt_len) == 1);
	FZ_CHECK(EVP_PKEY_CTX_set1_hkdf_key(c, ikm, (int)ikm_len) == 1);
	FZ_CHECK(EVP_PKEY_CTX_add1_hkdf_info(c, info, (int)info_len) == 1);
	FZ_CHECK(EVP_PKEY_derive(c, got, &n) == 1 && n == okm_len);
	FZ_CHECK(memcmp(got, want, okm_len) == 0);
	EVP_PKEY_CTX_free(c);
	free(got);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t salt[100], ikm[200], info[100];
	uint8_t mode = fz_u8(&f);
	size_t salt_len = fz_range(&f, 0, sizeof(salt)), ikm_len = fz_range(&f, 0, sizeof(ikm));
	size_t info_len = fz_range(&f, 0, sizeof(info));
	size_t okm_len = mode & 1 ? fz_range(&f, 0, 64) : fz_range(&f, 0, OKM_MAX + 64);
	const uint8_t *salt_p = salt_len == 0 && (mode & 2) ? NULL : salt;
	const uint8_t *info_p = info_len == 0 && (mode & 4) ? NULL : info;
	uint8_t *okm = malloc(okm_len + 1), *want = malloc(okm_len + 1);
	int rc, mrc;

	fz_bytes(&f, salt, salt_len);
	fz_bytes(&f, ikm, ikm_len);
	fz_bytes(&f, info, info_len);
	rc = ss_hkdf_sha1_with(&ss_sha1_mbedtls, salt_p, salt_len, ikm, ikm_len, info_p, info_len,
			       okm, okm_len);
	mrc = mbedtls_hkdf(mbedtls_md_info_from_type(MBEDTLS_MD_SHA1), salt_p, salt_len, ikm,
			   ikm_len, info_p, info_len, want, okm_len);
	if (okm_len > OKM_MAX) {
		FZ_CHECK(rc == -EINVAL && mrc != 0);
		goto out;
	}
	FZ_CHECK(rc == 0 && mrc == 0);
	FZ_CHECK(memcmp(okm, want, okm_len) == 0);
#ifdef SS_HAVE_OPENSSL
	if (ikm_len > 0 && okm_len > 0)
		openssl_hkdf(salt, salt_len, ikm, ikm_len, info, info_len, want, okm_len);
#endif
out:
	free(okm);
	free(want);
	return 0;
}
