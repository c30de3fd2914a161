/* SPDX-License-Identifier: MIT */
#include "crypto/saltpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/primitives.h"

_Static_assert(crypto_shorthash_KEYBYTES == 16, "SipHash key");

static uint32_t salt_hash(const ss_saltpool_t *p, const uint8_t *salt, size_t len)
{
	uint8_t out[crypto_shorthash_BYTES];

	crypto_shorthash(out, salt, len, p->hash_key);
	return (uint32_t)out[0] | (uint32_t)out[1] << 8 | (uint32_t)out[2] << 16 |
	       (uint32_t)out[3] << 24;
}

/* The table first spans this many slots (4 KiB), then doubles. */
#define SALTPOOL_FIRST_SLOTS 1024

int ss_saltpool_init(ss_saltpool_t *p, size_t capacity, uint64_t ttl)
{
	size_t slots = 2;

	memset(p, 0, sizeof(*p));
	if (capacity == 0 || capacity > (size_t)1 << 30 || ttl == 0)
		return -EINVAL;
	while (slots < 2 * capacity)
		slots *= 2;
	/* calloc leaves untouched pages unmapped until first use. */
	p->ring = calloc(capacity, sizeof(*p->ring));
	p->slots = calloc(slots, sizeof(*p->slots));
	if (!p->ring || !p->slots) {
		ss_saltpool_free(p);
		return -ENOMEM;
	}
	p->capacity = capacity;
	p->max_mask = slots - 1;
	p->mask = (slots < SALTPOOL_FIRST_SLOTS ? slots : SALTPOOL_FIRST_SLOTS) - 1;
	p->ttl = ttl;
	ss_random_bytes(p->hash_key, sizeof(p->hash_key));
	return 0;
}

int ss_saltpool_init_fifo(ss_saltpool_t *p, size_t capacity)
{
	int rc = ss_saltpool_init(p, capacity, UINT64_MAX);

	p->fifo = rc == 0;
	return rc;
}

void ss_saltpool_share(ss_saltpool_t *p)
{
	if (p->shared || p->capacity == 0)
		return;
	pthread_mutex_init(&p->lock, NULL);
	p->shared = true;
}

void ss_saltpool_free(ss_saltpool_t *p)
{
	if (p->shared)
		pthread_mutex_destroy(&p->lock);
	free(p->ring);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

ss_saltpool_t *ss_saltpool_new(size_t capacity, uint64_t ttl)
{
	ss_saltpool_t *p = malloc(sizeof(*p));

	if (!p)
		return NULL;
	if ((ttl ? ss_saltpool_init(p, capacity, ttl) : ss_saltpool_init_fifo(p, capacity)) < 0) {
		free(p);
		return NULL;
	}
	ss_saltpool_share(p);
	atomic_init(&p->refs, 1);
	return p;
}

ss_saltpool_t *ss_saltpool_ref(ss_saltpool_t *p)
{
	atomic_fetch_add(&p->refs, 1);
	return p;
}

void ss_saltpool_unref(ss_saltpool_t *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	ss_saltpool_free(p);
	free(p);
}

bool ss_saltpool_is(const ss_saltpool_t *p, size_t capacity, uint64_t ttl)
{
	return p->capacity == capacity && (ttl ? !p->fifo && p->ttl == ttl : p->fifo);
}

/* Empties slot i and moves later entries of its probe run back into the
 * gap, so every entry stays reachable from its home slot without tombstones. */
static void slot_delete(ss_saltpool_t *p, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & p->mask;
		if (p->slots[j] == 0)
			break;
		home = p->ring[p->slots[j] - 1].hash & p->mask;
		/* It may move to i unless its home lies after i on the way to j. */
		if (((j - home) & p->mask) >= ((j - i) & p->mask)) {
			p->slots[i] = p->slots[j];
			i = j;
		}
	}
	p->slots[i] = 0;
}

/* Forgets the oldest entry. */
static void saltpool_pop(ss_saltpool_t *p)
{
	size_t i = p->ring[p->head].hash & p->mask;

	while (p->slots[i] != p->head + 1)
		i = (i + 1) & p->mask;
	slot_delete(p, i);
	p->head = (p->head + 1) % p->capacity;
	p->count--;
}

void ss_saltpool_expire(ss_saltpool_t *p, uint64_t now)
{
	while (p->count > 0) {
		const ss_saltpool_entry_t *e = &p->ring[p->head];

		if (now <= e->time || now - e->time <= p->ttl)
			break;
		saltpool_pop(p);
	}
}

/* Doubles the part of the table in use and puts every entry back, from the
 * ring, so only as much of the reservation is touched as the count needs. */
static void saltpool_grow(ss_saltpool_t *p)
{
	p->mask = p->mask * 2 + 1;
	memset(p->slots, 0, (p->mask + 1) * sizeof(*p->slots));
	for (size_t k = 0; k < p->count; k++) {
		size_t idx = (p->head + k) % p->capacity;
		size_t i = p->ring[idx].hash & p->mask;

		while (p->slots[i] != 0)
			i = (i + 1) & p->mask;
		p->slots[i] = (uint32_t)idx + 1;
	}
}

static int saltpool_check_add(ss_saltpool_t *p, const uint8_t *salt, size_t len, uint64_t now)
{
	ss_saltpool_entry_t *e;
	uint32_t h;
	size_t i, idx;

	if (len == 0 || len > SS_SALTPOOL_MAX_SALT || p->capacity == 0)
		return -EINVAL;
	ss_saltpool_expire(p, now);
	h = salt_hash(p, salt, len);
	for (i = h & p->mask; p->slots[i] != 0; i = (i + 1) & p->mask) {
		e = &p->ring[p->slots[i] - 1];
		if (e->hash == h && e->len == len && memcmp(e->salt, salt, len) == 0)
			return -EEXIST;
	}
	bool moved = false;
	if (p->count == p->capacity) {
		if (!p->fifo)
			return -ENOBUFS;
		saltpool_pop(p);
		moved = true;
	}
	if (2 * (p->count + 1) > p->mask + 1 && p->mask < p->max_mask) {
		saltpool_grow(p);
		moved = true;
	}
	if (moved) /* entries moved: find the free slot again */
		for (i = h & p->mask; p->slots[i] != 0; i = (i + 1) & p->mask)
			;
	idx = (p->head + p->count) % p->capacity;
	e = &p->ring[idx];
	memcpy(e->salt, salt, len);
	e->len = (uint8_t)len;
	e->hash = h;
	e->time = now;
	p->slots[i] = (uint32_t)idx + 1;
	p->count++;
	return 0;
}

int ss_saltpool_check_add(ss_saltpool_t *p, const uint8_t *salt, size_t len, uint64_t now)
{
	int rc;

	if (!p->shared)
		return saltpool_check_add(p, salt, len, now);
	pthread_mutex_lock(&p->lock);
	rc = saltpool_check_add(p, salt, len, now);
	pthread_mutex_unlock(&p->lock);
	return rc;
}
