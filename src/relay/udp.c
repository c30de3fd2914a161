/* SPDX-License-Identifier: MIT */
/* The UDP relay, whatever its role: the listening sockets and the
 * associations' sockets, read and sent in batches, the association table
 * with its idle expiry and eviction, the codecs' states, and the relay's
 * life; what differs between ss-server and the clients goes through the
 * relay's role (relay/udp_internal.h). */
#include "relay/udp_internal.h"
#include "relay/instance.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "net/inherit.h"
#include "net/sock.h"
#include "proto/addr.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* Per association, before its codec states: three cache lines. */
_Static_assert(sizeof(ss_udp_assoc_t) <= 192, "ss_udp_assoc_t grew past 192 bytes");

const char *ss_udp_peer(const struct sockaddr *sa, char *buf, size_t len)
{
	return ss_sockaddr_format(sa, buf, len);
}

void ss_udp_drop(ss_udp_relay_t *u, const struct sockaddr *from, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	u->stats.dropped++;
	ss_info("udp %s: datagram dropped: %s", from ? ss_udp_peer(from, peer, sizeof(peer)) : "-",
		why);
}

void ss_udp_refuse(ss_udp_relay_t *u, const struct sockaddr *key, const struct sockaddr *from,
		   const char *what, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	u->stats.dropped++;
	ss_refused_note(&u->inst->refused, key, "udp %s: %s: %s",
			ss_udp_peer(from, peer, sizeof(peer)), what, why);
}

/* An error a connected UDP socket reports after an ICMP message: nothing
 * listens at the other end, or it cannot be reached. */
static bool udp_icmp_error(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
}

/* A datagram of a batch was not sent. An ICMP error on the socket of an
 * association that queued it (a client's, to its server) is the role's
 * to hear of once the batch is out. */
static void udp_send_failed(void *ctx, const ss_udp_out_t *o, int err)
{
	ss_udp_relay_t *u = ctx;
	ss_udp_assoc_t *a = o->owner;
	char why[96];

	snprintf(why, sizeof(why), "sending failed: %s", strerror(err));
	ss_udp_drop(u, o->tolen ? (const struct sockaddr *)&o->to : NULL, why);
	if (!a || !u->role->assoc_unreachable || !udp_icmp_error(err) ||
	    u->n_failed == SS_UDP_SLOTS)
		return;
	for (size_t i = 0; i < u->n_failed; i++)
		if (u->failed[i] == a)
			return;
	u->failed[u->n_failed] = a;
	u->failed_err[u->n_failed++] = err;
}

void ss_udp_flush(ss_udp_relay_t *u, bool failover)
{
	ss_udp_assoc_t *failed[SS_UDP_SLOTS];
	int errs[SS_UDP_SLOTS];
	size_t n;

	ss_udp_io_flush(&u->io, udp_send_failed, u);
	n = u->n_failed;
	u->n_failed = 0;
	if (!failover)
		return;
	/* Each failover may flush again (nothing is queued then). */
	memcpy(failed, u->failed, n * sizeof(failed[0]));
	memcpy(errs, u->failed_err, n * sizeof(errs[0]));
	for (size_t i = 0; i < n; i++)
		u->role->assoc_unreachable(u, failed[i], errs[i]);
}

void ss_udp_queue(ss_udp_relay_t *u, int fd, uint8_t *flags, const uint8_t *p, size_t len,
		  const struct sockaddr *to, socklen_t tolen, ss_udp_assoc_t *owner)
{
	ss_udp_out_t *o = ss_udp_io_queue(&u->io);

	if (!o) {
		ss_udp_flush(u, false);
		o = ss_udp_io_queue(&u->io);
	}
	o->fd = fd;
	o->flags = flags;
	o->p = p;
	o->len = len;
	o->tolen = to ? tolen : 0;
	if (to)
		memcpy(&o->to, to, tolen);
	o->owner = owner;
}

/* --- associations --- */

ss_udp_codec_t *ss_udp_codec(ss_udp_relay_t *u, const ss_udp_assoc_t *a)
{
	return &u->codecs[a->server];
}

/* The association's codec state, in its slot's area for the class. */
void *ss_udp_ast(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	return a->codec + u->inst->classes[ss_udp_codec(u, a)->cls].udp_off;
}

