/* SPDX-License-Identifier: MIT */
/*
 * ssload: TCP and UDP load generator and target for benchmarking Shadowsocks relays.
 *
 *   ssload sink --listen ADDR:PORT [--echo | --download BYTES] [--quit-after N] [--conn-log]
 *   ssload send --connect ADDR:PORT --bytes N [--conns K] [--echo | --download]
 *   ssload rr   --connect ADDR:PORT --count N --size S [--conns K]
 *   ssload udp-echo --listen ADDR:PORT
 *   ssload udp-send --connect ADDR:PORT --count N --size S [--window W] [--clients K]
 *   ssload selftest [--bytes N] [--udp-count N]
 *
 * Every stream carries the same fixed pseudo-random pattern, starting at pattern offset 0, so the
 * receiving side checks each byte against the pattern at its stream offset (exact, and cheaper
 * than a checksum: one memcmp per read). The pattern period is a prime, so a lost or repeated
 * power-of-two sized block shows up as a mismatch.
 *
 * One thread, epoll (level-triggered), non-blocking sockets, 256 KiB reads and writes sent straight
 * from the pattern buffer: the tool costs little more than its system calls.
 *
 * UDP: each datagram carries a sequence number and a pattern slice chosen by it; the sender keeps
 * at most a window of datagrams in flight per client socket, matches every answer to what it sent
 * and counts a datagram lost when it has not come back after --loss-after seconds. Both ends move
 * datagrams in batches (sendmmsg, recvmmsg).
 *
 * Results are printed as one JSON object per line on stdout. Exit status: 0 success, 1 failed or
 * corrupted transfer (or timeout), 2 usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_addr.h"

#define PAT_LEN 1048573u /* prime */
#define IO_CHUNK (256u * 1024u)
#define MAX_EVENTS 256
#define NONE UINT64_MAX

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

/* ---------------------------------------------------------------- utilities */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;
	fputs("ssload: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILED);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("ssload: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(try 'ssload help')\n", stderr);
	exit(EXIT_USAGE);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void cpu_self(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static bool would_block(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* "123", "8M", "1G", "1GiB", "512k": binary multiples. */
static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t mul = 1;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		break;
	case 't':
	case 'T':
		mul = 1ull << 40;
		break;
	default:
		break;
	}
	if (mul != 1) {
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B')
		end++;
	if (*end || (v && v > UINT64_MAX / mul))
		return false;
	*out = v * mul;
	return true;
}

static uint64_t opt_size(const char *name, const char *arg)
{
	uint64_t v;
	if (!parse_size(arg, &v))
		usage_error("%s: not a size: '%s'", name, arg);
	return v;
}

static double opt_seconds(const char *name, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || v < 0)
		usage_error("%s: not a number of seconds: '%s'", name, arg);
	return v;
}

/* SO_RCVLOWAT: wake the receiver only once this many bytes wait (or at EOF). Bulk receivers (the
 * discarding sink, a downloading client) default to 64 KiB: far fewer wake-ups and reads, so the
 * tool takes less of the CPU the relays need. Never for echo or rr, whose answers are short.
 * -1: the default for the mode. */
#define BULK_RCVLOWAT (64 * 1024)
static int rcvlowat = -1;

/* TCP_CONGESTION of the tool's TCP sockets; NULL: the system's. A pacing algorithm (bbr without
 * the fq qdisc) sends from a timer interrupt, on whichever process then runs: on a machine where
 * the relays share CPUs with the tool, that process is often a relay. */
static const char *congestion;

/* Gives fd the --congestion algorithm, if one was asked: 0, or -1 with errno. */
static int set_congestion(int fd)
{
	if (!congestion)
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion,
			  (socklen_t)strlen(congestion));
}

/* Refuses a --congestion the kernel would not give the sockets, before
 * anything listens or connects. */
static void check_congestion(void)
{
	int fd;

	if (!congestion)
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (set_congestion(fd) < 0)
		usage_error("--congestion %s: %s", congestion, strerror(errno));
	close(fd);
}

static void set_sockopts(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (rcvlowat > 1)
		setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &rcvlowat, sizeof rcvlowat);
	if (set_congestion(fd) < 0)
		die("--congestion %s: %s", congestion, strerror(errno));
}

