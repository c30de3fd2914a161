/* The VAES AES-GCM against mbedtls's (the portable backend) on every length
 * up to a few steps and the relay's chunk sizes, in place and not, and
 * against tampering. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "crypto/gcm_vaes.h"
#include "crypto/primitives.h"

/* Every flag the VAES path needs, as /proc/cpuinfo names them. */
static const char *const vaes_flags[] = {"aes",      "pclmulqdq", "avx512f",   "avx512bw",
					 "avx512vl", "vaes",      "vpclmulqdq"};

static void test_available_matches_cpu(void **state)
{
	ss_vgcm_t g;
	uint8_t key[32] = {1};
	(void)state;

	assert_int_equal(ss_vgcm_available(), cpu_has_flags(vaes_flags, SS_ARRAY_LEN(vaes_flags)));
	printf("VAES AES-GCM on this CPU: %s\n", ss_vgcm_available() ? "yes" : "no");
	if (!ss_vgcm_available()) {
		assert_int_equal(ss_vgcm_setkey(&g, key, 32), -ENOTSUP);
		assert_int_equal(g.rounds, 0);
	}
}

static void test_keys(void **state)
{
	ss_vgcm_t g;
	uint8_t key[32] = {7}, nonce[12] = {0}, buf[64 + 16] = {0};
	(void)state;

	assert_int_equal(ss_vgcm_setkey(&g, key, 20), -EINVAL);
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), -EINVAL);
	assert_int_equal(ss_vgcm_setkey(&g, key, 24), -ENOTSUP);
	assert_int_equal(g.rounds, 0);
	if (!ss_vgcm_available())
		return;
	/* One state re-keyed across sizes gives what a fresh one gives, and a
	 * failed setkey leaves nothing of the last key behind. */
	static const size_t sizes[] = {32, 16, 32, 32, 16};
	for (size_t i = 0; i < SS_ARRAY_LEN(sizes); i++) {
		ss_vgcm_t fresh;
		uint8_t a[64 + 16], b[64 + 16];

		key[1] = (uint8_t)i;
		assert_int_equal(ss_vgcm_setkey(&g, key, sizes[i]), 0);
		assert_int_equal(ss_vgcm_setkey(&fresh, key, sizes[i]), 0);
		memset(a, 3, 64);
		memset(b, 3, 64);
		assert_int_equal(ss_vgcm_seal(&g, nonce, a, a, 64), 0);
		assert_int_equal(ss_vgcm_seal(&fresh, nonce, b, b, 64), 0);
		assert_memory_equal(a, b, sizeof(a));
		ss_vgcm_wipe(&fresh);
	}
	assert_int_equal(ss_vgcm_setkey(&g, key, 24), -ENOTSUP);
	for (size_t i = 0; i < sizeof(g); i++)
		assert_int_equal(((const uint8_t *)&g)[i], 0);
	assert_int_equal(ss_vgcm_setkey(&g, key, 16), 0);
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), 0);
	ss_vgcm_wipe(&g);
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), -EINVAL);
	assert_int_equal(ss_vgcm_open(&g, nonce, buf, buf, 80), -EINVAL);
}

/* Seals with both, compares, opens ours in place and out of place. */
static void check_one(ss_vgcm_t *g, ss_aead_t *ref, const uint8_t *nonce, const uint8_t *pt,
		      size_t len, uint8_t *want, uint8_t *got, uint8_t *back, size_t shift)
{
	uint8_t *o = got + shift;

	/* Bytes past the tag (and past the text, opening) stay as they were. */
	memset(o + len + 16, 0xa5, 64);
	memset(back + len, 0x5a, 64);
	assert_int_equal(ss_crypto_sodium_portable.aead_seal(ref, nonce, want, pt, len), 0);
	assert_int_equal(ss_vgcm_seal(g, nonce, o, pt, len), 0);
	if (memcmp(o, want, len + 16) != 0)
		fail_msg("seal differs at length %zu", len);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(o[len + 16 + i], 0xa5);
	assert_int_equal(ss_vgcm_open(g, nonce, back, o, len + 16), 0);
	assert_memory_equal(back, pt, len);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(back[len + i], 0x5a);
	/* In place both ways. */
	memcpy(o, pt, len);
	assert_int_equal(ss_vgcm_seal(g, nonce, o, o, len), 0);
	assert_memory_equal(o, want, len + 16);
	assert_int_equal(ss_vgcm_open(g, nonce, o, o, len + 16), 0);
	if (len)
		assert_memory_equal(o, pt, len);
}

