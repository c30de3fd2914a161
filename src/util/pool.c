/* SPDX-License-Identifier: MIT */
#include "util/pool.h"

#include <errno.h>
#include <sys/mman.h>

int ss_pool_init(ss_pool_t *p, size_t obj_size, size_t cap)
{
	*p = (ss_pool_t){0};
	if (obj_size < sizeof(void *))
		obj_size = sizeof(void *);
	obj_size = (obj_size + 63) & ~(size_t)63;
	if (cap == 0 || obj_size > SIZE_MAX / cap)
		return -EINVAL;
	void *base = mmap(NULL, obj_size * cap, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	p->base = base;
	p->obj_size = obj_size;
	p->cap = cap;
	return 0;
}

void ss_pool_destroy(ss_pool_t *p)
{
	if (p->base)
		munmap(p->base, p->obj_size * p->cap);
	*p = (ss_pool_t){0};
}

void *ss_pool_get(ss_pool_t *p, int *fresh)
{
	void *obj;

	if (p->free_list) {
		obj = p->free_list;
		p->free_list = *(void **)obj;
		if (fresh)
			*fresh = 0;
	} else if (p->fresh < p->cap) {
		obj = p->base + p->fresh++ * p->obj_size;
		if (fresh)
			*fresh = 1;
	} else {
		return NULL;
	}
	p->in_use++;
	return obj;
}

void ss_pool_put(ss_pool_t *p, void *obj)
{
	*(void **)obj = p->free_list;
	p->free_list = obj;
	p->in_use--;
}

void *ss_pool_at(const ss_pool_t *p, size_t index)
{
	return p->base + index * p->obj_size;
}