static int listen_on(const struct sockaddr_storage *ss, socklen_t len)
{
	int one = 1;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		die("bind: %s", strerror(errno));
	if (listen(fd, 4096) < 0)
		die("listen: %s", strerror(errno));
	return fd;
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* ---------------------------------------------------------------- the pattern */

/* PAT_LEN + IO_CHUNK bytes with pattern[i] == pattern[i % PAT_LEN], so any slice of up to IO_CHUNK
 * bytes starting anywhere in the period is contiguous. */
static uint8_t *pattern;

static void pattern_init(void)
{
	uint64_t state = 0x53534c4f41440001ull, z;
	size_t i;

	pattern = malloc(PAT_LEN + IO_CHUNK);
	if (!pattern)
		die("out of memory");
	for (i = 0; i < PAT_LEN; i += 8) {
		/* splitmix64 */
		z = (state += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		memcpy(pattern + i, &z, PAT_LEN - i < 8 ? PAT_LEN - i : 8);
	}
	memcpy(pattern + PAT_LEN, pattern, IO_CHUNK);
}

static const uint8_t *pattern_at(uint64_t pos)
{
	return pattern + pos % PAT_LEN;
}

/* Index of the first byte of buf[0..n) that differs from the pattern at stream offset pos, or n.
 * n <= IO_CHUNK. */
static size_t pattern_check(const uint8_t *buf, size_t n, uint64_t pos)
{
	const uint8_t *p = pattern_at(pos);
	size_t i = 0;

	if (memcmp(buf, p, n) == 0)
		return n;
	while (buf[i] == p[i])
		i++;
	return i;
}

/* ---------------------------------------------------------------- connections and the loop */

enum kind { K_LISTEN, K_SIGNAL, K_SINK, K_CLIENT };

struct conn {
	enum kind kind;
	int fd;
	bool registered;
	uint32_t mask;
	bool connecting;
	bool eof;           /* the peer finished sending */
	bool wr_shut;       /* we sent our FIN */
	bool half_close;    /* client: send FIN once tx_goal is reached */
	bool close_at_goal; /* client: done as soon as rx_goal bytes arrived */
	uint64_t tx, tx_goal;
	uint64_t rx, rx_goal;
	uint64_t tx_base; /* pattern offset of the first byte sent */
	uint64_t bad_at;  /* stream offset of the first wrong byte received, NONE if none */
	uint8_t *buf;     /* sink --echo: bytes read and not yet written back */
	size_t blen, boff;
	double t0;
	struct conn *next; /* free list */
};

static int ep_fd = -1;
static uint8_t *scratch;
static struct conn *free_conns;
/* Connections kept for reuse, and how many of them keep their buffer: a
 * sink that echoed 18,000 connections at once would otherwise hold 256 KiB
 * for each until it exits, which LeakSanitizer (in a sanitizer build of the
 * tests) scans at exit for longer than a test waits for the sink to end. */
static unsigned free_bufs;
#define FREE_BUFS_MAX 256u

static struct conn *conn_new(enum kind kind, int fd)
{
	struct conn *k = free_conns;
	uint8_t *buf = NULL;

	if (k) {
		free_conns = k->next;
		buf = k->buf;
		if (buf)
			free_bufs--;
	} else if (!(k = malloc(sizeof *k))) {
		die("out of memory");
	}
	memset(k, 0, sizeof *k);
	k->kind = kind;
	k->fd = fd;
	k->buf = buf;
	k->bad_at = NONE;
	return k;
}

static void conn_free(struct conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	if (k->buf && free_bufs == FREE_BUFS_MAX) {
		free(k->buf);
		k->buf = NULL;
	}
	if (k->buf)
		free_bufs++;
	k->next = free_conns;
	free_conns = k;
}

static void watch(struct conn *k, uint32_t mask)
{
	struct epoll_event ev = {.events = mask, .data.ptr = k};

	if (k->registered && k->mask == mask)
		return;
	if (epoll_ctl(ep_fd, k->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, k->fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
	k->registered = true;
	k->mask = mask;
}

static void loop_open(void)
{
	ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ep_fd < 0)
		die("epoll_create1: %s", strerror(errno));
}

/* Closes the loop and frees the connections kept for reuse. */
static void loop_close(void)
{
	close(ep_fd);
	ep_fd = -1;
	while (free_conns) {
		struct conn *k = free_conns;
		free_conns = k->next;
		free(k->buf);
		free(k);
	}
	free_bufs = 0;
}

/* Sends the next slice of the pattern. Returns bytes sent, -1 if the socket would block, -2 on
 * error (errno set). */
static ssize_t conn_send_pattern(struct conn *k)
{
	uint64_t left = k->tx_goal - k->tx;
	size_t n = left < IO_CHUNK ? (size_t)left : IO_CHUNK;
	ssize_t w = send(k->fd, pattern_at(k->tx_base + k->tx), n, MSG_NOSIGNAL);

	if (w < 0)
		return would_block(errno) ? -1 : -2;
	k->tx += (uint64_t)w;
	return w;
}

/* Reads once into dst (cap <= IO_CHUNK) and checks the bytes against the pattern. Returns bytes
 * read, 0 at EOF, -1 if the socket would block, -2 on error (errno set). */
static ssize_t conn_recv(struct conn *k, uint8_t *dst, size_t cap, bool verify)
{
	ssize_t r = recv(k->fd, dst, cap, 0);

	if (r < 0)
		return would_block(errno) ? -1 : -2;
	if (r == 0) {
		k->eof = true;
		return 0;
	}
	if (verify && k->bad_at == NONE) {
		size_t i = pattern_check(dst, (size_t)r, k->rx);
		if (i < (size_t)r)
			k->bad_at = k->rx + i;
	}
	k->rx += (uint64_t)r;
	return r;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* ---------------------------------------------------------------- sink */

struct sink_opts {
	bool echo;
	uint64_t download; /* bytes written to each accepted connection */
	bool verify;
	uint64_t quit_after; /* exit once this many connections ended; 0: never */
	bool conn_log;
	double timeout; /* exit after this long; 0: never */
};

struct sink {
	const struct sink_opts *o;
	bool quit;
	uint64_t accepted, done, open, rx, tx, bad, failed;
	double t_first, t_last;
};

static void sink_summary(const struct sink *s, const char *why)
{
	double user, sys;

	cpu_self(&user, &sys);
	printf("{\"event\":\"summary\",\"reason\":\"%s\",\"conns\":%" PRIu64 ",\"open\":%" PRIu64
	       ",\"rx\":%" PRIu64 ",\"tx\":%" PRIu64 ",\"bad_conns\":%" PRIu64
	       ",\"failed_conns\":%" PRIu64 ",\"cpu_user\":%.3f,\"cpu_sys\":%.3f"
	       ",\"t_first\":%.6f,\"t_last\":%.6f}\n",
	       why, s->done, s->open, s->rx, s->tx, s->bad, s->failed, user, sys, s->t_first,
	       s->t_last);
	fflush(stdout);
}

static void sink_conn_done(struct sink *s, struct conn *k, bool fail)
{
	bool ok = !fail && k->bad_at == NONE && k->tx == k->tx_goal;

	s->done++;
	s->open--;
	if (k->bad_at != NONE)
		s->bad++;
	if (!ok)
		s->failed++;
	s->t_last = now();
	if (s->o->conn_log) {
		printf("{\"event\":\"conn\",\"rx\":%" PRIu64 ",\"tx\":%" PRIu64 ",\"ok\":%s", k->rx,
		       k->tx, ok ? "true" : "false");
		if (k->bad_at != NONE)
			printf(",\"bad_at\":%" PRIu64, k->bad_at);
		printf("}\n");
		fflush(stdout);
	}
	conn_free(k);
	if (s->o->quit_after && s->done >= s->o->quit_after)
		s->quit = true;
}

/* --echo: sends back the n bytes just read into scratch; what the socket
 * does not take waits in a buffer of the connection's own, made only then,
 * so that an echo that keeps up holds no memory per connection. 0, or -1 on
 * a send error. */
static int sink_echo(struct sink *s, struct conn *k, size_t n)
{
	ssize_t w = send(k->fd, scratch, n, MSG_NOSIGNAL);

	if (w < 0 && !would_block(errno))
		return -1;
	if (w > 0)
		s->tx += (uint64_t)w;
	size_t sent = w > 0 ? (size_t)w : 0;
	if (sent == n)
		return 0;
	if (!k->buf && !(k->buf = malloc(IO_CHUNK)))
		die("out of memory");
	memcpy(k->buf, scratch + sent, n - sent);
	k->boff = 0;
	k->blen = n - sent;
	return 0;
}

static void sink_conn_io(struct sink *s, struct conn *k)
{
	bool fail = false;
	uint32_t mask = 0;

	for (int round = 0; round < 16; round++) {
		bool moved = false;
		ssize_t n;

		if (k->tx < k->tx_goal) {
			n = conn_send_pattern(k);
			if (n == -2) {
				fail = true;
				break;
			}
			if (n > 0) {
				s->tx += (uint64_t)n;
				moved = true;
			}
			if (k->tx == k->tx_goal && !k->wr_shut) {
				shutdown(k->fd, SHUT_WR);
				k->wr_shut = true;
			}
		}
		if (k->boff < k->blen) {
			n = send(k->fd, k->buf + k->boff, k->blen - k->boff, MSG_NOSIGNAL);
			if (n < 0 && !would_block(errno)) {
				fail = true;
				break;
			}
			if (n > 0) {
				s->tx += (uint64_t)n;
				k->boff += (size_t)n;
				if (k->boff == k->blen)
					k->boff = k->blen = 0;
				moved = true;
			}
		}
		if (!k->eof && k->blen == 0) {
			n = conn_recv(k, scratch, IO_CHUNK, s->o->verify);
			if (n == -2) {
				fail = true;
				break;
			}
			if (n >= 0)
				moved = true;
			if (n > 0) {
				s->rx += (uint64_t)n;
				if (s->o->echo && sink_echo(s, k, (size_t)n) < 0) {
					fail = true;
					break;
				}
			}
		}
		if (!moved)
			break;
	}
	if (fail || (k->eof && k->blen == 0 && k->tx == k->tx_goal)) {
		sink_conn_done(s, k, fail);
		return;
	}
	if (!k->eof && k->blen == 0)
		mask |= EPOLLIN;
	if (k->tx < k->tx_goal || k->blen)
		mask |= EPOLLOUT;
	watch(k, mask);
}

static void sink_accept(struct sink *s, struct conn *l)
{
	for (int i = 0; i < 64; i++) {
		struct conn *k;
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (!would_block(errno))
				fprintf(stderr, "ssload: accept: %s\n", strerror(errno));
			return;
		}
		set_sockopts(fd);
		k = conn_new(K_SINK, fd);
		k->tx_goal = s->o->download;
		if (!s->accepted++)
			s->t_first = now();
		s->open++;
		sink_conn_io(s, k);
	}
}

/* Serves the listening socket lfd until a signal, --quit-after or --timeout. */
static int sink_run(int lfd, const struct sink_opts *o)
{
	struct sink s = {.o = o};
	struct conn *lc, *sc;
	struct epoll_event evs[MAX_EVENTS];
	sigset_t set;
	int sfd;
	double deadline = o->timeout > 0 ? now() + o->timeout : 0;
	const char *why = "quit-after";

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd: %s", strerror(errno));

	loop_open();
	lc = conn_new(K_LISTEN, lfd);
	sc = conn_new(K_SIGNAL, sfd);
	watch(lc, EPOLLIN);
	watch(sc, EPOLLIN);

	while (!s.quit) {
		int n = epoll_wait(ep_fd, evs, MAX_EVENTS, 500);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct conn *k = evs[i].data.ptr;
			struct signalfd_siginfo si;

			switch (k->kind) {
			case K_LISTEN:
				sink_accept(&s, k);
				break;
			case K_SIGNAL:
				while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
					if (si.ssi_signo == SIGUSR1) {
						sink_summary(&s, "progress");
					} else {
						s.quit = true;
						why = "signal";
					}
				}
				break;
			default:
				sink_conn_io(&s, k);
				break;
			}
		}
		if (deadline && now() > deadline && !s.quit) {
			s.quit = true;
			why = "timeout";
		}
	}
	sink_summary(&s, why);
	conn_free(lc);
	conn_free(sc);
	loop_close();
	if (s.failed || !strcmp(why, "timeout"))
		return EXIT_FAILED;
	return EXIT_OK;
}

/* ---------------------------------------------------------------- clients: send and rr */

enum mode { M_UPLOAD, M_ECHO, M_DOWNLOAD, M_RR };

static const char *const mode_names[] = {"upload", "echo", "download", "rr"};

struct client_opts {
	struct sockaddr_storage addr;
	socklen_t alen;
	enum mode mode;
	uint64_t bytes; /* upload, echo, download: in all; rr: per request */
	uint64_t count; /* rr: connections in all */
	unsigned conns; /* connections in parallel */
	bool verify;
	uint64_t skew; /* pattern offset of the first byte sent (tests the verifier) */
	double timeout;
};

struct client {
	const struct client_opts *o;
	uint64_t total, started, active;
	uint64_t sent, received, ok, failed, bad;
	double t_start, t_end, cpu_user, cpu_sys;
	double *lat;
	size_t nlat;
	bool timed_out;
	char err[160];
};

static void client_error(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void client_error(struct client *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
}

static void client_done(struct client *c, struct conn *k, bool ok)
{
	if (k->bad_at != NONE) {
		ok = false;
		c->bad++;
		client_error(c, "received byte %" PRIu64 " differs from the pattern", k->bad_at);
	}
	if (!ok && (k->rx != k->rx_goal || k->tx != k->tx_goal))
		client_error(c,
			     "connection ended having sent %" PRIu64 "/%" PRIu64
			     " and received %" PRIu64 "/%" PRIu64 " bytes",
			     k->tx, k->tx_goal, k->rx, k->rx_goal);
	if (ok) {
		c->ok++;
		if (c->lat)
			c->lat[c->nlat++] = now() - k->t0;
	} else {
		c->failed++;
	}
	conn_free(k);
	c->active--;
}

static void client_io(struct client *c, struct conn *k, uint32_t events)
{
	uint32_t mask = EPOLLIN;

	if (k->connecting) {
		int err = 0;
		socklen_t len = sizeof err;

		getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			client_error(c, "connect: %s", strerror(err));
			client_done(c, k, false);
			return;
		}
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		k->connecting = false;
	}
	for (int round = 0; round < 16; round++) {
		bool moved = false;
		ssize_t n;

		if (k->tx < k->tx_goal) {
			n = conn_send_pattern(k);
			if (n == -2) {
				client_error(c, "send: %s", strerror(errno));
				client_done(c, k, false);
				return;
			}
			if (n > 0) {
				c->sent += (uint64_t)n;
				moved = true;
			}
		}
		if (k->tx == k->tx_goal && k->half_close && !k->wr_shut) {
			shutdown(k->fd, SHUT_WR);
			k->wr_shut = true;
		}
		if (!k->eof) {
			n = conn_recv(k, scratch, IO_CHUNK, c->o->verify);
			if (n == -2) {
				client_error(c, "recv: %s", strerror(errno));
				client_done(c, k, false);
				return;
			}
			if (n > 0)
				c->received += (uint64_t)n;
			if (n >= 0)
				moved = true;
		}
		if (k->close_at_goal && k->rx >= k->rx_goal) {
			client_done(c, k, k->rx == k->rx_goal && k->tx == k->tx_goal);
			return;
		}
		if (k->eof) {
			client_done(
			    c, k, !k->close_at_goal && k->rx == k->rx_goal && k->tx == k->tx_goal);
			return;
		}
		if (!moved)
			break;
	}
	if (k->tx < k->tx_goal)
		mask |= EPOLLOUT;
	watch(k, mask);
}

static void client_start(struct client *c)
{
	const struct client_opts *o = c->o;
	uint64_t i = c->started++;
	uint64_t share = 0;
	struct conn *k;
	int fd, r;

	if (o->mode != M_RR)
		share = o->bytes / o->conns + (i < o->bytes % o->conns ? 1 : 0);
	fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	set_sockopts(fd);
	k = conn_new(K_CLIENT, fd);
	c->active++;
	k->t0 = now();
	k->tx_base = o->skew;
	switch (o->mode) {
	case M_UPLOAD:
		k->tx_goal = share;
		k->half_close = true;
		break;
	case M_ECHO:
		k->tx_goal = k->rx_goal = share;
		k->close_at_goal = true;
		break;
	case M_DOWNLOAD:
		k->rx_goal = share;
		break;
	case M_RR:
		k->tx_goal = k->rx_goal = o->bytes;
		k->close_at_goal = true;
		break;
	}
	r = connect(fd, (const struct sockaddr *)&o->addr, o->alen);
	if (r < 0 && errno != EINPROGRESS) {
		client_error(c, "connect: %s", strerror(errno));
		client_done(c, k, false);
		return;
	}
	k->connecting = r < 0;
	watch(k, EPOLLIN | EPOLLOUT);
}

static void client_run(const struct client_opts *o, struct client *c)
{
	struct epoll_event evs[MAX_EVENTS];
	double deadline;

	memset(c, 0, sizeof *c);
	c->o = o;
	c->total = o->mode == M_RR ? o->count : o->conns;
	if (o->mode == M_RR && !(c->lat = malloc(sizeof(double) * (c->total ? c->total : 1))))
		die("out of memory");
	loop_open();
	c->t_start = now();
	deadline = o->timeout > 0 ? c->t_start + o->timeout : 0;
	for (;;) {
		int n;

		while (c->started < c->total && c->active < o->conns)
			client_start(c);
		if (!c->active)
			break;
		n = epoll_wait(ep_fd, evs, MAX_EVENTS, 500);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			client_io(c, evs[i].data.ptr, evs[i].events);
		if (deadline && now() > deadline) {
			c->timed_out = true;
			client_error(
			    c, "timed out after %.1f s with %" PRIu64 " connections unfinished",
			    o->timeout, c->active);
			break;
		}
	}
	c->t_end = now();
	cpu_self(&c->cpu_user, &c->cpu_sys);
	loop_close(); /* connections still open at a timeout are left to exit() */
}

static bool client_ok(const struct client *c)
{
	return !c->timed_out && c->failed == 0 && c->bad == 0 && c->ok == c->total;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double percentile(const double *v, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static void client_report(const struct client *c)
{
	const struct client_opts *o = c->o;
	double secs = c->t_end - c->t_start;
	bool ok = client_ok(c);

	printf("{\"mode\":\"%s\",\"ok\":%s,", mode_names[o->mode], ok ? "true" : "false");
	if (o->mode == M_RR) {
		double sum = 0;
		qsort(c->lat, c->nlat, sizeof(double), cmp_double);
		for (size_t i = 0; i < c->nlat; i++)
			sum += c->lat[i];
		printf("\"count\":%" PRIu64 ",\"size\":%" PRIu64
		       ",\"conns\":%u,\"ok_conns\":%" PRIu64 ",\"failed_conns\":%" PRIu64
		       ",\"seconds\":%.6f,\"conns_per_s\":%.1f,"
		       "\"latency_us\":{\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
		       "\"max\":%.1f},",
		       o->count, o->bytes, o->conns, c->ok, c->failed, secs,
		       secs > 0 ? (double)c->ok / secs : 0.0,
		       c->nlat ? sum / (double)c->nlat * 1e6 : 0.0,
		       percentile(c->lat, c->nlat, 0.50) * 1e6,
		       percentile(c->lat, c->nlat, 0.90) * 1e6,
		       percentile(c->lat, c->nlat, 0.99) * 1e6,
		       percentile(c->lat, c->nlat, 1.0) * 1e6);
	} else {
		printf("\"conns\":%u,\"bytes\":%" PRIu64 ",\"ok_conns\":%" PRIu64
		       ",\"failed_conns\":%" PRIu64 ",\"seconds\":%.6f,\"mb_per_s\":%.1f,",
		       o->conns, o->bytes, c->ok, c->failed, secs,
		       secs > 0 ? (double)(o->mode == M_UPLOAD ? c->sent : c->received) / secs / 1e6
				: 0.0);
	}
	printf("\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64
	       ",\"verified\":%s,\"bad_conns\":%" PRIu64 ",\"cpu_user\":%.3f,\"cpu_sys\":%.3f,"
	       "\"t_start\":%.6f,\"t_end\":%.6f",
	       c->sent, c->received, o->verify && ok ? "true" : "false", c->bad, c->cpu_user,
	       c->cpu_sys, c->t_start, c->t_end);
	if (c->err[0]) {
		printf(",\"error\":");
		json_string(stdout, c->err);
	}
	printf("}\n");
	fflush(stdout);
	if (c->err[0])
		fprintf(stderr, "ssload: %s\n", c->err);
}

/* ---------------------------------------------------------------- UDP: echo target and sender */

/*
 * A datagram starts with a 16-byte header: its sequence number (8 bytes), the sender's slot index
 * (4) and a tag (4: a constant xor the client number), in host order since both ends run on this
 * machine. The rest is the pattern from an offset that depends on the client and the sequence
 * number, so a datagram that comes back cut, altered or with another one's payload is caught.
 */
#define UDP_HDR 16u
#define UDP_MAX 65507u /* the largest UDP payload over IPv4 */
#define UDP_TAG 0x55445031u
#define UDP_BATCH 64
#define UDP_SOCKBUF (4 << 20) /* capped by net.core.[rw]mem_max */
#define NO_SLOT UINT32_MAX

static uint64_t udp_payload_pos(uint32_t client, uint64_t seq)
{
	return (seq * 7919u + (uint64_t)client * 104729u) % PAT_LEN;
}

static void udp_sockbufs(int fd)
{
	int v = UDP_SOCKBUF;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

static int udp_socket(int family)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	udp_sockbufs(fd);
	return fd;
}

static int udp_bind(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = udp_socket(ss->ss_family);

	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		die("bind: %s", strerror(errno));
	return fd;
}

static void ep_set(int fd, int op, uint32_t mask, void *ptr)
{
	struct epoll_event ev = {.events = mask, .data.ptr = ptr};

	if (epoll_ctl(ep_fd, op, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/* Signals that end (SIGTERM, SIGINT) or report (SIGUSR1), read from a signalfd. */
static int signal_fd(void)
{
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd: %s", strerror(errno));
	return sfd;
}

/* ------------------------------------------------ udp-echo */

struct udp_echo_opts {
	double timeout;         /* exit after this long; 0: never */
	uint64_t drop_every;    /* testing the sender: leave every Nth datagram unanswered */
	uint64_t corrupt_every; /* testing the sender: alter the last byte of every Nth answer */
};

struct udp_echo {
	const struct udp_echo_opts *o;
	int fd;
	uint64_t rx, tx, rx_bytes, dropped, corrupted, send_errors, recv_errors;
	double t_first, t_last;
	/* received datagrams, answered in place from the same buffers */
	struct mmsghdr in[UDP_BATCH], out[UDP_BATCH];
	struct iovec in_iov[UDP_BATCH], out_iov[UDP_BATCH];
	struct sockaddr_storage from[UDP_BATCH];
	uint8_t *bufs;
	unsigned pend, off; /* out[off..pend) wait to be sent */
};

static void udp_echo_summary(const struct udp_echo *e, const char *why)
{
	double user, sys;

	cpu_self(&user, &sys);
	printf("{\"event\":\"summary\",\"reason\":\"%s\",\"rx\":%" PRIu64 ",\"tx\":%" PRIu64
	       ",\"rx_bytes\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"corrupted\":%" PRIu64
	       ",\"send_errors\":%" PRIu64 ",\"recv_errors\":%" PRIu64
	       ",\"cpu_user\":%.3f,\"cpu_sys\":%.3f,\"t_first\":%.6f,\"t_last\":%.6f}\n",
	       why, e->rx, e->tx, e->rx_bytes, e->dropped, e->corrupted, e->send_errors,
	       e->recv_errors, user, sys, e->t_first, e->t_last);
	fflush(stdout);
}

/* Sends what is pending, then receives and answers until the socket has nothing more or cannot
 * take more. Returns the epoll mask to wait for. */
static uint32_t udp_echo_io(struct udp_echo *e)
{
	const struct udp_echo_opts *o = e->o;

	for (int round = 0; round < 64; round++) {
		int n;

		while (e->off < e->pend) {
			n = sendmmsg(e->fd, e->out + e->off, e->pend - e->off, MSG_DONTWAIT);
			if (n < 0) {
				if (would_block(errno))
					return EPOLLOUT;
				e->send_errors++; /* skip the datagram that failed */
				e->off++;
				continue;
			}
			e->tx += (uint64_t)n;
			e->off += (unsigned)n;
		}
		e->pend = e->off = 0;

		for (unsigned i = 0; i < UDP_BATCH; i++) {
			e->in_iov[i].iov_base = e->bufs + (size_t)i * (UDP_MAX + 1);
			e->in_iov[i].iov_len = UDP_MAX + 1;
			e->in[i].msg_hdr = (struct msghdr){
			    .msg_name = &e->from[i],
			    .msg_namelen = sizeof e->from[i],
			    .msg_iov = &e->in_iov[i],
			    .msg_iovlen = 1,
			};
		}
		n = recvmmsg(e->fd, e->in, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (!would_block(errno))
				e->recv_errors++;
			return EPOLLIN;
		}
		if (n > 0) {
			e->t_last = now();
			if (!e->rx)
				e->t_first = e->t_last;
		}
		for (int i = 0; i < n; i++) {
			size_t len = e->in[i].msg_len;
			uint8_t *buf = e->in_iov[i].iov_base;

			e->rx++;
			e->rx_bytes += len;
			if (o->drop_every && e->rx % o->drop_every == 0) {
				e->dropped++;
				continue;
			}
			if (o->corrupt_every && e->rx % o->corrupt_every == 0 && len) {
				buf[len - 1] ^= 0x5a;
				e->corrupted++;
			}
			e->out_iov[e->pend] = (struct iovec){.iov_base = buf, .iov_len = len};
			e->out[e->pend].msg_hdr = (struct msghdr){
			    .msg_name = &e->from[i],
			    .msg_namelen = e->in[i].msg_hdr.msg_namelen,
			    .msg_iov = &e->out_iov[e->pend],
			    .msg_iovlen = 1,
			};
			e->pend++;
		}
		if (n == 0)
			return EPOLLIN;
	}
	return e->pend ? EPOLLOUT : EPOLLIN;
}

/* Answers every datagram on fd with itself until a signal or --timeout. */
static int udp_echo_run(int fd, const struct udp_echo_opts *o)
{
	struct udp_echo *e = calloc(1, sizeof *e);
	struct epoll_event evs[8];
	double deadline = o->timeout > 0 ? now() + o->timeout : 0;
	const char *why = NULL;
	uint32_t mask = EPOLLIN;
	int sfd = signal_fd();

	if (!e || !(e->bufs = malloc((size_t)UDP_BATCH * (UDP_MAX + 1))))
		die("out of memory");
	e->o = o;
	e->fd = fd;
	loop_open();
	ep_set(sfd, EPOLL_CTL_ADD, EPOLLIN, NULL);
	ep_set(fd, EPOLL_CTL_ADD, mask, e);
	while (!why) {
		int n = epoll_wait(ep_fd, evs, 8, 500);

		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct signalfd_siginfo si;

			if (evs[i].data.ptr) {
				uint32_t m = udp_echo_io(e);
				if (m != mask)
					ep_set(fd, EPOLL_CTL_MOD, mask = m, e);
				continue;
			}
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo == SIGUSR1)
					udp_echo_summary(e, "progress");
				else
					why = "signal";
			}
		}
		if (!why && deadline > 0 && now() > deadline)
			why = "timeout";
	}
	udp_echo_summary(e, why);
	loop_close();
	close(sfd);
	free(e->bufs);
	free(e);
	return strcmp(why, "timeout") ? EXIT_OK : EXIT_FAILED;
}

/* ------------------------------------------------ udp-send */

/* Latency histogram: exact below 128 ns, then 64 buckets per power of two (1.6% wide). */
#define LAT_SUB 64u
#define LAT_BUCKETS ((64u - 6u) * LAT_SUB)

static unsigned lat_bucket(uint64_t ns)
{
	unsigned msb, shift;

	if (ns < 2 * LAT_SUB)
		return (unsigned)ns;
	msb = 63u - (unsigned)__builtin_clzll(ns);
	shift = msb - 6u;
	return (shift + 1u) * LAT_SUB + (unsigned)(ns >> shift) - LAT_SUB;
}

/* The middle of bucket b, in ns. */
static double lat_value(unsigned b)
{
	unsigned shift;

	if (b < 2 * LAT_SUB)
		return b;
	shift = b / LAT_SUB - 1u;
	return ((double)(b % LAT_SUB + LAT_SUB) + 0.5) * (double)(1ull << shift);
}

struct udp_send_opts {
	struct sockaddr_storage addr;
	socklen_t alen;
	uint64_t count;    /* datagrams in all */
	uint32_t size;     /* bytes per datagram */
	uint32_t window;   /* datagrams in flight per client, at most */
	uint32_t burst;    /* datagrams sent together, each sendmmsg (1: as the window allows) */
	uint32_t clients;  /* sockets, each its own association in a relay */
	bool verify;       /* compare the payload, not only the header */
	double timeout;    /* give up after this long */
	double loss_after; /* a datagram not back after this long is lost */
};

struct udp_slot {
	uint64_t seq;
	double t0;
	uint32_t next_free;
	bool busy;
	uint8_t hdr[UDP_HDR];
};

struct udp_client {
	int fd;
	uint32_t id;
	uint32_t mask, registered; /* wanted and registered epoll events */
	uint64_t goal, next_seq, inflight;
	struct udp_slot *slots;
	uint32_t free_head;
};

struct udp_sender {
	const struct udp_send_opts *o;
	struct udp_client *cl;
	uint64_t sent, received, lost, corrupt, late;
	uint64_t lat_n, lat[LAT_BUCKETS];
	double lat_sum, lat_max;
	double t_start, t_end, t_last_rx, cpu_user, cpu_sys;
	bool timed_out, fatal;
	uint8_t *rxbuf; /* UDP_BATCH slices of o->size bytes */
	char err[160];
};

static void udp_error(struct udp_sender *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void udp_error(struct udp_sender *s, const char *fmt, ...)
{
	va_list ap;

	if (s->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
}

static void udp_slot_free(struct udp_client *c, uint32_t i)
{
	c->slots[i].busy = false;
	c->slots[i].next_free = c->free_head;
	c->free_head = i;
	c->inflight--;
}

static void udp_hard_error(struct udp_sender *s, const char *what)
{
	if (errno == ECONNREFUSED)
		udp_error(s, "%s: nothing answers at the target (port unreachable)", what);
	else
		udp_error(s, "%s: %s", what, strerror(errno));
	s->fatal = true;
}

/* Sends while the window has room and the socket takes datagrams. */
static void udp_fill(struct udp_sender *s, struct udp_client *c)
{
	const struct udp_send_opts *o = s->o;
	struct mmsghdr msg[UDP_BATCH];
	struct iovec iov[UDP_BATCH][2];
	uint32_t idx[UDP_BATCH];

	while (!s->fatal && c->next_seq < c->goal && c->free_head != NO_SLOT) {
		int n = 0, r, most = UDP_BATCH;
		double t;

		if (o->burst > 1) {
			/* A whole burst or nothing (the last may be short). */
			uint64_t want =
			    c->goal - c->next_seq < o->burst ? c->goal - c->next_seq : o->burst;
			if (o->window - c->inflight < want)
				break;
			most = (int)want;
		}
		while (n < most && c->next_seq + (uint64_t)n < c->goal && c->free_head != NO_SLOT) {
			uint32_t i = c->free_head;
			struct udp_slot *sl = &c->slots[i];
			uint32_t tag = UDP_TAG ^ c->id;

			c->free_head = sl->next_free;
			sl->seq = c->next_seq + (uint64_t)n;
			memcpy(sl->hdr, &sl->seq, 8);
			memcpy(sl->hdr + 8, &i, 4);
			memcpy(sl->hdr + 12, &tag, 4);
			iov[n][0] = (struct iovec){.iov_base = sl->hdr, .iov_len = UDP_HDR};
			iov[n][1] = (struct iovec){
			    .iov_base =
				(void *)(uintptr_t)pattern_at(udp_payload_pos(c->id, sl->seq)),
			    .iov_len = o->size - UDP_HDR,
			};
			msg[n].msg_hdr = (struct msghdr){.msg_iov = iov[n], .msg_iovlen = 2};
			idx[n++] = i;
		}
		r = sendmmsg(c->fd, msg, (unsigned)n, MSG_DONTWAIT);
		t = now();
		if (r < 0) {
			if (!would_block(errno))
				udp_hard_error(s, "send");
			r = 0;
		}
		for (int j = 0; j < r; j++) {
			c->slots[idx[j]].busy = true;
			c->slots[idx[j]].t0 = t;
		}
		for (int j = n - 1; j >= r; j--) { /* back to the free list, in order */
			c->slots[idx[j]].next_free = c->free_head;
			c->free_head = idx[j];
		}
		c->next_seq += (uint64_t)r;
		c->inflight += (uint64_t)r;
		s->sent += (uint64_t)r;
		if (r < n) {
			c->mask = EPOLLIN | EPOLLOUT;
			return;
		}
	}
	c->mask = EPOLLIN;
}

static void udp_check(struct udp_sender *s, struct udp_client *c, const uint8_t *buf, size_t len,
		      double t)
{
	const struct udp_send_opts *o = s->o;
	struct udp_slot *sl;
	uint64_t seq, ns;
	uint32_t slot, tag;

	if (len < UDP_HDR) {
		s->corrupt++;
		udp_error(s, "a datagram of %zu bytes came back", len);
		return;
	}
	memcpy(&seq, buf, 8);
	memcpy(&slot, buf + 8, 4);
	memcpy(&tag, buf + 12, 4);
	if (tag != (UDP_TAG ^ c->id) || slot >= o->window) {
		s->corrupt++;
		udp_error(s, "a datagram came back with a header that was not sent");
		return;
	}
	sl = &c->slots[slot];
	if (!sl->busy || sl->seq != seq) {
		if (seq < c->next_seq) {
			s->late++; /* already declared lost, or a second copy */
		} else {
			s->corrupt++;
			udp_error(s, "datagram %" PRIu64 " came back before it was sent", seq);
		}
		return;
	}
	udp_slot_free(c, slot);
	if (len != o->size) {
		s->corrupt++;
		udp_error(s, "datagram %" PRIu64 " came back with %zu bytes, not %" PRIu32, seq,
			  len, o->size);
		return;
	}
	if (o->verify && memcmp(buf + UDP_HDR, pattern_at(udp_payload_pos(c->id, seq)),
				o->size - UDP_HDR) != 0) {
		s->corrupt++;
		udp_error(s, "datagram %" PRIu64 " came back altered", seq);
		return;
	}
	s->received++;
	s->t_last_rx = t;
	t -= sl->t0;
	ns = t > 0 ? (uint64_t)(t * 1e9) : 0;
	s->lat[lat_bucket(ns)]++;
	s->lat_n++;
	s->lat_sum += t;
	if (t > s->lat_max)
		s->lat_max = t;
}

static void udp_drain(struct udp_sender *s, struct udp_client *c)
{
	struct mmsghdr msg[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	size_t cap = s->o->size;

	for (int round = 0; round < 16; round++) {
		int n;
		double t;

		for (unsigned i = 0; i < UDP_BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = s->rxbuf + i * cap, .iov_len = cap};
			msg[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
		}
		/* MSG_TRUNC: msg_len is the datagram's real length, so a longer one is caught */
		n = recvmmsg(c->fd, msg, UDP_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0) {
			if (!would_block(errno))
				udp_hard_error(s, "recv");
			return;
		}
		t = now();
		for (int i = 0; i < n; i++)
			udp_check(s, c, iov[i].iov_base, msg[i].msg_len, t);
		if (n < UDP_BATCH)
			return;
	}
}

/* Frees the slots of datagrams that have been away longer than --loss-after. */
static void udp_expire(struct udp_sender *s, double t)
{
	for (uint32_t k = 0; k < s->o->clients; k++) {
		struct udp_client *c = &s->cl[k];

		for (uint32_t i = 0; c->inflight && i < s->o->window; i++) {
			if (c->slots[i].busy && t - c->slots[i].t0 > s->o->loss_after) {
				udp_slot_free(c, i);
				s->lost++;
			}
		}
	}
	/* a path that answers nothing is broken: no need to wait for every datagram to time out */
	if (!s->received && s->lost >= (uint64_t)s->o->window * s->o->clients) {
		udp_error(s, "none of the first %" PRIu64 " datagrams came back within %.3g s",
			  s->lost, s->o->loss_after);
		s->fatal = true;
	}
}

static void udp_send_run(const struct udp_send_opts *o, struct udp_sender *s)
{
	struct epoll_event evs[MAX_EVENTS];
	double deadline, scan_every, next_scan;

	memset(s, 0, sizeof *s);
	s->o = o;
	s->cl = calloc(o->clients, sizeof *s->cl);
	s->rxbuf = malloc((size_t)UDP_BATCH * o->size);
	if (!s->cl || !s->rxbuf)
		die("out of memory");
	loop_open();
	for (uint32_t k = 0; k < o->clients; k++) {
		struct udp_client *c = &s->cl[k];

		c->id = k;
		c->goal = o->count / o->clients + (k < o->count % o->clients ? 1 : 0);
		c->slots = calloc(o->window, sizeof *c->slots);
		if (!c->slots)
			die("out of memory");
		for (uint32_t i = 0; i < o->window; i++)
			c->slots[i].next_free = i + 1 < o->window ? i + 1 : NO_SLOT;
		c->fd = udp_socket(o->addr.ss_family);
		if (connect(c->fd, (const struct sockaddr *)&o->addr, o->alen) < 0)
			die("connect: %s", strerror(errno));
		c->mask = c->registered = EPOLLIN;
		ep_set(c->fd, EPOLL_CTL_ADD, c->mask, c);
	}
	s->t_start = now();
	deadline = o->timeout > 0 ? s->t_start + o->timeout : 0;
	scan_every = o->loss_after / 4 > 0.001 ? o->loss_after / 4 : 0.001;
	next_scan = s->t_start + scan_every;
	for (;;) {
		bool done = true;
		double t;
		int n, wait_ms;

		for (uint32_t k = 0; k < o->clients; k++) {
			struct udp_client *c = &s->cl[k];

			if (!(c->mask & EPOLLOUT))
				udp_fill(s, c);
			if (c->mask != c->registered)
				ep_set(c->fd, EPOLL_CTL_MOD, c->registered = c->mask, c);
			if (c->next_seq < c->goal || c->inflight)
				done = false;
		}
		if (done || s->fatal)
			break;
		wait_ms = (int)((next_scan - now()) * 1000) + 1;
		if (wait_ms > 100)
			wait_ms = 100;
		n = epoll_wait(ep_fd, evs, MAX_EVENTS, wait_ms > 1 ? wait_ms : 1);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct udp_client *c = evs[i].data.ptr;

			if (evs[i].events & EPOLLOUT)
				c->mask = EPOLLIN; /* udp_fill sends again and decides */
			if (evs[i].events & (EPOLLIN | EPOLLERR))
				udp_drain(s, c);
		}
		t = now();
		if (t >= next_scan) {
			udp_expire(s, t);
			next_scan = t + scan_every;
		}
		if (deadline > 0 && t > deadline) {
			s->timed_out = true;
			udp_error(s, "timed out after %.1f s with %" PRIu64 " of %" PRIu64 " sent",
				  o->timeout, s->sent, o->count);
			break;
		}
	}
	s->t_end = now();
	cpu_self(&s->cpu_user, &s->cpu_sys);
	for (uint32_t k = 0; k < o->clients; k++) {
		s->lost += s->cl[k].inflight; /* still away at a timeout or an error */
		close(s->cl[k].fd);
		free(s->cl[k].slots);
	}
	free(s->cl);
	free(s->rxbuf);
	s->cl = NULL;
	s->rxbuf = NULL;
	loop_close();
}

static bool udp_send_ok(const struct udp_sender *s)
{
	return !s->timed_out && !s->fatal && s->corrupt == 0 && s->lost == 0 &&
	       s->received == s->o->count;
}

/* The value below which a fraction p of the latencies lie, in seconds. */
static double udp_percentile(const struct udp_sender *s, double p)
{
	uint64_t rank = (uint64_t)(p * (double)s->lat_n + 0.999999), seen = 0;

	if (!s->lat_n)
		return 0;
	if (rank < 1)
		rank = 1;
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		seen += s->lat[b];
		if (seen >= rank) {
			double v = lat_value(b) * 1e-9;
			return v < s->lat_max ? v : s->lat_max;
		}
	}
	return s->lat_max;
}

static void udp_send_report(const struct udp_sender *s)
{
	const struct udp_send_opts *o = s->o;
	double t_end = s->t_last_rx > 0 ? s->t_last_rx : s->t_end;
	double secs = t_end - s->t_start;
	bool ok = udp_send_ok(s);

	printf("{\"mode\":\"udp\",\"ok\":%s,\"count\":%" PRIu64 ",\"size\":%" PRIu32
	       ",\"window\":%" PRIu32 ",\"clients\":%" PRIu32 ",\"sent\":%" PRIu64
	       ",\"received\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"corrupt\":%" PRIu64
	       ",\"late\":%" PRIu64 ",\"seconds\":%.6f,\"datagrams_per_s\":%.1f,\"mb_per_s\":%.1f,"
	       "\"latency_us\":{\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
	       "\"p999\":%.1f,\"max\":%.1f},",
	       ok ? "true" : "false", o->count, o->size, o->window, o->clients, s->sent,
	       s->received, s->lost, s->corrupt, s->late, secs,
	       secs > 0 ? (double)s->received / secs : 0.0,
	       secs > 0 ? (double)s->received * o->size / secs / 1e6 : 0.0,
	       s->lat_n ? s->lat_sum / (double)s->lat_n * 1e6 : 0.0, udp_percentile(s, 0.50) * 1e6,
	       udp_percentile(s, 0.90) * 1e6, udp_percentile(s, 0.99) * 1e6,
	       udp_percentile(s, 0.999) * 1e6, s->lat_max * 1e6);
	printf("\"verified\":%s,\"cpu_user\":%.3f,\"cpu_sys\":%.3f,\"t_start\":%.6f,"
	       "\"t_last_rx\":%.6f,\"t_end\":%.6f",
	       o->verify && s->corrupt == 0 ? "true" : "false", s->cpu_user, s->cpu_sys, s->t_start,
	       s->t_last_rx, s->t_end);
	if (s->err[0]) {
		printf(",\"error\":");
		json_string(stdout, s->err);
	}
	printf("}\n");
	fflush(stdout);
	if (s->err[0])
		fprintf(stderr, "ssload: %s\n", s->err);
	else if (s->lost)
		fprintf(stderr, "ssload: %" PRIu64 " of %" PRIu64 " datagrams lost\n", s->lost,
			o->count);
}

/* ---------------------------------------------------------------- command lines */

static void help(FILE *f)
{
	fputs(
	    "usage:\n"
	    "  ssload sink --listen ADDR:PORT [--echo | --download BYTES] [--no-verify]\n"
	    "              [--quit-after N] [--conn-log] [--timeout SECONDS] [--rcvlowat BYTES]\n"
	    "              [--congestion NAME]\n"
	    "      TCP target. Default: read and discard, checking the pattern. --echo writes\n"
	    "      every byte back. --download writes BYTES of the pattern to each connection,\n"
	    "      then half-closes. Port 0 picks a free port. Prints {\"event\":\"listening\"}\n"
	    "      first, one line per connection with --conn-log, and a summary when it exits\n"
	    "      (after N connections with --quit-after, on SIGTERM/SIGINT, or at --timeout);\n"
	    "      SIGUSR1 prints a summary and goes on.\n"
	    "  ssload send --connect ADDR:PORT --bytes N [--conns K] [--echo | --download]\n"
	    "              [--no-verify] [--timeout SECONDS] [--rcvlowat BYTES] [--congestion "
	    "NAME]\n"
	    "      Moves N bytes in all over K parallel connections. Default (upload): send,\n"
	    "      half-close, wait for the peer to close. --echo: send and read back the same\n"
	    "      bytes from an --echo sink, then close. --download (or --recv): send nothing,\n"
	    "      read until EOF, expecting N/K bytes per connection from a --download sink.\n"
	    "  ssload rr --connect ADDR:PORT --count N --size S [--conns K] [--no-verify]\n"
	    "              [--timeout SECONDS] [--congestion NAME]\n"
	    "      N short connections, K at a time: connect, send S bytes, read the S bytes\n"
	    "      answer (from an --echo sink), close. Reports connections/s and latency.\n"
	    "  ssload udp-echo --listen ADDR:PORT [--timeout SECONDS]\n"
	    "      UDP target: answers every datagram with itself, to its sender. Prints\n"
	    "      {\"event\":\"listening\"} first and a summary (datagrams in and out) when it\n"
	    "      exits, on SIGTERM/SIGINT or at --timeout; SIGUSR1 prints one and goes on.\n"
	    "      --drop-every N and --corrupt-every N (leave unanswered, or alter, every Nth\n"
	    "      datagram) exist to test the sender.\n"
	    "  ssload udp-send --connect ADDR:PORT [--count N] [--size S] [--window W]\n"
	    "              [--clients K] [--burst B] [--loss-after SECONDS] [--no-verify]\n"
	    "              [--timeout SECONDS]\n"
	    "      Sends N datagrams (default 10000) of S bytes (16..65507, default 1200) to a\n"
	    "      udp-echo, from K sockets (default 1) sharing N, each with at most W datagrams\n"
	    "      in flight (default 32), and checks every answer. A datagram not back after\n"
	    "      --loss-after (default 1 s) is lost. Reports datagrams/s and round-trip\n"
	    "      latency; fails (status 1) if any datagram was lost or came back altered.\n"
	    "      --burst B sends B datagrams at once in one sendmmsg, and only once the\n"
	    "      window has room for all B (QUIC's shape: --burst 16 --window 16).\n"
	    "  ssload selftest [--bytes N] [--udp-count N]\n"
	    "      Runs each mode against an in-process sink or echo over loopback and checks the\n"
	    "      counts.\n"
	    "  --rcvlowat BYTES (sink, send): SO_RCVLOWAT of the receiving sockets; default 64K\n"
	    "      for bulk receivers (discarding sink, send --download), 0 otherwise.\n"
	    "  --congestion NAME (sink, send, rr): TCP congestion control of the tool's sockets\n"
	    "      (TCP_CONGESTION), e.g. cubic; default the system's.\n"
	    "Sizes take K, M, G, T suffixes (binary: 1G = 2^30). Output: JSON, one object a line.\n"
	    "Exit status: 0 success, 1 failed or corrupted transfer or timeout, 2 usage error.\n",
	    f);
}

enum {
	O_LISTEN = 256,
	O_CONNECT,
	O_BYTES,
	O_CONNS,
	O_ECHO,
	O_DOWNLOAD,
	O_NO_VERIFY,
	O_QUIT_AFTER,
	O_CONN_LOG,
	O_TIMEOUT,
	O_COUNT,
	O_SIZE,
	O_SKEW,
	O_RCVLOWAT,
	O_CONGESTION,
	O_WINDOW,
	O_CLIENTS,
	O_BURST,
	O_LOSS_AFTER,
	O_DROP_EVERY,
	O_CORRUPT_EVERY,
	O_UDP_COUNT,
};

static int opt_rcvlowat(const char *arg)
{
	uint64_t v = opt_size("--rcvlowat", arg);
	if (v > IO_CHUNK)
		usage_error("--rcvlowat must be at most %u", IO_CHUNK);
	return (int)v;
}

static int cmd_sink(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"listen", required_argument, NULL, O_LISTEN},
	    {"echo", no_argument, NULL, O_ECHO},
	    {"download", required_argument, NULL, O_DOWNLOAD},
	    {"no-verify", no_argument, NULL, O_NO_VERIFY},
	    {"quit-after", required_argument, NULL, O_QUIT_AFTER},
	    {"conn-log", no_argument, NULL, O_CONN_LOG},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"rcvlowat", required_argument, NULL, O_RCVLOWAT},
	    {"congestion", required_argument, NULL, O_CONGESTION},
	    {NULL, 0, NULL, 0},
	};
	struct sink_opts so = {.verify = true};
	struct sockaddr_storage ss;
	socklen_t len = 0;
	const char *listen_arg = NULL;
	int c, lfd;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_LISTEN:
			listen_arg = optarg;
			if (!parse_addr(optarg, true, &ss, &len))
				usage_error("--listen: not an address: '%s'", optarg);
			break;
		case O_ECHO:
			so.echo = true;
			break;
		case O_DOWNLOAD:
			so.download = opt_size("--download", optarg);
			break;
		case O_NO_VERIFY:
			so.verify = false;
			break;
		case O_QUIT_AFTER:
			so.quit_after = opt_size("--quit-after", optarg);
			break;
		case O_CONN_LOG:
			so.conn_log = true;
			break;
		case O_TIMEOUT:
			so.timeout = opt_seconds("--timeout", optarg);
			break;
		case O_RCVLOWAT:
			rcvlowat = opt_rcvlowat(optarg);
			break;
		case O_CONGESTION:
			congestion = optarg;
			break;
		default:
			usage_error("sink: bad option");
		}
	}
	if (optind < argc)
		usage_error("sink: unexpected argument '%s'", argv[optind]);
	if (!listen_arg)
		usage_error("sink: --listen is required");
	if (so.echo && so.download)
		usage_error("sink: --echo and --download exclude each other");
	check_congestion();
	if (rcvlowat < 0)
		rcvlowat = so.echo || so.download ? 0 : BULK_RCVLOWAT;

	lfd = listen_on(&ss, len);
	printf("{\"event\":\"listening\",\"listen\":");
	json_string(stdout, listen_arg);
	printf(",\"port\":%d}\n", local_port(lfd));
	fflush(stdout);
	return sink_run(lfd, &so);
}

