/* SPDX-License-Identifier: MIT */
/* The workers' shared object (relay/shared.h): made once from a
 * configuration, with the limits split between the workers, the replay
 * pools and the UDP session table of ss-server; the loads that pick a
 * lighter worker; the hand-off queues, pushed from several threads at
 * once while their worker takes from them (the sanitizer builds run it). */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "codec/codec_internal.h"
#include "config/config.h"
#include "relay/shared.h"
#include "testutil.h"

static ss_config_t cfg;
static char err[512];

/* ss-server for TCP and UDP with a 2022 method: replay pools and a table
 * of UDP sessions to share. */
static void server_config(void)
{
	char args[][32] = {"ss-server",
			   "-s",
			   "127.0.0.1",
			   "-p",
			   "8388",
			   "-m",
			   "2022-blake3-aes-128-gcm",
			   "-k",
			   "AAAAAAAAAAAAAAAAAAAAAA==",
			   "-u"};
	char *argv[sizeof(args) / sizeof(args[0])];
	int argc = (int)(sizeof(args) / sizeof(args[0]));

	for (int i = 0; i < argc; i++)
		argv[i] = args[i];
	memset(&cfg, 0, sizeof(cfg));
	if (ss_config_parse(&cfg, SS_PROG_SERVER, argc, argv, NULL, err, sizeof(err)) !=
	    SS_CONFIG_RUN)
		fail_msg("config: %s", err);
}

static void test_create(void **state)
{
	ss_shared_t *sh, *one;
	(void)state;

	server_config();
	assert_int_equal(ss_shared_create(&cfg, 3, NULL, &sh, err, sizeof(err)), 0);
	assert_int_equal(sh->count, 3);
	assert_true(sh->tcp && sh->udp);
	assert_true(sh->max_conns > 0 && sh->max_assoc > 0 && sh->max_pipes > 0);
	assert_non_null(ss_codec_priv(&sh->codec)->pool);
	assert_true(sh->sessions && sh->sessions->ready);
	assert_null(sh->acl);
	assert_int_equal(sh->n_plugins, 0);
	/* One worker takes what three share. */
	assert_int_equal(ss_shared_create(&cfg, 1, NULL, &one, err, sizeof(err)), 0);
	assert_true(one->max_conns >= 3 * sh->max_conns - 2);
	assert_true(one->max_conns <= 3 * sh->max_conns);
	ss_shared_free(one);
	ss_shared_free(sh);
	ss_shared_free(NULL);
	assert_int_equal(ss_shared_create(&cfg, 0, NULL, &sh, err, sizeof(err)), -EINVAL);
	assert_null(sh);
	ss_config_clear(&cfg);
}

static void test_unvalidated(void **state)
{
	ss_config_t raw;
	ss_shared_t *sh = (ss_shared_t *)1;
	(void)state;

	memset(&raw, 0, sizeof(raw));
	assert_int_equal(ss_shared_create(&raw, 1, NULL, &sh, err, sizeof(err)), -EINVAL);
	assert_null(sh);
	assert_non_null(strstr(err, "not validated"));
}

static void test_lighter(void **state)
{
	ss_shared_t *sh;
	(void)state;

	server_config();
	assert_int_equal(ss_shared_create(&cfg, 3, NULL, &sh, err, sizeof(err)), 0);
	/* All alike: nobody hands over. */
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(ss_shared_lighter(sh, i), -1);
	ss_shared_load(sh, 0, 5);
	ss_shared_load(sh, 1, 1);
	ss_shared_load(sh, 2, 3);
	assert_int_equal(ss_shared_lighter(sh, 0), 1);
	assert_int_equal(ss_shared_lighter(sh, 2), 1);
	assert_int_equal(ss_shared_lighter(sh, 1), -1);
	/* One more than the lightest is not enough to hand over. */
	ss_shared_load(sh, 2, -1);
	assert_int_equal(ss_shared_lighter(sh, 2), -1);
	ss_shared_free(sh);
	ss_config_clear(&cfg);
}

