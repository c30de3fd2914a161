/* SPDX-License-Identifier: MIT */
/* The UDP association table: lookups by client address (IPv4 and its
 * IPv4-mapped IPv6 form are one client, ports tell clients apart), LRU order,
 * idle expiry at the edge, eviction of the oldest when full, reuse of
 * returned entries, long bucket chains, and a randomized comparison against
 * a plain reference model. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "crypto/primitives.h"
#include "relay/udp_table.h"

/* What a caller embeds: the table entry first, its own state after. */
typedef struct assoc {
	ss_udp_entry_t entry;
	uint32_t id;
	uint8_t scratch[40];
	uint32_t kept; /* after keep_from in test_keep_from */
} assoc_t;

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
	return ss;
}

static socklen_t salen(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

#define SA(x) ((const struct sockaddr *)&(x))

static assoc_t *add(ss_udp_table_t *t, const struct sockaddr_storage *k, double now)
{
	return (assoc_t *)ss_udp_table_add(t, (const struct sockaddr *)k, salen(k), now);
}

static assoc_t *find(ss_udp_table_t *t, const struct sockaddr_storage *k)
{
	return (assoc_t *)ss_udp_table_find(t, (const struct sockaddr *)k, salen(k));
}

static void drop(ss_udp_table_t *t, assoc_t *a)
{
	ss_udp_table_unlink(t, &a->entry);
	ss_udp_table_put(t, &a->entry);
}

/* The LRU list walked both ways agrees with itself and with count, and
 * every bucket chain holds exactly the listed entries. */
static void check_links(ss_udp_table_t *t)
{
	size_t n = 0, chained = 0;
	ss_udp_entry_t *prev = NULL;

	for (ss_udp_entry_t *e = t->head; e; e = e->next) {
		assert_ptr_equal(e->prev, prev);
		if (prev)
			assert_true(prev->last_active >= e->last_active);
		prev = e;
		n++;
		assert_true(n <= t->count);
	}
	assert_ptr_equal(t->tail, prev);
	assert_int_equal(n, t->count);
	for (size_t b = 0; b < t->nbuckets; b++)
		for (ss_udp_entry_t *e = t->buckets[b]; e; e = e->hnext) {
			assert_int_equal(e->hash & (t->nbuckets - 1), b);
			chained++;
			assert_true(chained <= t->count);
		}
	assert_int_equal(chained, t->count);
}

static void drain(ss_udp_table_t *t)
{
	ss_udp_entry_t *e;

	while ((e = ss_udp_table_oldest(t))) {
		ss_udp_table_unlink(t, e);
		ss_udp_table_put(t, e);
	}
	assert_int_equal(t->count, 0);
	assert_null(t->head);
	assert_null(t->tail);
}

static void test_init_errors(void **state)
{
	ss_udp_table_t t;
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 0), -EINVAL);
	assert_int_equal(
	    ss_udp_table_init(&t, sizeof(ss_udp_entry_t) - 1, sizeof(ss_udp_entry_t) - 1, 4),
	    -EINVAL);
	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 1), 0);
	assert_int_equal(t.count, 0);
	assert_true(t.nbuckets >= 1 && (t.nbuckets & (t.nbuckets - 1)) == 0);
	assert_null(ss_udp_table_oldest(&t));
	assert_null(ss_udp_table_expired(&t, 1e9, 0));
	ss_udp_table_free(&t);
}

/* Bytes after keep_from survive a slot's reuse; those before are zeroed. */
static void test_keep_from(void **state)
{
	ss_udp_table_t t;
	struct sockaddr_storage a = v4("127.0.0.1", 40000), b = v4("127.0.0.1", 40001);
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t) + 1, 4), -EINVAL);
	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(ss_udp_entry_t) - 1, 4),
			 -EINVAL);
	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), offsetof(assoc_t, kept), 4), 0);
	assoc_t *x = add(&t, &a, 1.0);
	assert_int_equal(x->kept, 0); /* a fresh slot */
	x->id = 7;
	x->kept = 42;
	ss_udp_table_unlink(&t, &x->entry);
	ss_udp_table_put(&t, &x->entry);
	assoc_t *y = add(&t, &b, 2.0);
	assert_ptr_equal(y, x);
	assert_int_equal(y->id, 0);
	assert_int_equal(y->kept, 42);
	ss_udp_table_free(&t);
}