int ss_udp_assoc_codec(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_udp_codec_t *x = ss_udp_codec(u, a);

	/* A state whose set-up failed half way is released with the slot. */
	a->classes |= (uint16_t)(1u << x->cls);
	if (ss_codec_udp_assoc_init(x->k, x->rst, ss_udp_ast(u, a)) < 0)
		return -ENOMEM;
	return u->role->assoc_start ? u->role->assoc_start(u, a) : 0;
}

struct ss_fig_port *ss_udp_fig(ss_udp_relay_t *u, uint8_t listener)
{
	return &u->inst->fig->port[u->listeners[listener].fig_port];
}

void ss_udp_assoc_destroy(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_fig_add(&ss_udp_fig(u, a->listener)->assoc_closed, 1);
	ss_udp_flush(u, false);
	ev_io_stop(u->loop, &a->io);
	close(a->io.fd);
	ss_codec_udp_assoc_reset(ss_udp_codec(u, a)->k, ss_udp_codec(u, a)->rst, ss_udp_ast(u, a));
	u->role->assoc_ended(u, a);
	ss_udp_table_unlink(&u->table, &a->entry);
	ss_udp_table_put(&u->table, &a->entry);
}

static void udp_arm_expiry(ss_udp_relay_t *u)
{
	ss_udp_table_arm(&u->table, u->loop, &u->expiry, u->timeout);
}

static void udp_expiry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_udp_relay_t *u = w->data;
	ss_udp_entry_t *e;
	(void)revents;

	while ((e = ss_udp_table_expired(&u->table, ev_now(loop), u->timeout))) {
		char peer[SS_ADDR_STRLEN];
		ss_debug("udp %s: association idle, closed",
			 ss_udp_peer((struct sockaddr *)&((ss_udp_assoc_t *)e)->peer, peer,
				     sizeof(peer)));
		u->stats.assoc_expired++;
		ss_udp_assoc_destroy(u, (ss_udp_assoc_t *)e);
	}
	udp_arm_expiry(u);
}

static void udp_outbound_cb(struct ev_loop *loop, ev_io *w, int revents);

int ss_udp_assoc_setup(ss_udp_relay_t *u, ss_udp_assoc_t *a, int fd)
{
	char peer[SS_ADDR_STRLEN];

	if (fd < 0) {
		ss_warn("udp %s: cannot open a socket: %s",
			ss_udp_peer(&a->peer.sa, peer, sizeof(peer)), strerror(-fd));
		return -1;
	}
	if (ss_udp_assoc_codec(u, a) < 0) {
		ss_warn("udp %s: cannot set up the session cipher state",
			ss_udp_peer(&a->peer.sa, peer, sizeof(peer)));
		close(fd);
		return -1;
	}
	return fd;
}

ss_udp_assoc_t *ss_udp_assoc_find_or_add(ss_udp_relay_t *u, const struct sockaddr *key,
					 socklen_t klen, const struct sockaddr *client,
					 socklen_t clen, uint8_t listener)
{
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)ss_udp_table_find(&u->table, key, klen);
	ev_tstamp now = ev_now(u->loop);
	int fd;

	if (a) {
		ss_udp_table_touch(&u->table, &a->entry, now);
		return a;
	}
	if (u->table.count == u->table.max) {
		ss_udp_assoc_t *old = (ss_udp_assoc_t *)ss_udp_table_oldest(&u->table);
		char peer[SS_ADDR_STRLEN];
		ss_info("udp %s: association evicted: the table holds %zu",
			ss_udp_peer(&old->peer.sa, peer, sizeof(peer)), u->table.max);
		u->stats.assoc_evicted++;
		ss_udp_assoc_destroy(u, old);
	}
	a = (ss_udp_assoc_t *)ss_udp_table_add(&u->table, key, klen, now);
	if (!a)
		return NULL;
	a->peer_len = ss_inaddr_set(&a->peer, client, clen);
	a->listener = listener;
	fd = u->role->assoc_open(u, a);
	if (fd < 0) {
		ss_udp_table_unlink(&u->table, &a->entry);
		ss_udp_table_put(&u->table, &a->entry);
		return NULL;
	}
	ss_udp_io_sock(&u->io, fd);
	a->sflags = 0;
	ev_io_init(&a->io, udp_outbound_cb, fd, EV_READ);
	a->io.data = u;
	ev_io_start(u->loop, &a->io);
	u->stats.assoc_created++;
	ss_fig_add(&ss_udp_fig(u, listener)->assoc_opened, 1);
	if (!ev_is_active(&u->expiry))
		udp_arm_expiry(u);
	return a;
}

