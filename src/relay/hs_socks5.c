/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "codec/secret.h"
#include "proto/socks5.h"
#include "proto/socks5_auth.h"
#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/result.h"

/* ss-local's SOCKS5 front end (RFC 1928): the greeting, the login when
 * users are configured (RFC 1929), then a request: CONNECT goes through
 * the shared connect (hs_local.c), UDP ASSOCIATE holds an association. */

_Static_assert(SS_SOCKS5_CMD_CONNECT == SS_LOCAL_CMD_CONNECT, "CONNECT is the shared one");

/* Sub-states. LOGIN only when users are configured; a request is read only
 * after a successful login then. */
enum {
	SOCKS5_GREETING,
	SOCKS5_LOGIN,
	SOCKS5_REQUEST,
};

typedef struct socks5_hs {
	ss_local_hs_t local;
	uint8_t stage;
} socks5_hs_t;

_Static_assert(sizeof(socks5_hs_t) <= SS_HS_STATE_LEN, "the handshake area holds its state");

static socks5_hs_t *socks5_hs(ss_conn_t *c)
{
	return (socks5_hs_t *)(void *)c->hs;
}

static bool socks5_sniff(uint8_t b)
{
	return b == SS_SOCKS5_VERSION;
}

static void socks5_reply_end(ss_conn_t *c, ss_socks5_rep_t rep, const char *why)
{
	uint8_t out[32];

	ss_hs_local_send(c, out, ss_socks5_encode_reply(rep, NULL, out, sizeof(out)));
	ss_hs_local_end(c, why);
}

/* The reply that says f. */
static ss_socks5_rep_t socks5_rep_for(ss_local_fail_t f)
{
	static const ss_socks5_rep_t rep[] = {
	    [SS_LOCAL_FAILED] = SS_SOCKS5_REP_GENERAL_FAILURE,
	    [SS_LOCAL_NOT_ALLOWED] = SS_SOCKS5_REP_NOT_ALLOWED,
	    [SS_LOCAL_UNSUPPORTED] = SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED,
	    [SS_LOCAL_REFUSED] = SS_SOCKS5_REP_CONNECTION_REFUSED,
	    [SS_LOCAL_NET_UNREACHABLE] = SS_SOCKS5_REP_NETWORK_UNREACHABLE,
	    [SS_LOCAL_HOST_UNREACHABLE] = SS_SOCKS5_REP_HOST_UNREACHABLE,
	    [SS_LOCAL_TIMED_OUT] = SS_SOCKS5_REP_TTL_EXPIRED,
	};

	return rep[f];
}

static void socks5_fail(ss_conn_t *c, ss_local_fail_t f, const char *why)
{
	socks5_reply_end(c, socks5_rep_for(f), why);
}

/* The greeting: the method chosen, or the connection ended. Returns true
 * when the handshake goes on with the bytes left. */
static bool socks5_greeting(ss_conn_t *c, uint8_t *hs)
{
	socks5_hs_t *s = socks5_hs(c);
	bool noauth = false;
	size_t used;
	int r = ss_socks5_parse_greeting(hs, s->local.fill, &used, &noauth);

	if (r == SS_AGAIN)
		return false;
	if (r == SS_ERR) {
		ss_conn_close(c, "not a SOCKS5 greeting");
		return false;
	}
	/* With users configured, only username/password will do. */
	bool login = c->inst->cfg->n_socks_creds > 0;
	bool ok = login ? ss_socks5_greeting_offers(hs, used, SS_SOCKS5_AUTH_USERPASS) : noauth;
	uint8_t out[2], method = login ? SS_SOCKS5_AUTH_USERPASS : SS_SOCKS5_AUTH_NONE;
	ss_socks5_encode_method(ok ? method : SS_SOCKS5_AUTH_NO_ACCEPTABLE, out);
	ss_hs_local_send(c, out, sizeof(out));
	if (!ok && login) {
		/* A client that will not log in where one must is a refusal
		 * worth seeing at the default level. */
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, "SOCKS5 client offers no username/password login");
		return false;
	}
	if (!ok) {
		ss_hs_local_end(c, "SOCKS5 client offers no acceptable method");
		return false;
	}
	ss_hs_local_consume(c, used);
	s->stage = login ? SOCKS5_LOGIN : SOCKS5_REQUEST;
	return true;
}