static void test_add_find(void **state)
{
	ss_udp_table_t t;
	struct sockaddr_storage a = v4("127.0.0.1", 40000), b = v6("::1", 40000),
				c = v4("10.1.2.3", 53);
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 8), 0);
	assert_null(find(&t, &a));

	assoc_t *ea = add(&t, &a, 5.0);
	assert_non_null(ea);
	assert_int_equal(t.count, 1);
	assert_ptr_equal(t.head, &ea->entry);
	assert_ptr_equal(t.tail, &ea->entry);
	assert_true(ea->entry.last_active == 5.0);
	assert_int_equal(ea->entry.key_len, sizeof(struct sockaddr_in));
	assert_memory_equal(&ea->entry.key, &a, sizeof(struct sockaddr_in));
	/* The caller's part starts zeroed. */
	assert_int_equal(ea->id, 0);
	for (size_t i = 0; i < sizeof(ea->scratch); i++)
		assert_int_equal(ea->scratch[i], 0);
	ea->id = 1;

	assoc_t *eb = add(&t, &b, 6.0);
	assoc_t *ec = add(&t, &c, 7.0);
	assert_non_null(eb);
	assert_non_null(ec);
	assert_ptr_not_equal(eb, ea);
	assert_ptr_not_equal(ec, eb);
	eb->id = 2;
	ec->id = 3;
	assert_int_equal(t.count, 3);

	assert_ptr_equal(find(&t, &a), ea);
	assert_ptr_equal(find(&t, &b), eb);
	assert_ptr_equal(find(&t, &c), ec);
	assert_int_equal(find(&t, &a)->id, 1);
	/* Neighbours of the keys are other clients. */
	struct sockaddr_storage n1 = v4("127.0.0.2", 40000), n2 = v6("::2", 40000),
				n3 = v4("10.1.2.3", 54), n4 = v6("::ffff:10.1.2.4", 53);
	assert_null(find(&t, &n1));
	assert_null(find(&t, &n2));
	assert_null(find(&t, &n3));
	assert_null(find(&t, &n4));
	/* Looking up does not change the order. */
	assert_ptr_equal(ss_udp_table_oldest(&t), &ea->entry);
	assert_ptr_equal(t.head, &ec->entry);
	check_links(&t);

	drain(&t);
	ss_udp_table_free(&t);
}

static void test_addr_equal(void **state)
{
	struct sockaddr_storage a4 = v4("192.0.2.7", 5353), a6 = v6("::ffff:192.0.2.7", 5353),
				other_port4 = v4("192.0.2.7", 5354),
				other_port6 = v6("::ffff:192.0.2.7", 5354),
				other_ip = v6("::ffff:192.0.2.8", 5353),
				compat = v6("::192.0.2.7", 5353), lo4 = v4("127.0.0.1", 5353),
				lo6 = v6("::1", 5353);
	(void)state;

	assert_true(ss_udp_addr_equal(SA(a4), SA(a4)));
	assert_true(ss_udp_addr_equal(SA(a4), SA(a6)));
	assert_true(ss_udp_addr_equal(SA(a6), SA(a4)));
	assert_false(ss_udp_addr_equal(SA(a4), SA(other_port4)));
	assert_false(ss_udp_addr_equal(SA(a4), SA(other_port6)));
	assert_false(ss_udp_addr_equal(SA(a6), SA(other_port6)));
	assert_false(ss_udp_addr_equal(SA(a4), SA(other_ip)));
	/* Only the ::ffff: form is the IPv4 address. */
	assert_false(ss_udp_addr_equal(SA(a4), SA(compat)));
	assert_false(ss_udp_addr_equal(SA(lo4), SA(lo6)));

	/* Bytes outside the address and port do not matter. */
	struct sockaddr_storage dirty4 = a4;
	memset(((struct sockaddr_in *)&dirty4)->sin_zero, 0xa5, 8);
	memset((uint8_t *)&dirty4 + sizeof(struct sockaddr_in), 0x5a,
	       sizeof(dirty4) - sizeof(struct sockaddr_in));
	assert_true(ss_udp_addr_equal(SA(a4), SA(dirty4)));
	assert_true(ss_udp_addr_equal(SA(a6), SA(dirty4)));
}

