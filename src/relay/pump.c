/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"
#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* One pump serves both directions: direction d reads from side[d] and writes
 * to side[!d] through its transform. It stops reading while its writer is
 * blocked, and carries EOF across as a half-close. */

#define PUMP_ROUNDS 8     /* reads per wake-up, so one busy connection cannot starve the rest */
#define PUMP_BADDATA (-2) /* the stream failed to decode */
#define PUMP_FRAMING (-3) /* the filter refused the stream's framing */
#define PUMP_HOLD (-4)    /* the filter holds the direction */
#define PUMP_EOF (-5)     /* the source has ended, and all it gave is out */
#define PUMP_TAKEN (-6)   /* a filter took the connection over */
#define PUMP_GOT (-7)     /* a read brought bytes */

uint8_t *ss_pump_lead_area(ss_conn_t *c, int d)
{
	uint8_t *buf = ss_conn_buf(c, d);

	return c->dir[d].xf == SS_XF_ENCODE ? buf + c->k->layout.first : buf;
}

/* The request's target while the codec may still need it for its header. */
static const ss_addr_t *pump_req_target(ss_conn_t *c, const ss_dir_t *dir)
{
	return dir->hdr_pending ? &c->target : NULL;
}

/* Turns the lead bytes (and n new ones) into pending output: sealed by the
 * codec, or as they are. A client's request goes out even with nothing in
 * it (a codec may send a header of padding alone); then the direction that
 * answers is bound to it. */
static int pump_emit(ss_conn_t *c, int d, size_t n)
{
	ss_dir_t *dir = &c->dir[d];
	ss_codec_t *k = c->k;
	size_t total = dir->lead + n, niov = 0;
	bool hdr = dir->hdr_pending;
	int rc = SS_OK;

	if (hdr)
		c->lead_wait = false;
	if (total == 0 && !hdr)
		return SS_OK;
	if (dir->xf == SS_XF_ENCODE) {
		rc = k->ops->seal(k, dir->codec, dir->buf, total, (uint64_t)ev_now(c->inst->loop),
				  pump_req_target(c, dir), dir->iov, &niov);
	} else if (total) {
		dir->iov[0] = (struct iovec){dir->buf, total};
		niov = 1;
	}
	dir->lead = 0;
	dir->hdr_pending = false;
	dir->iov_i = 0;
	dir->iov_n = (uint8_t)niov;
	if (rc == SS_OK && hdr && ss_codec_bind(k, dir->codec, c->dir[!d].codec) < 0)
		rc = SS_ERR;
	return rc;
}

/* Shows the filter each decoded span, and cuts off what it does not let
 * go on. */
static void pump_filter_spans(ss_conn_t *c, int d, ss_span_t *spans, size_t ns)
{
	const ss_pump_filter_t *f = &c->filter[d];

	for (size_t i = 0; i < ns; i++) {
		size_t keep = spans[i].len;
		if (f->data(c, d, spans[i].ptr, spans[i].len, &keep) == SS_FILTER_END)
			spans[i].len = keep;
	}
}

int ss_pump_decode(ss_conn_t *c, int d, ss_codec_hdr_t *hdr)
{
	ss_dir_t *dir = &c->dir[d];
	ss_codec_t *k = c->k;
	ss_span_t spans[SS_DIR_MAX_IOV];
	size_t consumed = 0, ns = 0, i;
	size_t room = SS_DIR_MAX_IOV - dir->iov_n;

	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	if (room == 0 || dir->rpos >= dir->rend)
		return SS_OK;
	if (k->ops->decode(k, dir->codec, dir->buf + dir->rpos, dir->rend - dir->rpos,
			   (uint64_t)ev_now(c->inst->loop), &consumed, spans, room, &ns,
			   hdr) != SS_OK)
		return SS_ERR;
	dir->rpos += consumed;
	if (c->filter)
		pump_filter_spans(c, d, spans, ns);
	for (i = 0; i < ns; i++) {
		size_t len = spans[i].len;
		if (!len)
			continue;
		dir->iov[dir->iov_n++] = (struct iovec){spans[i].ptr, len};
		dir->bytes += len;
		ss_conn_count(c, d, len);
	}
	return SS_OK;
}

/* Moves undecoded bytes down to the front (after what must be kept); drops
 * the buffer when nothing is left in it. */
