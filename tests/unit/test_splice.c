/* SPDX-License-Identifier: MIT */
/* splice(2) forwarding of one relay direction, over real loopback TCP
 * connections: A <-> [ra relay rb] <-> B, one ss_splice_t per direction,
 * driven the way the relay pump drives it (poll, move, copy when told).
 * Covers exact delivery both ways, empty and one-byte streams, half-close,
 * a slow reader, every fallback errno on either splice (also with bytes
 * already in the pipe), errors after the first delivered byte, a pipe that
 * cannot be made, urgent data, resets, and when splicing is allowed. */
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
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/splice.h"

#define RUN_LIMIT_MS 10000 /* any run longer than this is a stall */
#define CALLS_PER_MOVE 8   /* "a few splice calls" per ss_splice_move */

/* ---- injected system calls ------------------------------------------------
 * The ops table has no context pointer, so the faults to inject live here. */

typedef struct fault {
	int src;            /* splices reading this fd are source splices */
	int src_fail_after; /* fail the source splice that follows this many good ones; -1 never */
	int dst_fail_after; /* the same for sink splices */
	int err;            /* errno of the injected failure */
	int pipe_err;       /* ops.pipe fails with this errno when set */
	int pipe_cap;       /* ops.pipe_size shrinks the pipe to this when set */
	int pipe_max;       /* ops.pipe_size refuses sizes over this when set */
	int src_cap;        /* source splices move at most this much when set, as when
			       small pieces use up the pipe's slots */
	int src_ok, dst_ok; /* successful splices so far */
	int calls;          /* every splice call */
	int pipe_fds[2];    /* the last pipe made */
} fault_t;

static fault_t fault;

static void fault_reset(int src)
{
	fault =
	    (fault_t){.src = src, .src_fail_after = -1, .dst_fail_after = -1, .pipe_fds = {-1, -1}};
}

static ssize_t test_splice(int fd_in, int fd_out, size_t len, unsigned int flags)
{
	bool from_src = fd_in == fault.src;
	int *ok = from_src ? &fault.src_ok : &fault.dst_ok;
	int *after = from_src ? &fault.src_fail_after : &fault.dst_fail_after;
	ssize_t n;

	fault.calls++;
	if (from_src && fault.src_cap && len > (size_t)fault.src_cap)
		len = (size_t)fault.src_cap;
	if (*after >= 0 && *ok == *after) {
		*after = -1; /* one shot */
		errno = fault.err;
		return -1;
	}
	n = ss_splice_sys.splice(fd_in, fd_out, len, flags);
	if (n > 0)
		(*ok)++;
	return n;
}

static int test_pipe(int fds[2])
{
	if (fault.pipe_err) {
		errno = fault.pipe_err;
		return -1;
	}
	if (ss_splice_sys.pipe(fds) < 0)
		return -1;
	fault.pipe_fds[0] = fds[0];
	fault.pipe_fds[1] = fds[1];
	return 0;
}

static int test_pipe_size(int fd, int want)
{
	if (fault.pipe_max && want > fault.pipe_max) {
		/* Over the quota: refused, the pipe keeps what it has. */
		return fcntl(fd, F_GETPIPE_SZ);
	}
	if (fault.pipe_cap) {
		/* What a user whose pipe quota is spent gets: a small pipe. */
		assert_true(fcntl(fd, F_SETPIPE_SZ, fault.pipe_cap) >= 0);
		return fcntl(fd, F_GETPIPE_SZ);
	}
	return ss_splice_sys.pipe_size(fd, want);
}

static const ss_splice_ops_t test_ops = {
    .splice = test_splice,
    .pipe = test_pipe,
    .pipe_size = test_pipe_size,
};

/* ---- sockets and bytes ---------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static void set_bufs(int fd, int size)
{
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
}

/* A connected pair of non-blocking loopback TCP sockets; bufsz > 0 makes
 * both ends' socket buffers that small. */
static void tcp_pair(int *x, int *y, int bufsz)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(l >= 0);
	if (bufsz)
		set_bufs(l, bufsz);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	*x = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*x >= 0);
	if (bufsz)
		set_bufs(*x, bufsz);
	assert_int_equal(connect(*x, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*y = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	assert_true(*y >= 0);
	close(l);
	set_nonblock(*x);
}

static uint8_t *payload(size_t n, uint32_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u | 1;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)(x >> 24);
	}
	return p;
}

static void wait_fd(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};

	assert_int_equal(poll(&p, 1, RUN_LIMIT_MS), 1);
}

/* Waits until fd has at least n bytes to read, so a test can know what the
 * relay's next splice will find. */
static void wait_queued(int fd, int n)
{
	int64_t end = now_ms() + RUN_LIMIT_MS;
	int have = 0;

	while (now_ms() < end) {
		assert_int_equal(ioctl(fd, FIONREAD, &have), 0);
		if (have >= n)
			return;
		usleep(1000);
	}
	fail_msg("only %d of %d bytes arrived", have, n);
}

static void reset_close(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd);
}

/* ---- the caller: one relay direction -------------------------------------- */

static unsigned long tick; /* loop iterations, to order events */

typedef struct dir {
	ss_splice_t sp;
	int src, dst;
	uint8_t buf[65536]; /* the copy path's buffer */
	size_t pend_off, pend_len;
	bool copy; /* read()/write() since a fallback */
	bool done;
	int err;
	int wait_fd; /* what the direction waits for; -1 when it can go on */
	short wait_ev;
	size_t spliced;        /* bytes ss_splice_move reported */
	size_t copied;         /* bytes the copy path wrote */
	size_t drained;        /* bytes ss_splice_drain gave back */
	unsigned urgent_reads; /* SS_SPLICE_COPY with s->off false */
	long in_pipe_at_off;   /* in_pipe when the direction fell back, -1 before */
	int max_calls;         /* most splice calls in one move (counting ops only) */
	unsigned long done_at; /* tick the direction ended */
	unsigned seen[SS_SPLICE_ERROR + 1];
	ss_splice_result_t last;
} dir_t;