static int cmd_client(int argc, char **argv, bool rr)
{
	static const struct option send_opts[] = {
	    {"connect", required_argument, NULL, O_CONNECT},
	    {"bytes", required_argument, NULL, O_BYTES},
	    {"conns", required_argument, NULL, O_CONNS},
	    {"echo", no_argument, NULL, O_ECHO},
	    {"download", no_argument, NULL, O_DOWNLOAD},
	    {"recv", no_argument, NULL, O_DOWNLOAD},
	    {"no-verify", no_argument, NULL, O_NO_VERIFY},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"skew", required_argument, NULL, O_SKEW},
	    {"rcvlowat", required_argument, NULL, O_RCVLOWAT},
	    {"congestion", required_argument, NULL, O_CONGESTION},
	    {NULL, 0, NULL, 0},
	};
	static const struct option rr_opts[] = {
	    {"connect", required_argument, NULL, O_CONNECT},
	    {"count", required_argument, NULL, O_COUNT},
	    {"size", required_argument, NULL, O_SIZE},
	    {"conns", required_argument, NULL, O_CONNS},
	    {"no-verify", no_argument, NULL, O_NO_VERIFY},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"congestion", required_argument, NULL, O_CONGESTION},
	    {NULL, 0, NULL, 0},
	};
	struct client_opts co = {.mode = rr ? M_RR : M_UPLOAD, .verify = true, .timeout = 600};
	struct client c;
	bool have_addr = false, have_bytes = false;
	uint64_t v;
	int opt;

	if (rr) {
		co.bytes = 512;
		co.count = 1000;
	}
	while ((opt = getopt_long(argc, argv, "", rr ? rr_opts : send_opts, NULL)) != -1) {
		switch (opt) {
		case O_CONNECT:
			if (!parse_addr(optarg, false, &co.addr, &co.alen))
				usage_error("--connect: not an address: '%s'", optarg);
			have_addr = true;
			break;
		case O_BYTES:
			co.bytes = opt_size("--bytes", optarg);
			have_bytes = true;
			break;
		case O_SIZE:
			co.bytes = opt_size("--size", optarg);
			if (co.bytes == 0 || co.bytes > IO_CHUNK)
				usage_error("--size must be 1..%u", IO_CHUNK);
			break;
		case O_COUNT:
			co.count = opt_size("--count", optarg);
			break;
		case O_CONNS:
			v = opt_size("--conns", optarg);
			if (v == 0 || v > 100000)
				usage_error("--conns must be 1..100000");
			co.conns = (unsigned)v;
			break;
		case O_ECHO:
			co.mode = M_ECHO;
			break;
		case O_DOWNLOAD:
			co.mode = M_DOWNLOAD;
			break;
		case O_NO_VERIFY:
			co.verify = false;
			break;
		case O_TIMEOUT:
			co.timeout = opt_seconds("--timeout", optarg);
			break;
		case O_SKEW:
			co.skew = opt_size("--skew", optarg);
			break;
		case O_RCVLOWAT:
			rcvlowat = opt_rcvlowat(optarg);
			break;
		case O_CONGESTION:
			congestion = optarg;
			break;
		default:
			usage_error("%s: bad option", rr ? "rr" : "send");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!have_addr)
		usage_error("--connect is required");
	if (!co.conns)
		co.conns = 1;
	if (!rr && !have_bytes)
		usage_error("send: --bytes is required");
	if (co.mode == M_DOWNLOAD && co.bytes % co.conns)
		usage_error("send --download: --bytes must be a multiple of --conns "
			    "(the sink sends the same amount on each connection)");
	check_congestion();
	if (rcvlowat < 0)
		rcvlowat = co.mode == M_DOWNLOAD ? BULK_RCVLOWAT : 0;
	client_run(&co, &c);
	client_report(&c);
	free(c.lat);
	return client_ok(&c) ? EXIT_OK : EXIT_FAILED;
}

