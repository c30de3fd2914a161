/* SPDX-License-Identifier: MIT */
/* The figures per port and per user (relay/figures.h): an ss-server
 * instance counts the bytes of an open connection as they are relayed, its
 * connections open and in all, and a refused client; the library reads
 * them (ss_instance_stats, ss_instance_figures). Blocks of several workers
 * sum; a user is found by the name pointer the codec reports; the stat
 * datagram for a manager (relay/report.c) says the sum of both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "relay/doors.h"
#include "relay/figures.h"
#include "relay/report.h"
#include "net/sock.h"
#include "relayrig.h"

typedef struct server_rig {
	rig_t r;
	int lis; /* the target's listener */
	uint16_t port;
	uint16_t listen; /* the server's port */
} server_rig_t;

static int setup(void **state)
{
	char port[8];
	const char *const kv[] = {"server",        "127.0.0.1", "server_port",
				  free_port(port), "method",    "none",
				  "mode",          "tcp_only",  NULL};
	server_rig_t *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->listen = (uint16_t)atoi(port);
	rig_start(&s->r, SS_PROG_SERVER, kv);
	s->lis = listen_loopback(0, 16, &s->port);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	server_rig_t *s = *state;

	close(s->lis);
	rig_stop(&s->r);
	free(s);
	return 0;
}

static ss_figures_t figures(const rig_t *r)
{
	ss_figures_t f;

	assert_int_equal(ss_instance_figures_count(r->inst), 1);
	assert_int_equal(ss_instance_figures(r->inst, 0, &f), 0);
	return f;
}

/* Bytes count while the connection is open, and once it closes the
 * connection counts as ended. */
static void test_open_connection_counts(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	uint8_t hdr[7];
	ss_figures_t f;

	f = figures(r);
	assert_int_equal(f.port, s->listen);
	assert_string_equal(f.user, "");
	assert_int_equal(f.conns_total, 0);

	rig_connect(r, &client, 0);
	peer_write(r, &client, hdr, addr_header(s->port, hdr));
	rig_accept(r, s->lis, &target);
	relay_one_way(r, &client, &target, 1000, 1);
	relay_one_way(r, &target, &client, 250000, 2);
	relay_one_way(r, &client, &target, 70001, 3);

	f = figures(r);
	assert_int_equal(f.bytes_up, 1000 + 70001);
	assert_int_equal(f.bytes_down, 250000);
	assert_int_equal(f.conns_active, 1);
	assert_int_equal(f.conns_total, 1);
	ss_stats_t st = rig_stats(r);
	assert_int_equal(st.bytes_up, 1000 + 70001);
	assert_int_equal(st.bytes_down, 250000);

	peer_shut(&client);
	peer_shut(&target);
	RIG_WAIT(r, peer_ended(&client) && peer_ended(&target));
	peer_free(&client);
	peer_free(&target);
	RIG_WAIT(r, rig_active(r) == 0);
	f = figures(r);
	assert_int_equal(f.conns_active, 0);
	assert_int_equal(f.conns_total, 1);
	assert_int_equal(f.bytes_up, 1000 + 70001);
	assert_int_equal(f.bytes_down, 250000);
	assert_int_equal(f.refused_auth, 0);
	assert_int_equal(ss_instance_figures(r->inst, 1, &f), -ENOENT);
}

/* A client whose request is malformed is refused and counted so; it never
 * counts as a connection of the port's. */
static void test_refused_counts(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client;
	static const uint8_t junk[] = {0x7f, 1, 2, 3, 4, 5, 6, 7, 8};
	ss_figures_t f;

	rig_connect(r, &client, 0);
	peer_write(r, &client, junk, sizeof(junk));
	rig_turns(r, 10);
	f = figures(r);
	assert_int_equal(f.refused_auth, 1);
	assert_int_equal(f.refused_replay, 0);
	assert_int_equal(f.conns_total, 0);
	peer_shut(&client);
	RIG_WAIT(r, rig_active(r) == 0);
	peer_free(&client);
}

