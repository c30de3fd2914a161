/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relay/dns_cache.h"
#include "util/result.h"

#define NONE UINT32_MAX

static uint32_t cache_hash(const ss_dns_question_t *q, uint8_t path)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < q->name_len; i++)
		h = (h ^ q->name[i]) * 16777619u;
	h = (h ^ (q->qtype & 0xff)) * 16777619u;
	h = (h ^ (q->qtype >> 8)) * 16777619u;
	h = (h ^ (q->qclass & 0xff)) * 16777619u;
	return (h ^ path) * 16777619u;
}

int ss_dns_cache_init(ss_dns_cache_t *c, size_t entries, size_t slot)
{
	memset(c, 0, sizeof(*c));
	c->head = c->tail = c->free = NONE;
	if (entries == 0)
		return 0;
	c->nbuckets = 1;
	while (c->nbuckets < entries)
		c->nbuckets <<= 1;
	c->e = calloc(entries, sizeof(*c->e));
	c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
	c->data = calloc(entries, slot);
	if (!c->e || !c->buckets || !c->data) {
		ss_dns_cache_free(c);
		return -ENOMEM;
	}
	c->cap = entries;
	c->slot = slot;
	memset(c->buckets, 0xff, c->nbuckets * sizeof(*c->buckets));
	for (size_t i = entries; i-- > 0;) {
		c->e[i].chain = c->free;
		c->free = (uint32_t)i;
	}
	return 0;
}

void ss_dns_cache_free(ss_dns_cache_t *c)
{
	free(c->e);
	free(c->buckets);
	free(c->data);
	memset(c, 0, sizeof(*c));
}

uint32_t ss_dns_cache_ttl(const ss_dns_msg_t *m)
{
	unsigned rcode = m->flags & SS_DNS_RCODE_MASK;

	if (m->flags & SS_DNS_TC)
		return 0;
	if (rcode == SS_DNS_NOERROR && m->ancount > 0)
		return m->answer_ttl < SS_DNS_CACHE_TTL_MAX ? m->answer_ttl : SS_DNS_CACHE_TTL_MAX;
	if ((rcode == SS_DNS_NXDOMAIN || rcode == SS_DNS_NOERROR) && m->has_soa)
		return m->soa_ttl < SS_DNS_CACHE_NEG_TTL_MAX ? m->soa_ttl
							     : SS_DNS_CACHE_NEG_TTL_MAX;
	return 0;
}

/* --- the use order --- */

static void cache_unlink(ss_dns_cache_t *c, uint32_t i)
{
	ss_dns_cache_entry_t *e = &c->e[i];

	if (e->prev != NONE)
		c->e[e->prev].next = e->next;
	else
		c->head = e->next;
	if (e->next != NONE)
		c->e[e->next].prev = e->prev;
	else
		c->tail = e->prev;
}

static void cache_push(ss_dns_cache_t *c, uint32_t i)
{
	ss_dns_cache_entry_t *e = &c->e[i];

	e->prev = NONE;
	e->next = c->head;
	if (c->head != NONE)
		c->e[c->head].prev = i;
	c->head = i;
	if (c->tail == NONE)
		c->tail = i;
}

/* --- entries --- */

static uint32_t *cache_bucket(ss_dns_cache_t *c, uint32_t hash)
{
	return &c->buckets[hash & (c->nbuckets - 1)];
}

static uint32_t cache_find(ss_dns_cache_t *c, const ss_dns_question_t *q, uint8_t path,
			   uint32_t hash)
{
	for (uint32_t i = *cache_bucket(c, hash); i != NONE; i = c->e[i].chain) {
		const ss_dns_cache_entry_t *e = &c->e[i];
		if (e->hash == hash && e->path == path && e->qtype == q->qtype &&
		    e->qclass == q->qclass && e->name_len == q->name_len &&
		    memcmp(e->name, q->name, q->name_len) == 0)
			return i;
	}
	return NONE;
}

/* Takes entry i out of its bucket and the use order, onto the free list. */
static void cache_drop(ss_dns_cache_t *c, uint32_t i)
{
	ss_dns_cache_entry_t *e = &c->e[i];

	for (uint32_t *pp = cache_bucket(c, e->hash); *pp != NONE; pp = &c->e[*pp].chain) {
		if (*pp == i) {
			*pp = e->chain;
			break;
		}
	}
	cache_unlink(c, i);
	e->len = 0;
	e->chain = c->free;
	c->free = i;
	c->used--;
}

size_t ss_dns_cache_get(ss_dns_cache_t *c, const ss_dns_question_t *q, uint8_t path, double now,
			uint8_t *out, size_t cap)
{
	uint32_t hash, i;
	ss_dns_cache_entry_t *e;
	double kept;

	if (!c->cap)
		return 0;
	hash = cache_hash(q, path);
	i = cache_find(c, q, path, hash);
	if (i == NONE) {
		c->misses++;
		return 0;
	}
	e = &c->e[i];
	if (now >= e->expires || e->len > cap) {
		cache_drop(c, i);
		c->misses++;
		return 0;
	}
	memcpy(out, c->data + (size_t)i * c->slot, e->len);
	kept = now > e->stored ? now - e->stored : 0;
	if (ss_dns_age(out, e->len, (uint32_t)kept) != SS_OK) {
		cache_drop(c, i);
		c->misses++;
		return 0;
	}
	cache_unlink(c, i);
	cache_push(c, i);
	c->hits++;
	return e->len;
}

void ss_dns_cache_put(ss_dns_cache_t *c, const ss_dns_question_t *q, uint8_t path,
		      const uint8_t *msg, size_t len, uint32_t ttl, double now)
{
	uint32_t hash, i;
	ss_dns_cache_entry_t *e;

	if (!c->cap || ttl == 0 || len == 0 || len > c->slot)
		return;
	hash = cache_hash(q, path);
	i = cache_find(c, q, path, hash);
	if (i != NONE)
		cache_drop(c, i);
	if (c->free == NONE) {
		cache_drop(c, c->tail);
		c->evicted++;
	}
	i = c->free;
	e = &c->e[i];
	c->free = e->chain;
	e->hash = hash;
	e->path = path;
	e->qtype = q->qtype;
	e->qclass = q->qclass;
	e->name_len = q->name_len;
	memcpy(e->name, q->name, q->name_len);
	e->len = (uint16_t)len;
	e->stored = now;
	e->expires = now + ttl;
	memcpy(c->data + (size_t)i * c->slot, msg, len);
	e->chain = *cache_bucket(c, hash);
	*cache_bucket(c, hash) = i;
	cache_push(c, i);
	c->used++;
	c->stored_n++;
}
