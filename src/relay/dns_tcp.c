/* SPDX-License-Identifier: MIT */
/* The DNS relay over TCP (RFC 1035 4.2.2, RFC 7766): clients that ask over
 * it, each message behind its two-byte length, one query at a time and
 * answered in order; and the connections to a name server a query takes
 * when its answer came back truncated, or when its path has no UDP, one
 * connection a query. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/dns_internal.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* Connections one readiness event of the listener takes. */
#define DNS_ACCEPT_BATCH 16

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* --- clients --- */

void ss_dns_client_close(ss_dns_t *d, ss_dns_client_t *c)
{
	ev_io_stop(d->loop, &c->rio);
	ev_io_stop(d->loop, &c->wio);
	ev_timer_stop(d->loop, &c->idle);
	close(c->fd);
	c->fd = -1;
	c->gen++; /* an answer still owed to it finds no one */
}

static void dns_client_end(ss_dns_t *d, ss_dns_client_t *c, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	if (why)
		ss_info("dns tcp %s: closed: %s",
			ss_sockaddr_format(&c->peer.sa, peer, sizeof(peer)), why);
	ss_dns_client_close(d, c);
}

/* The client reads while it has no query in flight and nothing left to
 * write: one answer at a time, in the order it asked. */
static void dns_client_want(ss_dns_t *d, ss_dns_client_t *c)
{
	bool read = !c->waiting && c->out_n == 0;

	if (read && !ev_is_active(&c->rio))
		ev_io_start(d->loop, &c->rio);
	else if (!read && ev_is_active(&c->rio))
		ev_io_stop(d->loop, &c->rio);
}

/* The queries whole in its buffer, one after the other while each is
 * answered at once (from the cache). */
static void dns_client_process(ss_dns_t *d, ss_dns_client_t *c)
{
	int index = (int)(c - d->clients);

	c->processing = true;
	while (c->fd >= 0 && !c->waiting && c->out_n == 0 && c->in_n >= 2) {
		size_t len = get16(c->in);
		ss_dns_asker_t who = {.client = index, .gen = c->gen};
		if (len > SS_DNS_QUERY_MAX || len < SS_DNS_HEADER_LEN) {
			dns_client_end(d, c, "a query of a size no query has");
			break;
		}
		if (c->in_n < 2 + len)
			break;
		memcpy(d->msg, c->in + 2, len);
		c->in_n -= 2 + len;
		memmove(c->in, c->in + 2 + len, c->in_n);
		c->waiting = true;
		if (ss_dns_query_in(d, &who, d->msg, len) != SS_OK)
			dns_client_end(d, c, "a query dropped");
	}
	c->processing = false;
	if (c->fd >= 0)
		dns_client_want(d, c);
}

/* Writes what it has to write; false when the client is gone. */
static bool dns_client_flush(ss_dns_t *d, ss_dns_client_t *c)
{
	while (c->out_off < c->out_n) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_n - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ev_io_start(d->loop, &c->wio);
			return true;
		}
		if (n < 0) {
			dns_client_end(d, c, strerror(errno));
			return false;
		}
		c->out_off += (size_t)n;
	}
	ev_io_stop(d->loop, &c->wio);
	c->out_off = c->out_n = 0;
	ev_timer_again(d->loop, &c->idle);
	return true;
}

void ss_dns_client_answer(ss_dns_t *d, int client, uint32_t gen, const uint8_t *msg, size_t n)
{
	ss_dns_client_t *c = &d->clients[client];

	if (c->fd < 0 || c->gen != gen || n > SS_DNS_MSG_MAX)
		return;
	put16(c->out, n);
	memcpy(c->out + 2, msg, n);
	c->out_off = 0;
	c->out_n = 2 + n;
	c->waiting = false;
	if (dns_client_flush(d, c) && !c->processing)
		dns_client_process(d, c);
}

