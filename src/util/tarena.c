/* SPDX-License-Identifier: MIT */
#include "util/tarena.h"

#include <stdlib.h>

static void tarena_orphan(void *p)
{
	ss_tarena_t *t = p;

	pthread_mutex_lock(&t->lock);
	t->orphan = true;
	pthread_mutex_unlock(&t->lock);
}

/* The calling thread's arena: its own, an orphan adopted, or a new one.
 * NULL when none can be had. */
static ss_tarena_t *tarena_mine(ss_tarenas_t *f)
{
	ss_tarena_t *t;

	if (!atomic_load_explicit(&f->key_ready, memory_order_acquire)) {
		pthread_mutex_lock(&f->lock);
		if (!atomic_load_explicit(&f->key_ready, memory_order_relaxed) &&
		    pthread_key_create(&f->key, tarena_orphan) == 0)
			atomic_store_explicit(&f->key_ready, true, memory_order_release);
		pthread_mutex_unlock(&f->lock);
		if (!atomic_load_explicit(&f->key_ready, memory_order_acquire))
			return NULL;
	}
	t = pthread_getspecific(f->key);
	if (t)
		return t;
	pthread_mutex_lock(&f->lock);
	for (t = atomic_load_explicit(&f->all, memory_order_relaxed); t; t = t->next) {
		pthread_mutex_lock(&t->lock);
		bool adopt = t->orphan;
		t->orphan = false;
		pthread_mutex_unlock(&t->lock);
		if (adopt)
			break;
	}
	if (!t && (t = calloc(1, sizeof(*t))) != NULL) {
		if (ss_arena_init(&t->arena, f->per_class) == 0) {
			pthread_mutex_init(&t->lock, NULL);
			t->next = atomic_load_explicit(&f->all, memory_order_relaxed);
			atomic_store_explicit(&f->all, t, memory_order_release);
		} else {
			free(t);
			t = NULL;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (t && pthread_setspecific(f->key, t) != 0) {
		tarena_orphan(t);
		t = NULL;
	}
	return t;
}

/* The arena p came from, or NULL for a block from malloc. Arenas are never
 * unlinked and their reservations never move, so the walk needs no lock. */
static ss_tarena_t *tarena_owner(ss_tarenas_t *f, const void *p)
{
	ss_tarena_t *t = NULL;

	if (atomic_load_explicit(&f->key_ready, memory_order_acquire))
		t = pthread_getspecific(f->key);
	if (t && ss_arena_owns(&t->arena, p))
		return t;
	for (t = atomic_load_explicit(&f->all, memory_order_acquire); t; t = t->next)
		if (ss_arena_owns(&t->arena, p))
			return t;
	return NULL;
}

void *ss_tarenas_alloc(ss_tarenas_t *f, size_t n)
{
	ss_tarena_t *t = tarena_mine(f);
	void *p;

	if (!t)
		return malloc(n ? n : 1);
	pthread_mutex_lock(&t->lock);
	p = ss_arena_alloc(&t->arena, n);
	pthread_mutex_unlock(&t->lock);
	return p;
}

void ss_tarenas_free(ss_tarenas_t *f, void *p)
{
	ss_tarena_t *t;

	if (!p)
		return;
	t = tarena_owner(f, p);
	if (!t) {
		free(p);
		return;
	}
	pthread_mutex_lock(&t->lock);
	ss_arena_free(&t->arena, p);
	pthread_mutex_unlock(&t->lock);
}

void *ss_tarenas_realloc(ss_tarenas_t *f, void *p, size_t n)
{
	ss_tarena_t *t;
	void *q;

	if (!p)
		return ss_tarenas_alloc(f, n);
	t = tarena_owner(f, p);
	if (!t)
		return realloc(p, n);
	/* A block grows within its own arena, whichever thread asks. */
	pthread_mutex_lock(&t->lock);
	q = ss_arena_realloc(&t->arena, p, n);
	pthread_mutex_unlock(&t->lock);
	return q;
}
