/* SPDX-License-Identifier: MIT */
/* ss-local's front ends over a socketpair handed to ss_conn_accept: SOCKS5
 * and HTTP requests read a byte at a time, what the server gets (the
 * address header, then the payload), a refused server's reply, a client
 * gone while the connect is under way; and whole streams through ss-local
 * and ss-server with real methods on one loop, half-closed in both
 * orders, with a client that reads slowly, and a byte at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "relayrig.h"

/* Where the clients ask to go when the server is the test's own (method
 * none): it only reads the address header. */
#define TARGET_PORT 0x1234
static const uint8_t target_hdr[7] = {1, 127, 0, 0, 1, 0x12, 0x34};
static const uint8_t socks5_request[10] = {5, 1, 0, 1, 127, 0, 0, 1, 0x12, 0x34};

typedef struct local_rig {
	rig_t local;
	rig_t server; /* the chain's ss-server; unused with the test's own server */
	bool chain;
	int lis; /* the test's server (method none), or the chain's target */
	uint16_t port;
	int fds; /* descriptors open before the connection */
} local_rig_t;

/* ss-local toward the test's own server, method none. */
static int setup_none(void **state)
{
	char port[8], local_port[8];
	local_rig_t *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->lis = listen_loopback(0, 16, &s->port);
	snprintf(port, sizeof(port), "%u", s->port);
	const char *const kv[] = {
	    "server", "127.0.0.1", "server_port", port,       "local_port", free_port(local_port),
	    "method", "none",      "mode",        "tcp_only", NULL};
	rig_start(&s->local, SS_PROG_LOCAL, kv);
	s->fds = open_fds();
	*state = s;
	return 0;
}

/* ss-local and ss-server on one loop, method (with key), toward the test's
 * target. */
static local_rig_t *setup_chain(const char *method, const char *key)
{
	char port[8], local_port[8];
	local_rig_t *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->chain = true;
	free_port(port);
	const char *const skv[] = {"server", "127.0.0.1", "server_port", port,
				   "method", method,      "password",    key,
				   "mode",   "tcp_only",  NULL};
	rig_start(&s->server, SS_PROG_SERVER, skv);
	const char *const lkv[] = {
	    "server", "127.0.0.1", "server_port", port, "local_port", free_port(local_port),
	    "method", method,      "password",    key,  "mode",       "tcp_only",
	    NULL};
	/* On the server's loop: turning it through either rig is the same. */
	rig_start_on(&s->local, s->server.loop, SS_PROG_LOCAL, lkv);
	s->lis = listen_loopback(0, 16, &s->port);
	s->fds = open_fds();
	return s;
}

static int setup_aes(void **state)
{
	*state = setup_chain("aes-256-gcm", "a test key");
	return 0;
}

static int setup_chacha(void **state)
{
	*state = setup_chain("chacha20-ietf-poly1305", "another test key");
	return 0;
}

