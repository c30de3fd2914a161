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

_Static_assert(SS_2022_CHUNKS <= SS_ENC_CHUNKS, "pump_fill's vector holds either layout");

uint8_t *ss_pump_lead_area(ss_conn_t *c, int d)
{
	uint8_t *buf = ss_conn_buf(c, d);

	if (c->dir[d].xf != SS_XF_ENCODE)
		return buf;
	return c->inst->sip022 ? buf + SS_2022_OFF : buf + SS_ENC_OFF + SS_AEAD_CHUNK_HDR;
}

/* SIP004: seals total plaintext bytes laid out in the chunk slots into one
 * contiguous run of wire bytes, salt first on the first call. */
static int pump_seal(ss_conn_t *c, ss_dir_t *dir, size_t total)
{
	uint8_t *base = dir->buf + SS_ENC_OFF, *start = base, *end = base;
	ss_aead_stream_t *s = dir->v1;
	size_t k = 0;

	if (!dir->started) {
		start = base - s->method->salt_len;
		if (ss_aead_enc_start(s, c->inst->cfg->key, start) < 0)
			return SS_ERR;
		dir->started = true;
	}
	while (total) {
		size_t m = total < SS_ENC_PAYLOAD ? total : SS_ENC_PAYLOAD;
		uint8_t *chunk = base + k++ * SS_CHUNK_STRIDE;
		if (ss_aead_enc_chunk(s, chunk, m) < 0)
			return SS_ERR;
		end = chunk + m + SS_AEAD_CHUNK_OVERHEAD;
		total -= m;
	}
	dir->iov[0] = (struct iovec){start, (size_t)(end - start)};
	dir->iov_i = 0;
	dir->iov_n = 1;
	return SS_OK;
}

/* SIP022: how many plaintext bytes the first slot takes. A request header
 * carries its payload inside a variable header of at most 0xFFFF bytes,
 * after the address and the padding length. */
static size_t pump_slot0_2022(ss_conn_t *c, const ss_dir_t *dir)
{
	uint8_t addr[SS_ADDR_MAX_ENCODED];
	size_t room;

	if (dir->started || !c->inst->ops->client)
		return SS_2022_PAYLOAD;
	room = SS_2022_MAX_PAYLOAD - 2 - ss_addr_encode(&c->target, addr, sizeof(addr));
	return room < SS_2022_PAYLOAD ? room : SS_2022_PAYLOAD;
}

/* SIP022: seals the total plaintext bytes laid out in the chunk slots (the
 * first at SS_2022_OFF) in place. The first unit of a client is the request
 * header carrying the first slot (or padding alone when total is 0); a
 * server's is the response header, bound to the request's salt, with the
 * first slot as its first chunk; every other unit is a chunk. */
