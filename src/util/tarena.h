/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_TARENA_H
#define SS_UTIL_TARENA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/arena.h"

/* Arenas behind the allocator hooks of libraries that take only
 * process-wide ones with no context (c-ares, libev). Each thread allocates
 * from an arena of its own (util/arena.h), made on its first allocation, so
 * threads running instances at once never share one and never wait for each
 * other. A block freed or grown on another thread than the one that made it
 * still goes back to the arena that owns it, under that arena's lock. When a
 * thread ends, its arena stays (blocks may still be out) and the next thread
 * to allocate adopts it, so threads that come and go do not add arenas. */

typedef struct ss_tarena {
	pthread_mutex_t lock;
	ss_arena_t arena;
	bool orphan; /* its thread has ended: free for the next one */
	struct ss_tarena *next;
} ss_tarena_t;

typedef struct ss_tarenas {
	size_t per_class; /* each arena's reservation per size class */
	pthread_mutex_t lock;
	ss_tarena_t *_Atomic all; /* every arena made; never shrinks */
	atomic_bool key_ready;
	pthread_key_t key; /* the calling thread's arena */
} ss_tarenas_t;

#define SS_TARENAS_INIT(bytes_per_class)                                                           \
	{                                                                                          \
		.per_class = (bytes_per_class), .lock = PTHREAD_MUTEX_INITIALIZER                  \
	}

/* malloc, free and realloc for the hooks. ss_tarenas_alloc falls back to
 * malloc when the thread's arena cannot be made or a class is full (as
 * ss_arena_alloc does); free and realloc tell the blocks apart by address. */
void *ss_tarenas_alloc(ss_tarenas_t *f, size_t n);
void ss_tarenas_free(ss_tarenas_t *f, void *p);
void *ss_tarenas_realloc(ss_tarenas_t *f, void *p, size_t n);

#endif
