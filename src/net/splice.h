/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_SPLICE_H
#define SS_NET_SPLICE_H

/* One direction of a TCP relay moved by splice(2): source socket -> pipe ->
 * sink socket, without the bytes passing through user space. Linux only
 * (splice_linux.c); elsewhere (splice_portable.c) every call asks for the
 * ordinary copy. The caller owns both sockets and keeps them non-blocking;
 * this module owns only its pipe. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The system calls the module makes, so tests can inject failures. */
typedef struct ss_splice_ops {
	/* splice(2) without offsets: bytes moved, 0 at EOF, or -1 with errno. */
	ssize_t (*splice)(int fd_in, int fd_out, size_t len, unsigned int flags);
	/* Makes a non-blocking, close-on-exec pipe: 0, or -1 with errno. */
	int (*pipe)(int fds[2]);
	/* Asks the pipe whose write end is fd for want bytes of capacity, best
	 * effort; returns the capacity it has then, or -1 with errno. */
	int (*pipe_size)(int fd, int want);
} ss_splice_ops_t;

/* The real system calls (a const table: nothing in it changes). */
extern const ss_splice_ops_t ss_splice_sys;

/* Capacity asked for a pipe: the larger first, then the smaller. A pipe
 * holds one page-sized piece of a socket buffer per slot, so its slots, not
 * its bytes, bound each splice; on loopback 1 MiB pipes halve the relay's
 * CPU per GB against 256 KiB ones (docs/performance.md). Past the user's pipe
 * quota the larger is refused and the smaller may still be granted. */
#define SS_SPLICE_PIPE_WANT (256 * 1024)
#define SS_SPLICE_PIPE_BIG (1024 * 1024)
#define SS_SPLICE_PIPE_MIN (64 * 1024) /* below this, copying is as good */

/* Pipes shared by the directions of one relay, so that a direction holds a
 * pipe only while bytes are in it: an idle connection holds no descriptor
 * beyond its sockets, and at most max pipes exist at once (their
 * descriptors are budgeted with the connections'). */
typedef struct ss_pipe_pool {
	const ss_splice_ops_t *ops;
	int (*idle)[2];      /* idle pipes (read end, write end), the last made first */
	uint32_t *idle_size; /* their capacities */
	size_t n_idle;
	size_t open; /* pipes made and not closed, idle or held */
	size_t max;
} ss_pipe_pool_t;

/* Room for max pipes (ops NULL: ss_splice_sys). 0 or -ENOMEM. */
int ss_pipe_pool_init(ss_pipe_pool_t *p, const ss_splice_ops_t *ops, size_t max);
/* Closes the idle pipes and frees; every direction using it has closed. */
void ss_pipe_pool_destroy(ss_pipe_pool_t *p);

/* The state of one direction. Embed it in the connection; it holds no heap
 * memory, only the pipe's two descriptors once the first move made them. */
typedef struct ss_splice {
	const ss_splice_ops_t *ops;
	ss_pipe_pool_t *pool; /* NULL: the direction makes its pipe and keeps it */
	int pipe_r, pipe_w;   /* -1 until first use */
	uint32_t in_pipe;     /* bytes in the pipe not yet written to the sink */
	uint32_t pipe_size;   /* capacity obtained */
	bool delivered;       /* a byte reached the sink through the pipe: no fallback after this */
	bool off;             /* this direction copies from now on */
	bool eof;             /* the source reported EOF: it is not read again */
	bool dry;             /* the last fill got less than asked, and too little to have
				 been cut short by the pipe's slots: the source is empty */
} ss_splice_t;

typedef enum {
	SS_SPLICE_PROGRESS,   /* *moved > 0 bytes were written to the sink; call again */
	SS_SPLICE_WAIT_READ,  /* the pipe is empty and the source has nothing now, or gave a
				 small part of what was asked; *moved may be > 0 */
	SS_SPLICE_WAIT_WRITE, /* the sink is full; bytes remain in the pipe */
	SS_SPLICE_EOF,        /* the source is at EOF and the pipe is empty */
	SS_SPLICE_COPY,       /* copy in user space instead: for good when s->off (then first
				 read the s->in_pipe bytes still in the pipe with ss_splice_drain
				 and write them before anything read from the source), or for one
				 read when urgent data sits at the head of the source (s->off false;
				 the pipe is empty then) */
	SS_SPLICE_ERROR,      /* *err holds the errno of the source or sink */
} ss_splice_result_t;

/* Whether splicing may be used in this process: built for Linux, SIGPIPE
 * ignored or handled (splice cannot be told MSG_NOSIGNAL, so with the
 * default disposition a write to a closed peer would kill the process), and
 * not disabled with the environment variable SS_NO_SPLICE (set and not "0").
 * Ask again after changing the signal disposition or the environment. */
bool ss_splice_supported(void);

/* Prepares s for one direction with the given system calls (NULL for
 * ss_splice_sys), which must outlive s. Makes no pipe yet. */
void ss_splice_init(ss_splice_t *s, const ss_splice_ops_t *ops);
/* Takes pipes from pool (which must outlive s) from now on: one is held
 * while bytes are in it and given back once the source has nothing more
 * for now. With every pipe of the pool held elsewhere, a move answers
 * SS_SPLICE_COPY with s->off false: copy this read, try again later. */
void ss_splice_use_pool(ss_splice_t *s, ss_pipe_pool_t *pool);

/* Closes the pipe if s has one (an empty one goes back to its pool); any
 * bytes still in it are lost, so a caller that wants them drains first.
 * Safe to call twice. */
void ss_splice_close(ss_splice_t *s);

/* Moves what it can from src to dst: first what is in the pipe, then
 * source -> pipe -> sink, making the pipe on first use. One call does a
 * bounded amount of work (a few splice calls), then returns PROGRESS so the
 * caller can be fair to others. *moved gets the bytes written to dst in this
 * call whatever the result (PROGRESS, WAIT_READ and ERROR can carry some),
 * *err the errno when the result is SS_SPLICE_ERROR (else 0). A source that
 * gave less than asked, and less than the pipe's slots hold even with small
 * segments (512 bytes a slot), counts as emptied: once those bytes are out
 * the answer is WAIT_READ, without a splice that would only say EAGAIN.
 *
 * Fallback: until the first byte has reached the sink through the pipe, a
 * failed pipe, a pipe under SS_SPLICE_PIPE_MIN, or EINVAL, ENOSYS or
 * EOPNOTSUPP from either splice sets s->off and returns SS_SPLICE_COPY, with
 * any bytes already taken from the source left in the pipe for
 * ss_splice_drain. After that first byte these errno values are errors. */
ss_splice_result_t ss_splice_move(ss_splice_t *s, int src, int dst, size_t *moved, int *err);

/* After a fallback (s->off): reads up to cap bytes still in the pipe into
 * buf, the caller's, so they are written before anything read from the
 * source. Returns the count (0 when the pipe is empty), or -errno.
 * Decrements in_pipe; once a direction that is off has emptied its pipe,
 * the pipe is closed. */
ssize_t ss_splice_drain(ss_splice_t *s, void *buf, size_t cap);

#endif
