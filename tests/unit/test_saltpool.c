/* SPDX-License-Identifier: MIT */
/* The 2022 salt pool: exact membership for ttl seconds, fixed capacity. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/primitives.h"
#include "crypto/saltpool.h"

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

static void salt_of(uint32_t v, uint8_t *salt, size_t len)
{
	memset(salt, 0, len);
	memcpy(salt, &v, sizeof(v));
}

static void test_init(void **state)
{
	ss_saltpool_t p;
	uint8_t salt[33] = {0};
	(void)state;

	assert_int_equal(ss_saltpool_init(&p, 0, 60), -EINVAL);
	assert_int_equal(ss_saltpool_init(&p, 10, 0), -EINVAL);
	assert_int_equal(ss_saltpool_init(&p, ((size_t)1 << 30) + 1, 60), -EINVAL);
	/* A failed init leaves a pool that refuses everything and frees. */
	assert_int_equal(ss_saltpool_check_add(&p, salt, 16, 1), -EINVAL);
	ss_saltpool_free(&p);

	assert_int_equal(ss_saltpool_init(&p, 1, 60), 0);
	assert_int_equal(ss_saltpool_check_add(&p, salt, 0, 1), -EINVAL);
	assert_int_equal(ss_saltpool_check_add(&p, salt, 33, 1), -EINVAL);
	assert_int_equal(ss_saltpool_check_add(&p, salt, 32, 1), 0);
	ss_saltpool_free(&p);
	ss_saltpool_free(&p);
}

static void test_seen_and_expiry(void **state)
{
	ss_saltpool_t p;
	uint8_t a[32], b[32];
	(void)state;

	assert_int_equal(ss_saltpool_init(&p, 100, 60), 0);
	ss_random_bytes(a, sizeof(a));
	memcpy(b, a, sizeof(b));
	b[31] ^= 1;

	assert_int_equal(ss_saltpool_check_add(&p, a, 32, 1000), 0);
	assert_int_equal(ss_saltpool_check_add(&p, a, 32, 1000), -EEXIST);
	/* One bit, or a prefix, is another salt. */
	assert_int_equal(ss_saltpool_check_add(&p, b, 32, 1000), 0);
	assert_int_equal(ss_saltpool_check_add(&p, a, 16, 1000), 0);
	assert_int_equal(ss_saltpool_check_add(&p, a, 16, 1001), -EEXIST);
	assert_int_equal(p.count, 3);

	/* Remembered for the whole ttl: 60 s after, still seen... */
	assert_int_equal(ss_saltpool_check_add(&p, a, 32, 1060), -EEXIST);
	/* ...then forgotten, and accepted (and remembered) again. */
	assert_int_equal(ss_saltpool_check_add(&p, a, 32, 1061), 0);
	assert_int_equal(p.count, 1);
	assert_int_equal(ss_saltpool_check_add(&p, a, 32, 1121), -EEXIST);
	assert_int_equal(ss_saltpool_check_add(&p, b, 32, 1121), 0);

	/* A clock going back forgets nothing early. */
	assert_int_equal(ss_saltpool_check_add(&p, b, 32, 900), -EEXIST);
	ss_saltpool_expire(&p, 2000);
	assert_int_equal(p.count, 0);
	ss_saltpool_free(&p);
}

static void test_full(void **state)
{
	ss_saltpool_t p;
	uint8_t s[16];
	(void)state;

	assert_int_equal(ss_saltpool_init(&p, 4, 60), 0);
	for (uint32_t i = 0; i < 4; i++) {
		salt_of(i, s, sizeof(s));
		assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 10 + i), 0);
	}
	/* Full: a new salt is refused, not let in unrecorded; old ones still
	 * count as seen. */
	salt_of(4, s, sizeof(s));
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 20), -ENOBUFS);
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 20), -ENOBUFS);
	salt_of(2, s, sizeof(s));
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 20), -EEXIST);
	/* The oldest expires at 71: room for one. */
	salt_of(4, s, sizeof(s));
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 71), 0);
	salt_of(5, s, sizeof(s));
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 71), -ENOBUFS);
	salt_of(0, s, sizeof(s));
	assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 72), 0);
	ss_saltpool_free(&p);
}

/* Against a plain list with the same rules, over a small universe of salts
 * (many repeats) in a small table (long probe runs, many deletions). */
static void test_model(void **state)
{
	enum { CAP = 64, UNIVERSE = 300, OPS = 200000, TTL = 60 };
	struct {
		uint32_t v;
		uint64_t t;
	} model[CAP];
	size_t mhead = 0, mcount = 0;
	ss_saltpool_t p;
	uint64_t now = 1000;
	unsigned seed = 12345;
	(void)state;

	assert_int_equal(ss_saltpool_init(&p, CAP, TTL), 0);
	for (int op = 0; op < OPS; op++) {
		uint8_t s[32];
		uint32_t v;
		int want = 0, got;

		seed = seed * 1103515245u + 12345u;
		now += (seed >> 16) % 7 == 0 ? (seed >> 20) % 5 : 0;
		seed = seed * 1103515245u + 12345u;
		v = (seed >> 8) % UNIVERSE;
		salt_of(v, s, sizeof(s));

		while (mcount > 0 && now - model[mhead].t > TTL) {
			mhead = (mhead + 1) % CAP;
			mcount--;
		}
		for (size_t i = 0; i < mcount; i++)
			if (model[(mhead + i) % CAP].v == v)
				want = -EEXIST;
		if (want == 0 && mcount == CAP)
			want = -ENOBUFS;
		if (want == 0) {
			model[(mhead + mcount) % CAP].v = v;
			model[(mhead + mcount) % CAP].t = now;
			mcount++;
		}
		got = ss_saltpool_check_add(&p, s, sizeof(s), now);
		if (got != want)
			fail_msg("op %d salt %u at %llu: got %d, want %d", op, v,
				 (unsigned long long)now, got, want);
		assert_int_equal(p.count, mcount);
	}
	ss_saltpool_free(&p);
}

