#include "relay/udp.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crypto/aead.h"
#include "net/sock.h"
#include "net/transparent.h"
#include "proto/addr.h"
#include "proto/socks5.h"
#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* Per association, before its codec states: three cache lines. */
_Static_assert(sizeof(ss_udp_assoc_t) <= 192, "ss_udp_assoc_t grew past 192 bytes");

#define UDP_DNS_TTL 30.0
/* Where a datagram's payload (or its address) starts in the relay buffer:
 * room before it for the largest header a codec puts in front (with identity
 * identity headers, the longest) and, on the way back to an ss-local
 * client, a SOCKS5 UDP header. */
#define UDP_HEAD 256

static const char *udp_peer(const struct sockaddr *sa, char *buf, size_t len)
{
	return ss_sockaddr_format(sa, buf, len);
}

static void ss_udp_drop(ss_udp_relay_t *u, const struct sockaddr *from, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	u->stats.dropped++;
	ss_info("udp %s: datagram dropped: %s", from ? udp_peer(from, peer, sizeof(peer)) : "-",
		why);
}

/* Dropped as a refusal: logged at the default level, rate-limited per
 * source (relay/refused.h): the client's address on a server, the
 * server's (key, NULL when unknown) on a client. */
static void udp_refuse(ss_udp_relay_t *u, const struct sockaddr *key, const struct sockaddr *from,
		       const char *what, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	u->stats.dropped++;
	ss_refused_note(&u->inst->refused, key, "udp %s: %s: %s",
			udp_peer(from, peer, sizeof(peer)), what, why);
}

/* Sends one datagram: 0, or the errno value of a failure (logged). */
static int ss_udp_send(ss_udp_relay_t *u, int fd, const uint8_t *p, size_t len,
		       const struct sockaddr *to, socklen_t tolen)
{
	ssize_t n;

	do
		n = sendto(fd, p, len, MSG_NOSIGNAL, to, to ? tolen : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = errno;
		char why[96];
		snprintf(why, sizeof(why), "sending failed: %s", strerror(err));
		ss_udp_drop(u, to, why);
		return err;
	}
	return 0;
}

/* An error a connected UDP socket reports after an ICMP message: nothing
 * listens at the other end, or it cannot be reached. */
static bool udp_icmp_error(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
}

static socklen_t udp_salen(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void udp_assoc_failover(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err);

/* A datagram of a batch was not sent. Clients: an ICMP error on an
 * association's socket fails it over once the batch is out. */
static void udp_send_failed(void *ctx, const ss_udp_out_t *o, int err)
{
	ss_udp_relay_t *u = ctx;
	ss_udp_assoc_t *a = o->owner;
	char why[96];

	snprintf(why, sizeof(why), "sending failed: %s", strerror(err));
	ss_udp_drop(u, o->tolen ? (const struct sockaddr *)&o->to : NULL, why);
	if (!a || !udp_icmp_error(err) || u->n_failed == SS_UDP_SLOTS)
		return;
	for (size_t i = 0; i < u->n_failed; i++)
		if (u->failed[i] == a)
			return;
	u->failed[u->n_failed] = a;
	u->failed_err[u->n_failed++] = err;
}

/* Sends what the batch queued. Before an association's socket closes or
 * changes, what is queued on it goes (failover false: the association is
 * changing already); at the end of a batch, failover true. */
static void udp_flush(ss_udp_relay_t *u, bool failover)
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
		udp_assoc_failover(u, failed[i], errs[i]);
}

/* Queues p[0..len) to send from fd (flags: the socket's) to `to` (NULL: the
 * socket's peer), owner hearing of an ICMP error. */