static void pump_compact(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	size_t left = dir->rend - dir->rpos;

	if (left && dir->rpos > dir->keep)
		memmove(dir->buf + dir->keep, dir->buf + dir->rpos, left);
	dir->rpos = dir->keep;
	dir->rend = dir->keep + left;
	if (dir->rend == 0)
		ss_conn_buf_release(c, d);
}

void ss_pump_gather(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	/* The pieces lie in order before rpos, so each moves down over room
	 * already taken. */
	for (size_t i = dir->iov_i; i < dir->iov_n; i++) {
		memmove(dir->buf + dir->keep, dir->iov[i].iov_base, dir->iov[i].iov_len);
		dir->keep += dir->iov[i].iov_len;
	}
	dir->iov_i = dir->iov_n = 0;
	pump_compact(c, d);
}

ssize_t ss_pump_read(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	uint8_t *buf = ss_conn_buf(c, d);
	size_t want = SS_RELAY_BUF_SIZE - dir->rend;
	ssize_t n;

	do
		n = read(c->side[d].fd, buf + dir->rend, want);
	while (n < 0 && errno == EINTR);
	/* A short read emptied the socket: once what it brought is written,
	 * the pump waits for the watcher rather than read EAGAIN. */
	dir->drained = n > 0 && (size_t)n < want;
	if (n > 0) {
		dir->rend += n;
		ss_conn_touch(c);
	}
	return n;
}

void ss_pump_consume(ss_conn_t *c, int d, size_t used)
{
	ss_dir_t *dir = &c->dir[d];

	if (dir->keep > used) {
		dir->iov[0] = (struct iovec){dir->buf + used, dir->keep - used};
		dir->iov_i = 0;
		dir->iov_n = 1;
	}
	dir->bytes -= used;
}

/* Writes pending output: SS_OK when all of it is out, SS_AGAIN when the sink
 * is full, SS_ERR on a socket error. */
static int pump_flush(ss_conn_t *c, ss_dir_t *dir, int fd)
{
	while (dir->iov_i < dir->iov_n) {
		struct msghdr msg = {.msg_iov = dir->iov + dir->iov_i,
				     .msg_iovlen = dir->iov_n - dir->iov_i};
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return (errno == EAGAIN || errno == EWOULDBLOCK) ? SS_AGAIN : SS_ERR;
		}
		/* A slow reader that takes longer than the idle timeout to
		 * drain one buffer is still making progress. */
		ss_conn_touch(c);
		while (n > 0) {
			struct iovec *v = &dir->iov[dir->iov_i];
			if ((size_t)n >= v->iov_len) {
				n -= v->iov_len;
				dir->iov_i++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= n;
				n = 0;
			}
		}
	}
	dir->iov_i = dir->iov_n = 0;
	return SS_OK;
}

/* Releases d's buffer unless its filter keeps bytes in it. */
static void pump_release(ss_conn_t *c, int d)
{
	if (c->filter && c->filter[d].keeps(c, d))
		return;
	ss_conn_buf_release(c, d);
}

/* After a complete flush: SS_OK if more output is ready, SS_AGAIN if the
 * direction must read again, SS_ERR on a decode failure. */
static int pump_after_flush(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	if (dir->xf != SS_XF_DECODE) {
		pump_release(c, d);
		return SS_AGAIN;
	}
	dir->keep = 0;
	if (ss_pump_decode(c, d, NULL) != SS_OK)
		return SS_ERR;
	if (dir->iov_n)
		return SS_OK;
	pump_compact(c, d);
	return SS_AGAIN;
}

/* What a read said: PUMP_GOT when it brought bytes (n > 0), otherwise what
 * pump_fill returns. want is what the read asked for (0: a pipe drain). */
static int pump_got(ss_conn_t *c, int d, ssize_t n, size_t want)
{
	ss_dir_t *dir = &c->dir[d];

	/* A stream socket that gave less than asked was emptied: the next read
	 * would only say EAGAIN, so the pump waits for the watcher instead. */
	dir->drained = n > 0 && (size_t)n < want;
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			if (d == SS_OUT)
				c->out_err = errno;
			return SS_ERR;
		}
		if ((dir->lead || dir->hdr_pending) && !c->lead_wait)
			return pump_emit(c, d, 0);
		if (dir->xf == SS_XF_DECODE)
			pump_compact(c, d);
		else if (!dir->lead)
			pump_release(c, d);
		return SS_AGAIN;
	}
	if (n == 0) {
		dir->eof = true;
		if (dir->xf == SS_XF_DECODE) {
			if (dir->rend > dir->rpos)
				ss_debug("%s: stream ended inside a chunk", c->action);
			dir->rpos = dir->rend = dir->keep = 0;
			ss_conn_buf_release(c, d);
			return SS_OK;
		}
		if (dir->lead || dir->hdr_pending)
			return pump_emit(c, d, 0);
		ss_conn_buf_release(c, d);
		return SS_OK;
	}
	ss_conn_touch(c);
	/* A client's server answered: its health hears of it once. */
	if (d == SS_OUT && !c->answered && c->srv >= 0) {
		c->answered = true;
		ss_servers_answered(&c->inst->servers, c);
	}
	return PUMP_GOT;
}

