/* SPDX-License-Identifier: MIT */
/* The UDP relay's client role (ss-local, ss-tunnel, ss-redir): datagrams
 * from applications, sealed and sent to a server from a socket of the
 * association's own, and the server's answers opened and given back; which
 * server, failover between servers, and a server's new address. How
 * applications send and take datagrams is the front's (udp_socks5.c,
 * udp_tunnel.c, udp_redir.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/sock.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"
#include "util/log.h"

/* The association's socket, connected to its server's address. A fd or
 * -errno. */
static int client_socket(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	socklen_t len;
	const struct sockaddr *srv = ss_servers_addr(&u->inst->servers.s[a->server], true, &len);
	int fd;

	if (!len)
		return -EHOSTUNREACH;
	fd = ss_sock_udp_open(srv->sa_family, &u->inst->outopts);
	if (fd >= 0 && connect(fd, srv, len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* A new association goes to a server picked as for a connection
 * (relay/health.h), spreading associations by their count, and sends with
 * a session of its own there. */
static int client_assoc_open(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_servers_t *set = &u->inst->servers;
	char peer[SS_ADDR_STRLEN];
	bool trial = false;
	int srv = ss_servers_pick(set, 0, true, &trial), fd;

	if (srv < 0) {
		ss_info("udp %s: no server has an address yet",
			ss_udp_peer(&a->peer.sa, peer, sizeof(peer)));
		return -1;
	}
	a->server = (uint8_t)srv;
	fd = ss_udp_assoc_setup(u, a, client_socket(u, a));
	if (fd < 0) {
		ss_servers_release(set, srv, true);
		return -1;
	}
	ss_info("udp %s: new association, server %s%s",
		ss_udp_peer(&a->peer.sa, peer, sizeof(peer)), set->s[srv].name,
		trial ? " (trying it again after its backoff)" : "");
	return fd;
}

/* A client sends with a session of its own from the start (where the
 * codec has sessions). */
static int client_assoc_start(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_udp_codec_t *x = ss_udp_codec(u, a);

	return ss_codec_udp_assoc_start(x->k, x->rst, ss_udp_ast(u, a));
}

/* The front of the listener a's application talks to. */
static const ss_udp_front_t *client_front(const ss_udp_relay_t *u, const ss_udp_assoc_t *a)
{
	return u->listeners[a->listener].front;
}

static void client_assoc_ended(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	const ss_udp_front_t *f = client_front(u, a);

	if (f->assoc_ended)
		f->assoc_ended(u, a);
	ss_servers_release(&u->inst->servers, a->server, true);
}

/* Points the association's socket at its server's address (a new one, or
 * another server's): a socket of its own, from a new source port. 0 or
 * -errno, the association keeping its old socket then. */
static int client_reconnect(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	int fd = client_socket(u, a);

	if (fd < 0)
		return fd;
	ss_udp_flush(u, false);
	ev_io_stop(u->loop, &a->io);
	close(a->io.fd);
	ss_udp_io_sock(&u->io, fd);
	a->sflags = 0;
	ev_io_set(&a->io, fd, EV_READ);
	ev_io_start(u->loop, &a->io);
	return 0;
}

void ss_udp_server_moved(ss_udp_relay_t *u, int i)
{
	for (ss_udp_entry_t *e = u->table.head; e; e = e->next) {
		ss_udp_assoc_t *a = (ss_udp_assoc_t *)e;
		if (a->server == i)
			client_reconnect(u, a);
	}
}

/* The association's server sent back an ICMP error (nothing listens
 * there, or it cannot be reached): the server's health hears of it, and
 * the association goes on with another server when there is one, with a
 * session of its own there. */
static void client_failover(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err)
{
	ss_servers_t *set = &u->inst->servers;
	ss_udp_codec_t *old = ss_udp_codec(u, a);
	int from = a->server, to;
	bool trial;
	char peer[SS_ADDR_STRLEN];

	ss_servers_udp_failed(set, from, err);
	to = ss_servers_pick(set, 1u << from, true, &trial);
	if (to < 0)
		return;
	a->server = (uint8_t)to;
	if (client_reconnect(u, a) < 0) {
		ss_servers_release(set, to, true);
		a->server = (uint8_t)from;
		return;
	}
	a->server = (uint8_t)from;
	ss_codec_udp_assoc_reset(old->k, old->rst, ss_udp_ast(u, a));
	ss_servers_release(set, from, true);
	a->server = (uint8_t)to;
	if (ss_udp_assoc_codec(u, a) < 0) {
		/* No state to seal with: the association ends. */
		ss_udp_assoc_destroy(u, a);
		return;
	}
	ss_info("udp %s: server %s failed (%s); the association goes on with server %s",
		ss_udp_peer((struct sockaddr *)&a->peer, peer, sizeof(peer)), set->s[from].name,
		strerror(err), set->s[to].name);
}

bool ss_udp_client_fits(ss_udp_relay_t *u, const struct sockaddr *app, size_t len)
{
	int mtu = u->inst->cfg->mtu;

	if (mtu && len > (size_t)mtu) {
		ss_udp_drop(u, app, "larger than --mtu");
		return false;
	}
	return true;
}

ss_udp_assoc_t *ss_udp_client_assoc(ss_udp_relay_t *u, const ss_udp_listener_t *l,
				    const ss_udp_rxmsg_t *r, const ss_udp_app_dgram_t *d)
{
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	ss_udp_assoc_t *a;

	if (!ss_udp_client_fits(u, from, d->len))
		return NULL;
	a = ss_udp_assoc_find_or_add(u, from, r->fromlen, from, r->fromlen, l->index);
	if (!a)
		ss_udp_drop(u, from, "no association");
	return a;
}

/* A datagram from an application (n bytes at buf + the front's read_off):
 * seal it and queue it to the association's server. */
static bool client_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			   const ss_udp_rxmsg_t *r)
{
	ss_udp_app_dgram_t d;
	ss_udp_assoc_t *a;
	uint8_t *out;
	long sealed;

	u->stats.datagrams_in++;
	if (!(a = ((const ss_udp_listener_t *)w)->front->take(u, w, buf, n, r, &d)))
		return true;
	ss_udp_codec_t *x = ss_udp_codec(u, a);
	sealed = x->k->ops->udp_seal(x->k, x->rst, ss_udp_ast(u, a), buf, SS_UDP_BUF_SIZE, d.addr,
				     d.addr_len, d.len, ss_udp_now(u), &out);
	if (sealed < 0) {
		ss_udp_drop(u, (const struct sockaddr *)&r->from, "sealing failed");
		return true;
	}
	ss_udp_queue(u, a->io.fd, &a->sflags, out, (size_t)sealed, NULL, 0, a);
	return true;
}

/* A datagram from the server (n bytes at buf + ss_udp_wire): open it and
 * give it to the application as its front does. */
static bool client_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			    const ss_udp_rxmsg_t *r)
{
	ss_udp_assoc_t *a = w;
	ss_udp_codec_t *x = ss_udp_codec(u, a);
	ss_codec_pkt_t p;
	const char *why;
	(void)r;

	why = x->k->ops->udp_open_answer(x->k, x->rst, ss_udp_ast(u, a), buf + ss_udp_wire(x), n,
					 ss_udp_now(u), &p);
	if (why) {
		const ss_server_t *s = &u->inst->servers.s[a->server];
		char what[sizeof(s->name) + 80];
		snprintf(what, sizeof(what), "an answer of server %s is refused", s->name);
		ss_udp_refuse(u, s->addr_len ? (const struct sockaddr *)&s->addr : NULL,
			      &a->peer.sa, what, why);
		return true;
	}
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	ss_servers_udp_answered(&u->inst->servers, a->server);
	u->stats.datagrams_out++;
	client_front(u, a)->answer(u, a, &p);
	return true;
}

void ss_udp_client_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const uint8_t *p, size_t len)
{
	ss_udp_listener_t *l = &u->listeners[a->listener];

	ss_udp_queue(u, l->io.fd, &l->sflags, p, len, &a->peer.sa, a->peer_len, NULL);
}