static int cmd_udp_echo(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"listen", required_argument, NULL, O_LISTEN},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"drop-every", required_argument, NULL, O_DROP_EVERY},
	    {"corrupt-every", required_argument, NULL, O_CORRUPT_EVERY},
	    {NULL, 0, NULL, 0},
	};
	struct udp_echo_opts eo = {0};
	struct sockaddr_storage ss;
	socklen_t len = 0;
	const char *listen_arg = NULL;
	int c, fd;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_LISTEN:
			listen_arg = optarg;
			if (!parse_addr(optarg, true, &ss, &len))
				usage_error("--listen: not an address: '%s'", optarg);
			break;
		case O_TIMEOUT:
			eo.timeout = opt_seconds("--timeout", optarg);
			break;
		case O_DROP_EVERY:
			eo.drop_every = opt_size("--drop-every", optarg);
			break;
		case O_CORRUPT_EVERY:
			eo.corrupt_every = opt_size("--corrupt-every", optarg);
			break;
		default:
			usage_error("udp-echo: bad option");
		}
	}
	if (optind < argc)
		usage_error("udp-echo: unexpected argument '%s'", argv[optind]);
	if (!listen_arg)
		usage_error("udp-echo: --listen is required");

	fd = udp_bind(&ss, len);
	printf("{\"event\":\"listening\",\"listen\":");
	json_string(stdout, listen_arg);
	printf(",\"port\":%d}\n", local_port(fd));
	fflush(stdout);
	return udp_echo_run(fd, &eo);
}