static void test_mapped_is_ipv4(void **state)
{
	ss_udp_table_t t;
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 16), 0);
	for (int order = 0; order < 2; order++) {
		struct sockaddr_storage plain = v4("198.51.100.9", 1111 + (uint16_t)order),
					mapped = v6("::ffff:198.51.100.9", 1111 + (uint16_t)order);
		const struct sockaddr_storage *first = order ? &mapped : &plain,
					      *second = order ? &plain : &mapped;
		struct sockaddr_storage dirty = plain;
		memset(((struct sockaddr_in *)&dirty)->sin_zero, 0xff, 8);

		assoc_t *e = add(&t, first, 1.0);
		assert_non_null(e);
		assert_ptr_equal(find(&t, second), e);
		assert_ptr_equal(find(&t, &dirty), e);
		/* The other port of the same address is another client. */
		struct sockaddr_storage near = v6("::ffff:198.51.100.9", 1113),
					near4 = v4("198.51.100.10", 1111 + (uint16_t)order);
		assert_null(find(&t, &near));
		assert_null(find(&t, &near4));
	}
	assert_int_equal(t.count, 2);
	check_links(&t);
	drain(&t);
	ss_udp_table_free(&t);
}

static void test_ports_distinguish(void **state)
{
	ss_udp_table_t t;
	assoc_t *e[300];
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 300), 0);
	for (uint16_t i = 0; i < 150; i++) {
		struct sockaddr_storage k4 = v4("127.0.0.1", (uint16_t)(1 + i)),
					k6 = v6("::1", (uint16_t)(1 + i));
		e[i] = add(&t, &k4, i);
		e[150 + i] = add(&t, &k6, i);
		assert_non_null(e[i]);
		assert_non_null(e[150 + i]);
		e[i]->id = i;
		e[150 + i]->id = 150u + i;
	}
	assert_int_equal(t.count, 300);
	for (uint16_t i = 0; i < 150; i++) {
		struct sockaddr_storage k4 = v4("127.0.0.1", (uint16_t)(1 + i)),
					m4 = v6("::ffff:127.0.0.1", (uint16_t)(1 + i)),
					k6 = v6("::1", (uint16_t)(1 + i));
		assert_ptr_equal(find(&t, &k4), e[i]);
		assert_ptr_equal(find(&t, &m4), e[i]);
		assert_ptr_equal(find(&t, &k6), e[150 + i]);
		assert_int_equal(find(&t, &k6)->id, 150u + i);
	}
	struct sockaddr_storage beyond = v4("127.0.0.1", 151), zero = v4("127.0.0.1", 0);
	assert_null(find(&t, &beyond));
	assert_null(find(&t, &zero));
	check_links(&t);
	drain(&t);
	ss_udp_table_free(&t);
}

static void test_lru_touch(void **state)
{
	ss_udp_table_t t;
	struct sockaddr_storage ka = v4("10.0.0.1", 1), kb = v4("10.0.0.2", 1),
				kc = v4("10.0.0.3", 1);
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 4), 0);
	assoc_t *a = add(&t, &ka, 1.0), *b = add(&t, &kb, 2.0), *c = add(&t, &kc, 3.0);
	/* head c b a tail */
	assert_ptr_equal(t.head, &c->entry);
	assert_ptr_equal(ss_udp_table_oldest(&t), &a->entry);
	check_links(&t);

	ss_udp_table_touch(&t, &a->entry, 4.0); /* a c b */
	assert_true(a->entry.last_active == 4.0);
	assert_ptr_equal(t.head, &a->entry);
	assert_ptr_equal(ss_udp_table_oldest(&t), &b->entry);
	assert_ptr_equal(a->entry.next, &c->entry);
	assert_ptr_equal(c->entry.next, &b->entry);
	check_links(&t);

	ss_udp_table_touch(&t, &c->entry, 5.0); /* c a b: a middle entry moves up */
	assert_ptr_equal(t.head, &c->entry);
	assert_ptr_equal(c->entry.next, &a->entry);
	assert_ptr_equal(ss_udp_table_oldest(&t), &b->entry);
	check_links(&t);

	ss_udp_table_touch(&t, &c->entry, 6.0); /* touching the head keeps the order */
	assert_ptr_equal(t.head, &c->entry);
	assert_true(c->entry.last_active == 6.0);
	assert_ptr_equal(ss_udp_table_oldest(&t), &b->entry);
	check_links(&t);

	ss_udp_table_touch(&t, &b->entry, 7.0); /* the tail moves to the head: b c a */
	assert_ptr_equal(t.head, &b->entry);
	assert_ptr_equal(ss_udp_table_oldest(&t), &a->entry);
	assert_null(b->entry.prev);
	assert_null(a->entry.next);
	check_links(&t);

	/* Unlinking the head, the middle and the tail. */
	ss_udp_table_unlink(&t, &c->entry); /* b a */
	check_links(&t);
	assert_null(find(&t, &kc));
	ss_udp_table_put(&t, &c->entry);
	ss_udp_table_unlink(&t, &b->entry); /* a */
	assert_ptr_equal(t.head, &a->entry);
	assert_ptr_equal(t.tail, &a->entry);
	check_links(&t);
	ss_udp_table_put(&t, &b->entry);
	ss_udp_table_unlink(&t, &a->entry);
	ss_udp_table_put(&t, &a->entry);
	assert_null(t.head);
	assert_null(t.tail);
	assert_int_equal(t.count, 0);
	/* A single entry touched stays alone and consistent. */
	a = add(&t, &ka, 8.0);
	ss_udp_table_touch(&t, &a->entry, 9.0);
	assert_ptr_equal(t.head, &a->entry);
	assert_ptr_equal(t.tail, &a->entry);
	check_links(&t);
	drain(&t);
	ss_udp_table_free(&t);
}

