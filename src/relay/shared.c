/* SPDX-License-Identifier: MIT */
#include "relay/shared.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/log.h"

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
} shared_budget_t;

static shared_budget_t shared_budget(const ss_config_t *cfg, bool tcp, bool udp)
{
	shared_budget_t b = {.udp = udp ? (size_t)cfg->udp_max_assoc : 0};
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

/* A worker's share of a total: n / count, rounded up, at least 1. */
static size_t shared_share(size_t n, unsigned count)
{
	n = (n + count - 1) / count;
	return n ? n : 1;
}

/* The limits of the program, split between the workers. */
static void shared_limits(ss_shared_t *sh)
{
	shared_budget_t b = shared_budget(sh->cfg, sh->tcp, sh->udp);

	sh->max_conns = shared_share(b.conns, sh->count);
	sh->max_assoc = sh->udp ? shared_share(b.udp, sh->count) : 0;
	sh->max_pipes = shared_share(SPLICE_PIPES, sh->count);
	if (sh->udp && sh->max_assoc * sh->count < (size_t)sh->cfg->udp_max_assoc)
		ss_info("at most %zu UDP associations and %zu connections at once under the "
			"open-file limit of %lu (-n/nofile raises it)",
			sh->max_assoc * sh->count, sh->max_conns * sh->count, b.limit);
}

static int shared_acl(ss_shared_t *sh, char *err, size_t errlen)
{
	ss_acl_stats_t st;
	int rc = ss_acl_load(&sh->acl, sh->cfg->acl, err, errlen);

	if (rc < 0)
		return rc;
	ss_acl_stats(sh->acl, &st);
	sh->acl_by_addr = st.bypass.ipv4 + st.bypass.ipv6 + st.proxy.ipv4 + st.proxy.ipv6 > 0;
	ss_info("ACL %s: bypass/reject %zu addresses, %zu names; proxy/accept %zu addresses, %zu "
		"names; outbound block %zu addresses, %zu names; default %s",
		sh->cfg->acl, st.bypass.ipv4 + st.bypass.ipv6,
		st.bypass.domains + st.bypass.regexes, st.proxy.ipv4 + st.proxy.ipv6,
		st.proxy.domains + st.proxy.regexes, st.block.ipv4 + st.block.ipv6,
		st.block.domains + st.block.regexes,
		ss_acl_default(sh->acl) == SS_ACL_PROXY ? "proxy/accept" : "bypass/reject");
	return 0;
}

/* ---- plugins ---- */

static void shared_plugin_cb(ss_plugin_t *p, ss_plugin_event_t ev, const char *msg)
{
	ss_shared_t *sh = p->data;

	if (sh->watch)
		sh->watch(sh->watch_arg, p, ev, msg);
}

/* Entry i's plugin in front of host:port (SS_REMOTE_HOST, as configured),
 * set up but not started: plugin with opts, carrying tcp and udp;
 * name_only for one from a URL. */
static int shared_plugin(ss_shared_t *sh, size_t i, const char *plugin, bool name_only,
			 const char *opts, const char *host, uint16_t port, bool tcp, bool udp,
			 char *err, size_t errlen)
{
	ss_plugin_spec_t spec = {.plugin = plugin,
				 .name_only = name_only,
				 .opts = opts,
				 .remote_host = host,
				 .remote_port = port,
				 .server = sh->cfg->prog == SS_PROG_SERVER,
				 .tcp = tcp,
				 .udp = udp,
				 .avoid = {port, sh->cfg->local_port}};
	ss_plugin_t *p = &sh->plugins[sh->n_plugins++];

	if (spec.server && strcmp(host, "::") == 0) {
		/* As our own listener does, on a host without IPv6. */
		int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 && errno == EAFNOSUPPORT)
			spec.remote_host = "0.0.0.0";
		if (fd >= 0)
			close(fd);
	}
	sh->entry_plugin[i] = p;
	return ss_plugin_init(p, sh->loop, &spec, shared_plugin_cb, sh, err, errlen);
}