static void dir_init(dir_t *d, int src, int dst, const ss_splice_ops_t *ops)
{
	memset(d, 0, sizeof(*d));
	ss_splice_init(&d->sp, ops);
	d->src = src;
	d->dst = dst;
	d->wait_fd = -1;
	d->in_pipe_at_off = -1;
}

static void dir_end(dir_t *d, int err)
{
	d->err = err;
	d->done = true;
	d->done_at = tick;
}

static void dir_wait(dir_t *d, int fd, short ev)
{
	d->wait_fd = fd;
	d->wait_ev = ev;
}

/* Writes what the copy path holds; false until all of it is written. */
static bool dir_flush(dir_t *d)
{
	while (d->pend_len) {
		ssize_t n = write(d->dst, d->buf + d->pend_off, d->pend_len);

		if (n < 0) {
			if (errno == EAGAIN)
				dir_wait(d, d->dst, POLLOUT);
			else
				dir_end(d, errno);
			return false;
		}
		d->pend_off += (size_t)n;
		d->pend_len -= (size_t)n;
		d->copied += (size_t)n;
	}
	return true;
}

/* One read of the source, as the copy path does it. */
static void dir_read(dir_t *d)
{
	ssize_t n = read(d->src, d->buf, sizeof(d->buf));

	if (n > 0) {
		d->pend_off = 0;
		d->pend_len = (size_t)n;
	} else if (n == 0) {
		assert_int_equal(shutdown(d->dst, SHUT_WR), 0);
		dir_end(d, 0);
	} else if (errno == EAGAIN) {
		dir_wait(d, d->src, POLLIN);
	} else {
		dir_end(d, errno);
	}
}

static void dir_step(dir_t *d)
{
	size_t moved;
	int err, calls = fault.calls;
	ss_splice_result_t r;

	d->wait_fd = -1;
	if (d->done || !dir_flush(d))
		return;
	if (d->copy) {
		/* Pipe bytes first: they came from the source before anything
		 * a read would return now. */
		if (d->sp.in_pipe) {
			ssize_t n = ss_splice_drain(&d->sp, d->buf, sizeof(d->buf));

			assert_true(n > 0);
			d->pend_off = 0;
			d->pend_len = (size_t)n;
			d->drained += (size_t)n;
			return;
		}
		dir_read(d);
		return;
	}
	r = ss_splice_move(&d->sp, d->src, d->dst, &moved, &err);
	if (d->sp.ops == &test_ops && fault.calls - calls > d->max_calls)
		d->max_calls = fault.calls - calls;
	d->seen[r]++;
	d->last = r;
	d->spliced += moved;
	/* Bytes delivered before a failure, or before the source ran dry,
	 * still count; any other result that moved bytes would have been
	 * PROGRESS. */
	if (r != SS_SPLICE_PROGRESS && r != SS_SPLICE_ERROR && r != SS_SPLICE_WAIT_READ)
		assert_int_equal(moved, 0);
	switch (r) {
	case SS_SPLICE_PROGRESS:
		assert_true(moved > 0);
		return;
	case SS_SPLICE_WAIT_READ:
		assert_int_equal(d->sp.in_pipe, 0);
		dir_wait(d, d->src, POLLIN);
		return;
	case SS_SPLICE_WAIT_WRITE:
		assert_true(d->sp.in_pipe > 0);
		dir_wait(d, d->dst, POLLOUT);
		return;
	case SS_SPLICE_EOF:
		assert_int_equal(d->sp.in_pipe, 0);
		assert_int_equal(shutdown(d->dst, SHUT_WR), 0);
		dir_end(d, 0);
		return;
	case SS_SPLICE_COPY:
		if (d->sp.off) {
			d->copy = true;
			d->in_pipe_at_off = d->sp.in_pipe;
			return;
		}
		assert_int_equal(d->sp.in_pipe, 0);
		d->urgent_reads++;
		dir_read(d);
		return;
	case SS_SPLICE_ERROR:
		assert_true(err > 0);
		dir_end(d, err);
		return;
	}
	fail_msg("unknown result %d", (int)r);
}

/* ---- the two ends --------------------------------------------------------- */

typedef struct peer {
	int fd;
	const uint8_t *out;
	size_t out_len, out_off;
	bool shut; /* shutdown(SHUT_WR) once all is sent */
	bool shut_done;
	bool reply_after_eof; /* send nothing before reading EOF */
	uint8_t *in;
	size_t in_cap, in_len;
	bool in_eof;
	size_t read_max; /* bytes per read when > 0 */
	int pause_ms;    /* between two reads */
	int64_t next_read;
	unsigned long first_in_at; /* tick of the first byte in, 0 before */
	int err;
} peer_t;

static void peer_expect(peer_t *p, size_t n)
{
	p->in = malloc(n ? n : 1);
	assert_non_null(p->in);
	p->in_cap = n;
}

static bool peer_may_send(const peer_t *p)
{
	return p->fd >= 0 && !p->err && (!p->reply_after_eof || p->in_eof);
}

static void peer_step(peer_t *p, int64_t now)
{
	if (p->fd < 0 || p->err)
		return;
	while (peer_may_send(p) && p->out_off < p->out_len) {
		size_t left = p->out_len - p->out_off;
		ssize_t n = write(p->fd, p->out + p->out_off, left < 262144 ? left : 262144);

		if (n < 0) {
			if (errno != EAGAIN)
				p->err = errno;
			break;
		}
		p->out_off += (size_t)n;
	}
	if (peer_may_send(p) && p->shut && !p->shut_done && p->out_off == p->out_len) {
		assert_int_equal(shutdown(p->fd, SHUT_WR), 0);
		p->shut_done = true;
	}
	while (!p->in_eof && !p->err && now >= p->next_read) {
		size_t room = p->in_cap - p->in_len;
		uint8_t extra;
		ssize_t n;

		if (p->read_max && room > p->read_max)
			room = p->read_max;
		/* With no room left, a read of one byte tells EOF from excess. */
		n = room ? read(p->fd, p->in + p->in_len, room) : read(p->fd, &extra, 1);
		if (n < 0) {
			if (errno != EAGAIN)
				p->err = errno;
			break;
		}
		if (n == 0) {
			p->in_eof = true;
			break;
		}
		if (!room)
			fail_msg("more bytes than were sent");
		if (!p->first_in_at)
			p->first_in_at = tick;
		p->in_len += (size_t)n;
		if (p->pause_ms) {
			p->next_read = now + p->pause_ms;
			break;
		}
	}
}

