/* SPDX-License-Identifier: MIT */
/* ss-redir's UDP front: datagrams come by a TPROXY rule, each going where
 * the rule found it going (its original destination), and answers go back
 * to the client from that address (relay/udp_from.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/transparent.h"
#include "proto/addr.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"

/* The room a datagram's destination takes in front of it, at most (an
 * IPv6 address and port). */
#define REDIR_ADDR_ROOM 19

/* The descriptors are shared with the sockets answers go back from: half
 * each. */
static int redir_init(ss_udp_relay_t *u, size_t *max, char *err, size_t errlen)
{
	size_t all = *max;

	*max = all / 2 ? all / 2 : 1;
	if (ss_udp_from_init(&u->from, u->loop, all - *max, u->timeout) < 0) {
		snprintf(err, errlen, "cannot reserve %zu UDP answer sockets", all - *max);
		return -ENOMEM;
	}
	return 0;
}

static void redir_release(ss_udp_relay_t *u)
{
	ss_udp_from_free(&u->from);
}

/* Datagrams come by TPROXY, for addresses not the host's. */
static int redir_listen(ss_udp_relay_t *u, const struct sockaddr *addr, socklen_t len,
			const char **hint)
{
	int fd = ss_sock_udp_bind(addr, len, &u->inst->sockopts);

	if (fd >= 0) {
		int rc = ss_transparent_set(fd, addr->sa_family);
		if (rc == 0)
			rc = ss_transparent_recv_dst(fd, addr->sa_family);
		if (rc < 0) {
			close(fd);
			fd = rc;
		}
	}
	if (fd == -EPERM)
		*hint = " (a TPROXY listener needs CAP_NET_ADMIN or CAP_NET_RAW)";
	return fd;
}

/* The address goes in front once the datagram tells it. */
static size_t redir_read_off(const ss_udp_relay_t *u)
{
	(void)u;
	return SS_UDP_HEAD + REDIR_ADDR_ROOM;
}

/* The original destination of the datagram, right before it. */
static ss_udp_assoc_t *redir_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				  size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d)
{
	const struct sockaddr *from = (const struct sockaddr *)&r->from;
	uint8_t hdr[REDIR_ADDR_ROOM];
	const char *why = NULL;
	ss_addr_t target;

	if (r->dstlen == 0)
		why = "no original destination (not sent here by a TPROXY rule)";
	else if (ss_transparent_is_self(&r->dst, r->dstlen, u->inst->cfg->local_port))
		why = "sent to the proxy's own address and port, not by a TPROXY rule";
	else if (ss_addr_from_sockaddr(&target, (const struct sockaddr *)&r->dst) < 0)
		why = "original destination of an unknown family";
	if (why) {
		ss_udp_refuse(u, from, from, "datagram dropped", why);
		return NULL;
	}
	d->addr_len = ss_addr_encode(&target, hdr, sizeof(hdr));
	d->addr = buf + redir_read_off(u) - d->addr_len;
	memcpy(d->addr, hdr, d->addr_len);
	d->len = n;
	return ss_udp_client_assoc(u, l, r, d);
}

/* Sends one datagram now (logged when it fails). */
static void redir_send(ss_udp_relay_t *u, int fd, const uint8_t *p, size_t len,
		       const struct sockaddr *to, socklen_t tolen)
{
	ssize_t n;

	do
		n = sendto(fd, p, len, MSG_NOSIGNAL, to, to ? tolen : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		char why[96];
		snprintf(why, sizeof(why), "sending failed: %s", strerror(errno));
		ss_udp_drop(u, to, why);
	}
}

/* An answer goes back to the client from the address it came from, the
 * one the client sent to. */
static void redir_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p)
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
	ss_sockaddr_unmap(&src, &slen);
	ss_sockaddr_unmap(&to, &tlen);
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
	redir_send(u, fd, p->payload, p->payload_len, (struct sockaddr *)&to, tlen);
}

const ss_udp_front_t ss_udp_redir_front = {
    .want_dst = true,
    .init = redir_init,
    .release = redir_release,
    .listen = redir_listen,
    .read_off = redir_read_off,
    .take = redir_take,
    .answer = redir_answer,
};
