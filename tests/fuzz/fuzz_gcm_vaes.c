/* SPDX-License-Identifier: MIT */
/* libFuzzer target: our AES-GCM with VAES (src/crypto/gcm_vaes.c) against
 * the libraries, byte for byte: OpenSSL's EVP AES-GCM and mbedtls's GCM.
 * The input picks the key (16 or 32 bytes; sometimes a length ours must
 * refuse), the nonce, the message length (0 to 70 KiB), its bytes, where
 * input and output sit (odd offsets, in place or not) and a bit to flip.
 * Sealing must give the libraries' ciphertext and tag; opening must give
 * the message back; a flipped bit anywhere in ciphertext or tag must be
 * refused (-EBADMSG, by the libraries too) with the output all zeros.
 * Neither SIP004 nor SIP022 uses associated data, so ours takes none and
 * the libraries are called without any.
 * (mbedtls checks the messages up to 4 KiB when OpenSSL checks them all.)
 * On a CPU without VAES it has nothing to test: it says what the CPU lacks
 * and exits with 77, which ctest reports as skipped. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mbedtls/gcm.h>
#ifdef SS_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

#include "crypto/gcm_vaes.h"
#include "fuzz_util.h"

#define MAX_LEN (70 * 1024)

static mbedtls_gcm_context mb;
#ifdef SS_HAVE_OPENSSL
static EVP_CIPHER_CTX *ossl;
#endif

__attribute__((constructor)) static void setup(void)
{
	if (!ss_vgcm_available()) {
		char lack[128];
		fprintf(stderr,
			"fuzz_gcm_vaes: SKIPPED: this CPU lacks %s, which our AES-GCM needs\n",
			ss_cpu_names(SS_VGCM_CPU & ~ss_cpu_features(), lack, sizeof(lack)));
		exit(77);
	}
	mbedtls_gcm_init(&mb);
#ifdef SS_HAVE_OPENSSL
	ossl = EVP_CIPHER_CTX_new();
	FZ_CHECK(ossl != NULL);
#endif
}

/* mbedtls's GCM runs at a tenth of the others' speed: with OpenSSL there,
 * it checks only messages up to this long, so long ones do not slow every
 * run. */
#ifdef SS_HAVE_OPENSSL
#define MBEDTLS_MAX_LEN 4096
#else
#define MBEDTLS_MAX_LEN MAX_LEN
#endif

/* The libraries' ct || tag of msg (they must agree). */
static void library_seal(const uint8_t *key, size_t klen, const uint8_t *nonce, const uint8_t *msg,
			 size_t len, uint8_t *want)
{
	uint8_t *got = malloc(len + 16);

#ifdef SS_HAVE_OPENSSL
	int n = 0, fin = 0;

	FZ_CHECK(EVP_EncryptInit_ex(ossl, klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), NULL,
				    key, nonce) == 1);
	FZ_CHECK(EVP_EncryptUpdate(ossl, want, &n, msg, (int)len) == 1);
	FZ_CHECK(EVP_EncryptFinal_ex(ossl, want + n, &fin) == 1);
	FZ_CHECK((size_t)(n + fin) == len);
	FZ_CHECK(EVP_CIPHER_CTX_ctrl(ossl, EVP_CTRL_GCM_GET_TAG, 16, want + len) == 1);
	if (len > MBEDTLS_MAX_LEN)
		goto out;
#endif
	FZ_CHECK(mbedtls_gcm_setkey(&mb, MBEDTLS_CIPHER_ID_AES, key, (unsigned)klen * 8) == 0);
	FZ_CHECK(mbedtls_gcm_crypt_and_tag(&mb, MBEDTLS_GCM_ENCRYPT, len, nonce, 12, NULL, 0, msg,
					   got, 16, got + len) == 0);
#ifdef SS_HAVE_OPENSSL
	FZ_CHECK(memcmp(got, want, len + 16) == 0);
out:
#else
	memcpy(want, got, len + 16);
#endif
	free(got);
}