/* ---- the rig: A <-> ra [relay] rb <-> B ------------------------------------ */

typedef struct rig {
	int a, ra, rb, b;
	dir_t ab, ba; /* ra -> rb and rb -> ra */
	peer_t pa, pb;
} rig_t;

/* ab uses ab_ops (fault injection is armed on ra), ba the real calls;
 * bufsz > 0 makes the B connection's socket buffers that small. */
static rig_t *rig_open(const ss_splice_ops_t *ab_ops, int bufsz)
{
	rig_t *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	tcp_pair(&r->a, &r->ra, 0);
	tcp_pair(&r->rb, &r->b, bufsz);
	fault_reset(r->ra);
	dir_init(&r->ab, r->ra, r->rb, ab_ops);
	dir_init(&r->ba, r->rb, r->ra, NULL);
	r->pa.fd = r->a;
	r->pb.fd = r->b;
	return r;
}

static void rig_close(rig_t *r)
{
	ss_splice_close(&r->ab.sp);
	ss_splice_close(&r->ba.sp);
	if (r->pa.fd >= 0)
		close(r->pa.fd);
	if (r->pb.fd >= 0)
		close(r->pb.fd);
	close(r->ra);
	close(r->rb);
	free(r->pa.in);
	free(r->pb.in);
	free(r);
}

static bool peer_finished(const peer_t *p)
{
	return p->fd < 0 || p->err || (p->in_eof && p->out_off == p->out_len);
}

/* Both directions ended (or one failed) and both ends read EOF. */
static bool rig_finished(const rig_t *r)
{
	if (r->ab.err || r->ba.err)
		return true;
	return r->ab.done && r->ba.done && peer_finished(&r->pa) && peer_finished(&r->pb);
}

static bool ab_done(const rig_t *r)
{
	return r->ab.done;
}

static size_t want_b_bytes; /* for b_has_enough */
static unsigned want_urgent_reads;

static bool b_has_enough(const rig_t *r)
{
	return (r->pb.in_len >= want_b_bytes && r->ab.urgent_reads >= want_urgent_reads) ||
	       r->ab.done;
}

static void add_poll(struct pollfd *fds, int *n, int fd, short ev)
{
	if (fd >= 0 && ev)
		fds[(*n)++] = (struct pollfd){.fd = fd, .events = ev};
}

static short peer_events(const peer_t *p, int64_t now)
{
	short ev = 0;

	if (p->fd < 0 || p->err)
		return 0;
	if (!p->in_eof && now >= p->next_read)
		ev |= POLLIN;
	if (peer_may_send(p) && p->out_off < p->out_len)
		ev |= POLLOUT;
	return ev;
}

/* Plays the event loop until done(r); fails the test after RUN_LIMIT_MS. */
static void rig_run(rig_t *r, bool (*done)(const rig_t *))
{
	int64_t end = now_ms() + RUN_LIMIT_MS;

	for (;;) {
		int64_t now = now_ms();
		struct pollfd fds[8];
		int n = 0, timeout = 10;
		dir_t *dirs[] = {&r->ab, &r->ba};
		peer_t *peers[] = {&r->pa, &r->pb};

		tick++;
		for (int i = 0; i < 2; i++)
			peer_step(peers[i], now);
		for (int i = 0; i < 2; i++)
			dir_step(dirs[i]);
		if (done(r))
			return;
		if (now > end)
			fail_msg("stalled: A->B %zu+%zu bytes (last %d), B->A %zu+%zu (last %d)",
				 r->ab.spliced, r->ab.copied, (int)r->ab.last, r->ba.spliced,
				 r->ba.copied, (int)r->ba.last);
		for (int i = 0; i < 2; i++) {
			add_poll(fds, &n, peers[i]->fd, peer_events(peers[i], now));
			if (peers[i]->fd >= 0 && !peers[i]->in_eof && peers[i]->next_read > now &&
			    peers[i]->next_read - now < timeout)
				timeout = (int)(peers[i]->next_read - now);
			if (dirs[i]->done)
				continue;
			if (dirs[i]->wait_fd < 0)
				timeout = 0;
			else
				add_poll(fds, &n, dirs[i]->wait_fd, dirs[i]->wait_ev);
		}
		assert_true(poll(fds, (nfds_t)n, timeout) >= 0);
	}
}

/* Runs until B has n bytes and A->B made that many one-read copies. */
static void rig_run_until_b(rig_t *r, size_t n, unsigned urgent_reads)
{
	want_b_bytes = n;
	want_urgent_reads = urgent_reads;
	rig_run(r, b_has_enough);
}

static void peer_send(peer_t *p, const uint8_t *data, size_t n, bool shut)
{
	p->out = data;
	p->out_len = n;
	p->out_off = 0;
	p->shut = shut;
}

/* ---- tests ---------------------------------------------------------------- */

