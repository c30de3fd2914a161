/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay/instance.h"
#include "net/inherit.h"
#include "util/log.h"
#include "util/result.h"

/* One worker of a program: listeners, the connection and buffer pools, the
 * resolver and the codec, all on one loop; what it shares with the other
 * workers (replay pools, ACL, plugins) is in its shared object. */

bool ss_instance_client_allowed(struct ss_instance *inst, const struct sockaddr *sa)
{
	if (!inst->acl)
		return true;
	return ss_acl_resolve(inst->acl, ss_acl_match_addr(inst->acl, sa)) == SS_ACL_ACCEPT;
}

bool ss_instance_target_blocked(struct ss_instance *inst, const char *host,
				const struct sockaddr *sa)
{
	if (!inst->acl || inst->ops->client)
		return false;
	return (host && ss_acl_outbound_blocked_host(inst->acl, host)) ||
	       (sa && ss_acl_outbound_blocked_addr(inst->acl, sa));
}

int ss_instance_codec_class(struct ss_instance *inst, ss_codec_t *k)
{
	ss_codec_class_t *c;

	for (size_t i = 0; i < inst->n_classes; i++)
		if (ss_codec_same_states(inst->classes[i].k, k))
			return (int)i;
	if (inst->n_classes == SS_ARRAY_LEN(inst->classes))
		return -ENOSPC;
	c = &inst->classes[inst->n_classes];
	c->k = k;
	c->size = (uint32_t)ss_codec_state_size(k);
	c->off = (uint32_t)inst->slot_states;
	c->udp_off = (uint32_t)inst->udp_states;
	inst->slot_states += 2 * (size_t)c->size;
	inst->udp_states += (k->ops->udp_assoc_size + 63) & ~(size_t)63;
	return (int)inst->n_classes++;
}

static void instance_reaper_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	ss_conn_reap(w->data);
}

static int instance_bind_addr(const char *text, int family, struct sockaddr_storage *out,
			      const char *what, char *err, size_t errlen)
{
	ss_addr_t a;
	socklen_t len;

	if (ss_addr_from_host(&a, text, 0) < 0 || ss_addr_to_sockaddr(&a, out, &len) < 0 ||
	    (family && out->ss_family != family)) {
		snprintf(err, errlen, "invalid %s '%s' (expected an IP address)", what, text);
		return -EINVAL;
	}
	return 0;
}

static int instance_setup_outbound(struct ss_instance *inst, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;

	inst->outopts = inst->sockopts;
	/* -i steers outbound traffic; listeners stay where -s/-b put them. */
	inst->outopts.iface = cfg->iface;
	if (cfg->prog != SS_PROG_SERVER)
		return 0;
	if (cfg->local_addr[0]) {
		struct sockaddr_storage ss;
		if (instance_bind_addr(cfg->local_addr, 0, &ss, "outbound bind address (-b)", err,
				       errlen) < 0)
			return -EINVAL;
		if (ss.ss_family == AF_INET) {
			inst->bind4 = ss;
			inst->outopts.bind4 = (struct sockaddr *)&inst->bind4;
		} else {
			inst->bind6 = ss;
			inst->outopts.bind6 = (struct sockaddr *)&inst->bind6;
		}
	}
	if (cfg->local_ipv4_addr[0]) {
		if (instance_bind_addr(cfg->local_ipv4_addr, AF_INET, &inst->bind4,
				       "local_ipv4_address", err, errlen) < 0)
			return -EINVAL;
		inst->outopts.bind4 = (struct sockaddr *)&inst->bind4;
	}
	if (cfg->local_ipv6_addr[0]) {
		if (instance_bind_addr(cfg->local_ipv6_addr, AF_INET6, &inst->bind6,
				       "local_ipv6_address", err, errlen) < 0)
			return -EINVAL;
		inst->outopts.bind6 = (struct sockaddr *)&inst->bind6;
	}
	return 0;
}

/* --- plugins and what the instance tells its owner --- */

/* Every plugin it watches is in state (true when it watches none). */
static bool instance_all_plugins(struct ss_instance *inst, ss_plugin_state_t state)
{
	return !inst->watches_plugins || ss_shared_plugins_all(inst->shared, state);
}

static void instance_check_stopped(struct ss_instance *inst)
{
	if (!inst->stopping || inst->stopped_sent || !instance_all_plugins(inst, SS_PLUGIN_IDLE))
		return;
	inst->stopped_sent = true;
	if (inst->cb)
		inst->cb(inst, SS_INSTANCE_STOPPED, NULL, inst->cb_arg);
}

