/* SPDX-License-Identifier: MIT */
/* The UDP relay's server role (ss-server): datagrams from clients, opened
 * and sent to their targets from the association's socket (full cone),
 * names resolved on the loop; the targets' answers sealed back to the
 * client; and a SIP022 session held by one worker, the others handing its
 * datagrams there (relay/udp_sessions.h). */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "net/sock.h"
#include "proto/addr.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"
#include "util/log.h"
#include "util/result.h"

#define UDP_DNS_TTL 30.0

static socklen_t server_salen(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* --block-private: a datagram to a target at (or named for) such an
 * address is dropped, logged as a refusal of its client. */
static void server_refuse_private(ss_udp_relay_t *u, ss_udp_assoc_t *a, const struct sockaddr *to,
				  const char *kind)
{
	const struct sockaddr *client = (const struct sockaddr *)&a->peer;
	char why[SS_ADDR_STRLEN + 64];
	size_t n;

	ss_fig_add(&ss_udp_fig(u, a->listener)->refused[SS_REFUSED_BLOCKED], 1);
	ss_sockaddr_format(to, why, sizeof(why));
	n = strlen(why);
	snprintf(why + n, sizeof(why) - n, ": %s address (--block-private)", kind);
	ss_udp_refuse(u, client, client, "target refused", why);
}

static void server_send(ss_udp_relay_t *u, ss_udp_assoc_t *a, const uint8_t *data, size_t len,
			const struct sockaddr *to)
{
	struct sockaddr_in6 mapped;
	const char *kind;

	if (ss_doors_match(&u->inst->shared->doors, to)) {
		ss_fig_add(&ss_udp_fig(u, a->listener)->refused[SS_REFUSED_BLOCKED], 1);
		ss_udp_refuse(u, (struct sockaddr *)&a->peer, (struct sockaddr *)&a->peer,
			      "datagram refused",
			      "the target is this server's manager or metrics address");
		return;
	}
	if (ss_instance_target_blocked(u->inst, NULL, to)) {
		ss_fig_add(&ss_udp_fig(u, a->listener)->refused[SS_REFUSED_ACL], 1);
		ss_udp_drop(u, (struct sockaddr *)&a->peer,
			    "target in the ACL's outbound block list");
		return;
	}
	if ((kind = ss_instance_target_private(u->inst, to))) {
		server_refuse_private(u, a, to, kind);
		return;
	}
	/* A dual-stack socket reaches IPv4 targets through mapped addresses. */
	if (to->sa_family == AF_INET && a->family == AF_INET6) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)to;
		memset(&mapped, 0, sizeof(mapped));
		mapped.sin6_family = AF_INET6;
		mapped.sin6_port = in->sin_port;
		ss_ip6_map_v4(mapped.sin6_addr.s6_addr, &in->sin_addr);
		to = (struct sockaddr *)&mapped;
	}
	ss_udp_queue(u, a->io.fd, &a->sflags, data, len, to, server_salen(to), NULL);
}

static void server_dns_done(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	ss_udp_dns_t *d = arg;
	ss_udp_relay_t *u = d->relay;

	d->resolving = false;
	if (!u->ready)
		return;
	if (status < 0) {
		d->failed = true;
		d->expires = ev_now(u->loop) + 5.0;
	} else {
		memcpy(&d->addr, sa, len);
		d->addr_len = len;
		d->failed = false;
		d->expires = ev_now(u->loop) + UDP_DNS_TTL;
	}
	if (!d->pending)
		return;
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)ss_udp_table_find(
	    &u->table, (struct sockaddr *)&d->pending_key, d->pending_key_len);
	if (status < 0 || !a) {
		ss_udp_drop(u, a ? (struct sockaddr *)&a->peer : NULL,
			    status < 0 ? "target name does not resolve" : "association gone");
	} else {
		struct sockaddr_storage to = d->addr;
		ss_sockaddr_set_port((struct sockaddr *)&to, d->pending_port);
		server_send(u, a, d->pending, d->pending_len, (struct sockaddr *)&to);
		/* out of any batch: sent now, before the slot is reused */
		ss_udp_flush(u, false);
	}
	d->pending = NULL;
}

