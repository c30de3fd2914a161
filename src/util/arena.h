/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_ARENA_H
#define SS_UTIL_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "util/pool.h"

/* A general-purpose allocator over fixed reservations, for a library that
 * takes allocator hooks (c-ares): one pool (util/pool.h) per power-of-two
 * size class from 64 bytes to 128 KiB, each a virtual reservation made at
 * start-up. Blocks are reused last-in first-out within their class, so a
 * steady load allocates nothing from the heap. A request larger than the
 * largest class, or one whose class is exhausted, goes to malloc; free and
 * realloc tell the two apart by address. Not thread-safe. */

#define SS_ARENA_CLASSES 12 /* 64 B .. 128 KiB */

typedef struct ss_arena {
	ss_pool_t classes[SS_ARENA_CLASSES];
	size_t fallbacks; /* requests that went to malloc */
} ss_arena_t;

/* Reserves per_class bytes of address space for each class (rounded down
 * to whole blocks, at least one). 0 or -ENOMEM. */
int ss_arena_init(ss_arena_t *a, size_t per_class);
/* Releases the reservations; blocks still out are lost with them. */
void ss_arena_destroy(ss_arena_t *a);

/* malloc, free and realloc over the arena. Blocks are 16-byte aligned. */
void *ss_arena_alloc(ss_arena_t *a, size_t n);
void ss_arena_free(ss_arena_t *a, void *p);
void *ss_arena_realloc(ss_arena_t *a, void *p, size_t n);
/* Whether p came from one of the arena's classes. */
bool ss_arena_owns(const ss_arena_t *a, const void *p);

#endif
