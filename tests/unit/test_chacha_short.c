/* The short-message ChaCha20-Poly1305 against the libraries' (libsodium and
 * OpenSSL give the expected output), on every length it takes, in place and
 * not; tampering, where every failed open leaves out all zeros; and its
 * Poly1305 on the edge cases of the final reduction. */
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

/* Every length it serves, in place and not, against each library: libsodium
 * directly and every library backend table (OpenSSL's EVP among them). */
static void test_against_libraries(void **state)
{
	(void)state;
	assert_true(sodium_init() >= 0);
	for (int round = 0; round < 200; round++) {
		uint8_t key[32], nonce[12], pt[SS_CHACHA_SHORT_MAX], want[SS_CHACHA_SHORT_MAX + 16];
		uint8_t other[SS_CHACHA_SHORT_MAX + 16], got[SS_CHACHA_SHORT_MAX + 16 + 8];
		uint8_t back[SS_CHACHA_SHORT_MAX + 8];
		ss_aead_t refs[NB];

		randombytes_buf(key, sizeof(key));
		randombytes_buf(nonce, sizeof(nonce));
		randombytes_buf(pt, sizeof(pt));
		if (round == 1)
			memset(key, 0xff, sizeof(key));
		if (round == 2)
			memset(nonce, 0xff, sizeof(nonce));
		for (size_t i = 0; i < NB; i++)
			if (backends[i]->lib == NULL) {
				assert_int_equal(
				    backends[i]->aead_init(&refs[i], SS_AEAD_CHACHA20_POLY1305), 0);
				assert_int_equal(backends[i]->aead_setkey(&refs[i], key, 32), 0);
			}
		for (size_t len = 0; len <= SS_CHACHA_SHORT_MAX; len++) {
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
			    want, want + len, NULL, pt, len, NULL, 0, NULL, nonce, key);
			for (size_t i = 0; i < NB; i++) {
				if (backends[i]->lib != NULL)
					continue;
				assert_int_equal(
				    backends[i]->aead_seal(&refs[i], nonce, other, pt, len), 0);
				if (memcmp(other, want, len + 16) != 0)
					fail_msg("%s and libsodium differ at length %zu",
						 backends[i]->name, len);
			}
			/* Nothing written past the tag, or past the text opening. */
			memset(got, 0xa5, sizeof(got));
			memset(back, 0x5a, sizeof(back));
			assert_int_equal(ss_chacha_short_seal(key, nonce, got, pt, len), 0);
			if (memcmp(got, want, len + 16) != 0)
				fail_msg("seal differs at length %zu", len);
			assert_true(got[len + 16] == 0xa5 && got[len + 23] == 0xa5);
			assert_int_equal(ss_chacha_short_open(key, nonce, back, want, len + 16), 0);
			assert_memory_equal(back, pt, len);
			assert_true(back[len] == 0x5a && back[len + 7] == 0x5a);
			/* In place. */
			memcpy(got, pt, len);
			assert_int_equal(ss_chacha_short_seal(key, nonce, got, got, len), 0);
			assert_memory_equal(got, want, len + 16);
			assert_int_equal(ss_chacha_short_open(key, nonce, got, got, len + 16), 0);
			if (len)
				assert_memory_equal(got, pt, len);
		}
		for (size_t i = 0; i < NB; i++)
			if (backends[i]->lib == NULL)
				backends[i]->aead_free(&refs[i]);
	}
}

/* Every bit of ciphertext and tag at every length, out of place and in
 * place: refused, and out all zeros. */
static void test_tamper(void **state)
{
	uint8_t key[32], nonce[12], pt[SS_CHACHA_SHORT_MAX], sealed[SS_CHACHA_SHORT_MAX + 16];
	uint8_t work[SS_CHACHA_SHORT_MAX + 17], out[SS_CHACHA_SHORT_MAX + 17];
	(void)state;

	randombytes_buf(key, sizeof(key));
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(pt, sizeof(pt));
	for (size_t len = 0; len <= sizeof(pt); len++) {
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(sealed, sealed + len, NULL, pt,
								   len, NULL, 0, NULL, nonce, key);
		for (size_t bit = 0; bit < (len + 16) * 8; bit++) {
			memcpy(work, sealed, len + 16);
			work[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			memset(out, 0x55, sizeof(out));
			assert_int_equal(ss_chacha_short_open(key, nonce, out, work, len + 16),
					 -EBADMSG);
			if (!all_zero(out, len))
				fail_msg("length %zu, bit %zu: text left in out", len, bit);
			assert_int_equal(ss_chacha_short_open(key, nonce, work, work, len + 16),
					 -EBADMSG);
			if (!all_zero(work, len))
				fail_msg("length %zu, bit %zu: text left in place", len, bit);
		}
		nonce[11] ^= 1;
		memset(out, 0x55, sizeof(out));
		assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, len + 16), -EBADMSG);
		assert_true(all_zero(out, len));
		nonce[11] ^= 1;
		assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, len + 16), 0);
	}
	/* Lengths it does not take: refused, and nothing left in out. */
	memset(out, 0x55, sizeof(out));
	assert_int_equal(ss_chacha_short_seal(key, nonce, out, pt, SS_CHACHA_SHORT_MAX + 1),
			 -EINVAL);
	assert_true(all_zero(out, sizeof(out)));
	for (size_t len = 0; len < 16; len++)
		assert_int_equal(ss_chacha_short_open(key, nonce, out, sealed, len), -EBADMSG);
	memset(work, 0x55, sizeof(work));
	memset(out, 0x55, sizeof(out));
	assert_int_equal(ss_chacha_short_open(key, nonce, out, work, SS_CHACHA_SHORT_MAX + 17),
			 -EBADMSG);
	assert_true(all_zero(out, SS_CHACHA_SHORT_MAX + 1));
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
	    cmocka_unit_test(test_against_libraries),
	    cmocka_unit_test(test_tamper),
	    cmocka_unit_test(test_backends_across_the_limit),
	    cmocka_unit_test(test_poly1305_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
