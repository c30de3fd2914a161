/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"
#include "relay/conn_internal.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* Connection lifecycle: accept, timers, drain, deferred close; the outbound
 * leg is connected in conn_connect.c. */

/* Every idle connection holds a slot in each relay: a field that pushes it
 * past 1024 bytes costs 128 more per connection and relay (the slot is a
 * multiple of 64). Make room elsewhere first, or measure the idle bench. */
_Static_assert(sizeof(ss_conn_t) <= 1024, "ss_conn_t grew past 1024 bytes");

#define LEAD_WAIT 0.02 /* how long a first payload may take to ride with the header */
/* How long an expendable connection keeps its slot before it may be closed
 * to make room for a new one: a real client's first bytes come within a
 * round trip of its accept, a lost and resent packet included. */
#define EXPENDABLE_GRACE 1.0

const char *ss_conn_peer(const ss_conn_t *c, char *buf, size_t len)
{
	return ss_sockaddr_format(&c->peer.sa, buf, len);
}

uint8_t *ss_conn_buf(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	if (!dir->buf) {
		dir->buf = ss_pool_get(&c->inst->bufs, NULL);
		/* The pool holds two buffers per slot, so this cannot fail. */
		if (!dir->buf)
			abort();
		dir->iov = (struct iovec *)(dir->buf + SS_RELAY_BUF_SIZE);
	}
	return dir->buf;
}

void ss_conn_buf_release(ss_conn_t *c, int d)
{
	ss_dir_t *dir = &c->dir[d];

	if (dir->buf) {
		ss_pool_put(&c->inst->bufs, dir->buf);
		dir->buf = NULL;
		dir->iov = NULL;
	}
	dir->rpos = dir->rend = dir->keep = 0;
	dir->lead = 0;
}

void ss_conn_want(ss_conn_t *c, int side, int events, bool on)
{
	ev_io *w = events == EV_READ ? &c->side[side].rio : &c->side[side].wio;

	if (c->side[side].fd < 0)
		return;
	if (on)
		ev_io_start(c->inst->loop, w);
	else
		ev_io_stop(c->inst->loop, w);
}

void ss_conn_touch(ss_conn_t *c)
{
	c->last_active = ev_now(c->inst->loop);
}

/* Expendable connections, oldest first: a new one joins at the newest end,
 * so the oldest is the one whose grace ended first. */
static void conn_expendable_add(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;

	c->expendable = true;
	c->exp_next = NULL;
	c->exp_prev = inst->expendable.newest;
	if (c->exp_prev)
		c->exp_prev->exp_next = c;
	else
		inst->expendable.oldest = c;
	inst->expendable.newest = c;
}

static void conn_expendable_remove(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;

	if (!c->expendable)
		return;
	if (c->exp_prev)
		c->exp_prev->exp_next = c->exp_next;
	else
		inst->expendable.oldest = c->exp_next;
	if (c->exp_next)
		c->exp_next->exp_prev = c->exp_prev;
	else
		inst->expendable.newest = c->exp_prev;
	c->exp_prev = c->exp_next = NULL;
	c->expendable = false;
}

/* Every change of state goes through here. A connection that leaves its
 * first handshake for anything but a drain has proven itself (on ss-server:
 * its request authenticated): it is no longer expendable, and the idle
 * timeout applies from then on. */
void ss_conn_enter(ss_conn_t *c, ss_conn_state_t s)
{
	if (s != SS_CONN_HANDSHAKE && s != SS_CONN_DRAIN)
		conn_expendable_remove(c);
	c->state = s;
}

void ss_conn_arm_timer(ss_conn_t *c)
{
	struct ev_loop *loop = c->inst->loop;
	ev_tstamp now = ev_now(loop);
	/* An expendable connection's bytes do not move its end (see
	 * conn_timer_cb). */
	ev_tstamp at = c->expendable ? c->deadline : c->last_active + c->inst->timeout;

	if (c->state == SS_CONN_CONNECTING || c->state == SS_CONN_RESOLVING)
		at = at < c->deadline ? at : c->deadline;
	if (c->lead_wait && now + LEAD_WAIT < at)
		at = now + LEAD_WAIT;
	ev_timer_stop(loop, &c->timer);
	ev_timer_set(&c->timer, at > now ? at - now : 0.001, 0.);
	ev_timer_start(loop, &c->timer);
}