static int pump_seal_2022(ss_conn_t *c, ss_dir_t *dir, size_t total)
{
	const ss_config_t *cfg = c->inst->cfg;
	ss_2022_stream_t *s = dir->v2;
	uint8_t *payload = dir->buf + SS_2022_OFF, *start;
	uint64_t now = (uint64_t)ev_now(c->inst->loop);
	size_t slot0 = pump_slot0_2022(c, dir);
	size_t n = total < slot0 ? total : slot0, len;

	if (dir->started) {
		start = payload - SS_2022_CHUNK_HDR;
		if (ss_2022_enc_chunk(s, start, n) < 0)
			return SS_ERR;
		len = n + SS_2022_CHUNK_OVERHEAD;
	} else if (c->inst->ops->client) {
		uint8_t addr[SS_ADDR_MAX_ENCODED];
		ss_2022_request_t req = {.addr = addr,
					 .addr_len = ss_addr_encode(&c->target, addr, sizeof(addr)),
					 .padding = SS_2022_PAD_AUTO,
					 .now = now};
		long h = ss_2022_enc_request(s, &cfg->psks, &req, payload, n, SS_2022_OFF);
		if (h < 0)
			return SS_ERR;
		/* The answer is bound to this request's salt. */
		ss_2022_dec_start_client(c->dir[SS_OUT].v2, cfg->psks.keys[cfg->psks.n - 1],
					 s->salt);
		start = payload - h;
		len = (size_t)h + n + SS_AEAD_TAG_LEN;
	} else {
		const ss_2022_stream_t *req = c->dir[SS_IN].v2;
		size_t h = SS_2022_RESP_HDR_LEN(s->method);
		start = payload - h;
		if (ss_2022_enc_start_response(s, req->user ? req->user->key : cfg->key,
					       req->salt) < 0 ||
		    ss_2022_enc_response(s, start, n, now) < 0)
			return SS_ERR;
		len = h + n + SS_AEAD_TAG_LEN;
	}
	dir->started = true;
	dir->iov[0] = (struct iovec){start, len};
	dir->iov_i = 0;
	dir->iov_n = 1;
	total -= n;
	/* The other slots are whole chunks, back to back; a request's first
	 * slot is shorter, so they may start after a gap: a second piece. */
	uint8_t *run = payload + SS_2022_STRIDE - SS_2022_CHUNK_HDR, *end = run;
	for (size_t k = 1; total; k++) {
		size_t m = total < SS_2022_PAYLOAD ? total : SS_2022_PAYLOAD;
		uint8_t *chunk = payload + k * SS_2022_STRIDE - SS_2022_CHUNK_HDR;
		if (ss_2022_enc_chunk(s, chunk, m) < 0)
			return SS_ERR;
		end = chunk + m + SS_2022_CHUNK_OVERHEAD;
		total -= m;
	}
	if (end != run) {
		if (start + len == run)
			dir->iov[0].iov_len += (size_t)(end - run);
		else
			dir->iov[dir->iov_n++] = (struct iovec){run, (size_t)(end - run)};
	}
	return SS_OK;
}

/* Turns the lead bytes (and n new ones) into pending output. */
static int pump_emit(ss_conn_t *c, ss_dir_t *dir, size_t n)
{
	size_t total = dir->lead + n;
	bool hdr = dir->hdr_pending;

	if (hdr)
		c->lead_wait = false;
	dir->lead = 0;
	dir->hdr_pending = false;
	if (total == 0 && !(hdr && c->inst->sip022))
		return SS_OK;
	if (dir->xf == SS_XF_ENCODE)
		return c->inst->sip022 ? pump_seal_2022(c, dir, total) : pump_seal(c, dir, total);
	dir->iov[0] = (struct iovec){dir->buf, total};
	dir->iov_i = 0;
	dir->iov_n = 1;
	return SS_OK;
}

