/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* One running program: listeners, the connection and buffer pools, the
 * resolver and the codec (with a server's replay pools), all on one loop. */

#define MAX_CONNS_CAP (1u << 18)
/* Pipes for splice(2) at once (two descriptors each, kept out of the
 * connections' budget): the directions moving bytes right now. */
#define SPLICE_PIPES 64

/* What the descriptor limit (RLIMIT_NOFILE) allows at once: a few for
 * listeners, the resolver and the like, two per splice pipe where the limit
 * leaves room, and the rest shared between TCP connections (two each) and
 * UDP associations (one each). With both TCP and UDP on, UDP gets at most a
 * quarter, so associations, which only expire with time, can never leave
 * connections without descriptors. */
typedef struct {
	size_t conns;
	size_t udp;
	unsigned long limit;
} instance_budget_t;

static instance_budget_t instance_budget(const ss_config_t *cfg, bool tcp, bool udp)
{
	instance_budget_t b = {.udp = udp ? (size_t)cfg->udp_max_assoc : 0};
	struct rlimit rl;
	size_t avail, share;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		rl.rlim_cur = 8192;
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		b.conns = MAX_CONNS_CAP;
		b.limit = 0;
		return b;
	}
	b.limit = (unsigned long)rl.rlim_cur;
	if (rl.rlim_cur > 64 + 4 * SPLICE_PIPES)
		avail = rl.rlim_cur - 32 - 2 * SPLICE_PIPES;
	else if (rl.rlim_cur > 48)
		avail = rl.rlim_cur - 32;
	else
		avail = 16;
	if (udp) {
		share = tcp ? avail / 4 : avail;
		if (share < 1)
			share = 1;
		if (b.udp > share)
			b.udp = share;
		avail -= b.udp;
	}
	b.conns = avail / 2 ? avail / 2 : 1;
	if (b.conns > MAX_CONNS_CAP)
		b.conns = MAX_CONNS_CAP;
	return b;
}

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

static int instance_setup_acl(struct ss_instance *inst, char *err, size_t errlen)
{
	ss_acl_stats_t st;
	int rc = ss_acl_load(&inst->acl, inst->cfg->acl, err, errlen);

	if (rc < 0)
		return rc;
	ss_acl_stats(inst->acl, &st);
	inst->acl_by_addr = st.bypass.ipv4 + st.bypass.ipv6 + st.proxy.ipv4 + st.proxy.ipv6 > 0;
	ss_info("ACL %s: bypass/reject %zu addresses, %zu names; proxy/accept %zu addresses, %zu "
		"names; outbound block %zu addresses, %zu names; default %s",
		inst->cfg->acl, st.bypass.ipv4 + st.bypass.ipv6,
		st.bypass.domains + st.bypass.regexes, st.proxy.ipv4 + st.proxy.ipv6,
		st.proxy.domains + st.proxy.regexes, st.block.ipv4 + st.block.ipv6,
		st.block.domains + st.block.regexes,
		ss_acl_default(inst->acl) == SS_ACL_PROXY ? "proxy/accept" : "bypass/reject");
	return 0;
}

/* --- plugins and what the instance tells its owner --- */

static bool instance_all_plugins(struct ss_instance *inst, ss_plugin_state_t state)
{
	for (size_t i = 0; i < inst->n_plugins; i++)
		if (inst->plugins[i].state != state)
			return false;
	return true;
}

