/* SPDX-License-Identifier: MIT */
/* Server entries: -s, --server-url and the file's "server", "servers" and
 * "server_url" into ss_config_server_t, then each client entry's method, key
 * and plugin, its own or the top-level ones. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "crypto/primitives.h"
#include "proto/url.h"

ss_config_server_t *ss_cfg_new_server(ss_config_t *cfg, const char *origin, char *err,
				      size_t errlen)
{
	ss_config_server_t *e;

	if (cfg->n_servers == SS_MAX_SERVERS) {
		ss_cfg_err(err, errlen, "too many servers (at most %d) at %s", SS_MAX_SERVERS,
			   origin);
		return NULL;
	}
	e = &cfg->servers[cfg->n_servers];
	memset(e, 0, sizeof(*e));
	snprintf(e->origin, sizeof(e->origin), "%s", origin);
	return e;
}

void ss_cfg_wipe_servers(ss_config_t *cfg)
{
	for (size_t i = 0; i < SS_MAX_SERVERS; i++) {
		ss_config_server_t *e = &cfg->servers[i];
		ss_wipe(e->key, sizeof(e->key));
		ss_wipe(&e->psks, sizeof(e->psks));
		ss_wipe(e->password, sizeof(e->password));
		ss_wipe(e->key_b64, sizeof(e->key_b64));
	}
}

/* A SIP002 URL's fields into a new entry: its own method, password,
 * plugin and tag. The plugin is marked as the URL's, so that it is only
 * ever run as a program name (the parser has refused anything else). */
int ss_cfg_add_url_entry(ss_config_t *cfg, const ss_url_t *u, const char *origin,
			 const char *name, char *err, size_t errlen)
{
	ss_config_server_t *e;
	char why[512];

	if (!(e = ss_cfg_new_server(cfg, origin, err, errlen)))
		return -EINVAL;
	if (ss_method_lookup(u->method, &e->method, why, sizeof(why)) != 0)
		return ss_cfg_err(err, errlen, "%s: the method: %s", name, why);
	memcpy(e->host, u->host, sizeof(e->host));
	e->port = u->port;
	snprintf(e->tag, sizeof(e->tag), "%s", u->tag);
	memcpy(e->password, u->password, sizeof(e->password));
	memcpy(e->plugin, u->plugin, sizeof(e->plugin));
	memcpy(e->plugin_opts, u->plugin_opts, sizeof(e->plugin_opts));
	e->plugin_from_url = true;
	e->own_method = e->own_secret = e->own_plugin = e->own_plugin_opts = true;
	cfg->n_servers++;
	return 0;
}

static int server_from_url(ss_config_t *cfg, const char *text, const char *origin, char *err,
			   size_t errlen)
{
	char where[96], why[512];
	ss_url_t u;
	int rc;

	if (ss_url_parse(text, &u, why, sizeof(why)) < 0)
		return ss_cfg_err(err, errlen, "%s: %s", origin, why);
	snprintf(where, sizeof(where), "%s: ss:// URL", origin);
	rc = ss_cfg_add_url_entry(cfg, &u, origin, where, err, errlen);
	ss_url_clear(&u);
	return rc;
}

int ss_cfg_add_server(ss_config_t *cfg, const char *text, const char *origin, bool url_only,
		      char *err, size_t errlen)
{
	bool url = strncasecmp(text, "ss://", 5) == 0;
	ss_config_server_t *e;
	ss_host_port_t hp;

	if (url && cfg->prog == SS_PROG_SERVER)
		return ss_cfg_err(err, errlen,
				  "%s: ss-server listens on addresses; an ss:// URL is for "
				  "ss-local, ss-tunnel and ss-redir",
				  origin);
	if (url)
		return server_from_url(cfg, text, origin, err, errlen);
	if (url_only)
		return ss_cfg_err(err, errlen,
				  "%s: ss:// URL: it does not start with ss:// ('%.64s')", origin,
				  text);
	if (ss_cfg_host_port(text, &hp, origin, err, errlen) != 0)
		return -EINVAL;
	if (!(e = ss_cfg_new_server(cfg, origin, err, errlen)))
		return -EINVAL;
	memcpy(e->host, hp.host, sizeof(e->host));
	e->port = hp.port;
	cfg->n_servers++;
	return 0;
}