/* Runs len_ab bytes A->B and len_ba bytes B->A at once and checks both. */
static rig_t *exchange(const ss_splice_ops_t *ops, size_t len_ab, size_t len_ba)
{
	rig_t *r = rig_open(ops, 0);
	uint8_t *x = payload(len_ab, 1), *y = payload(len_ba, 2);

	peer_send(&r->pa, x, len_ab, true);
	peer_send(&r->pb, y, len_ba, true);
	peer_expect(&r->pa, len_ba);
	peer_expect(&r->pb, len_ab);
	rig_run(r, rig_finished);
	assert_int_equal(r->ab.err, 0);
	assert_int_equal(r->ba.err, 0);
	assert_int_equal(r->pa.err, 0);
	assert_int_equal(r->pb.err, 0);
	assert_true(r->pa.in_eof && r->pb.in_eof);
	assert_int_equal(r->pb.in_len, len_ab);
	assert_int_equal(r->pa.in_len, len_ba);
	assert_true(memcmp(r->pb.in, x, len_ab) == 0);
	assert_true(memcmp(r->pa.in, y, len_ba) == 0);
	free(x);
	free(y);
	return r;
}

/* Both ways wholly through the pipe: no fallback, no copy. */
static void assert_all_spliced(const dir_t *d, size_t n)
{
	assert_false(d->sp.off);
	assert_int_equal(d->spliced, n);
	assert_int_equal(d->copied, 0);
	assert_int_equal(d->seen[SS_SPLICE_EOF], 1);
	assert_int_equal(d->seen[SS_SPLICE_COPY], 0);
	assert_int_equal(d->seen[SS_SPLICE_ERROR], 0);
}

static void test_both_directions_8mib(void **state)
{
	size_t n = 8u << 20;
	(void)state;

	rig_t *r = exchange(&test_ops, n, n);
	assert_all_spliced(&r->ab, n);
	assert_all_spliced(&r->ba, n);
	assert_true(r->ab.sp.delivered);
	assert_true(r->ab.sp.pipe_size >= SS_SPLICE_PIPE_MIN);
	/* Bounded work per call: the caller gets a turn every few splices. */
	assert_true(r->ab.max_calls > 0 && r->ab.max_calls <= CALLS_PER_MOVE);
	assert_true(r->ab.seen[SS_SPLICE_PROGRESS] >=
		    n / (CALLS_PER_MOVE / 2 * r->ab.sp.pipe_size));
	rig_close(r);
}

static void test_empty_stream(void **state)
{
	(void)state;

	rig_t *r = exchange(NULL, 0, 0);
	assert_all_spliced(&r->ab, 0);
	assert_all_spliced(&r->ba, 0);
	assert_false(r->ab.sp.delivered);
	rig_close(r);
}

static void test_one_byte(void **state)
{
	(void)state;

	rig_t *r = exchange(NULL, 1, 1);
	assert_all_spliced(&r->ab, 1);
	assert_all_spliced(&r->ba, 1);
	rig_close(r);
}

/* Each result where it belongs, and EOF remembered: the source is not
 * spliced again once it reported EOF. */
static void test_results_step_by_step(void **state)
{
	uint8_t *x = payload(1000, 3), got[1000];
	size_t moved;
	int err, calls;
	(void)state;

	rig_t *r = rig_open(&test_ops, 0);
	ss_splice_t *s = &r->ab.sp;

	assert_int_equal(s->pipe_r, -1);
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(moved, 0);
	assert_true(s->pipe_r >= 0 && s->pipe_w >= 0);
	assert_true(s->pipe_size >= SS_SPLICE_PIPE_MIN);

	/* Less than the pipe holds: the source was emptied, so the move ends
	 * with WAIT_READ after one splice in and one out, without a third
	 * that would only say EAGAIN. */
	assert_int_equal(write(r->a, x, 1000), 1000);
	wait_queued(r->ra, 1000);
	calls = fault.calls;
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(fault.calls - calls, 2);
	assert_int_equal(moved, 1000);
	assert_int_equal(s->in_pipe, 0);
	wait_queued(r->b, 1000);
	assert_int_equal(read(r->b, got, sizeof(got)), 1000);
	assert_memory_equal(got, x, 1000);
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(moved, 0);

	assert_int_equal(shutdown(r->a, SHUT_WR), 0);
	wait_fd(r->ra, POLLIN);
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_EOF);
	calls = fault.calls;
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_EOF);
	assert_int_equal(fault.calls, calls);
	assert_int_equal(moved, 0);

	ss_splice_close(s);
	ss_splice_close(s);
	assert_int_equal(s->pipe_r, -1);
	assert_int_equal(s->pipe_w, -1);
	free(x);
	rig_close(r);
}

/* A sends and half-closes; B reads to EOF, then answers; A reads the whole
 * answer after its own shutdown. */
static void test_half_close(void **state)
{
	size_t n_ab = 300000, n_ba = 200000;
	uint8_t *x = payload(n_ab, 4), *y = payload(n_ba, 5);
	(void)state;

	rig_t *r = rig_open(NULL, 0);
	peer_send(&r->pa, x, n_ab, true);
	peer_send(&r->pb, y, n_ba, true);
	r->pb.reply_after_eof = true;
	peer_expect(&r->pa, n_ba);
	peer_expect(&r->pb, n_ab);
	rig_run(r, rig_finished);
	assert_int_equal(r->ab.err, 0);
	assert_int_equal(r->ba.err, 0);
	assert_int_equal(r->pb.in_len, n_ab);
	assert_int_equal(r->pa.in_len, n_ba);
	assert_true(memcmp(r->pb.in, x, n_ab) == 0);
	assert_true(memcmp(r->pa.in, y, n_ba) == 0);
	assert_true(r->pa.in_eof);
	/* The answer crossed after A->B had ended with EOF. */
	assert_int_equal(r->ab.last, SS_SPLICE_EOF);
	assert_true(r->ab.done_at > 0 && r->ab.done_at <= r->pa.first_in_at);
	assert_true(r->ba.done_at > r->ab.done_at);
	assert_all_spliced(&r->ab, n_ab);
	assert_all_spliced(&r->ba, n_ba);
	free(x);
	free(y);
	rig_close(r);
}

/* B reads 4 KiB at a time with pauses through small socket buffers: the
 * pipe waits on the sink, nothing is lost, EOF still comes last. */
