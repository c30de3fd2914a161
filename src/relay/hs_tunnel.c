#include <stdio.h>
#include <string.h>

#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"

/* ss-tunnel: every inbound connection goes to the fixed -L target. */

static void tunnel_accepted(ss_conn_t *c)
{
	c->target = c->inst->cfg->tunnel_addr;
	c->action = "tunnel";
	ss_conn_connect_route(c);
}

static void tunnel_inbound(ss_conn_t *c)
{
	(void)c; /* no handshake: reading starts with the stream */
}

static void tunnel_connected(ss_conn_t *c, int err)
{
	char msg[128];

	if (err) {
		snprintf(msg, sizeof(msg), "cannot connect to %s: %s",
			 c->bypass ? "the target" : "the server", strerror(err));
		ss_conn_close(c, msg);
		return;
	}
	ss_conn_client_stream(c, NULL, 0);
}

const ss_handshake_ops_t ss_hs_tunnel = {
    .name = "tunnel",
    .client = true,
    .accepted = tunnel_accepted,
    .inbound = tunnel_inbound,
    .connected = tunnel_connected,
};