int ss_pump_decode(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	ss_span_t spans[SS_DIR_MAX_IOV];
	size_t consumed = 0, ns = 0, i;
	size_t room = SS_DIR_MAX_IOV - dir->iov_n;
	uint8_t *p = dir->buf + dir->rpos;
	size_t len = dir->rend - dir->rpos;
	int r;

	if (room == 0 || dir->rpos >= dir->rend)
		return SS_OK;
	if (c->inst->sip022)
		r = ss_2022_dec(dir->v2, p, len, (uint64_t)ev_now(c->inst->loop), &consumed, spans,
				room, &ns, NULL);
	else
		r = ss_aead_dec(dir->v1, p, len, &consumed, spans, room, &ns);
	if (r != SS_OK)
		return SS_ERR;
	dir->rpos += consumed;
	for (i = 0; i < ns; i++) {
		dir->iov[dir->iov_n++] = (struct iovec){spans[i].ptr, spans[i].len};
		dir->bytes += spans[i].len;
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

/* After a complete flush: SS_OK if more output is ready, SS_AGAIN if the
 * direction must read again, SS_ERR on a decode failure. */
static int pump_after_flush(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	if (dir->xf != SS_XF_DECODE) {
		ss_conn_buf_release(c, d);
		return SS_AGAIN;
	}
	dir->keep = 0;
	if (ss_pump_decode(c, d) != SS_OK)
		return SS_ERR;
	if (dir->iov_n)
		return SS_OK;
	pump_compact(c, d);
	return SS_AGAIN;
}

/* Reads once from the source and transforms. SS_OK: output may be pending
 * (or EOF was seen); SS_AGAIN: nothing to read now; SS_ERR: socket error. */
static int pump_fill(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];
	int fd = c->side[d].fd;
	uint8_t *buf = ss_conn_buf(c, d);
	size_t want = 0; /* what the read asked for; 0: a pipe drain */
	ssize_t n;

	do {
		if (dir->xf == SS_XF_ENCODE) {
			/* Straight into the chunk slots, behind the lead bytes. */
			bool v2 = c->inst->sip022;
			uint8_t *base =
			    v2 ? buf + SS_2022_OFF : buf + SS_ENC_OFF + SS_AEAD_CHUNK_HDR;
			size_t payload = v2 ? SS_2022_PAYLOAD : SS_ENC_PAYLOAD;
			size_t stride = v2 ? SS_2022_STRIDE : SS_CHUNK_STRIDE;
			int slots = v2 ? SS_2022_CHUNKS : SS_ENC_CHUNKS;
			struct iovec iov[SS_ENC_CHUNKS];
			for (int k = 0; k < slots; k++)
				iov[k] = (struct iovec){base + k * stride, payload};
			iov[0].iov_base = base + dir->lead;
			iov[0].iov_len = (v2 ? pump_slot0_2022(c, dir) : payload) - dir->lead;
			want = iov[0].iov_len + (size_t)(slots - 1) * payload;
			n = readv(fd, iov, slots);
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
	/* A stream socket that gave less than asked was emptied: the next read
	 * would only say EAGAIN, so the pump waits for the watcher instead. */
	dir->drained = n > 0 && (size_t)n < want;

	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return SS_ERR;
		if ((dir->lead || dir->hdr_pending) && !c->lead_wait)
			return pump_emit(c, dir, 0);
		if (dir->xf == SS_XF_DECODE)
			pump_compact(c, d);
		else if (!dir->lead)
			ss_conn_buf_release(c, d);
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
			return pump_emit(c, dir, 0);
		ss_conn_buf_release(c, d);
		return SS_OK;
	}
	ss_conn_touch(c);
	if (dir->xf != SS_XF_DECODE) {
		dir->bytes += n;
		return pump_emit(c, dir, n);
	}
	dir->rend += n;
	if (ss_pump_decode(c, d) != SS_OK)
		return PUMP_BADDATA;
	if (!dir->iov_n)
		pump_compact(c, d);
	return SS_OK;
}

static void pump_fail(ss_conn_t *c, int d, const char *what)
{
	/* A server never reacts to a bad client stream in a way that tells
	 * anything about where it went wrong. */
	if (!c->inst->ops->client && d == SS_IN) {
		ss_conn_drain(c, what);
		return;
	}
	ss_conn_close(c, what);
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
				ss_conn_close(c, d == SS_IN ? "writing to the outbound side failed"
							    : "writing to the inbound side failed");
				return;
			}
			r = pump_after_flush(c, d);
			if (r == SS_ERR) {
				pump_fail(c, d, "decryption failed");
				return;
			}
			if (r == SS_OK)
				continue;
			if (dir->drained && !dir->eof) {
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
		if (dir->eof) {
			pump_shut(c, d);
			return;
		}
		int r = pump_fill(c, d);
		dir->copy_once = false;
		if (r == SS_AGAIN) {
			ss_conn_want(c, src, EV_READ, true);
			return;
		}
		if (r == PUMP_BADDATA) {
			pump_fail(c, d, "decryption failed");
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
