/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/log.h"

/* ss-local's port: the handshake bytes are read here, into the tail of the
 * inbound buffer (clear of where the first chunk is built), and handed to
 * the front end their first byte chose. The reply is sent once the server
 * is reached, so a client learns when it is not; the client's first
 * payload then rides with the address header. */

/* The front ends, by ss_local_hs_t.front. A first byte that none claims
 * goes to the first, SOCKS5, which refuses it. */
static const ss_local_front_t *const local_fronts[] = {
    NULL,
    &ss_local_socks5,
    &ss_local_socks4,
    &ss_local_http,
};
#define LOCAL_FRONTS (sizeof(local_fronts) / sizeof(local_fronts[0]))

_Static_assert(sizeof(ss_local_hs_t) <= SS_HS_STATE_LEN, "the handshake area holds its state");

static const ss_local_front_t *local_front(ss_conn_t *c)
{
	return local_fronts[ss_local_hs(c)->front];
}

void ss_hs_local_send(ss_conn_t *c, const uint8_t *p, size_t n)
{
	/* A handful of bytes on a fresh socket; if even that does not fit the
	 * peer is gone, and the next read or write says so. */
	(void)send(c->side[SS_IN].fd, p, n, MSG_NOSIGNAL);
}

/* Ends the connection after a refusal: the FIN follows the reply, and the
 * client's unread bytes are read away until it closes, so that our close
 * cannot turn into a reset that destroys the reply before it is read. */
void ss_hs_local_end(ss_conn_t *c, const char *why)
{
	shutdown(c->side[SS_IN].fd, SHUT_WR);
	ss_conn_drain(c, why);
}

void ss_hs_local_consume(ss_conn_t *c, size_t used)
{
	ss_local_hs_t *l = ss_local_hs(c);
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	memmove(hs, hs + used, l->fill - used);
	l->fill -= used;
}

void ss_hs_local_connect(ss_conn_t *c, uint8_t cmd, size_t used)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN], why[64];

	if (cmd != SS_LOCAL_CMD_CONNECT) {
		snprintf(why, sizeof(why), "unsupported %s command %u", c->action, cmd);
		local_front(c)->fail(c, SS_LOCAL_UNSUPPORTED, why);
		return;
	}
	if (c->inst->cfg->mode == SS_MODE_UDP_ONLY) {
		local_front(c)->fail(c, SS_LOCAL_NOT_ALLOWED, "TCP relay is off (-U)");
		return;
	}

	ss_info("%s %s: connect %s", c->action, ss_conn_peer(c, peer, sizeof(peer)),
		ss_addr_format(&c->target, target, sizeof(target)));
	ss_local_hs(c)->early = (uint16_t)used;
	ss_conn_connect_route(c);
}

void ss_hs_local_stream(ss_conn_t *c)
{
	ss_local_hs_t *l = ss_local_hs(c);
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	ss_conn_client_stream(c, hs + l->early, l->fill - l->early);
}

static void local_accepted(ss_conn_t *c)
{
	/* The first bytes choose the front end (ss_local_hs_t.front, 0). */
	c->action = ss_local_socks5.name;
}

/* The first byte's front end: the first that claims it, else SOCKS5. */
static void local_choose(ss_conn_t *c, uint8_t b)
{
	ss_local_hs_t *l = ss_local_hs(c);

	l->front = 1;
	for (uint8_t i = 1; i < LOCAL_FRONTS; i++) {
		if (local_fronts[i]->sniff(b)) {
			l->front = i;
			break;
		}
	}
	c->action = local_fronts[l->front]->name;
}

static void local_inbound(ss_conn_t *c)
{
	ss_local_hs_t *l = ss_local_hs(c);
	uint8_t *hs = ss_conn_buf(c, SS_IN) + SS_HS_OFF;
	ssize_t n;

	do
		n = read(c->side[SS_IN].fd, hs + l->fill, SS_HS_READ_CAP - l->fill);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			ss_conn_close(c, "reading the SOCKS5 handshake failed");
		else if (!l->fill)
			ss_conn_buf_release(c, SS_IN);
		return;
	}
	if (n == 0) {
		ss_conn_close(c, l->fill ? "client closed during the SOCKS5 handshake" : NULL);
		return;
	}
	l->fill += n;
	ss_conn_touch(c);
	if (!l->front)
		local_choose(c, hs[0]);
	local_front(c)->inbound(c, hs);
}

/* The errno of a failed connect, in the front ends' terms. */
static ss_local_fail_t local_fail_for(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return SS_LOCAL_REFUSED;
	case ENETUNREACH:
		return SS_LOCAL_NET_UNREACHABLE;
	case EHOSTUNREACH:
	case EHOSTDOWN:
		return SS_LOCAL_HOST_UNREACHABLE;
	case ETIMEDOUT:
		return SS_LOCAL_TIMED_OUT;
	default:
		return SS_LOCAL_FAILED;
	}
}

static void local_connected(ss_conn_t *c, int err)
{
	char why[128];

	if (err) {
		snprintf(why, sizeof(why), "cannot connect to %s: %s",
			 c->bypass ? "the target" : "the server", strerror(err));
		local_front(c)->fail(c, local_fail_for(err), why);
		return;
	}
	local_front(c)->connected(c);
}

const ss_handshake_ops_t ss_hs_local = {
    .name = "socks5",
    .client = true,
    .client_first = true,
    .accepted = local_accepted,
    .inbound = local_inbound,
    .connected = local_connected,
};