static void test_against_mbedtls(void **state)
{
	static const size_t big[] = {1023, 1024, 1025, 4095, 16256, 16383, 65408, 65535, 200001};
	enum { MAX = 200001 + 16 + 64 + 64 };
	uint8_t *pt = malloc(MAX), *want = malloc(MAX), *got = malloc(MAX), *back = malloc(MAX);
	(void)state;

	if (!ss_vgcm_available()) {
		printf("VAES AES-GCM not on this CPU: differential test not run\n");
		free(pt), free(want), free(got), free(back);
		return;
	}
	assert_true(pt && want && got && back);
	ss_random_bytes(pt, MAX);
	for (size_t key_len = 16; key_len <= 32; key_len += 16) {
		for (int round = 0; round < 3; round++) {
			uint8_t key[32], nonce[12];
			ss_vgcm_t g;
			ss_aead_t ref;

			ss_random_bytes(key, sizeof(key));
			ss_random_bytes(nonce, sizeof(nonce));
			if (round == 1)
				memset(nonce, 0xff, sizeof(nonce));
			assert_int_equal(ss_vgcm_setkey(&g, key, key_len), 0);
			assert_int_equal(ss_crypto_sodium_portable.aead_init(&ref, SS_AEAD_AES_GCM),
					 0);
			assert_int_equal(ss_crypto_sodium_portable.aead_setkey(&ref, key, key_len),
					 0);
			for (size_t len = 0; len <= 700; len++)
				check_one(&g, &ref, nonce, pt + round, len, want, got, back,
					  len % 5);
			for (size_t i = 0; i < SS_ARRAY_LEN(big); i++)
				check_one(&g, &ref, nonce, pt, big[i], want, got, back, round);
			ss_crypto_sodium_portable.aead_free(&ref);
			ss_vgcm_wipe(&g);
		}
	}
	free(pt), free(want), free(got), free(back);
}

/* Any changed bit of ciphertext or tag, or a changed nonce, is refused and
 * nothing of the text is left in out. */
static void test_tamper(void **state)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 255, 256, 257, 1000};
	uint8_t key[32], nonce[12], pt[1000], sealed[1000 + 16], work[1000 + 32], out[1000];
	ss_vgcm_t g;
	(void)state;

	if (!ss_vgcm_available())
		return;
	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(nonce, sizeof(nonce));
	ss_random_bytes(pt, sizeof(pt));
	assert_int_equal(ss_vgcm_setkey(&g, key, 32), 0);
	for (size_t i = 0; i < SS_ARRAY_LEN(lens); i++) {
		size_t len = lens[i];

		assert_int_equal(ss_vgcm_seal(&g, nonce, sealed, pt, len), 0);
		for (size_t pos = 0; pos < len + 16; pos += len / 7 + 1) {
			memcpy(work, sealed, len + 16);
			work[pos] ^= (uint8_t)(1u << (pos % 8));
			memset(out, 0x55, sizeof(out));
			assert_int_equal(ss_vgcm_open(&g, nonce, out, work, len + 16), -EBADMSG);
			for (size_t k = 0; k < len; k++)
				assert_int_equal(out[k], 0);
		}
		/* In place too. */
		memcpy(work, sealed, len + 16);
		work[(len + 16) / 2] ^= 1;
		assert_int_equal(ss_vgcm_open(&g, nonce, work, work, len + 16), -EBADMSG);
		for (size_t k = 0; k < len; k++)
			assert_int_equal(work[k], 0);
		nonce[3] ^= 1;
		assert_int_equal(ss_vgcm_open(&g, nonce, out, sealed, len + 16), -EBADMSG);
		nonce[3] ^= 1;
		assert_int_equal(ss_vgcm_open(&g, nonce, out, sealed, len + 16), 0);
	}
	assert_int_equal(ss_vgcm_open(&g, nonce, out, sealed, 15), -EBADMSG);
	ss_vgcm_wipe(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_available_matches_cpu),
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_against_mbedtls),
	    cmocka_unit_test(test_tamper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
