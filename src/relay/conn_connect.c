/* SPDX-License-Identifier: MIT */
/* The outbound leg of a connection: to an address, a name looked up on the
 * loop, the server a client picks (with failover), or where the ACL routes
 * a target; and its end, for a kept-alive HTTP request to another origin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"
#include "relay/conn_internal.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* --block-private: the target, or the address its name gave, is refused
 * (kind: what it is). Logged per client and rate-limited as the server's
 * other refusals; the connection closes as an ACL-blocked one does. */
static void conn_refuse_private(ss_conn_t *c, const struct sockaddr *sa, const char *kind)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN], addr[SS_ADDR_STRLEN];
	bool named = c->target.atyp == SS_ATYP_DOMAIN;

	ss_instance_count_refused(c->inst, c->side[SS_IN].fd, SS_REFUSED_BLOCKED);
	ss_refused_note(&c->inst->refused, &c->peer.sa,
			"%s %s: target %s%s%s refused: %s address (--block-private)", c->action,
			ss_conn_peer(c, peer, sizeof(peer)),
			ss_addr_format(&c->target, target, sizeof(target)), named ? " at " : "",
			named ? ss_sockaddr_format(sa, addr, sizeof(addr)) : "", kind);
	ss_conn_close(c, NULL);
}

/* Connects the outbound side; deadline 0: the connect timeout from now
 * (or from the name lookup before it). */
static void conn_connect_until(ss_conn_t *c, const struct sockaddr *sa, socklen_t len,
			       ev_tstamp deadline)
{
	struct ss_instance *inst = c->inst;
	const char *kind;
	int fd;

	if (ss_doors_match(&inst->shared->doors, sa)) {
		char peer[SS_ADDR_STRLEN];
		ss_instance_count_refused(inst, c->side[SS_IN].fd, SS_REFUSED_BLOCKED);
		ss_refused_note(&inst->refused, &c->peer.sa,
				"%s %s: refused: the target is this server's manager or metrics "
				"address",
				c->action, ss_conn_peer(c, peer, sizeof(peer)));
		ss_conn_close(c, NULL);
		return;
	}
	if (ss_instance_target_blocked(inst, NULL, sa)) {
		ss_instance_count_refused(inst, c->side[SS_IN].fd, SS_REFUSED_ACL);
		ss_conn_close(c, "target refused: in the ACL's outbound block list");
		return;
	}
	if ((kind = ss_instance_target_private(inst, sa))) {
		conn_refuse_private(c, sa, kind);
		return;
	}
	bool done;
	fd = ss_sock_connect_tcp(sa, len, &inst->outopts, &done);
	if (fd < 0) {
		ss_conn_connected(c, -fd);
		return;
	}
	ss_conn_side_init(c, SS_OUT, fd);
	/* One timeout covers the name lookup and the connect after it. */
	if (deadline)
		c->deadline = deadline;
	else if (c->state != SS_CONN_RESOLVING)
		c->deadline = ev_now(inst->loop) + inst->connect_timeout;
	ss_conn_enter(c, SS_CONN_CONNECTING);
	if (done) {
		ss_conn_connected(c, 0);
		return;
	}
	ss_conn_arm_timer(c);
	ss_conn_want(c, SS_OUT, EV_WRITE, true);
}

void ss_conn_connect_sa(ss_conn_t *c, const struct sockaddr *sa, socklen_t len)
{
	conn_connect_until(c, sa, len, 0);
}

/* Looks the target's name up; the connect deadline starts now. */
static void conn_lookup(ss_conn_t *c, uint16_t port, ss_resolve_cb cb)
{
	struct ss_instance *inst = c->inst;

	ss_conn_enter(c, SS_CONN_RESOLVING);
	c->lookup_busy = true;
	c->deadline = ev_now(inst->loop) + inst->connect_timeout;
	ss_conn_arm_timer(c);
	ss_resolver_lookup(&inst->resolver, &c->lookup, c->target.domain, port, cb, c);
}

static void conn_resolved(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	ss_conn_t *c = arg;
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN];

	c->lookup_busy = false;
	if (c->state != SS_CONN_RESOLVING)
		return; /* closed meanwhile; the reaper frees it */
	if (status < 0) {
		ss_info("%s %s: cannot resolve %s: %s", c->action,
			ss_conn_peer(c, peer, sizeof(peer)),
			ss_addr_format(&c->target, target, sizeof(target)), strerror(-status));
		ss_conn_connected(c, EHOSTUNREACH);
		return;
	}
	ss_conn_connect_sa(c, sa, len);
}

void ss_conn_connect_addr(ss_conn_t *c, const ss_addr_t *a)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (a != &c->target)
		c->target = *a;
	if (a->atyp == SS_ATYP_DOMAIN && ss_instance_target_blocked(c->inst, a->domain, NULL)) {
		ss_instance_count_refused(c->inst, c->side[SS_IN].fd, SS_REFUSED_ACL);
		ss_conn_close(c, "target refused: in the ACL's outbound block list");
		return;
	}
	if (ss_addr_to_sockaddr(a, &ss, &len) == 0) {
		ss_conn_connect_sa(c, (struct sockaddr *)&ss, len);
		return;
	}
	conn_lookup(c, a->port, conn_resolved);
}

