/* SPDX-License-Identifier: MIT */
/* Method table, removed-cipher messages, password and base64 keys. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "crypto/method.h"
#include "util/result.h"

#define SUPPORTED                                                                                  \
	"aes-128-gcm, aes-192-gcm, aes-256-gcm, chacha20-ietf-poly1305, "                          \
	"xchacha20-ietf-poly1305, 2022-blake3-aes-128-gcm, 2022-blake3-aes-256-gcm, "              \
	"2022-blake3-chacha20-poly1305, none, plain"

static const ss_method_t *lookup(const char *name)
{
	const ss_method_t *m = NULL;
	char err[256];

	assert_int_equal(ss_method_lookup(name, &m, err, sizeof(err)), 0);
	assert_non_null(m);
	assert_string_equal(m->name, name);
	return m;
}

static void test_lookup(void **state)
{
	static const struct {
		const char *name;
		ss_method_kind_t kind;
		ss_aead_alg_t alg;
		uint8_t key, salt, nonce;
		bool identity;
	} want[] = {
	    {"aes-128-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 16, 16, 12, false},
	    {"aes-192-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 24, 24, 12, false},
	    {"aes-256-gcm", SS_METHOD_AEAD, SS_AEAD_AES_GCM, 32, 32, 12, false},
	    {"chacha20-ietf-poly1305", SS_METHOD_AEAD, SS_AEAD_CHACHA20_POLY1305, 32, 32, 12,
	     false},
	    {"xchacha20-ietf-poly1305", SS_METHOD_AEAD, SS_AEAD_XCHACHA20_POLY1305, 32, 32, 24,
	     false},
	    /* SIP022 section 2.1 table; ChaCha20 from section 4. */
	    {"2022-blake3-aes-128-gcm", SS_METHOD_2022, SS_AEAD_AES_GCM, 16, 16, 12, true},
	    {"2022-blake3-aes-256-gcm", SS_METHOD_2022, SS_AEAD_AES_GCM, 32, 32, 12, true},
	    {"2022-blake3-chacha20-poly1305", SS_METHOD_2022, SS_AEAD_CHACHA20_POLY1305, 32, 32, 12,
	     false},
	    {"none", SS_METHOD_NONE, SS_AEAD_AES_GCM, 0, 0, 0, false},
	    {"plain", SS_METHOD_NONE, SS_AEAD_AES_GCM, 0, 0, 0, false},
	};
	const char *const *names = ss_method_names();
	(void)state;

	for (size_t i = 0; i < SS_ARRAY_LEN(want); i++) {
		const ss_method_t *m = lookup(want[i].name);

		assert_int_equal(m->kind, want[i].kind);
		assert_int_equal(ss_method_has_identity(m), want[i].identity);
		assert_int_equal(m->alg, want[i].alg);
		assert_int_equal(m->key_len, want[i].key);
		assert_int_equal(m->salt_len, want[i].salt);
		assert_int_equal(m->nonce_len, want[i].nonce);
		assert_true(m->key_len <= SS_MAX_KEY_LEN);
		assert_true(m->salt_len <= SS_MAX_SALT_LEN);
		assert_true(m->nonce_len <= SS_AEAD_MAX_NONCE_LEN);
		assert_non_null(names[i]);
		assert_string_equal(names[i], want[i].name);
	}
	assert_null(names[SS_ARRAY_LEN(want)]);
	lookup(SS_DEFAULT_METHOD);
}