static void test_expired_edge(void **state)
{
	ss_udp_table_t t;
	struct sockaddr_storage ka = v6("2001:db8::1", 9), kb = v6("2001:db8::2", 9);
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 4), 0);
	assert_null(ss_udp_table_expired(&t, 100.0, 5.0));
	assoc_t *a = add(&t, &ka, 10.0);
	/* Idle for less than the timeout: kept; exactly the timeout: expired. */
	assert_null(ss_udp_table_expired(&t, 10.0, 5.0));
	assert_null(ss_udp_table_expired(&t, 14.75, 5.0));
	assert_null(ss_udp_table_expired(&t, 15.0 - 1.0 / 1024, 5.0));
	assert_ptr_equal(ss_udp_table_expired(&t, 15.0, 5.0), &a->entry);
	assert_ptr_equal(ss_udp_table_expired(&t, 1000.0, 5.0), &a->entry);
	/* Asking does not remove. */
	assert_int_equal(t.count, 1);
	assert_ptr_equal(find(&t, &ka), a);

	/* Activity moves the edge. */
	ss_udp_table_touch(&t, &a->entry, 12.5);
	assert_null(ss_udp_table_expired(&t, 15.0, 5.0));
	assert_null(ss_udp_table_expired(&t, 17.25, 5.0));
	assert_ptr_equal(ss_udp_table_expired(&t, 17.5, 5.0), &a->entry);

	/* Two entries: the oldest goes first, the other only at its own edge. */
	assoc_t *b = add(&t, &kb, 13.0);
	assert_ptr_equal(ss_udp_table_expired(&t, 18.0, 5.0), &a->entry);
	drop(&t, a);
	assert_null(ss_udp_table_expired(&t, 17.5, 5.0));
	assert_ptr_equal(ss_udp_table_expired(&t, 18.0, 5.0), &b->entry);
	/* A zero timeout expires everything at once, a huge one nothing. */
	assert_ptr_equal(ss_udp_table_expired(&t, 13.0, 0.0), &b->entry);
	assert_null(ss_udp_table_expired(&t, 1e6, 1e7));
	drop(&t, b);
	assert_null(ss_udp_table_expired(&t, 1e9, 0.0));
	ss_udp_table_free(&t);
}

static void arm_never_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* The expiry timer follows the least recently used entry, never fires
 * sooner than 10 ms from now, and stops with the table empty. */