/* How messages name entry i: "server 2 (\"servers\"[1], tag)". */
static const char *entry_name(const ss_config_t *cfg, size_t i, char *buf, size_t cap)
{
	const ss_config_server_t *e = &cfg->servers[i];

	if (e->tag[0])
		snprintf(buf, cap, "server %zu (%s, \"%.32s\")", i + 1, e->origin, e->tag);
	else
		snprintf(buf, cap, "server %zu (%s)", i + 1, e->origin);
	return buf;
}

/* A client entry's method, key and plugin: its own, or the top-level ones.
 * --plugin, --plugin-opts and --plugin-mode given on the command line are
 * the exception: they replace what an entry (a URL, a "servers" object)
 * says, as the command line overrides the configuration; the plugin the
 * user names there is then the user's own text, no longer the URL's. The
 * secret text is wiped once the key is made. */
int ss_cfg_finish_entry(ss_config_t *cfg, size_t i, char *err, size_t errlen)
{
	ss_config_server_t *e = &cfg->servers[i];
	bool cli_plugin = cfg->cli_set & ss_cfg_bit(SS_CF_PLUGIN);
	bool cli_opts = cfg->cli_set & ss_cfg_bit(SS_CF_PLUGIN_OPTS);
	bool cli_mode = cfg->cli_set & ss_cfg_bit(SS_CF_PLUGIN_MODE);
	char who[256], why[512];
	int rc;

	if (!e->own_method)
		e->method = cfg->method;
	if (!e->own_secret) {
		memcpy(e->password, cfg->password, sizeof(e->password));
		memcpy(e->key_b64, cfg->key_b64, sizeof(e->key_b64));
	}
	/* Another plugin's options would mean nothing to this one; a program
	 * named anew on the command line keeps the entry's options, which
	 * describe the server's end, unless options are given there too. */
	if (cli_opts || (!e->own_plugin_opts && !e->own_plugin))
		memcpy(e->plugin_opts, cfg->plugin_opts, sizeof(e->plugin_opts));
	if (cli_plugin || !e->own_plugin) {
		memcpy(e->plugin, cfg->plugin, sizeof(e->plugin));
		e->plugin_from_url = false;
	}
	if (cli_mode || !e->own_plugin_mode)
		e->plugin_mode = cfg->plugin_mode;
	if (e->plugin[0] &&
	    ss_cfg_plugin_carries(cfg, e->plugin, e->plugin_mode, &e->plugin_tcp, &e->plugin_udp,
				  entry_name(cfg, i, who, sizeof(who)), err, errlen) != 0)
		return -EINVAL;
	rc = ss_cfg_derive_key(cfg->prog, e->method, e->password, e->key_b64, e->key, &e->psks,
			       &e->key_ignored, why, sizeof(why));
	ss_wipe(e->password, sizeof(e->password));
	ss_wipe(e->key_b64, sizeof(e->key_b64));
	/* A lone server given as a host is the program's, as in libev. */
	if (rc != 0 && cfg->n_servers == 1 && !e->own_method && !e->own_secret)
		return ss_cfg_err(err, errlen, "%s", why);
	if (rc != 0)
		return ss_cfg_err(err, errlen, "%s: %s", entry_name(cfg, i, who, sizeof(who)), why);
	return 0;
}

int ss_cfg_finish_servers(ss_config_t *cfg, char *err, size_t errlen)
{
	char who[256];

	/* libev always wants -p; an entry that carries its own port does not
	 * need it here. */
	for (size_t i = 0; i < cfg->n_servers; i++) {
		if (cfg->servers[i].port || cfg->server_port)
			continue;
		if (cfg->n_servers == 1)
			return ss_cfg_err(err, errlen,
					  "missing server port (-p or \"server_port\")");
		return ss_cfg_err(err, errlen, "%s: missing server port (-p or \"server_port\")",
				  entry_name(cfg, i, who, sizeof(who)));
	}
	if (cfg->prog == SS_PROG_SERVER)
		return 0;
	for (size_t i = 0; i < cfg->n_servers; i++)
		if (ss_cfg_finish_entry(cfg, i, err, errlen) != 0)
			return -EINVAL;
	return 0;
}