static void dns_client_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_client_t *c = w->data;
	ss_dns_t *d = c->dns;
	ssize_t n;
	(void)loop;
	(void)revents;

	do
		n = read(c->fd, c->in + c->in_n, sizeof(c->in) - c->in_n);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		dns_client_end(d, c, n < 0 ? strerror(errno) : NULL);
		return;
	}
	c->in_n += (size_t)n;
	ev_timer_again(d->loop, &c->idle);
	dns_client_process(d, c);
}

static void dns_client_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_client_t *c = w->data;
	ss_dns_t *d = c->dns;
	(void)loop;
	(void)revents;

	if (dns_client_flush(d, c) && c->out_n == 0)
		dns_client_process(d, c);
}

static void dns_client_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_dns_client_t *c = w->data;
	(void)loop;
	(void)revents;

	dns_client_end(c->dns, c, "idle");
}

static ss_dns_client_t *dns_client_free_slot(ss_dns_t *d)
{
	for (size_t i = 0; i < SS_DNS_CLIENTS; i++)
		if (d->clients[i].fd < 0)
			return &d->clients[i];
	return NULL;
}

void ss_dns_tcp_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_t *d = w->data;
	(void)loop;
	(void)revents;

	for (int i = 0; i < DNS_ACCEPT_BATCH; i++) {
		ss_inaddr_t peer;
		socklen_t len = sizeof(peer);
		char who[SS_ADDR_STRLEN];
		int fd = accept4(w->fd, &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		ss_dns_client_t *c = dns_client_free_slot(d);
		if (!c) {
			ss_info("dns tcp %s: closed: %d clients already",
				ss_sockaddr_format(&peer.sa, who, sizeof(who)), SS_DNS_CLIENTS);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->peer = peer;
		c->waiting = c->processing = false;
		c->in_n = c->out_off = c->out_n = 0;
		ev_io_init(&c->rio, dns_client_read_cb, fd, EV_READ);
		ev_io_init(&c->wio, dns_client_write_cb, fd, EV_WRITE);
		c->rio.data = c->wio.data = c;
		ev_init(&c->idle, dns_client_idle_cb);
		c->idle.repeat = d->inst->timeout;
		c->idle.data = c;
		ev_timer_again(d->loop, &c->idle);
		ev_io_start(d->loop, &c->rio);
	}
}

/* --- connections to name servers --- */

void ss_dns_up_close(ss_dns_t *d, ss_dns_up_t *u)
{
	int index = (int)(u - d->ups);

	ev_io_stop(d->loop, &u->io);
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	if (u->query >= 0 && d->queries[u->query].up == index)
		d->queries[u->query].up = -1;
	u->query = -1;
	/* Not from here, where callers still use what they hold (an answer in
	 * this very buffer): before the loop waits again. */
	if (d->wait_head >= 0 && !d->stopped)
		ev_prepare_start(d->loop, &d->up_kick);
}

void ss_dns_up_wait(ss_dns_t *d, ss_dns_query_t *q)
{
	int i = (int)(q - d->queries);

	if (q->waiting)
		return;
	q->waiting = true;
	q->wait_next = -1;
	q->wait_prev = d->wait_tail;
	if (d->wait_tail >= 0)
		d->queries[d->wait_tail].wait_next = i;
	else
		d->wait_head = i;
	d->wait_tail = i;
}

void ss_dns_up_unwait(ss_dns_t *d, ss_dns_query_t *q)
{
	if (!q->waiting)
		return;
	if (q->wait_prev >= 0)
		d->queries[q->wait_prev].wait_next = q->wait_next;
	else
		d->wait_head = q->wait_next;
	if (q->wait_next >= 0)
		d->queries[q->wait_next].wait_prev = q->wait_prev;
	else
		d->wait_tail = q->wait_prev;
	q->waiting = false;
	q->wait_prev = q->wait_next = -1;
}

static bool dns_up_free_slot(const ss_dns_t *d)
{
	for (size_t i = 0; i < SS_DNS_UPS; i++)
		if (d->ups[i].fd < 0)
			return true;
	return false;
}

/* Waiting queries, oldest first, take the connections free now. */
void ss_dns_up_kick_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	ss_dns_t *d = w->data;
	(void)revents;

	ev_prepare_stop(loop, w);
	while (d->wait_head >= 0 && !d->stopped && dns_up_free_slot(d)) {
		ss_dns_query_t *q = &d->queries[d->wait_head];
		int rc = ss_dns_up_start(d, q);

		ss_dns_up_unwait(d, q);
		if (rc < 0)
			ss_dns_query_failed(d, q, strerror(-rc));
	}
}