static void udp_queue(ss_udp_relay_t *u, int fd, uint8_t *flags, const uint8_t *p, size_t len,
		      const struct sockaddr *to, socklen_t tolen, ss_udp_assoc_t *owner)
{
	ss_udp_out_t *o = ss_udp_io_queue(&u->io);

	if (!o) {
		udp_flush(u, false);
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

static ss_udp_codec_t *udp_codec(ss_udp_relay_t *u, const ss_udp_assoc_t *a)
{
	return &u->codecs[a->server];
}

/* The association's codec state, in its slot's area for the class. */
static void *udp_ast(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	return a->codec + u->inst->classes[udp_codec(u, a)->cls].udp_off;
}

/* Sets up (on the class's first use in the slot) and starts the state of
 * the association's codec. 0 or -errno. */
static int udp_assoc_codec(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_udp_codec_t *x = udp_codec(u, a);

	/* A state whose set-up failed half way is released with the slot. */
	a->classes |= (uint16_t)(1u << x->cls);
	if (ss_codec_udp_assoc_init(x->k, x->rst, udp_ast(u, a)) < 0)
		return -ENOMEM;
	/* A client sends with a session of its own from the start (where the
	 * codec has sessions); a server's association takes the client's
	 * (ss_codec_udp_adopt, by its caller). */
	return u->client ? ss_codec_udp_assoc_start(x->k, x->rst, udp_ast(u, a)) : 0;
}

static void udp_assoc_destroy(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	udp_flush(u, false);
	if (a->control) {
		/* The SOCKS5 connection still stands (the association expired
		 * or was evicted): it waits again, so the client's next datagram
		 * starts an association that ends with it. */
		ss_conn_t *c = a->control;
		a->control = NULL;
		ss_udp_control_add(u, c);
	}
	ev_io_stop(u->loop, &a->io);
	close(a->io.fd);
	ss_codec_udp_assoc_reset(udp_codec(u, a)->k, udp_codec(u, a)->rst, udp_ast(u, a));
	if (a->session) {
		/* Its record stays while the session's datagrams could still
		 * be replayed. */
		ss_udp_sessions_release(u->sessions, a->session, ev_now(u->loop));
		a->session = NULL;
	}
	if (u->client)
		ss_servers_release(&u->inst->servers, a->server, true);
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
		ss_debug(
		    "udp %s: association idle, closed",
		    udp_peer((struct sockaddr *)&((ss_udp_assoc_t *)e)->peer, peer, sizeof(peer)));
		u->stats.assoc_expired++;
		udp_assoc_destroy(u, (ss_udp_assoc_t *)e);
	}
	udp_arm_expiry(u);
}

static void udp_outbound_cb(struct ev_loop *loop, ev_io *w, int revents);

/* The socket an association sends from: clients connect it to their server;
 * the server leaves it unconnected so any target can answer (full cone). */
static int udp_assoc_socket(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	struct ss_instance *inst = u->inst;
	const ss_sockopts_t *o = &inst->outopts;
	int fd;

	if (u->client) {
		socklen_t len;
		const struct sockaddr *srv =
		    ss_servers_addr(&inst->servers.s[a->server], true, &len);
		if (!len)
			return -EHOSTUNREACH;
		fd = ss_sock_udp_open(srv->sa_family, o);
		if (fd >= 0 && connect(fd, srv, len) < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		return fd;
	}
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

static ss_udp_assoc_t *ss_udp_assoc_get(ss_udp_relay_t *u, const struct sockaddr *key,
					socklen_t klen, const struct sockaddr *client,
					socklen_t clen, uint8_t listener)
{
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)ss_udp_table_find(&u->table, key, klen);
	ev_tstamp now = ev_now(u->loop);
	char peer[SS_ADDR_STRLEN];
	int fd;

	if (a) {
		ss_udp_table_touch(&u->table, &a->entry, now);
		return a;
	}
	if (u->table.count == u->table.max) {
		ss_udp_assoc_t *old = (ss_udp_assoc_t *)ss_udp_table_oldest(&u->table);
		ss_info("udp %s: association evicted: the table holds %zu",
			udp_peer((struct sockaddr *)&old->peer, peer, sizeof(peer)), u->table.max);
		u->stats.assoc_evicted++;
		udp_assoc_destroy(u, old);
	}
	/* A client's association goes to a server picked as for a
	 * connection (relay/health.h), spreading associations by their count. */
	bool trial = false;
	int srv = u->client ? ss_servers_pick(&u->inst->servers, 0, true, &trial) : 0;
	if (srv < 0) {
		ss_info("udp %s: no server has an address yet",
			udp_peer(client, peer, sizeof(peer)));
		return NULL;
	}
	a = (ss_udp_assoc_t *)ss_udp_table_add(&u->table, key, klen, now);
	if (!a) {
		if (u->client)
			ss_servers_release(&u->inst->servers, srv, true);
		return NULL;
	}
	a->peer_len = ss_inaddr_set(&a->peer, client, clen);
	a->listener = listener;
	a->server = (uint8_t)srv;
	fd = udp_assoc_socket(u, a);
	if (fd < 0) {
		ss_warn("udp %s: cannot open a socket: %s", udp_peer(client, peer, sizeof(peer)),
			strerror(-fd));
	} else if (udp_assoc_codec(u, a) < 0) {
		ss_warn("udp %s: cannot set up the session cipher state",
			udp_peer(client, peer, sizeof(peer)));
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		if (u->client)
			ss_servers_release(&u->inst->servers, srv, true);
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
	if (u->client)
		ss_info("udp %s: new association, server %s%s",
			udp_peer(client, peer, sizeof(peer)), u->inst->servers.s[srv].name,
			trial ? " (trying it again after its backoff)" : "");
	else
		ss_debug("udp %s: new association", udp_peer(client, peer, sizeof(peer)));

	if (!ev_is_active(&u->expiry))
		udp_arm_expiry(u);
	return a;
}

/* ss-local: the link in u->controls of the SOCKS5 connection whose UDP
 * ASSOCIATE a datagram from client belongs to: its client's address, and
 * the port the request named (any port when it named 0). NULL if none. */
static ss_conn_t **udp_control_for(ss_udp_relay_t *u, const struct sockaddr *client)
{
	for (ss_conn_t **pp = &u->controls; *pp; pp = &(*pp)->udp_next) {
		ss_conn_t *c = *pp;
		ss_inaddr_t want = c->peer;
		ss_sockaddr_set_port(&want.sa,
				     c->target.port ? c->target.port : ss_sockaddr_port(client));
		if (want.sa.sa_family == client->sa_family && ss_udp_addr_equal(&want.sa, client))
			return pp;
	}
	return NULL;
}

/* ss-local: the association of a datagram from client, which only a
 * client holding a UDP ASSOCIATE may have: its own, or a new one tied to
 * its SOCKS5 connection (the association ends with it). NULL, with why,
 * when there is none. */
static ss_udp_assoc_t *udp_socks5_assoc(ss_udp_relay_t *u, const struct sockaddr *client,
					socklen_t clen, uint8_t listener, const char **why)
{
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)ss_udp_table_find(&u->table, client, clen);
	ss_conn_t **pp;

	if (a) {
		ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
		return a;
	}
	*why = "no UDP ASSOCIATE from this address";
	pp = udp_control_for(u, client);
	if (!pp)
		return NULL;
	*why = "no association";
	a = ss_udp_assoc_get(u, client, clen, client, clen, listener);
	if (!a)
		return NULL;
	/* Making it may have evicted another association, whose connection
	 * then went back to the list: find the link again. */
	pp = udp_control_for(u, client);
	ss_conn_t *c = *pp;
	*pp = c->udp_next;
	c->udp_next = NULL;
	c->udp_assoc = a;
	a->control = c;
	return a;
}

void ss_udp_control_add(ss_udp_relay_t *u, ss_conn_t *c)
{
	c->udp_assoc = NULL;
	c->udp_next = u->controls;
	u->controls = c;
}

void ss_udp_control_closed(ss_udp_relay_t *u, ss_conn_t *c)
{
	if (c->udp_assoc) {
		ss_udp_assoc_t *a = c->udp_assoc;
		a->control = NULL;
		c->udp_assoc = NULL;
		udp_assoc_destroy(u, a);
		return;
	}
	for (ss_conn_t **pp = &u->controls; *pp; pp = &(*pp)->udp_next) {
		if (*pp == c) {
			*pp = c->udp_next;
			break;
		}
	}
	c->udp_next = NULL;
}

int ss_udp_bound_addr(ss_udp_relay_t *u, ss_conn_t *c, struct sockaddr_storage *out)
{
	socklen_t len = sizeof(*out);

	if (!u->n_listeners)
		return -ENOTCONN;
	if (getsockname(u->listeners[0].io.fd, (struct sockaddr *)out, &len) < 0)
		return -errno;
	/* A wildcard listener: answer with the address the client reached us on. */
	struct sockaddr_storage here;
	socklen_t hlen = sizeof(here);
	bool wild = out->ss_family == AF_INET
			? ((struct sockaddr_in *)out)->sin_addr.s_addr == htonl(INADDR_ANY)
			: IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)out)->sin6_addr);
	if (wild && getsockname(c->side[SS_IN].fd, (struct sockaddr *)&here, &hlen) == 0) {
		uint16_t port = ss_sockaddr_port((struct sockaddr *)out);
		*out = here;
		ss_sockaddr_set_port((struct sockaddr *)out, port);
	}
	return 0;
}

