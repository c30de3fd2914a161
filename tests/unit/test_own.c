/* SPDX-License-Identifier: MIT */
/* Our own code's tables (crypto/own.c) against the library beneath each:
 * what serves which key, the edge lengths of every algorithm through the
 * routing, and random inputs (keys, lengths, nonces, buffer placement,
 * tampering) where both must give the same bytes and the same refusals. */
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
#include "crypto/method.h"
#include "crypto/primitives.h"

static const struct {
	ss_aead_alg_t alg;
	size_t key_len;
	const char *method;
} algs[] = {
    {SS_AEAD_AES_GCM, 16, "aes-128-gcm"},
    {SS_AEAD_AES_GCM, 24, "aes-192-gcm"},
    {SS_AEAD_AES_GCM, 32, "aes-256-gcm"},
    {SS_AEAD_CHACHA20_POLY1305, 32, "chacha20-ietf-poly1305"},
    {SS_AEAD_XCHACHA20_POLY1305, 32, "xchacha20-ietf-poly1305"},
};

#define MAX_LEN ((1u << 20) + 4099)
#define CAP (MAX_LEN + 16 + 64)

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

/* Our own tables and the library beneath each, keyed alike. */
typedef struct {
	const ss_crypto_backend_t *own, *lib;
	ss_aead_t a, b; /* own, lib */
} pair_t;

static void pair_init(pair_t *p, const ss_crypto_backend_t *own, ss_aead_alg_t alg)
{
	p->own = own;
	p->lib = own->lib;
	assert_int_equal(p->own->aead_init(&p->a, alg), 0);
	assert_int_equal(p->lib->aead_init(&p->b, alg), 0);
}

static void pair_setkey(pair_t *p, const uint8_t *key, size_t key_len)
{
	assert_int_equal(p->own->aead_setkey(&p->a, key, key_len), 0);
	assert_int_equal(p->lib->aead_setkey(&p->b, key, key_len), 0);
}

static void pair_free(pair_t *p)
{
	p->own->aead_free(&p->a);
	p->lib->aead_free(&p->b);
}

/* Sealed by both (ours at got + shift, in place when asked), the same
 * bytes; the library opens ours in place, ours the library's (in place
 * when asked). */
static void pair_check(pair_t *p, const uint8_t *nonce, const uint8_t *pt, size_t len,
		       uint8_t *want, uint8_t *got, size_t shift, bool in_place, const char *what)
{
	uint8_t *o = got + shift, *back;

	assert_int_equal(p->lib->aead_seal(&p->b, nonce, want, pt, len), 0);
	if (in_place)
		memmove(o, pt, len);
	assert_int_equal(p->own->aead_seal(&p->a, nonce, o, in_place ? o : pt, len), 0);
	if (memcmp(o, want, len + SS_AEAD_TAG_LEN) != 0)
		fail_msg("%s, %s: seals differently from %s at length %zu", p->own->name, what,
			 p->lib->name, len);
	assert_int_equal(p->lib->aead_open(&p->b, nonce, o, o, len + SS_AEAD_TAG_LEN), 0);
	if (memcmp(o, pt, len) != 0)
		fail_msg("%s, %s: %s cannot open ours at length %zu", p->own->name, what,
			 p->lib->name, len);
	back = in_place ? want : o;
	assert_int_equal(p->own->aead_open(&p->a, nonce, back, want, len + SS_AEAD_TAG_LEN), 0);
	if (memcmp(back, pt, len) != 0)
		fail_msg("%s, %s: cannot open %s's at length %zu", p->own->name, what, p->lib->name,
			 len);
}

/* Which code serves which key, as the tables say and as --version says:
 * ours only for AES-128/256-GCM, and only where the CPU has VAES. */
static void test_routes(void **state)
{
	char line[256];
	(void)state;

	for (size_t i = 0; i < NB; i++) {
		const ss_crypto_backend_t *be = backends[i];

		if (!be->lib)
			continue;
		for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++) {
			const ss_method_t *m;
			bool vaes = algs[g].alg == SS_AEAD_AES_GCM && algs[g].key_len != 24 &&
				    ss_vgcm_available();
			char lib[128];

			assert_int_equal(ss_method_lookup(algs[g].method, &m, NULL, 0), 0);
			ss_crypto_describe(be, m, line, sizeof(line));
			be->lib->aead_impl(algs[g].alg, algs[g].key_len, lib, sizeof(lib));
			printf("%-12s %-24s %s\n", be->name, m->name, line);
			assert_int_equal(strstr(line, "own VAES/AVX-512 code") != NULL, vaes);
			assert_int_equal(strstr(line, lib) != NULL, !vaes);
			/* Nothing else of ours. */
			assert_int_equal(strstr(line, "own") != NULL, vaes);
			/* The library table names the library only. */
			ss_crypto_describe(be->lib, m, line, sizeof(line));
			assert_null(strstr(line, "own"));
		}
	}
}

