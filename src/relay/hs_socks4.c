/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <sys/socket.h>

#include "proto/socks4.h"
#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/result.h"

/* ss-local's SOCKS4 and SOCKS4a front end: one request, then the shared
 * connect (hs_local.c). Its state is the shared part alone. */

_Static_assert(SS_SOCKS4_CMD_CONNECT == SS_LOCAL_CMD_CONNECT, "CONNECT is the shared one");

static bool socks4_sniff(uint8_t b)
{
	return b == SS_SOCKS4_VERSION;
}

static void socks4_reply(ss_conn_t *c, ss_socks4_rep_t rep)
{
	uint8_t out[SS_SOCKS4_REPLY_LEN];

	ss_hs_local_send(c, out, ss_socks4_encode_reply(rep, out));
}

/* A SOCKS4 client hears 91 whatever went wrong. */
static void socks4_fail(ss_conn_t *c, ss_local_fail_t f, const char *why)
{
	(void)f;
	socks4_reply(c, SS_SOCKS4_REP_REJECTED);
	ss_hs_local_end(c, why);
}

static void socks4_inbound(ss_conn_t *c, uint8_t *hs)
{
	ss_local_hs_t *l = ss_local_hs(c);
	size_t used;
	uint8_t cmd = 0;
	int r = ss_socks4_parse_request(hs, l->fill, &used, &cmd, &c->target);

	if (r == SS_AGAIN) {
		if (l->fill == SS_HS_READ_CAP)
			ss_conn_close(c, "SOCKS4 request too long");
		return;
	}
	if (r == SS_ERR) {
		socks4_fail(c, SS_LOCAL_FAILED,
			    "malformed SOCKS4 request (a user id or host name over 255 bytes, or "
			    "an empty host name)");
		return;
	}
	/* SOCKS4 has no password: with users configured it would go around
	 * them. A refusal worth seeing at the default level, as a failed login. */
	if (c->inst->cfg->n_socks_creds > 0) {
		socks4_reply(c, SS_SOCKS4_REP_REJECTED);
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, "SOCKS4 has no login, and this port requires one");
		return;
	}
	ss_hs_local_connect(c, cmd, used);
}

static void socks4_connected(ss_conn_t *c)
{
	socks4_reply(c, SS_SOCKS4_REP_GRANTED);
	ss_hs_local_stream(c);
}

const ss_local_front_t ss_local_socks4 = {
    .name = "socks4",
    .sniff = socks4_sniff,
    .inbound = socks4_inbound,
    .fail = socks4_fail,
    .connected = socks4_connected,
};
