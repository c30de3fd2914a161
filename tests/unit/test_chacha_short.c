/* The short-message ChaCha20-Poly1305 against libsodium's, on every length
 * it takes, and its Poly1305 on the edge cases of the final reduction. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "testutil.h"

#include "crypto/chacha_short.h"
#include "crypto/primitives.h"

static void test_against_sodium(void **state)
{
	(void)state;
	assert_true(sodium_init() >= 0);
	for (int round = 0; round < 200; round++) {
		uint8_t key[32], nonce[12], pt[SS_CHACHA_SHORT_MAX], want[SS_CHACHA_SHORT_MAX + 16];
		uint8_t got[SS_CHACHA_SHORT_MAX + 16], back[SS_CHACHA_SHORT_MAX];

		randombytes_buf(key, sizeof(key));
		randombytes_buf(nonce, sizeof(nonce));
		randombytes_buf(pt, sizeof(pt));
		if (round == 1)
			memset(key, 0xff, sizeof(key));
		for (size_t len = 0; len <= SS_CHACHA_SHORT_MAX; len++) {
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
			    want, want + len, NULL, pt, len, NULL, 0, NULL, nonce, key);
			assert_int_equal(ss_chacha_short_seal(key, nonce, got, pt, len), 0);
			if (memcmp(got, want, len + 16) != 0)
				fail_msg("seal differs at length %zu", len);
			assert_int_equal(ss_chacha_short_open(key, nonce, back, got, len + 16), 0);
			assert_memory_equal(back, pt, len);
			/* In place. */
			memcpy(got, pt, len);
			assert_int_equal(ss_chacha_short_seal(key, nonce, got, got, len), 0);
			assert_memory_equal(got, want, len + 16);
			assert_int_equal(ss_chacha_short_open(key, nonce, got, got, len + 16), 0);
			if (len)
				assert_memory_equal(got, pt, len);
		}
	}
}

static void test_tamper(void **state)
{
	uint8_t key[32], nonce[12], pt[SS_CHACHA_SHORT_MAX], sealed[SS_CHACHA_SHORT_MAX + 16];
	uint8_t work[SS_CHACHA_SHORT_MAX + 16], out[SS_CHACHA_SHORT_MAX];
	(void)state;

	randombytes_buf(key, sizeof(key));
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(pt, sizeof(pt));
	for (size_t len = 0; len <= sizeof(pt); len++) {
		assert_int_equal(ss_chacha_short_seal(key, nonce, sealed, pt, len), 0);
		for (size_t pos = 0; pos < len + 16; pos += 1 + len / 8) {
			memcpy(work, sealed, len + 16);
			work[pos] ^= (uint8_t)(0x80u >> (pos % 8));
			memset(out, 0x55, sizeof(out));
			assert_int_equal(ss_chacha_short_open(key, nonce, out, work, len + 16),
					 -EBADMSG);
			for (size_t k = 0; k < len; k++)
				assert_int_equal(out[k], 0);
		}
		/* In place too. */
		memcpy(work, sealed, len + 16);
		work[len] ^= 4;
		assert_int_equal(ss_chacha_short_open(key, nonce, work, work, len + 16), -EBADMSG);
		for (size_t k = 0; k < len; k++)
			assert_int_equal(work[k], 0);
		nonce[11] ^= 1;
		assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, len + 16), -EBADMSG);
		nonce[11] ^= 1;
	}
	/* Lengths it does not take. */
	assert_int_equal(ss_chacha_short_seal(key, nonce, sealed, pt, SS_CHACHA_SHORT_MAX + 1),
			 -EINVAL);
	for (size_t len = 0; len < 16; len++)
		assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, len), -EBADMSG);
	assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, SS_CHACHA_SHORT_MAX + 17),
			 -EBADMSG);
}

/* Through each backend, across the short path's limit, against libsodium's
 * general code; and open refuses what cannot hold a tag. */
static void test_backends_across_the_limit(void **state)
{
	enum { TOP = SS_CHACHA_SHORT_MAX + 8 };
	uint8_t key[32], nonce[12], pt[TOP], want[TOP + 16], got[TOP + 16], back[TOP];
	(void)state;

	randombytes_buf(key, sizeof(key));
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(pt, sizeof(pt));
	for (size_t b = 0; b < NB; b++) {
		const ss_crypto_backend_t *be = backends[b];
		ss_aead_t a;

		assert_int_equal(be->aead_init(&a, SS_AEAD_CHACHA20_POLY1305), 0);
		assert_int_equal(be->aead_setkey(&a, key, sizeof(key)), 0);
		for (size_t len = SS_CHACHA_SHORT_MAX - 8; len <= TOP; len++) {
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
			    want, want + len, NULL, pt, len, NULL, 0, NULL, nonce, key);
			assert_int_equal(be->aead_seal(&a, nonce, got, pt, len), 0);
			assert_memory_equal(got, want, len + 16);
			assert_int_equal(be->aead_open(&a, nonce, back, got, len + 16), 0);
			assert_memory_equal(back, pt, len);
			got[len / 2] ^= 1;
			assert_int_equal(be->aead_open(&a, nonce, back, got, len + 16), -EBADMSG);
		}
		for (size_t len = 0; len < 16; len++)
			assert_int_equal(be->aead_open(&a, nonce, back, got, len), -EBADMSG);
		be->aead_free(&a);
	}
}

/* Poly1305 where the accumulator ends at or just past 2^130 - 5, where the
 * last carry and the conditional subtraction matter (in the manner of RFC
 * 8439's appendix A.3 cases), with libsodium's as the reference; then
 * random keys and messages. */
static void test_poly1305_edges(void **state)
{
	static const struct {
		uint8_t r0;   /* first byte of r; the rest of r is zero */
		uint8_t fill; /* every message byte */
		uint8_t s0;   /* first byte of s (0xff: s all ones) */
		size_t len;
	} cases[] = {
	    {2, 0xff, 0, 16}, {2, 0xff, 0xff, 16}, {1, 0xff, 0, 48},    {1, 0xfb, 0, 48},
	    {2, 0xff, 0, 32}, {1, 0xff, 0, 16},    {1, 0xff, 0xff, 64}, {0, 0xff, 0, 64},
	};
	uint8_t key[32], msg[80], want[16], got[16];
	(void)state;

	for (size_t i = 0; i < SS_ARRAY_LEN(cases); i++) {
		memset(key, 0, sizeof(key));
		key[0] = cases[i].r0;
		if (cases[i].s0 == 0xff)
			memset(key + 16, 0xff, 16);
		memset(msg, cases[i].fill, sizeof(msg));
		crypto_onetimeauth_poly1305(want, msg, cases[i].len, key);
		ss_chacha_short_poly1305(key, msg, cases[i].len, got);
		assert_memory_equal(got, want, 16);
	}
	for (int round = 0; round < 2000; round++) {
		size_t len = 16 * (size_t)(round % 6);

		randombytes_buf(key, sizeof(key));
		randombytes_buf(msg, sizeof(msg));
		if (round % 3 == 0)
			memset(msg, 0xff, len);
		crypto_onetimeauth_poly1305(want, msg, len, key);
		ss_chacha_short_poly1305(key, msg, len, got);
		assert_memory_equal(got, want, 16);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_against_sodium),
	    cmocka_unit_test(test_tamper),
	    cmocka_unit_test(test_backends_across_the_limit),
	    cmocka_unit_test(test_poly1305_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
