/* SPDX-License-Identifier: MIT */
#include "relay/udp_table.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "codec/secret.h"

/* Addresses are compared and hashed in one canonical form, so a client seen
 * as 1.2.3.4 and as ::ffff:1.2.3.4 is one client. */
typedef struct canon {
	uint8_t ip[16];
	uint16_t port;
} canon_t;

static void udp_canon(const struct sockaddr *sa, canon_t *c)
{
	memset(c, 0, sizeof(*c));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		ss_ip6_map_v4(c->ip, &in->sin_addr);
		c->port = in->sin_port;
	} else if (sa->sa_family == AF_INET6 || sa->sa_family == AF_UNSPEC) {
		/* AF_UNSPEC: a session key, laid out the same way. */
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(c->ip, &in6->sin6_addr, 16);
		c->port = in6->sin6_port;
	}
}

bool ss_udp_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	canon_t ca, cb;

	udp_canon(a, &ca);
	udp_canon(b, &cb);
	return memcmp(&ca, &cb, sizeof(ca)) == 0;
}

uint32_t ss_udp_key_hash(const uint64_t seed[static 2], const struct sockaddr *sa)
{
	canon_t c;
	uint64_t w[3], h = seed[0];

	udp_canon(sa, &c);
	memcpy(w, c.ip, 16);
	w[2] = c.port;
	for (int i = 0; i < 3; i++) {
		h ^= w[i] + seed[1];
		h *= 0x9E3779B97F4A7C15ull;
		h ^= h >> 29;
		h *= 0xBF58476D1CE4E5B9ull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

int ss_udp_table_init(ss_udp_table_t *t, size_t entry_size, size_t keep_from, size_t max)
{
	memset(t, 0, sizeof(*t));
	if (max == 0 || entry_size < sizeof(ss_udp_entry_t) || keep_from > entry_size ||
	    keep_from < sizeof(ss_udp_entry_t))
		return -EINVAL;
	t->keep_from = keep_from;
	t->nbuckets = 16;
	while (t->nbuckets < max)
		t->nbuckets <<= 1;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	if (ss_pool_init(&t->pool, entry_size, max) < 0) {
		free(t->buckets);
		t->buckets = NULL;
		return -ENOMEM;
	}
	t->max = max;
	ss_secret_random(t->seed, sizeof(t->seed));
	return 0;
}

void ss_udp_table_free(ss_udp_table_t *t)
{
	free(t->buckets);
	ss_pool_destroy(&t->pool);
	memset(t, 0, sizeof(*t));
}

ss_udp_entry_t *ss_udp_table_find(ss_udp_table_t *t, const struct sockaddr *key, socklen_t key_len)
{
	uint32_t h = ss_udp_key_hash(t->seed, key);
	(void)key_len;

	for (ss_udp_entry_t *e = t->buckets[h & (t->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && ss_udp_addr_equal((struct sockaddr *)&e->key, key))
			return e;
	return NULL;
}

static void lru_remove(ss_udp_table_t *t, ss_udp_entry_t *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		t->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		t->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_head(ss_udp_table_t *t, ss_udp_entry_t *e)
{
	e->prev = NULL;
	e->next = t->head;
	if (t->head)
		t->head->prev = e;
	t->head = e;
	if (!t->tail)
		t->tail = e;
}

void ss_udp_table_unlink(ss_udp_table_t *t, ss_udp_entry_t *e)
{
	ss_udp_entry_t **pp = &t->buckets[e->hash & (t->nbuckets - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->hnext = NULL;
	lru_remove(t, e);
	t->count--;
}

void ss_udp_table_put(ss_udp_table_t *t, ss_udp_entry_t *e)
{
	ss_pool_put(&t->pool, e);
}

ss_udp_entry_t *ss_udp_table_oldest(ss_udp_table_t *t)
{
	return t->tail;
}

ss_udp_entry_t *ss_udp_table_add(ss_udp_table_t *t, const struct sockaddr *key, socklen_t key_len,
				 double now)
{
	ss_udp_entry_t *e;

	if (t->count == t->max)
		return NULL;
	e = ss_pool_get(&t->pool, NULL);
	if (!e)
		return NULL;
	memset(e, 0, t->keep_from);
	e->key_len = ss_inaddr_set(&e->key, key, key_len);
	e->hash = ss_udp_key_hash(t->seed, key);
	e->last_active = now;
	ss_udp_entry_t **b = &t->buckets[e->hash & (t->nbuckets - 1)];
	e->hnext = *b;
	*b = e;
	lru_push_head(t, e);
	t->count++;
	return e;
}

void ss_udp_table_touch(ss_udp_table_t *t, ss_udp_entry_t *e, double now)
{
	e->last_active = now;
	if (t->head != e) {
		lru_remove(t, e);
		lru_push_head(t, e);
	}
}

ss_udp_entry_t *ss_udp_table_expired(ss_udp_table_t *t, double now, double timeout)
{
	if (t->tail && now - t->tail->last_active >= timeout)
		return t->tail;
	return NULL;
}

void ss_udp_table_arm(ss_udp_table_t *t, struct ev_loop *loop, ev_timer *timer, double timeout)
{
	ss_udp_entry_t *oldest = ss_udp_table_oldest(t);
	double at;

	ev_timer_stop(loop, timer);
	if (!oldest)
		return;
	at = oldest->last_active + timeout - ev_now(loop);
	ev_timer_set(timer, at > 0.01 ? at : 0.01, 0.);
	ev_timer_start(loop, timer);
}
