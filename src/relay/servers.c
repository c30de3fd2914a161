/* SPDX-License-Identifier: MIT */
#include "relay/servers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "codec/secret.h"
#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"

/* A number in [0, 1) for the jitter of waits. */
static double servers_rnd(void)
{
	uint32_t r;

	ss_secret_random(&r, sizeof(r));
	return r / 4294967296.0;
}

static ev_tstamp servers_now(const ss_servers_t *set)
{
	return ev_now(set->inst->loop);
}

static const char *servers_addr_text(const ss_server_t *s, char *buf, size_t len)
{
	if (!s->addr_len)
		return "no address";
	return ss_sockaddr_format((const struct sockaddr *)&s->addr, buf, len);
}

/* --- health: what the traffic says, and the log lines that say it --- */

static void servers_health_log(ss_server_t *s, ss_health_change_t ch, const char *why)
{
	ss_health_t *h = &s->health;
	ev_tstamp now = servers_now(s->set);

	switch (ch) {
	case SS_HEALTH_WENT_DOWN:
		ss_notice("server %s: down (%s); a connection tries it again in %.1f s", s->name,
			  why, h->retry_at - now);
		break;
	case SS_HEALTH_STILL_DOWN:
		ss_info("server %s: still down (%s); next try in %.1f s", s->name, why,
			h->retry_at - now);
		break;
	case SS_HEALTH_CAME_UP:
		ss_notice("server %s: up again (%s)", s->name, why);
		break;
	case SS_HEALTH_SAME:
		break;
	}
}

static void servers_lookup(ss_server_t *s);

/* After a failure: the name may have moved. Looked up now, or as soon as
 * SS_RESOLVE_AFTER_FAILURE has passed since the last lookup. */
static void servers_lookup_soon(ss_server_t *s)
{
	struct ev_loop *loop = s->set->inst->loop;
	double wait = s->looked_up + SS_RESOLVE_AFTER_FAILURE - servers_now(s->set);

	if (s->literal || !s->direct || s->resolving || s->soon || !s->set->running)
		return;
	ev_timer_stop(loop, &s->refresh);
	if (wait <= 0) {
		servers_lookup(s);
		return;
	}
	s->soon = true;
	ev_timer_set(&s->refresh, wait, 0.);
	ev_timer_start(loop, &s->refresh);
}

bool ss_servers_connected(ss_servers_t *set, int i, int err)
{
	ss_server_t *s = &set->s[i];
	ev_tstamp now = servers_now(set);
	uint32_t moves = s->moves;
	char why[96];

	if (!err) {
		servers_health_log(s, ss_health_connected(&s->health, now),
				   "it accepted a connect");
		return false;
	}
	snprintf(why, sizeof(why), "connect: %s", strerror(err));
	servers_health_log(s, ss_health_failed(&s->health, now, servers_rnd()), why);
	servers_lookup_soon(s);
	return s->moves != moves;
}

void ss_servers_udp_failed(ss_servers_t *set, int i, int err)
{
	ss_server_t *s = &set->s[i];
	char why[96];

	snprintf(why, sizeof(why), "UDP: %s", strerror(err));
	servers_health_log(s, ss_health_failed(&s->health, servers_now(set), servers_rnd()), why);
	servers_lookup_soon(s);
}

void ss_servers_udp_answered(ss_servers_t *set, int i)
{
	ss_server_t *s = &set->s[i];

	if (s->health.down || s->health.strikes)
		servers_health_log(s, ss_health_answered(&s->health, servers_now(set)),
				   "it answered a datagram");
}

/* Targets that answered lately, and through which server: a close without
 * an answer counts against a server only for a target known to work
 * through another one, so a bad target never takes a good server down. */
static uint64_t servers_target_hash(const ss_addr_t *a)
{
	const uint8_t *p = a->atyp == SS_ATYP_DOMAIN ? (const uint8_t *)a->domain : a->v6;
	size_t n = a->atyp == SS_ATYP_DOMAIN ? a->domain_len : a->atyp == SS_ATYP_IPV4 ? 4 : 16;
	uint64_t h = 1469598103934665603ull ^ a->atyp ^ (uint64_t)a->port << 8;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h ? h : 1;
}

