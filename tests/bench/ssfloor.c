/* SPDX-License-Identifier: MIT */
/*
 * ssfloor: the least a relay pair can spend on loopback, as a yardstick for bench.py.
 *
 *   ssfloor --listen ADDR:PORT --connect ADDR:PORT --target ADDR:PORT    (in ss-tunnel's place)
 *   ssfloor --listen ADDR:PORT                                           (in ss-server's place)
 *
 * A plain TCP relay with no cipher, no timers and the fewest system calls a relay on epoll can
 * make. With --connect it forwards each accepted connection there, first sending the --target
 * address as a SOCKS5-style header (ATYP 1 or 4, address, port: what method none sends). Without
 * it, it reads that header from each connection and connects to the address in it.
 *
 * Per connection: accept4, socket, connect (complete on return on loopback), two epoll_ctl, and
 * then only reads, writes, one shutdown (the first end passed on; the second goes with the closes)
 * and the closes. Reads are edge-triggered and a short read counts as "drained", so no read ends in
 * EAGAIN, unless the event also reported the peer's FIN: a read that returns the last bytes leaves
 * the FIN unread, and no new edge would come for it. Writes block: one thread, so a slow
 * reader stalls every connection. That is fine for the short request/answer connections bench.py
 * sends through it (its rr test), and keeps writes to one call each; it is not a relay to use.
 * Nor is it a floor for bulk transfers: it copies through 64 KiB, where a relay without a cipher
 * would splice.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_addr.h"

#define BUF_SIZE (64u * 1024u)
#define HDR_MAX 19 /* ATYP 4: 1 + 16 + 2 */

struct side {
	int peer;         /* the other socket of this connection, -1 until connected */
	bool eof;         /* this socket's reader has seen EOF */
	bool dead;        /* closed at the end of this batch of events */
	bool send_hdr;    /* tunnel: put the target header before the first bytes */
	uint8_t hdr_have; /* server: header bytes read so far */
	uint8_t hdr[HDR_MAX];
};

static struct side *sides;
static size_t n_sides;
static int ep;
static uint8_t buf[BUF_SIZE];
static uint8_t target_hdr[HDR_MAX];
static size_t target_hdr_len;
static struct sockaddr_storage upstream;
static socklen_t upstream_len;
static bool tunnel;
/* Sockets are closed after the batch of events in hand, so that no later event of the batch
 * meets a descriptor number already closed, or already reused by an accept. */
static int *dying;
static size_t n_dying;

static void usage(void)
{
	fprintf(stderr,
		"usage: ssfloor --listen ADDR:PORT [--connect ADDR:PORT --target ADDR:PORT]\n");
	exit(2);
}

static size_t header_encode(const struct sockaddr_storage *ss, uint8_t *out)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		out[0] = 1;
		memcpy(out + 1, &a->sin_addr, 4);
		memcpy(out + 5, &a->sin_port, 2);
		return 7;
	}
	const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
	out[0] = 4;
	memcpy(out + 1, &a->sin6_addr, 16);
	memcpy(out + 17, &a->sin6_port, 2);
	return 19;
}

/* 0: more bytes needed; -1: not a header we read; else its length. */
static int header_decode(const uint8_t *h, size_t n, struct sockaddr_storage *ss, socklen_t *len)
{
	if (n < 1)
		return 0;
	memset(ss, 0, sizeof(*ss));
	if (h[0] == 1) {
		if (n < 7)
			return 0;
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, h + 1, 4);
		memcpy(&a->sin_port, h + 5, 2);
		*len = sizeof(*a);
		return 7;
	}
	if (h[0] == 4) {
		if (n < 19)
			return 0;
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, h + 1, 16);
		memcpy(&a->sin6_port, h + 17, 2);
		*len = sizeof(*a);
		return 19;
	}
	return -1;
}

static void watch(int fd)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = fd};

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("ssfloor: epoll_ctl");
		exit(1);
	}
}

