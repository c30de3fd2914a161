/* SPDX-License-Identifier: MIT */
/* The server's table of UDP sessions shared by its workers: one holder per
 * session, records kept after their association ends while they protect
 * (and only then), taken back with their memory, expiry in order, a full
 * table refusing new sessions and recovering, exclusive holding under
 * threads; and the inbox datagrams are handed over through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <pthread.h>

#include "crypto/primitives.h"
#include "relay/udp_sessions.h"

#define MEMO 24
#define TTL 60.0

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

/* A session key as the 2022 codec lays it out. */
static struct sockaddr_storage key(uint64_t id)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *k = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	k->sin6_family = AF_UNSPEC;
	memcpy(&k->sin6_addr, &id, sizeof(id));
	return ss;
}

static ss_udp_session_t *claim(ss_udp_sessions_t *t, uint64_t id, unsigned me, double now,
			       ss_udp_claim_t want, unsigned *holder)
{
	struct sockaddr_storage k = key(id);
	ss_udp_session_t *s = NULL;
	unsigned h = 99;

	assert_int_equal(ss_udp_sessions_claim(t, (struct sockaddr *)&k, me, now, &s, &h), want);
	if (holder)
		*holder = h;
	if (want == SS_UDP_SESSION_MINE)
		assert_non_null(s);
	else
		assert_null(s);
	return s;
}

static void record(ss_udp_session_t *s, uint8_t mark, double now)
{
	memset(s->memo, mark, MEMO);
	s->recorded = true;
	s->last = now;
}

static bool memo_is(const ss_udp_session_t *s, uint8_t mark)
{
	for (size_t i = 0; i < MEMO; i++)
		if (s->memo[i] != mark)
			return false;
	return true;
}

static void test_one_holder(void **state)
{
	ss_udp_sessions_t t;
	unsigned holder;
	(void)state;

	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, 8, 8), 0);
	ss_udp_session_t *s = claim(&t, 1, 0, 100, SS_UDP_SESSION_MINE, NULL);
	assert_true(memo_is(s, 0));
	assert_int_equal(s->holder, 0);
	/* Another worker is told who holds it; its holder finds its own. */
	claim(&t, 1, 1, 100, SS_UDP_SESSION_OTHER, &holder);
	assert_int_equal(holder, 0);
	assert_ptr_equal(claim(&t, 1, 0, 101, SS_UDP_SESSION_MINE, NULL), s);
	/* Other keys are other sessions. */
	ss_udp_session_t *o = claim(&t, 2, 1, 100, SS_UDP_SESSION_MINE, NULL);
	assert_ptr_not_equal(o, s);
	assert_int_equal(t.live, 2);
	ss_udp_sessions_free(&t);
	ss_udp_sessions_free(&t); /* twice */
}

static void test_kept_while_it_protects(void **state)
{
	ss_udp_sessions_t t;
	(void)state;

	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, 8, 8), 0);
	ss_udp_session_t *s = claim(&t, 1, 0, 100, SS_UDP_SESSION_MINE, NULL);
	record(s, 0xA5, 110);
	ss_udp_sessions_release(&t, s, 115);
	assert_int_equal(t.live, 0);
	assert_int_equal(t.ended, 1);
	/* Any worker takes it back with its memory, until release + TTL. */
	s = claim(&t, 1, 1, 115 + TTL - 1, SS_UDP_SESSION_MINE, NULL);
	assert_true(memo_is(s, 0xA5));
	assert_int_equal(s->holder, 1);
	assert_int_equal(t.taken_back, 1);
	assert_int_equal(t.ended, 0);
	ss_udp_sessions_release(&t, s, 200);
	/* Past that, it is gone: a new session of the same key starts empty. */
	s = claim(&t, 1, 0, 200 + TTL, SS_UDP_SESSION_MINE, NULL);
	assert_true(memo_is(s, 0));
	assert_int_equal(t.ended, 0);
	ss_udp_sessions_free(&t);
}

static void test_gone_when_nothing_to_protect(void **state)
{
	ss_udp_sessions_t t;
	(void)state;

	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, 8, 8), 0);
	/* Nothing recorded (its first datagram was refused): no record. */
	ss_udp_session_t *s = claim(&t, 1, 0, 100, SS_UDP_SESSION_MINE, NULL);
	ss_udp_sessions_release(&t, s, 100);
	assert_int_equal(t.ended, 0);
	assert_int_equal(t.pool.in_use, 0);
	/* Its last datagram is older than TTL (an association that idled
	 * that long): nothing could be replayed any more. */
	s = claim(&t, 2, 0, 100, SS_UDP_SESSION_MINE, NULL);
	record(s, 1, 100);
	ss_udp_sessions_release(&t, s, 100 + TTL);
	assert_int_equal(t.ended, 0);
	assert_int_equal(t.pool.in_use, 0);
	ss_udp_sessions_free(&t);
}