void ss_servers_answered(ss_servers_t *set, ss_conn_t *c)
{
	ss_server_t *s = &set->s[c->srv];
	uint64_t h = servers_target_hash(&c->target);
	ss_servers_alive_t *e = &set->alive[h % SS_ALIVE_SLOTS];

	e->hash = h;
	e->at = servers_now(set);
	e->server = s->index;
	if (s->health.down || s->health.strikes)
		servers_health_log(s, ss_health_answered(&s->health, e->at), "it answered");
}

void ss_servers_ended(ss_servers_t *set, ss_conn_t *c)
{
	ss_server_t *s = &set->s[c->srv];
	ev_tstamp now = servers_now(set);
	int err = c->out_err;

	ss_servers_release(set, c->srv, false);
	/* Only a connection that reached the server and that the server
	 * ended, without a byte, says something about the server. */
	if (!c->connected || c->answered || (!c->dir[SS_OUT].eof && !err))
		return;
	if (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == ETIMEDOUT) {
		/* With fast open the connect fails here, at the first write. */
		ss_servers_connected(set, c->srv, err);
		return;
	}
	uint64_t h = servers_target_hash(&c->target);
	const ss_servers_alive_t *e = &set->alive[h % SS_ALIVE_SLOTS];
	if (now - c->srv_since > SS_SILENT_WINDOW || e->hash != h || e->server == s->index ||
	    now - e->at > SS_ALIVE_TTL)
		return;
	servers_health_log(s, ss_health_silent(&s->health, now, servers_rnd()),
			   "it closed connections without an answer to targets another server "
			   "reaches");
}

/* --- picking --- */

int ss_servers_pick(ss_servers_t *set, uint32_t exclude, bool udp, bool *trial)
{
	ss_pick_t p[SS_MAX_SERVERS];
	int i;

	for (size_t k = 0; k < set->n; k++) {
		socklen_t len;
		ss_servers_addr(&set->s[k], udp, &len);
		p[k] = (ss_pick_t){&set->s[k].health, len > 0,
				   udp ? set->s[k].udp_load : set->s[k].tcp_load};
	}
	i = ss_health_pick(p, set->n, exclude, udp ? &set->rr_udp : &set->rr_tcp, servers_now(set),
			   set->inst->connect_timeout, trial);
	if (i >= 0) {
		if (udp)
			set->s[i].udp_load++;
		else
			set->s[i].tcp_load++;
	}
	return i;
}

void ss_servers_release(ss_servers_t *set, int i, bool udp)
{
	uint32_t *load = udp ? &set->s[i].udp_load : &set->s[i].tcp_load;

	if (*load)
		(*load)--;
}

/* A plugin that is being started, or will be after its pause, and then
 * takes connections for its server. */
static bool servers_plugin_coming(const ss_server_t *s)
{
	return s->via_tcp && !s->plugin_up &&
	       (s->plugin->state == SS_PLUGIN_STARTING || s->plugin->state == SS_PLUGIN_WAITING);
}

bool ss_servers_may_change(const ss_servers_t *set, uint32_t tried)
{
	for (size_t i = 0; i < set->n; i++) {
		const ss_server_t *s = &set->s[i];
		if (servers_plugin_coming(s))
			return true;
		if (!s->via_tcp && (s->resolving || s->soon) && (!s->addr_len || (tried >> i & 1)))
			return true;
	}
	return false;
}

void ss_servers_wait(ss_servers_t *set, ss_conn_t *c)
{
	c->srv_wait = true;
	c->srv_next = set->waiting;
	set->waiting = c;
}

void ss_servers_unwait(ss_servers_t *set, ss_conn_t *c)
{
	for (ss_conn_t **pp = &set->waiting; *pp; pp = &(*pp)->srv_next)
		if (*pp == c) {
			*pp = c->srv_next;
			break;
		}
	c->srv_next = NULL;
	c->srv_wait = false;
}

/* A lookup ended: the connections that waited for it go on; a server whose
 * address changed (moved >= 0) may be tried again. */
