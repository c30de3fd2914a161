/* SPDX-License-Identifier: MIT */
/* --check: everything start-up would find wrong, without starting. */

#include "program/check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <string.h>

#include "codec/codec.h"
#include "config/config_internal.h"
#include "net/plugin.h"
#include "net/resolver.h"
#include "net/sock.h"
#include "proto/acl.h"
#include "proto/httpc.h"
#include "util/log.h"
#include "util/proc.h"

static const char *const check_modes[] = {
    [SS_MODE_TCP_ONLY] = "tcp_only",
    [SS_MODE_TCP_AND_UDP] = "tcp_and_udp",
    [SS_MODE_UDP_ONLY] = "udp_only",
};

void ss_check_warnings(const ss_config_t *cfg, FILE *f)
{
	size_t n = cfg->n_warnings < SS_CONFIG_WARN_MAX ? cfg->n_warnings : SS_CONFIG_WARN_MAX;

	for (size_t i = 0; i < n; i++) {
		if (f)
			fprintf(f, "%s%s: warning: %s\n",
				f == stderr ? ss_log_stderr_prefix(SS_LOG_WARN) : "",
				cfg->prog_name, cfg->warnings[i]);
		else
			ss_warn("%s", cfg->warnings[i]);
	}
	if (cfg->n_warnings > n && f)
		fprintf(f, "%s%s: warning: %zu more\n",
			f == stderr ? ss_log_stderr_prefix(SS_LOG_WARN) : "", cfg->prog_name,
			cfg->n_warnings - n);
	else if (cfg->n_warnings > n)
		ss_warn("%zu more warnings", cfg->n_warnings - n);
}

/* One name lookup through the program's own resolver. */
typedef struct check_lookup {
	ss_resolve_req_t req;
	int status;
	bool done;
	struct sockaddr_storage addr;
} check_lookup_t;

static void check_resolved(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	check_lookup_t *l = arg;

	l->status = status;
	l->done = true;
	if (status == 0 && len <= sizeof(l->addr))
		memcpy(&l->addr, sa, len);
}

static bool check_is_literal(const char *host)
{
	unsigned char tmp[16];

	return inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
}

/* A client's server: where it is, its method and plugin (found on disk),
 * and the address its name has now. */
static int check_server(const ss_config_t *cfg, size_t i, ss_resolver_t *r, FILE *out, char *err,
			size_t errlen)
{
	const ss_config_server_t *s = &cfg->servers[i];
	uint16_t port = s->port ? s->port : cfg->server_port;
	char path[4096], where[SS_ADDR_STRLEN], why[512];
	check_lookup_t l = {0};

	fprintf(out, "server %zu: %s%s%s port %u, method %s%s%s%s\n", i + 1,
		strchr(s->host, ':') ? "[" : "", s->host, strchr(s->host, ':') ? "]" : "",
		(unsigned)port, s->method->name, s->tag[0] ? " (" : "", s->tag,
		s->tag[0] ? ")" : "");
	if (s->plugin[0]) {
		if (ss_plugin_locate(s->plugin, s->plugin_from_url, path, sizeof(path), why,
				     sizeof(why)) < 0)
			return ss_cfg_err(err, errlen, "server %zu: %s", i + 1, why);
		const char *base = strrchr(path, '/');
		/* A URL's plugin found under Debian's name for it. */
		bool renamed = s->plugin_from_url && strcmp(base ? base + 1 : path, s->plugin) != 0;
		fprintf(out, "  plugin %s (%s%s), mode %s%s%s\n", s->plugin, path,
			renamed ? ", Debian's name for it" : "", check_modes[s->plugin_mode],
			s->plugin_opts[0] ? ", options " : "", s->plugin_opts);
		/* The plugin gets the name as configured; we never look it up. */
		return 0;
	}
	if (check_is_literal(s->host))
		return 0;
	ss_resolver_lookup(r, &l.req, s->host, port, check_resolved, &l);
	while (!l.done)
		ev_run(r->loop, EVRUN_ONCE);
	if (l.status < 0)
		return ss_cfg_err(
		    err, errlen, "server %zu: cannot resolve '%s': %s", i + 1, s->host,
		    l.status == -EHOSTUNREACH ? "no address for that name" : strerror(-l.status));
	fprintf(out, "  %s is at %s now\n", s->host,
		ss_sockaddr_format((struct sockaddr *)&l.addr, where, sizeof(where)));
	return 0;
}

static int check_listen(const ss_config_t *cfg, const char *host, uint16_t port, FILE *out,
			char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char where[SS_ADDR_STRLEN];

	if (ss_sock_resolve_startup(host, port, cfg->ipv6_first, true, &ss, &len, err, errlen) < 0)
		return -EINVAL;
	fprintf(out, "listen: %s (%s)\n",
		ss_sockaddr_format((struct sockaddr *)&ss, where, sizeof(where)),
		check_modes[cfg->mode]);
	return 0;
}

static int check_acl(const ss_config_t *cfg, FILE *out, char *err, size_t errlen)
{
	ss_acl_t *acl = NULL;
	ss_acl_stats_t st;
	const ss_acl_list_stats_t *l[3];
	const char *names[3];
	bool server = cfg->prog == SS_PROG_SERVER;

	if (!cfg->acl[0])
		return 0;
	char why[512];

	if (ss_acl_load(&acl, cfg->acl, why, sizeof(why)) < 0)
		return ss_cfg_err(err, errlen, "ACL file (--acl/\"acl\"): %s", why);
	ss_acl_stats(acl, &st);
	fprintf(out, "acl: %s, default %s\n", cfg->acl,
		ss_acl_default(acl) == SS_ACL_PROXY ? (server ? "accept" : "proxy")
						    : (server ? "reject" : "bypass"));
	l[0] = &st.bypass, names[0] = server ? "reject" : "bypass";
	l[1] = &st.proxy, names[1] = server ? "accept" : "proxy";
	l[2] = &st.block, names[2] = "outbound block";
	for (size_t i = 0; i < 3; i++)
		fprintf(out, "  %s list: %zu IPv4, %zu IPv6, %zu domains, %zu regexes\n", names[i],
			l[i]->ipv4, l[i]->ipv6, l[i]->domains, l[i]->regexes);
	ss_acl_free(acl);
	return 0;
}

