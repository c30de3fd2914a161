/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto/primitives.h"
#include "proto/socks4.h"
#include "proto/socks5.h"
#include "proto/socks5_auth.h"
#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* ss-local: the SOCKS5 handshake, and SOCKS4/4a and HTTP (hs_http.c) on
 * the same port, told apart by the first byte; all share the connect. The
 * reply is sent once the server is reached, so a client learns when it is
 * not; the client's first payload then rides with the address header.
 * Handshake bytes are read into the tail of the inbound buffer, clear of
 * where the first chunk is built. */

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

/* The HTTP status that says what rep does. */
static int socks5_http_status(ss_socks5_rep_t rep)
{
	switch (rep) {
	case SS_SOCKS5_REP_NOT_ALLOWED:
		return 403;
	case SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED:
		return 501;
	case SS_SOCKS5_REP_TTL_EXPIRED:
		return 504;
	default:
		return 502;
	}
}

/* A SOCKS4 client hears 91 whatever the SOCKS5 reply would have said, an
 * HTTP client the status nearest to it. */
static void socks5_fail(ss_conn_t *c, ss_socks5_rep_t rep, const char *why)
{
	uint8_t out[32];

	if (ss_local_hs(c)->stage == SS_STAGE_HTTP ||
	    ss_local_hs(c)->stage == SS_STAGE_HTTP_PLAIN) {
		ss_hs_http_fail(c, socks5_http_status(rep), why);
		return;
	}
	size_t n = ss_local_hs(c)->stage == SS_STAGE_SOCKS4
		       ? ss_socks4_encode_reply(SS_SOCKS4_REP_REJECTED, out)
		       : ss_socks5_encode_reply(rep, NULL, out, sizeof(out));

	ss_hs_local_send(c, out, n);
	ss_hs_local_end(c, why);
}

static void socks5_accepted(ss_conn_t *c)
{
	ss_local_hs(c)->stage = SS_STAGE_GREETING;
	c->action = "socks5";
}

static void socks5_consume(ss_conn_t *c, size_t used)
{
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	memmove(hs, hs + used, ss_local_hs(c)->fill - used);
	ss_local_hs(c)->fill -= used;
}

/* The login sub-negotiation. Returns true when the request may be read
 * next (the connection is ended otherwise, or waits for more bytes). */
static bool socks5_login(ss_conn_t *c, uint8_t *hs)
{
	const ss_config_t *cfg = c->inst->cfg;
	ss_socks5_login_t login;
	size_t used;
	uint8_t out[2];

	int r = ss_socks5_parse_login(hs, ss_local_hs(c)->fill, &used, &login);
	if (r == SS_AGAIN)
		return false;
	bool ok = r == SS_OK && ss_socks5_login_check(cfg->socks_creds, cfg->n_socks_creds, &login);
	ss_hs_local_send(c, out, ss_socks5_encode_login_reply(ok, out));
	if (!ok) {
		ss_wipe(hs, ss_local_hs(c)->fill);
		/* The name is not logged: a client may have sent its password
		 * there, or something else it did not mean to be kept. */
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, r == SS_OK ? "SOCKS5 login failed"
					     : "malformed SOCKS5 login (RFC 1929)");
		return false;
	}
	ss_wipe(hs, used);
	socks5_consume(c, used);
	ss_local_hs(c)->stage = SS_STAGE_REQUEST;
	return true;
}

/* What follows the request is early payload, which stays in the handshake
 * area until the stream starts. */
void ss_hs_local_connect(ss_conn_t *c, uint8_t cmd, size_t used)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN], why[64];

	if (cmd != SS_SOCKS5_CMD_CONNECT) {
		snprintf(why, sizeof(why), "unsupported %s command %u", c->action, cmd);
		socks5_fail(c, SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED, why);
		return;
	}
	if (c->inst->cfg->mode == SS_MODE_UDP_ONLY) {
		socks5_fail(c, SS_SOCKS5_REP_NOT_ALLOWED, "TCP relay is off (-U)");
		return;
	}

	ss_info("%s %s: connect %s", c->action, ss_conn_peer(c, peer, sizeof(peer)),
		ss_addr_format(&c->target, target, sizeof(target)));
	ss_local_hs(c)->early = (uint16_t)used;
	ss_conn_connect_route(c);
}