/* Sends to a named target: from the cache, or once the name resolves. */
static void server_send_named(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_addr_t *t,
			      const uint8_t *data, size_t len)
{
	ev_tstamp now = ev_now(u->loop);
	ss_udp_dns_t *d = NULL, *victim = NULL;
	const struct sockaddr *client = (struct sockaddr *)&a->peer;

	if (ss_instance_target_blocked(u->inst, t->domain, NULL)) {
		ss_fig_add(&ss_udp_fig(u, a->listener)->refused[SS_REFUSED_ACL], 1);
		ss_udp_drop(u, client, "target in the ACL's outbound block list");
		return;
	}
	for (size_t i = 0; i < SS_UDP_DNS_SLOTS; i++) {
		ss_udp_dns_t *e = &u->dns[i];
		if (e->name[0] && strcmp(e->name, t->domain) == 0) {
			d = e;
			break;
		}
		if (!e->resolving && (!victim || e->expires < victim->expires))
			victim = e;
	}
	if (d && !d->resolving && d->expires > now) {
		if (d->failed) {
			ss_udp_drop(u, client, "target name does not resolve");
			return;
		}
		struct sockaddr_storage to = d->addr;
		ss_sockaddr_set_port((struct sockaddr *)&to, t->port);
		server_send(u, a, data, len, (struct sockaddr *)&to);
		return;
	}
	if (d && d->resolving) {
		ss_udp_drop(u, client, "target name still resolving");
		return;
	}
	if (!d)
		d = victim;
	if (!d) {
		ss_udp_drop(u, client, "too many names resolving");
		return;
	}
	size_t slot = (size_t)(d - u->dns);
	strcpy(d->name, t->domain);
	d->relay = u;
	d->resolving = true;
	d->pending = u->pending_area + slot * SS_UDP_BUF_SIZE;
	memcpy(d->pending, data, len);
	d->pending_len = len;
	d->pending_port = t->port;
	memcpy(&d->pending_key, &a->entry.key, a->entry.key_len);
	d->pending_key_len = a->entry.key_len;
	ss_resolver_lookup(&u->inst->resolver, &d->req, d->name, t->port, server_dns_done, d);
}

static void server_to_target(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_addr_t *target,
			     const uint8_t *data, size_t len)
{
	struct sockaddr_storage to;
	socklen_t tolen;

	if (target->atyp == SS_ATYP_DOMAIN) {
		server_send_named(u, a, target, data, len);
		return;
	}
	ss_addr_to_sockaddr(target, &to, &tolen);
	server_send(u, a, data, len, (struct sockaddr *)&to);
}

/* A new server association for an accepted datagram d from client: it
 * takes the datagram's session from the codec. NULL when it cannot be made. */
static ss_udp_assoc_t *server_assoc_add(ss_udp_relay_t *u, ss_codec_dgram_t *d,
					const struct sockaddr_storage *client, socklen_t clen,
					uint8_t listener)
{
	const char *user;
	ss_udp_assoc_t *a;

	a = ss_udp_assoc_find_or_add(u, (struct sockaddr *)&d->key, d->key_len,
				     (const struct sockaddr *)client, clen, listener);
	if (!a)
		return NULL;
	if (ss_codec_udp_adopt(u->codecs[0].k, u->codecs[0].rst, ss_udp_ast(u, a), d) < 0) {
		ss_udp_assoc_destroy(u, a);
		return NULL;
	}
	if ((user = ss_codec_udp_user(u->codecs[0].k, d))) {
		char peer[SS_ADDR_STRLEN];
		ss_info("udp %s: user %s: new session",
			ss_udp_peer((const struct sockaddr *)client, peer, sizeof(peer)), user);
	}
	return a;
}

/* A datagram accepted for association a (of a session, recorded in its
 * memo): it keeps the association alive, answers follow the client to the
 * address it last sent from, and the payload goes to its target. */
static void server_relay(ss_udp_relay_t *u, ss_udp_assoc_t *a, const struct sockaddr *from,
			 socklen_t fromlen, uint8_t listener, const ss_addr_t *target,
			 const uint8_t *data, size_t len)
{
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	a->peer_len = ss_inaddr_set(&a->peer, from, fromlen);
	a->listener = listener;
	server_to_target(u, a, target, data, len);
}

/* Records the accepted d in its session's memo (codecs with sessions). */
static void server_session_seen(ss_udp_relay_t *u, ss_udp_session_t *s, const ss_codec_dgram_t *d)
{
	ss_codec_t *k = u->codecs[0].k;

	k->ops->udp_seen(k, s->memo, d);
	s->recorded = true;
	s->last = ev_now(u->loop);
}