/* The outbound connect ended (err 0 or an errno value). A client's connect
 * to a server that failed goes on to the next server; the handshake hears
 * only of the connect that worked, or of the last failure. */
void ss_conn_connected(ss_conn_t *c, int err)
{
	struct ss_instance *inst = c->inst;

	if (c->srv < 0) {
		ss_conn_ops(c)->connected(c, err);
		return;
	}
	bool moved = ss_servers_connected(&inst->servers, c->srv, err);
	if (!err) {
		c->connected = true;
		c->srv_since = ev_now(inst->loop);
		ss_conn_ops(c)->connected(c, 0);
		return;
	}
	if (c->side[SS_OUT].fd >= 0) {
		ev_io_stop(inst->loop, &c->side[SS_OUT].rio);
		ev_io_stop(inst->loop, &c->side[SS_OUT].wio);
		close(c->side[SS_OUT].fd);
		c->side[SS_OUT].fd = -1;
	}
	ss_servers_release(&inst->servers, c->srv, false);
	/* Its name now leads elsewhere: that address is worth a try too. */
	if (moved)
		c->tried &= (uint16_t) ~(1u << c->srv);
	c->srv = -1;
	c->out_err = err;
	ss_conn_connect_server(c);
}

/* Whether a direction blocked on a slow reader has seen its sink's queue go
 * down since the last look: the kernel holds far more than one buffer, so a
 * reader can make steady progress for longer than the idle timeout without
 * our writer ever waking up. The first look after blocking only takes a
 * sample (outq is UINT32_MAX then), so a reader that has stopped for good is
 * closed after at most twice the timeout. */
static bool conn_sink_moving(ss_conn_t *c)
{
	bool moving = false;

	for (int d = 0; d < 2; d++) {
		ss_dir_t *dir = &c->dir[d];
		if ((!dir->iov_n && !dir->sp.in_pipe) || c->side[!d].fd < 0)
			continue;
		long q = ss_sock_outq(c->side[!d].fd);
		if (q >= 0 && (uint32_t)q < dir->outq) {
			dir->outq = (uint32_t)q;
			moving = true;
		}
	}
	return moving;
}

/* Reads and discards what the inbound side has sent, a bounded number of
 * reads, like the pump: SS_AGAIN when it has nothing more for now, SS_OK at
 * its EOF, SS_ERR on an error. Bytes count as activity for the idle timer
 * (a UDP control connection's); an expendable connection's end does not
 * look at it. */