/* Where a datagram from the other relay lands, so that it opens in place
 * with its plaintext at UDP_HEAD. */
static size_t udp_wire(const ss_udp_codec_t *x)
{
	return UDP_HEAD - x->k->udp_rx_lead;
}

/* Points the association's socket at its server's address (a new one, or
 * another server's): a socket of its own, from a new source port. 0 or
 * -errno, the association keeping its old socket then. */
static int udp_assoc_reconnect(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	int fd = udp_assoc_socket(u, a);

	if (fd < 0)
		return fd;
	udp_flush(u, false);
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
			udp_assoc_reconnect(u, a);
	}
}

/* Clients: the association's server sent back an ICMP error (nothing
 * listens there, or it cannot be reached): the server's health hears of
 * it, and the association goes on with another server when there is one,
 * with a session of its own there. */
static void udp_assoc_failover(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err)
{
	ss_servers_t *set = &u->inst->servers;
	ss_udp_codec_t *old = udp_codec(u, a);
	int from = a->server, to;
	bool trial;
	char peer[SS_ADDR_STRLEN];

	ss_servers_udp_failed(set, from, err);
	to = ss_servers_pick(set, 1u << from, true, &trial);
	if (to < 0)
		return;
	a->server = (uint8_t)to;
	if (udp_assoc_reconnect(u, a) < 0) {
		ss_servers_release(set, to, true);
		a->server = (uint8_t)from;
		return;
	}
	a->server = (uint8_t)from;
	ss_codec_udp_assoc_reset(old->k, old->rst, udp_ast(u, a));
	ss_servers_release(set, from, true);
	a->server = (uint8_t)to;
	if (udp_assoc_codec(u, a) < 0) {
		/* No state to seal with: the association ends. */
		udp_assoc_destroy(u, a);
		return;
	}
	ss_info("udp %s: server %s failed (%s); the association goes on with server %s",
		udp_peer((struct sockaddr *)&a->peer, peer, sizeof(peer)), set->s[from].name,
		strerror(err), set->s[to].name);
}

static uint64_t udp_now(ss_udp_relay_t *u)
{
	return (uint64_t)ev_now(u->loop);
}

/* --- client side: ss-local, ss-tunnel, ss-redir --- */

/* ss-redir: the room a datagram's destination takes in front of it, at most
 * (an IPv6 address and port). */
#define UDP_REDIR_ADDR_ROOM 19

/* ss-redir: puts the original destination dst of the datagram at data
 * right before it, setting *at and *addr_len. NULL, or why it cannot be
 * relayed. */
static const char *udp_redir_target(ss_udp_relay_t *u, const struct sockaddr_storage *dst,
				    socklen_t dstlen, uint8_t *data, uint8_t **at, size_t *addr_len)
{
	uint8_t hdr[UDP_REDIR_ADDR_ROOM];
	ss_addr_t target;

	if (dstlen == 0)
		return "no original destination (not sent here by a TPROXY rule)";
	if (ss_transparent_is_self(dst, dstlen, u->inst->cfg->local_port))
		return "sent to the proxy's own address and port, not by a TPROXY rule";
	if (ss_addr_from_sockaddr(&target, (const struct sockaddr *)dst) < 0)
		return "original destination of an unknown family";
	*addr_len = ss_addr_encode(&target, hdr, sizeof(hdr));
	*at = data - *addr_len;
	memcpy(*at, hdr, *addr_len);
	return NULL;
}

/* ss-redir: an answer goes back to the client from the address it came
 * from, the one the client sent to. */