/* Every length 0..256 and the relay's sizes, in place and not, through
 * each own table and its library. */
static void test_edges(void **state)
{
	static const size_t edges[] = {16256, 16383, 16384, 65535, 65536, MAX_LEN};
	uint8_t *pt = malloc(CAP), *want = malloc(CAP), *got = malloc(CAP);
	(void)state;

	assert_true(pt && want && got);
	ss_random_bytes(pt, CAP);
	for (size_t i = 0; i < NB; i++) {
		if (!backends[i]->lib)
			continue;
		for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++) {
			uint8_t key[32], nonce[24];
			pair_t p;

			ss_random_bytes(key, sizeof(key));
			ss_random_bytes(nonce, sizeof(nonce));
			pair_init(&p, backends[i], algs[g].alg);
			pair_setkey(&p, key, algs[g].key_len);
			for (size_t len = 0; len <= 256; len++)
				for (int in_place = 0; in_place < 2; in_place++)
					pair_check(&p, nonce, pt, len, want, got, len % 3, in_place,
						   algs[g].method);
			for (size_t e = 0; e < SS_ARRAY_LEN(edges); e++)
				for (int in_place = 0; in_place < 2; in_place++)
					pair_check(&p, nonce, pt, edges[e], want, got, 1, in_place,
						   algs[g].method);
			pair_free(&p);
		}
	}
	free(pt), free(want), free(got);
}

/* A length for the random test: mostly a few blocks (SIP004's sealed
 * lengths, SIP022's headers), sometimes up to a SIP022 chunk. */
static size_t random_len(uint32_t r)
{
	switch (r % 4) {
	case 0:
		return (r >> 2) % 96;
	case 1:
		return (r >> 2) % 1024;
	case 2:
		return (r >> 2) % 20000;
	default:
		return (r >> 2) % 70000;
	}
}

/* Random keys (of every size the algorithm takes), lengths, nonces and
 * placement; then one flipped bit, refused by both with nothing left in
 * out. */
static void test_random(void **state)
{
	enum { ROUNDS = 4000, BIG = 70000 + 16 + 64 };
	uint8_t *pt = malloc(BIG), *want = malloc(BIG), *got = malloc(BIG), *out = malloc(BIG);
	pair_t pairs[NB][SS_ARRAY_LEN(algs)];
	size_t nown = 0;
	(void)state;

	assert_true(pt && want && got && out);
	for (size_t i = 0; i < NB; i++) {
		if (!backends[i]->lib)
			continue;
		for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++) {
			uint8_t key[32];

			ss_random_bytes(key, sizeof(key));
			pair_init(&pairs[nown][g], backends[i], algs[g].alg);
			pair_setkey(&pairs[nown][g], key, algs[g].key_len);
		}
		nown++;
	}
	assert_true(nown > 0);
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t r[4];
		uint8_t key[32], nonce[24];

		ss_random_bytes(r, sizeof(r));
		ss_random_bytes(key, sizeof(key));
		ss_random_bytes(nonce, sizeof(nonce));
		size_t g = r[0] % SS_ARRAY_LEN(algs), len = random_len(r[1]);
		pair_t *p = &pairs[(r[0] >> 8) % nown][g];
		size_t shift = (r[0] >> 16) % 64, bit = r[2] % ((len + SS_AEAD_TAG_LEN) * 8);
		bool in_place = r[3] & 1;

		ss_random_bytes(pt, len);
		/* A new key now and then, so states are re-keyed in between. */
		if ((r[3] & 6) == 0)
			pair_setkey(p, key, algs[g].key_len);
		pair_check(p, nonce, pt, len, want, got, shift, in_place, algs[g].method);
		/* want holds the sealed text again (pair_check opened it). */
		assert_int_equal(p->lib->aead_seal(&p->b, nonce, want, pt, len), 0);
		want[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		memset(out, 0x55, len);
		assert_int_equal(p->own->aead_open(&p->a, nonce, out, want, len + 16), -EBADMSG);
		if (!all_zero(out, len))
			fail_msg("%s: text left in out, length %zu", p->own->name, len);
		memset(out, 0x55, len);
		assert_int_equal(p->lib->aead_open(&p->b, nonce, out, want, len + 16), -EBADMSG);
		if (!all_zero(out, len))
			fail_msg("%s: text left in out, length %zu", p->lib->name, len);
	}
	for (size_t i = 0; i < nown; i++)
		for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++)
			pair_free(&pairs[i][g]);
	free(pt), free(want), free(got), free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_routes),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