/* ss-server's plugin takes each public address for what it carries, and
 * the workers listen on its loopback port for that; a client's plugin
 * stands in front of its server's configured host (never looked up for
 * it), and the server is reached through it for what it carries. */
static int shared_plugins(ss_shared_t *sh, char *err, size_t errlen)
{
	const ss_config_t *cfg = sh->cfg;
	int rc;

	for (size_t i = 0; i < cfg->n_servers; i++) {
		const ss_config_server_t *e = &cfg->servers[i];
		uint16_t port = e->port ? e->port : cfg->server_port;
		if (cfg->prog == SS_PROG_SERVER && cfg->plugin[0])
			rc = shared_plugin(sh, i, cfg->plugin, cfg->plugin_name_only,
					   cfg->plugin_opts, e->host, port, cfg->plugin_tcp,
					   cfg->plugin_udp, err, errlen);
		else if (cfg->prog != SS_PROG_SERVER && e->plugin[0])
			rc =
			    shared_plugin(sh, i, e->plugin, e->plugin_from_url, e->plugin_opts,
					  e->host, port, e->plugin_tcp, e->plugin_udp, err, errlen);
		else
			rc = 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

void ss_shared_watch_plugins(ss_shared_t *sh, ss_shared_plugin_cb cb, void *arg)
{
	sh->watch = cb;
	sh->watch_arg = arg;
}

int ss_shared_start_plugins(ss_shared_t *sh, char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; i < sh->n_plugins; i++)
		if ((rc = ss_plugin_start(&sh->plugins[i], err, errlen)) < 0)
			return rc;
	return 0;
}

bool ss_shared_plugins_all(const ss_shared_t *sh, ss_plugin_state_t state)
{
	for (size_t i = 0; i < sh->n_plugins; i++)
		if (sh->plugins[i].state != state)
			return false;
	return true;
}

/* ---- the object ---- */

/* ss-server: one set of replay pools for all workers, so that a salt is
 * refused whichever worker it reaches, and one table of UDP sessions for a
 * codec that has them; after a reload, prev's where they are of the kind
 * needed, so that what was seen before it is refused after it. */
static int shared_server(ss_shared_t *sh, const ss_shared_t *prev, char *err, size_t errlen)
{
	const ss_codec_ops_t *ops;
	ss_udp_sessions_t *t = prev ? prev->sessions : NULL;
	size_t live = sh->max_assoc * sh->count;
	bool kept;
	int rc;

	rc = prev ? ss_codec_setup_after(&sh->codec, sh->cfg, ss_codec_backend(), &prev->codec, err,
					 errlen)
		  : ss_codec_setup(&sh->codec, sh->cfg, ss_codec_backend(), true, err, errlen);
	if (rc < 0)
		return rc;
	kept = !prev || ss_codec_keeps_records(&sh->codec, &prev->codec);
	ops = sh->codec.ops;
	if (sh->udp && ops->udp_memo_size) {
		/* The same room, give or take the rounding of the workers'
		 * shares (shared_share): a table too small would refuse
		 * sessions the configuration allows. */
		if (t && t->memo_size == ops->udp_memo_size && t->ttl == ops->udp_memo_ttl &&
		    t->live_max + sh->count >= live)
			sh->sessions = ss_udp_sessions_ref(t);
		else if (!(sh->sessions = ss_udp_sessions_new(ops->udp_memo_size, ops->udp_memo_ttl,
							      live, SS_UDP_SESSIONS_ENDED))) {
			snprintf(err, errlen, "cannot reserve the table of UDP sessions");
			return -ENOMEM;
		}
		sh->holder0 = ss_udp_sessions_workers(sh->sessions, sh->count);
	}
	if (!kept || (t && sh->sessions != t))
		ss_notice("the replay records start empty: the method's kind, replay_capacity or "
			  "the room for UDP sessions changed");
	return 0;
}

int ss_shared_create(const ss_config_t *cfg, unsigned count, struct ev_loop *loop,
		     ss_shared_t **out, char *err, size_t errlen)
{
	return ss_shared_create_after(cfg, count, loop, NULL, out, err, errlen);
}

int ss_shared_create_after(const ss_config_t *cfg, unsigned count, struct ev_loop *loop,
			   ss_shared_t *prev, ss_shared_t **out, char *err, size_t errlen)
{
	ss_shared_t *sh;
	int rc = 0;

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
	if (count == 0) {
		snprintf(err, errlen, "bad number of workers: %u", count);
		return -EINVAL;
	}
	sh = calloc(1, sizeof(*sh));
	if (sh)
		ss_fig_layout_init(&sh->fig_layout, cfg);
	if (!sh || !(sh->w = calloc(count, sizeof(*sh->w))) ||
	    !(sh->fig = calloc(count + 1, sizeof(*sh->fig))) ||
	    ss_figures_alloc(sh->fig, count + 1, &sh->fig_layout) < 0) {
		if (sh) {
			free(sh->fig);
			free(sh->w);
		}
		free(sh);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sh->cfg = cfg;
	sh->count = count;
	sh->loop = loop;
	sh->udp = cfg->mode != SS_MODE_TCP_ONLY;
	/* ss-local keeps TCP for SOCKS5 even in udp_only: UDP ASSOCIATE needs it. */
	sh->tcp = cfg->mode != SS_MODE_UDP_ONLY || cfg->prog == SS_PROG_LOCAL;
	for (unsigned i = 0; i < count; i++)
		pthread_mutex_init(&sh->w[i].handoff.lock, NULL);
	shared_limits(sh);
	if ((rc = ss_doors_init(&sh->doors, cfg, err, errlen)) < 0 ||
	    (cfg->prog == SS_PROG_SERVER && (rc = shared_server(sh, prev, err, errlen)) < 0) ||
	    (cfg->acl[0] && (rc = shared_acl(sh, err, errlen)) < 0) ||
	    (rc = shared_plugins(sh, err, errlen)) < 0) {
		ss_shared_free(sh);
		return rc;
	}
	if (prev) {
		sh->older = prev;
		prev->newer = sh;
	}
	*out = sh;
	return 0;
}

/* What sh counted, and what was carried into it, to the newest of its
 * chain; sh leaves the chain. */
static void shared_leave_chain(ss_shared_t *sh)
{
	ss_shared_t *n = sh->newer;

	if (n) {
		while (n->newer)
			n = n->newer;
		ss_figures_fold(&n->fig[n->count], &n->fig_away, &n->fig_layout, sh->fig,
				sh->count + 1, &sh->fig_layout);
		ss_figures_fold_row(&n->fig_away, &sh->fig_away);
		sh->newer->older = sh->older;
	}
	if (sh->older)
		sh->older->newer = sh->newer;
	sh->older = sh->newer = NULL;
}

void ss_shared_figures(const ss_shared_t *sh, size_t port, size_t user, ss_fig_sum_t *out)
{
	memset(out, 0, sizeof(*out));
	for (const ss_shared_t *o = sh; o; o = o->older)
		ss_figures_add(o->fig, o->count + 1, &o->fig_layout, &sh->fig_layout, port, user,
			       out);
	ss_figures_clamp(out);
}

void ss_shared_carried(const ss_shared_t *sh, ss_fig_sum_t *out)
{
	memset(out, 0, sizeof(*out));
	ss_figures_add_all(&sh->fig[sh->count], 1, &sh->fig_layout, out);
	ss_figures_add_row(out, &sh->fig_away);
	for (const ss_shared_t *o = sh->older; o; o = o->older) {
		ss_figures_add_all(o->fig, o->count + 1, &o->fig_layout, out);
		ss_figures_add_row(out, &o->fig_away);
	}
	ss_figures_clamp(out);
}

void ss_shared_free(ss_shared_t *sh)
{
	if (!sh)
		return;
	if (sh->fig)
		shared_leave_chain(sh);
	for (size_t i = 0; i < sh->n_plugins; i++)
		ss_plugin_free(&sh->plugins[i]);
	for (unsigned i = 0; i < sh->count; i++) {
		ss_udp_inbox_free(&sh->w[i].inbox);
		pthread_mutex_destroy(&sh->w[i].handoff.lock);
	}
	ss_udp_sessions_unref(sh->sessions);
	ss_acl_free(sh->acl);
	ss_codec_free(&sh->codec);
	ss_figures_free(sh->fig, sh->count + 1);
	ss_doors_free(&sh->doors);
	free(sh->fig);
	free(sh->w);
	free(sh);
}

/* ---- connections handed between workers ---- */

int ss_shared_lighter(ss_shared_t *sh, unsigned me)
{
	unsigned mine = atomic_load_explicit(&sh->w[me].load, memory_order_relaxed), least = mine;
	int to = -1;

	for (unsigned i = 0; i < sh->count; i++) {
		unsigned l = atomic_load_explicit(&sh->w[i].load, memory_order_relaxed);
		if (i != me && l < least && l + 2 < sh->max_conns) {
			least = l;
			to = (int)i;
		}
	}
	return least + 1 < mine ? to : -1;
}

bool ss_shared_hand_off(ss_shared_t *sh, unsigned to, int fd, const struct sockaddr *peer,
			socklen_t len)
{
	ss_handoff_t *h = &sh->w[to].handoff;
	bool queued = false;

	pthread_mutex_lock(&h->lock);
	if (h->open && h->n < SS_HANDOFF_SLOTS) {
		unsigned i = (h->head + h->n++) % SS_HANDOFF_SLOTS;
		h->q[i].fd = fd;
		h->q[i].len = len < sizeof(h->q[i].peer) ? len : sizeof(h->q[i].peer);
		memcpy(&h->q[i].peer, peer, h->q[i].len);
		queued = true;
		/* Counted before its worker can take it and count it down. */
		ss_shared_load(sh, to, 1);
	}
	pthread_mutex_unlock(&h->lock);
	if (queued)
		ev_async_send(h->loop, &h->wake);
	return queued;
}

void ss_shared_handoff_init(ss_shared_t *sh, unsigned i, struct ev_loop *loop,
			    void (*cb)(struct ev_loop *, ev_async *, int), void *data)
{
	ss_handoff_t *h = &sh->w[i].handoff;

	h->loop = loop;
	ev_async_init(&h->wake, cb);
	h->wake.data = data;
}

void ss_shared_handoff_open(ss_shared_t *sh, unsigned i)
{
	ss_handoff_t *h = &sh->w[i].handoff;

	ev_async_start(h->loop, &h->wake);
	pthread_mutex_lock(&h->lock);
	h->open = true;
	pthread_mutex_unlock(&h->lock);
}

bool ss_shared_handoff_pop(ss_shared_t *sh, unsigned i, int *fd, struct sockaddr_storage *peer,
			   socklen_t *len)
{
	ss_handoff_t *h = &sh->w[i].handoff;
	bool got = false;

	pthread_mutex_lock(&h->lock);
	if (h->n) {
		*fd = h->q[h->head].fd;
		*len = h->q[h->head].len;
		memcpy(peer, &h->q[h->head].peer, *len);
		h->head = (h->head + 1) % SS_HANDOFF_SLOTS;
		h->n--;
		got = true;
	}
	pthread_mutex_unlock(&h->lock);
	return got;
}

void ss_shared_handoff_close(ss_shared_t *sh, unsigned i)
{
	ss_handoff_t *h = &sh->w[i].handoff;

	pthread_mutex_lock(&h->lock);
	h->open = false;
	pthread_mutex_unlock(&h->lock);
	if (h->loop)
		ev_async_stop(h->loop, &h->wake);
}