static void socks4_request(ss_conn_t *c, const uint8_t *hs)
{
	size_t used;
	uint8_t cmd = 0;
	int r = ss_socks4_parse_request(hs, ss_local_hs(c)->fill, &used, &cmd, &c->target);

	if (r == SS_AGAIN) {
		if (ss_local_hs(c)->fill == SS_HS_READ_CAP)
			ss_conn_close(c, "SOCKS4 request too long");
		return;
	}
	if (r == SS_ERR) {
		socks5_fail(c, SS_SOCKS5_REP_GENERAL_FAILURE,
			    "malformed SOCKS4 request (a user id or host name over 255 bytes, or "
			    "an empty host name)");
		return;
	}
	/* SOCKS4 has no password: with users configured it would go around
	 * them. A refusal worth seeing at the default level, as a failed login. */
	if (c->inst->cfg->n_socks_creds > 0) {
		uint8_t out[8];
		ss_hs_local_send(c, out, ss_socks4_encode_reply(SS_SOCKS4_REP_REJECTED, out));
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, "SOCKS4 has no login, and this port requires one");
		return;
	}
	ss_hs_local_connect(c, cmd, used);
}

static void socks5_inbound(ss_conn_t *c)
{
	uint8_t *hs = ss_conn_buf(c, SS_IN) + SS_HS_OFF;
	size_t used;
	ssize_t n;

	do
		n = read(c->side[SS_IN].fd, hs + ss_local_hs(c)->fill,
			 SS_HS_READ_CAP - ss_local_hs(c)->fill);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			ss_conn_close(c, "reading the SOCKS5 handshake failed");
		else if (!ss_local_hs(c)->fill)
			ss_conn_buf_release(c, SS_IN);
		return;
	}
	if (n == 0) {
		ss_conn_close(c, ss_local_hs(c)->fill ? "client closed during the SOCKS5 handshake"
						      : NULL);
		return;
	}
	ss_local_hs(c)->fill += n;
	ss_conn_touch(c);

	if (ss_local_hs(c)->stage == SS_STAGE_GREETING && hs[0] == SS_SOCKS4_VERSION) {
		ss_local_hs(c)->stage = SS_STAGE_SOCKS4;
		c->action = "socks4";
	}
	/* An HTTP request starts with its method, in letters. */
	if (ss_local_hs(c)->stage == SS_STAGE_GREETING &&
	    ((hs[0] >= 'A' && hs[0] <= 'Z') || (hs[0] >= 'a' && hs[0] <= 'z'))) {
		ss_local_hs(c)->stage = SS_STAGE_HTTP;
		c->action = "http";
	}
	if (ss_local_hs(c)->stage == SS_STAGE_SOCKS4) {
		socks4_request(c, hs);
		return;
	}
	if (ss_local_hs(c)->stage == SS_STAGE_HTTP) {
		ss_hs_http_inbound(c, hs);
		return;
	}

	if (ss_local_hs(c)->stage == SS_STAGE_GREETING) {
		bool noauth = false;
		int r = ss_socks5_parse_greeting(hs, ss_local_hs(c)->fill, &used, &noauth);
		if (r == SS_AGAIN)
			return;
		if (r == SS_ERR) {
			ss_conn_close(c, "not a SOCKS5 greeting");
			return;
		}
		/* With users configured, only username/password will do. */
		bool login = c->inst->cfg->n_socks_creds > 0;
		bool ok =
		    login ? ss_socks5_greeting_offers(hs, used, SS_SOCKS5_AUTH_USERPASS) : noauth;
		uint8_t out[2], method = login ? SS_SOCKS5_AUTH_USERPASS : SS_SOCKS5_AUTH_NONE;
		ss_socks5_encode_method(ok ? method : SS_SOCKS5_AUTH_NO_ACCEPTABLE, out);
		ss_hs_local_send(c, out, sizeof(out));
		if (!ok && login) {
			/* A client that will not log in where one must is a
			 * refusal worth seeing at the default level. */
			shutdown(c->side[SS_IN].fd, SHUT_WR);
			ss_conn_refuse(c, "SOCKS5 client offers no username/password login");
			return;
		}
		if (!ok) {
			ss_hs_local_end(c, "SOCKS5 client offers no acceptable method");
			return;
		}
		socks5_consume(c, used);
		ss_local_hs(c)->stage = login ? SS_STAGE_LOGIN : SS_STAGE_REQUEST;
		if (!ss_local_hs(c)->fill) {
			/* The request is a round trip away: a client that
			 * waits holds no buffer meanwhile. */
			ss_conn_buf_release(c, SS_IN);
			return;
		}
	}
	if (ss_local_hs(c)->stage == SS_STAGE_LOGIN) {
		if (!socks5_login(c, hs))
			return;
		if (!ss_local_hs(c)->fill) {
			ss_conn_buf_release(c, SS_IN);
			return;
		}
	}

	uint8_t cmd = 0;
	ss_socks5_rep_t rep = SS_SOCKS5_REP_GENERAL_FAILURE;
	int r = ss_socks5_parse_request(hs, ss_local_hs(c)->fill, &used, &cmd, &c->target, &rep);
	if (r == SS_AGAIN) {
		if (ss_local_hs(c)->fill == SS_HS_READ_CAP)
			ss_conn_close(c, "SOCKS5 request too long");
		return;
	}
	if (r == SS_ERR) {
		socks5_fail(c, rep, "malformed SOCKS5 request");
		return;
	}
	const ss_config_t *cfg = c->inst->cfg;
	if (cmd == SS_SOCKS5_CMD_UDP_ASSOCIATE && cfg->mode != SS_MODE_TCP_ONLY) {
		struct sockaddr_storage bnd;
		if (ss_udp_bound_addr(&c->inst->udp, c, &bnd) < 0) {
			socks5_fail(c, SS_SOCKS5_REP_GENERAL_FAILURE, "no UDP relay address");
			return;
		}
		uint8_t out[32];
		size_t rn = ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&bnd,
						   out, sizeof(out));
		ss_hs_local_send(c, out, rn);
		ss_conn_udp_control(c);
		return;
	}
	ss_hs_local_connect(c, cmd, used);
}