size_t ss_udp_wire(const ss_udp_codec_t *x)
{
	return SS_UDP_HEAD - x->k->udp_rx_lead;
}

uint64_t ss_udp_now(ss_udp_relay_t *u)
{
	return (uint64_t)ev_now(u->loop);
}

/* --- watchers --- */

#define UDP_PER_EVENT 32 /* datagrams read per readiness event, at most */

/* What a failed read means to the socket's owner: whether to read on. */
typedef bool (*udp_rx_error_t)(ss_udp_relay_t *u, void *w, int err);

/* Hands the datagram r, read into slot, to handle: whole, or, for a GRO
 * buffer, segment by segment, each copied to a spare slot of its own (a
 * codec works in place, with room around each datagram). Whether the
 * socket's owner still stands. */
static bool udp_dispatch(ss_udp_relay_t *u, void *w, uint8_t *slot, size_t off,
			 const ss_udp_rxmsg_t *r, ss_udp_handler_t handle)
{
	size_t at, len;

	if (!r->seg || r->seg >= r->len)
		return handle(u, w, slot, r->len, r);
	u->io.stats.rx_gro++;
	for (size_t i = 0; (len = ss_udp_gro_segment(r->len, r->seg, i, &at)) > 0; i++) {
		uint8_t *s = ss_udp_io_spare(&u->io);
		if (!s) {
			ss_udp_flush(u, false);
			s = ss_udp_io_spare(&u->io);
		}
		memcpy(s + off, slot + off + at, len);
		if (!handle(u, w, s, len, r))
			return false;
	}
	return true;
}

/* One readiness event of a socket: what it has, up to UDP_PER_EVENT
 * datagrams, read in batches (datagram i at slot i + in->at, at most
 * in->cap bytes), handled in order and sent at the end of each batch. */
static void udp_batch(ss_udp_relay_t *u, void *w, int fd, const ss_udp_landing_t *in,
		      ss_udp_handler_t handle, udp_rx_error_t on_error)
{
	size_t left = UDP_PER_EVENT;
	bool go = true;

	while (go && left > 0) {
		size_t want = left < SS_UDP_BATCH ? left : SS_UDP_BATCH;
		int n = ss_udp_io_recv(&u->io, fd, want, in->at, in->cap, in->want_dst);
		if (n == 0)
			break;
		if (n < 0) {
			go = on_error(u, w, -n);
			left--;
			continue;
		}
		left -= (size_t)n;
		for (int i = 0; go && i < n; i++) {
			const ss_udp_rxmsg_t *r = &u->io.rx[i];
			if (r->truncated)
				go = on_error(u, w, EMSGSIZE);
			else
				go = udp_dispatch(u, w, ss_udp_io_slot(&u->io, (size_t)i), in->at,
						  r, handle);
		}
		ss_udp_flush(u, true);
		if ((size_t)n < want && !u->io.rx_err)
			break;
	}
}

static bool udp_listener_error(ss_udp_relay_t *u, void *w, int err)
{
	(void)w;
	ss_udp_drop(u, NULL, err == EMSGSIZE ? "too large" : strerror(err));
	return true;
}

static void udp_listener_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_udp_listener_t *l = (ss_udp_listener_t *)w;
	ss_udp_relay_t *u = l->relay;
	ss_udp_landing_t in = u->role->inbound_landing(u, l);
	(void)loop;
	(void)revents;

	udp_batch(u, l, w->fd, &in, u->role->inbound, udp_listener_error);
}

static bool udp_outbound_error(ss_udp_relay_t *u, void *w, int err)
{
	ss_udp_assoc_t *a = w;

	if (err == EMSGSIZE) {
		/* a datagram too large was still taken */
		ss_udp_drop(u, (struct sockaddr *)&a->peer, "answer too large");
		return true;
	}
	/* An ICMP error: the other end is not there (the association may
	 * end), where the role minds. */
	if (u->role->assoc_unreachable && udp_icmp_error(err)) {
		ss_udp_flush(u, false);
		u->role->assoc_unreachable(u, a, err);
	}
	return false;
}

