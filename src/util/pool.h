/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_POOL_H
#define SS_UTIL_POOL_H

#include <stddef.h>
#include <stdint.h>

/* Fixed-size objects from one virtual reservation made at start-up. Pages
 * become resident only when first touched, so a pool sized for the worst case
 * costs address space, not memory. Freed objects are reused last-in
 * first-out, which keeps the touched set as small as the peak use. */
typedef struct ss_pool {
	uint8_t *base;
	size_t obj_size; /* rounded up to 64 bytes */
	size_t cap;      /* objects reserved */
	size_t fresh;    /* objects never handed out start here */
	size_t in_use;
	void *free_list;
} ss_pool_t;

/* Reserves room for cap objects of obj_size bytes. 0 or -ENOMEM. */
int ss_pool_init(ss_pool_t *p, size_t obj_size, size_t cap);
/* Releases the reservation; every object must be back. */
void ss_pool_destroy(ss_pool_t *p);
/* An object, not zeroed; *fresh (if not NULL) says whether it was never used
 * before (all-zero pages). NULL when all cap objects are out. */
void *ss_pool_get(ss_pool_t *p, int *fresh);
void ss_pool_put(ss_pool_t *p, void *obj);
/* The object at an index below p->fresh. */
void *ss_pool_at(const ss_pool_t *p, size_t index);

#endif