static void test_arm(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	ss_udp_table_t t;
	ev_timer timer;
	struct sockaddr_storage ka = v4("192.0.2.1", 53), kb = v4("192.0.2.2", 53);
	(void)state;

	assert_non_null(loop);
	ev_init(&timer, arm_never_cb);
	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 4), 0);
	ss_udp_table_arm(&t, loop, &timer, 5.0);
	assert_false(ev_is_active(&timer));

	double now = ev_now(loop);
	assoc_t *a = add(&t, &ka, now - 2.0);
	ss_udp_table_arm(&t, loop, &timer, 5.0);
	assert_true(ev_is_active(&timer));
	assert_true(ev_timer_remaining(loop, &timer) > 2.9);
	assert_true(ev_timer_remaining(loop, &timer) < 3.001);

	/* A newer entry does not move it; once the oldest is active again, the
	 * next oldest sets it. */
	assoc_t *b = add(&t, &kb, now);
	ss_udp_table_arm(&t, loop, &timer, 5.0);
	assert_true(ev_timer_remaining(loop, &timer) < 3.001);
	ss_udp_table_touch(&t, &a->entry, now + 1.0);
	ss_udp_table_arm(&t, loop, &timer, 5.0);
	assert_true(ev_timer_remaining(loop, &timer) > 4.9);
	assert_true(ev_timer_remaining(loop, &timer) < 5.001);

	/* Overdue: as soon as allowed, not at once. */
	ss_udp_table_arm(&t, loop, &timer, 0.0);
	assert_true(ev_timer_remaining(loop, &timer) > 0.009);
	assert_true(ev_timer_remaining(loop, &timer) < 0.011);

	drop(&t, a);
	drop(&t, b);
	ss_udp_table_arm(&t, loop, &timer, 5.0);
	assert_false(ev_is_active(&timer));
	ss_udp_table_free(&t);
	ev_loop_destroy(loop);
}

static void test_full_evict(void **state)
{
	ss_udp_table_t t;
	struct sockaddr_storage k[6];
	assoc_t *e[6];
	(void)state;

	for (int i = 0; i < 6; i++)
		k[i] = v4("172.16.0.1", (uint16_t)(2000 + i));
	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), 3), 0);
	for (int i = 0; i < 3; i++) {
		e[i] = add(&t, &k[i], i);
		assert_non_null(e[i]);
		memset(e[i]->scratch, 0xee, sizeof(e[i]->scratch));
		e[i]->id = 0xdead;
	}
	/* Full: no entry, nothing changed. */
	assert_null(add(&t, &k[3], 3));
	assert_int_equal(t.count, 3);
	assert_null(find(&t, &k[3]));
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(find(&t, &k[i]), e[i]);
	check_links(&t);

	/* The caller evicts the oldest, then adds. */
	assert_ptr_equal(ss_udp_table_oldest(&t), &e[0]->entry);
	drop(&t, e[0]);
	assert_null(find(&t, &k[0]));
	e[3] = add(&t, &k[3], 3);
	assert_non_null(e[3]);
	/* The slot given back is reused, its caller part zeroed again. */
	assert_ptr_equal(e[3], e[0]);
	assert_int_equal(e[3]->id, 0);
	for (size_t i = 0; i < sizeof(e[3]->scratch); i++)
		assert_int_equal(e[3]->scratch[i], 0);
	assert_ptr_equal(find(&t, &k[3]), e[3]);
	assert_null(find(&t, &k[0]));
	assert_ptr_equal(ss_udp_table_oldest(&t), &e[1]->entry);

	/* A touched entry is no longer the one to evict. */
	ss_udp_table_touch(&t, &e[1]->entry, 4);
	assert_null(add(&t, &k[4], 5));
	assert_ptr_equal(ss_udp_table_oldest(&t), &e[2]->entry);
	drop(&t, e[2]);
	e[4] = add(&t, &k[4], 5);
	assert_non_null(e[4]);
	assert_ptr_equal(ss_udp_table_oldest(&t), &e[3]->entry);
	check_links(&t);

	/* Any entry may go (not only the oldest); its slot comes back first. */
	drop(&t, e[1]);
	e[5] = add(&t, &k[5], 6);
	assert_ptr_equal(e[5], e[1]);
	assert_int_equal(t.count, 3);
	assert_null(add(&t, &k[0], 7));
	check_links(&t);
	drain(&t);
	ss_udp_table_free(&t);
}

/* Insert many clients into a small table the way the relay does (evict the
 * oldest when add says full): the evicted are exactly the first ones, in
 * insertion order. */