static int setup_2022(void **state)
{
	/* base64 of the 32 bytes "0123456789abcdef0123456789abcdef" */
	*state =
	    setup_chain("2022-blake3-aes-256-gcm", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=");
	return 0;
}

static int teardown(void **state)
{
	local_rig_t *s = *state;

	close(s->lis);
	rig_stop(&s->local);
	if (s->chain)
		rig_stop(&s->server);
	free(s);
	return 0;
}

static bool all_done(local_rig_t *s)
{
	return rig_active(&s->local) == 0 && (!s->chain || rig_active(&s->server) == 0);
}

/* Every connection is gone: slots back, descriptors closed (the test has
 * closed its own ends). */
static void assert_freed(local_rig_t *s)
{
	rig_t *r = &s->local;

	RIG_WAIT(r, all_done(s));
	assert_int_equal(open_fds(), s->fds);
}

/* Checks that p gets exactly the n bytes at want and nothing more, and
 * consumes them (what it had read before is dropped first). */
static void expect(rig_t *r, peer_t *p, const void *want, size_t n)
{
	p->len = 0;
	RIG_WAIT(r, peer_has(p, n));
	rig_turns(r, 3);
	peer_read(p);
	assert_int_equal(p->len, n);
	assert_memory_equal(p->rx, want, n);
	p->len = 0;
}

/* SOCKS5 to the chain's target: the request, the reply, and the target's
 * end accepted. */
static void socks5_open(local_rig_t *s, peer_t *client, peer_t *target, int sndbuf)
{
	rig_t *r = &s->local;
	static const uint8_t greeting[3] = {5, 1, 0}, chosen[2] = {5, 0};
	uint8_t req[10];

	memcpy(req, socks5_request, sizeof(req));
	req[8] = (uint8_t)(s->port >> 8);
	req[9] = (uint8_t)s->port;
	rig_connect(r, client, sndbuf);
	peer_write(r, client, greeting, sizeof(greeting));
	expect(r, client, chosen, sizeof(chosen));
	peer_write(r, client, req, sizeof(req));
	RIG_WAIT(r, peer_has(client, 10));
	assert_int_equal(client->len, 10);
	assert_int_equal(client->rx[0], 5);
	assert_int_equal(client->rx[1], 0);
	client->len = 0;
	rig_accept(r, s->lis, target);
}

/* ---- Front ends, toward the test's own server (method none) ---- */

/* The greeting and the request a byte at a time; the reply comes once the
 * server is reached, and the server gets the address header with the
 * first payload behind it. */
static void test_socks5_one_byte(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	static const uint8_t greeting[3] = {5, 1, 0}, chosen[2] = {5, 0};
	peer_t client, server;
	uint8_t want[7 + 4];

	rig_connect(r, &client, 0);
	for (size_t i = 0; i < sizeof(greeting); i++) {
		assert_false(peer_read(&client));
		peer_write(r, &client, greeting + i, 1);
		rig_turns(r, 2);
	}
	expect(r, &client, chosen, sizeof(chosen));
	for (size_t i = 0; i < sizeof(socks5_request); i++) {
		assert_false(peer_read(&client));
		peer_write(r, &client, socks5_request + i, 1);
		rig_turns(r, 2);
	}
	rig_accept(r, s->lis, &server);
	RIG_WAIT(r, peer_has(&client, 10));
	assert_int_equal(client.len, 10);
	assert_int_equal(client.rx[0], 5);
	assert_int_equal(client.rx[1], 0); /* succeeded */
	assert_int_equal(client.rx[3], 1); /* an IPv4 address follows */
	client.len = 0;

	peer_write(r, &client, "ping", 4);
	memcpy(want, target_hdr, 7);
	memcpy(want + 7, "ping", 4);
	expect(r, &server, want, sizeof(want));
	assert_false(peer_read(&client));
	for (int i = 0; i < 5; i++) {
		peer_write(r, &server, &"pong!"[i], 1);
		RIG_WAIT(r, peer_has(&client, (size_t)i + 1));
	}
	assert_memory_equal(client.rx, "pong!", 5);
	/* The client half-closes; the server's answer still comes. */
	peer_shut(&client);
	server.len = 0;
	RIG_WAIT(r, peer_ended(&server));
	assert_true(server.eof);
	assert_int_equal(server.len, 0);
	relay_one_way(r, &server, &client, 100000, 1);
	peer_close(&server);
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	peer_free(&client);
	peer_free(&server);
	assert_freed(s);
	assert_int_equal(rig_stats(r).bytes_up, 4);
	assert_int_equal(rig_stats(r).bytes_down, 5 + 100000);
}

/* Greeting, request and payload in one write: they ride together. */
static void test_socks5_early_payload(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, server;
	uint8_t first[3 + 10 + 5], want[7 + 5];

	memcpy(first, (const uint8_t[]){5, 1, 0}, 3);
	memcpy(first + 3, socks5_request, 10);
	memcpy(first + 13, "early", 5);
	rig_connect(r, &client, 0);
	peer_write(r, &client, first, sizeof(first));
	rig_accept(r, s->lis, &server);
	memcpy(want, target_hdr, 7);
	memcpy(want + 7, "early", 5);
	expect(r, &server, want, sizeof(want));
	RIG_WAIT(r, peer_has(&client, 12));
	assert_int_equal(client.len, 12);
	assert_memory_equal(client.rx, ((const uint8_t[]){5, 0, 5, 0}), 4);
	/* The server ends first this time. */
	peer_write(r, &server, "bye", 3);
	peer_shut(&server);
	client.len = 0;
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, 3);
	relay_one_way(r, &client, &server, 5000, 2);
	peer_close(&client);
	RIG_WAIT(r, peer_ended(&server));
	assert_true(server.eof);
	peer_free(&client);
	peer_free(&server);
	assert_freed(s);
}

/* The server refuses the connect: the client hears "connection refused"
 * (SOCKS5 reply 5), then the end; the connection goes once it closes. */
