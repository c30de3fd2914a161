/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/arena.h"

/* Blocks of every class come from the reservations, aligned, reused last
 * in first out; sizes beyond the classes and exhausted classes go to
 * malloc and back to free. */

static void test_classes_and_reuse(void **state)
{
	ss_arena_t a;
	(void)state;

	assert_int_equal(ss_arena_init(&a, 1 << 20), 0);
	for (size_t n = 1; n <= (128u << 10); n = n * 3 + 1) {
		uint8_t *p = ss_arena_alloc(&a, n);
		assert_non_null(p);
		assert_true(ss_arena_owns(&a, p));
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, 0xAB, n);
		ss_arena_free(&a, p);
		/* The same block comes back for the same size. */
		assert_ptr_equal(ss_arena_alloc(&a, n), p);
		ss_arena_free(&a, p);
	}
	assert_int_equal(a.fallbacks, 0);
	ss_arena_destroy(&a);
}

static void test_realloc_keeps_bytes(void **state)
{
	ss_arena_t a;
	(void)state;

	assert_int_equal(ss_arena_init(&a, 1 << 20), 0);
	uint8_t *p = ss_arena_realloc(&a, NULL, 40);
	assert_true(ss_arena_owns(&a, p));
	for (int i = 0; i < 40; i++)
		p[i] = (uint8_t)i;
	/* Within its class: the same block. */
	assert_ptr_equal(ss_arena_realloc(&a, p, 60), p);
	uint8_t *q = ss_arena_realloc(&a, p, 5000);
	assert_true(ss_arena_owns(&a, q));
	assert_ptr_not_equal(q, p);
	for (int i = 0; i < 40; i++)
		assert_int_equal(q[i], i);
	ss_arena_free(&a, q);
	assert_int_equal(a.fallbacks, 0);
	ss_arena_destroy(&a);
}

static void test_fallbacks(void **state)
{
	ss_arena_t a;
	void *blocks[8];
	(void)state;

	/* 256 KiB per class: the 128 KiB class holds two blocks. */
	assert_int_equal(ss_arena_init(&a, 256 << 10), 0);
	void *big = ss_arena_alloc(&a, (128u << 10) + 1);
	assert_non_null(big);
	assert_false(ss_arena_owns(&a, big));
	assert_int_equal(a.fallbacks, 1);
	big = ss_arena_realloc(&a, big, 300000);
	assert_non_null(big);
	ss_arena_free(&a, big);

	for (int i = 0; i < 3; i++)
		blocks[i] = ss_arena_alloc(&a, 100000);
	assert_true(ss_arena_owns(&a, blocks[0]));
	assert_true(ss_arena_owns(&a, blocks[1]));
	assert_false(ss_arena_owns(&a, blocks[2]));
	for (int i = 0; i < 3; i++)
		ss_arena_free(&a, blocks[i]);
	ss_arena_free(&a, NULL);
	ss_arena_destroy(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classes_and_reuse),
	    cmocka_unit_test(test_realloc_keeps_bytes),
	    cmocka_unit_test(test_fallbacks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