static int check_all(const ss_config_t *cfg, ss_resolver_t *r, FILE *out, char *err, size_t errlen)
{
	char path[4096], why[512], what[256];
	bool server = cfg->prog == SS_PROG_SERVER;

	if (server) {
		fprintf(out, "method: %s (%s)\n", cfg->method->name,
			ss_codec_impl(ss_codec_backend(), cfg->method, what, sizeof(what)));
		if (cfg->n_users)
			fprintf(out, "users: %zu\n", cfg->n_users);
		for (size_t i = 0; i < cfg->n_servers; i++) {
			uint16_t port =
			    cfg->servers[i].port ? cfg->servers[i].port : cfg->server_port;
			if (check_listen(cfg, cfg->servers[i].host, port, out, err, errlen) < 0)
				return -EINVAL;
		}
		if (cfg->plugin[0]) {
			if (ss_plugin_locate(cfg->plugin, false, path, sizeof(path), why,
					     sizeof(why)) < 0)
				return ss_cfg_err(err, errlen, "%s", why);
			fprintf(out, "plugin: %s (%s), mode %s%s%s\n", cfg->plugin, path,
				check_modes[cfg->plugin_mode],
				cfg->plugin_opts[0] ? ", options " : "", cfg->plugin_opts);
		}
		fprintf(out, "targets: %s\n",
			cfg->block_private
			    ? "loopback, private, link-local and other special-purpose "
			      "addresses refused (block_private)"
			    : "any address, private ones included (block_private off)");
	} else {
		if (check_listen(cfg, cfg->local_addr, cfg->local_port, out, err, errlen) < 0)
			return -EINVAL;
		/* How many, never who: names can be secrets too. */
		if (cfg->n_socks_creds)
			fprintf(out, "SOCKS5 login: %zu users\n", cfg->n_socks_creds);
		if (cfg->prog == SS_PROG_TUNNEL) {
			char to[SS_ADDR_STRLEN];
			fprintf(out, "tunnel to: %s\n",
				ss_addr_format(&cfg->tunnel_addr, to, sizeof(to)));
		}
		if (cfg->have_dns) {
			char at[SS_ADDR_STRLEN], remote[SS_ADDR_STRLEN], local[SS_ADDR_STRLEN];
			fprintf(out, "DNS relay: %s, proxied names to %s, the others to %s\n",
				ss_addr_format(&cfg->dns_addr, at, sizeof(at)),
				ss_addr_format(&cfg->remote_dns, remote, sizeof(remote)),
				cfg->have_local_dns
				    ? ss_addr_format(&cfg->local_dns, local, sizeof(local))
				    : "the first name server of /etc/resolv.conf");
		}
		if (cfg->prog == SS_PROG_REDIR)
			fprintf(out, "transparent proxy: TCP by %s%s\n",
				cfg->tcp_tproxy ? "TPROXY" : "REDIRECT",
				cfg->mode != SS_MODE_TCP_ONLY ? ", UDP by TPROXY" : "");
		for (size_t i = 0; i < cfg->n_servers; i++)
			if (check_server(cfg, i, r, out, err, errlen) < 0)
				return -EINVAL;
		/* Not fetched here: the program does that at start. */
		if (cfg->online_url[0]) {
			char shown[SS_HTTPC_SHOWN_MAX];
			fprintf(out,
				"online configuration: %s, fetched at start and every %d s, its "
				"server checked against %s\n",
				ss_httpc_url_shown(cfg->online_url, shown, sizeof(shown)),
				cfg->online_interval,
				cfg->ca_file[0] ? cfg->ca_file : "the system's CA bundle");
		}
	}
	if (cfg->user[0]) {
		uid_t uid;
		gid_t gid;
		if (ss_proc_find_user(cfg->user, &uid, &gid, err, errlen) < 0)
			return -EINVAL;
		fprintf(out, "user: %s (uid %u, gid %u) after start-up\n", cfg->user, (unsigned)uid,
			(unsigned)gid);
	}
	fprintf(out, "mode: %s\n", check_modes[cfg->mode]);
	fprintf(out, "workers: %d%s\n", cfg->workers,
		cfg->workers > 1 ? ", each a loop on a thread of its own" : "");
	return check_acl(cfg, out, err, errlen);
}

int ss_check_run(const ss_config_t *cfg, FILE *out, char *err, size_t errlen)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	ss_resolver_t r;
	int rc;

	if (!loop)
		return ss_cfg_err(err, errlen, "cannot create an event loop");
	rc = ss_resolver_init(&r, loop, cfg->nameserver, cfg->ipv6_first, err, errlen);
	if (rc == 0) {
		fprintf(out, "%s %s: checking the configuration%s%s%s\n", cfg->prog_name,
			SS_VERSION, cfg->config_file[0] ? " from " : "", cfg->config_file,
			cfg->config_default ? " (the default file: no settings given)" : "");
		rc = check_all(cfg, &r, out, err, errlen);
		ss_resolver_free(&r);
	}
	ev_loop_destroy(loop);
	if (rc == 0)
		fprintf(out, "%s: the configuration is good\n", cfg->prog_name);
	fflush(out);
	return rc < 0 ? rc : 0;
}