static void test_socks5_server_refused(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(s->port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	/* The server's port, the one the instance knows, stops listening
	 * but stays bound (so that no connect can meet itself there). */
	close(s->lis);
	s->lis = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lis >= 0);
	assert_int_equal(bind(s->lis, (struct sockaddr *)&a, sizeof(a)), 0);

	rig_connect(r, &client, 0);
	peer_write(r, &client, ((const uint8_t[]){5, 1, 0}), 3);
	peer_write(r, &client, socks5_request, sizeof(socks5_request));
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_true(client.len >= 4);
	assert_memory_equal(client.rx, ((const uint8_t[]){5, 0, 5, 5}), 4);
	assert_int_equal(rig_active(r), 1);
	peer_free(&client);
	assert_freed(s);
}

/* The client closes while the connect to the server is under way (the
 * server's accept queue is full, its SYN waits for a retry): the server
 * still gets the address header and the payload, then the FIN. */
static void test_socks5_client_gone_while_connecting(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, server, first;
	uint8_t msg[3 + 10 + 3], want[7 + 3];
	int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(s->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	/* The listener holds one connection in its queue at most. */
	assert_int_equal(listen(s->lis, 0), 0);
	assert_true(filler >= 0);
	assert_int_equal(connect(filler, (struct sockaddr *)&to, sizeof(to)), 0);
	memcpy(msg, (const uint8_t[]){5, 1, 0}, 3);
	memcpy(msg + 3, socks5_request, 10);
	memcpy(msg + 13, "abc", 3);
	rig_connect(r, &client, 0);
	peer_write(r, &client, msg, sizeof(msg));
	rig_turns(r, 20);
	/* The method is chosen; the reply waits for the server. */
	assert_true(peer_read(&client));
	assert_int_equal(client.len, 2);
	peer_close(&client);
	rig_turns(r, 20);
	assert_int_equal(rig_active(r), 1);

	rig_accept(r, s->lis, &first);
	peer_free(&first);
	close(filler);
	rig_accept(r, s->lis, &server);
	RIG_WAIT(r, peer_ended(&server));
	assert_true(server.eof);
	memcpy(want, target_hdr, 7);
	memcpy(want + 7, "abc", 3);
	assert_int_equal(server.len, sizeof(want));
	assert_memory_equal(server.rx, want, sizeof(want));
	peer_free(&server);
	peer_free(&client);
	assert_freed(s);
}

/* An HTTP CONNECT a byte at a time: 200 once the server is reached, then
 * a tunnel. */
static void test_http_connect(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	static const char req[] = "CONNECT 127.0.0.1:4660 HTTP/1.1\r\nHost: 127.0.0.1:4660\r\n\r\n";
	peer_t client, server;
	uint8_t want[7 + 6];

	rig_connect(r, &client, 0);
	for (size_t i = 0; i < sizeof(req) - 1; i++) {
		peer_write(r, &client, req + i, 1);
		rig_turns(r, 1);
	}
	rig_accept(r, s->lis, &server);
	RIG_WAIT(r, peer_saw(&client, "\r\n\r\n"));
	rig_turns(r, 3);
	assert_false(peer_read(&client));
	assert_true(client.len >= 12);
	assert_memory_equal(client.rx + client.len - 4, "\r\n\r\n", 4);
	assert_memory_equal(client.rx, "HTTP/1.1 200", 12);
	client.len = 0;
	peer_write(r, &client, "tunnel", 6);
	memcpy(want, target_hdr, 7);
	memcpy(want + 7, "tunnel", 6);
	expect(r, &server, want, sizeof(want));
	relay_one_way(r, &server, &client, 30000, 3);
	peer_shut(&server);
	client.len = 0;
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, 0);
	peer_close(&client);
	RIG_WAIT(r, peer_ended(&server));
	peer_free(&client);
	peer_free(&server);
	assert_freed(s);
}

/* A plain HTTP request is forwarded to its origin with its target made a
 * path, and the answer comes back as it was sent. */
