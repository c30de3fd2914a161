/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/transparent.h"
#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"

/* ss-tunnel: every inbound connection goes to the fixed -L target.
 * ss-redir: each goes where the firewall found it heading before its
 * REDIRECT or TPROXY rule brought it here. The DNS relay's door
 * (relay/dns.h): each goes to the remote name server, always through a
 * server. All then relay the stream as it comes, with no handshake of the
 * client's. */

static void tunnel_accepted(ss_conn_t *c)
{
	c->target = c->inst->cfg->tunnel_addr;
	c->action = "tunnel";
	ss_conn_connect_route(c);
}

static void redir_accepted(ss_conn_t *c)
{
	const ss_config_t *cfg = c->inst->cfg;
	struct sockaddr_storage dst;
	socklen_t len;
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN];

	c->action = cfg->tcp_tproxy ? "redir (tproxy)" : "redir";
	int rc =
	    ss_transparent_tcp_dst(c->side[SS_IN].fd, cfg->tcp_tproxy, cfg->local_port, &dst, &len);
	if (rc == 0 && ss_addr_from_sockaddr(&c->target, (struct sockaddr *)&dst) < 0)
		rc = -EAFNOSUPPORT;
	if (rc < 0) {
		/* A client that came straight to the port, or a firewall rule
		 * of the other kind (-T or not): nowhere to relay to. */
		ss_refused_note(&c->inst->refused, &c->peer.sa, "%s %s: closed: %s", c->action,
				ss_conn_peer(c, peer, sizeof(peer)),
				rc != -ENOENT     ? strerror(-rc)
				: cfg->tcp_tproxy ? "not sent here by a TPROXY rule (it came to "
						    "the proxy's own address and port)"
						  : "not sent here by a REDIRECT rule (no original "
						    "destination; -T if the rule is TPROXY)");
		ss_conn_close(c, NULL);
		return;
	}
	ss_info("%s %s: connect %s", c->action, ss_conn_peer(c, peer, sizeof(peer)),
		ss_addr_format(&c->target, target, sizeof(target)));
	ss_conn_connect_route(c);
}

/* The DNS relay's queries through the server: whatever the ACL says of the
 * name server's address, the relay chose this path for the name asked. */
static void dns_accepted(ss_conn_t *c)
{
	c->target = c->inst->cfg->remote_dns;
	c->action = "dns";
	ss_conn_connect_server(c);
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

const ss_handshake_ops_t ss_hs_redir = {
    .name = "redir",
    .client = true,
    .accepted = redir_accepted,
    .inbound = tunnel_inbound,
    .connected = tunnel_connected,
};

const ss_handshake_ops_t ss_hs_dns = {
    .name = "dns",
    .client = true,
    .accepted = dns_accepted,
    .inbound = tunnel_inbound,
    .connected = tunnel_connected,
};