static void udp_redir_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p)
{
	struct sockaddr_storage src, to;
	socklen_t slen, tlen = a->peer_len;
	char why[96];
	int fd;

	memcpy(&to, &a->peer, tlen);
	if (ss_addr_to_sockaddr(&p->addr, &src, &slen) < 0) {
		ss_udp_drop(u, (struct sockaddr *)&to, "an answer from a name, not an address");
		return;
	}
	ss_transparent_unmap(&src, &slen);
	ss_transparent_unmap(&to, &tlen);
	if (src.ss_family != to.ss_family) {
		ss_udp_drop(u, (struct sockaddr *)&to,
			    "an answer from an address of the other family");
		return;
	}
	fd = ss_udp_from_socket(&u->from, (struct sockaddr *)&src, slen);
	if (fd < 0) {
		char where[SS_ADDR_STRLEN];
		snprintf(why, sizeof(why), "cannot send from %s: %s",
			 ss_sockaddr_format((struct sockaddr *)&src, where, sizeof(where)),
			 strerror(-fd));
		ss_udp_drop(u, (struct sockaddr *)&to, why);
		return;
	}
	ss_udp_send(u, fd, p->payload, p->payload_len, (struct sockaddr *)&to, tlen);
}

/* Where a datagram from an application lands in its slot: the target's
 * address goes at UDP_HEAD and the payload right after it. */
static size_t udp_client_in_off(ss_udp_relay_t *u)
{
	uint8_t scratch[SS_ADDR_MAX_ENCODED];

	if (u->socks5) /* [RSV RSV FRAG][address][data], the address at UDP_HEAD */
		return UDP_HEAD - 3;
	if (u->redir) /* the address goes in front once the datagram tells it */
		return UDP_HEAD + UDP_REDIR_ADDR_ROOM;
	return UDP_HEAD + ss_addr_encode(&u->inst->cfg->tunnel_addr, scratch, sizeof(scratch));
}

/* A datagram from an application (n bytes at buf + udp_client_in_off):
 * seal it and queue it to the server. */
static bool udp_client_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			       const ss_udp_rxmsg_t *r)
{
	struct ss_instance *inst = u->inst;
	ss_udp_listener_t *l = w;
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	uint8_t *at = buf + UDP_HEAD, *data = buf + udp_client_in_off(u), *out;
	size_t addr_len = 0, dlen = n;
	long sealed;

	u->stats.datagrams_in++;
	if (!u->socks5 && !u->redir)
		addr_len = ss_addr_encode(&inst->cfg->tunnel_addr, at, SS_ADDR_MAX_ENCODED);
	if (u->redir) {
		const char *why = udp_redir_target(u, &r->dst, r->dstlen, data, &at, &addr_len);
		if (why) {
			udp_refuse(u, from, from, "datagram dropped", why);
			return true;
		}
	}
	if (u->socks5) {
		ss_addr_t target;
		size_t used;
		if (n < 3 || ss_socks5_parse_udp(data, dlen, &target, &used) != SS_OK) {
			ss_udp_drop(u, from, "malformed SOCKS5 UDP header");
			return true;
		}
		if (data[2] != 0) {
			ss_udp_drop(u, from, "fragmented SOCKS5 datagram");
			return true;
		}
		addr_len = used - 3;
		dlen -= used;
	}
	/* --mtu counts the payload, not the SOCKS5 header. */
	if (inst->cfg->mtu && dlen > (size_t)inst->cfg->mtu) {
		ss_udp_drop(u, from, "larger than --mtu");
		return true;
	}
	const char *why = "no association";
	ss_udp_assoc_t *a = u->socks5
				? udp_socks5_assoc(u, from, r->fromlen, l->index, &why)
				: ss_udp_assoc_get(u, from, r->fromlen, from, r->fromlen, l->index);
	if (!a) {
		ss_udp_drop(u, from, why);
		return true;
	}
	if (a->control)
		ss_conn_touch(a->control);
	ss_udp_codec_t *x = udp_codec(u, a);
	sealed = x->k->ops->udp_seal(x->k, x->rst, udp_ast(u, a), buf, SS_UDP_BUF_SIZE, at,
				     addr_len, dlen, udp_now(u), &out);
	if (sealed < 0) {
		ss_udp_drop(u, from, "sealing failed");
		return true;
	}
	udp_queue(u, a->io.fd, &a->sflags, out, (size_t)sealed, NULL, 0, a);
	return true;
}

/* A datagram from the server (n bytes at buf + udp_wire): open it and
 * queue it to the application. */
static bool udp_client_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
				const ss_udp_rxmsg_t *r)
{
	ss_udp_assoc_t *a = w;
	const struct sockaddr *client = (struct sockaddr *)&a->peer;
	ss_udp_codec_t *x = udp_codec(u, a);
	ss_codec_pkt_t p;
	const char *why;
	(void)r;

	why = x->k->ops->udp_open_answer(x->k, x->rst, udp_ast(u, a), buf + udp_wire(x), n,
					 udp_now(u), &p);
	if (why) {
		const ss_server_t *s = &u->inst->servers.s[a->server];
		char what[sizeof(s->name) + 80];
		snprintf(what, sizeof(what), "an answer of server %s is refused", s->name);
		udp_refuse(u, s->addr_len ? (const struct sockaddr *)&s->addr : NULL, client, what,
			   why);
		return true;
	}
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	ss_servers_udp_answered(&u->inst->servers, a->server);
	if (a->control)
		ss_conn_touch(a->control);
	u->stats.datagrams_out++;
	ss_udp_listener_t *l = &u->listeners[a->listener];
	if (u->redir) {
		udp_redir_answer(u, a, &p);
	} else if (u->socks5) {
		uint8_t *h = p.addr_raw - 3;
		h[0] = h[1] = h[2] = 0;
		udp_queue(u, l->io.fd, &l->sflags, h, (size_t)(p.payload - h) + p.payload_len,
			  client, a->peer_len, NULL);
	} else {
		udp_queue(u, l->io.fd, &l->sflags, p.payload, p.payload_len, client, a->peer_len,
			  NULL);
	}
	return true;
}

