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

#include "crypto/primitives.h"

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

static long rss_anon_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
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
	long before, after;
	(void)state;

	/* One thread first, so its stack (reused by the ones after it) is
	 * already counted. */
	assert_int_equal(pthread_create(&t, NULL, draw_once, NULL), 0);
	pthread_join(t, NULL);
	before = rss_anon_kib();
	assert_true(before > 0);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(pthread_create(&t, NULL, draw_once, NULL), 0);
		pthread_join(t, NULL);
	}
	after = rss_anon_kib();
	printf("resident anonymous memory: %ld KiB before, %ld KiB after 1000 threads\n", before,
	       after);
	/* Kept pages would add 4000 KiB. */
	assert_true(after - before < 1000);
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