static int conn_discard(ss_conn_t *c)
{
	uint8_t *buf = ss_conn_buf(c, SS_IN);
	ssize_t n = -1;

	for (int round = 0; round < 8; round++) {
		errno = EAGAIN;
		n = read(c->side[SS_IN].fd, buf, SS_RELAY_BUF_SIZE);
		if (n > 0) {
			ss_conn_touch(c);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	ss_conn_buf_release(c, SS_IN);
	if (n == 0)
		return SS_OK;
	return errno == EAGAIN || errno == EWOULDBLOCK ? SS_AGAIN : SS_ERR;
}

/* Ends an expendable connection, at its deadline or to make room, the one
 * way a prober may see whatever it sent: a FIN. It goes out first, so that a
 * byte that arrives after the last read (which makes the kernel answer the
 * close with a reset) comes after the end of the stream the peer reads;
 * what has arrived is read away, so that the close itself sends no reset. */
static void conn_end_quietly(ss_conn_t *c, const char *reason)
{
	shutdown(c->side[SS_IN].fd, SHUT_WR);
	(void)conn_discard(c);
	ss_conn_close(c, reason);
}

/* An expendable connection (one that has not completed a handshake since
 * it was accepted, or one draining) ends at a deadline fixed when it became
 * expendable: the accept + the timeout for a new one, and a refusal keeps
 * that deadline, so the end comes at the same moment and the same way
 * whatever and however much the peer sends, and whether and when it was
 * refused. Were bytes to push it back, one byte a second would hold a slot
 * for ever; were the drain's clock started by the refusal, when the close
 * came would tell a prober how many bytes it took to be refused (the salt
 * length + 18, a fingerprint of the method). */
static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_conn_t *c = w->data;
	ev_tstamp now = ev_now(loop);
	(void)revents;

	if (c->expendable) {
		if (now < c->deadline)
			ss_conn_arm_timer(c);
		else
			conn_end_quietly(c, c->state == SS_CONN_HANDSHAKE
						? "no whole request before the timeout"
						: NULL);
		return;
	}
	if (c->lead_wait) {
		c->lead_wait = false;
		ss_pump(c, SS_IN);
		if (c->state == SS_CONN_CLOSED)
			return;
	}
	bool connecting = c->state == SS_CONN_CONNECTING || c->state == SS_CONN_RESOLVING;
	if (connecting && now >= c->deadline) {
		if (c->srv_wait) {
			/* No server address came in time. */
			ss_servers_unwait(&c->inst->servers, c);
			ss_conn_connected(c, c->out_err ? c->out_err : ETIMEDOUT);
		} else if (c->state == SS_CONN_CONNECTING) {
			ss_conn_connected(c, ETIMEDOUT);
		} else {
			ss_conn_close(c, "name lookup timed out");
		}
		return;
	}
	if (now >= c->last_active + c->inst->timeout) {
		if (c->state == SS_CONN_STREAM && conn_sink_moving(c)) {
			ss_conn_touch(c);
		} else {
			ss_conn_close(c, "idle timeout");
			return;
		}
	}
	ss_conn_arm_timer(c);
}

/* The watcher stays on and brings us back, after the other connections,
 * while the peer sends more than a few reads take. */
static void conn_drain_cb(ss_conn_t *c)
{
	if (conn_discard(c) != SS_AGAIN)
		ss_conn_close(c, NULL);
}

static void conn_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_conn_t *c = w->data;
	int side = w == &c->side[SS_IN].rio || w == &c->side[SS_IN].wio ? SS_IN : SS_OUT;
	(void)loop;
	(void)revents;

	switch (c->state) {
	case SS_CONN_HANDSHAKE:
		if (side == SS_IN && w == &c->side[SS_IN].rio)
			ss_conn_ops(c)->inbound(c);
		break;
	case SS_CONN_RESOLVING:
	case SS_CONN_CONNECTING:
		if (side == SS_OUT && w == &c->side[SS_OUT].wio) {
			int err = ss_sock_error(c->side[SS_OUT].fd);
			ev_io_stop(c->inst->loop, &c->side[SS_OUT].wio);
			ss_conn_connected(c, err);
		} else if (w == &c->side[SS_IN].rio) {
			/* More from the client before the outbound side is
			 * ready: it waits in the kernel. Stopping only now
			 * spares the usual connection two epoll_ctl calls. */
			ev_io_stop(c->inst->loop, w);
		}
		break;
	case SS_CONN_STREAM:
		/* A read watcher on side s drives direction s; a write watcher
		 * drives the direction that writes to s. */
		if (w == &c->side[side].rio)
			ss_pump(c, side);
		else
			ss_pump(c, !side);
		break;
	case SS_CONN_DRAIN:
	case SS_CONN_UDP_CONTROL:
		conn_drain_cb(c);
		break;
	default:
		break;
	}
}

void ss_conn_side_init(ss_conn_t *c, int side, int fd)
{
	c->side[side].fd = fd;
	ev_io_init(&c->side[side].rio, conn_io_cb, fd, EV_READ);
	ev_io_init(&c->side[side].wio, conn_io_cb, fd, EV_WRITE);
	c->side[side].rio.data = c;
	c->side[side].wio.data = c;
}

