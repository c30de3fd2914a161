/* SPDX-License-Identifier: MIT */
/* A connection's life in ss-server, seen from its two peers: the client on
 * a socketpair handed to ss_conn_accept, the target on a loopback listener,
 * method none. Bytes arrive whole and in order however they are split (one
 * byte per read, or a sink that blocks), a half-close in either order
 * carries its FIN across while the other way goes on, and every ending
 * (both sides done, a refused target, a client gone while the connect is
 * under way) frees the slot and closes both descriptors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "relayrig.h"

typedef struct server_rig {
	rig_t r;
	int lis; /* the target's listener */
	uint16_t port;
	int fds; /* descriptors open before the connection */
} server_rig_t;

static int setup(void **state)
{
	char port[8];
	const char *const kv[] = {"server",        "127.0.0.1", "server_port",
				  free_port(port), "method",    "none",
				  "mode",          "tcp_only",  NULL};
	server_rig_t *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	rig_start(&s->r, SS_PROG_SERVER, kv);
	s->lis = listen_loopback(0, 16, &s->port);
	s->fds = open_fds();
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

/* The connection is gone: its slot is back and both its descriptors are
 * closed (the test has closed its own ends). */
static void assert_freed(server_rig_t *s)
{
	rig_t *r = &s->r;

	RIG_WAIT(r, rig_active(r) == 0);
	assert_int_equal(open_fds(), s->fds);
}

/* A client connected through the relay to a target: the header sent, and
 * the target's end accepted. */
static void open_conn(server_rig_t *s, peer_t *client, peer_t *target, int sndbuf)
{
	uint8_t hdr[7];

	rig_connect(&s->r, client, sndbuf);
	peer_write(&s->r, client, hdr, addr_header(s->port, hdr));
	rig_accept(&s->r, s->lis, target);
}

/* The client half-closes first: the target gets every byte and the FIN,
 * while its own answer (sent after the FIN) still reaches the client; its
 * close then ends the connection. */
static void test_half_close_client_first(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;

	open_conn(s, &client, &target, 0);
	relay_one_way(r, &client, &target, 1000, 1);
	relay_one_way(r, &target, &client, 2000, 2);
	relay_one_way(r, &client, &target, 300000, 3);
	peer_shut(&client);
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.err, 0);
	assert_int_equal(target.len, 300000);
	assert_int_equal(rig_active(r), 1);
	assert_false(client.eof);

	relay_one_way(r, &target, &client, 500000, 4);
	peer_shut(&target);
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, 500000);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	ss_stats_t st = rig_stats(r);
	assert_int_equal(st.accepted, 1);
	assert_int_equal(st.bytes_up, 1000 + 300000);
	assert_int_equal(st.bytes_down, 2000 + 500000);
}

/* The target half-closes first: the client gets every byte and the FIN,
 * and what it sends afterwards still reaches the target. */
static void test_half_close_target_first(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;

	open_conn(s, &client, &target, 0);
	relay_one_way(r, &target, &client, 70000, 5);
	peer_shut(&target);
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, 70000);
	assert_int_equal(rig_active(r), 1);

	relay_one_way(r, &client, &target, 90000, 6);
	assert_false(target.eof);
	peer_shut(&client);
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.len, 90000);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	assert_int_equal(rig_stats(r).bytes_up, 90000);
	assert_int_equal(rig_stats(r).bytes_down, 70000);
}

/* Both ways at once, and the closes crossing: each side shuts after its
 * last byte without waiting for the other. */
static void test_half_close_both_at_once(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	uint8_t *up = pattern(40000, 7), *down = pattern(60000, 8);

	open_conn(s, &client, &target, 0);
	peer_write(r, &client, up, 40000);
	peer_write(r, &target, down, 60000);
	peer_shut(&client);
	peer_shut(&target);
	RIG_WAIT(r, peer_ended(&client) && peer_ended(&target));
	assert_true(client.eof && target.eof);
	assert_int_equal(target.len, 40000);
	assert_memory_equal(target.rx, up, 40000);
	assert_int_equal(client.len, 60000);
	assert_memory_equal(client.rx, down, 60000);
	/* Both FINs crossed: the relay is done without either closing. */
	RIG_WAIT(r, rig_active(r) == 0);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	free(up);
	free(down);
}

/* The header and the payload one byte at a time, each byte its own read
 * for the relay; then the answer the same way. */
static void test_one_byte_reads(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	uint8_t hdr[7];
	const size_t n = 300;
	uint8_t *up = pattern(n, 9), *down = pattern(n, 10);

	rig_connect(r, &client, 0);
	addr_header(s->port, hdr);
	for (size_t i = 0; i < sizeof(hdr); i++) {
		peer_write(r, &client, hdr + i, 1);
		rig_turns(r, 2);
		assert_int_equal(rig_active(r), 1);
	}
	rig_accept(r, s->lis, &target);
	for (size_t i = 0; i < n; i++) {
		peer_write(r, &client, up + i, 1);
		RIG_WAIT(r, peer_has(&target, i + 1));
		assert_int_equal(target.len, i + 1);
	}
	assert_memory_equal(target.rx, up, n);
	for (size_t i = 0; i < n; i++) {
		peer_write(r, &target, down + i, 1);
		RIG_WAIT(r, peer_has(&client, i + 1));
		assert_int_equal(client.len, i + 1);
	}
	assert_memory_equal(client.rx, down, n);
	peer_close(&client);
	RIG_WAIT(r, peer_ended(&target));
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	assert_int_equal(rig_stats(r).bytes_up, n);
	assert_int_equal(rig_stats(r).bytes_down, n);
	free(up);
	free(down);
}

