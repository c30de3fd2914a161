/* SPDX-License-Identifier: MIT */
/* Arenas per thread behind process-wide allocator hooks (util/tarena.h):
 * threads allocate from arenas of their own, blocks freed or grown on
 * another thread go back to their owner, and ended threads' arenas are
 * adopted rather than multiplied. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/tarena.h"

/* How many arenas f has made. */
static size_t arenas(ss_tarenas_t *f)
{
	size_t n = 0;

	for (ss_tarena_t *t = atomic_load_explicit(&f->all, memory_order_acquire); t; t = t->next)
		n++;
	return n;
}

#define PER_CLASS (256u << 10)

typedef struct {
	ss_tarenas_t *f;
	void *blocks[64];
	pthread_barrier_t *gate;
} worker_t;

static void *alloc_some(void *arg)
{
	worker_t *w = arg;

	for (int i = 0; i < 64; i++)
		w->blocks[i] = ss_tarenas_alloc(w->f, 100);
	if (w->gate)
		pthread_barrier_wait(w->gate); /* both alive at once: two arenas */
	return NULL;
}

static void test_own_arena_per_thread(void **state)
{
	static ss_tarenas_t f = SS_TARENAS_INIT(PER_CLASS);
	pthread_barrier_t gate;
	worker_t w[2];
	pthread_t t[2];
	(void)state;

	pthread_barrier_init(&gate, NULL, 2);
	for (int i = 0; i < 2; i++) {
		w[i] = (worker_t){.f = &f, .gate = &gate};
		assert_int_equal(pthread_create(&t[i], NULL, alloc_some, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&gate);
	assert_int_equal(arenas(&f), 2);
	/* Blocks of one thread and of the other come from different arenas. */
	ss_tarena_t *a = f.all, *b = a->next;
	for (int i = 0; i < 64; i++) {
		bool in_a0 = ss_arena_owns(&a->arena, w[0].blocks[i]);
		bool in_b0 = ss_arena_owns(&b->arena, w[0].blocks[i]);
		assert_true(in_a0 != in_b0);
		assert_true(ss_arena_owns(in_a0 ? &b->arena : &a->arena, w[1].blocks[i]));
	}
	/* Freed here, on a third thread: each goes back to its owner, which
	 * hands it out again (last in, first out). */
	void *last = w[1].blocks[63];
	for (int i = 0; i < 64; i++) {
		ss_tarenas_free(&f, w[0].blocks[i]);
		ss_tarenas_free(&f, w[1].blocks[i]);
	}
	ss_tarena_t *owner = ss_arena_owns(&a->arena, last) ? a : b;
	assert_ptr_equal(ss_arena_alloc(&owner->arena, 100), last);
	ss_arena_free(&owner->arena, last);
}

static void *churn_one(void *arg)
{
	ss_tarenas_t *f = arg;
	void *p = ss_tarenas_alloc(f, 1000);

	memset(p, 7, 1000);
	ss_tarenas_free(f, p);
	return NULL;
}

static void test_ended_threads_adopted(void **state)
{
	static ss_tarenas_t f = SS_TARENAS_INIT(PER_CLASS);
	pthread_t t;
	(void)state;

	for (int i = 0; i < 200; i++) {
		assert_int_equal(pthread_create(&t, NULL, churn_one, &f), 0);
		pthread_join(t, NULL);
	}
	assert_int_equal(arenas(&f), 1);
}

#define STRESS_THREADS 4
#define STRESS_SLOTS 256
#define STRESS_ROUNDS 200000

typedef struct {
	ss_tarenas_t *f;
	unsigned seed;
	int bad;
} stress_t;

/* Allocates, grows and frees blocks filled with a pattern of its own and
 * checks it is never disturbed: with one arena shared without a lock the
 * threads hand each other the same blocks. */
static void *stress(void *arg)
{
	stress_t *s = arg;
	uint8_t *slot[STRESS_SLOTS] = {0};
	size_t len[STRESS_SLOTS] = {0};
	uint8_t tag = (uint8_t)(s->seed | 1);

	for (int r = 0; r < STRESS_ROUNDS; r++) {
		int i = rand_r(&s->seed) % STRESS_SLOTS;
		size_t n = 1 + (size_t)(rand_r(&s->seed) % 3000);
		for (size_t k = 0; k < len[i]; k++)
			if (slot[i][k] != (uint8_t)(tag + i))
				s->bad++;
		if (slot[i] && rand_r(&s->seed) % 2) {
			ss_tarenas_free(s->f, slot[i]);
			slot[i] = NULL;
			len[i] = 0;
			continue;
		}
		uint8_t *p = ss_tarenas_realloc(s->f, slot[i], n);
		if (!p) {
			s->bad++;
			continue;
		}
		for (size_t k = 0; k < len[i] && k < n; k++)
			if (p[k] != (uint8_t)(tag + i))
				s->bad++;
		memset(p, (uint8_t)(tag + i), n);
		slot[i] = p;
		len[i] = n;
	}
	for (int i = 0; i < STRESS_SLOTS; i++)
		ss_tarenas_free(s->f, slot[i]);
	return NULL;
}

static void test_threads_at_once(void **state)
{
	static ss_tarenas_t f = SS_TARENAS_INIT(PER_CLASS);
	stress_t s[STRESS_THREADS];
	pthread_t t[STRESS_THREADS];
	(void)state;

	for (int i = 0; i < STRESS_THREADS; i++) {
		s[i] = (stress_t){.f = &f, .seed = 1234u + 77u * (unsigned)i};
		assert_int_equal(pthread_create(&t[i], NULL, stress, &s[i]), 0);
	}
	for (int i = 0; i < STRESS_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(s[i].bad, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_arena_per_thread),
	    cmocka_unit_test(test_ended_threads_adopted),
	    cmocka_unit_test(test_threads_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