static void test_slow_reader(void **state)
{
	size_t n = 512 * 1024;
	uint8_t *x = payload(n, 6);
	(void)state;

	rig_t *r = rig_open(&test_ops, 4096);
	peer_send(&r->pa, x, n, true);
	peer_send(&r->pb, NULL, 0, true);
	peer_expect(&r->pb, n);
	peer_expect(&r->pa, 0);
	r->pb.read_max = 4096;
	r->pb.pause_ms = 1;
	rig_run(r, rig_finished);
	assert_int_equal(r->ab.err, 0);
	assert_int_equal(r->pb.in_len, n);
	assert_true(memcmp(r->pb.in, x, n) == 0);
	assert_true(r->ab.seen[SS_SPLICE_WAIT_WRITE] > 0);
	assert_all_spliced(&r->ab, n);
	assert_int_equal(r->ab.last, SS_SPLICE_EOF);
	free(x);
	rig_close(r);
}

/* Relays n bytes A->B with a fault armed and checks they all came through
 * in order; returns the rig for more checks. */
static rig_t *one_way(const fault_t *f, size_t n)
{
	uint8_t *x = payload(n, 7);
	rig_t *r = rig_open(&test_ops, 0);

	fault.src_fail_after = f->src_fail_after;
	fault.dst_fail_after = f->dst_fail_after;
	fault.err = f->err;
	fault.pipe_err = f->pipe_err;
	fault.pipe_cap = f->pipe_cap;
	fault.pipe_max = f->pipe_max;
	peer_send(&r->pa, x, n, true);
	peer_send(&r->pb, NULL, 0, true);
	peer_expect(&r->pb, n);
	peer_expect(&r->pa, 0);
	rig_run(r, rig_finished);
	assert_int_equal(r->ab.err, 0);
	assert_true(r->pb.in_eof);
	assert_int_equal(r->pb.in_len, n);
	assert_true(memcmp(r->pb.in, x, n) == 0);
	assert_int_equal(r->ab.spliced + r->ab.copied, n);
	free(x);
	return r;
}

static const int fallback_errnos[] = {EINVAL, ENOSYS, EOPNOTSUPP};

/* The first source splice fails as unsupported: copy from the start. */
static void test_fallback_on_source(void **state)
{
	(void)state;

	for (size_t i = 0; i < 3; i++) {
		fault_t f = {.src_fail_after = 0, .dst_fail_after = -1, .err = fallback_errnos[i]};
		rig_t *r = one_way(&f, 1u << 20);

		assert_true(r->ab.sp.off);
		assert_false(r->ab.sp.delivered);
		assert_int_equal(r->ab.seen[SS_SPLICE_COPY], 1);
		assert_int_equal(r->ab.in_pipe_at_off, 0);
		assert_int_equal(r->ab.spliced, 0);
		assert_int_equal(r->ab.copied, 1u << 20);
		assert_int_equal(fault.src_ok, 0);
		rig_close(r);
	}
}

/* The first sink splice fails as unsupported with the source's bytes in the
 * pipe: they are drained and written first, then copying goes on. */
static void test_fallback_on_sink_keeps_pipe_bytes(void **state)
{
	(void)state;

	for (size_t i = 0; i < 3; i++) {
		fault_t f = {.src_fail_after = -1, .dst_fail_after = 0, .err = fallback_errnos[i]};
		rig_t *r = one_way(&f, 1u << 20);

		assert_true(r->ab.sp.off);
		assert_false(r->ab.sp.delivered);
		assert_int_equal(r->ab.seen[SS_SPLICE_COPY], 1);
		assert_true(r->ab.in_pipe_at_off > 0);
		assert_int_equal(r->ab.drained, (size_t)r->ab.in_pipe_at_off);
		assert_int_equal(r->ab.spliced, 0);
		assert_int_equal(fault.src_ok, 1);
		assert_int_equal(fault.dst_ok, 0);
		/* The drained pipe was closed: the direction holds no pipe. */
		assert_int_equal(r->ab.sp.pipe_r, -1);
		rig_close(r);
	}
}

/* The same, call by call: the pipe's bytes come back through
 * ss_splice_drain in pieces, in order, and nothing is spliced again. */
static void test_drain_after_fallback(void **state)
{
	uint8_t *x = payload(3000, 8), got[3000];
	size_t moved;
	int err, calls;
	(void)state;

	rig_t *r = rig_open(&test_ops, 0);
	ss_splice_t *s = &r->ab.sp;

	fault.dst_fail_after = 0;
	fault.err = EINVAL;
	assert_int_equal(write(r->a, x, 3000), 3000);
	wait_queued(r->ra, 3000);
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_COPY);
	assert_int_equal(moved, 0);
	assert_true(s->off);
	assert_int_equal(s->in_pipe, 3000);
	calls = fault.calls;
	assert_int_equal(ss_splice_move(s, r->ra, r->rb, &moved, &err), SS_SPLICE_COPY);
	assert_int_equal(fault.calls, calls);

	assert_int_equal(ss_splice_drain(s, got, 1000), 1000);
	assert_int_equal(s->in_pipe, 2000);
	assert_int_equal(ss_splice_drain(s, got + 1000, sizeof(got)), 2000);
	assert_int_equal(s->in_pipe, 0);
	assert_int_equal(ss_splice_drain(s, got, sizeof(got)), 0);
	assert_memory_equal(got, x, 3000);
	assert_int_equal(s->pipe_r, -1);
	free(x);
	rig_close(r);
}

