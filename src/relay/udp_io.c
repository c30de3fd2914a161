/* SPDX-License-Identifier: MIT */
#include "relay/udp_io.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "net/transparent.h"

static bool env_on(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] && strcmp(v, "0") != 0;
}

void ss_udp_io_init(ss_udp_io_t *io, uint8_t *slots, size_t slot_size)
{
	memset(io, 0, sizeof(*io));
	io->slots = slots;
	io->slot_size = slot_size;
	io->mmsg = !env_on("SS_NO_UDP_MMSG");
	io->gso = !env_on("SS_NO_UDP_GSO");
}

void ss_udp_io_sock(const ss_udp_io_t *io, int fd)
{
	int on = 1;

	if (io->gso)
		(void)setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on));
}

/* --- pure helpers --- */

size_t ss_udp_gso_run(const size_t *len, size_t n, size_t seg_max, size_t max_segs,
		      size_t max_total)
{
	size_t seg, total, i;

	if (n == 0)
		return 0;
	seg = len[0];
	if (seg == 0 || seg > seg_max || seg > max_total)
		return 1;
	total = seg;
	for (i = 1; i < n && i < max_segs; i++) {
		if (len[i] == 0 || len[i] > seg || total + len[i] > max_total)
			break;
		total += len[i];
		/* a shorter datagram ends the run: only the last may be */
		if (len[i] < seg) {
			i++;
			break;
		}
	}
	return i;
}

size_t ss_udp_gro_segment(size_t len, size_t seg, size_t i, size_t *offset)
{
	if (seg == 0 || seg >= len) {
		*offset = 0;
		return i == 0 ? len : 0;
	}
	/* i * seg cannot overflow while i is below len / seg + 1 */
	if (i > len / seg) {
		*offset = len;
		return 0;
	}
	*offset = i * seg;
	return len - *offset < seg ? len - *offset : seg;
}

uint16_t ss_udp_cmsg_gro(const struct msghdr *msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		int v;
		if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO ||
		    c->cmsg_len < CMSG_LEN(sizeof(v)))
			continue;
		memcpy(&v, CMSG_DATA(c), sizeof(v));
		return v > 0 && v <= 0xffff ? (uint16_t)v : 0;
	}
	return 0;
}

/* --- receiving --- */

static void rx_prepare(ss_udp_io_t *io, size_t i, size_t off, size_t cap, bool want_dst)
{
	struct msghdr *m = &io->hdr[i].msg_hdr;

	io->iov[i].iov_base = ss_udp_io_slot(io, i) + off;
	io->iov[i].iov_len = cap;
	memset(m, 0, sizeof(*m));
	m->msg_name = &io->rx[i].from;
	m->msg_namelen = sizeof(io->rx[i].from);
	m->msg_iov = &io->iov[i];
	m->msg_iovlen = 1;
	if (io->gso || want_dst) {
		m->msg_control = io->ctl[i].b;
		m->msg_controllen = sizeof(io->ctl[i].b);
	}
}

static void rx_finish(ss_udp_io_t *io, size_t i, size_t len, bool want_dst)
{
	struct msghdr *m = &io->hdr[i].msg_hdr;
	ss_udp_rxmsg_t *r = &io->rx[i];

	r->len = len;
	r->fromlen = m->msg_namelen;
	r->truncated = (m->msg_flags & MSG_TRUNC) != 0;
	r->seg = m->msg_controllen ? ss_udp_cmsg_gro(m) : 0;
	r->dstlen = 0;
	if (want_dst && ss_transparent_cmsg_dst(m, &r->dst, &r->dstlen) < 0)
		r->dstlen = 0;
}