/* Called once per fresh slot: codec states are set up as connections
 * come to need them (ss_conn_use_codec) and kept across connections. */
static void conn_slot_init(struct ss_instance *inst, ss_conn_t *c)
{
	memset(c, 0, sizeof(*c) + inst->slot_states);
}

static void *conn_state(ss_conn_t *c, unsigned cls, int which)
{
	const ss_codec_class_t *k = &c->inst->classes[cls];

	return k->size ? c->tail + k->off + (size_t)which * k->size : NULL;
}

void ss_conn_slot_free(ss_conn_t *c)
{
	for (unsigned cls = 0; cls < c->inst->n_classes; cls++) {
		if (!(c->classes >> cls & 1))
			continue;
		for (int d = 0; d < 2; d++)
			ss_codec_release(c->inst->classes[cls].k, conn_state(c, cls, d));
	}
	c->classes = 0;
}

/* The directions' codecs: a client encodes what it reads inbound and
 * decodes what comes back; a server the other way round. */
static int conn_encoder(const ss_conn_t *c)
{
	return ss_conn_ops(c)->client ? SS_IN : SS_OUT;
}

/* The connection goes through codec k (of class cls): its states, set up
 * in this slot on the class's first use, are started with k's keys; a
 * codec it used before (a server it failed over from) lets go of its
 * keys. 0 or -errno. */
int ss_conn_use_codec(ss_conn_t *c, ss_codec_t *k, unsigned cls)
{
	int enc = conn_encoder(c), rc;

	if (c->k)
		for (int d = 0; d < 2; d++)
			ss_codec_reset(c->k, c->dir[d].codec);
	c->k = NULL;
	if (!(c->classes >> cls & 1)) {
		ss_codec_t *ck = c->inst->classes[cls].k;
		if ((rc = ss_codec_init(ck, conn_state(c, cls, 0))) < 0)
			return rc;
		if ((rc = ss_codec_init(ck, conn_state(c, cls, 1))) < 0) {
			ss_codec_release(ck, conn_state(c, cls, 0));
			return rc;
		}
		c->classes |= (uint16_t)(1u << cls);
	}
	for (int d = 0; d < 2; d++) {
		c->dir[d].codec = conn_state(c, cls, d);
		c->dir[d].xf = k->ops->identity ? SS_XF_COPY
			       : d == enc       ? SS_XF_ENCODE
						: SS_XF_DECODE;
	}
	c->k = k;
	ss_codec_start(k, c->dir[enc].codec, c->dir[!enc].codec);
	return 0;
}

/* A direction's stream state as it starts: no codec (a client's comes
 * with its server, ss_conn_use_codec), nothing pending, no splicing yet. Its
 * buffer and byte counts are the caller's. */
void ss_conn_dir_fresh(ss_dir_t *dir)
{
	dir->xf = SS_XF_COPY;
	dir->codec = NULL;
	dir->keep = dir->rpos = dir->rend = 0;
	dir->lead = 0;
	dir->iov_n = dir->iov_i = 0;
	dir->outq = UINT32_MAX;
	dir->eof = dir->shut = dir->hdr_pending = false;
	dir->splice = dir->copy_once = dir->drained = false;
	ss_splice_init(&dir->sp, NULL);
}

void ss_conn_reset(ss_conn_t *c)
{
	c->lead_wait = c->bypass = false;
	c->filter = NULL;
	c->k = NULL;
	c->srv = -1;
	c->connected = c->answered = false;
	c->tried = 0;
	c->out_err = 0;
	for (int d = 0; d < 2; d++)
		ss_conn_dir_fresh(&c->dir[d]);
}