/* Whether the libraries accept sealed (len bytes of ct, then the tag). */
static bool library_opens(const uint8_t *key, size_t klen, const uint8_t *nonce,
			  const uint8_t *sealed, size_t len)
{
	uint8_t *tmp = malloc(len + 1);
	bool ok = false;

	if (len <= MBEDTLS_MAX_LEN) {
		FZ_CHECK(mbedtls_gcm_setkey(&mb, MBEDTLS_CIPHER_ID_AES, key, (unsigned)klen * 8) ==
			 0);
		ok = mbedtls_gcm_auth_decrypt(&mb, len, nonce, 12, NULL, 0, sealed + len, 16,
					      sealed, tmp) == 0;
	}
#ifdef SS_HAVE_OPENSSL
	int n = 0, fin = 0;
	uint8_t tag[16];
	bool ossl_ok;

	memcpy(tag, sealed + len, 16);
	FZ_CHECK(EVP_DecryptInit_ex(ossl, klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), NULL,
				    key, nonce) == 1);
	FZ_CHECK(EVP_DecryptUpdate(ossl, tmp, &n, sealed, (int)len) == 1);
	FZ_CHECK(EVP_CIPHER_CTX_ctrl(ossl, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1);
	ossl_ok = EVP_DecryptFinal_ex(ossl, tmp + n, &fin) == 1;
	FZ_CHECK(len > MBEDTLS_MAX_LEN || ossl_ok == ok);
	ok = ossl_ok;
#endif
	free(tmp);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	static const size_t klens[8] = {16, 32, 16, 32, 16, 32, 24, 0};
	uint8_t key[32], nonce[12], kl = fz_u8(&f);
	/* 0: any length under 32, refused unless 16 (24 has its own error). */
	size_t klen = klens[kl % 8] ? klens[kl % 8] : kl / 8u;
	size_t len = fz_bool(&f) ? fz_range(&f, 0, 512) : fz_range(&f, 0, MAX_LEN);
	size_t in_off = fz_range(&f, 0, 63), out_off = fz_range(&f, 0, 63);
	bool in_place = fz_bool(&f);
	size_t flip = fz_u32(&f) % (len + 16);
	uint8_t bit = (uint8_t)(1u << fz_u8(&f) % 8);
	uint8_t *msg, *want, *in, *out, *sealed;
	ss_vgcm_t g;
	int rc;

	fz_bytes(&f, key, sizeof(key));
	fz_bytes(&f, nonce, sizeof(nonce));
	rc = ss_vgcm_setkey(&g, key, klen);
	if (klen != 16 && klen != 32) {
		FZ_CHECK(rc == (klen == 24 ? -ENOTSUP : -EINVAL) && g.rounds == 0);
		FZ_CHECK(ss_vgcm_seal(&g, nonce, key, key, 0) == -EINVAL);
		return 0;
	}
	FZ_CHECK(rc == 0);
	msg = malloc(len + 1);
	want = malloc(len + 16);
	in = malloc(in_off + len + 16);
	out = in_place ? in : malloc(out_off + len + 16);
	if (in_place)
		out_off = in_off;
	sealed = malloc(len + 16);
	fz_fill(&f, msg, len);
	library_seal(key, klen, nonce, msg, len, want);

	/* Seal: the libraries' bytes. */
	memcpy(in + in_off, msg, len);
	FZ_CHECK(ss_vgcm_seal(&g, nonce, out + out_off, in + in_off, len) == 0);
	FZ_CHECK(memcmp(out + out_off, want, len + 16) == 0);
	memcpy(sealed, want, len + 16);

	/* Open: the message back. */
	memcpy(in + in_off, sealed, len + 16);
	if (!in_place)
		memset(out + out_off, 0xa5, len);
	FZ_CHECK(ss_vgcm_open(&g, nonce, out + out_off, in + in_off, len + 16) == 0);
	FZ_CHECK(memcmp(out + out_off, msg, len) == 0);

	/* One flipped bit: refused by all, ours leaving zeros. */
	memcpy(in + in_off, sealed, len + 16);
	in[in_off + flip] ^= bit;
	if (!in_place)
		memset(out + out_off, 0xa5, len);
	FZ_CHECK(ss_vgcm_open(&g, nonce, out + out_off, in + in_off, len + 16) == -EBADMSG);
	FZ_CHECK(fz_all_zero(out + out_off, len));
	sealed[flip] ^= bit;
	FZ_CHECK(!library_opens(key, klen, nonce, sealed, len));

	/* Shorter than a tag: refused. */
	FZ_CHECK(ss_vgcm_open(&g, nonce, out + out_off, in + in_off, len % 16) == -EBADMSG);
	ss_vgcm_wipe(&g);
	FZ_CHECK(g.rounds == 0);
	free(msg);
	free(want);
	free(in);
	if (!in_place)
		free(out);
	free(sealed);
	return 0;
}
