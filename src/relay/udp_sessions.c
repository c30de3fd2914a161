/* SPDX-License-Identifier: MIT */
#include "relay/udp_sessions.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "codec/secret.h"
#include "relay/udp_table.h"

int ss_udp_sessions_init(ss_udp_sessions_t *t, size_t memo_size, double ttl, size_t live_max,
			 size_t ended_max)
{
	size_t cap = live_max + ended_max;

	memset(t, 0, sizeof(*t));
	if (cap == 0)
		return -EINVAL;
	t->nbuckets = 16;
	while (t->nbuckets < cap)
		t->nbuckets <<= 1;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	if (ss_pool_init(&t->pool, sizeof(ss_udp_session_t) + memo_size, cap) < 0) {
		free(t->buckets);
		t->buckets = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->memo_size = memo_size;
	t->ttl = ttl;
	t->live_max = live_max;
	ss_secret_random(t->seed, sizeof(t->seed));
	t->ready = true;
	return 0;
}

void ss_udp_sessions_free(ss_udp_sessions_t *t)
{
	if (!t->ready)
		return;
	/* The memories hold packet ids, not keys; wiped all the same. */
	for (size_t i = 0; i < t->pool.fresh; i++)
		ss_secret_wipe(ss_pool_at(&t->pool, i), t->pool.obj_size);
	ss_pool_destroy(&t->pool);
	free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

ss_udp_sessions_t *ss_udp_sessions_new(size_t memo_size, double ttl, size_t live_max,
				       size_t ended_max)
{
	ss_udp_sessions_t *t = malloc(sizeof(*t));

	if (!t)
		return NULL;
	if (ss_udp_sessions_init(t, memo_size, ttl, live_max, ended_max) < 0) {
		free(t);
		return NULL;
	}
	atomic_init(&t->refs, 1);
	return t;
}

ss_udp_sessions_t *ss_udp_sessions_ref(ss_udp_sessions_t *t)
{
	atomic_fetch_add(&t->refs, 1);
	return t;
}

void ss_udp_sessions_unref(ss_udp_sessions_t *t)
{
	if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	ss_udp_sessions_free(t);
	free(t);
}

unsigned ss_udp_sessions_workers(ss_udp_sessions_t *t, unsigned count)
{
	unsigned first;

	/* A record's holder is an int, -1 for none. */
	if (t->next_holder > (unsigned)INT_MAX - count)
		t->next_holder = 0;
	first = t->next_holder;
	t->next_holder += count;
	return first;
}

static ss_udp_session_t **sessions_bucket(ss_udp_sessions_t *t, uint32_t hash)
{
	return &t->buckets[hash & (t->nbuckets - 1)];
}

static void ended_unlink(ss_udp_sessions_t *t, ss_udp_session_t *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		t->oldest = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		t->newest = s->prev;
	s->prev = s->next = NULL;
	t->ended--;
}

static void sessions_remove(ss_udp_sessions_t *t, ss_udp_session_t *s)
{
	ss_udp_session_t **pp = sessions_bucket(t, s->hash);

	while (*pp != s)
		pp = &(*pp)->hnext;
	*pp = s->hnext;
	ss_pool_put(&t->pool, s);
}

/* Ended sessions past their time go, oldest first. */
static void sessions_expire(ss_udp_sessions_t *t, double now)
{
	while (t->oldest && t->oldest->expires <= now) {
		ss_udp_session_t *s = t->oldest;
		ended_unlink(t, s);
		sessions_remove(t, s);
	}
}

ss_udp_claim_t ss_udp_sessions_claim(ss_udp_sessions_t *t, const struct sockaddr *key, unsigned me,
				     double now, ss_udp_session_t **out, unsigned *holder)
{
	uint32_t hash = ss_udp_key_hash(t->seed, key);
	ss_udp_claim_t rc = SS_UDP_SESSION_MINE;
	ss_udp_session_t *s;

	pthread_mutex_lock(&t->lock);
	sessions_expire(t, now);
	for (s = *sessions_bucket(t, hash); s; s = s->hnext)
		if (s->hash == hash && ss_udp_addr_equal((const struct sockaddr *)&s->key, key))
			break;
	if (s && s->holder >= 0) {
		*holder = (unsigned)s->holder;
		rc = (unsigned)s->holder == me ? SS_UDP_SESSION_MINE : SS_UDP_SESSION_OTHER;
	} else if (s) {
		/* Ended: taken back, with what its memory holds. */
		ended_unlink(t, s);
		t->taken_back++;
		t->live++;
		s->holder = (int)me;
	} else if ((s = ss_pool_get(&t->pool, NULL))) {
		memset(s, 0, t->pool.obj_size);
		ss_inaddr_set(&s->key, key, sizeof(struct sockaddr_in6));
		s->hash = hash;
		s->holder = (int)me;
		ss_udp_session_t **b = sessions_bucket(t, hash);
		s->hnext = *b;
		*b = s;
		t->live++;
	} else {
		t->refused_full++;
		rc = SS_UDP_SESSION_FULL;
	}
	pthread_mutex_unlock(&t->lock);
	*out = rc == SS_UDP_SESSION_MINE ? s : NULL;
	return rc;
}

void ss_udp_sessions_release(ss_udp_sessions_t *t, ss_udp_session_t *s, double now)
{
	pthread_mutex_lock(&t->lock);
	t->live--;
	if (!s->recorded || s->last + t->ttl <= now) {
		sessions_remove(t, s);
	} else {
		/* Counted from now, not from its last datagram, which keeps
		 * the list in the order of expiry, and the record at least as
		 * long as needed. */
		s->holder = -1;
		s->expires = now + t->ttl;
		s->next = NULL;
		s->prev = t->newest;
		if (t->newest)
			t->newest->next = s;
		else
			t->oldest = s;
		t->newest = s;
		t->ended++;
	}
	pthread_mutex_unlock(&t->lock);
}

/* ---- inbox ---- */

int ss_udp_inbox_init(ss_udp_inbox_t *b, struct ev_loop *loop, size_t slot_size,
		      void (*cb)(struct ev_loop *, ev_async *, int), void *data)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->q = calloc(SS_UDP_INBOX_SLOTS, sizeof(*b->q));
	if (!b->q)
		return -ENOMEM;
	/* Pages are touched only as handed datagrams fill them. */
	b->area = mmap(NULL, SS_UDP_INBOX_SLOTS * slot_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->area == MAP_FAILED) {
		b->area = NULL;
		free(b->q);
		b->q = NULL;
		return -ENOMEM;
	}
	b->slot_size = slot_size;
	for (unsigned i = 0; i < SS_UDP_INBOX_SLOTS; i++)
		b->q[i].payload = b->area + i * slot_size;
	pthread_mutex_init(&b->lock, NULL);
	ev_async_init(&b->wake, cb);
	b->wake.data = data;
	return 0;
}

void ss_udp_inbox_open(ss_udp_inbox_t *b)
{
	ev_async_start(b->loop, &b->wake);
	pthread_mutex_lock(&b->lock);
	b->open = true;
	pthread_mutex_unlock(&b->lock);
}

unsigned ss_udp_inbox_close(ss_udp_inbox_t *b)
{
	unsigned dropped;

	if (!b->q)
		return 0;
	pthread_mutex_lock(&b->lock);
	b->open = false;
	dropped = b->n;
	b->n = 0;
	pthread_mutex_unlock(&b->lock);
	ev_async_stop(b->loop, &b->wake);
	return dropped;
}

void ss_udp_inbox_free(ss_udp_inbox_t *b)
{
	if (!b->q)
		return;
	munmap(b->area, SS_UDP_INBOX_SLOTS * b->slot_size);
	free(b->q);
	pthread_mutex_destroy(&b->lock);
	memset(b, 0, sizeof(*b));
}

bool ss_udp_inbox_push(ss_udp_inbox_t *b, const ss_udp_handed_t *h, const uint8_t *payload,
		       size_t len)
{
	bool queued = false;

	if (len > b->slot_size)
		return false;
	pthread_mutex_lock(&b->lock);
	if (b->open && b->n < SS_UDP_INBOX_SLOTS) {
		/* Slots past the ones counted are the producers', and the
		 * lock orders producers: copying here keeps it simple; a
		 * hand-off is the exception (a session that moved). */
		ss_udp_handed_t *to = &b->q[(b->head + b->n) % SS_UDP_INBOX_SLOTS];
		uint8_t *area = to->payload;
		*to = *h;
		to->payload = area;
		to->len = len;
		memcpy(area, payload, len);
		b->n++;
		queued = true;
	}
	pthread_mutex_unlock(&b->lock);
	if (queued)
		ev_async_send(b->loop, &b->wake);
	return queued;
}

unsigned ss_udp_inbox_take(ss_udp_inbox_t *b, unsigned *first)
{
	unsigned n;

	pthread_mutex_lock(&b->lock);
	*first = b->head;
	n = b->n;
	pthread_mutex_unlock(&b->lock);
	return n;
}

void ss_udp_inbox_done(ss_udp_inbox_t *b, unsigned n)
{
	pthread_mutex_lock(&b->lock);
	if (n > b->n) /* closed meanwhile: nothing waits */
		n = b->n;
	b->head = (b->head + n) % SS_UDP_INBOX_SLOTS;
	b->n -= n;
	pthread_mutex_unlock(&b->lock);
}