static void udp_outbound_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)((char *)w - offsetof(ss_udp_assoc_t, io));
	ss_udp_relay_t *u = w->data;
	ss_udp_landing_t in = u->role->outbound_landing(u, a);
	(void)loop;
	(void)revents;

	udp_batch(u, a, w->fd, &in, u->role->outbound, udp_outbound_error);
}

/* Releases what ss_udp_init made, in any state it leaves on failure. */
static void udp_release(ss_udp_relay_t *u)
{
	if (u->role->release)
		u->role->release(u);
	for (size_t i = 0; i < u->n_codecs; i++) {
		ss_udp_codec_t *x = &u->codecs[i];
		if (x->rst) {
			ss_codec_udp_free(x->k, x->rst);
			free(x->rst);
			x->rst = NULL;
		}
	}
	u->n_codecs = 0;
	if (u->buf) {
		munmap(u->buf, SS_UDP_BUF_SIZE * (SS_UDP_SLOTS + SS_UDP_DNS_SLOTS));
		u->buf = NULL;
	}
	ss_udp_table_free(&u->table);
}

int ss_udp_codec_add(ss_udp_relay_t *u, ss_codec_t *k, uint8_t cls, char *err, size_t errlen)
{
	ss_udp_codec_t *x = &u->codecs[u->n_codecs];
	int rc;

	x->k = k;
	x->cls = cls;
	x->rst = calloc(1, k->ops->udp_relay_size ? k->ops->udp_relay_size : 1);
	rc = x->rst ? ss_codec_udp_init(k, x->rst) : -ENOMEM;
	if (rc < 0) {
		free(x->rst);
		x->rst = NULL;
		snprintf(err, errlen, "cannot set up the UDP cipher state: %s", strerror(-rc));
		return rc;
	}
	u->n_codecs++;
	return 0;
}

/* The relay's role and, for a client, its front, by program. */
static void udp_pick_role(ss_udp_relay_t *u, ss_prog_t prog)
{
	static const struct {
		const ss_udp_role_t *role;
		const ss_udp_front_t *front;
	} by_prog[] = {
	    [SS_PROG_SERVER] = {&ss_udp_server_role, NULL},
	    [SS_PROG_LOCAL] = {&ss_udp_client_role, &ss_udp_socks5_front},
	    [SS_PROG_TUNNEL] = {&ss_udp_client_role, &ss_udp_tunnel_front},
	    [SS_PROG_REDIR] = {&ss_udp_client_role, &ss_udp_redir_front},
	};

	u->role = by_prog[prog].role;
	u->front = by_prog[prog].front;
}

int ss_udp_init(ss_udp_relay_t *u, struct ss_instance *inst, size_t max_assoc, char *err,
		size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	size_t max = max_assoc;
	int rc;

	memset(u, 0, sizeof(*u));
	u->inst = inst;
	u->loop = inst->loop;
	udp_pick_role(u, cfg->prog);
	u->timeout = cfg->udp_timeout > 0 ? cfg->udp_timeout : 60;
	if ((rc = u->role->init(u, &max, err, errlen)) < 0)
		goto fail;
	rc = ss_udp_table_init(&u->table, sizeof(ss_udp_assoc_t) + inst->udp_states,
			       offsetof(ss_udp_assoc_t, classes), max);
	if (rc < 0) {
		snprintf(err, errlen, "cannot reserve %zu UDP associations", max);
		goto fail;
	}
	/* Pages are touched only as datagrams fill them. */
	u->buf = mmap(NULL, SS_UDP_BUF_SIZE * (SS_UDP_SLOTS + SS_UDP_DNS_SLOTS),
		      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (u->buf == MAP_FAILED) {
		u->buf = NULL;
		snprintf(err, errlen, "cannot reserve UDP buffers");
		rc = -ENOMEM;
		goto fail;
	}
	u->pending_area = u->buf + SS_UDP_BUF_SIZE * SS_UDP_SLOTS;
	ss_udp_io_init(&u->io, u->buf, SS_UDP_BUF_SIZE);
	ev_init(&u->expiry, udp_expiry_cb);
	u->expiry.data = u;
	u->ready = true;
	return 0;
fail:
	udp_release(u);
	ss_udp_destroy(u);
	return rc;
}

int ss_udp_listen(ss_udp_relay_t *u, const ss_udp_front_t *front, bool door,
		  const struct sockaddr *addr, socklen_t len, char *err, size_t errlen)
{
	char where[SS_ADDR_STRLEN];
	const char *hint = "";
	int fd;

	if (u->n_listeners == SS_ARRAY_LEN(u->listeners)) {
		snprintf(err, errlen, "too many UDP listen addresses");
		return -EINVAL;
	}
	if (!front)
		front = u->front;
	fd = door ? -1 : ss_inherit_take(addr, len, SOCK_DGRAM);
	if (fd < 0)
		fd = u->role->listen ? u->role->listen(u, front, addr, len, &hint)
				     : ss_sock_udp_bind(addr, len, &u->inst->sockopts);
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on UDP %s: %s%s",
			 ss_sockaddr_format(addr, where, sizeof(where)), strerror(-fd), hint);
		return fd;
	}
	ss_udp_listener_t *l = &u->listeners[u->n_listeners];
	ss_udp_io_sock(&u->io, fd);
	l->sflags = 0;
	l->fig_port =
	    (uint8_t)ss_fig_port_index(&u->inst->shared->fig_layout, ss_sockaddr_port(addr));
	l->handed = false;
	l->front = front;
	l->door = door;
	l->relay = u;
	l->index = (uint8_t)u->n_listeners++;
	ev_io_init(&l->io, udp_listener_cb, fd, EV_READ);
	ev_io_start(u->loop, &l->io);
	if (!door)
		ss_notice("listening on UDP %s", ss_sockaddr_format(addr, where, sizeof(where)));
	return 0;
}