static void test_full_then_room_again(void **state)
{
	ss_udp_sessions_t t;
	ss_udp_session_t *s[3];
	(void)state;

	/* Room for 3: two held and one ended, or any mix. */
	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, 2, 1), 0);
	for (int i = 0; i < 3; i++) {
		s[i] = claim(&t, 10 + (uint64_t)i, 0, 100, SS_UDP_SESSION_MINE, NULL);
		record(s[i], (uint8_t)i, 100);
	}
	ss_udp_sessions_release(&t, s[0], 101);
	claim(&t, 99, 0, 102, SS_UDP_SESSION_FULL, NULL);
	assert_int_equal(t.refused_full, 1);
	/* The ended one cannot make room before its time, then it does. */
	claim(&t, 99, 0, 101 + TTL - 0.5, SS_UDP_SESSION_FULL, NULL);
	ss_udp_session_t *n = claim(&t, 99, 0, 101 + TTL, SS_UDP_SESSION_MINE, NULL);
	assert_true(memo_is(n, 0));
	/* s[1] protects nothing by 200 and goes at once; the expired one's
	 * key starts empty again. */
	ss_udp_sessions_release(&t, s[1], 200);
	assert_int_equal(t.ended, 0);
	ss_udp_session_t *again = claim(&t, 10, 1, 200, SS_UDP_SESSION_MINE, NULL);
	assert_true(memo_is(again, 0));
	ss_udp_sessions_free(&t);
}

static void test_expiry_in_order(void **state)
{
	ss_udp_sessions_t t;
	(void)state;

	/* Session i ends at 1000 + i / 2, its record kept until TTL later. */
	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, 0, 100), 0);
	for (uint64_t i = 0; i < 100; i++) {
		double at = 1000 + (double)i / 2;
		ss_udp_session_t *s = claim(&t, i, 0, at, SS_UDP_SESSION_MINE, NULL);
		record(s, (uint8_t)i, at);
		ss_udp_sessions_release(&t, s, at);
	}
	assert_int_equal(t.ended, 100);
	/* At 1000 + TTL + 24.75, the first 50 have expired (a claim expires). */
	double now = 1000 + TTL + 24.75;
	ss_udp_session_t *s = claim(&t, 1000, 0, now, SS_UDP_SESSION_MINE, NULL);
	assert_int_equal(t.ended, 50);
	ss_udp_sessions_release(&t, s, now);
	for (uint64_t i = 0; i < 100; i++) {
		s = claim(&t, i, 1, now, SS_UDP_SESSION_MINE, NULL);
		assert_true(memo_is(s, i < 50 ? 0 : (uint8_t)i));
		ss_udp_sessions_release(&t, s, now);
	}
	ss_udp_sessions_free(&t);
}

/* ---- threads: a session has one holder at a time ---- */

#define THREADS 4
#define KEYS 16
#define ROUNDS 20000

typedef struct {
	ss_udp_sessions_t *t;
	unsigned me;
	atomic_int *holders; /* per key, how many hold it now */
	atomic_int *errors;
} worker_arg_t;

static void *worker(void *p)
{
	worker_arg_t *a = p;
	uint64_t x = 0x9E3779B97F4A7C15ull * (a->me + 1);

	for (int r = 0; r < ROUNDS; r++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t id = x % KEYS;
		struct sockaddr_storage k = key(id);
		ss_udp_session_t *s = NULL;
		unsigned holder;
		double now = r * 0.001;
		ss_udp_claim_t c =
		    ss_udp_sessions_claim(a->t, (struct sockaddr *)&k, a->me, now, &s, &holder);
		if (c != SS_UDP_SESSION_MINE)
			continue;
		if (atomic_fetch_add(&a->holders[id], 1) != 0)
			atomic_fetch_add(a->errors, 1);
		/* The memory is the holder's alone: a counter nobody else moves. */
		uint64_t v;
		memcpy(&v, s->memo, sizeof(v));
		v++;
		memcpy(s->memo, &v, sizeof(v));
		s->recorded = true;
		s->last = now;
		atomic_fetch_sub(&a->holders[id], 1);
		ss_udp_sessions_release(a->t, s, now);
	}
	return NULL;
}

