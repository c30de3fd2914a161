/* SPDX-License-Identifier: MIT */
#include "util/arena.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_MIN_SHIFT 6 /* 64 bytes: a pool slot is a multiple of 64 anyway */

static size_t arena_class_size(int k)
{
	return (size_t)1 << (ARENA_MIN_SHIFT + k);
}

/* The smallest class holding n bytes, or -1 when n is over the largest. */
static int arena_class_for(size_t n)
{
	for (int k = 0; k < SS_ARENA_CLASSES; k++)
		if (n <= arena_class_size(k))
			return k;
	return -1;
}

/* The class whose reservation holds p, or -1. */
static int arena_class_of(const ss_arena_t *a, const void *p)
{
	const uint8_t *b = p;

	for (int k = 0; k < SS_ARENA_CLASSES; k++) {
		const ss_pool_t *c = &a->classes[k];
		if (c->base && b >= c->base && b < c->base + c->cap * c->obj_size)
			return k;
	}
	return -1;
}

int ss_arena_init(ss_arena_t *a, size_t per_class)
{
	memset(a, 0, sizeof(*a));
	for (int k = 0; k < SS_ARENA_CLASSES; k++) {
		size_t size = arena_class_size(k);
		size_t n = per_class / size;
		if (ss_pool_init(&a->classes[k], size, n ? n : 1) < 0) {
			ss_arena_destroy(a);
			return -ENOMEM;
		}
	}
	return 0;
}

void ss_arena_destroy(ss_arena_t *a)
{
	for (int k = 0; k < SS_ARENA_CLASSES; k++) {
		if (a->classes[k].base)
			ss_pool_destroy(&a->classes[k]);
	}
	memset(a, 0, sizeof(*a));
}

bool ss_arena_owns(const ss_arena_t *a, const void *p)
{
	return p && arena_class_of(a, p) >= 0;
}

void *ss_arena_alloc(ss_arena_t *a, size_t n)
{
	int k = arena_class_for(n ? n : 1);
	void *p = k >= 0 ? ss_pool_get(&a->classes[k], NULL) : NULL;

	if (p)
		return p;
	a->fallbacks++;
	return malloc(n ? n : 1);
}

void ss_arena_free(ss_arena_t *a, void *p)
{
	int k;

	if (!p)
		return;
	k = arena_class_of(a, p);
	if (k >= 0)
		ss_pool_put(&a->classes[k], p);
	else
		free(p);
}

void *ss_arena_realloc(ss_arena_t *a, void *p, size_t n)
{
	int k;
	void *q;

	if (!p)
		return ss_arena_alloc(a, n);
	k = arena_class_of(a, p);
	if (k < 0) {
		/* From malloc: it stays there. */
		a->fallbacks++;
		return realloc(p, n);
	}
	if (n <= arena_class_size(k))
		return p;
	q = ss_arena_alloc(a, n);
	if (!q)
		return NULL;
	memcpy(q, p, arena_class_size(k));
	ss_pool_put(&a->classes[k], p);
	return q;
}