/* --- server side --- */

static void udp_server_send(ss_udp_relay_t *u, ss_udp_assoc_t *a, const uint8_t *data, size_t len,
			    const struct sockaddr *to)
{
	struct sockaddr_in6 mapped;

	if (ss_instance_target_blocked(u->inst, NULL, to)) {
		ss_udp_drop(u, (struct sockaddr *)&a->peer,
			    "target in the ACL's outbound block list");
		return;
	}
	/* A dual-stack socket reaches IPv4 targets through mapped addresses. */
	if (to->sa_family == AF_INET && a->family == AF_INET6) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)to;
		memset(&mapped, 0, sizeof(mapped));
		mapped.sin6_family = AF_INET6;
		mapped.sin6_port = in->sin_port;
		mapped.sin6_addr.s6_addr[10] = mapped.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&mapped.sin6_addr.s6_addr[12], &in->sin_addr, 4);
		to = (struct sockaddr *)&mapped;
	}
	udp_queue(u, a->io.fd, &a->sflags, data, len, to, udp_salen(to), NULL);
}

static void udp_dns_done(void *arg, int status, const struct sockaddr *sa, socklen_t len)
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
		udp_server_send(u, a, d->pending, d->pending_len, (struct sockaddr *)&to);
		/* out of any batch: sent now, before the slot is reused */
		udp_flush(u, false);
	}
	d->pending = NULL;
}