/* A blocking socket whose connect has returned: on loopback the handshake is over by then. */
static int dial(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if ((size_t)fd >= n_sides || connect(fd, (const struct sockaddr *)ss, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void pair(int a, int b)
{
	sides[a].peer = b;
	sides[b] = (struct side){.peer = a};
	watch(b);
}

static void finish(int fd)
{
	int peer = sides[fd].peer;

	sides[fd].dead = true;
	dying[n_dying++] = fd;
	if (peer >= 0 && !sides[peer].dead) {
		sides[peer].dead = true;
		dying[n_dying++] = peer;
	}
}

static bool write_all(int fd, const struct iovec *iov, int n)
{
	struct iovec v[2] = {{0}};
	memcpy(v, iov, (size_t)n * sizeof(*iov));
	while (n > 0) {
		ssize_t w = writev(fd, v, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		while (n > 0 && (size_t)w >= v[0].iov_len) {
			w -= (ssize_t)v[0].iov_len;
			v[0] = v[1];
			n--;
		}
		if (n > 0) {
			v[0].iov_base = (uint8_t *)v[0].iov_base + w;
			v[0].iov_len -= (size_t)w;
		}
	}
	return true;
}

/* Server: the header's bytes come first; the rest of what came with them is payload. */
static bool server_header(int fd, uint8_t **p, size_t *n)
{
	struct side *s = &sides[fd];
	size_t take = *n < (size_t)(HDR_MAX - s->hdr_have) ? *n : (size_t)(HDR_MAX - s->hdr_have);
	struct sockaddr_storage ss;
	socklen_t len;

	memcpy(s->hdr + s->hdr_have, *p, take);
	int h = header_decode(s->hdr, s->hdr_have + take, &ss, &len);
	if (h < 0)
		return false;
	if (h == 0) {
		s->hdr_have += (uint8_t)take;
		*n = 0;
		return true;
	}
	size_t used = (size_t)h - s->hdr_have;
	*p += used;
	*n -= used;
	int out = dial(&ss, len);
	if (out < 0)
		return false;
	pair(fd, out);
	return true;
}

static void on_readable(int fd, uint32_t events)
{
	bool fin = events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);

	while (!sides[fd].dead) {
		ssize_t r = recv(fd, buf, BUF_SIZE, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				finish(fd);
			return;
		}
		struct side *s = &sides[fd];
		if (r == 0) {
			if (s->peer < 0 || sides[s->peer].eof) {
				finish(fd);
				return;
			}
			s->eof = true;
			shutdown(s->peer, SHUT_WR);
			return;
		}
		uint8_t *p = buf;
		size_t n = (size_t)r;
		if (s->peer < 0 && !server_header(fd, &p, &n)) {
			finish(fd);
			return;
		}
		struct iovec v[2] = {{target_hdr, target_hdr_len}, {p, n}};
		int first = s->send_hdr ? 0 : 1;
		s->send_hdr = false;
		if (n + (first ? 0 : target_hdr_len) > 0 &&
		    !write_all(s->peer, v + first, 2 - first)) {
			finish(fd);
			return;
		}
		if ((size_t)r < BUF_SIZE && !fin)
			return; /* a short read: nothing more waits, and the edge will come again */
	}
}

static void on_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if ((size_t)fd >= n_sides) {
		close(fd);
		return;
	}
	sides[fd] = (struct side){.peer = -1, .send_hdr = tunnel};
	if (tunnel) {
		int out = dial(&upstream, upstream_len);
		if (out < 0) {
			close(fd);
			return;
		}
		pair(fd, out);
	}
	watch(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage listen_at, target;
	socklen_t listen_len = 0, target_len = 0;
	const char *listen_s = NULL, *connect_s = NULL, *target_s = NULL;

	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--listen") == 0)
			listen_s = argv[++i];
		else if (strcmp(argv[i], "--connect") == 0)
			connect_s = argv[++i];
		else if (strcmp(argv[i], "--target") == 0)
			target_s = argv[++i];
		else
			usage();
	}
	if (!listen_s || !connect_s != !target_s)
		usage();
	if (!parse_addr(listen_s, true, &listen_at, &listen_len) ||
	    (connect_s && (!parse_addr(connect_s, false, &upstream, &upstream_len) ||
			   !parse_addr(target_s, false, &target, &target_len)))) {
		fprintf(stderr, "ssfloor: cannot parse an address\n");
		return 2;
	}
	tunnel = connect_s != NULL;
	if (tunnel)
		target_hdr_len = header_encode(&target, target_hdr);

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	n_sides = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? rl.rlim_cur
										 : (1u << 20);
	sides = calloc(n_sides, sizeof(*sides));
	dying = calloc(n_sides, sizeof(*dying));
	signal(SIGPIPE, SIG_IGN);

	int one = 1,
	    lfd = socket(listen_at.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!sides || !dying || lfd < 0 || ep < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&listen_at, listen_len) < 0 || listen(lfd, 4096) < 0) {
		perror("ssfloor: listen");
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}, evs[64];
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);
		if (n < 0 && errno != EINTR) {
			perror("ssfloor: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == lfd)
				on_accept(lfd);
			else
				on_readable(evs[i].data.fd, evs[i].events);
		}
		while (n_dying > 0)
			close(dying[--n_dying]);
	}
}
