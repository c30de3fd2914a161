/* SPDX-License-Identifier: MIT */
/* The UDP relay of a client (ss-local, ss-tunnel, ss-redir): datagrams from
 * applications, sealed and sent to a server from a socket of the
 * association's own, and the server's answers opened and sent back; SOCKS5
 * UDP ASSOCIATE, ss-redir's original destinations, failover between
 * servers. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/transparent.h"
#include "proto/addr.h"
#include "proto/socks5.h"
#include "relay/conn.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"
#include "util/log.h"
#include "util/result.h"

/* ss-redir: the room a datagram's destination takes in front of it, at most
 * (an IPv6 address and port). */
#define UDP_REDIR_ADDR_ROOM 19

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
	a = ss_udp_assoc_find_or_add(u, client, clen, client, clen, listener);
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
		ss_udp_assoc_destroy(u, a);
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

/* Points the association's socket at its server's address (a new one, or
 * another server's): a socket of its own, from a new source port. 0 or
 * -errno, the association keeping its old socket then. */
static int udp_assoc_reconnect(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	int fd = ss_udp_assoc_socket(u, a);

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
			udp_assoc_reconnect(u, a);
	}
}

/* Clients: the association's server sent back an ICMP error (nothing
 * listens there, or it cannot be reached): the server's health hears of
 * it, and the association goes on with another server when there is one,
 * with a session of its own there. */
void ss_udp_assoc_failover(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err)
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
	if (udp_assoc_reconnect(u, a) < 0) {
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

/* Sends one datagram: 0, or the errno value of a failure (logged). */
static int udp_send(ss_udp_relay_t *u, int fd, const uint8_t *p, size_t len,
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
	udp_send(u, fd, p->payload, p->payload_len, (struct sockaddr *)&to, tlen);
}

/* Where a datagram from an application lands in its slot: the target's
 * address goes at SS_UDP_HEAD and the payload right after it. */
size_t ss_udp_client_read_off(ss_udp_relay_t *u)
{
	uint8_t scratch[SS_ADDR_MAX_ENCODED];

	if (u->socks5) /* [RSV RSV FRAG][address][data], the address at SS_UDP_HEAD */
		return SS_UDP_HEAD - 3;
	if (u->redir) /* the address goes in front once the datagram tells it */
		return SS_UDP_HEAD + UDP_REDIR_ADDR_ROOM;
	return SS_UDP_HEAD + ss_addr_encode(&u->inst->cfg->tunnel_addr, scratch, sizeof(scratch));
}

/* A datagram from an application (n bytes at buf + ss_udp_client_read_off):
 * seal it and queue it to the server. */
bool ss_udp_client_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			   const ss_udp_rxmsg_t *r)
{
	struct ss_instance *inst = u->inst;
	ss_udp_listener_t *l = w;
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	uint8_t *at = buf + SS_UDP_HEAD, *data = buf + ss_udp_client_read_off(u), *out;
	size_t addr_len = 0, dlen = n;
	long sealed;

	u->stats.datagrams_in++;
	if (!u->socks5 && !u->redir)
		addr_len = ss_addr_encode(&inst->cfg->tunnel_addr, at, SS_ADDR_MAX_ENCODED);
	if (u->redir) {
		const char *why = udp_redir_target(u, &r->dst, r->dstlen, data, &at, &addr_len);
		if (why) {
			ss_udp_refuse(u, from, from, "datagram dropped", why);
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
	ss_udp_assoc_t *a =
	    u->socks5 ? udp_socks5_assoc(u, from, r->fromlen, l->index, &why)
		      : ss_udp_assoc_find_or_add(u, from, r->fromlen, from, r->fromlen, l->index);
	if (!a) {
		ss_udp_drop(u, from, why);
		return true;
	}
	if (a->control)
		ss_conn_touch(a->control);
	ss_udp_codec_t *x = ss_udp_codec(u, a);
	sealed = x->k->ops->udp_seal(x->k, x->rst, ss_udp_ast(u, a), buf, SS_UDP_BUF_SIZE, at,
				     addr_len, dlen, ss_udp_now(u), &out);
	if (sealed < 0) {
		ss_udp_drop(u, from, "sealing failed");
		return true;
	}
	ss_udp_queue(u, a->io.fd, &a->sflags, out, (size_t)sealed, NULL, 0, a);
	return true;
}

/* A datagram from the server (n bytes at buf + ss_udp_wire): open it and
 * queue it to the application. */
bool ss_udp_client_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			    const ss_udp_rxmsg_t *r)
{
	ss_udp_assoc_t *a = w;
	const struct sockaddr *client = (struct sockaddr *)&a->peer;
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
		ss_udp_refuse(u, s->addr_len ? (const struct sockaddr *)&s->addr : NULL, client,
			      what, why);
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
		ss_udp_queue(u, l->io.fd, &l->sflags, h, (size_t)(p.payload - h) + p.payload_len,
			     client, a->peer_len, NULL);
	} else {
		ss_udp_queue(u, l->io.fd, &l->sflags, p.payload, p.payload_len, client, a->peer_len,
			     NULL);
	}
	return true;
}