/* The n bytes a read brought: plaintext goes out (sealed where the
 * direction encodes), a codec's stream is decoded. */
static int pump_take(ss_conn_t *c, int d, size_t n)
{
	ss_dir_t *dir = &c->dir[d];

	if (dir->xf != SS_XF_DECODE) {
		dir->bytes += n;
		ss_conn_count(c, d, n);
		return pump_emit(c, d, n);
	}
	dir->rend += n;
	if (ss_pump_decode(c, d, NULL) != SS_OK)
		return PUMP_BADDATA;
	if (!dir->iov_n)
		pump_compact(c, d);
	return SS_OK;
}

/* A filtered direction reads into one run, at most the filter's read_max:
 * slot 0 behind the lead bytes where it encodes, the buffer behind them
 * where it copies, behind the undecoded bytes where it decodes. */
static uint8_t *pump_run(ss_conn_t *c, int d, uint8_t *buf, size_t *len)
{
	ss_dir_t *dir = &c->dir[d];
	size_t room = c->filter[d].read_max, have;

	if (dir->xf == SS_XF_DECODE) {
		*len = SS_RELAY_BUF_SIZE - dir->rend;
		return buf + dir->rend;
	}
	if (dir->xf == SS_XF_ENCODE) {
		have = c->k->ops->slot0(c->k, dir->codec, pump_req_target(c, dir)) - dir->lead;
		*len = have < room ? have : room;
		return buf + c->k->layout.first + dir->lead;
	}
	have = SS_RELAY_BUF_SIZE - dir->lead;
	*len = have < room ? have : room;
	return buf + dir->lead;
}

/* pump_fill for a filtered direction: the filter says what comes next,
 * and sees the plaintext each read brings (a decoded one's, as it is
 * decoded). */
static int pump_fill_filtered(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	const ss_pump_filter_t *f = &c->filter[d];
	uint8_t *run;
	size_t want, keep;
	ssize_t n;

	if (f->idle(c, d))
		return PUMP_TAKEN;
	if (dir->eof)
		return PUMP_EOF;
	switch (f->next(c, d)) {
	case SS_FILTER_KEEP:
		break;
	case SS_FILTER_END:
		return pump_emit(c, d, 0);
	case SS_FILTER_WAIT:
		return SS_AGAIN;
	case SS_FILTER_HOLD:
		return PUMP_HOLD;
	default:
		return PUMP_FRAMING;
	}
	run = pump_run(c, d, ss_conn_buf(c, d), &want);
	do
		n = read(c->side[d].fd, run, want);
	while (n < 0 && errno == EINTR);
	int r = pump_got(c, d, n, want);
	if (r != PUMP_GOT)
		return r;
	keep = (size_t)n;
	if (dir->xf != SS_XF_DECODE) {
		r = f->data(c, d, run, keep, &keep);
		if (r == SS_FILTER_ERR)
			return PUMP_FRAMING;
		if (r == SS_FILTER_END && f->keeps(c, d))
			/* The next message's start is already here: it is
			 * taken up once this one is out, not when the
			 * source next wakes. */
			dir->drained = false;
		if (r == SS_FILTER_END && !keep && !dir->lead) {
			/* Nothing goes on: the buffer need not wait. */
			pump_release(c, d);
			return SS_OK;
		}
	}
	return pump_take(c, d, keep);
}

/* Reads once from the source and transforms. SS_OK: output may be pending
 * (or EOF was seen); SS_AGAIN: nothing to read now; SS_ERR: socket error;
 * PUMP_EOF: the source had ended already; PUMP_TAKEN: a filter took the
 * connection over. */