static void test_http_forward(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	static const char req[] = "GET http://127.0.0.1:4660/x?y HTTP/1.1\r\n"
				  "Host: 127.0.0.1:4660\r\n\r\n";
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	peer_t client, server;

	rig_connect(r, &client, 0);
	peer_write(r, &client, req, sizeof(req) - 1);
	rig_accept(r, s->lis, &server);
	RIG_WAIT(r, peer_saw(&server, "\r\n\r\n"));
	rig_turns(r, 3);
	assert_false(peer_read(&server));
	assert_memory_equal(server.rx + server.len - 4, "\r\n\r\n", 4);
	assert_memory_equal(server.rx, target_hdr, 7);
	assert_memory_equal(server.rx + 7, "GET /x?y HTTP/1.1\r\n", 19);
	assert_non_null(memmem(server.rx, server.len, "\r\nHost: 127.0.0.1:4660\r\n", 24));
	peer_write(r, &server, answer, sizeof(answer) - 1);
	expect(r, &client, answer, sizeof(answer) - 1);
	peer_close(&client);
	RIG_WAIT(r, peer_ended(&server));
	peer_free(&client);
	peer_free(&server);
	assert_freed(s);
}

/* ---- Whole streams through ss-local and ss-server ---- */

static void test_chain_client_shuts_first(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, target;

	socks5_open(s, &client, &target, 0);
	relay_one_way(r, &client, &target, 1, 1);
	relay_one_way(r, &target, &client, 1, 2);
	relay_one_way(r, &client, &target, 400000, 3);
	relay_one_way(r, &target, &client, 300000, 4);
	peer_shut(&client);
	target.len = 0;
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.len, 0);
	relay_one_way(r, &target, &client, 200000, 5);
	peer_shut(&target);
	client.len = 0;
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, 0);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	assert_int_equal(rig_stats(&s->local).bytes_up, 400001);
	assert_int_equal(rig_stats(&s->server).bytes_up, 400001);
	assert_int_equal(rig_stats(&s->local).bytes_down, 500001);
	assert_int_equal(rig_stats(&s->server).bytes_down, 500001);
}

static void test_chain_target_shuts_first(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, target;

	socks5_open(s, &client, &target, 0);
	relay_one_way(r, &target, &client, 250000, 6);
	peer_shut(&target);
	client.len = 0;
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	relay_one_way(r, &client, &target, 350000, 7);
	assert_false(target.eof);
	peer_close(&client);
	target.len = 0;
	RIG_WAIT(r, peer_ended(&target));
	assert_true(target.eof);
	assert_int_equal(target.len, 0);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
}

/* Each byte its own read, so its own chunk, both ways. */
static void test_chain_one_byte(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, target;
	const size_t n = 200;
	uint8_t *up = pattern(n, 8), *down = pattern(n, 9);

	socks5_open(s, &client, &target, 0);
	for (size_t i = 0; i < n; i++) {
		peer_write(r, &client, up + i, 1);
		RIG_WAIT(r, peer_has(&target, i + 1));
		peer_write(r, &target, down + i, 1);
		RIG_WAIT(r, peer_has(&client, i + 1));
	}
	assert_int_equal(target.len, n);
	assert_memory_equal(target.rx, up, n);
	assert_int_equal(client.len, n);
	assert_memory_equal(client.rx, down, n);
	peer_close(&target);
	RIG_WAIT(r, peer_ended(&client));
	assert_int_equal(client.len, n);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
	free(up);
	free(down);
}

/* A client that reads slowly: ss-local's writes toward it block (a small
 * send buffer), the chain behind it stops, and every byte arrives in order
 * once the client reads. */
static void test_chain_blocked_sink(void **state)
{
	local_rig_t *s = *state;
	rig_t *r = &s->local;
	peer_t client, target;
	const size_t n = 2u << 20;

	socks5_open(s, &client, &target, 4096);
	sock_sndbuf(target.fd, 4096);
	push_to_slow_reader(r, &target, &client, n, 10);
	peer_close(&target);
	RIG_WAIT(r, peer_ended(&client));
	assert_true(client.eof);
	assert_int_equal(client.len, n);
	peer_free(&client);
	peer_free(&target);
	assert_freed(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_socks5_one_byte, setup_none, teardown),
	    cmocka_unit_test_setup_teardown(test_socks5_early_payload, setup_none, teardown),
	    cmocka_unit_test_setup_teardown(test_socks5_server_refused, setup_none, teardown),
	    cmocka_unit_test_setup_teardown(test_socks5_client_gone_while_connecting, setup_none,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_http_connect, setup_none, teardown),
	    cmocka_unit_test_setup_teardown(test_http_forward, setup_none, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_client_shuts_first, setup_aes, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_target_shuts_first, setup_aes, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_one_byte, setup_aes, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_blocked_sink, setup_aes, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_client_shuts_first, setup_chacha, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_target_shuts_first, setup_2022, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_blocked_sink, setup_2022, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