/* Once a byte has reached the sink, EINVAL from either splice is an error. */
static void test_einval_after_delivery_is_error(void **state)
{
	uint8_t *x = payload(1u << 20, 9);
	(void)state;

	for (int side = 0; side < 2; side++) {
		rig_t *r = rig_open(&test_ops, 0);

		fault.src_fail_after = side == 0 ? 1 : -1;
		fault.dst_fail_after = side == 1 ? 1 : -1;
		fault.err = EINVAL;
		peer_send(&r->pa, x, 1u << 20, true);
		peer_expect(&r->pb, 1u << 20);
		rig_run(r, ab_done);
		assert_int_equal(r->ab.last, SS_SPLICE_ERROR);
		assert_int_equal(r->ab.err, EINVAL);
		assert_false(r->ab.sp.off);
		assert_true(r->ab.sp.delivered);
		assert_true(r->ab.spliced > 0);
		assert_int_equal(r->ab.seen[SS_SPLICE_COPY], 0);
		rig_close(r);
	}
	free(x);
}

/* EINTR on either splice is retried: no error, no fallback. */
static void test_eintr_retried(void **state)
{
	(void)state;

	fault_t f = {.src_fail_after = 1, .dst_fail_after = 0, .err = EINTR};
	rig_t *r = one_way(&f, 1u << 20);
	assert_int_equal(fault.src_fail_after, -1); /* both were injected */
	assert_int_equal(fault.dst_fail_after, -1);
	assert_all_spliced(&r->ab, 1u << 20);
	rig_close(r);
}