/* Another worker holds the session of the opened datagram d: it goes there,
 * to be checked against the session's memo and relayed from its one
 * association. */
static void server_hand_over(ss_udp_relay_t *u, unsigned holder, const ss_codec_dgram_t *d,
			     const ss_codec_pkt_t *p, const ss_udp_rxmsg_t *r, uint8_t listener)
{
	ss_udp_handed_t h = {.d = *d, .target = p->addr, .listener = listener};
	ss_udp_inbox_t *to = &u->inst->shared->w[holder].inbox;

	h.fromlen = ss_inaddr_set(&h.from, (const struct sockaddr *)&r->from, r->fromlen);
	if (!ss_udp_inbox_push(to, &h, p->payload, p->payload_len)) {
		ss_udp_drop(u, (const struct sockaddr *)&r->from,
			    "the worker holding its session takes no more now");
		return;
	}
	u->stats.handed++;
}

/* A datagram opened (d, p) for a key this worker holds no association for:
 * a new association, unless the key's session is another worker's (handed
 * there) or its memo has seen the datagram (a replay after its association
 * ended). NULL when it goes no further here. */
static ss_udp_assoc_t *server_new(ss_udp_relay_t *u, ss_codec_dgram_t *d, const ss_codec_pkt_t *p,
				  const ss_udp_rxmsg_t *r, uint8_t listener)
{
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	ss_codec_t *k = u->codecs[0].k;
	ss_udp_session_t *s = NULL;
	ss_udp_assoc_t *a;
	unsigned holder;

	if (u->sessions) {
		unsigned first = u->inst->shared->holder0;
		switch (ss_udp_sessions_claim(u->sessions, (struct sockaddr *)&d->key,
					      first + u->inst->worker, ev_now(u->loop), &s,
					      &holder)) {
		case SS_UDP_SESSION_OTHER:
			/* A worker of the configuration before a reload
			 * holds it until its association ends, which the
			 * reload makes it do now. */
			if (holder - first >= u->inst->workers)
				ss_udp_drop(u, from,
					    "its session ends with the configuration "
					    "before a reload");
			else
				server_hand_over(u, holder - first, d, p, r, listener);
			return NULL;
		case SS_UDP_SESSION_FULL:
			ss_udp_refuse(u, from, from, "datagram refused",
				      "too many UDP sessions held or ended in the last minute");
			return NULL;
		case SS_UDP_SESSION_MINE:
			break;
		}
		if (!k->ops->udp_fresh(k, s->memo, d)) {
			ss_udp_sessions_release(u->sessions, s, ev_now(u->loop));
			ss_udp_refuse(u, from, from, "datagram refused",
				      "packet id replayed or too old");
			return NULL;
		}
		server_session_seen(u, s, d);
	}
	a = server_assoc_add(u, d, &r->from, r->fromlen, listener);
	if (!a) {
		if (s)
			ss_udp_sessions_release(u->sessions, s, ev_now(u->loop));
		ss_udp_drop(u, from, "no association");
		return NULL;
	}
	a->session = s;
	return a;
}

/* A datagram from a client (n bytes at buf + ss_udp_wire): open it and queue
 * the payload to its target. */
