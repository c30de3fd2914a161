/* SPDX-License-Identifier: MIT */
#include "net/splice.h"

#include <errno.h>

/* Systems without splice(2): every direction copies in user space. */

static ssize_t none_splice(int fd_in, int fd_out, size_t len, unsigned int flags)
{
	(void)fd_in;
	(void)fd_out;
	(void)len;
	(void)flags;
	errno = ENOSYS;
	return -1;
}

static int none_pipe(int fds[2])
{
	(void)fds;
	errno = ENOSYS;
	return -1;
}

static int none_pipe_size(int fd, int want)
{
	(void)fd;
	(void)want;
	errno = ENOSYS;
	return -1;
}

const ss_splice_ops_t ss_splice_sys = {
    .splice = none_splice,
    .pipe = none_pipe,
    .pipe_size = none_pipe_size,
};

bool ss_splice_supported(void)
{
	return false;
}

int ss_pipe_pool_init(ss_pipe_pool_t *p, const ss_splice_ops_t *ops, size_t max)
{
	*p = (ss_pipe_pool_t){.ops = ops ? ops : &ss_splice_sys, .max = max};
	return 0;
}

void ss_pipe_pool_destroy(ss_pipe_pool_t *p)
{
	*p = (ss_pipe_pool_t){0};
}

void ss_splice_use_pool(ss_splice_t *s, ss_pipe_pool_t *pool)
{
	s->pool = pool;
}

void ss_splice_init(ss_splice_t *s, const ss_splice_ops_t *ops)
{
	*s = (ss_splice_t){.ops = ops ? ops : &ss_splice_sys, .pipe_r = -1, .pipe_w = -1};
}

void ss_splice_close(ss_splice_t *s)
{
	(void)s;
}

ss_splice_result_t ss_splice_move(ss_splice_t *s, int src, int dst, size_t *moved, int *err)
{
	(void)src;
	(void)dst;
	*moved = 0;
	*err = 0;
	s->off = true;
	return SS_SPLICE_COPY;
}

ssize_t ss_splice_drain(ss_splice_t *s, void *buf, size_t cap)
{
	(void)s;
	(void)buf;
	(void)cap;
	return 0;
}