/* Sends to a named target: from the cache, or once the name resolves. */
static void udp_server_send_named(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_addr_t *t,
				  const uint8_t *data, size_t len)
{
	ev_tstamp now = ev_now(u->loop);
	ss_udp_dns_t *d = NULL, *victim = NULL;
	const struct sockaddr *client = (struct sockaddr *)&a->peer;

	if (ss_instance_target_blocked(u->inst, t->domain, NULL)) {
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
		udp_server_send(u, a, data, len, (struct sockaddr *)&to);
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
	ss_resolver_lookup(&u->inst->resolver, &d->req, d->name, t->port, udp_dns_done, d);
}

static void ss_udp_to_target(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_addr_t *target,
			     const uint8_t *data, size_t len)
{
	struct sockaddr_storage to;
	socklen_t tolen;

	if (target->atyp == SS_ATYP_DOMAIN) {
		udp_server_send_named(u, a, target, data, len);
		return;
	}
	ss_addr_to_sockaddr(target, &to, &tolen);
	udp_server_send(u, a, data, len, (struct sockaddr *)&to);
}

/* A new server association for an accepted datagram d from client: it
 * takes the datagram's session from the codec. NULL when it cannot be made. */
static ss_udp_assoc_t *udp_server_assoc(ss_udp_relay_t *u, ss_codec_dgram_t *d,
					const struct sockaddr_storage *client, socklen_t clen,
					uint8_t listener)
{
	ss_udp_assoc_t *a = ss_udp_assoc_get(u, (struct sockaddr *)&d->key, d->key_len,
					     (const struct sockaddr *)client, clen, listener);
	const char *user;

	if (!a)
		return NULL;
	if (ss_codec_udp_adopt(u->codecs[0].k, u->codecs[0].rst, udp_ast(u, a), d) < 0) {
		udp_assoc_destroy(u, a);
		return NULL;
	}
	if ((user = ss_codec_udp_user(u->codecs[0].k, d))) {
		char peer[SS_ADDR_STRLEN];
		ss_info("udp %s: user %s: new session",
			udp_peer((const struct sockaddr *)client, peer, sizeof(peer)), user);
	}
	return a;
}

/* A datagram accepted for association a (of a session, recorded in its
 * memo): it keeps the association alive, answers follow the client to the
 * address it last sent from, and the payload goes to its target. */
static void udp_server_relay(ss_udp_relay_t *u, ss_udp_assoc_t *a, const struct sockaddr *from,
			     socklen_t fromlen, uint8_t listener, const ss_addr_t *target,
			     const uint8_t *data, size_t len)
{
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	a->peer_len = ss_inaddr_set(&a->peer, from, fromlen);
	a->listener = listener;
	ss_udp_to_target(u, a, target, data, len);
}

/* Records the accepted d in its session's memo (codecs with sessions). */
static void udp_session_seen(ss_udp_relay_t *u, ss_udp_session_t *s, const ss_codec_dgram_t *d)
{
	ss_codec_t *k = u->codecs[0].k;

	k->ops->udp_seen(k, s->memo, d);
	s->recorded = true;
	s->last = ev_now(u->loop);
}

/* Another worker holds the session of the opened datagram d: it goes there,
 * to be checked against the session's memo and relayed from its one
 * association. */
static void udp_hand_over(ss_udp_relay_t *u, unsigned holder, const ss_codec_dgram_t *d,
			  const ss_codec_pkt_t *p, const ss_udp_rxmsg_t *r, uint8_t listener)
{
	ss_udp_handed_t h = {.d = *d, .target = p->addr, .listener = listener};
	ss_udp_relay_t *to = &u->inst->peers[holder]->udp;

	h.fromlen = ss_inaddr_set(&h.from, (const struct sockaddr *)&r->from, r->fromlen);
	if (!ss_udp_inbox_push(&to->inbox, &h, p->payload, p->payload_len)) {
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
static ss_udp_assoc_t *udp_server_new(ss_udp_relay_t *u, ss_codec_dgram_t *d,
				      const ss_codec_pkt_t *p, const ss_udp_rxmsg_t *r,
				      uint8_t listener)
{
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	ss_codec_t *k = u->codecs[0].k;
	ss_udp_session_t *s = NULL;
	ss_udp_assoc_t *a;
	unsigned holder;

	if (u->sessions) {
		switch (ss_udp_sessions_claim(u->sessions, (struct sockaddr *)&d->key,
					      u->inst->worker, ev_now(u->loop), &s, &holder)) {
		case SS_UDP_SESSION_OTHER:
			udp_hand_over(u, holder, d, p, r, listener);
			return NULL;
		case SS_UDP_SESSION_FULL:
			udp_refuse(u, from, from, "datagram refused",
				   "too many UDP sessions held or ended in the last minute");
			return NULL;
		case SS_UDP_SESSION_MINE:
			break;
		}
		if (!k->ops->udp_fresh(k, s->memo, d)) {
			ss_udp_sessions_release(u->sessions, s, ev_now(u->loop));
			udp_refuse(u, from, from, "datagram refused",
				   "packet id replayed or too old");
			return NULL;
		}
		udp_session_seen(u, s, d);
	}
	a = udp_server_assoc(u, d, &r->from, r->fromlen, listener);
	if (!a) {
		if (s)
			ss_udp_sessions_release(u->sessions, s, ev_now(u->loop));
		ss_udp_drop(u, from, "no association");
		return NULL;
	}
	a->session = s;
	return a;
}

/* A datagram from a client (n bytes at buf + udp_wire): open it and queue
 * the payload to its target. */
static bool udp_server_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
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
	if (!ss_instance_client_allowed(inst, from)) {
		udp_refuse(u, from, from, "datagram refused", "client refused by the ACL");
		return true;
	}
	/* The codec opens it as far as telling its association (the client's
	 * address, or its session), then the rest against that association. */
	why = k->ops->udp_open_request(k, x->rst, buf + udp_wire(x), n, udp_now(u), from,
				       r->fromlen, &d);
	ss_udp_assoc_t *a = why ? NULL
				: (ss_udp_assoc_t *)ss_udp_table_find(
				      &u->table, (struct sockaddr *)&d.key, d.key_len);
	if (a && a->session && !k->ops->udp_fresh(k, a->session->memo, &d))
		why = "packet id replayed or too old";
	if (!why)
		why = k->ops->udp_accept(k, x->rst, a ? udp_ast(u, a) : NULL, &d, udp_now(u), &p);
	if (why) {
		udp_refuse(u, from, from, "datagram refused", why);
		return true;
	}
	if (inst->cfg->mtu && p.payload_len > (size_t)inst->cfg->mtu) {
		ss_udp_drop(u, from, "larger than --mtu");
		return true;
	}
	if (!a) {
		if ((a = udp_server_new(u, &d, &p, r, l->index)))
			ss_udp_to_target(u, a, &p.addr, p.payload, p.payload_len);
		return true;
	}
	if (a->session)
		udp_session_seen(u, a->session, &d);
	udp_server_relay(u, a, from, r->fromlen, l->index, &p.addr, p.payload, p.payload_len);
	return true;
}

/* Datagrams the other workers handed over, of sessions this one holds:
 * each is checked against its session's memo here, as if it had come in
 * here, and relayed. */
static void udp_inbox_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	ss_udp_relay_t *u = w->data;
	ss_codec_t *k = u->codecs[0].k;
	unsigned first, n = ss_udp_inbox_take(&u->inbox, &first);
	(void)loop;
	(void)revents;

	for (unsigned i = 0; i < n; i++) {
		ss_udp_handed_t *h = &u->inbox.q[(first + i) % SS_UDP_INBOX_SLOTS];
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
			udp_refuse(u, from, from, "datagram refused",
				   "packet id replayed or too old");
			continue;
		}
		udp_session_seen(u, a->session, &h->d);
		udp_server_relay(u, a, from, h->fromlen, h->listener, &h->target, h->payload,
				 h->len);
	}
	/* The payloads are sent before their slots are given back. */
	udp_flush(u, true);
	ss_udp_inbox_done(&u->inbox, n);
}

/* An answer from a target (n bytes at buf + UDP_HEAD): wrap it with the
 * target's address, right before it, seal it and queue it to the client. */
static bool udp_server_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
				const ss_udp_rxmsg_t *r)
{
	struct ss_instance *inst = u->inst;
	ss_udp_assoc_t *a = w;
	uint8_t *data = buf + UDP_HEAD, *out;
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
	ss_udp_codec_t *x = udp_codec(u, a);
	sealed = x->k->ops->udp_seal(x->k, x->rst, udp_ast(u, a), buf, SS_UDP_BUF_SIZE, data - hlen,
				     hlen, n, udp_now(u), &out);
	if (sealed < 0) {
		ss_udp_drop(u, (struct sockaddr *)&a->peer, "sealing failed");
		return true;
	}
	ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	u->stats.datagrams_out++;
	ss_udp_listener_t *l = &u->listeners[a->listener];
	udp_queue(u, l->io.fd, &l->sflags, out, (size_t)sealed, (struct sockaddr *)&a->peer,
		  a->peer_len, NULL);
	return true;
}

/* --- watchers --- */

#define UDP_PER_EVENT 32 /* datagrams read per readiness event, at most */