static bool server_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			   const ss_udp_rxmsg_t *r)
{
	struct ss_instance *inst = u->inst;
	ss_udp_listener_t *l = w;
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	ss_udp_codec_t *x = &u->codecs[0];
	ss_codec_t *k = x->k;
	ss_codec_dgram_t d;
	ss_codec_pkt_t p;
	const char *why;

	u->stats.datagrams_in++;
	ss_fig_add(&ss_udp_fig(u, l->index)->dgrams[0], 1);
	if (!ss_instance_client_allowed(inst, from)) {
		ss_fig_add(&ss_udp_fig(u, l->index)->refused[SS_REFUSED_ACL], 1);
		ss_udp_refuse(u, from, from, "datagram refused", "client refused by the ACL");
		return true;
	}
	/* The codec opens it as far as telling its association (the client's
	 * address, or its session), then the rest against that association. */
	why = k->ops->udp_open_request(k, x->rst, buf + ss_udp_wire(x), n, ss_udp_now(u), from,
				       r->fromlen, &d);
	ss_udp_assoc_t *a = why ? NULL
				: (ss_udp_assoc_t *)ss_udp_table_find(
				      &u->table, (struct sockaddr *)&d.key, d.key_len);
	if (a && a->session && !k->ops->udp_fresh(k, a->session->memo, &d))
		why = "packet id replayed or too old";
	if (!why)
		why = k->ops->udp_accept(k, x->rst, a ? ss_udp_ast(u, a) : NULL, &d, ss_udp_now(u),
					 &p);
	if (why) {
		/* The codecs name a replay so in their reason. */
		ss_fig_add(
		    &ss_udp_fig(u, l->index)
			 ->refused[strstr(why, "replay") ? SS_REFUSED_REPLAY : SS_REFUSED_AUTH],
		    1);
		ss_udp_refuse(u, from, from, "datagram refused", why);
		return true;
	}
	if (inst->cfg->mtu && p.payload_len > (size_t)inst->cfg->mtu) {
		ss_udp_drop(u, from, "larger than --mtu");
		return true;
	}
	if (!a) {
		if ((a = server_new(u, &d, &p, r, l->index)))
			server_to_target(u, a, &p.addr, p.payload, p.payload_len);
		return true;
	}
	if (a->session)
		server_session_seen(u, a->session, &d);
	server_relay(u, a, from, r->fromlen, l->index, &p.addr, p.payload, p.payload_len);
	return true;
}

/* Datagrams the other workers handed over, of sessions this one holds:
 * each is checked against its session's memo here, as if it had come in
 * here, and relayed. */
static void server_inbox_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	ss_udp_relay_t *u = w->data;
	ss_codec_t *k = u->codecs[0].k;
	unsigned first, n = ss_udp_inbox_take(u->inbox, &first);
	(void)loop;
	(void)revents;

	for (unsigned i = 0; i < n; i++) {
		ss_udp_handed_t *h = &u->inbox->q[(first + i) % SS_UDP_INBOX_SLOTS];
		const struct sockaddr *from = (const struct sockaddr *)&h->from;
		ss_udp_assoc_t *a = (ss_udp_assoc_t *)ss_udp_table_find(
		    &u->table, (struct sockaddr *)&h->d.key, h->d.key_len);

		u->stats.taken++;
		if (!a || !a->session) {
			/* It ended since: the next datagram of the session
			 * starts it again wherever it lands. */
			ss_udp_drop(u, from, "its session's association ended meanwhile");
			continue;
		}
		if (!k->ops->udp_fresh(k, a->session->memo, &h->d)) {
			ss_udp_refuse(u, from, from, "datagram refused",
				      "packet id replayed or too old");
			continue;
		}
		server_session_seen(u, a->session, &h->d);
		server_relay(u, a, from, h->fromlen, h->listener, &h->target, h->payload, h->len);
	}
	/* The payloads are sent before their slots are given back. */
	ss_udp_flush(u, true);
	ss_udp_inbox_done(u->inbox, n);
}

/* An answer from a target (n bytes at buf + SS_UDP_HEAD): wrap it with the
 * target's address, right before it, seal it and queue it to the client. */
static bool server_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			    const ss_udp_rxmsg_t *r)
{
	struct ss_instance *inst = u->inst;
	ss_udp_assoc_t *a = w;
	uint8_t *data = buf + SS_UDP_HEAD, *out;
	uint8_t hdr[SS_ADDR_MAX_ENCODED];
	ss_addr_t src;
	long sealed;

	if (inst->cfg->mtu && n > (size_t)inst->cfg->mtu) {
		ss_udp_drop(u, (struct sockaddr *)&a->peer, "answer larger than --mtu");
		return true;
	}
	if (ss_addr_from_sockaddr(&src, (const struct sockaddr *)&r->from) < 0)
		return true;
	size_t hlen = ss_addr_encode(&src, hdr, sizeof(hdr));
	memcpy(data - hlen, hdr, hlen);
	ss_udp_codec_t *x = ss_udp_codec(u, a);
	sealed = x->k->ops->udp_seal(x->k, x->rst, ss_udp_ast(u, a), buf, SS_UDP_BUF_SIZE,
				     data - hlen, hlen, n, ss_udp_now(u), &out);
	if (sealed < 0) {
		ss_udp_drop(u, (struct sockaddr *)&a->peer, "sealing failed");
		return true;
	}
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	u->stats.datagrams_out++;
	ss_fig_add(&ss_udp_fig(u, a->listener)->dgrams[1], 1);
	ss_udp_listener_t *l = &u->listeners[a->listener];
	ss_udp_queue(u, l->io.fd, &l->sflags, out, (size_t)sealed, (struct sockaddr *)&a->peer,
		     a->peer_len, NULL);
	return true;
}