int ss_udp_io_recv(ss_udp_io_t *io, int fd, size_t want, size_t off, size_t cap, bool want_dst)
{
	size_t n = want < SS_UDP_BATCH ? want : SS_UDP_BATCH;
	int got;

	if (n == 0)
		return 0;
	if (io->rx_err) {
		int e = io->rx_fd == fd ? io->rx_err : 0;
		io->rx_err = 0;
		if (e)
			return e == EAGAIN ? 0 : -e;
	}
	for (size_t i = 0; i < n; i++)
		rx_prepare(io, i, off, cap, want_dst);
	got = -1;
	if (io->mmsg) {
		do
			got = recvmmsg(fd, io->hdr, (unsigned)n, 0, NULL);
		while (got < 0 && errno == EINTR);
		if (got < 0 && errno == ENOSYS)
			io->mmsg = false;
		else
			io->stats.rx_calls++;
	}
	if (!io->mmsg) {
		/* One datagram per call, as many calls as recvmmsg would take. An
		 * error after the first datagram is told on the next read of the
		 * socket, as recvmmsg does. */
		got = 0;
		for (size_t i = 0; i < n; i++) {
			ssize_t r;
			do
				r = recvmsg(fd, &io->hdr[i].msg_hdr, 0);
			while (r < 0 && errno == EINTR);
			io->stats.rx_calls++;
			if (r >= 0) {
				io->hdr[i].msg_len = (unsigned)r;
				got++;
				continue;
			}
			if (got == 0) {
				got = -1;
			} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
				io->rx_err = errno;
				io->rx_fd = fd;
			}
			break;
		}
	}
	if (got < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	for (int i = 0; i < got; i++)
		rx_finish(io, (size_t)i, io->hdr[i].msg_len, want_dst);
	if (got > 1)
		io->stats.rx_batched++;
	return got;
}

uint8_t *ss_udp_io_spare(ss_udp_io_t *io)
{
	if (io->spares_used == SS_UDP_SPARES)
		return NULL;
	return ss_udp_io_slot(io, SS_UDP_BATCH + io->spares_used++);
}

ss_udp_out_t *ss_udp_io_queue(ss_udp_io_t *io)
{
	if (io->n_out == SS_UDP_SLOTS)
		return NULL;
	return &io->out[io->n_out++];
}

/* --- sending --- */

static bool same_dest(const ss_udp_out_t *a, const ss_udp_out_t *b)
{
	return a->tolen == b->tolen && memcmp(&a->to, &b->to, a->tolen) == 0;
}

/* Errors that say the socket or its path cannot do GSO: no support
 * (ENOPROTOOPT, EOPNOTSUPP), a device without checksum offload (EIO), or
 * segments larger than the path's MTU (EINVAL or EMSGSIZE, by kernel
 * version; a GSO send is never too large in itself). */
static bool gso_refused(int err)
{
	return err == EINVAL || err == ENOPROTOOPT || err == EIO || err == EOPNOTSUPP ||
	       err == EMSGSIZE;
}

/* One message of the send batch: the n queued datagrams from q, as one GSO
 * send when n > 1. */
typedef struct tx_msg {
	const ss_udp_out_t *q;
	size_t n;
} tx_msg_t;

static void tx_build(ss_udp_io_t *io, size_t k, const tx_msg_t *t, struct iovec *iov)
{
	struct msghdr *m = &io->hdr[k].msg_hdr;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < t->n; i++) {
		iov[i].iov_base = (void *)t->q[i].p;
		iov[i].iov_len = t->q[i].len;
	}
	m->msg_iov = iov;
	m->msg_iovlen = t->n;
	if (t->q->tolen) {
		m->msg_name = (void *)&t->q->to;
		m->msg_namelen = t->q->tolen;
	}
	if (t->n > 1) {
		struct cmsghdr *c;
		uint16_t seg = (uint16_t)t->q->len;
		m->msg_control = io->ctl[k].b;
		m->msg_controllen = CMSG_SPACE(sizeof(seg));
		c = CMSG_FIRSTHDR(m);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
}

static int send_one(int fd, const ss_udp_out_t *o)
{
	ssize_t r;

	do
		r = sendto(fd, o->p, o->len, MSG_NOSIGNAL, o->tolen ? (const void *)&o->to : NULL,
			   o->tolen);
	while (r < 0 && errno == EINTR);
	return r < 0 ? errno : 0;
}