/* A reload: the next object holds the same replay pools and session
 * table, its figures go on from the running one's while it serves and
 * once it is freed; the chain mends whichever goes first. */
static void test_chain_carries(void **state)
{
	char args[][32] = {"ss-server", "-s",          "127.0.0.1", "-p", "8388",
			   "-m",        "aes-256-gcm", "-k",        "x",  "-u"};
	char *argv[10];
	ss_config_t cfg2;
	ss_shared_t *a, *b, *c, *d;
	ss_fig_sum_t s;
	(void)state;

	server_config();
	assert_int_equal(ss_shared_create(&cfg, 2, NULL, &a, err, sizeof(err)), 0);
	assert_int_equal(ss_shared_create_after(&cfg, 3, NULL, a, &b, err, sizeof(err)), 0);
	assert_ptr_equal(ss_codec_priv(&b->codec)->pool, ss_codec_priv(&a->codec)->pool);
	assert_ptr_equal(b->sessions, a->sessions);
	assert_true(b->holder0 >= a->holder0 + a->count);
	assert_ptr_equal(a->newer, b);
	assert_ptr_equal(b->older, a);

	ss_fig_add(&ss_figures_row(&a->fig[1], &a->fig_layout, 0, 0)->bytes[0], 100);
	ss_fig_add(&ss_figures_row(&a->fig[1], &a->fig_layout, 0, 0)->opened, 2);
	ss_fig_add(&ss_figures_row(&a->fig[0], &a->fig_layout, 0, 0)->closed, 1);
	ss_fig_add(&ss_figures_row(&b->fig[2], &b->fig_layout, 0, 0)->bytes[0], 5);
	ss_shared_figures(b, 0, 0, &s);
	assert_int_equal(s.bytes[0], 105);
	assert_int_equal(s.opened - s.closed, 1); /* a's open one */
	ss_shared_carried(b, &s);
	assert_int_equal(s.bytes[0], 100);

	/* A third, then the middle one goes first. */
	assert_int_equal(ss_shared_create_after(&cfg, 1, NULL, b, &c, err, sizeof(err)), 0);
	ss_shared_free(b);
	assert_ptr_equal(a->newer, c);
	assert_ptr_equal(c->older, a);
	ss_shared_figures(c, 0, 0, &s);
	assert_int_equal(s.bytes[0], 105);
	ss_shared_free(a);
	assert_null(c->older);
	ss_shared_figures(c, 0, 0, &s);
	assert_int_equal(s.bytes[0], 105);
	assert_int_equal(s.opened, 2);
	assert_int_equal(s.closed, 1);

	/* Another kind of replay pool (SIP004's): records start afresh. */
	for (int i = 0; i < 10; i++)
		argv[i] = args[i];
	memset(&cfg2, 0, sizeof(cfg2));
	assert_int_equal(ss_config_parse(&cfg2, SS_PROG_SERVER, 10, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_RUN);
	assert_int_equal(ss_shared_create_after(&cfg2, 1, NULL, c, &d, err, sizeof(err)), 0);
	assert_ptr_not_equal(ss_codec_priv(&d->codec)->pool, ss_codec_priv(&c->codec)->pool);
	assert_null(d->sessions);
	ss_shared_figures(d, 0, 0, &s); /* the figures carry all the same */
	assert_int_equal(s.bytes[0], 105);
	ss_shared_free(d);
	ss_shared_free(c);
	ss_config_clear(&cfg2);
	ss_config_clear(&cfg);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static void test_hand_off(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(4242)};
	struct sockaddr_storage got;
	ss_shared_t *sh;
	socklen_t len;
	int fd;
	(void)state;

	server_config();
	assert_int_equal(ss_shared_create(&cfg, 2, NULL, &sh, err, sizeof(err)), 0);
	ss_shared_handoff_init(sh, 1, loop, wake_cb, NULL);
	/* Closed until its worker opens it. */
	assert_false(ss_shared_hand_off(sh, 1, 100, (struct sockaddr *)&peer, sizeof(peer)));
	ss_shared_handoff_open(sh, 1);
	for (int i = 0; i < SS_HANDOFF_SLOTS; i++)
		assert_true(
		    ss_shared_hand_off(sh, 1, 100 + i, (struct sockaddr *)&peer, sizeof(peer)));
	assert_false(ss_shared_hand_off(sh, 1, 1, (struct sockaddr *)&peer, sizeof(peer)));
	/* Counted as the receiver's the moment it is queued. */
	assert_int_equal(atomic_load(&sh->w[1].load), SS_HANDOFF_SLOTS);
	for (int i = 0; i < SS_HANDOFF_SLOTS; i++) {
		assert_true(ss_shared_handoff_pop(sh, 1, &fd, &got, &len));
		assert_int_equal(fd, 100 + i);
		assert_int_equal(len, sizeof(peer));
		assert_int_equal(((struct sockaddr_in *)&got)->sin_port, htons(4242));
	}
	assert_false(ss_shared_handoff_pop(sh, 1, &fd, &got, &len));
	ss_shared_handoff_close(sh, 1);
	assert_false(ss_shared_hand_off(sh, 1, 100, (struct sockaddr *)&peer, sizeof(peer)));
	ss_shared_free(sh);
	ev_loop_destroy(loop);
	ss_config_clear(&cfg);
}

#define PUSHERS 3
#define PUSHES 20000

typedef struct {
	ss_shared_t *sh;
	int base;
	int pushed;
} pusher_t;

static atomic_int pushers_done;

static void *pusher_main(void *arg)
{
	pusher_t *p = arg;
	struct sockaddr_in peer = {.sin_family = AF_INET};

	for (int i = 0; i < PUSHES; i++)
		if (ss_shared_hand_off(p->sh, 0, p->base + i, (struct sockaddr *)&peer,
				       sizeof(peer)))
			p->pushed++;
	atomic_fetch_add(&pushers_done, 1);
	return NULL;
}

/* Several workers hand connections to one at once while it takes them:
 * each comes out once, in the order its sender queued it. */
static void test_hand_off_threads(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	pthread_t t[PUSHERS];
	pusher_t p[PUSHERS];
	int next[PUSHERS], taken = 0, pushed = 0, fd;
	struct sockaddr_storage got;
	socklen_t len;
	ss_shared_t *sh;
	bool all;
	(void)state;

	server_config();
	assert_int_equal(ss_shared_create(&cfg, PUSHERS + 1, NULL, &sh, err, sizeof(err)), 0);
	ss_shared_handoff_init(sh, 0, loop, wake_cb, NULL);
	ss_shared_handoff_open(sh, 0);
	atomic_store(&pushers_done, 0);
	for (int i = 0; i < PUSHERS; i++) {
		p[i] = (pusher_t){.sh = sh, .base = (i + 1) * 1000000};
		next[i] = p[i].base;
		assert_int_equal(pthread_create(&t[i], NULL, pusher_main, &p[i]), 0);
	}
	do {
		/* Read before the queue is emptied: once every pusher has
		 * ended, this round takes the last of theirs. */
		all = atomic_load(&pushers_done) == PUSHERS;
		while (ss_shared_handoff_pop(sh, 0, &fd, &got, &len)) {
			int from = fd / 1000000 - 1;
			assert_true(from >= 0 && from < PUSHERS);
			assert_true(fd >= next[from]);
			next[from] = fd + 1;
			taken++;
		}
	} while (!all);
	for (int i = 0; i < PUSHERS; i++) {
		pthread_join(t[i], NULL);
		pushed += p[i].pushed;
	}
	assert_true(pushed > 0);
	assert_int_equal(taken, pushed);
	assert_int_equal(atomic_load(&sh->w[0].load), (unsigned)pushed);
	ss_shared_handoff_close(sh, 0);
	ss_shared_free(sh);
	ev_loop_destroy(loop);
	ss_config_clear(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create),           cmocka_unit_test(test_unvalidated),
	    cmocka_unit_test(test_lighter),          cmocka_unit_test(test_hand_off),
	    cmocka_unit_test(test_hand_off_threads), cmocka_unit_test(test_chain_carries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