/* With a codec that has sessions: the workers' one table of sessions
 * (relay/shared.h); with workers, each takes the datagrams of its sessions
 * that reach the others, in its inbox. */
static int server_init(ss_udp_relay_t *u, size_t *max, char *err, size_t errlen)
{
	struct ss_instance *inst = u->inst;
	ss_shared_t *sh = inst->shared;
	ss_udp_inbox_t *inbox = &sh->w[inst->worker].inbox;
	int rc;
	(void)max;

	if ((rc = ss_udp_codec_add(u, &inst->codec, 0, err, errlen)) < 0)
		return rc;
	if (!inst->codec.ops->udp_memo_size)
		return 0;
	u->sessions = sh->sessions;
	if (sh->count > 1) {
		if (ss_udp_inbox_init(inbox, u->loop, SS_UDP_BUF_SIZE, server_inbox_cb, u) < 0) {
			snprintf(err, errlen, "cannot reserve room for datagrams between workers");
			return -ENOMEM;
		}
		ss_udp_inbox_open(inbox);
		u->inbox = inbox;
	}
	return 0;
}

static void server_closing(ss_udp_relay_t *u)
{
	if (!u->inbox)
		return;
	ss_info("udp: %" PRIu64 " datagrams handed to the workers holding their sessions, %" PRIu64
		" taken from them",
		u->stats.handed, u->stats.taken);
	/* Datagrams handed over from now on are dropped by their sender. */
	ss_udp_inbox_close(u->inbox);
}

/* The table and the inbox are the shared object's, freed after every
 * worker. */
static void server_destroy(ss_udp_relay_t *u)
{
	u->inbox = NULL;
	u->sessions = NULL;
}

/* The association's socket, left unconnected so that any target can
 * answer (full cone): dual-stack where the host has IPv6. A fd or -errno. */
static int server_socket(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	const ss_sockopts_t *o = &u->inst->outopts;
	int fd;

	a->family = AF_INET;
	if (o->bind4 && !o->bind6)
		return ss_sock_udp_open(AF_INET, o);
	fd = ss_sock_udp_open(AF_INET6, o);
	if (fd >= 0)
		a->family = AF_INET6;
	else if (fd == -EAFNOSUPPORT)
		fd = ss_sock_udp_open(AF_INET, o);
	return fd;
}

static int server_assoc_open(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	int fd = ss_udp_assoc_setup(u, a, server_socket(u, a));
	char peer[SS_ADDR_STRLEN];

	if (fd >= 0)
		ss_debug("udp %s: new association", ss_udp_peer(&a->peer.sa, peer, sizeof(peer)));
	return fd;
}

/* Its session's record stays while the session's datagrams could still be
 * replayed. */
static void server_assoc_ended(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	if (!a->session)
		return;
	ss_udp_sessions_release(u->sessions, a->session, ev_now(u->loop));
	a->session = NULL;
}

static ss_udp_landing_t server_inbound_landing(ss_udp_relay_t *u, const ss_udp_listener_t *l)
{
	size_t at = ss_udp_wire(&u->codecs[0]);
	(void)l;

	return (ss_udp_landing_t){at, SS_UDP_BUF_SIZE - at, false};
}

/* A target's answer leaves room for the address before it and the codec's
 * tail after it, to be sealed in place. */
static ss_udp_landing_t server_outbound_landing(ss_udp_relay_t *u, const ss_udp_assoc_t *a)
{
	(void)a;
	return (ss_udp_landing_t){SS_UDP_HEAD,
				  SS_UDP_BUF_SIZE - SS_UDP_HEAD - u->codecs[0].k->udp_tail, false};
}

const ss_udp_role_t ss_udp_server_role = {
    .init = server_init,
    .closing = server_closing,
    .destroy = server_destroy,
    .inbound_landing = server_inbound_landing,
    .inbound = server_inbound,
    .outbound_landing = server_outbound_landing,
    .outbound = server_outbound,
    .assoc_open = server_assoc_open,
    .assoc_ended = server_assoc_ended,
};