static int cmd_udp_send(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"connect", required_argument, NULL, O_CONNECT},
	    {"count", required_argument, NULL, O_COUNT},
	    {"size", required_argument, NULL, O_SIZE},
	    {"window", required_argument, NULL, O_WINDOW},
	    {"clients", required_argument, NULL, O_CLIENTS},
	    {"burst", required_argument, NULL, O_BURST},
	    {"no-verify", no_argument, NULL, O_NO_VERIFY},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"loss-after", required_argument, NULL, O_LOSS_AFTER},
	    {NULL, 0, NULL, 0},
	};
	struct udp_send_opts uo = {
	    .count = 10000,
	    .size = 1200,
	    .window = 32,
	    .burst = 1,
	    .clients = 1,
	    .verify = true,
	    .timeout = 600,
	    .loss_after = 1,
	};
	struct udp_sender s;
	bool have_addr = false;
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case O_CONNECT:
			if (!parse_addr(optarg, false, &uo.addr, &uo.alen))
				usage_error("--connect: not an address: '%s'", optarg);
			have_addr = true;
			break;
		case O_COUNT:
			uo.count = opt_size("--count", optarg);
			break;
		case O_SIZE:
			v = opt_size("--size", optarg);
			if (v < UDP_HDR || v > UDP_MAX)
				usage_error("--size must be %u..%u", UDP_HDR, UDP_MAX);
			uo.size = (uint32_t)v;
			break;
		case O_WINDOW:
			v = opt_size("--window", optarg);
			if (v == 0 || v > 65536)
				usage_error("--window must be 1..65536");
			uo.window = (uint32_t)v;
			break;
		case O_CLIENTS:
			v = opt_size("--clients", optarg);
			if (v == 0 || v > 1024)
				usage_error("--clients must be 1..1024");
			uo.clients = (uint32_t)v;
			break;
		case O_BURST:
			v = opt_size("--burst", optarg);
			if (v == 0 || v > UDP_BATCH)
				usage_error("--burst must be 1..%d", UDP_BATCH);
			uo.burst = (uint32_t)v;
			break;
		case O_NO_VERIFY:
			uo.verify = false;
			break;
		case O_TIMEOUT:
			uo.timeout = opt_seconds("--timeout", optarg);
			break;
		case O_LOSS_AFTER:
			uo.loss_after = opt_seconds("--loss-after", optarg);
			if (uo.loss_after <= 0)
				usage_error("--loss-after must be more than 0");
			break;
		default:
			usage_error("udp-send: bad option");
		}
	}
	if (optind < argc)
		usage_error("udp-send: unexpected argument '%s'", argv[optind]);
	if (!have_addr)
		usage_error("udp-send: --connect is required");
	if (uo.burst > uo.window)
		usage_error("udp-send: --burst %u is more than --window %u", uo.burst, uo.window);
	udp_send_run(&uo, &s);
	udp_send_report(&s);
	return udp_send_ok(&s) ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------- selftest */