static void servers_wake(ss_servers_t *set, int moved)
{
	ss_conn_t *c = set->waiting;

	set->waiting = NULL;
	while (c) {
		ss_conn_t *next = c->srv_next;
		c->srv_next = NULL;
		c->srv_wait = false;
		if (moved >= 0)
			c->tried &= ~(1u << moved);
		ss_conn_connect_server(c);
		c = next;
	}
}

/* --- name lookups --- */

static bool servers_same_addr(const ss_server_t *s, const struct sockaddr *sa, socklen_t len)
{
	return s->addr_len == len && memcmp(&s->addr, sa, len) == 0;
}

static void servers_resolved(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	ss_server_t *s = arg;
	ss_servers_t *set = s->set;
	char was[SS_ADDR_STRLEN], now_at[SS_ADDR_STRLEN];
	double wait = SS_RESOLVE_MIN;
	int moved = -1;

	s->resolving = false;
	if (status == -ECANCELED || !set->running)
		return;
	if (status < 0) {
		s->resolve_fails++;
		for (uint32_t k = 1; k < s->resolve_fails && wait < SS_RESOLVE_MAX; k++)
			wait *= 2;
		wait = wait < SS_RESOLVE_MAX ? wait : SS_RESOLVE_MAX;
		if (s->addr_len)
			ss_info("server %s: cannot look up %s again (%s); keeping %s, next try in "
				"%.0f s",
				s->name, s->cfg->host, strerror(-status),
				servers_addr_text(s, was, sizeof(was)), wait);
		else
			ss_warn("server %s: cannot look up %s (%s); next try in %.0f s", s->name,
				s->cfg->host, strerror(-status), wait);
	} else {
		s->resolve_fails = 0;
		if (s->req.ttl >= 0)
			wait = s->req.ttl;
		wait = wait < SS_RESOLVE_MIN   ? SS_RESOLVE_MIN
		       : wait > SS_RESOLVE_MAX ? SS_RESOLVE_MAX
					       : wait;
		if (!servers_same_addr(s, sa, len)) {
			ss_sockaddr_format(sa, now_at, sizeof(now_at));
			if (s->addr_len)
				ss_notice("server %s: %s is now at %s (was %s)", s->name,
					  s->cfg->host, now_at,
					  servers_addr_text(s, was, sizeof(was)));
			else
				ss_info("server %s: %s is at %s", s->name, s->cfg->host, now_at);
			memcpy(&s->addr, sa, len);
			s->addr_len = len;
			ss_health_reset(&s->health);
			s->moves++;
			if (set->inst->udp.ready && !s->via_udp)
				ss_udp_server_moved(&set->inst->udp, s->index);
			moved = s->index;
		}
	}
	/* Lookups of several servers spread out rather than come in step. */
	wait *= 0.9 + 0.2 * servers_rnd();
	ev_timer_set(&s->refresh, wait, 0.);
	ev_timer_start(set->inst->loop, &s->refresh);
	servers_wake(set, moved);
}

static void servers_lookup(ss_server_t *s)
{
	s->resolving = true;
	s->soon = false;
	s->looked_up = servers_now(s->set);
	ss_resolver_lookup(&s->set->inst->resolver, &s->req, s->cfg->host, s->port,
			   servers_resolved, s);
}

static void servers_refresh_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_server_t *s = w->data;
	(void)loop;
	(void)revents;

	if (!s->resolving)
		servers_lookup(s);
}

/* --- set-up --- */

static void servers_name(ss_server_t *s)
{
	char hp[SS_ADDR_STRLEN];
	const char *h = s->cfg->host;

	snprintf(hp, sizeof(hp), strchr(h, ':') ? "[%s]:%u" : "%s:%u", h, (unsigned)s->port);
	if (s->cfg->tag[0])
		snprintf(s->name, sizeof(s->name), "%u \"%.100s\" %s", s->index + 1u, s->cfg->tag,
			 hp);
	else
		snprintf(s->name, sizeof(s->name), "%u %s", s->index + 1u, hp);
}

