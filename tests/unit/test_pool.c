/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/pool.h"

static void test_lifo_reuse(void **state)
{
	ss_pool_t p;
	int fresh;
	(void)state;

	assert_int_equal(ss_pool_init(&p, 100, 4), 0);
	assert_int_equal(p.obj_size, 128);
	void *a = ss_pool_get(&p, &fresh);
	assert_true(fresh);
	void *b = ss_pool_get(&p, &fresh);
	assert_true(fresh);
	assert_ptr_equal((uint8_t *)b - (uint8_t *)a, 128);
	ss_pool_put(&p, a);
	ss_pool_put(&p, b);
	/* Last in, first out: the most recently touched object comes back. */
	assert_ptr_equal(ss_pool_get(&p, &fresh), b);
	assert_false(fresh);
	assert_ptr_equal(ss_pool_get(&p, &fresh), a);
	assert_false(fresh);
	assert_int_equal(p.in_use, 2);
	assert_ptr_equal(ss_pool_at(&p, 1), b);
	ss_pool_put(&p, a);
	ss_pool_put(&p, b);
	ss_pool_destroy(&p);
}

static void test_exhaustion(void **state)
{
	ss_pool_t p;
	void *objs[3];
	(void)state;

	assert_int_equal(ss_pool_init(&p, 64, 3), 0);
	for (int i = 0; i < 3; i++) {
		objs[i] = ss_pool_get(&p, NULL);
		assert_non_null(objs[i]);
		memset(objs[i], 0xAB, 64); /* the whole object is usable */
	}
	assert_null(ss_pool_get(&p, NULL));
	ss_pool_put(&p, objs[1]);
	assert_ptr_equal(ss_pool_get(&p, NULL), objs[1]);
	for (int i = 0; i < 3; i++)
		ss_pool_put(&p, objs[i]);
	assert_int_equal(p.in_use, 0);
	ss_pool_destroy(&p);
}

static void test_fresh_objects_are_zero(void **state)
{
	ss_pool_t p;
	(void)state;

	/* A large reservation costs address space only. */
	assert_int_equal(ss_pool_init(&p, 65536, 1 << 16), 0);
	uint8_t *o = ss_pool_get(&p, NULL);
	for (size_t i = 0; i < 65536; i++)
		assert_int_equal(o[i], 0);
	ss_pool_put(&p, o);
	ss_pool_destroy(&p);
}

static void test_bad_sizes(void **state)
{
	ss_pool_t p;
	(void)state;

	assert_int_equal(ss_pool_init(&p, 64, 0), -EINVAL);
	assert_int_equal(ss_pool_init(&p, SIZE_MAX / 2, 4), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lifo_reuse),
	    cmocka_unit_test(test_exhaustion),
	    cmocka_unit_test(test_fresh_objects_are_zero),
	    cmocka_unit_test(test_bad_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