static bool json_u64(const char *s, const char *key, uint64_t *out)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	p = strstr(s, pat);
	if (!p)
		return false;
	*out = strtoull(p + strlen(pat), NULL, 10);
	return true;
}

struct selftest_case {
	const char *name;
	struct sink_opts sink;
	struct client_opts client;
	uint64_t sink_rx, sink_tx; /* expected sink totals */
	uint64_t sink_bad;         /* expected corrupted connections at the sink */
	uint64_t client_rx;        /* expected bytes the client received */
};

static bool selftest_one(const struct selftest_case *t)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct client c;
	struct client_opts co = t->client;
	char out[4096];
	size_t used = 0;
	ssize_t r;
	int pfd[2], status, lfd;
	uint64_t rx = NONE, tx = NONE, bad = NONE, conns = NONE;
	pid_t pid;
	bool ok = true;

	if (!parse_addr("127.0.0.1:0", true, &ss, &len))
		die("selftest: address");
	lfd = listen_on(&ss, len);
	if (!parse_addr("127.0.0.1:0", false, &co.addr, &co.alen))
		die("selftest: address");
	((struct sockaddr_in *)&co.addr)->sin_port = htons((uint16_t)local_port(lfd));
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDOUT_FILENO);
		rcvlowat = t->sink.echo || t->sink.download ? 0 : BULK_RCVLOWAT;
		_exit(sink_run(lfd, &t->sink));
	}
	close(pfd[1]);
	close(lfd);
	rcvlowat = co.mode == M_DOWNLOAD ? BULK_RCVLOWAT : 0;

	client_run(&co, &c);
	while (used < sizeof out - 1 &&
	       (r = read(pfd[0], out + used, sizeof out - 1 - used)) != 0) {
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			used += (size_t)r;
	}
	out[used] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);

	const char *summary = strstr(out, "\"summary\"");
	if (!summary || !json_u64(summary, "rx", &rx) || !json_u64(summary, "tx", &tx) ||
	    !json_u64(summary, "bad_conns", &bad) || !json_u64(summary, "conns", &conns)) {
		printf("selftest %s: FAILED: no summary from the sink\n", t->name);
		ok = false;
	}
	if (ok &&
	    (rx != t->sink_rx || tx != t->sink_tx || bad != t->sink_bad || conns != c.total)) {
		printf("selftest %s: FAILED: sink rx %" PRIu64 " (want %" PRIu64 "), tx %" PRIu64
		       " (want %" PRIu64 "), bad %" PRIu64 " (want %" PRIu64 "), conns %" PRIu64
		       " (want %" PRIu64 ")\n",
		       t->name, rx, t->sink_rx, tx, t->sink_tx, bad, t->sink_bad, conns, c.total);
		ok = false;
	}
	if (ok && (!client_ok(&c) || c.received != t->client_rx)) {
		printf("selftest %s: FAILED: client ok=%d received %" PRIu64 " (want %" PRIu64
		       ") %s\n",
		       t->name, client_ok(&c), c.received, t->client_rx, c.err);
		ok = false;
	}
	if (ok && WIFEXITED(status) && (WEXITSTATUS(status) == 0) != (t->sink_bad == 0)) {
		printf("selftest %s: FAILED: sink exit status %d\n", t->name, WEXITSTATUS(status));
		ok = false;
	}
	if (ok)
		printf("selftest %-14s ok  %10" PRIu64 " bytes up, %10" PRIu64 " down, %" PRIu64
		       " conns, %.3f s\n",
		       t->name, c.sent, c.received, c.total, c.t_end - c.t_start);
	free(c.lat);
	fflush(stdout);
	return ok;
}