/* The login sub-negotiation. Returns true when the request may be read
 * next (the connection is ended otherwise, or waits for more bytes). */
static bool socks5_login(ss_conn_t *c, uint8_t *hs)
{
	const ss_config_t *cfg = c->inst->cfg;
	socks5_hs_t *s = socks5_hs(c);
	ss_socks5_login_t login;
	size_t used;
	uint8_t out[2];

	int r = ss_socks5_parse_login(hs, s->local.fill, &used, &login);
	if (r == SS_AGAIN)
		return false;
	bool ok = r == SS_OK && ss_socks5_login_check(cfg->socks_creds, cfg->n_socks_creds, &login);
	ss_hs_local_send(c, out, ss_socks5_encode_login_reply(ok, out));
	if (!ok) {
		ss_secret_wipe(hs, s->local.fill);
		/* The name is not logged: a client may have sent its password
		 * there, or something else it did not mean to be kept. */
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, r == SS_OK ? "SOCKS5 login failed"
					     : "malformed SOCKS5 login (RFC 1929)");
		return false;
	}
	ss_secret_wipe(hs, used);
	ss_hs_local_consume(c, used);
	s->stage = SOCKS5_REQUEST;
	return true;
}

/* UDP ASSOCIATE: the relay's UDP address toward the client, then the
 * connection holds the association until it closes. */
static void socks5_udp(ss_conn_t *c)
{
	struct sockaddr_storage bnd;
	uint8_t out[32];

	if (ss_udp_bound_addr(&c->inst->udp, c, &bnd) < 0) {
		socks5_reply_end(c, SS_SOCKS5_REP_GENERAL_FAILURE, "no UDP relay address");
		return;
	}
	ss_hs_local_send(c, out,
			 ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&bnd,
						out, sizeof(out)));
	ss_conn_udp_control(c);
}

static void socks5_request(ss_conn_t *c, const uint8_t *hs)
{
	ss_local_hs_t *l = &socks5_hs(c)->local;
	ss_socks5_rep_t rep = SS_SOCKS5_REP_GENERAL_FAILURE;
	uint8_t cmd = 0;
	size_t used;
	int r = ss_socks5_parse_request(hs, l->fill, &used, &cmd, &c->target, &rep);

	if (r == SS_AGAIN) {
		if (l->fill == SS_HS_READ_CAP)
			ss_conn_close(c, "SOCKS5 request too long");
		return;
	}
	if (r == SS_ERR) {
		socks5_reply_end(c, rep, "malformed SOCKS5 request");
		return;
	}
	if (cmd == SS_SOCKS5_CMD_UDP_ASSOCIATE && c->inst->cfg->mode != SS_MODE_TCP_ONLY) {
		socks5_udp(c);
		return;
	}
	ss_hs_local_connect(c, cmd, used);
}

static void socks5_inbound(ss_conn_t *c, uint8_t *hs)
{
	socks5_hs_t *s = socks5_hs(c);

	/* Each step that ends with nothing left waits for a round trip: a
	 * client that waits holds no buffer meanwhile. */
	if (s->stage == SOCKS5_GREETING) {
		if (!socks5_greeting(c, hs))
			return;
		if (!s->local.fill) {
			ss_conn_buf_release(c, SS_IN);
			return;
		}
	}
	if (s->stage == SOCKS5_LOGIN) {
		if (!socks5_login(c, hs))
			return;
		if (!s->local.fill) {
			ss_conn_buf_release(c, SS_IN);
			return;
		}
	}
	socks5_request(c, hs);
}

static void socks5_connected(ss_conn_t *c)
{
	uint8_t out[32];

	ss_hs_local_send(c, out,
			 ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, NULL, out, sizeof(out)));
	ss_hs_local_stream(c);
}

const ss_local_front_t ss_local_socks5 = {
    .name = "socks5",
    .sniff = socks5_sniff,
    .inbound = socks5_inbound,
    .fail = socks5_fail,
    .connected = socks5_connected,
};