/* No pipe, or one too small: copy from the start, nothing lost. */
static void test_pipe_failure(void **state)
{
	size_t moved;
	int err;
	(void)state;

	fault_t f = {.src_fail_after = -1, .dst_fail_after = -1, .pipe_err = EMFILE};
	rig_t *r = one_way(&f, 1u << 20);
	assert_true(r->ab.sp.off);
	assert_int_equal(r->ab.seen[SS_SPLICE_COPY], 1);
	assert_int_equal(r->ab.copied, 1u << 20);
	assert_int_equal(r->ab.sp.pipe_r, -1);
	assert_int_equal(fault.calls, 0);
	rig_close(r);

	f = (fault_t){.src_fail_after = -1, .dst_fail_after = -1, .pipe_cap = 4096};
	r = one_way(&f, 1u << 20);
	assert_true(r->ab.sp.off);
	assert_int_equal(r->ab.copied, 1u << 20);
	assert_int_equal(fault.calls, 0);
	rig_close(r);

	/* The small pipe is closed at once, before anything else opens. */
	r = rig_open(&test_ops, 0);
	fault.pipe_cap = 4096;
	assert_int_equal(ss_splice_move(&r->ab.sp, r->ra, r->rb, &moved, &err), SS_SPLICE_COPY);
	assert_int_equal(moved, 0);
	assert_true(r->ab.sp.off);
	assert_int_equal(r->ab.sp.pipe_r, -1);
	assert_int_equal(r->ab.sp.in_pipe, 0);
	assert_true(fault.pipe_fds[0] >= 0 && fault.pipe_fds[1] >= 0);
	assert_int_equal(fcntl(fault.pipe_fds[0], F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(fcntl(fault.pipe_fds[1], F_GETFD), -1);
	assert_int_equal(fault.calls, 0);
	rig_close(r);
}

/* A 1 MiB pipe refused: the 256 KiB one asked next carries the bytes. */
static void test_pipe_big_refused(void **state)
{
	(void)state;
	fault_t f = {.src_fail_after = -1, .dst_fail_after = -1, .pipe_max = SS_SPLICE_PIPE_WANT};
	rig_t *r = one_way(&f, 1u << 20);
	assert_false(r->ab.sp.off);
	assert_int_equal(r->ab.sp.pipe_size, SS_SPLICE_PIPE_WANT);
	assert_int_equal(r->ab.copied, 0);
	rig_close(r);

	f = (fault_t){.src_fail_after = -1, .dst_fail_after = -1};
	r = one_way(&f, 1u << 20);
	assert_int_equal(r->ab.sp.pipe_size, SS_SPLICE_PIPE_BIG);
	rig_close(r);
}

/* Pooled pipes: held while bytes are in them, given back when the source is
 * drained; with the pool's only pipe held, the other direction copies this
 * read and takes the pipe once it is back. */
static void test_pipe_pool(void **state)
{
	uint8_t *x = payload(1000, 9), got[1000];
	ss_pipe_pool_t pool;
	size_t moved;
	int err;
	(void)state;

	assert_int_equal(ss_pipe_pool_init(&pool, NULL, 1), 0);
	rig_t *r = rig_open(&test_ops, 0);
	ss_splice_t *ab = &r->ab.sp, *ba = &r->ba.sp;
	ss_splice_use_pool(ab, &pool);
	ss_splice_use_pool(ba, &pool);

	/* Nothing to read: the pipe made for the move goes back at once. */
	assert_int_equal(ss_splice_move(ab, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(ab->pipe_r, -1);
	assert_int_equal(pool.open, 1);
	assert_int_equal(pool.n_idle, 1);

	/* Bytes A -> B that the sink does not take at once: the direction
	 * holds the pipe while they wait in it. */
	fault.dst_fail_after = 0;
	fault.err = EAGAIN;
	assert_int_equal(write(r->a, x, 1000), 1000);
	wait_queued(r->ra, 1000);
	assert_int_equal(ss_splice_move(ab, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_WRITE);
	assert_int_equal(moved, 0);
	assert_int_equal(ab->in_pipe, 1000);
	assert_true(ab->pipe_r >= 0);
	assert_int_equal(pool.n_idle, 0);

	/* Meanwhile B -> A finds the pool empty: copy, not for good. */
	assert_int_equal(ss_splice_move(ba, r->rb, r->ra, &moved, &err), SS_SPLICE_COPY);
	assert_false(ba->off);
	assert_int_equal(pool.open, 1);

	/* Once the sink took them the pipe goes back: the fill was short, so
	 * the source is known to be empty without another splice. */
	int calls = fault.calls;
	assert_int_equal(ss_splice_move(ab, r->ra, r->rb, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(fault.calls - calls, 1);
	assert_int_equal(moved, 1000);
	assert_int_equal(ab->pipe_r, -1);
	assert_int_equal(pool.n_idle, 1);
	wait_queued(r->b, 1000);
	assert_int_equal(read(r->b, got, sizeof(got)), 1000);
	assert_memory_equal(got, x, 1000);

	/* Now B -> A gets the same pipe. */
	assert_int_equal(write(r->b, x, 500), 500);
	wait_queued(r->rb, 500);
	assert_int_equal(ss_splice_move(ba, r->rb, r->ra, &moved, &err), SS_SPLICE_WAIT_READ);
	assert_int_equal(moved, 500);
	assert_int_equal(pool.open, 1);

	rig_close(r);
	assert_int_equal(pool.n_idle, 1); /* closing gave the empty pipe back */
	ss_pipe_pool_destroy(&pool);
	free(x);
}

/* A fill cut short by the pipe's slots (small pieces of socket buffer, one
 * a slot) leaves the source with bytes: the move goes on splicing, and
 * waits for the source only once a fill is too small to have been cut.
 * With a 64 KiB pipe (16 slots, what a user past the pipe quota gets) that
 * is under 8 KiB; the fills here stop at 9000 bytes, the last at 4000. */
static void test_fill_cut_by_slots_keeps_splicing(void **state)
{
	const int n = 40000;
	uint8_t *x = payload((size_t)n, 12), got[40000];
	size_t moved, total = 0;
	int err, have = -1, moves = 0;
	ss_splice_result_t res;
	(void)state;

	rig_t *r = rig_open(&test_ops, 0);
	fault.pipe_cap = 64 * 1024;
	fault.src_cap = 9000;
	assert_int_equal(write(r->a, x, (size_t)n), n);
	wait_queued(r->ra, n);
	do {
		res = ss_splice_move(&r->ab.sp, r->ra, r->rb, &moved, &err);
		total += moved;
		assert_true(res == SS_SPLICE_PROGRESS || res == SS_SPLICE_WAIT_READ);
	} while (res == SS_SPLICE_PROGRESS && ++moves < 100);
	assert_int_equal(r->ab.sp.pipe_size, 64 * 1024);
	/* Only a source with nothing left was waited for. */
	assert_int_equal(res, SS_SPLICE_WAIT_READ);
	assert_int_equal(ioctl(r->ra, FIONREAD, &have), 0);
	assert_int_equal(have, 0);
	assert_int_equal(total, (size_t)n);
	wait_queued(r->b, n);
	assert_int_equal(read(r->b, got, sizeof(got)), n);
	assert_memory_equal(got, x, (size_t)n);
	free(x);
	rig_close(r);
}

/* ---- urgent data ---------------------------------------------------------- */

typedef struct urgent_case {
	bool oob_inline; /* SO_OOBINLINE on the relay's source socket */
	bool queued;     /* everything reaches the relay before it first runs */
	size_t pre, post;
	bool fin; /* FIN right after the last byte */
} urgent_case_t;

/* A sends pre bytes, one urgent byte (MSG_OOB), post bytes, FIN; returns
 * what B got, relayed by splice (ops NULL) or by plain read()/write() (a
 * pipe that cannot be made). *urgent_reads counts the one-read copies. */
static uint8_t *urgent_relay(const urgent_case_t *c, bool copy, size_t *got, unsigned *urgent_reads)
{
	size_t total = c->pre + 1 + c->post;
	uint8_t *x = payload(total, 10), *out;
	int one = 1;
	rig_t *r = rig_open(&test_ops, 0);

	fault.pipe_err = copy ? EMFILE : 0;
	if (c->oob_inline)
		assert_int_equal(setsockopt(r->ra, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)), 0);
	peer_expect(&r->pb, total);
	peer_send(&r->pb, NULL, 0, true);
	if (c->queued) {
		assert_int_equal(write(r->a, x, c->pre), (ssize_t)c->pre);
		assert_int_equal(send(r->a, x + c->pre, 1, MSG_OOB), 1);
		if (c->post)
			assert_int_equal(write(r->a, x + c->pre + 1, c->post), (ssize_t)c->post);
		if (c->fin)
			assert_int_equal(shutdown(r->a, SHUT_WR), 0);
		if (c->oob_inline) {
			wait_queued(r->ra, (int)total);
		} else {
			/* FIONREAD stops at the mark when the urgent byte is
			 * not inline; loopback delivers within the write, the
			 * pause is a margin. */
			wait_queued(r->ra, (int)c->pre);
			usleep(20000);
		}
		rig_run(r, rig_finished);
	} else {
		/* The relay passes pre on and waits; the urgent byte arrives
		 * alone, post only once the relay went past the mark. */
		peer_send(&r->pa, x, c->pre, false);
		rig_run_until_b(r, c->pre, 0);
		assert_int_equal(send(r->a, x + c->pre, 1, MSG_OOB), 1);
		rig_run_until_b(r, c->pre + (c->oob_inline ? 1 : 0), copy ? 0 : 1);
		peer_send(&r->pa, x + c->pre + 1, c->post, c->fin);
		rig_run(r, rig_finished);
	}
	assert_int_equal(r->ab.err, 0);
	assert_true(r->pb.in_eof);
	assert_int_equal(r->ab.seen[SS_SPLICE_ERROR], 0);
	assert_int_equal(r->ab.sp.off, copy);
	*urgent_reads = r->ab.urgent_reads;
	*got = r->pb.in_len;
	out = malloc(*got ? *got : 1);
	assert_non_null(out);
	memcpy(out, r->pb.in, *got);
	/* Expected: the urgent byte in place when inline, else dropped. */
	assert_int_equal(*got, total - (c->oob_inline ? 0 : 1));
	assert_memory_equal(out, x, c->pre);
	if (c->oob_inline)
		assert_memory_equal(out + c->pre, x + c->pre, 1 + c->post);
	else
		assert_memory_equal(out + c->pre, x + c->pre + 1, c->post);
	free(x);
	rig_close(r);
	return out;
}

/* Splice delivers exactly what a plain copy relay delivers, without a
 * stall, and went through the one-read copy at the mark. */
static void urgent_compare(const urgent_case_t *c)
{
	size_t n_copy, n_splice;
	unsigned reads_copy, reads_splice;
	uint8_t *by_copy = urgent_relay(c, true, &n_copy, &reads_copy);
	uint8_t *by_splice = urgent_relay(c, false, &n_splice, &reads_splice);

	assert_int_equal(n_splice, n_copy);
	assert_memory_equal(by_splice, by_copy, n_copy);
	assert_int_equal(reads_copy, 0);
	assert_true(reads_splice >= 1);
	free(by_copy);
	free(by_splice);
}

static void test_urgent_mid_stream(void **state)
{
	(void)state;

	for (int oob_inline = 0; oob_inline < 2; oob_inline++) {
		/* Pre, urgent byte, post and FIN all waiting: the splice stops
		 * at the mark and, with the FIN behind it, reports 0 there. */
		urgent_compare(&(urgent_case_t){oob_inline, true, 3000, 3000, true});
		/* The urgent byte arrives while the relay waits for more. */
		urgent_compare(&(urgent_case_t){oob_inline, false, 70000, 70000, true});
	}
}

static void test_urgent_before_fin(void **state)
{
	(void)state;

	for (int oob_inline = 0; oob_inline < 2; oob_inline++) {
		urgent_compare(&(urgent_case_t){oob_inline, true, 5000, 0, true});
		urgent_compare(&(urgent_case_t){oob_inline, false, 5000, 0, true});
		/* Nothing but the urgent byte. */
		urgent_compare(&(urgent_case_t){oob_inline, true, 0, 0, true});
	}
}

/* ---- resets --------------------------------------------------------------- */

/* A resets after its bytes crossed: the source splice reports it. */
static void test_reset_of_source(void **state)
{
	uint8_t *x = payload(65536, 11);
	(void)state;

	rig_t *r = rig_open(NULL, 0);
	peer_send(&r->pa, x, 65536, false);
	peer_expect(&r->pb, 65536);
	rig_run_until_b(r, 65536, 0);
	assert_int_equal(r->pb.in_len, 65536);
	reset_close(r->a);
	r->pa.fd = -1;
	rig_run(r, ab_done);
	assert_int_equal(r->ab.last, SS_SPLICE_ERROR);
	assert_int_equal(r->ab.err, ECONNRESET);
	assert_int_equal(r->ab.spliced, 65536);
	free(x);
	rig_close(r);
}

/* B resets while A is still sending: the sink splice reports it. */
static void test_reset_of_sink(void **state)
{
	size_t n = 8u << 20;
	uint8_t *x = payload(n, 12);
	(void)state;

	rig_t *r = rig_open(NULL, 0);
	peer_send(&r->pa, x, n, true);
	peer_expect(&r->pb, n);
	rig_run_until_b(r, 65536, 0);
	assert_false(r->ab.done);
	reset_close(r->b);
	r->pb.fd = -1;
	rig_run(r, ab_done);
	assert_int_equal(r->ab.last, SS_SPLICE_ERROR);
	assert_true(r->ab.err == ECONNRESET || r->ab.err == EPIPE);
	assert_true(r->ab.spliced < n);
	free(x);
	rig_close(r);
}

/* ---- when splicing is allowed -------------------------------------------- */

static void on_sigpipe(int sig)
{
	(void)sig;
}

static void test_supported(void **state)
{
	struct sigaction old, sa;
	const char *env = getenv("SS_NO_SPLICE");
	char *saved = env ? strdup(env) : NULL;
	(void)state;

	assert_int_equal(sigaction(SIGPIPE, NULL, &old), 0);
	assert_int_equal(unsetenv("SS_NO_SPLICE"), 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	assert_int_equal(sigaction(SIGPIPE, &sa, NULL), 0);
	assert_false(ss_splice_supported());

	sa.sa_handler = SIG_IGN;
	assert_int_equal(sigaction(SIGPIPE, &sa, NULL), 0);
	assert_true(ss_splice_supported());

	sa.sa_handler = on_sigpipe;
	assert_int_equal(sigaction(SIGPIPE, &sa, NULL), 0);
	assert_true(ss_splice_supported());

	assert_int_equal(setenv("SS_NO_SPLICE", "1", 1), 0);
	assert_false(ss_splice_supported());
	assert_int_equal(setenv("SS_NO_SPLICE", "0", 1), 0);
	assert_true(ss_splice_supported());

	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
	if (saved)
		assert_int_equal(setenv("SS_NO_SPLICE", saved, 1), 0);
	else
		assert_int_equal(unsetenv("SS_NO_SPLICE"), 0);
	free(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_both_directions_8mib),
	    cmocka_unit_test(test_empty_stream),
	    cmocka_unit_test(test_one_byte),
	    cmocka_unit_test(test_results_step_by_step),
	    cmocka_unit_test(test_half_close),
	    cmocka_unit_test(test_slow_reader),
	    cmocka_unit_test(test_fallback_on_source),
	    cmocka_unit_test(test_fallback_on_sink_keeps_pipe_bytes),
	    cmocka_unit_test(test_drain_after_fallback),
	    cmocka_unit_test(test_einval_after_delivery_is_error),
	    cmocka_unit_test(test_eintr_retried),
	    cmocka_unit_test(test_pipe_failure),
	    cmocka_unit_test(test_pipe_big_refused),
	    cmocka_unit_test(test_pipe_pool),
	    cmocka_unit_test(test_fill_cut_by_slots_keeps_splicing),
	    cmocka_unit_test(test_urgent_mid_stream),
	    cmocka_unit_test(test_urgent_before_fin),
	    cmocka_unit_test(test_reset_of_source),
	    cmocka_unit_test(test_reset_of_sink),
	    cmocka_unit_test(test_supported),
	};

	/* A sink that resets must give EPIPE, not end the test program. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