void ss_conn_accept(struct ss_instance *inst, bool door, int fd, const struct sockaddr *peer,
		    socklen_t peerlen)
{
	const ss_handshake_ops_t *ops = door ? inst->door_ops : inst->ops;
	ss_conn_t *c = ss_pool_get(&inst->conns, NULL);

	if (!c) {
		close(fd);
		return;
	}
	/* A slot is set up on first use (inst still NULL in its zero page). */
	if (!c->inst)
		conn_slot_init(inst, c);
	c->inst = inst;
	c->door = door;
	c->state = SS_CONN_HANDSHAKE;
	memset(&c->hs, 0, sizeof(c->hs));
	c->lookup_busy = c->srv_wait = false;
	c->srv_next = NULL;
	c->next_closed = NULL;
	c->fig = 0;
	c->action = ops->name;
	ss_inaddr_set(&c->peer, peer, peerlen);
	for (int d = 0; d < 2; d++) {
		ss_dir_t *dir = &c->dir[d];
		dir->buf = NULL;
		dir->iov = NULL;
		dir->bytes = dir->spliced = 0;
	}
	ss_conn_reset(c);
	if (!ops->client && ss_conn_use_codec(c, &inst->codec, 0) < 0) {
		ss_err("cannot set up the cipher state");
		ss_pool_put(&inst->conns, c);
		close(fd);
		return;
	}
	ss_conn_side_init(c, SS_IN, fd);
	ss_conn_side_init(c, SS_OUT, -1);
	ev_init(&c->timer, conn_timer_cb);
	c->timer.data = c;
	ss_sock_tune_accepted(fd, &inst->sockopts, peer);
	inst->stats.accepted++;
	inst->stats.active++;
	ss_instance_load(inst, 1);
	ss_conn_touch(c);
	/* Expendable until its handshake completes (conn_timer_cb). */
	c->expendable = false;
	c->deadline = c->last_active + inst->timeout;
	conn_expendable_add(c);
	ss_conn_arm_timer(c);
	ss_conn_want(c, SS_IN, EV_READ, true);
	ops->accepted(c);
	/* A client that speaks first has usually sent its first bytes by the
	 * time it is accepted: reading now spares a trip through the loop. */
	if (ops->client_first && c->state == SS_CONN_HANDSHAKE)
		ops->inbound(c);
}

void ss_conn_close(ss_conn_t *c, const char *reason)
{
	struct ss_instance *inst = c->inst;
	char peer[SS_ADDR_STRLEN];

	if (c->state == SS_CONN_CLOSED)
		return;
	if (reason)
		ss_info("%s %s: %s", c->action, ss_conn_peer(c, peer, sizeof(peer)), reason);
	ss_debug("%s %s: closed, %llu bytes up, %llu bytes down, %llu spliced%s", c->action,
		 ss_conn_peer(c, peer, sizeof(peer)), (unsigned long long)c->dir[SS_IN].bytes,
		 (unsigned long long)c->dir[SS_OUT].bytes,
		 (unsigned long long)(c->dir[SS_IN].spliced + c->dir[SS_OUT].spliced),
		 c->bypass ? " (bypassed)" : "");
	if (c->state == SS_CONN_UDP_CONTROL)
		ss_udp_control_closed(&inst->udp, c);
	if (c->srv_wait)
		ss_servers_unwait(&inst->servers, c);
	if (c->srv >= 0)
		ss_servers_ended(&inst->servers, c);
	c->srv = -1;
	ss_conn_enter(c, SS_CONN_CLOSED);
	ev_timer_stop(inst->loop, &c->timer);
	for (int s = 0; s < 2; s++) {
		if (c->side[s].fd < 0)
			continue;
		ev_io_stop(inst->loop, &c->side[s].rio);
		ev_io_stop(inst->loop, &c->side[s].wio);
		close(c->side[s].fd);
		c->side[s].fd = -1;
	}
	if (c->fig) {
		ss_fig_add(&ss_conn_fig(c)->closed, 1);
		c->fig = 0;
	} else {
		inst->stats.bytes_up += c->dir[SS_IN].bytes;
		inst->stats.bytes_down += c->dir[SS_OUT].bytes;
	}
	for (int d = 0; d < 2; d++) {
		ss_conn_buf_release(c, d);
		ss_splice_close(&c->dir[d].sp);
		c->dir[d].iov_n = c->dir[d].iov_i = 0;
		if (c->k)
			ss_codec_reset(c->k, c->dir[d].codec);
	}
	c->k = NULL;
	/* Freed by the reaper after this dispatch, so no handler up the stack
	 * touches a recycled slot; a lookup still in flight holds it longer. */
	c->next_closed = inst->closed;
	inst->closed = c;
	ev_prepare_start(inst->loop, &inst->reaper);
}

