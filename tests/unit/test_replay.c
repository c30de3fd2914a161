/* AEAD salt replay filter. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/primitives.h"
#include "crypto/replay.h"

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

/* Distinct salts from a counter, so runs are repeatable. */
static void salt_of(uint64_t i, uint8_t salt[32])
{
	memset(salt, 0x5c, 32);
	memcpy(salt, &i, sizeof(i));
}

static void test_init(void **state)
{
	ss_replay_t r;
	(void)state;

	assert_int_equal(ss_replay_init(&r, 0, 1e-6), -EINVAL);
	assert_int_equal(ss_replay_init(&r, 100, 0.0), -EINVAL);
	assert_int_equal(ss_replay_init(&r, 100, 1.0), -EINVAL);
	assert_int_equal(ss_replay_init(&r, 100, -1.0), -EINVAL);

	assert_int_equal(ss_replay_init(&r, 1000, 1e-6), 0);
	assert_non_null(r.bits[0]);
	assert_non_null(r.bits[1]);
	/* Each filter gets half the rate: -log2(5e-7) = 20.9 -> 21 hashes in
	 * 1000 * 21 / ln 2 = 30297 bits, rounded up to 30336; there 19 hashes
	 * already meet it: (1 - e^(-k n / m))^k = 4.89e-7 (18 give 5.19e-7). */
	assert_int_equal(r.nbits, 30336);
	assert_int_equal(r.nhash, 19);
	assert_int_equal(r.count, 0);
	ss_replay_free(&r);
	assert_null(r.bits[0]);

	/* The server's setting, shadowsocks-libev's: 1e6 salts, 1e-15. About
	 * the memory of its filters (8.8 MiB each against 8.6), 46 hashes
	 * against 50. */
	assert_int_equal(ss_replay_init(&r, 1000000, 1e-15), 0);
	assert_int_equal(r.nbits, 73577472);
	assert_int_equal(r.nhash, 46);
	ss_replay_free(&r);

	/* Free is safe on a zeroed filter, and twice. */
	memset(&r, 0, sizeof(r));
	ss_replay_free(&r);
	ss_replay_free(&r);
}

static void test_seen(void **state)
{
	ss_replay_t r;
	uint8_t salt[32];
	(void)state;

	assert_int_equal(ss_replay_init(&r, 1000, 1e-9), 0);
	for (uint64_t i = 0; i < 1000; i++) {
		salt_of(i, salt);
		assert_false(ss_replay_check_add(&r, salt, sizeof(salt)));
		assert_true(ss_replay_check_add(&r, salt, sizeof(salt)));
	}
	for (uint64_t i = 0; i < 1000; i++) {
		salt_of(i, salt);
		assert_true(ss_replay_check_add(&r, salt, sizeof(salt)));
	}
	/* The salt length is part of what is remembered. */
	salt_of(0, salt);
	assert_false(ss_replay_check_add(&r, salt, 16));
	assert_true(ss_replay_check_add(&r, salt, 16));
	ss_replay_free(&r);
}

/* The last capacity..2*capacity salts are remembered; older ones are
 * forgotten once both filters rotated past them. */
static void test_rotation(void **state)
{
	const size_t cap = 500;
	ss_replay_t r;
	uint8_t salt[32];
	(void)state;

	assert_int_equal(ss_replay_init(&r, cap, 1e-9), 0);
	for (uint64_t i = 0; i < 10 * cap; i++) {
		salt_of(i, salt);
		assert_false(ss_replay_check_add(&r, salt, sizeof(salt)));
		assert_true(r.count >= 1 && r.count <= cap);
		/* The last cap salts are known at every point of the
		 * rotation (a hit adds nothing). */
		for (uint64_t back = 0; back < cap && back <= i; back += 7) {
			salt_of(i - back, salt);
			assert_true(ss_replay_check_add(&r, salt, sizeof(salt)));
		}
	}
	ss_replay_free(&r);

	/* Salts 0..cap-1 fill one filter, cap..2cap-1 the other; the next
	 * one clears the first. */
	assert_int_equal(ss_replay_init(&r, cap, 1e-9), 0);
	for (uint64_t i = 0; i < 2 * cap; i++) {
		salt_of(i, salt);
		assert_false(ss_replay_check_add(&r, salt, sizeof(salt)));
	}
	salt_of(0, salt);
	assert_true(ss_replay_check_add(&r, salt, sizeof(salt)));
	salt_of(2 * cap, salt);
	assert_false(ss_replay_check_add(&r, salt, sizeof(salt)));
	for (uint64_t i = 0; i < cap / 2; i++) {
		salt_of(i, salt);
		assert_false(ss_replay_check_add(&r, salt, sizeof(salt)));
	}
	ss_replay_free(&r);
}

/* The false positive rate stays under the target with full filters. */
static void test_false_positives(void **state)
{
	/* A rate high enough to observe: per filter 230848 bits and 6 hashes,
	 * about 0.0044 in theory. */
	const size_t cap = 20000;
	const double p = 1e-2;
	ss_replay_t r;
	uint8_t salt[32];
	size_t fp = 0;
	(void)state;

	assert_int_equal(ss_replay_init(&r, cap, p), 0);
	/* Fill it (a false positive adds nothing, hence the count). */
	for (uint64_t i = 0; r.count < cap; i++) {
		salt_of(i, salt);
		(void)ss_replay_check_add(&r, salt, sizeof(salt));
	}
	assert_int_equal(r.nbits, 230848);
	assert_int_equal(r.nhash, 6);
	/* The full filter stays in use for the next cap - 1 salts (they go
	 * to the other one), so every probe meets it. */
	for (size_t t = 0; t < cap - 1; t++) {
		ss_random_bytes(salt, sizeof(salt));
		if (ss_replay_check_add(&r, salt, sizeof(salt)))
			fp++;
	}
	print_message("false positives: %zu of %zu (target rate %g)\n", fp, cap - 1, p);
	assert_true((double)fp <= p * (double)cap);
	ss_replay_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init),
	    cmocka_unit_test(test_seen),
	    cmocka_unit_test(test_rotation),
	    cmocka_unit_test(test_false_positives),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