typedef bool (*udp_handler_t)(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			      const ss_udp_rxmsg_t *r);
/* What a failed read means to the socket's owner: whether to read on. */
typedef bool (*udp_rx_error_t)(ss_udp_relay_t *u, void *w, int err);

/* Hands the datagram r, read into slot, to handle: whole, or, for a GRO
 * buffer, segment by segment, each copied to a spare slot of its own (a
 * codec works in place, with room around each datagram). Whether the
 * socket's owner still stands. */
static bool udp_dispatch(ss_udp_relay_t *u, void *w, uint8_t *slot, size_t off,
			 const ss_udp_rxmsg_t *r, udp_handler_t handle)
{
	size_t at, len;

	if (!r->seg || r->seg >= r->len)
		return handle(u, w, slot, r->len, r);
	u->io.stats.rx_gro++;
	for (size_t i = 0; (len = ss_udp_gro_segment(r->len, r->seg, i, &at)) > 0; i++) {
		uint8_t *s = ss_udp_io_spare(&u->io);
		if (!s) {
			udp_flush(u, false);
			s = ss_udp_io_spare(&u->io);
		}
		memcpy(s + off, slot + off + at, len);
		if (!handle(u, w, s, len, r))
			return false;
	}
	return true;
}

/* One readiness event of a socket: what it has, up to UDP_PER_EVENT
 * datagrams, read in batches (datagram i at slot i + off, at most cap
 * bytes), handled in order and sent at the end of each batch. */
static void udp_batch(ss_udp_relay_t *u, void *w, int fd, size_t off, size_t cap, bool want_dst,
		      udp_handler_t handle, udp_rx_error_t on_error)
{
	size_t left = UDP_PER_EVENT;
	bool go = true;

	while (go && left > 0) {
		size_t want = left < SS_UDP_BATCH ? left : SS_UDP_BATCH;
		int n = ss_udp_io_recv(&u->io, fd, want, off, cap, want_dst);
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
				go = udp_dispatch(u, w, ss_udp_io_slot(&u->io, (size_t)i), off, r,
						  handle);
		}
		udp_flush(u, true);
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
	size_t off;
	(void)loop;
	(void)revents;

	if (u->client) {
		/* The server, and so the codec, is picked after the read: leave
		 * room for the largest tag. */
		off = udp_client_in_off(u);
		udp_batch(u, l, w->fd, off, SS_UDP_BUF_SIZE - off - SS_CODEC_UDP_TAIL_MAX, u->redir,
			  udp_client_inbound, udp_listener_error);
	} else {
		off = udp_wire(&u->codecs[0]);
		udp_batch(u, l, w->fd, off, SS_UDP_BUF_SIZE - off, false, udp_server_inbound,
			  udp_listener_error);
	}
}

static bool udp_outbound_error(ss_udp_relay_t *u, void *w, int err)
{
	ss_udp_assoc_t *a = w;

	if (err == EMSGSIZE) {
		/* a datagram too large was still taken */
		ss_udp_drop(u, (struct sockaddr *)&a->peer, "answer too large");
		return true;
	}
	/* Clients: an ICMP error, the server is not there (the association may
	 * end). A server's targets' ICMP errors are their side of the story. */
	if (u->client && udp_icmp_error(err)) {
		udp_flush(u, false);
		udp_assoc_failover(u, a, err);
	}
	return false;
}

static void udp_outbound_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_udp_assoc_t *a = (ss_udp_assoc_t *)((char *)w - offsetof(ss_udp_assoc_t, io));
	ss_udp_relay_t *u = w->data;
	size_t off;
	(void)loop;
	(void)revents;

	if (u->client) {
		off = udp_wire(udp_codec(u, a));
		udp_batch(u, a, w->fd, off, SS_UDP_BUF_SIZE - off, false, udp_client_outbound,
			  udp_outbound_error);
	} else {
		off = UDP_HEAD;
		udp_batch(u, a, w->fd, off, SS_UDP_BUF_SIZE - off - u->inst->codec.udp_tail, false,
			  udp_server_outbound, udp_outbound_error);
	}
}

/* Releases what ss_udp_init made, in any state it leaves on failure. */
static void udp_release(ss_udp_relay_t *u)
{
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
	ss_udp_from_free(&u->from);
}

/* Once, at start-up: the relay's state of each codec (ss-server's, or each
 * server's of a client): keys and cipher states for datagrams. */
static int udp_codecs_init(ss_udp_relay_t *u, char *err, size_t errlen)
{
	struct ss_instance *inst = u->inst;
	size_t n = u->client ? inst->servers.n : 1;

	for (size_t i = 0; i < n; i++) {
		ss_udp_codec_t *x = &u->codecs[i];
		int rc;

		x->k = u->client ? &inst->servers.s[i].codec : &inst->codec;
		x->cls = u->client ? inst->servers.s[i].cls : 0;
		x->rst = calloc(1, x->k->ops->udp_relay_size ? x->k->ops->udp_relay_size : 1);
		rc = x->rst ? ss_codec_udp_init(x->k, x->rst) : -ENOMEM;
		if (rc < 0) {
			free(x->rst);
			x->rst = NULL;
			snprintf(err, errlen, "cannot set up the UDP cipher state: %s",
				 strerror(-rc));
			return rc;
		}
		u->n_codecs = i + 1;
	}
	return 0;
}

/* ss-server with a codec that has sessions: worker 0 makes the table of
 * every worker's sessions, the others use it; with workers, each takes the
 * datagrams of its sessions that reach the others. */
