/* SPDX-License-Identifier: MIT */
/* ss-server --print-url: the ss:// URLs (SIP002) a client needs to use this
 * server's configuration. */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "crypto/primitives.h"
#include "proto/url.h"

/* Whether a listen address is a wildcard: no client can reach it by it. */
static bool url_wildcard(const char *host)
{
	static const uint8_t zero[16];
	uint8_t a[16];

	if (!host[0])
		return true;
	if (inet_pton(AF_INET, host, a) == 1)
		return memcmp(a, zero, 4) == 0;
	return inet_pton(AF_INET6, host, a) == 1 && memcmp(a, zero, 16) == 0;
}

static void url_b64(const uint8_t *key, size_t len, char *out, size_t cap)
{
	sodium_bin2base64(out, cap, key, len, sodium_base64_VARIANT_ORIGINAL);
}

/* The password a client gives: libev's password for SIP004, the PSK for
 * SIP022 (behind the server's identity PSK for a user), none for none. */
static int url_secret(const ss_config_t *cfg, const ss_config_user_t *user, char *out, size_t cap,
		      char *err, size_t errlen)
{
	const ss_method_t *m = cfg->method;
	size_t n;

	out[0] = '\0';
	if (m->kind == SS_METHOD_NONE)
		return 0;
	if (m->kind == SS_METHOD_2022) {
		url_b64(cfg->key, m->key_len, out, cap);
		if (user) {
			n = strlen(out);
			out[n++] = ':';
			url_b64(user->key, m->key_len, out + n, cap - n);
		}
		return 0;
	}
	if (user && !user->password[0])
		return ss_cfg_err(
		    err, errlen,
		    "--print-url: a URL carries the password, and the user \"%s\" has "
		    "a key (\"key\"); give its \"password\" instead",
		    user->name);
	if (!user && !cfg->password[0])
		return ss_cfg_err(err, errlen,
				  "--print-url: a URL carries the password, and this server has a "
				  "key (--key/\"key\"); give its password (-k) instead");
	snprintf(out, cap, "%s", user ? user->password : cfg->password);
	return 0;
}

/* The plugin a client runs against this server's, and its options: the
 * file's name (the client's path is its own), obfs-server's client half
 * obfs-local, Debian's ss-v2ray-plugin as v2ray-plugin, and without the options only a server takes
 * (v2ray-plugin's server, cert and key; obfs-server's failover). Other plugins go as they are:
 * SIP003 names the same plugin on both sides. */
static void url_client_plugin(const ss_config_t *cfg, ss_url_t *u)
{
	static const struct {
		const char *server, *client;
		const char *drop[3]; /* option names, with or without a value */
	} known[] = {
	    {"obfs-server", "obfs-local", {"failover", NULL, NULL}},
	    {"v2ray-plugin", "v2ray-plugin", {"server", "cert", "key"}},
	    /* Debian's name for it; apps know it as v2ray-plugin. */
	    {"ss-v2ray-plugin", "v2ray-plugin", {"server", "cert", "key"}},
	};
	const char *base = strrchr(cfg->plugin, '/');
	const char *drop[3] = {NULL, NULL, NULL};
	size_t n = 0;

	base = base ? base + 1 : cfg->plugin;
	snprintf(u->plugin, sizeof(u->plugin), "%s", base);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(base, known[i].server) == 0) {
			snprintf(u->plugin, sizeof(u->plugin), "%s", known[i].client);
			memcpy(drop, known[i].drop, sizeof(drop));
		}
	/* The options, ';'-separated, less those dropped. */
	for (const char *o = cfg->plugin_opts; *o;) {
		const char *end = strchr(o, ';');
		size_t len = end ? (size_t)(end - o) : strlen(o);
		size_t name = strcspn(o, "=;");
		bool keep = len > 0;

		for (size_t d = 0; d < 3 && drop[d] && keep; d++)
			keep = !(name == strlen(drop[d]) && strncmp(o, drop[d], name) == 0);
		if (keep && n + len + 2 < sizeof(u->plugin_opts)) {
			if (n)
				u->plugin_opts[n++] = ';';
			memcpy(u->plugin_opts + n, o, len);
			n += len;
			u->plugin_opts[n] = '\0';
		}
		o += len + (end != NULL);
	}
}

int ss_config_share_urls(const ss_config_t *cfg, ss_share_fn fn, void *arg, char *err,
			 size_t errlen)
{
	size_t users = cfg->n_users ? cfg->n_users : 1;
	bool placeholder_done = false;
	char text[8192];
	ss_url_t u;
	int rc = 0;

	/* A client takes nothing but a program's name from a URL. */
	memset(&u, 0, sizeof(u));
	if (cfg->plugin[0])
		url_client_plugin(cfg, &u);
	if (u.plugin[0] && !ss_url_plugin_name_ok(u.plugin))
		return ss_cfg_err(
		    err, errlen,
		    "--print-url: a URL names its plugin by a program name alone, and "
		    "'%.64s' is not one (its arguments would go in --plugin-opts)",
		    u.plugin);
	for (size_t i = 0; i < cfg->n_servers && rc == 0; i++) {
		const ss_config_server_t *e = &cfg->servers[i];
		bool wild = url_wildcard(e->host);
		bool dup = false;

		/* One URL per address a client can use. */
		for (size_t j = 0; j < i; j++)
			dup = dup || (strcmp(cfg->servers[j].host, e->host) == 0 &&
				      cfg->servers[j].port == e->port);
		if (dup || (wild && placeholder_done))
			continue;
		placeholder_done = placeholder_done || wild;
		for (size_t k = 0; k < users && rc == 0; k++) {
			const ss_config_user_t *user = cfg->n_users ? &cfg->users[k] : NULL;

			memset(&u, 0, sizeof(u));
			snprintf(u.method, sizeof(u.method), "%s",
				 (user ? user->method : cfg->method)->name);
			snprintf(u.host, sizeof(u.host), "%s", wild ? SS_URL_PLACEHOLDER : e->host);
			u.port = e->port ? e->port : cfg->server_port;
			if (cfg->plugin[0])
				url_client_plugin(cfg, &u);
			if (user)
				snprintf(u.tag, sizeof(u.tag), "%s", user->name);
			rc = url_secret(cfg, user, u.password, sizeof(u.password), err, errlen);
			if (rc == 0 && ss_url_format(&u, text, sizeof(text)) == 0)
				rc = ss_cfg_err(err, errlen, "--print-url: the URL is too long");
			if (rc == 0)
				fn(arg, text, wild, user ? user->name : NULL);
			ss_url_clear(&u);
			ss_wipe(text, sizeof(text));
		}
	}
	return rc;
}
