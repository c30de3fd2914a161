/* The AVX-512 ChaCha20-Poly1305 against libsodium's on every length up to
 * a few ChaCha20 batches and Poly1305 steps and on the relay's chunk sizes,
 * in place and not, and against tampering; and SIP004 chunks sealed and
 * opened in one pass against libsodium sealing their two parts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "testutil.h"

#include "crypto/chacha_avx512.h"

static const char *const flags[] = {"avx512f", "avx512bw", "avx512ifma"};

static void test_available_matches_cpu(void **state)
{
	uint8_t key[32] = {1}, nonce[12] = {0}, buf[100] = {0};
	(void)state;

	assert_int_equal(ss_chacha512_available(), cpu_has_flags(flags, SS_ARRAY_LEN(flags)));
	printf("AVX-512 ChaCha20-Poly1305 on this CPU: %s\n",
	       ss_chacha512_available() ? "yes" : "no");
	if (!ss_chacha512_available()) {
		assert_int_equal(ss_chacha512_seal(key, nonce, buf, buf, 64), -ENOTSUP);
		assert_int_equal(ss_chacha512_open(key, nonce, buf, buf, 80), -ENOTSUP);
	}
}

/* Seals with both, compares, opens ours in place and out of place. */
static void check_one(const uint8_t *key, const uint8_t *nonce, const uint8_t *pt, size_t len,
		      uint8_t *want, uint8_t *got, uint8_t *back, size_t shift)
{
	uint8_t *o = got + shift;

	/* Bytes past the tag (and past the text, opening) stay as they were. */
	memset(o + len + 16, 0xa5, 64);
	memset(back + len, 0x5a, 64);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(want, want + len, NULL, pt, len, NULL, 0,
							   NULL, nonce, key);
	assert_int_equal(ss_chacha512_seal(key, nonce, o, pt, len), 0);
	if (memcmp(o, want, len + 16) != 0)
		fail_msg("seal differs at length %zu (text %s)", len,
			 memcmp(o, want, len) ? "differs" : "matches");
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(o[len + 16 + i], 0xa5);
	assert_int_equal(ss_chacha512_open(key, nonce, back, o, len + 16), 0);
	assert_memory_equal(back, pt, len);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(back[len + i], 0x5a);
	/* In place both ways. */
	memcpy(o, pt, len);
	assert_int_equal(ss_chacha512_seal(key, nonce, o, o, len), 0);
	assert_memory_equal(o, want, len + 16);
	assert_int_equal(ss_chacha512_open(key, nonce, o, o, len + 16), 0);
	if (len)
		assert_memory_equal(o, pt, len);
}

static void test_against_libsodium(void **state)
{
	static const size_t big[] = {4095,  4096,  16255, 16256, 16257, 16383,
				     16384, 65407, 65408, 65535, 200001};
	enum { MAX = 200001 + 16 + 64 + 64 };
	uint8_t *pt = malloc(MAX), *want = malloc(MAX), *got = malloc(MAX), *back = malloc(MAX);
	(void)state;

	assert_true(pt && want && got && back);
	if (!ss_chacha512_available()) {
		printf("AVX-512 IFMA not on this CPU: differential test not run\n");
		free(pt), free(want), free(got), free(back);
		return;
	}
	for (int round = 0; round < 4; round++) {
		uint8_t key[32], nonce[12];

		ss_random_bytes(key, sizeof(key));
		ss_random_bytes(nonce, sizeof(nonce));
		/* Random text, and all ones: the widest limbs Poly1305 sees. */
		if (round == 1) {
			memset(pt, 0xff, MAX);
			memset(key, 0xff, sizeof(key));
			memset(nonce, 0xff, sizeof(nonce));
		} else {
			ss_random_bytes(pt, MAX);
		}
		for (size_t len = 0; len <= 2100; len++)
			check_one(key, nonce, pt + round, len, want, got, back, len % 5);
		for (size_t i = 0; i < SS_ARRAY_LEN(big); i++)
			check_one(key, nonce, pt, big[i], want, got, back, round);
	}
	/* Many keys on one chunk size, for the Poly1305 keys' variety. */
	ss_random_bytes(pt, 16256);
	for (int k = 0; k < 300; k++) {
		uint8_t key[32], nonce[12];

		ss_random_bytes(key, sizeof(key));
		ss_random_bytes(nonce, sizeof(nonce));
		check_one(key, nonce, pt, 16256, want, got, back, 0);
	}
	free(pt), free(want), free(got), free(back);
}

/* Any changed bit of ciphertext or tag, or a changed nonce, is refused and
 * nothing of the text is left in out. */
