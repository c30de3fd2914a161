/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_RELAYRIG_H
#define SS_TESTS_RELAYRIG_H

/* A relay under test on a private libev loop, driven from the same thread:
 * the test hands it one end of a socketpair as an accepted connection
 * (ss_conn_accept), plays the client on the other end and the target (or
 * the server) on loopback listeners of its own, and turns the loop between
 * its own reads and writes. Only the instance's public API and
 * ss_conn_accept are used, so that the tests see what a peer sees: bytes,
 * FINs, closes, and the counters. Include after <cmocka.h>. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "relay/conn.h"
#include "shadowsocks.h"

/* How long a wait may take before the test fails: everything happens on
 * loopback, so only a stuck relay comes near it. */
#define RIG_WAIT_SECS 10.0

typedef struct rig {
	struct ev_loop *loop;
	ss_config_t *cfg;
	ss_instance_t *inst;
	bool own_loop;
	ev_timer tick; /* bounds each turn of the loop (own_loop) */
} rig_t;

/* One end of a connection the test holds, with what it has read. */
typedef struct peer {
	int fd;
	uint8_t *rx;
	size_t len, cap;
	bool eof;
	int err; /* a read error (ECONNRESET, ...), 0 if none */
} peer_t;

static void rig_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* An instance of prog, configured by kv (key, value pairs as ss_config_set
 * takes them, then NULL), on loop, or on a loop of its own (loop NULL). */
static inline void rig_start_on(rig_t *r, struct ev_loop *loop, ss_prog_t prog,
				const char *const *kv)
{
	char err[256] = "";

	memset(r, 0, sizeof(*r));
	r->own_loop = !loop;
	r->loop = loop ? loop : ev_loop_new(EVFLAG_AUTO);
	assert_non_null(r->loop);
	assert_int_equal(ss_config_new(prog, &r->cfg), 0);
	for (; kv[0]; kv += 2)
		if (ss_config_set(r->cfg, kv[0], kv[1], err, sizeof(err)) != 0)
			fail_msg("%s=%s: %s", kv[0], kv[1], err);
	if (ss_config_validate(r->cfg, err, sizeof(err)) != 0)
		fail_msg("validate: %s", err);
	if (ss_instance_create(r->cfg, r->loop, &r->inst, err, sizeof(err)) != 0)
		fail_msg("instance: %s", err);
	if (r->own_loop) {
		ev_timer_init(&r->tick, rig_tick_cb, 0.002, 0.002);
		ev_timer_start(r->loop, &r->tick);
	}
}

static inline void rig_start(rig_t *r, ss_prog_t prog, const char *const *kv)
{
	rig_start_on(r, NULL, prog, kv);
}

/* Destroys the instance, and its loop if it is its own. */
static inline void rig_stop(rig_t *r)
{
	ss_instance_destroy(r->inst);
	ss_config_free(r->cfg);
	if (r->own_loop) {
		ev_timer_stop(r->loop, &r->tick);
		ev_loop_destroy(r->loop);
	}
}

/* One turn of the loop; it sleeps at most a tick. */
static inline void rig_turn(rig_t *r)
{
	ev_run(r->loop, EVRUN_ONCE);
}

/* Turns the loop until expr holds; fails the test after RIG_WAIT_SECS. */
#define RIG_WAIT(r, expr)                                                                          \
	do {                                                                                       \
		ev_tstamp end_ = ev_time() + RIG_WAIT_SECS;                                        \
		while (!(expr)) {                                                                  \
			if (ev_time() > end_)                                                      \
				fail_msg("timed out waiting for %s", #expr);                       \
			rig_turn(r);                                                               \
		}                                                                                  \
	} while (0)

static inline void rig_turns(rig_t *r, int n)
{
	while (n-- > 0)
		rig_turn(r);
}

static inline ss_stats_t rig_stats(const rig_t *r)
{
	ss_stats_t st;

	ss_instance_stats(r->inst, &st);
	return st;
}

static inline uint64_t rig_active(const rig_t *r)
{
	return rig_stats(r).active;
}

/* The descriptors this process has open. */
static inline int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

static inline void peer_init(peer_t *p, int fd)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd;
}