/* Two workers' blocks sum; a close seen before its open never makes the
 * active figure wrap. */
static void test_blocks_sum(void **state)
{
	ss_config_t cfg = {.prog = SS_PROG_SERVER, .server_port = 8388, .n_servers = 2};
	ss_fig_layout_t l;
	ss_fig_block_t b[2];
	ss_fig_sum_t sum;
	(void)state;

	cfg.servers[1].port = 9000;
	ss_fig_layout_init(&l, &cfg);
	assert_int_equal(l.n_ports, 2);
	assert_int_equal(l.port[0], 8388);
	assert_int_equal(l.port[1], 9000);
	assert_int_equal(ss_fig_port_index(&l, 9000), 1);
	assert_int_equal(ss_fig_port_index(&l, 1), 0);
	assert_int_equal(ss_figures_alloc(b, 2, &l), 0);
	ss_fig_add(&ss_figures_row(&b[0], &l, 1, 0)->bytes[0], 5);
	ss_fig_add(&ss_figures_row(&b[1], &l, 1, 0)->bytes[0], 7);
	ss_fig_add(&ss_figures_row(&b[1], &l, 1, 0)->opened, 1);
	ss_fig_add(&ss_figures_row(&b[0], &l, 1, 0)->closed, 2);
	ss_fig_add(&b[1].port[1].refused[SS_REFUSED_BLOCKED], 3);
	ss_figures_sum(b, 2, &l, 1, 0, &sum);
	assert_int_equal(sum.bytes[0], 12);
	assert_int_equal(sum.opened, 1);
	assert_int_equal(sum.closed, 1);
	assert_int_equal(sum.refused[SS_REFUSED_BLOCKED], 3);
	ss_figures_sum(b, 2, &l, 0, 0, &sum);
	assert_int_equal(sum.bytes[0], 0);
	ss_figures_free(b, 2);
}

/* A reload: the figures of one layout read in, then folded into, the next
 * one's, by port number and user name; a removed user's rows stay in its
 * port's totals, a removed port's in the totals alone. */
static void test_fold_matches_names(void **state)
{
	ss_config_user_t ua[2] = {{.name = "ann"}, {.name = "bob"}};
	ss_config_user_t ub[2] = {{.name = "cy"}, {.name = "ann"}};
	ss_config_t ca = {
	    .prog = SS_PROG_SERVER, .server_port = 8388, .n_servers = 2, .users = ua, .n_users = 2};
	ss_config_t cb = {
	    .prog = SS_PROG_SERVER, .server_port = 8388, .n_servers = 1, .users = ub, .n_users = 2};
	ss_fig_layout_t la, lb;
	ss_fig_block_t a[1], b[1];
	ss_fig_row_t away = {0};
	ss_fig_sum_t s = {0};
	(void)state;

	ca.servers[1].port = 9000;
	ss_fig_layout_init(&la, &ca);
	ss_fig_layout_init(&lb, &cb);
	assert_int_equal(ss_figures_alloc(a, 1, &la), 0);
	assert_int_equal(ss_figures_alloc(b, 1, &lb), 0);
	ss_fig_add(&ss_figures_row(a, &la, 0, 1)->bytes[0], 10); /* ann, 8388 */
	ss_fig_add(&ss_figures_row(a, &la, 0, 1)->opened, 1);
	ss_fig_add(&ss_figures_row(a, &la, 0, 2)->bytes[1], 20); /* bob, 8388 */
	ss_fig_add(&ss_figures_row(a, &la, 1, 1)->bytes[0], 40); /* ann, 9000 */
	ss_fig_add(&a->port[0].refused[SS_REFUSED_REPLAY], 2);
	ss_fig_add(&a->port[1].refused[SS_REFUSED_REPLAY], 5);
	ss_fig_add(&ss_figures_row(b, &lb, 0, 2)->bytes[0], 1); /* ann, in b */

	/* Read through: ann is row 2 in b; cy has nothing of a's. */
	ss_figures_add(a, 1, &la, &lb, 0, 2, &s);
	assert_int_equal(s.bytes[0], 10);
	assert_int_equal(s.opened, 1);
	assert_int_equal(s.refused[SS_REFUSED_REPLAY], 2);
	memset(&s, 0, sizeof(s));
	ss_figures_add(a, 1, &la, &lb, 0, 1, &s);
	assert_int_equal(s.bytes[0] + s.bytes[1], 0);
	memset(&s, 0, sizeof(s));
	ss_figures_add(a, 1, &la, &lb, 0, SS_FIG_PORT_ALL, &s);
	assert_int_equal(s.bytes[0] + s.bytes[1], 30); /* bob's in the port's */

	/* Folded: the same, from b's carried block. */
	ss_figures_fold(b, &away, &lb, a, 1, &la);
	ss_figures_sum(b, 1, &lb, 0, 2, &s);
	assert_int_equal(s.bytes[0], 11);
	assert_int_equal(s.refused[SS_REFUSED_REPLAY], 2);
	ss_figures_sum(b, 1, &lb, 0, SS_FIG_PORT_ALL, &s);
	assert_int_equal(s.bytes[0] + s.bytes[1], 31);
	assert_int_equal(ss_fig_get(&b->gone[0].bytes[1]), 20);
	assert_int_equal(ss_fig_get(&away.bytes[0]), 40); /* port 9000 is gone */
	memset(&s, 0, sizeof(s));
	ss_figures_add_all(b, 1, &lb, &s);
	ss_figures_add_row(&s, &away);
	assert_int_equal(s.bytes[0] + s.bytes[1], 71); /* nothing lost */
	ss_figures_free(a, 1);
	ss_figures_free(b, 1);
}