void ss_conn_reap(struct ss_instance *inst)
{
	ss_conn_t *c = inst->closed, *keep = NULL;

	inst->closed = NULL;
	while (c) {
		ss_conn_t *next = c->next_closed;
		if (c->lookup_busy) {
			c->next_closed = keep;
			keep = c;
		} else {
			inst->stats.active--;
			ss_instance_load(inst, -1);
			ss_pool_put(&inst->conns, c);
			/* This may accept, and a new connection may close at
			 * once: it joins inst->closed, kept below. */
			ss_instance_slot_freed(inst);
		}
		c = next;
	}
	while (keep) {
		ss_conn_t *next = keep->next_closed;
		keep->next_closed = inst->closed;
		inst->closed = keep;
		keep = next;
	}
	if (!inst->closed)
		ev_prepare_stop(inst->loop, &inst->reaper);
}

int ss_conn_make_room(struct ss_instance *inst, ev_tstamp *wait)
{
	ss_conn_t *c = inst->expendable.oldest;
	ev_tstamp now = ev_now(inst->loop), since;

	if (!c)
		return -ENOENT;
	/* It became expendable a timeout before its deadline. Closing it
	 * ends its stage as the deadline would have, only sooner, for a
	 * reason the peer's bytes have no part in: every expendable
	 * connection takes its turn alike, refused or not. */
	since = c->deadline - inst->timeout;
	if (now < since + EXPENDABLE_GRACE) {
		*wait = since + EXPENDABLE_GRACE - now;
		return -EAGAIN;
	}
	conn_end_quietly(c, "closed to make room for a new connection");
	return 0;
}

static void conn_drain(ss_conn_t *c)
{
	if (c->side[SS_OUT].fd >= 0) {
		ev_io_stop(c->inst->loop, &c->side[SS_OUT].rio);
		ev_io_stop(c->inst->loop, &c->side[SS_OUT].wio);
		close(c->side[SS_OUT].fd);
		c->side[SS_OUT].fd = -1;
	}
	ev_io_stop(c->inst->loop, &c->side[SS_IN].wio);
	for (int d = 0; d < 2; d++) {
		ss_conn_buf_release(c, d);
		c->dir[d].iov_n = c->dir[d].iov_i = 0;
	}
	/* One that never completed a handshake keeps the deadline of its
	 * accept (conn_timer_cb). */
	if (!c->expendable) {
		c->deadline = ev_now(c->inst->loop) + c->inst->timeout;
		conn_expendable_add(c);
		ss_instance_expendable(c->inst);
	}
	ss_conn_enter(c, SS_CONN_DRAIN);
	c->lead_wait = false;
	ss_conn_want(c, SS_IN, EV_READ, true);
	ss_conn_arm_timer(c);
}

void ss_conn_drain(ss_conn_t *c, const char *reason)
{
	char peer[SS_ADDR_STRLEN];

	ss_info("%s %s: %s; reading until the peer closes", c->action,
		ss_conn_peer(c, peer, sizeof(peer)), reason);
	conn_drain(c);
}

void ss_conn_refuse(ss_conn_t *c, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	/* The codecs name a replay so in their reason. */
	ss_instance_count_refused(c->inst, c->side[SS_IN].fd,
				  strstr(why, "replay") ? SS_REFUSED_REPLAY : SS_REFUSED_AUTH);
	ss_refused_note(&c->inst->refused, &c->peer.sa, "%s %s: refused: %s", c->action,
			ss_conn_peer(c, peer, sizeof(peer)), why);
	conn_drain(c);
}

