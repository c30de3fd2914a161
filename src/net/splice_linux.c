/* SPDX-License-Identifier: MIT */
#include "net/splice.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Splice calls per ss_splice_move: with a full pipe (up to 1 MiB) a few MiB
 * before the caller gets a turn to serve another connection. */
#define SPLICE_CALLS 8
#define SPLICE_FLAGS (SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
/* A pipe slot per page of capacity; a slot filled from a TCP socket holds at
 * least one segment's piece, over 512 bytes with any MSS from 536 up. */
#define SPLICE_SLOT 4096
#define SPLICE_SLOT_MIN_BYTES 512

static ssize_t sys_splice(int fd_in, int fd_out, size_t len, unsigned int flags)
{
	return splice(fd_in, NULL, fd_out, NULL, len, flags);
}

static int sys_pipe(int fds[2])
{
	return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

static int sys_pipe_size(int fd, int want)
{
	/* Refused above fs.pipe-max-size or the user's pipe quota; what the
	 * pipe has then is still worth reading back. */
	(void)fcntl(fd, F_SETPIPE_SZ, want);
	return fcntl(fd, F_GETPIPE_SZ);
}

const ss_splice_ops_t ss_splice_sys = {
    .splice = sys_splice,
    .pipe = sys_pipe,
    .pipe_size = sys_pipe_size,
};

bool ss_splice_supported(void)
{
	struct sigaction sa;
	const char *no = getenv("SS_NO_SPLICE");

	if (no && strcmp(no, "0") != 0)
		return false;
	if (sigaction(SIGPIPE, NULL, &sa) < 0)
		return false;
	return (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_DFL;
}

int ss_pipe_pool_init(ss_pipe_pool_t *p, const ss_splice_ops_t *ops, size_t max)
{
	*p = (ss_pipe_pool_t){.ops = ops ? ops : &ss_splice_sys, .max = max};
	p->idle = calloc(max ? max : 1, sizeof(*p->idle));
	p->idle_size = calloc(max ? max : 1, sizeof(*p->idle_size));
	if (!p->idle || !p->idle_size) {
		ss_pipe_pool_destroy(p);
		return -ENOMEM;
	}
	return 0;
}

void ss_pipe_pool_destroy(ss_pipe_pool_t *p)
{
	for (size_t i = 0; p->idle && i < p->n_idle; i++) {
		close(p->idle[i][0]);
		close(p->idle[i][1]);
	}
	free(p->idle);
	free(p->idle_size);
	*p = (ss_pipe_pool_t){0};
}

void ss_splice_init(ss_splice_t *s, const ss_splice_ops_t *ops)
{
	*s = (ss_splice_t){.ops = ops ? ops : &ss_splice_sys, .pipe_r = -1, .pipe_w = -1};
}

void ss_splice_use_pool(ss_splice_t *s, ss_pipe_pool_t *pool)
{
	s->pool = pool;
}

/* Gives an empty pipe back to the pool. */
static void splice_release(ss_splice_t *s)
{
	ss_pipe_pool_t *p = s->pool;

	p->idle[p->n_idle][0] = s->pipe_r;
	p->idle[p->n_idle][1] = s->pipe_w;
	p->idle_size[p->n_idle++] = s->pipe_size;
	s->pipe_r = s->pipe_w = -1;
	s->pipe_size = 0;
}

void ss_splice_close(ss_splice_t *s)
{
	if (s->pipe_r >= 0 && s->pool && s->in_pipe == 0) {
		splice_release(s);
		return;
	}
	if (s->pipe_r >= 0) {
		close(s->pipe_r);
		if (s->pool)
			s->pool->open--;
	}
	if (s->pipe_w >= 0)
		close(s->pipe_w);
	s->pipe_r = s->pipe_w = -1;
	s->in_pipe = 0;
	s->pipe_size = 0;
}

/* Makes a pipe: 1, 0 when this direction should copy from now on, -1 when
 * the pool has none to spare now. */
static int splice_open(ss_splice_t *s)
{
	ss_pipe_pool_t *p = s->pool;
	int fds[2], cap;

	if (p && p->n_idle) {
		p->n_idle--;
		s->pipe_r = p->idle[p->n_idle][0];
		s->pipe_w = p->idle[p->n_idle][1];
		s->pipe_size = p->idle_size[p->n_idle];
		return 1;
	}
	if (p && p->open >= p->max)
		return -1;
	if (s->ops->pipe(fds) < 0)
		return 0;
	s->pipe_r = fds[0];
	s->pipe_w = fds[1];
	if (p)
		p->open++;
	cap = s->ops->pipe_size(s->pipe_w, SS_SPLICE_PIPE_BIG);
	if (cap < SS_SPLICE_PIPE_WANT)
		cap = s->ops->pipe_size(s->pipe_w, SS_SPLICE_PIPE_WANT);
	/* A small pipe (the user's pipe quota is spent) costs a system call
	 * per few pages: copying through the relay buffer does as well. */
	if (cap < SS_SPLICE_PIPE_MIN) {
		ss_splice_close(s);
		return 0;
	}
	s->pipe_size = (uint32_t)cap;
	return 1;
}

/* The pipe is empty and the source has nothing for now: a pooled pipe goes
 * back, so that idle directions hold none. */
static ss_splice_result_t splice_idle(ss_splice_t *s, ss_splice_result_t r)
{
	if (s->pool && s->pipe_r >= 0 && s->in_pipe == 0)
		splice_release(s);
	return r;
}

static ssize_t splice_call(ss_splice_t *s, int in, int out, size_t len)
{
	ssize_t n;

	do
		n = s->ops->splice(in, out, len, SPLICE_FLAGS);
	while (n < 0 && errno == EINTR);
	return n;
}

/* The errno values that say splice cannot serve this pair of files at all,
 * as opposed to a failure of one of the sockets. */
static bool splice_unsupported(int e)
{
	return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP;
}

/* Handles a failed splice: a fallback while nothing has been delivered
 * (bytes in the pipe wait for ss_splice_drain), an error otherwise. */
static ss_splice_result_t splice_failed(ss_splice_t *s, int e, int *err)
{
	if (splice_unsupported(e) && !s->delivered) {
		s->off = true;
		return SS_SPLICE_COPY;
	}
	*err = e;
	return SS_SPLICE_ERROR;
}

/* Whether the next byte of fd is the urgent byte: tcp_splice_read stops in
 * front of it and reports EAGAIN (or 0 once a FIN follows) while read()
 * would go past it, so only a read can make progress there. */
static bool splice_at_mark(int fd)
{
	int at = 0;

	return ioctl(fd, SIOCATMARK, &at) == 0 && at;
}

ss_splice_result_t ss_splice_move(ss_splice_t *s, int src, int dst, size_t *moved, int *err)
{
	*moved = 0;
	*err = 0;
	if (s->off)
		return SS_SPLICE_COPY;
	if (s->pipe_r < 0) {
		int r = splice_open(s);
		if (r <= 0) {
			s->off = r == 0;
			return SS_SPLICE_COPY;
		}
	}
	for (int calls = 0; calls < SPLICE_CALLS; calls++) {
		ssize_t n;

		if (s->in_pipe) {
			n = splice_call(s, s->pipe_r, dst, s->in_pipe);
			if (n < 0 && errno == EAGAIN)
				return *moved ? SS_SPLICE_PROGRESS : SS_SPLICE_WAIT_WRITE;
			if (n < 0)
				return splice_failed(s, errno, err);
			if (n == 0 || (size_t)n > s->in_pipe) {
				/* We hold the write end and counted what went in:
				 * the pipe cannot be empty or hold more. */
				*err = EIO;
				return SS_SPLICE_ERROR;
			}
			s->in_pipe -= (uint32_t)n;
			s->delivered = true;
			*moved += (size_t)n;
			/* The fill was dry (below), so the source was emptied:
			 * the next splice would only say EAGAIN. Should more
			 * have come meanwhile, or tiny pieces have filled the
			 * slots after all, the source's readiness brings the
			 * caller back. */
			if (s->in_pipe == 0 && s->dry)
				return splice_idle(s, SS_SPLICE_WAIT_READ);
			continue;
		}
		if (s->eof)
			return *moved ? SS_SPLICE_PROGRESS : splice_idle(s, SS_SPLICE_EOF);
		/* Filling only an empty pipe keeps its slots free: a pipe holds
		 * fewer bytes than its capacity when skbs fill pages partly. */
		size_t want = s->pipe_size - s->in_pipe;
		n = splice_call(s, src, s->pipe_w, want);
		if (n > 0) {
			s->in_pipe += (uint32_t)n;
			/* Less than asked, and less than the pipe's slots (one
			 * page-sized piece of a socket buffer each) hold even
			 * with small segments: the source was emptied. A fill
			 * cut short by the slots is not. */
			s->dry = (size_t)n < want &&
				 (size_t)n < s->pipe_size / SPLICE_SLOT * SPLICE_SLOT_MIN_BYTES;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			return splice_failed(s, errno, err);
		/* Nothing now, or EOF. Either may really be the urgent mark; ask
		 * only in a call that moved nothing, so the mark is checked once
		 * the bytes in front of it are gone. */
		if (*moved)
			return SS_SPLICE_PROGRESS;
		if (splice_at_mark(src))
			return splice_idle(s, SS_SPLICE_COPY);
		if (n < 0)
			return splice_idle(s, SS_SPLICE_WAIT_READ);
		s->eof = true;
		return splice_idle(s, SS_SPLICE_EOF);
	}
	/* A fill is always followed by a flush that moved bytes or returned. */
	return SS_SPLICE_PROGRESS;
}

ssize_t ss_splice_drain(ss_splice_t *s, void *buf, size_t cap)
{
	ssize_t n;

	if (s->in_pipe == 0 || s->pipe_r < 0)
		return 0;
	if (cap > s->in_pipe)
		cap = s->in_pipe;
	do
		n = read(s->pipe_r, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO; /* in_pipe says bytes are there */
	s->in_pipe -= (uint32_t)n;
	if (s->in_pipe == 0 && s->off)
		ss_splice_close(s);
	return n;
}