/* The user is told by the pointer the codec reports: that of a user's
 * name in the configuration, never a copy. */
static void test_user_index(void **state)
{
	ss_config_user_t users[3] = {{.name = "ann"}, {.name = "bob"}, {.name = "cy"}};
	ss_config_t cfg = {
	    .prog = SS_PROG_SERVER, .server_port = 8388, .users = users, .n_users = 3};
	ss_fig_layout_t l;
	char copy[] = "bob";
	(void)state;

	ss_fig_layout_init(&l, &cfg);
	assert_int_equal(l.n_users, 3);
	assert_int_equal(ss_fig_user_index(&l, users[0].name), 1);
	assert_int_equal(ss_fig_user_index(&l, users[2].name), 3);
	assert_int_equal(ss_fig_user_index(&l, copy), 0);
	assert_int_equal(ss_fig_user_index(&l, users[1].name + 1), 0);
	assert_int_equal(ss_fig_user_index(&l, NULL), 0);
	assert_string_equal(ss_fig_user_name(&l, 2), "bob");
	assert_string_equal(ss_fig_user_name(&l, 0), "");
}

/* The manager's datagram: both ways summed, per port, libev's format. */
static void test_report_format(void **state)
{
	ss_config_t cfg = {.prog = SS_PROG_SERVER, .server_port = 8388, .n_servers = 2};
	ss_shared_t sh = {.cfg = &cfg, .count = 2};
	ss_fig_block_t b[3]; /* two workers', and the carried one */
	char buf[128];
	(void)state;

	cfg.servers[1].port = 9000;
	ss_fig_layout_init(&sh.fig_layout, &cfg);
	assert_int_equal(ss_figures_alloc(b, 3, &sh.fig_layout), 0);
	sh.fig = b;
	ss_fig_add(&ss_figures_row(&b[0], &sh.fig_layout, 0, 0)->bytes[0], 100);
	ss_fig_add(&ss_figures_row(&b[1], &sh.fig_layout, 0, 0)->bytes[1], 23);
	ss_fig_add(&ss_figures_row(&b[1], &sh.fig_layout, 1, 0)->bytes[1], 1);
	assert_int_equal(ss_report_format(&sh, buf, sizeof(buf)),
			 (int)strlen("stat: {\"8388\":123,\"9000\":1}"));
	assert_string_equal(buf, "stat: {\"8388\":123,\"9000\":1}");
	assert_int_equal(ss_report_format(&sh, buf, 12), -ENOSPC);
	/* What a reload carried, a removed user's included. */
	ss_fig_add(&b[2].gone[1].bytes[0], 1000);
	ss_report_format(&sh, buf, sizeof(buf));
	assert_string_equal(buf, "stat: {\"8388\":123,\"9000\":1001}");
	ss_figures_free(b, 3);
}