static void instance_ready(struct ss_instance *inst)
{
	inst->ready_sent = true;
	if (inst->cb)
		inst->cb(inst, SS_INSTANCE_READY, NULL, inst->cb_arg);
}

static void instance_fail(struct ss_instance *inst, const char *msg)
{
	if (!inst->stopping) {
		if (inst->cb)
			inst->cb(inst, SS_INSTANCE_FAILED, msg, inst->cb_arg);
		else
			ss_err("%s", msg);
	}
	ss_instance_stop(inst);
}

/* A client's server that plugin p stands in front of; -1 for ss-server's. */
static int instance_plugin_server(struct ss_instance *inst, const ss_plugin_t *p)
{
	for (size_t i = 0; i < inst->servers.n; i++)
		if (inst->servers.s[i].plugin == p)
			return (int)i;
	return -1;
}

static void instance_plugin_cb(void *arg, ss_plugin_t *p, ss_plugin_event_t ev, const char *msg)
{
	struct ss_instance *inst = arg;
	int srv = instance_plugin_server(inst, p);

	switch (ev) {
	case SS_PLUGIN_UP:
		/* Held only while no server can be reached over TCP. */
		if (srv >= 0)
			ss_servers_plugin_up(&inst->servers, srv, true);
		ss_instance_hold(inst, srv >= 0 && !ss_servers_tcp_reachable(&inst->servers));
		if (!inst->ready_sent && instance_all_plugins(inst, SS_PLUGIN_RUNNING))
			instance_ready(inst);
		break;
	case SS_PLUGIN_DOWN:
		/* ss-server's listener stays: what its plugin hands over comes
		 * back with it. */
		if (srv < 0)
			break;
		ss_servers_plugin_up(&inst->servers, srv, false);
		if (!ss_servers_tcp_reachable(&inst->servers))
			ss_instance_hold(inst, true);
		break;
	case SS_PLUGIN_FAILED:
		instance_fail(inst, msg);
		break;
	case SS_PLUGIN_GONE:
		instance_check_stopped(inst);
		break;
	}
}

/* The loop's first turn: plugins start here, in the process and as the user
 * that runs the loop. */
static void instance_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ss_instance *inst = w->data;
	char err[512];
	(void)loop;
	(void)revents;

	if (!inst->watches_plugins || inst->shared->n_plugins == 0)
		instance_ready(inst);
	else if (ss_shared_start_plugins(inst->shared, err, sizeof(err)) < 0)
		instance_fail(inst, err);
}

void ss_instance_set_cb(ss_instance_t *inst, ss_instance_cb cb, void *arg)
{
	inst->cb = cb;
	inst->cb_arg = arg;
}

/* --- creation --- */

/* ss-server entry i at host:port: with a plugin, the plugin takes the
 * public address for what it carries, and each worker listens on its
 * loopback port for that. */
static int instance_server_entry(struct ss_instance *inst, size_t i, const char *host,
				 uint16_t port, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	const ss_plugin_t *p = inst->shared->entry_plugin[i];
	bool tcp = inst->shared->tcp, udp = inst->shared->udp;
	bool ptcp = tcp && cfg->plugin_tcp, pudp = udp && cfg->plugin_udp;
	const struct sockaddr_in *lo;
	socklen_t len;
	int rc;

	if (!p)
		return ss_instance_listen_on(inst, host, port, tcp, udp, err, errlen);
	lo = (const struct sockaddr_in *)ss_plugin_local(p, &len);
	if ((ptcp || pudp) && (rc = ss_instance_listen_on(inst, "127.0.0.1", ntohs(lo->sin_port),
							  ptcp, pudp, err, errlen)) < 0)
		return rc;
	if ((tcp && !ptcp) || (udp && !pudp))
		return ss_instance_listen_on(inst, host, port, tcp && !ptcp, udp && !pudp, err,
					     errlen);
	return 0;
}

/* What cannot fail: the loop's watchers, the socket options, the handshake,
 * the timeouts. */