static void test_removed(void **state)
{
	static const struct {
		const char *name, *instead;
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
	(void)state;

	for (size_t i = 0; i < SS_ARRAY_LEN(removed); i++) {
		const ss_method_t *m = NULL;
		char err[256], want[256];

		snprintf(want, sizeof(want),
			 "method '%s' was removed as insecure (stream ciphers have no "
			 "authentication); use %s instead",
			 removed[i].name, removed[i].instead);
		assert_int_equal(ss_method_lookup(removed[i].name, &m, err, sizeof(err)),
				 -EPROTONOSUPPORT);
		assert_null(m);
		assert_string_equal(err, want);
	}
}

static void test_unknown(void **state)
{
	const ss_method_t *m = NULL;
	char err[256], small[24];
	(void)state;

	assert_int_equal(ss_method_lookup("x", &m, err, sizeof(err)), -ENOENT);
	assert_null(m);
	assert_string_equal(err, "unknown method 'x'; supported: " SUPPORTED);

	/* Names are case-sensitive, as in shadowsocks-libev. */
	assert_int_equal(ss_method_lookup("AES-256-GCM", &m, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "unknown method 'AES-256-GCM'; supported: " SUPPORTED);
	assert_int_equal(ss_method_lookup("", &m, err, sizeof(err)), -ENOENT);
	assert_int_equal(ss_method_lookup("aes-256-gcm ", &m, err, sizeof(err)), -ENOENT);

	/* A short buffer truncates; none at all is allowed. */
	assert_int_equal(ss_method_lookup("x", &m, small, sizeof(small)), -ENOENT);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "unknown method 'x'; sup", sizeof(small) - 1);
	assert_int_equal(ss_method_lookup("x", &m, NULL, 0), -ENOENT);
	assert_int_equal(ss_method_lookup("rc4", &m, NULL, 0), -EPROTONOSUPPORT);
}

/* Expected keys from the OpenSSL CLI, which runs EVP_BytesToKey itself:
 *   openssl enc -aes-{128,192,256}-cbc -md md5 -nosalt -P -k <password>
 * (the empty password with -pass pass:). */
static void test_password(void **state)
{
	static const struct {
		const char *method, *password, *key;
	} tc[] = {
	    {"aes-128-gcm", "foobar", "3858f62230ac3c915f300c664312c63f"},
	    {"aes-192-gcm", "foobar", "3858f62230ac3c915f300c664312c63f568378529614d22d"},
	    {"aes-256-gcm", "foobar",
	     "3858f62230ac3c915f300c664312c63f568378529614d22ddb49237d2f60bfdf"},
	    {"chacha20-ietf-poly1305", "foobar",
	     "3858f62230ac3c915f300c664312c63f568378529614d22ddb49237d2f60bfdf"},
	    {"xchacha20-ietf-poly1305",
	     "correct horse battery staple, a much longer password than one MD5 block of "
	     "sixty-four bytes",
	     "650d846c20ef8e2ee8f0f5018b1e6e5a4b3df13ec51c69fb70e85a19856f7d64"},
	    {"aes-256-gcm", "", "d41d8cd98f00b204e9800998ecf8427e59adb24ef3cdbe0297f05b395827453f"},
	};
	(void)state;

	for (size_t i = 0; i < SS_ARRAY_LEN(tc); i++) {
		const ss_method_t *m = lookup(tc[i].method);
		uint8_t key[SS_MAX_KEY_LEN + 1], want[SS_MAX_KEY_LEN];

		memset(key, 0xaa, sizeof(key));
		assert_int_equal(unhex(tc[i].key, want), m->key_len);
		ss_key_from_password(m, tc[i].password, key);
		assert_memory_equal(key, want, m->key_len);
		/* Nothing written past key_len. */
		for (size_t j = m->key_len; j < sizeof(key); j++)
			assert_int_equal(key[j], 0xaa);
	}
}

static void test_base64(void **state)
{
	/* 32 bytes 0xfb 0xff 0xbf ... chosen so the encoding holds '+', '/' (or
	 * '-', '_') and needs one '=' of padding. */
	uint8_t raw[32], key[32];
	const ss_method_t *m256 = lookup("aes-256-gcm"), *m128 = lookup("aes-128-gcm");
	(void)state;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(0xfb + 3 * i);
	/* Encodings from python3: base64.b64encode / base64.urlsafe_b64encode. */
	static const char *const good[] = {
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg=",
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg",
	    "-_4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg=",
	    "-_4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg",
	};
	for (size_t i = 0; i < SS_ARRAY_LEN(good); i++) {
		memset(key, 0, sizeof(key));
		assert_int_equal(ss_key_from_base64(m256, good[i], key), 0);
		assert_memory_equal(key, raw, sizeof(raw));
	}

	/* 16 bytes: two '=' of padding, or none. */
	assert_int_equal(ss_key_from_base64(m128, "+/4BBAcKDRATFhkcHyIlKA==", key), 0);
	assert_memory_equal(key, raw, 16);
	assert_int_equal(ss_key_from_base64(m128, "-_4BBAcKDRATFhkcHyIlKA", key), 0);
	assert_memory_equal(key, raw, 16);

	static const char *const bad[] = {
	    "",
	    /* 31 and 33 bytes */
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVQ==",
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVhb",
	    /* the 16-byte key given to a 32-byte method */
	    "+/4BBAcKDRATFhkcHyIlKA==",
	    /* mixed alphabets, stray characters, wrong or misplaced padding */
	    "+_4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg=",
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg==",
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg= ",
	    " +/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg=",
	    "+/4BBAcKDRATFhkcHyIlKCsu*TQ3Oj1AQ0ZJTE9SVVg=",
	    "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SV=Vg",
	};
	for (size_t i = 0; i < SS_ARRAY_LEN(bad); i++) {
		memset(key, 0x11, sizeof(key));
		assert_int_equal(ss_key_from_base64(m256, bad[i], key), -EINVAL);
	}
	assert_int_equal(
	    ss_key_from_base64(m128, "+/4BBAcKDRATFhkcHyIlKCsuMTQ3Oj1AQ0ZJTE9SVVg=", key), -EINVAL);
}

/* 2022 PSK lists. Keys from python3 base64.b64encode of the bytes named. */
#define K16_00 "AAAAAAAAAAAAAAAAAAAAAA=="                     /* 16 x 0x00 */
#define K16_01 "AQEBAQEBAQEBAQEBAQEBAQ=="                     /* 16 x 0x01 */
#define K16_02 "AgICAgICAgICAgICAgICAg=="                     /* 16 x 0x02 */
#define K32_03 "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=" /* 32 x 0x03 */
#define K32_04 "BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ=" /* 32 x 0x04 */

static void check_psks(const ss_psk_list_t *l, const uint8_t *bytes, size_t n, size_t key_len)
{
	assert_int_equal(l->n, n);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < key_len; j++)
			assert_int_equal(l->keys[i][j], bytes[i]);
}