static void test_report_parse(void **state)
{
	struct sockaddr_storage to;
	socklen_t len;
	char err[256];
	(void)state;

	assert_int_equal(ss_report_parse("127.0.0.1:6001", &to, &len, err, sizeof(err)), 0);
	assert_int_equal(to.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&to)->sin_port), 6001);
	assert_int_equal(ss_report_parse("[::1]:6001", &to, &len, err, sizeof(err)), 0);
	assert_int_equal(to.ss_family, AF_INET6);
	assert_int_equal(ss_report_parse("/run/ss-manager.sock", &to, &len, err, sizeof(err)), 0);
	assert_int_equal(to.ss_family, AF_UNIX);
	assert_int_equal(ss_report_parse("", &to, &len, err, sizeof(err)), -EINVAL);
}

static struct sockaddr_storage sa_of(const char *host, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[128];

	assert_int_equal(
	    ss_sock_resolve_startup(host, port, false, false, &ss, &len, err, sizeof(err)), 0);
	return ss;
}

static bool door(const ss_doors_t *d, const char *host, uint16_t port)
{
	struct sockaddr_storage ss = sa_of(host, port);

	return ss_doors_match(d, (struct sockaddr *)&ss);
}

/* The manager and the metrics endpoint are no targets: at their address,
 * at the unspecified one, IPv4-mapped too; on a wildcard, at loopback. */
static void test_doors(void **state)
{
	ss_config_t cfg = {.prog = SS_PROG_SERVER};
	ss_doors_t d;
	char err[256];
	(void)state;

	strcpy(cfg.manager_address, "127.0.0.1:6001");
	strcpy(cfg.metrics, "0.0.0.0:9100");
	assert_int_equal(ss_doors_init(&d, &cfg, err, sizeof(err)), 0);
	assert_int_equal(d.n, 2);
	assert_true(door(&d, "127.0.0.1", 6001));
	assert_true(door(&d, "::ffff:127.0.0.1", 6001));
	assert_true(door(&d, "0.0.0.0", 6001));
	assert_true(door(&d, "::", 6001));
	assert_false(door(&d, "127.0.0.1", 6002));
	assert_false(door(&d, "192.0.2.1", 6001));
	assert_true(door(&d, "127.0.0.1", 9100));
	assert_true(door(&d, "127.3.2.1", 9100));
	assert_true(door(&d, "::1", 9100));
	assert_false(door(&d, "192.0.2.1", 9100));
	assert_false(door(&d, "127.0.0.1", 9101));
	ss_doors_free(&d);

	/* A Unix manager is no address a client can name; a client has none. */
	strcpy(cfg.manager_address, "/run/ss-manager.sock");
	cfg.metrics[0] = '\0';
	assert_int_equal(ss_doors_init(&d, &cfg, err, sizeof(err)), 0);
	assert_int_equal(d.n, 0);
	assert_false(door(&d, "127.0.0.1", 6001));
	ss_doors_free(&d);
	strcpy(cfg.metrics, "x:y");
	assert_int_equal(ss_doors_init(&d, &cfg, err, sizeof(err)), -EINVAL);
	ss_doors_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_connection_counts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_counts, setup, teardown),
	    cmocka_unit_test(test_blocks_sum),
	    cmocka_unit_test(test_fold_matches_names),
	    cmocka_unit_test(test_user_index),
	    cmocka_unit_test(test_report_format),
	    cmocka_unit_test(test_report_parse),
	    cmocka_unit_test(test_doors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