static int pump_fill(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	int fd = c->side[d].fd;
	uint8_t *buf;
	size_t want = 0; /* what the read asked for; 0: a pipe drain */
	ssize_t n;

	if (c->filter)
		return pump_fill_filtered(c, d);
	if (dir->eof)
		return PUMP_EOF;
	buf = ss_conn_buf(c, d);
	do {
		if (dir->xf == SS_XF_ENCODE) {
			/* Straight into the codec's slots, behind the lead bytes. */
			ss_codec_t *k = c->k;
			const ss_codec_layout_t *l = &k->layout;
			struct iovec iov[SS_CODEC_MAX_SLOTS];
			for (size_t i = 0; i < l->slots; i++)
				iov[i] = (struct iovec){buf + l->first + i * l->stride, l->payload};
			iov[0].iov_base = buf + l->first + dir->lead;
			iov[0].iov_len =
			    k->ops->slot0(k, dir->codec, pump_req_target(c, dir)) - dir->lead;
			want = iov[0].iov_len + (size_t)(l->slots - 1) * l->payload;
			n = readv(fd, iov, (int)l->slots);
		} else if (dir->xf == SS_XF_DECODE) {
			want = SS_RELAY_BUF_SIZE - dir->rend;
			n = read(fd, buf + dir->rend, want);
		} else if (dir->sp.in_pipe) {
			/* Splicing fell back: what it took from the source goes
			 * first. */
			n = ss_splice_drain(&dir->sp, buf, SS_RELAY_BUF_SIZE);
			if (n < 0) {
				errno = (int)-n;
				n = -1;
			}
		} else {
			want = SS_RELAY_BUF_SIZE - dir->lead;
			n = read(fd, buf + dir->lead, want);
		}
	} while (n < 0 && errno == EINTR);
	int r = pump_got(c, d, n, want);
	return r == PUMP_GOT ? pump_take(c, d, (size_t)n) : r;
}

/* The stream failed to decode: the codec says why. */
static void pump_fail(ss_conn_t *c, int d)
{
	ss_codec_t *k = c->k;
	const char *why = k->ops->why(k, c->dir[d].codec);

	/* A server never reacts to a bad client stream in a way that tells
	 * anything about where it went wrong. */
	if (!ss_conn_ops(c)->client && d == SS_IN) {
		ss_conn_refuse(c, why);
		return;
	}
	if (ss_conn_ops(c)->client && d == SS_OUT) {
		ss_conn_answer_refused(c, why);
		return;
	}
	ss_conn_close(c, why);
}

/* The source has ended and all it gave is written: half-close the sink, and
 * end the connection once both directions have. */
static void pump_shut(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	ss_conn_want(c, d, EV_READ, false);
	ss_conn_want(c, !d, EV_WRITE, false);
	if (c->dir[!d].shut) {
		/* Both ways are done and every byte was read: the close sends
		 * the last FIN, no shutdown needed. */
		dir->shut = true;
		ss_conn_close(c, NULL);
		return;
	}
	if (!dir->shut) {
		shutdown(c->side[!d].fd, SHUT_WR);
		dir->shut = true;
	}
}

/* Whether direction d moves its bytes with splice(2) now: nothing of its own
 * waits in user space, and it has not fallen back to copying. */
static bool pump_splicing(const ss_dir_t *dir)
{
	return dir->splice && !dir->sp.off && !dir->copy_once && !dir->iov_n && !dir->lead &&
	       !dir->hdr_pending;
}

/* Moves direction d with splice(2), with the same watchers, half-close and
 * counters as the copy below. true: the copy path must take the next read
 * (a fallback, or urgent data at the head of the source); false: done for
 * this wake-up. */