static inline void peer_close(peer_t *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static inline void peer_free(peer_t *p)
{
	peer_close(p);
	free(p->rx);
	p->rx = NULL;
	p->len = p->cap = 0;
}

/* Reads what is there, at most max bytes per read (0: as much as fits);
 * true when something new came (bytes, EOF or an error). */
static inline bool peer_read_max(peer_t *p, size_t max)
{
	bool news = false;

	while (!p->eof && !p->err) {
		if (p->cap - p->len < 65536) {
			p->cap = p->cap ? 2 * p->cap : 65536;
			p->rx = realloc(p->rx, p->cap);
			assert_non_null(p->rx);
		}
		size_t want = p->cap - p->len;
		if (max && want > max)
			want = max;
		ssize_t n = recv(p->fd, p->rx + p->len, want, MSG_DONTWAIT);
		if (n > 0) {
			p->len += (size_t)n;
			news = true;
			if (max)
				break;
			continue;
		}
		if (n == 0) {
			p->eof = true;
			return true;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			p->err = errno;
			return true;
		}
		break;
	}
	return news;
}

static inline bool peer_read(peer_t *p)
{
	return peer_read_max(p, 0);
}

/* Whether p has read at least n bytes (reading what is there first). */
static inline bool peer_has(peer_t *p, size_t n)
{
	peer_read(p);
	return p->len >= n;
}

/* Whether p has reached EOF (or an error), reading everything before it. */
static inline bool peer_ended(peer_t *p)
{
	peer_read(p);
	return p->eof || p->err;
}

/* Whether what p has read so far holds text (reading what is there first). */
static inline bool peer_saw(peer_t *p, const char *text)
{
	peer_read(p);
	return p->len && memmem(p->rx, p->len, text, strlen(text)) != NULL;
}

/* Writes all n bytes, turning the loop while the socket is full. */
static inline void peer_write(rig_t *r, peer_t *p, const void *buf, size_t n)
{
	const uint8_t *b = buf;
	ev_tstamp end = ev_time() + RIG_WAIT_SECS;

	while (n) {
		ssize_t w = send(p->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			fail_msg("send: %s", strerror(errno));
		if (ev_time() > end)
			fail_msg("timed out writing");
		rig_turn(r);
	}
}

static inline void peer_shut(peer_t *p)
{
	assert_int_equal(shutdown(p->fd, SHUT_WR), 0);
}

/* A listener on 127.0.0.1 (port 0: any), non-blocking, with its port. */
static inline int listen_loopback(uint16_t port, int backlog, uint16_t *out)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*out = ntohs(a.sin_port);
	return fd;
}

/* A socket bound on 127.0.0.1 that does not listen, and its port: a
 * connect there is refused, and no connect can meet itself there (its own
 * port being the one it connects to, as it may with a port merely free). */
static inline int refusing_port(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A port free on 127.0.0.1 a moment ago, as text in buf (8 bytes), for
 * an instance's listener. */
static inline const char *free_port(char buf[static 8])
{
	uint16_t port;

	close(listen_loopback(0, 1, &port));
	snprintf(buf, 8, "%u", port);
	return buf;
}

/* Waits for the relay's connection to the listener. */
static inline void rig_accept(rig_t *r, int lis, peer_t *p)
{
	int fd = -1;

	RIG_WAIT(r, (fd = accept4(lis, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0);
	peer_init(p, fd);
}

/* Hands the relay a new inbound connection, one end of a socketpair, as
 * from 127.0.0.1:40000; the test gets the other end in client. sndbuf > 0
 * makes the relay's end's send buffer that small (and the client's
 * receive buffer), so that the relay's writes toward the client block. */
static inline void rig_connect(rig_t *r, peer_t *client, int sndbuf)
{
	struct sockaddr_in from = {.sin_family = AF_INET,
				   .sin_port = htons(40000),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	if (sndbuf > 0) {
		assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)),
				 0);
		assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf)),
				 0);
	}
	peer_init(client, sv[0]);
	ss_conn_accept(r->inst, false, sv[1], (struct sockaddr *)&from, sizeof(from));
}

/* Sets a socket's send buffer (the test's own ends, to make the relay's
 * reads see little at a time, or its writes block). */
static inline void sock_sndbuf(int fd, int size)
{
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
}

static inline void sock_rcvbuf(int fd, int size)
{
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
}

/* A pattern no two nearby offsets share, so a lost, doubled or reordered
 * piece shows. */
static inline uint8_t pattern_at(size_t i, uint8_t seed)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + (i >> 16) + seed);
}

static inline uint8_t *pattern(size_t n, uint8_t seed)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = pattern_at(i, seed);
	return p;
}

/* The Shadowsocks address header of 127.0.0.1:port, as a client sends it
 * first (atyp 1); 7 bytes. */
static inline size_t addr_header(uint16_t port, uint8_t out[7])
{
	out[0] = 1;
	out[1] = 127;
	out[2] = out[3] = 0;
	out[4] = 1;
	out[5] = (uint8_t)(port >> 8);
	out[6] = (uint8_t)port;
	return 7;
}

/* Sends n bytes of pattern seed from one peer and checks that the other
 * gets exactly them (what it had read before is dropped first). */
static inline void relay_one_way(rig_t *r, peer_t *from, peer_t *to, size_t n, uint8_t seed)
{
	uint8_t *want = pattern(n, seed);

	to->len = 0;
	peer_write(r, from, want, n);
	RIG_WAIT(r, peer_has(to, n));
	rig_turns(r, 3);
	peer_read(to);
	assert_int_equal(to->len, n);
	assert_memory_equal(to->rx, want, n);
	free(want);
}

/* n bytes of pattern seed from one peer to another that reads nothing at
 * first: the relay's writes toward it block (the caller made the buffers
 * small), the relay stops reading the sender, and the sender's writes block
 * short of n. Then the reader takes what comes, in pieces, and gets every
 * byte in order. */
static inline void push_to_slow_reader(rig_t *r, peer_t *from, peer_t *to, size_t n, uint8_t seed)
{
	uint8_t *want = pattern(n, seed);
	size_t sent = 0;

	to->len = 0;
	for (int stalls = 0; stalls < 50 && sent < n;) {
		ssize_t w = send(from->fd, want + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			sent += (size_t)w;
		else
			stalls++;
		rig_turns(r, 2);
	}
	assert_true(sent < n);
	while (to->len < n) {
		if (sent < n) {
			ssize_t w =
			    send(from->fd, want + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
		}
		size_t before = to->len;
		peer_read_max(to, 65536);
		if (to->len == before)
			rig_turn(r);
		assert_false(to->eof || to->err);
	}
	assert_int_equal(to->len, n);
	assert_memory_equal(to->rx, want, n);
	free(want);
}

#endif