void ss_conn_answer_refused(ss_conn_t *c, const char *why)
{
	const ss_server_t *s = c->srv >= 0 ? &c->inst->servers.s[c->srv] : NULL;
	char peer[SS_ADDR_STRLEN];

	ss_refused_note(&c->inst->refused,
			s && s->addr_len ? (const struct sockaddr *)&s->addr : NULL,
			"%s %s: the answer of server %s is refused: %s", c->action,
			ss_conn_peer(c, peer, sizeof(peer)), s ? s->name : "-", why);
	ss_conn_close(c, NULL);
}

size_t ss_instance_fig_port(struct ss_instance *inst, int fd)
{
	const ss_fig_layout_t *l = &inst->shared->fig_layout;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	/* One port (the common case) costs no call. */
	if (l->n_ports < 2 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	return ss_fig_port_index(l, ss_sockaddr_port((struct sockaddr *)&ss));
}

void ss_conn_fig_open(ss_conn_t *c, size_t user)
{
	struct ss_instance *inst = c->inst;
	const ss_fig_layout_t *l = &inst->shared->fig_layout;
	ss_fig_row_t *f;

	if (c->fig)
		return;
	if (user > l->n_users)
		user = 0;
	c->fig =
	    (uint32_t)(ss_instance_fig_port(inst, c->side[SS_IN].fd) * (l->n_users + 1) + user + 1);
	f = ss_conn_fig(c);
	ss_fig_add(&f->opened, 1);
	for (int d = 0; d < 2; d++)
		ss_fig_add(&f->bytes[d], c->dir[d].bytes);
}

void ss_conn_stream(ss_conn_t *c)
{
	ss_conn_fig_open(c, 0);
	/* Bytes that need no transform go from socket to socket in the
	 * kernel: an identity codec's after the header, and bypassed
	 * connections. */
	for (int d = 0; d < 2; d++) {
		c->dir[d].splice = c->dir[d].xf == SS_XF_COPY && c->inst->splice_ok && !c->filter;
		if (c->dir[d].splice)
			ss_splice_use_pool(&c->dir[d].sp, &c->inst->pipes);
	}
	ss_conn_enter(c, SS_CONN_STREAM);
	ss_conn_touch(c);
	ss_conn_arm_timer(c);
	ss_pump(c, SS_IN);
	if (c->state != SS_CONN_STREAM)
		return;
	/* The outbound socket has only just connected, so a read now would
	 * almost always say EAGAIN: its watcher reports the first bytes. */
	ss_conn_want(c, SS_OUT, EV_READ, true);
}

void ss_conn_client_stream(ss_conn_t *c, const uint8_t *extra, size_t n)
{
	ss_dir_t *dir = &c->dir[SS_IN];
	uint8_t *lead;
	size_t hdr;

	dir->rpos = dir->rend = 0;
	lead = ss_pump_lead_area(c, SS_IN);
	/* The codec puts the target in front of the first bytes or in its own
	 * header; a bypassed connection sends none. */
	hdr = c->bypass ? 0 : c->k->ops->put_target(c->k, &c->target, lead, SS_ADDR_MAX_ENCODED);
	if (n)
		memmove(lead + hdr, extra, n);
	dir->lead = hdr + n;
	dir->hdr_pending = !c->bypass;
	/* Wait a moment for the first payload, so it rides with the header. */
	c->lead_wait = n == 0 && !c->bypass;
	ss_conn_stream(c);
}

void ss_conn_udp_control(ss_conn_t *c)
{
	ss_conn_buf_release(c, SS_IN);
	ss_conn_enter(c, SS_CONN_UDP_CONTROL);
	c->action = "socks5 udp";
	ss_udp_control_add(&c->inst->udp, c);
	ss_conn_touch(c);
	ss_conn_arm_timer(c);
	ss_conn_want(c, SS_IN, EV_READ, true);
}