/* The server, and so the codec, is picked after the read: room for the
 * largest tag. */
static ss_udp_landing_t client_inbound_landing(ss_udp_relay_t *u, const ss_udp_listener_t *l)
{
	size_t at = l->front->read_off(u);

	return (ss_udp_landing_t){at, SS_UDP_BUF_SIZE - at - SS_CODEC_UDP_TAIL_MAX,
				  l->front->want_dst};
}

static ss_udp_landing_t client_outbound_landing(ss_udp_relay_t *u, const ss_udp_assoc_t *a)
{
	size_t at = ss_udp_wire(ss_udp_codec(u, a));

	return (ss_udp_landing_t){at, SS_UDP_BUF_SIZE - at, false};
}

/* A codec per server, in the order of the servers (a->server). */
static int client_init(ss_udp_relay_t *u, size_t *max, char *err, size_t errlen)
{
	ss_servers_t *set = &u->inst->servers;
	int rc;

	if (u->front->init && (rc = u->front->init(u, max, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < set->n; i++)
		if ((rc = ss_udp_codec_add(u, &set->s[i].codec, set->s[i].cls, err, errlen)) < 0)
			return rc;
	return 0;
}

static void client_release(ss_udp_relay_t *u)
{
	if (u->front->release)
		u->front->release(u);
}

static int client_listen(ss_udp_relay_t *u, const ss_udp_front_t *front,
			 const struct sockaddr *addr, socklen_t len, const char **hint)
{
	if (front->listen)
		return front->listen(u, addr, len, hint);
	return ss_sock_udp_bind(addr, len, &u->inst->sockopts);
}

const ss_udp_role_t ss_udp_client_role = {
    .init = client_init,
    .release = client_release,
    .listen = client_listen,
    .inbound_landing = client_inbound_landing,
    .inbound = client_inbound,
    .outbound_landing = client_outbound_landing,
    .outbound = client_outbound,
    .assoc_open = client_assoc_open,
    .assoc_start = client_assoc_start,
    .assoc_ended = client_assoc_ended,
    .assoc_unreachable = client_failover,
};