struct udp_selftest_case {
	const char *name;
	struct udp_echo_opts echo;
	struct udp_send_opts send;
};

/* Runs one udp-send against an in-process udp-echo and checks both sides' counts against what the
 * echo was told to drop or alter. */
static bool udp_selftest_one(const struct udp_selftest_case *t)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct udp_sender s;
	struct udp_send_opts so = t->send;
	sigset_t block, old;
	char out[4096];
	size_t used = 0;
	ssize_t r;
	int pfd[2], status, fd;
	uint64_t rx = NONE, tx = NONE, dropped = NONE, corrupted = NONE;
	uint64_t want_drop = t->echo.drop_every ? so.count / t->echo.drop_every : 0;
	uint64_t want_bad = t->echo.corrupt_every ? so.count / t->echo.corrupt_every : 0;
	pid_t pid;
	bool ok = true;

	if (!parse_addr("127.0.0.1:0", true, &ss, &len))
		die("selftest: address");
	fd = udp_bind(&ss, len);
	so.addr = ss;
	so.alen = len;
	((struct sockaddr_in *)&so.addr)->sin_port = htons((uint16_t)local_port(fd));
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	/* the echo ends at SIGTERM: have it blocked before the child can receive it */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDOUT_FILENO);
		_exit(udp_echo_run(fd, &t->echo));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pfd[1]);
	close(fd);

	udp_send_run(&so, &s);
	kill(pid, SIGTERM);
	while (used < sizeof out - 1 &&
	       (r = read(pfd[0], out + used, sizeof out - 1 - used)) != 0) {
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			used += (size_t)r;
	}
	out[used] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);

	const char *summary = strstr(out, "\"summary\"");
	if (!summary || !json_u64(summary, "rx", &rx) || !json_u64(summary, "tx", &tx) ||
	    !json_u64(summary, "dropped", &dropped) ||
	    !json_u64(summary, "corrupted", &corrupted)) {
		printf("selftest %s: FAILED: no summary from the echo\n", t->name);
		ok = false;
	}
	if (ok && (rx != so.count || tx != so.count - want_drop || dropped != want_drop ||
		   corrupted != want_bad)) {
		printf("selftest %s: FAILED: echo rx %" PRIu64 " tx %" PRIu64 " dropped %" PRIu64
		       " corrupted %" PRIu64 " (want %" PRIu64 ", %" PRIu64 ", %" PRIu64
		       ", %" PRIu64 ")\n",
		       t->name, rx, tx, dropped, corrupted, so.count, so.count - want_drop,
		       want_drop, want_bad);
		ok = false;
	}
	if (ok && (s.sent != so.count || s.received != so.count - want_drop - want_bad ||
		   s.lost != want_drop || s.corrupt != want_bad || s.late || s.timed_out ||
		   s.fatal || udp_send_ok(&s) != (want_drop + want_bad == 0))) {
		printf("selftest %s: FAILED: sent %" PRIu64 " received %" PRIu64 " lost %" PRIu64
		       " corrupt %" PRIu64 " late %" PRIu64 " (want %" PRIu64 ", %" PRIu64
		       ", %" PRIu64 ", %" PRIu64 ", 0) %s\n",
		       t->name, s.sent, s.received, s.lost, s.corrupt, s.late, so.count,
		       so.count - want_drop - want_bad, want_drop, want_bad, s.err);
		ok = false;
	}
	if (ok && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		printf("selftest %s: FAILED: echo exit status %d\n", t->name, status);
		ok = false;
	}
	if (ok)
		printf("selftest %-14s ok  %10" PRIu64 " datagrams of %" PRIu32 " bytes, %" PRIu64
		       " lost, %" PRIu64 " altered, %.3f s\n",
		       t->name, s.sent, so.size, s.lost, s.corrupt, s.t_end - s.t_start);
	fflush(stdout);
	return ok;
}

