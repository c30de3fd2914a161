/* SPDX-License-Identifier: MIT */
/* The VAES AES-GCM against the libraries' AES-GCM (every library backend
 * table: OpenSSL, mbedtls, libsodium), which give the expected output: every
 * length up to 256, the relay's chunk sizes around 16 and 64 KiB and one
 * message over 1 MiB, in place and not; then tampering, where every failed
 * open leaves out all zeros. On a CPU without VAES and AVX-512 it checks
 * that the code refuses to run, then reports itself skipped. */
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

/* Lengths on top of 0..256: the relay's chunks around 16 KiB (SIP004) and
 * 64 KiB (SIP022, UDP), and one over 1 MiB. */
static const size_t edges[] = {
    1023, 4095, 16256, 16383, 16384, 65408, 65535, 65536, (1u << 20) + 4099};
#define MAX_LEN ((1u << 20) + 4099)

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

static void test_available_matches_cpu(void **state)
{
	(void)state;
	assert_int_equal(ss_vgcm_available(), cpu_has_flags(vaes_flags, SS_ARRAY_LEN(vaes_flags)));
	assert_int_equal(ss_vgcm_available(), ss_cpu_has(SS_VGCM_CPU));
}

/* What holds on any CPU: refused lengths, and nothing comes out unkeyed. */
static void test_refusals(void **state)
{
	ss_vgcm_t g;
	uint8_t key[32] = {7}, nonce[12] = {0}, buf[64 + 16];
	(void)state;

	assert_int_equal(ss_vgcm_setkey(&g, key, 20), -EINVAL);
	assert_int_equal(g.rounds, 0);
	assert_int_equal(ss_vgcm_setkey(&g, key, 24), -ENOTSUP);
	assert_int_equal(g.rounds, 0);
	if (!ss_vgcm_available()) {
		assert_int_equal(ss_vgcm_setkey(&g, key, 16), -ENOTSUP);
		assert_int_equal(ss_vgcm_setkey(&g, key, 32), -ENOTSUP);
		assert_int_equal(g.rounds, 0);
	}
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), -EINVAL);
	assert_true(all_zero(buf, sizeof(buf)));
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(ss_vgcm_open(&g, nonce, buf, buf, sizeof(buf)), -EINVAL);
	assert_true(all_zero(buf, 64));
}

static void test_keys(void **state)
{
	ss_vgcm_t g;
	uint8_t key[32] = {7}, nonce[12] = {0}, buf[64 + 16] = {0};
	/* One state re-keyed across sizes gives what a fresh one gives, and a
	 * failed setkey leaves nothing of the last key behind. */
	static const size_t sizes[] = {32, 16, 32, 32, 16};
	(void)state;

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
	assert_true(all_zero((const uint8_t *)&g, sizeof(g)));
	assert_int_equal(ss_vgcm_setkey(&g, key, 16), 0);
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), 0);
	ss_vgcm_wipe(&g);
	assert_int_equal(ss_vgcm_seal(&g, nonce, buf, buf, 64), -EINVAL);
	assert_int_equal(ss_vgcm_open(&g, nonce, buf, buf, 80), -EINVAL);
}

/* The library tables, each keyed alike, that give the expected output. */
typedef struct {
	const ss_crypto_backend_t *be[NB];
	ss_aead_t a[NB];
	size_t n;
} refs_t;

static void refs_init(refs_t *r, const uint8_t *key, size_t key_len)
{
	r->n = 0;
	for (size_t i = 0; i < NB; i++) {
		if (backends[i]->lib != NULL)
			continue;
		r->be[r->n] = backends[i];
		assert_int_equal(backends[i]->aead_init(&r->a[r->n], SS_AEAD_AES_GCM), 0);
		assert_int_equal(backends[i]->aead_setkey(&r->a[r->n], key, key_len), 0);
		r->n++;
	}
	assert_true(r->n >= 2);
}

static void refs_free(refs_t *r)
{
	for (size_t i = 0; i < r->n; i++)
		r->be[i]->aead_free(&r->a[i]);
}

/* want: what every library seals (they must agree). */
static void refs_seal(refs_t *r, const uint8_t *nonce, const uint8_t *pt, size_t len, uint8_t *want,
		      uint8_t *other)
{
	for (size_t i = 0; i < r->n; i++) {
		assert_int_equal(r->be[i]->aead_seal(&r->a[i], nonce, i ? other : want, pt, len),
				 0);
		if (i && memcmp(other, want, len + 16) != 0)
			fail_msg("%s and %s differ at length %zu", r->be[0]->name, r->be[i]->name,
				 len);
	}
}

typedef struct {
	uint8_t *pt, *want, *other, *got, *back;
} bufs_t;

/* Sealed by the libraries and by ours, out of place (at an odd offset)
 * and in place; the libraries' output opened by ours both ways. */
static void check_one(ss_vgcm_t *g, refs_t *r, const uint8_t *nonce, const uint8_t *pt, size_t len,
		      bufs_t *b, size_t shift)
{
	uint8_t *o = b->got + shift;

	refs_seal(r, nonce, pt, len, b->want, b->other);
	/* Bytes past the tag (and past the text, opening) stay as they were. */
	memset(o + len + 16, 0xa5, 64);
	memset(b->back + len, 0x5a, 64);
	assert_int_equal(ss_vgcm_seal(g, nonce, o, pt, len), 0);
	if (memcmp(o, b->want, len + 16) != 0)
		fail_msg("seal differs from the libraries' at length %zu, %u rounds", len,
			 g->rounds);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(o[len + 16 + i], 0xa5);
	assert_int_equal(ss_vgcm_open(g, nonce, b->back, b->want, len + 16), 0);
	assert_memory_equal(b->back, pt, len);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(b->back[len + i], 0x5a);
	/* In place both ways. */
	memcpy(o, pt, len);
	assert_int_equal(ss_vgcm_seal(g, nonce, o, o, len), 0);
	assert_memory_equal(o, b->want, len + 16);
	assert_int_equal(ss_vgcm_open(g, nonce, o, o, len + 16), 0);
	if (len)
		assert_memory_equal(o, pt, len);
}