static void instance_init(struct ss_instance *inst, ss_shared_t *sh, struct ev_loop *loop,
			  unsigned index)
{
	const ss_config_t *cfg = sh->cfg;

	inst->cfg = cfg;
	inst->loop = loop;
	inst->worker = index;
	inst->workers = sh->count;
	inst->shared = sh;
	inst->fig = &sh->fig[index];
	ss_instance_accept_init(inst);
	ev_timer_init(&inst->kick, instance_kick_cb, 0., 0.);
	inst->kick.data = inst;
	inst->splice_ok =
	    ss_splice_supported() && ss_pipe_pool_init(&inst->pipes, NULL, sh->max_pipes) == 0;
	inst->be = ss_codec_backend();
	inst->ops = cfg->prog == SS_PROG_SERVER   ? &ss_hs_server
		    : cfg->prog == SS_PROG_TUNNEL ? &ss_hs_tunnel
		    : cfg->prog == SS_PROG_REDIR  ? &ss_hs_redir
						  : &ss_hs_local;
	inst->block_private = cfg->prog == SS_PROG_SERVER && cfg->block_private;
	inst->timeout = cfg->timeout > 0 ? cfg->timeout : 60;
	inst->connect_timeout = inst->timeout < 10 ? inst->timeout : 10;
	inst->sockopts =
	    (ss_sockopts_t){.fast_open = cfg->fast_open,
			    /* Workers listen on the same addresses side by side. */
			    .reuse_port = cfg->reuse_port || sh->count > 1,
			    /* Connections are taken once every worker listens
			     * (ss_instance_listen): before, a client could see
			     * one worker's listeners and not the others', and
			     * the kernel spread its datagrams differently once
			     * they came. */
			    .bind_only = sh->count > 1,
			    .no_delay = cfg->no_delay,
			    .mptcp = cfg->mptcp,
			    .transparent = cfg->prog == SS_PROG_REDIR && cfg->tcp_tproxy};
	ev_prepare_init(&inst->reaper, instance_reaper_cb);
	inst->reaper.data = inst;
	/* ss-local's table holds SOCKS5 clients that failed to log in as
	 * well as servers, when it has users. */
	ss_refused_init(&inst->refused, loop,
			cfg->prog == SS_PROG_SERVER ? "refused"
			: cfg->n_socks_creds        ? "refused logins and server answers"
			: cfg->prog == SS_PROG_REDIR
			    ? "connections not redirected and server answers refused"
			    : "answers that failed to authenticate");
}

/* ss-server's codec on the shared replay pools, or a client's servers;
 * then the pools, sized for their states, the resolver, the outbound
 * options and the ACL. */
static int instance_setup(struct ss_instance *inst, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	ss_shared_t *sh = inst->shared;
	int rc;

	if (cfg->prog == SS_PROG_SERVER) {
		if ((rc = ss_codec_setup_shared(&inst->codec, cfg, inst->be, &sh->codec, err,
						errlen)) < 0)
			return rc;
		ss_instance_codec_class(inst, &inst->codec);
	} else if ((rc = ss_servers_init(&inst->servers, inst, err, errlen)) < 0) {
		return rc;
	}
	if (ss_pool_init(&inst->conns, sizeof(ss_conn_t) + inst->slot_states, sh->max_conns) < 0 ||
	    ss_pool_init(&inst->bufs, SS_LEASE_SIZE, 2 * sh->max_conns) < 0) {
		snprintf(err, errlen, "cannot reserve memory for %zu connections", sh->max_conns);
		return -ENOMEM;
	}
	if (ss_resolver_init(&inst->resolver, inst->loop, cfg->nameserver, cfg->ipv6_first, err,
			     errlen) < 0 ||
	    instance_setup_outbound(inst, err, errlen) < 0)
		return -EINVAL;
	if (sh->acl && !(inst->acl = ss_acl_view(sh->acl))) {
		snprintf(err, errlen, "out of memory for the ACL");
		return -ENOMEM;
	}
	inst->acl_by_addr = sh->acl_by_addr;
	return 0;
}

/* The listeners: ss-server's on each of its entries, a client's on its
 * local address once its servers are set (and their plugins known). */
static int instance_open(struct ss_instance *inst, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	ss_shared_t *sh = inst->shared;
	int rc;

	if (cfg->prog == SS_PROG_SERVER) {
		for (size_t i = 0; i < cfg->n_servers; i++) {
			uint16_t port =
			    cfg->servers[i].port ? cfg->servers[i].port : cfg->server_port;
			if ((rc = instance_server_entry(inst, i, cfg->servers[i].host, port, err,
							errlen)) < 0)
				return rc;
		}
		return 0;
	}
	for (size_t i = 0; i < cfg->n_servers; i++)
		if (sh->entry_plugin[i])
			ss_servers_set_plugin(&inst->servers, (int)i, sh->entry_plugin[i]);
	/* A client accepts once it can reach a server over TCP: before that
	 * (its servers' plugins not up yet), a connection could only fail. */
	inst->held = !ss_servers_tcp_reachable(&inst->servers);
	ss_servers_start(&inst->servers);
	if ((rc = ss_instance_listen_on(inst, cfg->local_addr[0] ? cfg->local_addr : "127.0.0.1",
					cfg->local_port, sh->tcp, sh->udp, err, errlen)) < 0)
		return rc;
	/* One DNS relay, on the first worker's loop. */
	if (cfg->have_dns && inst->worker == 0)
		return ss_dns_start(inst, &inst->dns, err, errlen);
	return 0;
}