static int cmd_selftest(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"bytes", required_argument, NULL, O_BYTES},
	    {"udp-count", required_argument, NULL, O_UDP_COUNT},
	    {NULL, 0, NULL, 0},
	};
	uint64_t n = 8u << 20, udp_n = 20000;
	int c, failed = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == O_BYTES)
			n = opt_size("--bytes", optarg);
		else if (c == O_UDP_COUNT)
			udp_n = opt_size("--udp-count", optarg);
		else
			usage_error("selftest: bad option");
	}
	if (n < 4)
		usage_error("selftest: --bytes must be at least 4");
	if (udp_n < 1000)
		usage_error("selftest: --udp-count must be at least 1000");
	n &= ~(uint64_t)1; /* the download case splits it over two connections */

	const struct sink_opts discard = {.verify = true, .timeout = 60};
	const struct sink_opts echo = {.echo = true, .verify = true, .timeout = 60};
	const struct sink_opts download = {.download = n / 2, .verify = true, .timeout = 60};
	const struct client_opts base = {.verify = true, .timeout = 60, .conns = 1};
	struct selftest_case cases[6];
	size_t i = 0;

	cases[i] = (struct selftest_case){"upload", discard, base, n, 0, 0, 0};
	cases[i].client.bytes = n;
	i++;
	cases[i] = (struct selftest_case){"upload-4", discard, base, n + 3, 0, 0, 0};
	cases[i].client.bytes = n + 3; /* uneven split */
	cases[i].client.conns = 4;
	i++;
	cases[i] = (struct selftest_case){"echo-2", echo, base, n, n, 0, n};
	cases[i].client.mode = M_ECHO;
	cases[i].client.bytes = n;
	cases[i].client.conns = 2;
	i++;
	cases[i] = (struct selftest_case){"download-2", download, base, 0, n, 0, n};
	cases[i].client.mode = M_DOWNLOAD;
	cases[i].client.bytes = n;
	cases[i].client.conns = 2;
	i++;
	cases[i] = (struct selftest_case){"rr", echo, base, 300 * 1000, 300 * 1000, 0, 300 * 1000};
	cases[i].client.mode = M_RR;
	cases[i].client.bytes = 1000;
	cases[i].client.count = 300;
	cases[i].client.conns = 4;
	i++;
	/* a stream shifted by one byte must be caught by the sink */
	cases[i] = (struct selftest_case){"detects-skew", discard, base, 1u << 20, 0, 1, 0};
	cases[i].client.bytes = 1u << 20;
	cases[i].client.skew = 1;
	i++;

	for (size_t j = 0; j < i; j++) {
		if (!cases[j].sink.quit_after)
			cases[j].sink.quit_after = cases[j].client.mode == M_RR
						       ? cases[j].client.count
						       : cases[j].client.conns;
		if (!selftest_one(&cases[j]))
			failed++;
	}

	const struct udp_echo_opts uecho = {.timeout = 60};
	const struct udp_send_opts ubase = {.size = 1200,
					    .window = 32,
					    .clients = 1,
					    .verify = true,
					    .timeout = 60,
					    .loss_after = 1};
	struct udp_selftest_case ucases[5];

	i = 0;
	ucases[i] = (struct udp_selftest_case){"udp", uecho, ubase};
	ucases[i].send.count = udp_n;
	i++;
	ucases[i] = (struct udp_selftest_case){"udp-3", uecho, ubase};
	ucases[i].send.count = udp_n + 2; /* uneven split */
	ucases[i].send.clients = 3;
	ucases[i].send.size = UDP_HDR;
	ucases[i].send.window = 8;
	i++;
	ucases[i] = (struct udp_selftest_case){"udp-64k", uecho, ubase};
	ucases[i].send.count = 500;
	ucases[i].send.size = UDP_MAX;
	ucases[i].send.window = 4;
	i++;
	/* every 250th datagram left unanswered must be counted lost, and nothing else */
	ucases[i] = (struct udp_selftest_case){"udp-loss", uecho, ubase};
	ucases[i].echo.drop_every = 250;
	ucases[i].send.count = 2500;
	ucases[i].send.size = 100;
	ucases[i].send.loss_after = 0.05;
	i++;
	/* one altered byte in every 500th answer must be caught */
	ucases[i] = (struct udp_selftest_case){"udp-altered", uecho, ubase};
	ucases[i].echo.corrupt_every = 500;
	ucases[i].send.count = 2500;
	i++;
	for (size_t j = 0; j < i; j++)
		if (!udp_selftest_one(&ucases[j]))
			failed++;
	printf("selftest: %s\n", failed ? "FAILED" : "all ok");
	return failed ? EXIT_FAILED : EXIT_OK;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	pattern_init();
	if (!(scratch = malloc(IO_CHUNK)))
		die("out of memory");
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		help(stdout);
		return EXIT_OK;
	}
	/* subcommand options start at argv[1] for getopt */
	if (!strcmp(cmd, "sink"))
		return cmd_sink(argc - 1, argv + 1);
	if (!strcmp(cmd, "send"))
		return cmd_client(argc - 1, argv + 1, false);
	if (!strcmp(cmd, "rr"))
		return cmd_client(argc - 1, argv + 1, true);
	if (!strcmp(cmd, "udp-echo"))
		return cmd_udp_echo(argc - 1, argv + 1);
	if (!strcmp(cmd, "udp-send"))
		return cmd_udp_send(argc - 1, argv + 1);
	if (!strcmp(cmd, "selftest"))
		return cmd_selftest(argc - 1, argv + 1);
	help(stderr);
	return EXIT_USAGE;
}