static ss_socks5_rep_t socks5_rep_for(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return SS_SOCKS5_REP_CONNECTION_REFUSED;
	case ENETUNREACH:
		return SS_SOCKS5_REP_NETWORK_UNREACHABLE;
	case EHOSTUNREACH:
	case EHOSTDOWN:
		return SS_SOCKS5_REP_HOST_UNREACHABLE;
	case ETIMEDOUT:
		return SS_SOCKS5_REP_TTL_EXPIRED;
	default:
		return SS_SOCKS5_REP_GENERAL_FAILURE;
	}
}

static void socks5_connected(ss_conn_t *c, int err)
{
	uint8_t out[32];
	char why[128];

	if (err) {
		snprintf(why, sizeof(why), "cannot connect to %s: %s",
			 c->bypass ? "the target" : "the server", strerror(err));
		socks5_fail(c, socks5_rep_for(err), why);
		return;
	}
	if (ss_local_hs(c)->stage == SS_STAGE_HTTP ||
	    ss_local_hs(c)->stage == SS_STAGE_HTTP_PLAIN) {
		ss_hs_http_connected(c);
		return;
	}
	size_t n = ss_local_hs(c)->stage == SS_STAGE_SOCKS4
		       ? ss_socks4_encode_reply(SS_SOCKS4_REP_GRANTED, out)
		       : ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, NULL, out, sizeof(out));
	ss_hs_local_send(c, out, n);
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;
	ss_conn_client_stream(c, hs + ss_local_hs(c)->early,
			      ss_local_hs(c)->fill - ss_local_hs(c)->early);
}

const ss_handshake_ops_t ss_hs_socks5 = {
    .name = "socks5",
    .client = true,
    .client_first = true,
    .accepted = socks5_accepted,
    .inbound = socks5_inbound,
    .connected = socks5_connected,
};