int ss_instance_create_worker(ss_shared_t *sh, struct ev_loop *loop, unsigned index,
			      ss_instance_t **out, char *err, size_t errlen)
{
	struct ss_instance *inst;
	int rc;

	*out = NULL;
	if (index >= sh->count) {
		snprintf(err, errlen, "bad worker %u of %u", index, sh->count);
		return -EINVAL;
	}
	inst = calloc(1, sizeof(*inst));
	if (!inst) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	instance_init(inst, sh, loop, index);
	/* Plugins are children of the process that runs their loop: the
	 * worker on it watches them. */
	if (loop == sh->loop) {
		inst->watches_plugins = true;
		ss_shared_watch_plugins(sh, instance_plugin_cb, inst);
	}
	if ((rc = instance_setup(inst, err, errlen)) < 0 ||
	    (sh->udp && (rc = ss_udp_init(&inst->udp, inst, sh->max_assoc, err, errlen)) < 0) ||
	    (rc = instance_open(inst, err, errlen)) < 0) {
		ss_instance_destroy(inst);
		return rc;
	}
	ev_timer_start(loop, &inst->kick);
	*out = inst;
	return 0;
}

int ss_instance_create(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t **out, char *err,
		       size_t errlen)
{
	return ss_instance_create_after(cfg, loop, NULL, out, err, errlen);
}

int ss_instance_create_after(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t *prev,
			     ss_instance_t **out, char *err, size_t errlen)
{
	ss_shared_t *sh;
	int rc;

	*out = NULL;
	if ((rc = ss_shared_create_after(cfg, 1, loop, prev ? prev->shared : NULL, &sh, err,
					 errlen)) < 0)
		return rc;
	if ((rc = ss_instance_create_worker(sh, loop, 0, out, err, errlen)) < 0) {
		ss_shared_free(sh);
		return rc;
	}
	(*out)->own_shared = true;
	return 0;
}

static void instance_retire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ss_instance *inst = w->data;
	(void)loop;
	(void)revents;

	if (inst->stats.active == 0 && ss_udp_assocs(&inst->udp) == 0)
		ss_instance_stop(inst);
}

void ss_instance_retire(ss_instance_t *inst)
{
	if (inst->stopping || inst->retiring)
		return;
	ss_dns_stop(inst->dns);
	ss_instance_accept_retire(inst);
	inst->retiring = true;
	ss_udp_retire(&inst->udp);
	ev_timer_init(&inst->retire_check, instance_retire_cb, 0., 0.25);
	inst->retire_check.data = inst;
	ev_timer_start(inst->loop, &inst->retire_check);
}

void ss_instance_end_user(ss_instance_t *inst, const char *name)
{
	size_t users = inst->shared->fig_layout.n_users + 1;

	for (size_t i = 0; i < inst->conns.fresh; i++) {
		ss_conn_t *c = ss_pool_at(&inst->conns, i);
		size_t user = c->fig ? (c->fig - 1) % users : 0; /* its row's */
		if (c->inst == inst && c->state != SS_CONN_CLOSED && user &&
		    strcmp(inst->cfg->users[user - 1].name, name) == 0)
			ss_conn_close(c, "its user was removed");
	}
	ss_conn_reap(inst);
}

void ss_instance_stop(ss_instance_t *inst)
{
	if (inst->stopping)
		return;
	ss_instance_accept_stop(inst);
	inst->stopping = true;
	if (inst->retiring)
		ev_timer_stop(inst->loop, &inst->retire_check);
	for (size_t i = 0; i < inst->conns.fresh; i++) {
		ss_conn_t *c = ss_pool_at(&inst->conns, i);
		if (c->inst == inst && c->state != SS_CONN_CLOSED && c->side[SS_IN].fd >= 0)
			ss_conn_close(c, NULL);
	}
	/* Connections handed over and not yet taken end with the rest. */
	ss_instance_handoff_close(inst);
	ss_dns_stop(inst->dns);
	ss_servers_stop(&inst->servers);
	/* Lookups in flight finish with ECANCELED, while their owners still stand. */
	ss_resolver_free(&inst->resolver);
	ss_udp_free(&inst->udp);
	ss_refused_stop(&inst->refused);
	ss_conn_reap(inst);
	ev_timer_stop(inst->loop, &inst->kick);
	for (size_t i = 0; inst->watches_plugins && i < inst->shared->n_plugins; i++)
		ss_plugin_stop(&inst->shared->plugins[i]);
	instance_check_stopped(inst);
}