static void test_tamper(void **state)
{
	static const size_t lens[] = {65, 511, 512, 513, 1000, 4000};
	enum { N = 4000 };
	uint8_t key[32], nonce[12], pt[N], sealed[N + 16], work[N + 32], out[N];
	(void)state;

	if (!ss_chacha512_available())
		return;
	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(nonce, sizeof(nonce));
	ss_random_bytes(pt, sizeof(pt));
	for (size_t i = 0; i < SS_ARRAY_LEN(lens); i++) {
		size_t len = lens[i];

		assert_int_equal(ss_chacha512_seal(key, nonce, sealed, pt, len), 0);
		for (size_t pos = 0; pos < len + 16; pos += len / 11 + 1) {
			memcpy(work, sealed, len + 16);
			work[pos] ^= (uint8_t)(1u << (pos % 8));
			memset(out, 0x55, sizeof(out));
			assert_int_equal(ss_chacha512_open(key, nonce, out, work, len + 16),
					 -EBADMSG);
			for (size_t k = 0; k < len; k++)
				assert_int_equal(out[k], 0);
		}
		/* In place too. */
		memcpy(work, sealed, len + 16);
		work[(len + 16) / 2] ^= 1;
		assert_int_equal(ss_chacha512_open(key, nonce, work, work, len + 16), -EBADMSG);
		for (size_t k = 0; k < len; k++)
			assert_int_equal(work[k], 0);
		nonce[3] ^= 1;
		assert_int_equal(ss_chacha512_open(key, nonce, out, sealed, len + 16), -EBADMSG);
		nonce[3] ^= 1;
		assert_int_equal(ss_chacha512_open(key, nonce, out, sealed, len + 16), 0);
		assert_memory_equal(out, pt, len);
	}
	assert_int_equal(ss_chacha512_open(key, nonce, out, sealed, 15), -EBADMSG);
}

/* A SIP004 chunk (length with n1, payload with n2) as libsodium seals its
 * two parts. */
static void ref_chunk(const uint8_t *key, const uint8_t *n1, const uint8_t *n2, const uint8_t *pt,
		      size_t n, uint8_t *chunk)
{
	uint8_t len[2] = {(uint8_t)(n >> 8), (uint8_t)n};

	crypto_aead_chacha20poly1305_ietf_encrypt_detached(chunk, chunk + 2, NULL, len, 2, NULL, 0,
							   NULL, n1, key);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(chunk + 18, chunk + 18 + n, NULL, pt, n,
							   NULL, 0, NULL, n2, key);
}

static void test_chunks(void **state)
{
	enum { MAX = 0x3FFF + 34 + 64 };
	static uint8_t pt[MAX], want[MAX], got[MAX];
	uint8_t key[32], n1[12], n2[12];
	size_t plen;
	(void)state;

	if (!ss_chacha512_available())
		return;
	ss_random_bytes(pt, sizeof(pt));
	for (size_t n = 1; n <= 0x3FFF; n += (n < 1100 ? 1 : n < 16000 ? 331 : 1)) {
		ss_random_bytes(key, sizeof(key));
		ss_random_bytes(n1, sizeof(n1));
		memcpy(n2, n1, sizeof(n2));
		n2[0] ^= 1;
		ref_chunk(key, n1, n2, pt, n, want);
		got[0] = (uint8_t)(n >> 8);
		got[1] = (uint8_t)n;
		memcpy(got + 18, pt, n);
		memset(got + 34 + n, 0xa5, 64);
		assert_int_equal(ss_chacha512_seal_chunk(key, n1, n2, got, n), 0);
		if (memcmp(got, want, n + 34) != 0)
			fail_msg("chunk differs at payload %zu", n);
		for (size_t i = 0; i < 64; i++)
			assert_int_equal(got[34 + n + i], 0xa5);

		/* The whole chunk: both parts open in place. */
		memcpy(got, want, n + 34);
		plen = 0;
		assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, n + 34, 0x3FFF, &plen),
				 1);
		assert_int_equal(plen, n);
		assert_int_equal(got[0], (uint8_t)(n >> 8));
		assert_int_equal(got[1], (uint8_t)n);
		assert_memory_equal(got + 18, pt, n);

		/* Part of the payload: the length alone, the rest untouched. */
		size_t avail = 18 + (n * 7) % (n + 16);
		memcpy(got, want, n + 34);
		plen = 0;
		assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, avail, 0x3FFF, &plen),
				 0);
		assert_int_equal(plen, n);
		assert_memory_equal(got + 18, want + 18, n + 16);
		/* A length over the caller's limit, a forged length, a forged
		 * payload. */
		memcpy(got, want, n + 34);
		assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, n + 34, n - 1, &plen),
				 -EBADMSG);
		memcpy(got, want, n + 34);
		got[n % 18] ^= 0x10;
		assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, n + 34, 0x3FFF, &plen),
				 -EBADMSG);
		memcpy(got, want, n + 34);
		got[18 + (n * 5) % (n + 16)] ^= 0x01;
		assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, n + 34, 0x3FFF, &plen),
				 -EBADMSG);
		assert_int_equal(plen, n);
	}
	assert_int_equal(ss_chacha512_open_chunk(key, n1, n2, got, 17, 0x3FFF, &plen), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_available_matches_cpu),
	    cmocka_unit_test(test_against_libsodium),
	    cmocka_unit_test(test_tamper),
	    cmocka_unit_test(test_chunks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