static void instance_check_stopped(struct ss_instance *inst)
{
	if (!inst->stopping || inst->stopped_sent || !instance_all_plugins(inst, SS_PLUGIN_IDLE))
		return;
	inst->stopped_sent = true;
	if (inst->cb)
		inst->cb(inst, SS_INSTANCE_STOPPED, NULL, inst->cb_arg);
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

static void instance_plugin_cb(ss_plugin_t *p, ss_plugin_event_t ev, const char *msg)
{
	struct ss_instance *inst = p->data;
	int srv = instance_plugin_server(inst, p);

	switch (ev) {
	case SS_PLUGIN_UP:
		/* Held only while no server can be reached over TCP. */
		if (srv >= 0)
			ss_servers_plugin_up(&inst->servers, srv, true);
		ss_instance_hold(inst, srv >= 0 && !ss_servers_tcp_reachable(&inst->servers));
		if (!inst->ready_sent && instance_all_plugins(inst, SS_PLUGIN_RUNNING)) {
			inst->ready_sent = true;
			if (inst->cb)
				inst->cb(inst, SS_INSTANCE_READY, NULL, inst->cb_arg);
		}
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

	for (size_t i = 0; i < inst->n_plugins; i++)
		if (ss_plugin_start(&inst->plugins[i], err, sizeof(err)) < 0) {
			instance_fail(inst, err);
			return;
		}
	if (inst->n_plugins == 0) {
		inst->ready_sent = true;
		if (inst->cb)
			inst->cb(inst, SS_INSTANCE_READY, NULL, inst->cb_arg);
	}
}

void ss_instance_set_cb(ss_instance_t *inst, ss_instance_cb cb, void *arg)
{
	inst->cb = cb;
	inst->cb_arg = arg;
}

/* A plugin in front of host:port (SS_REMOTE_HOST, as configured), set up
 * but not started: plugin with opts, carrying tcp and udp; name_only for
 * one from a URL. */
static int instance_plugin(struct ss_instance *inst, const char *plugin, bool name_only,
			   const char *opts, const char *host, uint16_t port, bool tcp, bool udp,
			   char *err, size_t errlen)
{
	ss_plugin_spec_t spec = {.plugin = plugin,
				 .name_only = name_only,
				 .opts = opts,
				 .remote_host = host,
				 .remote_port = port,
				 .server = inst->cfg->prog == SS_PROG_SERVER,
				 .tcp = tcp,
				 .udp = udp,
				 .avoid = {port, inst->cfg->local_port}};
	ss_plugin_t *p = &inst->plugins[inst->n_plugins++];

	if (spec.server && strcmp(host, "::") == 0) {
		/* As our own listener does, on a host without IPv6. */
		int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 && errno == EAFNOSUPPORT)
			spec.remote_host = "0.0.0.0";
		if (fd >= 0)
			close(fd);
	}
	return ss_plugin_init(p, inst->loop, &spec, instance_plugin_cb, inst, err, errlen);
}

/* ss-server entry host:port: the plugin takes the public address for what it
 * carries, and ss-server listens on its loopback port for that. */
static int instance_server_entry(struct ss_instance *inst, const char *host, uint16_t port,
				 bool tcp, bool udp, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	bool ptcp = tcp && cfg->plugin_tcp, pudp = udp && cfg->plugin_udp;
	struct sockaddr_in *lo;
	socklen_t len;
	int rc;

	if (!cfg->plugin[0])
		return ss_instance_listen_on(inst, host, port, tcp, udp, err, errlen);
	if (inst->first) {
		/* The first worker runs the plugin; this one listens beside it
		 * on the plugin's side. */
		lo = (struct sockaddr_in *)ss_plugin_local(
		    &inst->first->plugins[inst->n_shared_plugins++], &len);
	} else {
		if ((rc = instance_plugin(inst, cfg->plugin, false, cfg->plugin_opts, host, port,
					  cfg->plugin_tcp, cfg->plugin_udp, err, errlen)) < 0)
			return rc;
		lo = (struct sockaddr_in *)ss_plugin_local(&inst->plugins[inst->n_plugins - 1],
							   &len);
	}
	if ((ptcp || pudp) && (rc = ss_instance_listen_on(inst, "127.0.0.1", ntohs(lo->sin_port),
							  ptcp, pudp, err, errlen)) < 0)
		return rc;
	if ((tcp && !ptcp) || (udp && !pudp))
		return ss_instance_listen_on(inst, host, port, tcp && !ptcp, udp && !pudp, err,
					     errlen);
	return 0;
}

/* A client's server entry i with a plugin: the plugin, in front of the
 * configured host (never looked up for it), and the server then reached
 * through it for what it carries. */
static int instance_client_entry(struct ss_instance *inst, size_t i, char *err, size_t errlen)
{
	const ss_config_server_t *e = &inst->cfg->servers[i];
	ss_server_t *s = &inst->servers.s[i];
	int rc;

	if (!e->plugin[0])
		return 0;
	if ((rc = instance_plugin(inst, e->plugin, e->plugin_from_url, e->plugin_opts, e->host,
				  s->port, e->plugin_tcp, e->plugin_udp, err, errlen)) < 0)
		return rc;
	ss_servers_set_plugin(&inst->servers, (int)i, &inst->plugins[inst->n_plugins - 1]);
	return 0;
}

int ss_instance_create(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t **out, char *err,
		       size_t errlen)
{
	return ss_instance_create_worker(cfg, loop, 0, 1, NULL, out, err, errlen);
}

/* A worker's share of a total: n / count, rounded up, at least 1. */
static size_t instance_share(size_t n, unsigned count)
{
	n = (n + count - 1) / count;
	return n ? n : 1;
}

int ss_instance_create_worker(const ss_config_t *cfg, struct ev_loop *loop, unsigned index,
			      unsigned count, struct ss_instance *first, ss_instance_t **out,
			      char *err, size_t errlen)
{
	struct ss_instance *inst;
	bool udp = cfg->mode != SS_MODE_TCP_ONLY;
	/* ss-local keeps TCP for SOCKS5 even in udp_only: UDP ASSOCIATE needs it. */
	bool tcp = cfg->mode != SS_MODE_UDP_ONLY || cfg->prog == SS_PROG_LOCAL;
	instance_budget_t budget;
	size_t max_conns;
	int rc = -EINVAL;

	*out = NULL;
	/* Without validation there are no keys and no defaults to run on. */
	if (!cfg->validated) {
		snprintf(err, errlen, "the configuration is not validated (ss_config_validate)");
		return -EINVAL;
	}
	/* An embedding program has not done it as ss_program_main does; it
	 * may be done again. */
	if (ss_codec_global_init() < 0) {
		snprintf(err, errlen, "cannot initialise the crypto library");
		return -EIO;
	}
	budget = instance_budget(cfg, tcp, udp);
	if (count == 0 || (index > 0) != (first != NULL) || index >= count) {
		snprintf(err, errlen, "bad worker %u of %u", index, count);
		return -EINVAL;
	}
	/* The limits are the program's: each worker takes its share. */
	budget.conns = instance_share(budget.conns, count);
	if (udp)
		budget.udp = instance_share(budget.udp, count);
	max_conns = budget.conns;
	inst = calloc(1, sizeof(*inst));
	if (!inst) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	inst->cfg = cfg;
	inst->loop = loop;
	inst->worker = index;
	inst->workers = count;
	inst->first = first;
	ss_instance_accept_init(inst);
	ev_timer_init(&inst->kick, instance_kick_cb, 0., 0.);
	inst->kick.data = inst;
	inst->splice_ok =
	    ss_splice_supported() &&
	    ss_pipe_pool_init(&inst->pipes, NULL, instance_share(SPLICE_PIPES, count)) == 0;
	inst->be = ss_codec_backend();
	inst->ops = cfg->prog == SS_PROG_SERVER   ? &ss_hs_server
		    : cfg->prog == SS_PROG_TUNNEL ? &ss_hs_tunnel
		    : cfg->prog == SS_PROG_REDIR  ? &ss_hs_redir
						  : &ss_hs_local;
	inst->timeout = cfg->timeout > 0 ? cfg->timeout : 60;
	inst->connect_timeout = inst->timeout < 10 ? inst->timeout : 10;
	inst->sockopts =
	    (ss_sockopts_t){.fast_open = cfg->fast_open,
			    /* Workers listen on the same addresses side by side. */
			    .reuse_port = cfg->reuse_port || count > 1,
			    /* Connections are taken once every worker listens
			     * (ss_instance_listen): before, a client could see
			     * one worker's listeners and not the others', and
			     * the kernel spread its datagrams differently once
			     * they came. */
			    .bind_only = count > 1,
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

	if (cfg->prog == SS_PROG_SERVER) {
		/* One set of replay pools for all workers: a salt is refused
		 * whichever worker it reaches. */
		rc = first ? ss_codec_setup_shared(&inst->codec, cfg, inst->be, &first->codec, err,
						   errlen)
			   : ss_codec_setup(&inst->codec, cfg, inst->be, true, err, errlen);
		if (rc < 0)
			goto fail;
		if (!first && count > 1)
			ss_codec_share_pools(&inst->codec);
		ss_instance_codec_class(inst, &inst->codec);
	} else if ((rc = ss_servers_init(&inst->servers, inst, err, errlen)) < 0) {
		goto fail;
	}
	if (ss_pool_init(&inst->conns, sizeof(ss_conn_t) + inst->slot_states, max_conns) < 0 ||
	    ss_pool_init(&inst->bufs, SS_LEASE_SIZE, 2 * max_conns) < 0) {
		snprintf(err, errlen, "cannot reserve memory for %zu connections", max_conns);
		rc = -ENOMEM;
		goto fail;
	}
	if (ss_resolver_init(&inst->resolver, loop, cfg->nameserver, cfg->ipv6_first, err, errlen) <
	    0)
		goto fail;
	if (instance_setup_outbound(inst, err, errlen) < 0)
		goto fail;
	if (cfg->acl[0] && (rc = instance_setup_acl(inst, err, errlen)) < 0)
		goto fail;

	if (udp && index == 0 && budget.udp * count < (size_t)cfg->udp_max_assoc)
		ss_info("at most %zu UDP associations and %zu connections at once under the "
			"open-file limit of %lu (-n/nofile raises it)",
			budget.udp * count, budget.conns * count, budget.limit);
	if (udp && (rc = ss_udp_init(&inst->udp, inst, budget.udp, err, errlen)) < 0)
		goto fail;
	if (cfg->prog == SS_PROG_SERVER) {
		for (size_t i = 0; i < cfg->n_servers; i++) {
			uint16_t port =
			    cfg->servers[i].port ? cfg->servers[i].port : cfg->server_port;
			if ((rc = instance_server_entry(inst, cfg->servers[i].host, port, tcp, udp,
							err, errlen)) < 0)
				goto fail;
		}
	} else {
		for (size_t i = 0; i < cfg->n_servers; i++)
			if ((rc = instance_client_entry(inst, i, err, errlen)) < 0)
				goto fail;
		/* A client accepts once it can reach a server over TCP: before
		 * that (its servers' plugins not up yet), a connection could
		 * only fail. */
		inst->held = !ss_servers_tcp_reachable(&inst->servers);
		ss_servers_start(&inst->servers);
		if ((rc = ss_instance_listen_on(inst,
						cfg->local_addr[0] ? cfg->local_addr : "127.0.0.1",
						cfg->local_port, tcp, udp, err, errlen)) < 0)
			goto fail;
	}
	ev_timer_start(loop, &inst->kick);
	*out = inst;
	return 0;
fail:
	ss_instance_destroy(inst);
	return rc < 0 ? rc : -EINVAL;
}

void ss_instance_stop(ss_instance_t *inst)
{
	if (inst->stopping)
		return;
	ss_instance_accept_stop(inst);
	inst->stopping = true;
	for (size_t i = 0; i < inst->conns.fresh; i++) {
		ss_conn_t *c = ss_pool_at(&inst->conns, i);
		if (c->inst == inst && c->state != SS_CONN_CLOSED && c->side[SS_IN].fd >= 0)
			ss_conn_close(c, NULL);
	}
	/* Connections handed over and not yet taken end with the rest. */
	ss_instance_handoff_close(inst);
	ss_servers_stop(&inst->servers);
	/* Lookups in flight finish with ECANCELED, while their owners still stand. */
	ss_resolver_free(&inst->resolver);
	ss_udp_free(&inst->udp);
	ss_refused_stop(&inst->refused);
	ss_conn_reap(inst);
	ev_timer_stop(inst->loop, &inst->kick);
	for (size_t i = 0; i < inst->n_plugins; i++)
		ss_plugin_stop(&inst->plugins[i]);
	instance_check_stopped(inst);
}

void ss_instance_destroy(ss_instance_t *inst)
{
	if (!inst)
		return;
	inst->cb = NULL;
	ss_instance_stop(inst);
	for (size_t i = 0; i < inst->n_plugins; i++)
		ss_plugin_free(&inst->plugins[i]);
	for (size_t i = 0; i < inst->n_listeners; i++)
		close(inst->listeners[i].io.fd);
	for (size_t i = 0; i < inst->conns.fresh; i++) {
		ss_conn_t *c = ss_pool_at(&inst->conns, i);
		if (c->inst)
			ss_conn_slot_free(c);
	}
	ev_prepare_stop(inst->loop, &inst->reaper);
	ss_instance_handoff_close(inst); /* handed over since: closed */
	pthread_mutex_destroy(&inst->handoff.lock);
	ss_pipe_pool_destroy(&inst->pipes);
	ss_acl_free(inst->acl);
	ss_udp_destroy(&inst->udp);
	ss_codec_free(&inst->codec);
	ss_servers_free(&inst->servers);
	ss_pool_destroy(&inst->bufs);
	ss_pool_destroy(&inst->conns);
	free(inst);
}

void ss_instance_stats(const ss_instance_t *inst, ss_stats_t *out)
{
	*out = inst->stats;
}