/* FIFO pools against a queue, through several doublings of the table. */
static void test_model_fifo(void **state)
{
	enum { CAP = 3000, UNIVERSE = 9000, OPS = 60000 };
	static uint32_t queue[CAP];
	static bool inq[UNIVERSE];
	size_t qhead = 0, qcount = 0;
	ss_saltpool_t p;
	unsigned seed = 777;
	(void)state;

	assert_int_equal(ss_saltpool_init_fifo(&p, CAP), 0);
	assert_true(p.mask < p.max_mask); /* starts on a prefix of the table */
	for (int op = 0; op < OPS; op++) {
		uint8_t s[32];
		int want = 0, got;

		seed = seed * 1103515245u + 12345u;
		uint32_t v = (seed >> 8) % UNIVERSE;
		salt_of(v, s, sizeof(s));
		if (inq[v]) {
			want = -EEXIST;
		} else {
			if (qcount == CAP) {
				inq[queue[qhead]] = false;
				qhead = (qhead + 1) % CAP;
				qcount--;
			}
			queue[(qhead + qcount++) % CAP] = v;
			inq[v] = true;
		}
		got = ss_saltpool_check_add(&p, s, sizeof(s), (uint64_t)op);
		if (got != want)
			fail_msg("op %d salt %u: got %d, want %d", op, v, got, want);
		assert_int_equal(p.count, qcount);
		assert_true(2 * p.count <= p.mask + 1);
	}
	assert_int_equal(p.mask, p.max_mask);
	ss_saltpool_free(&p);
}

/* The table grows with the count: every salt stays findable. */
static void test_growth(void **state)
{
	enum { N = 200000 };
	ss_saltpool_t p;
	uint8_t s[32];
	(void)state;

	assert_int_equal(ss_saltpool_init(&p, N, 60), 0);
	size_t first = p.mask + 1;
	for (uint32_t v = 0; v < N; v++) {
		salt_of(v, s, sizeof(s));
		assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 5), 0);
		if (v == 100)
			assert_int_equal(p.mask + 1, first); /* few salts, small table */
	}
	assert_true(p.mask + 1 >= 2 * (size_t)N);
	for (uint32_t v = 0; v < N; v += 7) {
		salt_of(v, s, sizeof(s));
		assert_int_equal(ss_saltpool_check_add(&p, s, sizeof(s), 6), -EEXIST);
	}
	assert_int_equal(ss_saltpool_check_add(&p, (const uint8_t *)"new salt", 8, 6), -ENOBUFS);
	ss_saltpool_free(&p);
}

/* A shared pool (--workers): threads offer the same salts at once; each
 * salt is taken by exactly one of them, and the pool stays whole. */
#define SHARE_THREADS 4
#define SHARE_SALTS 20000

typedef struct {
	ss_saltpool_t *p;
	unsigned taken;
} share_arg_t;

static void *share_run(void *arg)
{
	share_arg_t *a = arg;
	uint8_t salt[32];

	for (uint32_t v = 0; v < SHARE_SALTS; v++) {
		salt_of(v, salt, sizeof(salt));
		if (ss_saltpool_check_add(a->p, salt, sizeof(salt), 1) == 0)
			a->taken++;
	}
	return NULL;
}

static void test_shared(void **state)
{
	ss_saltpool_t p;
	pthread_t t[SHARE_THREADS];
	share_arg_t a[SHARE_THREADS];
	unsigned taken = 0;
	uint8_t salt[32];
	(void)state;

	assert_int_equal(ss_saltpool_init_fifo(&p, 2 * SHARE_SALTS), 0);
	ss_saltpool_share(&p);
	for (int i = 0; i < SHARE_THREADS; i++) {
		a[i] = (share_arg_t){.p = &p};
		assert_int_equal(pthread_create(&t[i], NULL, share_run, &a[i]), 0);
	}
	for (int i = 0; i < SHARE_THREADS; i++) {
		pthread_join(t[i], NULL);
		taken += a[i].taken;
	}
	assert_int_equal(taken, SHARE_SALTS);
	assert_int_equal(p.count, SHARE_SALTS);
	for (uint32_t v = 0; v < SHARE_SALTS; v += 97) {
		salt_of(v, salt, sizeof(salt));
		assert_int_equal(ss_saltpool_check_add(&p, salt, sizeof(salt), 2), -EEXIST);
	}
	ss_saltpool_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init),       cmocka_unit_test(test_seen_and_expiry),
	    cmocka_unit_test(test_full),       cmocka_unit_test(test_model),
	    cmocka_unit_test(test_model_fifo), cmocka_unit_test(test_growth),
	    cmocka_unit_test(test_shared),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
