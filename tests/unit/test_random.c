/* SPDX-License-Identifier: MIT */
/* The random-bytes cache across threads: every thread draws from a page of
 * its own, so threads running at once are never handed the same bytes (or
 * bytes another thread has already wiped), and a thread's page goes with
 * it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The file under test, for its count of pages (random_pages). */
#include "crypto/random.c"

/* Pages of cached random bytes held now: one per thread that has drawn
 * small amounts, released when the thread ends. */
static size_t pages(void)
{
#ifdef MADV_WIPEONFORK
	return atomic_load(&random_pages);
#else
	return 0;
#endif
}

#define THREADS 4
#define DRAWS 50000
#define L 16

typedef struct {
	uint8_t (*out)[L];
	pthread_barrier_t *start;
} drawer_t;

static void *drawer(void *arg)
{
	drawer_t *d = arg;

	pthread_barrier_wait(d->start);
	for (size_t i = 0; i < DRAWS; i++)
		ss_random_bytes(d->out[i], L);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	return memcmp(a, b, L);
}

static void test_threads_never_share_bytes(void **state)
{
	static uint8_t all[THREADS * DRAWS][L];
	static const uint8_t zero[L];
	pthread_t t[THREADS];
	drawer_t d[THREADS];
	pthread_barrier_t start;
	(void)state;

	assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		d[i] = (drawer_t){all + (size_t)i * DRAWS, &start};
		assert_int_equal(pthread_create(&t[i], NULL, drawer, &d[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	/* 128-bit draws: any repeat, or a draw of wiped (zero) bytes, means
	 * two threads took the same bytes. */
	qsort(all, THREADS * DRAWS, L, cmp);
	for (size_t i = 0; i < THREADS * DRAWS; i++) {
		assert_memory_not_equal(all[i], zero, L);
		if (i)
			assert_memory_not_equal(all[i], all[i - 1], L);
	}
}

static void *draw_once(void *arg)
{
	uint8_t b[L];

	(void)arg;
	ss_random_bytes(b, sizeof(b));
	return NULL;
}

static void test_thread_page_released(void **state)
{
	pthread_t t;
	uint8_t b[L];
	size_t before;
	(void)state;

	ss_random_bytes(b, sizeof(b)); /* this thread's own page */
	before = pages();
	assert_true(before >= 1);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(pthread_create(&t, NULL, draw_once, NULL), 0);
		pthread_join(t, NULL);
	}
	printf("pages of cached random bytes: %zu before, %zu after 1000 threads\n", before,
	       pages());
	/* Pages kept past their thread would count 1000 more. */
	assert_int_equal(pages(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_threads_never_share_bytes),
	    cmocka_unit_test(test_thread_page_released),
	};

	if (ss_crypto_global_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