int ss_servers_init(ss_servers_t *set, struct ss_instance *inst, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	char what[256];
	int rc;

	memset(set, 0, sizeof(*set));
	set->inst = inst;
	for (size_t i = 0; i < cfg->n_servers; i++) {
		ss_server_t *s = &set->s[i];
		const ss_config_server_t *e = &cfg->servers[i];
		ss_addr_t lit;

		s->set = set;
		s->cfg = e;
		s->index = (uint8_t)i;
		s->port = e->port ? e->port : cfg->server_port;
		s->direct = true;
		servers_name(s);
		ev_init(&s->refresh, servers_refresh_cb);
		s->refresh.data = s;
		set->n = i + 1;
		ss_codec_setup_client(&s->codec, e->method, e->key, &e->psks, inst->be);
		if ((rc = ss_instance_codec_class(inst, &s->codec)) < 0) {
			snprintf(err, errlen, "server %s: cannot set up its codec", s->name);
			return rc;
		}
		s->cls = (uint8_t)rc;
		if (ss_addr_from_host(&lit, e->host, s->port) == 0 && lit.atyp != SS_ATYP_DOMAIN) {
			ss_addr_to_sockaddr(&lit, &s->addr, &s->addr_len);
			s->literal = true;
		}
		if (e->key_ignored)
			ss_warn("server %s: method %s encrypts nothing: the password or key is not "
				"used",
				s->name, e->method->name);
		/* One server: the start-up line says it all. */
		ss_log(cfg->n_servers > 1 ? SS_LOG_NOTICE : SS_LOG_INFO,
		       "server %s: method %s (%s)", s->name, e->method->name,
		       ss_codec_impl(inst->be, e->method, what, sizeof(what)));
	}
	return 0;
}

void ss_servers_set_plugin(ss_servers_t *set, int i, ss_plugin_t *p)
{
	const ss_config_t *cfg = set->inst->cfg;
	ss_server_t *s = &set->s[i];

	s->plugin = p;
	s->via_tcp = s->cfg->plugin_tcp;
	s->via_udp = s->cfg->plugin_udp;
	s->plugin_up = false;
	/* TCP reaches a server unless udp_only (ss-local's TCP then is SOCKS5
	 * alone), UDP unless tcp_only. */
	s->direct = (cfg->mode != SS_MODE_UDP_ONLY && !s->via_tcp) ||
		    (cfg->mode != SS_MODE_TCP_ONLY && !s->via_udp);
}

void ss_servers_plugin_up(ss_servers_t *set, int i, bool up)
{
	ss_server_t *s = &set->s[i];

	if (s->plugin_up == up)
		return;
	s->plugin_up = up;
	if (!up) {
		ss_notice("server %s: its plugin is down; %s until it is up again", s->name,
			  !s->direct   ? "not used"
			  : s->via_tcp ? "not used for TCP"
				       : "not used for UDP");
		return;
	}
	/* A new plugin process: what the old one's traffic taught is
	 * forgotten, and connections waiting for it go on. */
	ss_health_reset(&s->health);
	ss_info("server %s: its plugin is up", s->name);
	servers_wake(set, s->index);
}

bool ss_servers_tcp_reachable(const ss_servers_t *set)
{
	for (size_t i = 0; i < set->n; i++)
		if (!set->s[i].via_tcp || set->s[i].plugin_up)
			return true;
	return set->n == 0;
}

const struct sockaddr *ss_servers_addr(const ss_server_t *s, bool udp, socklen_t *len)
{
	if (udp ? s->via_udp : s->via_tcp) {
		if (!s->plugin_up) {
			*len = 0;
			return NULL;
		}
		return ss_plugin_local(s->plugin, len);
	}
	*len = s->addr_len;
	return (const struct sockaddr *)&s->addr;
}

void ss_servers_start(ss_servers_t *set)
{
	set->running = true;
	for (size_t i = 0; i < set->n; i++)
		if (!set->s[i].literal && set->s[i].direct)
			servers_lookup(&set->s[i]);
}

void ss_servers_stop(ss_servers_t *set)
{
	set->running = false;
	for (size_t i = 0; i < set->n; i++)
		ev_timer_stop(set->inst->loop, &set->s[i].refresh);
}

void ss_servers_free(ss_servers_t *set)
{
	for (size_t i = 0; i < set->n; i++)
		ss_codec_free(&set->s[i].codec);
}