static void test_eviction_order(void **state)
{
	enum { MAX = 5, N = 200 };
	ss_udp_table_t t;
	int next_evicted = 0;
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), MAX), 0);
	for (int i = 0; i < N; i++) {
		struct sockaddr_storage k = (i & 1) ? v6("fd00::7", (uint16_t)(10000 + i))
						    : v4("10.9.8.7", (uint16_t)(10000 + i));
		assoc_t *a = add(&t, &k, i);
		if (!a) {
			assert_int_equal(t.count, MAX);
			assoc_t *old = (assoc_t *)ss_udp_table_oldest(&t);
			assert_non_null(old);
			assert_int_equal(old->id, next_evicted);
			next_evicted++;
			drop(&t, old);
			a = add(&t, &k, i);
		}
		assert_non_null(a);
		a->id = (uint32_t)i;
	}
	assert_int_equal(next_evicted, N - MAX);
	for (int i = N - MAX; i < N; i++) {
		assoc_t *old = (assoc_t *)ss_udp_table_oldest(&t);
		assert_int_equal(old->id, i);
		drop(&t, old);
	}
	assert_int_equal(t.count, 0);
	ss_udp_table_free(&t);
}

/* Every entry in one bucket: chains of any length stay correct. */
static void test_one_bucket(void **state)
{
	enum { N = 64 };
	ss_udp_table_t t;
	assoc_t *e[N];
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), N), 0);
	t.nbuckets = 1; /* the mask becomes 0: every hash lands in bucket 0 */
	for (int i = 0; i < N; i++) {
		struct sockaddr_storage k = v4("203.0.113.5", (uint16_t)(700 + i));
		e[i] = add(&t, &k, i);
		assert_non_null(e[i]);
		e[i]->id = (uint32_t)i;
	}
	check_links(&t);
	for (int i = 0; i < N; i++) {
		struct sockaddr_storage k = v6("::ffff:203.0.113.5", (uint16_t)(700 + i));
		assert_ptr_equal(find(&t, &k), e[i]);
	}
	/* Unlink from the front, the back and the middle of the chain. */
	for (int i = 0; i < N; i += 3)
		drop(&t, e[i]);
	check_links(&t);
	for (int i = 0; i < N; i++) {
		struct sockaddr_storage k = v4("203.0.113.5", (uint16_t)(700 + i));
		if (i % 3 == 0)
			assert_null(find(&t, &k));
		else
			assert_ptr_equal(find(&t, &k), e[i]);
	}
	/* The same keys come back in reused slots. */
	for (int i = 0; i < N; i += 3) {
		struct sockaddr_storage k = v4("203.0.113.5", (uint16_t)(700 + i));
		e[i] = add(&t, &k, 100 + i);
		assert_non_null(e[i]);
		e[i]->id = (uint32_t)i;
	}
	assert_int_equal(t.count, N);
	check_links(&t);
	for (int i = 0; i < N; i++) {
		struct sockaddr_storage k = v4("203.0.113.5", (uint16_t)(700 + i));
		assert_int_equal(find(&t, &k)->id, i);
	}
	drain(&t);
	ss_udp_table_free(&t);
}

/* The default size, full: thousands of clients share the buckets. */
static void test_many(void **state)
{
	enum { N = 4096 };
	ss_udp_table_t t;
	size_t longest = 0;
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), N), 0);
	for (int i = 0; i < N; i++) {
		char ip[64];
		struct sockaddr_storage k;
		if (i % 2) {
			snprintf(ip, sizeof(ip), "fd00::%x:%x", i >> 8, i & 0xff);
			k = v6(ip, (uint16_t)(i * 7));
		} else {
			snprintf(ip, sizeof(ip), "10.%d.%d.1", i >> 8, i & 0xff);
			k = v4(ip, 53);
		}
		assoc_t *a = add(&t, &k, i);
		assert_non_null(a);
		a->id = (uint32_t)i;
	}
	struct sockaddr_storage extra = v4("10.255.255.255", 1);
	assert_null(add(&t, &extra, N));
	for (size_t b = 0; b < t.nbuckets; b++) {
		size_t n = 0;
		for (ss_udp_entry_t *e = t.buckets[b]; e; e = e->hnext)
			n++;
		if (n > longest)
			longest = n;
	}
	/* 4096 keys in 4096 buckets: some share one (the chains are used). */
	assert_true(longest >= 2);
	check_links(&t);
	for (int i = 0; i < N; i++) {
		char ip[64];
		struct sockaddr_storage k;
		if (i % 2) {
			snprintf(ip, sizeof(ip), "fd00::%x:%x", i >> 8, i & 0xff);
			k = v6(ip, (uint16_t)(i * 7));
		} else {
			snprintf(ip, sizeof(ip), "::ffff:10.%d.%d.1", i >> 8, i & 0xff);
			k = v6(ip, 53);
		}
		assoc_t *a = find(&t, &k);
		assert_non_null(a);
		assert_int_equal(a->id, i);
	}
	drain(&t);
	ss_udp_table_free(&t);
}