#define CAP (MAX_LEN + 16 + 64 + 64)

static void test_against_libraries(void **state)
{
	bufs_t b = {malloc(CAP), malloc(CAP), malloc(CAP), malloc(CAP), malloc(CAP)};
	(void)state;

	assert_true(b.pt && b.want && b.other && b.got && b.back);
	ss_random_bytes(b.pt, CAP);
	for (size_t key_len = 16; key_len <= 32; key_len += 16) {
		for (int round = 0; round < 3; round++) {
			uint8_t key[32], nonce[12];
			refs_t r;
			ss_vgcm_t g;

			ss_random_bytes(key, sizeof(key));
			ss_random_bytes(nonce, sizeof(nonce));
			/* The counter wraps inside the first blocks. */
			if (round == 1)
				memset(nonce, 0xff, sizeof(nonce));
			if (round == 2)
				memset(key, 0, sizeof(key));
			assert_int_equal(ss_vgcm_setkey(&g, key, key_len), 0);
			refs_init(&r, key, key_len);
			for (size_t len = 0; len <= 256; len++)
				check_one(&g, &r, nonce, b.pt + round, len, &b, len % 5);
			for (size_t i = 0; i < SS_ARRAY_LEN(edges); i++)
				check_one(&g, &r, nonce, b.pt, edges[i], &b, round);
			refs_free(&r);
			ss_vgcm_wipe(&g);
		}
	}
	free(b.pt), free(b.want), free(b.other), free(b.got), free(b.back);
}

/* Opens work (a copy of the libraries' sealed, with bit flipped) out of
 * place and in place: refused, and out all zeros both times. */
static void check_flip(ss_vgcm_t *g, const uint8_t *nonce, const uint8_t *sealed, size_t len,
		       size_t bit, bufs_t *b)
{
	memcpy(b->got, sealed, len + 16);
	b->got[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	memset(b->back, 0x55, len);
	if (ss_vgcm_open(g, nonce, b->back, b->got, len + 16) != -EBADMSG)
		fail_msg("length %zu, bit %zu flipped: not refused", len, bit);
	if (!all_zero(b->back, len))
		fail_msg("length %zu, bit %zu flipped: text left in out", len, bit);
	assert_int_equal(ss_vgcm_open(g, nonce, b->got, b->got, len + 16), -EBADMSG);
	if (!all_zero(b->got, len))
		fail_msg("length %zu, bit %zu flipped: text left in place", len, bit);
}

/* Every bit of the tag and of short ciphertexts, a spread of bits in long
 * ones (the first and last always); a changed nonce too. */
static void test_tamper(void **state)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 255, 256, 257, 16383, 65536};
	bufs_t b = {malloc(CAP), malloc(CAP), malloc(CAP), malloc(CAP), malloc(CAP)};
	(void)state;

	assert_true(b.pt && b.want && b.other && b.got && b.back);
	ss_random_bytes(b.pt, CAP);
	for (size_t key_len = 16; key_len <= 32; key_len += 16) {
		uint8_t key[32], nonce[12];
		refs_t r;
		ss_vgcm_t g;

		ss_random_bytes(key, sizeof(key));
		ss_random_bytes(nonce, sizeof(nonce));
		assert_int_equal(ss_vgcm_setkey(&g, key, key_len), 0);
		refs_init(&r, key, key_len);
		for (size_t i = 0; i < SS_ARRAY_LEN(lens); i++) {
			size_t len = lens[i], bits = len * 8, step = bits <= 2048 ? 1 : bits / 509;

			refs_seal(&r, nonce, b.pt, len, b.want, b.other);
			for (size_t bit = 0; bit < bits; bit += step)
				check_flip(&g, nonce, b.want, len, bit, &b);
			if (bits)
				check_flip(&g, nonce, b.want, len, bits - 1, &b);
			for (size_t bit = bits; bit < bits + 128; bit++)
				check_flip(&g, nonce, b.want, len, bit, &b);
			nonce[3] ^= 1;
			memset(b.back, 0x55, len);
			assert_int_equal(ss_vgcm_open(&g, nonce, b.back, b.want, len + 16),
					 -EBADMSG);
			assert_true(all_zero(b.back, len));
			nonce[3] ^= 1;
			assert_int_equal(ss_vgcm_open(&g, nonce, b.back, b.want, len + 16), 0);
		}
		/* Too short to hold a tag: nothing to open. */
		for (size_t len = 0; len < 16; len++)
			assert_int_equal(ss_vgcm_open(&g, nonce, b.back, b.want, len), -EBADMSG);
		refs_free(&r);
		ss_vgcm_wipe(&g);
	}
	free(b.pt), free(b.want), free(b.other), free(b.got), free(b.back);
}

int main(void)
{
	const struct CMUnitTest anywhere[] = {
	    cmocka_unit_test(test_available_matches_cpu),
	    cmocka_unit_test(test_refusals),
	};
	const struct CMUnitTest with_vaes[] = {
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_against_libraries),
	    cmocka_unit_test(test_tamper),
	};
	int rc = cmocka_run_group_tests(anywhere, setup, NULL);

	if (rc != 0)
		return rc;
	if (!cpu_runs(SS_VGCM_CPU, "the VAES AES-GCM"))
		return SS_TEST_SKIPPED;
	return cmocka_run_group_tests(with_vaes, setup, NULL);
}