static void test_threads_one_holder(void **state)
{
	ss_udp_sessions_t t;
	pthread_t th[THREADS];
	worker_arg_t args[THREADS];
	atomic_int holders[KEYS], errors = 0;
	(void)state;

	for (int i = 0; i < KEYS; i++)
		atomic_init(&holders[i], 0);
	assert_int_equal(ss_udp_sessions_init(&t, MEMO, TTL, THREADS, KEYS), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		args[i] = (worker_arg_t){&t, i, holders, &errors};
		assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&errors), 0);
	assert_int_equal(t.live, 0);
	/* Every claim that held a key counted once in its memory: a new
	 * record per key, then each time one was taken back. */
	uint64_t total = 0, taken_back = t.taken_back;
	for (uint64_t id = 0; id < KEYS; id++) {
		struct sockaddr_storage k = key(id);
		ss_udp_session_t *s = NULL;
		unsigned h;
		if (ss_udp_sessions_claim(&t, (struct sockaddr *)&k, 0, 20, &s, &h) ==
		    SS_UDP_SESSION_MINE) {
			uint64_t v;
			memcpy(&v, s->memo, sizeof(v));
			total += v;
		}
	}
	assert_true(total > 0);
	assert_int_equal(total, taken_back + KEYS);
	ss_udp_sessions_free(&t);
}

/* ---- inbox ---- */

static int woken;

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	woken++;
}

static void test_inbox(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	ss_udp_inbox_t b;
	ss_udp_handed_t h;
	uint8_t payload[1500];
	unsigned first;
	(void)state;

	memset(&h, 0, sizeof(h));
	assert_int_equal(ss_udp_inbox_init(&b, loop, sizeof(payload), wake_cb, NULL), 0);
	/* Closed until opened. */
	assert_false(ss_udp_inbox_push(&b, &h, payload, 10));
	ss_udp_inbox_open(&b);
	for (unsigned i = 0; i < SS_UDP_INBOX_SLOTS; i++) {
		memset(payload, (int)i, sizeof(payload));
		h.listener = (uint8_t)i;
		assert_true(ss_udp_inbox_push(&b, &h, payload, 100 + i));
	}
	assert_false(ss_udp_inbox_push(&b, &h, payload, 10)); /* full */
	assert_false(ss_udp_inbox_push(&b, &h, payload, sizeof(payload) + 1));
	woken = 0;
	ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(woken, 1);
	assert_int_equal(ss_udp_inbox_take(&b, &first), SS_UDP_INBOX_SLOTS);
	for (unsigned i = 0; i < SS_UDP_INBOX_SLOTS; i++) {
		ss_udp_handed_t *q = &b.q[(first + i) % SS_UDP_INBOX_SLOTS];
		assert_int_equal(q->listener, i);
		assert_int_equal(q->len, 100 + i);
		assert_int_equal(q->payload[0], (uint8_t)i);
		assert_int_equal(q->payload[q->len - 1], (uint8_t)i);
	}
	/* Taken slots stay out of producers' reach until done. */
	assert_false(ss_udp_inbox_push(&b, &h, payload, 10));
	ss_udp_inbox_done(&b, 10);
	assert_true(ss_udp_inbox_push(&b, &h, payload, 10));
	assert_int_equal(ss_udp_inbox_take(&b, &first), SS_UDP_INBOX_SLOTS - 9);
	ss_udp_inbox_done(&b, SS_UDP_INBOX_SLOTS - 9);
	assert_int_equal(ss_udp_inbox_take(&b, &first), 0);
	/* Closed: what waits is dropped, nothing more comes in. */
	assert_true(ss_udp_inbox_push(&b, &h, payload, 10));
	assert_int_equal(ss_udp_inbox_close(&b), 1);
	assert_false(ss_udp_inbox_push(&b, &h, payload, 10));
	assert_int_equal(ss_udp_inbox_take(&b, &first), 0);
	ss_udp_inbox_free(&b);
	ss_udp_inbox_free(&b); /* twice */
	ev_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_holder),
	    cmocka_unit_test(test_kept_while_it_protects),
	    cmocka_unit_test(test_gone_when_nothing_to_protect),
	    cmocka_unit_test(test_full_then_room_again),
	    cmocka_unit_test(test_expiry_in_order),
	    cmocka_unit_test(test_threads_one_holder),
	    cmocka_unit_test(test_inbox),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