static int udp_sessions_setup(ss_udp_relay_t *u, size_t max_assoc, char *err, size_t errlen)
{
	struct ss_instance *inst = u->inst;
	const ss_codec_ops_t *ops = u->codecs[0].k->ops;

	if (u->client || !ops->udp_memo_size)
		return 0;
	if (inst->first) {
		u->sessions = inst->first->udp.sessions;
	} else {
		if (ss_udp_sessions_init(&u->own_sessions, ops->udp_memo_size, ops->udp_memo_ttl,
					 max_assoc * inst->workers, SS_UDP_SESSIONS_ENDED) < 0) {
			snprintf(err, errlen, "cannot reserve the table of UDP sessions");
			return -ENOMEM;
		}
		u->sessions = &u->own_sessions;
	}
	if (inst->workers > 1) {
		if (ss_udp_inbox_init(&u->inbox, u->loop, SS_UDP_BUF_SIZE, udp_inbox_cb, u) < 0) {
			snprintf(err, errlen, "cannot reserve room for datagrams between workers");
			return -ENOMEM;
		}
		ss_udp_inbox_open(&u->inbox);
	}
	return 0;
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
	u->client = cfg->prog != SS_PROG_SERVER;
	u->socks5 = cfg->prog == SS_PROG_LOCAL;
	u->redir = cfg->prog == SS_PROG_REDIR;
	u->timeout = cfg->udp_timeout > 0 ? cfg->udp_timeout : 60;
	if (u->redir) {
		/* The descriptors are shared with the sockets answers go
		 * back from: half each. */
		max = max_assoc / 2 ? max_assoc / 2 : 1;
		if (ss_udp_from_init(&u->from, u->loop, max_assoc - max, u->timeout) < 0) {
			snprintf(err, errlen, "cannot reserve %zu UDP answer sockets",
				 max_assoc - max);
			return -ENOMEM;
		}
	}
	rc = ss_udp_table_init(&u->table, sizeof(ss_udp_assoc_t) + inst->udp_states,
			       offsetof(ss_udp_assoc_t, classes), max);
	if (rc < 0) {
		ss_udp_from_free(&u->from);
		snprintf(err, errlen, "cannot reserve %zu UDP associations", max);
		return rc;
	}
	/* Pages are touched only as datagrams fill them. */
	u->buf = mmap(NULL, SS_UDP_BUF_SIZE * (SS_UDP_SLOTS + SS_UDP_DNS_SLOTS),
		      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (u->buf == MAP_FAILED) {
		u->buf = NULL;
		udp_release(u);
		snprintf(err, errlen, "cannot reserve UDP buffers");
		return -ENOMEM;
	}
	u->pending_area = u->buf + SS_UDP_BUF_SIZE * SS_UDP_SLOTS;
	ss_udp_io_init(&u->io, u->buf, SS_UDP_BUF_SIZE);
	if ((rc = udp_codecs_init(u, err, errlen)) < 0 ||
	    (rc = udp_sessions_setup(u, max, err, errlen)) < 0) {
		udp_release(u);
		ss_udp_destroy(u);
		return rc;
	}
	ev_init(&u->expiry, udp_expiry_cb);
	u->expiry.data = u;
	u->ready = true;
	return 0;
}

int ss_udp_listen(ss_udp_relay_t *u, const struct sockaddr *addr, socklen_t len, char *err,
		  size_t errlen)
{
	char where[SS_ADDR_STRLEN];
	int fd;

	if (u->n_listeners == SS_ARRAY_LEN(u->listeners)) {
		snprintf(err, errlen, "too many UDP listen addresses");
		return -EINVAL;
	}
	fd = ss_sock_udp_bind(addr, len, &u->inst->sockopts);
	/* ss-redir: datagrams come by TPROXY, for addresses not the host's. */
	if (fd >= 0 && u->redir) {
		int rc = ss_transparent_set(fd, addr->sa_family);
		if (rc == 0)
			rc = ss_transparent_recv_dst(fd, addr->sa_family);
		if (rc < 0) {
			close(fd);
			fd = rc;
		}
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on UDP %s: %s%s",
			 ss_sockaddr_format(addr, where, sizeof(where)), strerror(-fd),
			 fd == -EPERM && u->redir
			     ? " (a TPROXY listener needs CAP_NET_ADMIN or CAP_NET_RAW)"
			     : "");
		return fd;
	}
	ss_udp_listener_t *l = &u->listeners[u->n_listeners];
	ss_udp_io_sock(&u->io, fd);
	l->sflags = 0;
	l->relay = u;
	l->index = (uint8_t)u->n_listeners++;
	ev_io_init(&l->io, udp_listener_cb, fd, EV_READ);
	ev_io_start(u->loop, &l->io);
	ss_notice("listening on UDP %s", ss_sockaddr_format(addr, where, sizeof(where)));
	return 0;
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
	if (u->inbox.q)
		ss_info("udp: %" PRIu64 " datagrams handed to the workers holding their sessions, %" PRIu64
			" taken from them",
			u->stats.handed, u->stats.taken);
	/* Datagrams handed over from now on are dropped by their sender. */
	ss_udp_inbox_close(&u->inbox);
	while ((e = ss_udp_table_oldest(&u->table)))
		udp_assoc_destroy(u, (ss_udp_assoc_t *)e);
	for (ss_conn_t *c = u->controls; c; c = c->udp_next)
		c->udp_assoc = NULL;
	u->controls = NULL;
	for (size_t i = 0; i < u->n_listeners; i++) {
		ev_io_stop(u->loop, &u->listeners[i].io);
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
	ss_udp_inbox_free(&u->inbox);
	ss_udp_sessions_free(&u->own_sessions);
	u->sessions = NULL;
}