/* u's query failed over TCP: the query hears why. */
static void dns_up_fail(ss_dns_t *d, ss_dns_up_t *u, const char *why)
{
	ss_dns_query_t *q = &d->queries[u->query];

	ss_dns_up_close(d, u);
	ss_dns_query_failed(d, q, why);
}

/* The framed query goes out; then the framed answer comes in. */
static void dns_up_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_up_t *u = w->data;
	ss_dns_t *d = u->dns;
	ss_dns_query_t *q = &d->queries[u->query];
	size_t frame = 2 + (size_t)q->qlen, len;
	ss_dns_msg_t m;
	ssize_t n;
	int err;
	(void)loop;
	(void)revents;

	if (!u->connected) {
		if ((err = ss_sock_error(u->fd)) != 0) {
			dns_up_fail(d, u, strerror(err));
			return;
		}
		u->connected = true;
	}
	if (u->sent < frame) {
		n = send(u->fd, u->buf + u->sent, frame - u->sent, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n < 0) {
			dns_up_fail(d, u, strerror(errno));
			return;
		}
		u->sent += (size_t)n;
		if (u->sent == frame) {
			ev_io_stop(d->loop, &u->io);
			ev_io_set(&u->io, u->fd, EV_READ);
			ev_io_start(d->loop, &u->io);
		}
		return;
	}
	n = read(u->fd, u->buf + u->got, 2 + SS_DNS_MSG_MAX - u->got);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		dns_up_fail(d, u, n < 0 ? strerror(errno) : "closed before its answer");
		return;
	}
	u->got += (size_t)n;
	if (u->got < 2 || u->got < 2 + (size_t)get16(u->buf))
		return;
	len = get16(u->buf);
	if (u->got > 2 + len || ss_dns_parse(u->buf + 2, len, &m) != SS_OK ||
	    !(m.flags & SS_DNS_QR) || m.id != q->up_id || !ss_dns_same_question(&m.q, &q->q)) {
		d->dropped++;
		dns_up_fail(d, u, "an answer that does not match it");
		return;
	}
	ss_dns_up_close(d, u);
	ss_dns_answer_in(d, q, u->buf + 2, len, &m);
}

int ss_dns_up_start(ss_dns_t *d, ss_dns_query_t *q)
{
	ss_dns_path_t *p = &d->paths[q->path];
	ss_dns_up_t *u = NULL;
	bool done;
	int fd;

	if (!p->has_tcp)
		return -EOPNOTSUPP;
	/* A free one is the oldest waiting query's first. */
	if (d->wait_head >= 0 && d->wait_head != (int)(q - d->queries))
		return -EAGAIN;
	for (size_t i = 0; i < SS_DNS_UPS && !u; i++)
		if (d->ups[i].fd < 0)
			u = &d->ups[i];
	if (!u)
		return -EAGAIN;
	fd = ss_sock_connect_tcp(&p->tcp.sa, p->tcp_len, p->opts, &done);
	if (fd < 0)
		return fd;
	u->fd = fd;
	u->query = (int)(q - d->queries);
	u->connected = done;
	u->sent = u->got = 0;
	put16(u->buf, q->qlen);
	memcpy(u->buf + 2, q->qbuf, q->qlen);
	q->up = (int)(u - d->ups);
	ev_io_init(&u->io, dns_up_cb, fd, EV_WRITE);
	u->io.data = u;
	ev_io_start(d->loop, &u->io);
	return 0;
}