static bool pump_splice(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	int src = d, dst = !d;
	char why[96];

	for (int round = 0; round < PUMP_ROUNDS; round++) {
		size_t moved = 0;
		int err = 0;
		ss_splice_result_t r =
		    ss_splice_move(&dir->sp, c->side[src].fd, c->side[dst].fd, &moved, &err);

		if (moved) {
			dir->bytes += moved;
			dir->spliced += moved;
			ss_conn_count(c, d, moved);
			ss_conn_touch(c);
		}
		switch (r) {
		case SS_SPLICE_PROGRESS:
			continue;
		case SS_SPLICE_WAIT_READ:
			ss_conn_want(c, dst, EV_WRITE, false);
			ss_conn_want(c, src, EV_READ, true);
			return false;
		case SS_SPLICE_WAIT_WRITE:
			dir->outq = UINT32_MAX;
			ss_conn_want(c, src, EV_READ, false);
			ss_conn_want(c, dst, EV_WRITE, true);
			return false;
		case SS_SPLICE_EOF:
			ss_conn_want(c, dst, EV_WRITE, false);
			dir->eof = true;
			pump_shut(c, d);
			return false;
		case SS_SPLICE_COPY:
			if (dir->sp.off)
				ss_debug("%s: splice(2) unavailable here; copying", c->action);
			else
				dir->copy_once = true; /* urgent data: a read() steps over it */
			return true;
		case SS_SPLICE_ERROR:
			snprintf(why, sizeof(why), "relaying %s failed: %s",
				 d == SS_IN ? "to the outbound side" : "to the inbound side",
				 strerror(err));
			ss_conn_close(c, why);
			return false;
		}
	}
	/* Still busy: come back through the loop, after the other connections. */
	if (dir->sp.in_pipe)
		ss_conn_want(c, dst, EV_WRITE, true);
	else
		ss_conn_want(c, src, EV_READ, true);
	return false;
}

void ss_pump(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	int src = d, dst = !d;

	for (int round = 0; round < PUMP_ROUNDS; round++) {
		/* When pump_splice hands back (true), the next read is copied below. */
		if (pump_splicing(dir) && !pump_splice(c, d))
			return;
		if (dir->iov_n) {
			int r = pump_flush(c, dir, c->side[dst].fd);
			if (r == SS_AGAIN) {
				/* No sample yet: the idle timer takes one when it
				 * fires, so blocking costs no system call. */
				dir->outq = UINT32_MAX;
				ss_conn_want(c, src, EV_READ, false);
				ss_conn_want(c, dst, EV_WRITE, true);
				return;
			}
			if (r == SS_ERR) {
				if (d == SS_IN)
					c->out_err = errno;
				ss_conn_close(c, d == SS_IN ? "writing to the outbound side failed"
							    : "writing to the inbound side failed");
				return;
			}
			r = pump_after_flush(c, d);
			if (r == SS_ERR) {
				pump_fail(c, d);
				return;
			}
			if (r == SS_OK)
				continue;
			if (dir->drained && !dir->eof) {
				/* A held direction may go on once this one has
				 * written all it had. */
				if (c->filter && c->filter[d].idle(c, d))
					return;
				dir->drained = false;
				ss_conn_want(c, dst, EV_WRITE, false);
				ss_conn_want(c, src, EV_READ, true);
				return;
			}
			/* With the header out, splicing can take over. */
			if (pump_splicing(dir))
				continue;
		}
		ss_conn_want(c, dst, EV_WRITE, false);
		int r = pump_fill(c, d);
		if (r == PUMP_EOF) {
			pump_shut(c, d);
			return;
		}
		if (r == PUMP_TAKEN)
			return;
		dir->copy_once = false;
		if (r == SS_AGAIN) {
			ss_conn_want(c, src, EV_READ, true);
			return;
		}
		if (r == PUMP_BADDATA) {
			pump_fail(c, d);
			return;
		}
		if (r == PUMP_HOLD) {
			/* The other direction's filter hears when that one has
			 * written all it had: now, if it has. */
			ss_conn_want(c, src, EV_READ, false);
			if (!c->dir[!d].iov_n)
				c->filter[!d].idle(c, !d);
			return;
		}
		if (r == PUMP_FRAMING) {
			ss_conn_close(c, d == SS_IN ? "the inbound stream's framing is malformed"
						    : "the outbound stream's framing is malformed");
			return;
		}
		if (r == SS_ERR) {
			ss_conn_close(c, d == SS_IN ? "reading from the inbound side failed"
						    : "reading from the outbound side failed");
			return;
		}
	}
	/* Still busy: come back through the loop, after the other connections. */
	if (dir->iov_n)
		ss_conn_want(c, dst, EV_WRITE, true);
	else if (dir->eof)
		/* The last read found EOF with nothing left to write: no
		 * watcher would bring us back (the source may have been
		 * stopped by an earlier blocked write), so finish now. */
		pump_shut(c, d);
	else
		ss_conn_want(c, src, EV_READ, true);
}

void ss_pump_resume(ss_conn_t *c, int d)
{
	ev_feed_event(c->inst->loop, &c->side[d].rio, EV_READ);
}