/* Random operations against a reference model (an array in LRU order). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static void test_model(void **state)
{
	enum { MAX = 12, KEYS = 40, OPS = 20000 };
	ss_udp_table_t t;
	/* model[0] is the most recent; stores key ids. */
	int model[MAX], n = 0;
	double last[KEYS];
	double now = 0;
	(void)state;

	assert_int_equal(ss_udp_table_init(&t, sizeof(assoc_t), sizeof(assoc_t), MAX), 0);
	for (int op = 0; op < OPS; op++) {
		int id = (int)rnd(KEYS);
		/* Keys alternate between forms for the same client. */
		struct sockaddr_storage k;
		char ip[64];
		snprintf(ip, sizeof(ip), (op & 1) ? "::ffff:192.168.%d.1" : "192.168.%d.1", id % 4);
		k = (op & 1) ? v6(ip, (uint16_t)(id / 4 + 1)) : v4(ip, (uint16_t)(id / 4 + 1));
		int pos = -1;
		for (int i = 0; i < n; i++)
			if (model[i] == id)
				pos = i;
		now += rnd(4) * 0.25;
		assoc_t *a = find(&t, &k);
		assert_true((a != NULL) == (pos >= 0));
		if (a)
			assert_int_equal(a->id, id);

		switch (rnd(4)) {
		case 0:
		case 1: /* a datagram from id: touch or add (evicting when full) */
			if (a) {
				ss_udp_table_touch(&t, &a->entry, now);
				memmove(model + 1, model, (size_t)pos * sizeof(int));
				model[0] = id;
			} else {
				a = add(&t, &k, now);
				if (n == MAX) {
					assert_null(a);
					assoc_t *old = (assoc_t *)ss_udp_table_oldest(&t);
					assert_int_equal(old->id, model[n - 1]);
					drop(&t, old);
					n--;
					a = add(&t, &k, now);
				}
				assert_non_null(a);
				a->id = (uint32_t)id;
				memmove(model + 1, model, (size_t)n * sizeof(int));
				model[0] = id;
				n++;
			}
			last[id] = now;
			break;
		case 2: /* the association ends for its own reason */
			if (a) {
				drop(&t, a);
				memmove(model + pos, model + pos + 1,
					(size_t)(n - pos - 1) * sizeof(int));
				n--;
			}
			break;
		default: { /* expiry sweep */
			double timeout = 1.0 + rnd(8) * 0.5;
			ss_udp_entry_t *e;
			while ((e = ss_udp_table_expired(&t, now, timeout))) {
				assert_true(n > 0);
				assert_int_equal(((assoc_t *)e)->id, model[n - 1]);
				assert_true(now - last[model[n - 1]] >= timeout);
				drop(&t, (assoc_t *)e);
				n--;
			}
			if (n > 0)
				assert_true(now - last[model[n - 1]] < timeout);
			break;
		}
		}
		assert_int_equal(t.count, (size_t)n);
		if (op % 97 == 0)
			check_links(&t);
	}
	/* The final order is the model's. */
	ss_udp_entry_t *e = t.head;
	for (int i = 0; i < n; i++, e = e->next)
		assert_int_equal(((assoc_t *)e)->id, model[i]);
	assert_null(e);
	drain(&t);
	ss_udp_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_errors),
	    cmocka_unit_test(test_keep_from),
	    cmocka_unit_test(test_add_find),
	    cmocka_unit_test(test_addr_equal),
	    cmocka_unit_test(test_mapped_is_ipv4),
	    cmocka_unit_test(test_ports_distinguish),
	    cmocka_unit_test(test_lru_touch),
	    cmocka_unit_test(test_expired_edge),
	    cmocka_unit_test(test_arm),
	    cmocka_unit_test(test_full_evict),
	    cmocka_unit_test(test_eviction_order),
	    cmocka_unit_test(test_one_bucket),
	    cmocka_unit_test(test_many),
	    cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