static void test_psk(void **state)
{
	const ss_method_t *m128 = lookup("2022-blake3-aes-128-gcm");
	const ss_method_t *m256 = lookup("2022-blake3-aes-256-gcm");
	const ss_method_t *mcha = lookup("2022-blake3-chacha20-poly1305");
	ss_psk_list_t l;
	char err[300];
	(void)state;

	assert_int_equal(ss_psk_parse(m128, K16_01, &l, err, sizeof(err)), 0);
	check_psks(&l, (const uint8_t[]){1}, 1, 16);
	assert_int_equal(ss_psk_parse(m128, K16_00 ":" K16_01 ":" K16_02, &l, err, sizeof(err)), 0);
	check_psks(&l, (const uint8_t[]){0, 1, 2}, 3, 16);
	assert_int_equal(ss_psk_parse(m256, K32_03 ":" K32_04, &l, err, sizeof(err)), 0);
	check_psks(&l, (const uint8_t[]){3, 4}, 2, 32);
	/* URL-safe and unpadded forms, as --key. */
	assert_int_equal(
	    ss_psk_parse(mcha, "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM", &l, err, sizeof(err)),
	    0);
	check_psks(&l, (const uint8_t[]){3}, 1, 32);

	/* A key of the wrong length, a password, an empty part. */
	assert_int_equal(ss_psk_parse(m256, K16_01, &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid PSK for 2022-blake3-aes-256-gcm: it must be the base64 "
				 "of exactly 32 bytes (make one with: openssl rand -base64 32)");
	assert_int_equal(l.n, 0);
	assert_int_equal(ss_psk_parse(m128, "hunter2", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid PSK for 2022-blake3-aes-128-gcm: it must be the base64 "
				 "of exactly 16 bytes (make one with: openssl rand -base64 16)");
	/* The rejected text is a secret: never echoed. */
	assert_null(strstr(err, "hunter2"));
	assert_int_equal(ss_psk_parse(m128, "", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "empty PSK for 2022-blake3-aes-128-gcm: it must be the base64 "
				 "of exactly 16 bytes (make one with: openssl rand -base64 16)");
	assert_int_equal(ss_psk_parse(m128, K16_00 ":" K32_03, &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid PSK (part 2 of 2) for 2022-blake3-aes-128-gcm: it must "
				 "be the base64 of exactly 16 bytes (make one with: openssl rand "
				 "-base64 16)");
	assert_int_equal(ss_psk_parse(m128, K16_00 "::" K16_01, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty PSK (part 2 of 3)"));
	assert_int_equal(ss_psk_parse(m128, K16_00 ":", &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty PSK (part 2 of 2)"));
	/* A part longer than any key is refused, not truncated. */
	assert_int_equal(ss_psk_parse(m256, K32_03 K32_03, &l, err, sizeof(err)), -EINVAL);

	/* Identity PSKs need identity headers: AES only. */
	assert_int_equal(ss_psk_parse(mcha, K32_03 ":" K32_04, &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "2022-blake3-chacha20-poly1305 has no identity headers, so it "
				 "takes one PSK, not a list (iPSK:uPSK); use "
				 "2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm for multiple "
				 "users");
	assert_int_equal(l.n, 0);

	/* At most SS_PSK_MAX. */
	assert_int_equal(ss_psk_parse(m128,
				      K16_00 ":" K16_00 ":" K16_00 ":" K16_00 ":" K16_00 ":" K16_00
					     ":" K16_00 ":" K16_01,
				      &l, err, sizeof(err)),
			 0);
	assert_int_equal(l.n, SS_PSK_MAX);
	assert_int_equal(ss_psk_parse(m128,
				      K16_00 ":" K16_00 ":" K16_00 ":" K16_00 ":" K16_00 ":" K16_00
					     ":" K16_00 ":" K16_00 ":" K16_01,
				      &l, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "too many PSKs for 2022-blake3-aes-128-gcm: 9 given, at most 8");

	/* Not a 2022 method; no error buffer at all. */
	assert_int_equal(ss_psk_parse(lookup("aes-128-gcm"), K16_01, &l, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ss_psk_parse(m128, "x", &l, NULL, 0), -EINVAL);

	/* --key takes the same base64 for a 2022 method. */
	{
		uint8_t key[32];

		assert_int_equal(ss_key_from_base64(m256, K32_04, key), 0);
		assert_int_equal(key[31], 4);
		assert_int_equal(ss_key_from_base64(m256, K16_01, key), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookup),  cmocka_unit_test(test_removed),
	    cmocka_unit_test(test_unknown), cmocka_unit_test(test_password),
	    cmocka_unit_test(test_base64),  cmocka_unit_test(test_psk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