/* A client that reads slowly: the relay's writes toward it block (a small
 * send buffer), it stops reading the target (whose writes then block too),
 * and every byte still arrives once the client reads, in order. */
static void test_blocked_sink(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	const size_t n = 1u << 20;

	open_conn(s, &client, &target, 4096);
	sock_rcvbuf(target.fd, 4096);
	sock_sndbuf(target.fd, 4096);
	push_to_slow_reader(r, &target, &client, n, 11);
	peer_shut(&target);
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, n);
	peer_free(&client);
	RIG_WAIT(r, peer_ended(&target));
	peer_free(&target);
	assert_freed(s);
	assert_int_equal(rig_stats(r).bytes_down, n);
}

/* The target refuses the connect: the client's connection is closed, and
 * nothing of it stays. */
static void test_target_refused(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client;
	uint8_t hdr[7];
	uint16_t port;
	int bound = refusing_port(&port);

	rig_connect(r, &client, 0);
	peer_write(r, &client, hdr, addr_header(port, hdr));
	peer_write(r, &client, "early", 5);
	RIG_WAIT(r, peer_ended(&client));
	assert_int_equal(client.len, 0);
	peer_free(&client);
	close(bound);
	assert_freed(s);
	assert_int_equal(rig_stats(r).accepted, 1);
}

/* The client sends its request and closes before the relay has even run:
 * the connect goes on, and the target gets the payload and the FIN. */
static void test_client_gone_before_connect(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	uint8_t hdr[7];

	rig_connect(r, &client, 0);
	assert_int_equal(send(client.fd, hdr, addr_header(s->port, hdr), 0), 7);
	assert_int_equal(send(client.fd, "last words", 10, 0), 10);
	peer_close(&client);
	rig_accept(r, s->lis, &target);
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.len, 10);
	assert_memory_equal(target.rx, "last words", 10);
	peer_free(&target);
	peer_free(&client);
	assert_freed(s);
}

/* The client closes while the outbound connect is still under way (the
 * target's accept queue is full, so its SYN waits for a retry): once the
 * connect completes, the target gets what the client sent and the FIN. */
static void test_client_gone_while_connecting(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client, target;
	uint8_t hdr[7];
	uint16_t port;
	int lis = listen_loopback(0, 0, &port);
	int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	/* The one connection the queue holds. */
	assert_true(filler >= 0);
	assert_int_equal(connect(filler, (struct sockaddr *)&to, sizeof(to)), 0);
	int base = open_fds();
	rig_connect(r, &client, 0);
	peer_write(r, &client, hdr, addr_header(port, hdr));
	peer_write(r, &client, "queued", 6);
	rig_turns(r, 20);
	/* Still connecting: nothing came back, nothing ended. */
	assert_false(peer_read(&client));
	assert_int_equal(rig_active(r), 1);
	peer_close(&client);
	rig_turns(r, 20);
	assert_int_equal(rig_active(r), 1);

	/* Room in the queue: the retried SYN gets through. */
	peer_t first;
	rig_accept(r, lis, &first);
	peer_free(&first);
	close(filler);
	rig_accept(r, lis, &target);
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.len, 6);
	assert_memory_equal(target.rx, "queued", 6);
	peer_free(&target);
	peer_free(&client);
	RIG_WAIT(r, rig_active(r) == 0);
	assert_int_equal(open_fds(), base - 1);
	close(lis);
	assert_freed(s);
}

/* A request that is no address header is refused: the connection reads
 * on until the client closes, sends nothing back, and ends with it. */
static void test_bad_header(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	peer_t client;
	static const uint8_t junk[] = {0x7f, 1, 2, 3, 4, 5, 6, 7, 8};

	rig_connect(r, &client, 0);
	peer_write(r, &client, junk, sizeof(junk));
	rig_turns(r, 10);
	peer_write(r, &client, junk, sizeof(junk));
	rig_turns(r, 10);
	assert_false(peer_read(&client));
	assert_int_equal(rig_active(r), 1);
	peer_shut(&client);
	RIG_WAIT(r, rig_active(r) == 0);
	RIG_WAIT(r, peer_ended(&client));
	assert_int_equal(client.len, 0);
	assert_int_equal(client.err, 0);
	peer_free(&client);
	assert_freed(s);
}

/* Many connections one after another, some of them at once: the slots
 * come back each time. */
static void test_many(void **state)
{
	server_rig_t *s = *state;
	rig_t *r = &s->r;
	enum { N = 20 };
	peer_t client[N], target[N];

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			open_conn(s, &client[i], &target[i], 0);
		assert_int_equal(rig_active(r), N);
		for (int i = 0; i < N; i++) {
			relay_one_way(r, &client[i], &target[i], 100 + (size_t)i, (uint8_t)i);
			relay_one_way(r, &target[i], &client[i], 200 + (size_t)i, (uint8_t)i);
			if (i % 2) {
				peer_close(&client[i]);
				RIG_WAIT(r, peer_ended(&target[i]));
			} else {
				peer_close(&target[i]);
				RIG_WAIT(r, peer_ended(&client[i]));
			}
		}
		for (int i = 0; i < N; i++) {
			peer_free(&client[i]);
			peer_free(&target[i]);
		}
		assert_freed(s);
	}
	assert_int_equal(rig_stats(r).accepted, 3 * N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_half_close_client_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_close_target_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_close_both_at_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_byte_reads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blocked_sink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_target_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_gone_before_connect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_gone_while_connecting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_header, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