void ss_instance_destroy(ss_instance_t *inst)
{
	if (!inst)
		return;
	inst->cb = NULL;
	ss_instance_stop(inst);
	if (inst->watches_plugins)
		ss_shared_watch_plugins(inst->shared, NULL, NULL);
	for (size_t i = 0; i < inst->n_listeners; i++)
		if (inst->listeners[i].io.fd >= 0 &&
		    !ss_inherit_give_back(inst->listeners[i].io.fd))
			close(inst->listeners[i].io.fd);
	for (size_t i = 0; i < inst->conns.fresh; i++) {
		ss_conn_t *c = ss_pool_at(&inst->conns, i);
		if (c->inst)
			ss_conn_slot_free(c);
	}
	ev_prepare_stop(inst->loop, &inst->reaper);
	ss_instance_handoff_close(inst); /* handed over since: closed */
	ss_dns_free(inst->dns);
	ss_pipe_pool_destroy(&inst->pipes);
	ss_acl_free(inst->acl);
	ss_udp_destroy(&inst->udp);
	ss_codec_free(&inst->codec);
	ss_servers_free(&inst->servers);
	ss_pool_destroy(&inst->bufs);
	ss_pool_destroy(&inst->conns);
	if (inst->own_shared)
		ss_shared_free(inst->shared);
	free(inst);
}

void ss_instance_worker_stats(const ss_instance_t *inst, ss_stats_t *out)
{
	ss_fig_sum_t s = {0};

	*out = inst->stats;
	/* The connections that reached the relay count in their rows as
	 * they go, those still open included. */
	ss_figures_add_all(inst->fig, 1, &inst->shared->fig_layout, &s);
	out->bytes_up += s.bytes[SS_IN];
	out->bytes_down += s.bytes[SS_OUT];
}

void ss_instance_stats(const ss_instance_t *inst, ss_stats_t *out)
{
	ss_fig_sum_t c;

	ss_instance_worker_stats(inst, out);
	if (inst->worker != 0)
		return;
	/* Worker 0 also gives what the configurations before a reload
	 * counted, so that the workers' stats add up to the program's: their
	 * connections counted from when their requests were accepted, the
	 * open ones among the active. */
	ss_shared_carried(inst->shared, &c);
	out->accepted += c.opened;
	out->active += c.opened - c.closed;
	out->bytes_up += c.bytes[SS_IN];
	out->bytes_down += c.bytes[SS_OUT];
}

size_t ss_instance_figures_count(const ss_instance_t *inst)
{
	const ss_fig_layout_t *l = &inst->shared->fig_layout;

	return l->n_ports * (l->n_users + 1);
}

int ss_instance_figures(const ss_instance_t *inst, size_t i, ss_figures_t *out)
{
	const ss_fig_layout_t *l = &inst->shared->fig_layout;
	size_t port, user;
	ss_fig_sum_t s;

	if (i >= ss_instance_figures_count(inst))
		return -ENOENT;
	port = i / (l->n_users + 1);
	user = i % (l->n_users + 1);
	ss_shared_figures(inst->shared, port, user, &s);
	memset(out, 0, sizeof(*out));
	out->port = l->port[port];
	out->user = ss_fig_user_name(l, user);
	out->bytes_up = s.bytes[SS_IN];
	out->bytes_down = s.bytes[SS_OUT];
	out->conns_active = s.opened - s.closed;
	out->conns_total = s.opened;
	out->udp_in = s.dgrams[0];
	out->udp_out = s.dgrams[1];
	out->udp_assoc_active = s.assoc_opened - s.assoc_closed;
	out->udp_assoc_total = s.assoc_opened;
	out->refused_auth = s.refused[SS_REFUSED_AUTH];
	out->refused_replay = s.refused[SS_REFUSED_REPLAY];
	out->refused_acl = s.refused[SS_REFUSED_ACL];
	out->refused_blocked = s.refused[SS_REFUSED_BLOCKED];
	return 0;
}
