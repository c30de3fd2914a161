/* SPDX-License-Identifier: MIT */
/* ss-local's UDP front: SOCKS5 UDP ASSOCIATE. A datagram carries the
 * SOCKS5 UDP header ([RSV RSV FRAG][address][data]) both ways, and comes
 * only from a client whose SOCKS5 connection asked for UDP ASSOCIATE; its
 * association is tied to that connection and ends with it. */
#include <errno.h>
#include <netinet/in.h>

#include "proto/addr.h"
#include "proto/socks5.h"
#include "relay/conn.h"
#include "relay/udp_internal.h"
#include "util/result.h"

/* The link in u->controls of the SOCKS5 connection whose UDP ASSOCIATE a
 * datagram from client belongs to: its client's address, and the port the
 * request named (any port when it named 0). NULL if none. */
static ss_conn_t **socks5_control_for(ss_udp_relay_t *u, const struct sockaddr *client)
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

/* A new association for a datagram from client, which only a client
 * holding a UDP ASSOCIATE may have, tied to its SOCKS5 connection. NULL,
 * with why, when there is none. */
static ss_udp_assoc_t *socks5_assoc_add(ss_udp_relay_t *u, const struct sockaddr *client,
					socklen_t clen, uint8_t listener, const char **why)
{
	ss_conn_t **pp = socks5_control_for(u, client);
	ss_udp_assoc_t *a;

	*why = "no UDP ASSOCIATE from this address";
	if (!pp)
		return NULL;
	*why = "no association";
	a = ss_udp_assoc_find_or_add(u, client, clen, client, clen, listener);
	if (!a)
		return NULL;
	/* Making it may have evicted another association, whose connection
	 * then went back to the list: find the link again. */
	pp = socks5_control_for(u, client);
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

/* The association ended while its SOCKS5 connection still stands (it
 * expired or was evicted): the connection waits again, so the client's
 * next datagram starts an association that ends with it. */
static void socks5_assoc_ended(ss_udp_relay_t *u, ss_udp_assoc_t *a)
{
	ss_conn_t *c = a->control;

	if (!c)
		return;
	a->control = NULL;
	ss_udp_control_add(u, c);
}

/* The relay ends: the connections waiting for a datagram hold nothing. */
static void socks5_release(ss_udp_relay_t *u)
{
	for (ss_conn_t *c = u->controls; c; c = c->udp_next)
		c->udp_assoc = NULL;
	u->controls = NULL;
}

/* The header's address at SS_UDP_HEAD, where the codec wants it. */
static size_t socks5_read_off(const ss_udp_relay_t *u)
{
	(void)u;
	return SS_UDP_HEAD - 3;
}

/* [RSV RSV FRAG][address][data]: the address is already where the codec
 * wants it. The association is the client's own, or a new one; the SOCKS5
 * connection it belongs to sees the datagram as activity. */
static ss_udp_assoc_t *socks5_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				   size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d)
{
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	uint8_t *h = buf + socks5_read_off(u);
	const char *why = "no association";
	ss_udp_assoc_t *a;
	ss_addr_t target;
	size_t used;

	if (n < 3 || ss_socks5_parse_udp(h, n, &target, &used) != SS_OK) {
		ss_udp_drop(u, from, "malformed SOCKS5 UDP header");
		return NULL;
	}
	if (h[2] != 0) {
		ss_udp_drop(u, from, "fragmented SOCKS5 datagram");
		return NULL;
	}
	d->addr = h + 3;
	d->addr_len = used - 3;
	d->len = n - used;
	/* --mtu counts the payload, not the SOCKS5 header. */
	if (!ss_udp_client_fits(u, from, d->len))
		return NULL;
	a = (ss_udp_assoc_t *)ss_udp_table_find(&u->table, from, r->fromlen);
	if (a) {
		ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
	} else if (!(a = socks5_assoc_add(u, from, r->fromlen, l->index, &why))) {
		ss_udp_drop(u, from, why);
		return NULL;
	}
	if (a->control)
		ss_conn_touch(a->control);
	return a;
}

/* The answer with a SOCKS5 UDP header: the codec left its source's
 * address right before the payload, and room before that. */
static void socks5_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p)
{
	uint8_t *h = p->addr_raw - 3;

	if (a->control)
		ss_conn_touch(a->control);
	h[0] = h[1] = h[2] = 0;
	ss_udp_client_answer(u, a, h, (size_t)(p->payload - h) + p->payload_len);
}

const ss_udp_front_t ss_udp_socks5_front = {
    .release = socks5_release,
    .read_off = socks5_read_off,
    .take = socks5_take,
    .assoc_ended = socks5_assoc_ended,
    .answer = socks5_answer,
};