void ss_udp_retire(ss_udp_relay_t *u)
{
	ss_udp_entry_t *e;

	if (!u->ready)
		return;
	while ((e = ss_udp_table_oldest(&u->table)))
		ss_udp_assoc_destroy(u, (ss_udp_assoc_t *)e);
	for (size_t i = 0; i < u->n_listeners; i++) {
		ev_io *io = &u->listeners[i].io;
		ev_io_stop(u->loop, io);
		if (!u->listeners[i].handed)
			close(io->fd);
		io->fd = -1;
	}
}

size_t ss_udp_assocs(const ss_udp_relay_t *u)
{
	return u->ready ? u->table.count : 0;
}

void ss_udp_free(ss_udp_relay_t *u)
{
	ss_udp_entry_t *e;

	if (!u->ready)
		return;
	const ss_udp_io_stats_t *st = &u->io.stats;
	ss_info("udp: %" PRIu64 " datagrams in, %" PRIu64 " out; %" PRIu64 " reads, %" PRIu64
		" of them batches; %" PRIu64 " GRO buffers; %" PRIu64 " sends, %" PRIu64
		" of them batches; %" PRIu64 " GSO sends, refused on %" PRIu64 " sockets%s%s",
		u->stats.datagrams_in, u->stats.datagrams_out, st->rx_calls, st->rx_batched,
		st->rx_gro, st->tx_calls, st->tx_batched, st->tx_gso, st->gso_refused,
		u->io.mmsg ? "" : " (no recvmmsg/sendmmsg)", u->io.gso ? "" : " (no GSO/GRO)");
	if (u->role->closing)
		u->role->closing(u);
	while ((e = ss_udp_table_oldest(&u->table)))
		ss_udp_assoc_destroy(u, (ss_udp_assoc_t *)e);
	for (size_t i = 0; i < u->n_listeners; i++) {
		ev_io_stop(u->loop, &u->listeners[i].io);
		if (u->listeners[i].io.fd >= 0 && !ss_inherit_give_back(u->listeners[i].io.fd))
			close(u->listeners[i].io.fd);
	}
	ev_timer_stop(u->loop, &u->expiry);
	/* What the slots kept across associations: each class's state, freed
	 * through a codec of that class. */
	for (size_t i = 0; i < u->table.pool.fresh; i++) {
		ss_udp_assoc_t *a = ss_pool_at(&u->table.pool, i);
		for (size_t j = 0; j < u->n_codecs; j++) {
			ss_udp_codec_t *x = &u->codecs[j];
			if (!(a->classes >> x->cls & 1))
				continue;
			a->classes &= (uint16_t) ~(1u << x->cls);
			ss_codec_udp_assoc_free(x->k, x->rst,
						a->codec + u->inst->classes[x->cls].udp_off);
		}
	}
	udp_release(u);
	u->ready = false;
}

void ss_udp_destroy(ss_udp_relay_t *u)
{
	if (u->role && u->role->destroy)
		u->role->destroy(u);
}
