/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* ss-server: decode the client's stream, through the pump's decode path,
 * until the request's target is known, then connect to it. The target comes
 * from the codec's header when it carries one; otherwise it is the first
 * bytes of the plaintext, gathered at the front of the inbound buffer
 * (dir->keep bytes) until whole. */

static void server_accepted(ss_conn_t *c)
{
	c->action = "server";
	ss_codec_peer(c->k, c->dir[SS_IN].codec, &c->peer.sa);
}

/* Reads what the client sent into the inbound buffer. true when there are
 * new bytes; false when the connection waits or has been closed. */
static bool server_read(ss_conn_t *c)
{
	const ss_dir_t *dir = &c->dir[SS_IN];
	ssize_t n = ss_pump_read(c, SS_IN);

	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			ss_conn_close(c, "reading from the client failed");
		else if (!dir->rend)
			ss_conn_buf_release(c, SS_IN);
		return false;
	}
	if (n == 0) {
		ss_conn_close(c, dir->rend ? "client closed before a whole request" : NULL);
		return false;
	}
	return true;
}

static void server_log_connect(ss_conn_t *c, const char *user)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN];

	if (!ss_log_enabled(SS_LOG_INFO))
		return;
	ss_conn_peer(c, peer, sizeof(peer));
	ss_addr_format(&c->target, target, sizeof(target));
	if (user)
		ss_info("server %s: user %s: connect %s", peer, user, target);
	else
		ss_info("server %s: connect %s", peer, target);
}

/* The target at the start of the plaintext, once whole: taken off the
 * front of what was gathered, the rest left to be written. SS_OK, SS_AGAIN
 * or SS_ERR. */
static int server_target_in_stream(ss_conn_t *c)
{
	ss_dir_t *dir = &c->dir[SS_IN];
	size_t used;
	int r = dir->keep ? ss_addr_parse(dir->buf, dir->keep, &c->target, &used) : SS_AGAIN;

	if (r != SS_OK)
		return r;
	ss_pump_consume(c, SS_IN, used);
	return SS_OK;
}

static void server_inbound(ss_conn_t *c)
{
	ss_codec_t *k = c->k;
	ss_dir_t *dir = &c->dir[SS_IN];
	ss_codec_hdr_t hdr;
	const char *user = NULL; /* whichever call named it */
	bool failed = false;
	int r;

	if (!server_read(c))
		return;
	/* Decodes what is there. A target in the codec's header ends it (the
	 * plaintext that came with it stays pending output); otherwise the
	 * plaintext is gathered at the front until the target is whole. What
	 * authenticated before a failure counts, as it would have with the
	 * bytes split otherwise: the pump meets the failure next. */
	for (;;) {
		uint8_t before = dir->iov_n;

		if (ss_pump_decode(c, SS_IN, &hdr) != SS_OK) {
			failed = true;
			break;
		}
		if (hdr.user)
			user = hdr.user;
		if (hdr.done && hdr.has_target) {
			c->target = hdr.target;
			goto connect;
		}
		if (dir->iov_n == before)
			break;
		ss_pump_gather(c, SS_IN);
	}
	ss_pump_gather(c, SS_IN);
	r = server_target_in_stream(c);
	if (r == SS_ERR) {
		ss_conn_refuse(c, "invalid address header");
		return;
	}
	if (r == SS_AGAIN) {
		if (failed)
			ss_conn_refuse(c, k->ops->why(k, dir->codec));
		return;
	}
connect:
	if (ss_codec_bind(k, dir->codec, c->dir[SS_OUT].codec) < 0) {
		ss_conn_close(c, "cannot set up the answer's cipher state");
		return;
	}
	server_log_connect(c, user);
	/* Counted as its user's from here, its target's connect included. */
	ss_conn_fig_open(c, ss_fig_user_index(&c->inst->shared->fig_layout, user));
	ss_conn_connect_addr(c, &c->target);
}

static void server_connected(ss_conn_t *c, int err)
{
	if (err) {
		char target[SS_ADDR_STRLEN], why[SS_ADDR_STRLEN + 64];
		snprintf(why, sizeof(why), "cannot connect to %s: %s",
			 ss_addr_format(&c->target, target, sizeof(target)), strerror(err));
		ss_conn_close(c, why);
		return;
	}
	ss_conn_stream(c);
}

const ss_handshake_ops_t ss_hs_server = {
    .name = "server",
    .client = false,
    .client_first = true,
    .accepted = server_accepted,
    .inbound = server_inbound,
    .connected = server_connected,
};