/* Sends msgs[0..n) of fd's batch; fail hears of what did not go. */
static void tx_send(ss_udp_io_t *io, int fd, tx_msg_t *msgs, size_t n,
		    void (*fail)(void *, const ss_udp_out_t *, int), void *ctx)
{
	size_t k = 0;

	while (k < n) {
		int r, err;
		if (io->mmsg && n - k > 1) {
			do
				r = sendmmsg(fd, io->hdr + k, (unsigned)(n - k), MSG_NOSIGNAL);
			while (r < 0 && errno == EINTR);
			if (r < 0 && errno == ENOSYS) {
				io->mmsg = false;
				continue;
			}
		} else {
			ssize_t s;
			do
				s = sendmsg(fd, &io->hdr[k].msg_hdr, MSG_NOSIGNAL);
			while (s < 0 && errno == EINTR);
			r = s < 0 ? -1 : 1;
		}
		err = errno;
		io->stats.tx_calls++;
		if (r > 0) {
			if (r > 1)
				io->stats.tx_batched++;
			for (int i = 0; i < r; i++)
				io->stats.tx_gso += msgs[k + (size_t)i].n > 1;
			k += (size_t)r;
			continue;
		}
		/* msgs[k] failed: err is its error */
		const tx_msg_t *t = &msgs[k++];
		if (t->n > 1 && gso_refused(err)) {
			/* Each on its own, and no more GSO on this socket. */
			if (!(*t->q->flags & SS_UDP_SOCK_NO_GSO))
				io->stats.gso_refused++;
			*t->q->flags |= SS_UDP_SOCK_NO_GSO;
			for (size_t i = 0; i < t->n; i++) {
				int e = send_one(fd, &t->q[i]);
				io->stats.tx_calls++;
				if (e)
					fail(ctx, &t->q[i], e);
			}
			continue;
		}
		for (size_t i = 0; i < t->n; i++)
			fail(ctx, &t->q[i], err);
	}
}

void ss_udp_io_flush(ss_udp_io_t *io, void (*fail)(void *ctx, const ss_udp_out_t *o, int err),
		     void *ctx)
{
	/* Sockets in the order of their first datagram; each socket's in the
	 * order queued. The queue is taken whole first: fail() may queue
	 * nothing, but may flush. */
	ss_udp_out_t *q = io->out;
	size_t n = io->n_out;
	bool done[SS_UDP_SLOTS] = {false};
	ss_udp_out_t run[SS_UDP_SLOTS];
	tx_msg_t msgs[SS_UDP_SLOTS];

	io->n_out = 0;
	for (size_t first = 0; first < n; first++) {
		if (done[first])
			continue;
		int fd = q[first].fd;
		size_t nr = 0, nm = 0, used = 0;
		for (size_t i = first; i < n; i++) {
			if (!done[i] && q[i].fd == fd) {
				run[nr++] = q[i];
				done[i] = true;
			}
		}
		bool gso = io->gso && !(*run[0].flags & SS_UDP_SOCK_NO_GSO);
		for (size_t i = 0; i < nr;) {
			size_t m = 1;
			if (gso) {
				size_t lens[SS_UDP_SLOTS], same = 0;
				while (i + same < nr && same_dest(&run[i], &run[i + same])) {
					lens[same] = run[i + same].len;
					same++;
				}
				m = ss_udp_gso_run(lens, same, SS_UDP_GSO_SEG_MAX, SS_UDP_GSO_SEGS,
						   SS_UDP_GSO_TOTAL);
			}
			msgs[nm].q = &run[i];
			msgs[nm].n = m;
			tx_build(io, nm, &msgs[nm], &io->iov[used]);
			used += m;
			nm++;
			i += m;
		}
		tx_send(io, fd, msgs, nm, fail, ctx);
	}
	io->spares_used = 0;
}