void ss_conn_connect_server(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;
	ss_servers_t *set = &inst->servers;
	ev_tstamp now = ev_now(inst->loop), deadline;
	char peer[SS_ADDR_STRLEN];
	bool trial, more;
	int i = ss_servers_pick(set, c->tried, false, &trial);

	if (i < 0) {
		/* None left: unless a lookup under way, or a plugin being
		 * started, may still give one, the handshake hears of the last
		 * failure. */
		if (ss_servers_may_change(set, c->tried)) {
			if (c->state != SS_CONN_RESOLVING)
				c->deadline = now + inst->connect_timeout;
			ss_conn_enter(c, SS_CONN_RESOLVING);
			ss_servers_wait(set, c);
			ss_conn_arm_timer(c);
			return;
		}
		ss_conn_ops(c)->connected(c, c->out_err ? c->out_err : EHOSTUNREACH);
		return;
	}
	ss_server_t *s = &set->s[i];
	socklen_t len, other;
	const struct sockaddr *sa = ss_servers_addr(s, false, &len);
	c->srv = (int8_t)i;
	c->tried |= (uint16_t)(1u << i);
	if (ss_conn_use_codec(c, &s->codec, s->cls) < 0) {
		ss_servers_release(set, i, false);
		c->srv = -1;
		ss_conn_close(c, "cannot set up the cipher state");
		return;
	}
	ss_info("%s %s: server %s%s", c->action, ss_conn_peer(c, peer, sizeof(peer)), s->name,
		trial ? " (trying it again after its backoff)" : "");
	/* A connect that hangs must not keep the others waiting long. */
	more = false;
	for (size_t j = 0; j < set->n && !more; j++) {
		if (c->tried >> j & 1)
			continue;
		ss_servers_addr(&set->s[j], false, &other);
		more = other > 0;
	}
	deadline = now + (more && inst->connect_timeout > SS_FAILOVER_CONNECT_TIMEOUT
			      ? SS_FAILOVER_CONNECT_TIMEOUT
			      : inst->connect_timeout);
	conn_connect_until(c, sa, len, deadline);
}

/* Acts on the ACL's answer; sa is the target's address when it was
 * looked up for the decision. */
static void conn_route(ss_conn_t *c, ss_acl_decision_t d, const struct sockaddr *sa, socklen_t len)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN];

	if (d != SS_ACL_BYPASS) {
		ss_conn_connect_server(c);
		return;
	}
	c->bypass = true;
	c->dir[SS_IN].xf = c->dir[SS_OUT].xf = SS_XF_COPY;
	ss_info("%s %s: bypass %s (ACL)", c->action, ss_conn_peer(c, peer, sizeof(peer)),
		ss_addr_format(&c->target, target, sizeof(target)));
	if (sa)
		ss_conn_connect_sa(c, sa, len);
	else
		ss_conn_connect_addr(c, &c->target);
}

static void conn_route_resolved(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	ss_conn_t *c = arg;
	ss_acl_t *acl = c->inst->acl;

	c->lookup_busy = false;
	if (c->state != SS_CONN_RESOLVING)
		return; /* closed meanwhile; the reaper frees it */
	ss_acl_decision_t d =
	    ss_acl_resolve(acl, status < 0 ? SS_ACL_UNDECIDED : ss_acl_match_addr(acl, sa));
	/* That lookup only chose the route: the connect gets its own time. */
	c->deadline = ev_now(c->inst->loop) + c->inst->connect_timeout;
	if (d == SS_ACL_BYPASS && status < 0) {
		/* Going direct needs the address the lookup did not give. */
		ss_conn_ops(c)->connected(c, EHOSTUNREACH);
		return;
	}
	conn_route(c, d, status < 0 ? NULL : sa, len);
}

void ss_conn_connect_route(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;
	ss_acl_decision_t d;

	if (!inst->acl) {
		ss_conn_connect_server(c);
		return;
	}
	d = ss_acl_match_target(inst->acl, &c->target);
	if (d == SS_ACL_UNDECIDED && c->target.atyp == SS_ATYP_DOMAIN && inst->acl_by_addr) {
		conn_lookup(c, c->target.port, conn_route_resolved);
		return;
	}
	conn_route(c, ss_acl_resolve(inst->acl, d), NULL, 0);
}

void ss_conn_outbound_end(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;

	if (c->side[SS_OUT].fd >= 0) {
		ev_io_stop(inst->loop, &c->side[SS_OUT].rio);
		ev_io_stop(inst->loop, &c->side[SS_OUT].wio);
		close(c->side[SS_OUT].fd);
		c->side[SS_OUT].fd = -1;
	}
	ev_io_stop(inst->loop, &c->side[SS_IN].rio);
	ev_io_stop(inst->loop, &c->side[SS_IN].wio);
	if (c->srv >= 0)
		ss_servers_ended(&inst->servers, c);
	for (int d = 0; d < 2; d++) {
		ss_splice_close(&c->dir[d].sp);
		if (c->k)
			ss_codec_reset(c->k, c->dir[d].codec);
	}
	ss_conn_reset(c);
	ss_conn_buf_release(c, SS_OUT);
	/* Its next request has the idle timeout: it proved itself before. */
	ss_conn_enter(c, SS_CONN_HANDSHAKE);
	ss_conn_touch(c);
	ss_conn_arm_timer(c);
}
