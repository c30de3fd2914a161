/* SPDX-License-Identifier: MIT */
/* The JSON configuration file, with the keys of shadowsocks-libev 3.3.5.
 * A null value counts as absent. An unknown key is skipped with a warning
 * naming the closest known one (libev skips it silently); the keys libev
 * knows that we leave alone are skipped without one. */

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "crypto/primitives.h"
#include "util/result.h"

#define TIMEOUT_MAX 2147483L /* seconds; fits in an int of milliseconds */

/* Shows a value in a message the way the file spells it (roughly). */
static const char *show(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v)) {
		if (strlen(v->valuestring) > 64)
			snprintf(buf, cap, "\"%.64s...\"", v->valuestring);
		else
			snprintf(buf, cap, "\"%s\"", v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		snprintf(buf, cap, "%.17g", v->valuedouble);
	} else if (cJSON_IsBool(v)) {
		snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v)) {
		snprintf(buf, cap, "an array");
	} else if (cJSON_IsObject(v)) {
		snprintf(buf, cap, "an object");
	} else {
		snprintf(buf, cap, "null");
	}
	return buf;
}

/* libev takes a string or an integer wherever it wants text. */
static const char *text_of(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v) && v->valuedouble > -1e15 && v->valuedouble < 1e15 &&
	    v->valuedouble == (double)(long long)v->valuedouble) {
		snprintf(buf, cap, "%lld", (long long)v->valuedouble);
		return buf;
	}
	return NULL;
}

/* Integer from a number or a string of digits, within [min, max]. */
static int int_of(const cJSON *v, long min, long max, long *out)
{
	char buf[32];
	const char *t = text_of(v, buf, sizeof(buf));

	return t != NULL ? ss_cfg_long(t, min, max, out) : -EINVAL;
}

typedef int (*json_fn)(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen);

static int want_string(const cJSON *v, const char *key, const char **s, char *buf, size_t cap,
		       char *err, size_t errlen)
{
	char shown[96];

	*s = text_of(v, buf, cap);
	if (*s == NULL)
		return ss_cfg_err(err, errlen, "\"%s\" must be a string, not %s", key,
				  show(v, shown, sizeof(shown)));
	return 0;
}

static int copy_string(char *dst, size_t dst_cap, const cJSON *v, const char *key, char *err,
		       size_t errlen)
{
	char buf[32];
	const char *s;

	if (want_string(v, key, &s, buf, sizeof(buf), err, errlen) != 0)
		return -EINVAL;
	if (ss_cfg_copy(dst, dst_cap, s) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" is too long (max %zu bytes)", key,
				  dst_cap - 1);
	return 0;
}

static int port_of(const cJSON *v, uint16_t *port, const char *name, char *err, size_t errlen)
{
	char buf[32], shown[96];
	const char *t = text_of(v, buf, sizeof(buf));

	if (t == NULL || ss_cfg_port(t, port) != 0) {
		if (t == NULL)
			t = show(v, shown, sizeof(shown));
		return ss_cfg_err(err, errlen, "invalid port '%s' for %s (expected 1-65535)", t,
				  name);
	}
	return 0;
}

static int bool_of(const cJSON *v, bool *out, const char *key, char *err, size_t errlen)
{
	char shown[96];

	if (!cJSON_IsBool(v))
		return ss_cfg_err(err, errlen, "\"%s\" must be true or false, not %s", key,
				  show(v, shown, sizeof(shown)));
	*out = cJSON_IsTrue(v);
	return 0;
}

static int mode_of(const cJSON *v, ss_relay_mode_t *mode, const char *key, char *err,
		   size_t errlen);

static int j_server(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	const cJSON *item;

	if (cJSON_IsString(v))
		return ss_cfg_add_server(cfg, v->valuestring, "-s/server", false, err, errlen);
	if (!cJSON_IsArray(v))
		return ss_cfg_err(err, errlen,
				  "\"%s\" must be a string or an array of strings, not %s", key,
				  show(v, shown, sizeof(shown)));
	cJSON_ArrayForEach(item, v)
	{
		if (!cJSON_IsString(item))
			return ss_cfg_err(err, errlen, "\"%s\" entries must be strings, not %s",
					  key, show(item, shown, sizeof(shown)));
		if (ss_cfg_add_server(cfg, item->valuestring, "-s/server", false, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

/* "server_url": one ss:// URL or an array of them. */
static int j_server_url(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96], origin[32];
	const cJSON *item;
	int i = 0;

	if (cfg->prog == SS_PROG_SERVER)
		return ss_cfg_err(
		    err, errlen,
		    "\"%s\" is for ss-local, ss-tunnel and ss-redir; ss-server prints its URL "
		    "with --print-url",
		    key);
	if (cJSON_IsString(v))
		return ss_cfg_add_server(cfg, v->valuestring, "\"server_url\"", true, err, errlen);
	if (!cJSON_IsArray(v))
		return ss_cfg_err(err, errlen,
				  "\"%s\" must be an ss:// URL or an array of them, not %s", key,
				  show(v, shown, sizeof(shown)));
	cJSON_ArrayForEach(item, v)
	{
		snprintf(origin, sizeof(origin), "\"server_url\"[%d]", i++);
		if (!cJSON_IsString(item))
			return ss_cfg_err(err, errlen, "%s must be an ss:// URL, not %s", origin,
					  show(item, shown, sizeof(shown)));
		if (ss_cfg_add_server(cfg, item->valuestring, origin, true, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

/* One key of a "servers" object, with the names shadowsocks-rust reads
 * ("address" and "port" are its older names, "remarks" its tag). */
static const cJSON *entry_item(const cJSON *o, const char *name, const char *alias)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if ((!v || cJSON_IsNull(v)) && alias)
		v = cJSON_GetObjectItemCaseSensitive(o, alias);
	return v && !cJSON_IsNull(v) ? v : NULL;
}

static int entry_string(const cJSON *o, const char *name, const char *alias, char *dst, size_t cap,
			const char *origin, bool secret, char *err, size_t errlen)
{
	const cJSON *v = entry_item(o, name, alias);
	char shown[96];

	if (!v)
		return 0;
	if (!cJSON_IsString(v) && secret)
		return ss_cfg_err(err, errlen, "%s: \"%s\" must be a string", origin, name);
	if (!cJSON_IsString(v))
		return ss_cfg_err(err, errlen, "%s: \"%s\" must be a string, not %s", origin, name,
				  show(v, shown, sizeof(shown)));
	if (ss_cfg_copy(dst, cap, v->valuestring) != 0)
		return ss_cfg_err(err, errlen, "%s: \"%s\" is too long (max %zu bytes)", origin,
				  name, cap - 1);
	return 1;
}

/* The keys a "servers" entry may hold; any other is warned about, as at the
 * top level, and ignored. */
static const char *const entry_keys[] = {
    "server", "address",     "server_port", "port",    "method", "password", "key",
    "plugin", "plugin_opts", "plugin_mode", "remarks", "tag",    "disabled",
};

/* The entry's unknown keys, each warned about with the known key it may be
 * a slip for; returns the first that may be a slip for the server's
 * address, which the entry needs, with *known the key it may be meant as;
 * or NULL. */
static const char *entry_unknown_keys(ss_config_t *cfg, const cJSON *o, const char *origin,
				      const char **known)
{
	const char *address_slip = NULL;
	const cJSON *item;

	cJSON_ArrayForEach(item, o)
	{
		const char *near;
		size_t i = 0;

		while (i < SS_ARRAY_LEN(entry_keys) && strcmp(item->string, entry_keys[i]) != 0)
			i++;
		if (i < SS_ARRAY_LEN(entry_keys))
			continue;
		near = ss_cfg_closest(item->string, entry_keys, SS_ARRAY_LEN(entry_keys));
		if (near != NULL && !address_slip &&
		    (strcmp(near, "server") == 0 || strcmp(near, "address") == 0)) {
			address_slip = item->string;
			*known = near;
		}
		if (near != NULL)
			ss_cfg_warn(cfg, "unknown key \"%.64s\" in %s, did you mean \"%s\"?",
				    item->string, origin, near);
		else
			ss_cfg_warn(cfg, "unknown key \"%.64s\" in %s, ignored", item->string,
				    origin);
	}
	return address_slip;
}

/* One "servers" entry: an object with its own address and, where it says
 * so, method, password or key, plugin and tag; a string is read as a
 * "server" entry (host[:port] or an ss:// URL). */
static int server_object(ss_config_t *cfg, const cJSON *o, const char *origin, char *err,
			 size_t errlen)
{
	const cJSON *v;
	ss_config_server_t *e;
	ss_host_port_t hp;
	char shown[96], host[SS_HOST_MAX + 16];
	const char *slip, *near = NULL;
	int r;

	if (cJSON_IsString(o))
		return ss_cfg_add_server(cfg, o->valuestring, origin, false, err, errlen);
	if (!cJSON_IsObject(o))
		return ss_cfg_err(err, errlen, "%s must be an object, not %s", origin,
				  show(o, shown, sizeof(shown)));
	slip = entry_unknown_keys(cfg, o, origin, &near);
	if ((v = entry_item(o, "disabled", NULL)) && cJSON_IsTrue(v))
		return 0;
	if (v && !cJSON_IsBool(v))
		return ss_cfg_err(err, errlen, "%s: \"disabled\" must be true or false, not %s",
				  origin, show(v, shown, sizeof(shown)));
	r = entry_string(o, "server", "address", host, sizeof(host), origin, false, err, errlen);
	if (r < 0)
		return r;
	if (r == 0 && slip != NULL)
		return ss_cfg_err(err, errlen,
				  "%s: missing \"server\" (the server's address): it has "
				  "\"%.64s\", did you mean \"%s\"?",
				  origin, slip, near);
	if (r == 0)
		return ss_cfg_err(err, errlen, "%s: missing \"server\" (the server's address)",
				  origin);
	if (ss_cfg_host_port(host, &hp, origin, err, errlen) != 0 ||
	    !(e = ss_cfg_new_server(cfg, origin, err, errlen)))
		return -EINVAL;
	memcpy(e->host, hp.host, sizeof(e->host));
	e->port = hp.port;
	if ((v = entry_item(o, "server_port", "port")) && port_of(v, &e->port, origin, err, errlen))
		return -EINVAL;
	if ((v = entry_item(o, "method", NULL))) {
		if (!cJSON_IsString(v))
			return ss_cfg_err(err, errlen, "%s: \"method\" must be a string, not %s",
					  origin, show(v, shown, sizeof(shown)));
		if (ss_method_lookup(v->valuestring, &e->method, err, errlen) != 0)
			return -EINVAL;
		e->own_method = true;
	}
	/* Never echo a secret into a message. */
	if ((r = entry_string(o, "password", NULL, e->password, sizeof(e->password), origin, true,
			      err, errlen)) < 0 ||
	    (r += entry_string(o, "key", NULL, e->key_b64, sizeof(e->key_b64), origin, true, err,
			       errlen)) < 0)
		return -EINVAL;
	e->own_secret = r > 0;
	if ((r = entry_string(o, "plugin", NULL, e->plugin, sizeof(e->plugin), origin, false, err,
			      errlen)) < 0)
		return -EINVAL;
	e->own_plugin = r > 0;
	if ((r = entry_string(o, "plugin_opts", NULL, e->plugin_opts, sizeof(e->plugin_opts),
			      origin, false, err, errlen)) < 0)
		return -EINVAL;
	e->own_plugin_opts = r > 0;
	if (entry_string(o, "remarks", "tag", e->tag, sizeof(e->tag), origin, false, err, errlen) <
	    0)
		return -EINVAL;
	if ((v = entry_item(o, "plugin_mode", NULL))) {
		if (mode_of(v, &e->plugin_mode, "plugin_mode", err, errlen) != 0)
			return -EINVAL;
		e->own_plugin_mode = true;
	}
	cfg->n_servers++;
	return 0;
}

static int j_servers(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96], origin[32];
	const cJSON *item;
	int i = 0;

	if (cfg->prog == SS_PROG_SERVER)
		return ss_cfg_err(
		    err, errlen,
		    "\"%s\" is for ss-local, ss-tunnel and ss-redir; ss-server listens on the "
		    "addresses in \"server\" with one method",
		    key);
	if (!cJSON_IsArray(v))
		return ss_cfg_err(err, errlen, "\"%s\" must be an array of objects, not %s", key,
				  show(v, shown, sizeof(shown)));
	cJSON_ArrayForEach(item, v)
	{
		snprintf(origin, sizeof(origin), "\"servers\"[%d]", i++);
		if (server_object(cfg, item, origin, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

static int j_server_port(ss_config_t *cfg, const cJSON *v, const char *key, char *err,
			 size_t errlen)
{
	(void)key;
	return port_of(v, &cfg->server_port, "-p/server_port", err, errlen);
}

static int j_local_port(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	(void)key;
	return port_of(v, &cfg->local_port, "-l/local_port", err, errlen);
}

static int ip_of(char *dst, size_t cap, int af, const cJSON *v, const char *key, char *err,
		 size_t errlen)
{
	unsigned char tmp[16];

	if (copy_string(dst, cap, v, key, err, errlen) != 0)
		return -EINVAL;
	if (inet_pton(af, dst, tmp) != 1)
		return ss_cfg_err(err, errlen, "\"%s\" must be an %s address, not \"%s\"", key,
				  af == AF_INET ? "IPv4" : "IPv6", dst);
	return 0;
}

static int j_local_v4(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	return ip_of(cfg->local_ipv4_addr, sizeof(cfg->local_ipv4_addr), AF_INET, v, key, err,
		     errlen);
}

static int j_local_v6(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	return ip_of(cfg->local_ipv6_addr, sizeof(cfg->local_ipv6_addr), AF_INET6, v, key, err,
		     errlen);
}

static int j_local_addr(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	if (copy_string(cfg->local_addr, sizeof(cfg->local_addr), v, key, err, errlen) != 0)
		return -EINVAL;
	if (cfg->local_addr[0] == '\0')
		return ss_cfg_err(err, errlen, "\"%s\" must not be empty", key);
	return 0;
}

static int j_password(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char buf[32];
	const char *s;

	if (want_string(v, key, &s, buf, sizeof(buf), err, errlen) != 0)
		return -EINVAL;
	/* Never echo a secret into a message. */
	if (ss_cfg_copy(cfg->password, sizeof(cfg->password), s) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" is too long (max %zu bytes)", key,
				  sizeof(cfg->password) - 1);
	return 0;
}

static int j_key(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];

	if (!cJSON_IsString(v))
		return ss_cfg_err(err, errlen, "\"%s\" must be a base64 string, not %s", key,
				  show(v, shown, sizeof(shown)));
	if (ss_cfg_copy(cfg->key_b64, sizeof(cfg->key_b64), v->valuestring) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" is too long (max %zu bytes)", key,
				  sizeof(cfg->key_b64) - 1);
	return 0;
}

static int j_method(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];

	if (!cJSON_IsString(v))
		return ss_cfg_err(err, errlen, "\"%s\" must be a string, not %s", key,
				  show(v, shown, sizeof(shown)));
	return ss_cfg_method(cfg, v->valuestring, err, errlen);
}

static int j_timeout(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	long t;

	if (int_of(v, 1, LONG_MAX, &t) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a positive number, not %s", key,
				  show(v, shown, sizeof(shown)));
	if (t > TIMEOUT_MAX)
		return ss_cfg_err(err, errlen, "\"%s\" must be at most %ld seconds, not %s", key,
				  TIMEOUT_MAX, show(v, shown, sizeof(shown)));
	cfg->timeout = (int)t;
	return 0;
}

static int j_nofile(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];

	if (int_of(v, 1, INT_MAX, &cfg->nofile) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a positive number, not %s", key,
				  show(v, shown, sizeof(shown)));
	return 0;
}

static int j_mtu(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	long mtu;

	if (int_of(v, 0, 65535, &mtu) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a number from 0 to 65535, not %s",
				  key, show(v, shown, sizeof(shown)));
	cfg->mtu = (int)mtu;
	return 0;
}

static int j_udp_timeout(ss_config_t *cfg, const cJSON *v, const char *key, char *err,
			 size_t errlen)
{
	char shown[96];
	long t;

	if (int_of(v, 1, 2147483L, &t) != 0)
		return ss_cfg_err(err, errlen,
				  "\"%s\" must be a positive number of seconds, not %s", key,
				  show(v, shown, sizeof(shown)));
	cfg->udp_timeout = (int)t;
	return 0;
}

static int j_udp_max_assoc(ss_config_t *cfg, const cJSON *v, const char *key, char *err,
			   size_t errlen)
{
	char shown[96];
	long n;

	if (int_of(v, 1, 1L << 20, &n) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a number from 1 to 1048576, not %s",
				  key, show(v, shown, sizeof(shown)));
	cfg->udp_max_assoc = (int)n;
	return 0;
}

static int j_workers(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	long n;

	if (int_of(v, 1, SS_WORKERS_MAX, &n) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a number from 1 to %d, not %s", key,
				  SS_WORKERS_MAX, show(v, shown, sizeof(shown)));
	cfg->workers = (int)n;
	return 0;
}

static int j_replay_capacity(ss_config_t *cfg, const cJSON *v, const char *key, char *err,
			     size_t errlen)
{
	char shown[96];

	if (int_of(v, 1, SS_REPLAY_CAPACITY_MAX, &cfg->replay_capacity) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be a number from 1 to %ld, not %s", key,
				  SS_REPLAY_CAPACITY_MAX, show(v, shown, sizeof(shown)));
	return 0;
}

static int j_verbose(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	long n;

	if (cJSON_IsBool(v)) {
		cfg->verbose = cJSON_IsTrue(v);
		return 0;
	}
	if (int_of(v, 0, 10, &n) != 0)
		return ss_cfg_err(err, errlen, "\"%s\" must be true, false or a level 0-10, not %s",
				  key, show(v, shown, sizeof(shown)));
	cfg->verbose = (int)n;
	return 0;
}

static int mode_of(const cJSON *v, ss_relay_mode_t *mode, const char *key, char *err, size_t errlen)
{
	static const char *const names[] = {
	    [SS_MODE_TCP_ONLY] = "tcp_only",
	    [SS_MODE_TCP_AND_UDP] = "tcp_and_udp",
	    [SS_MODE_UDP_ONLY] = "udp_only",
	};
	char shown[96];

	if (cJSON_IsString(v))
		for (size_t i = 0; i < SS_ARRAY_LEN(names); i++)
			if (strcmp(v->valuestring, names[i]) == 0) {
				*mode = (ss_relay_mode_t)i;
				return 0;
			}
	return ss_cfg_err(err, errlen,
			  "\"%s\" must be \"tcp_only\", \"tcp_and_udp\" or \"udp_only\", not %s",
			  key, show(v, shown, sizeof(shown)));
}

static int j_mode(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	return mode_of(v, &cfg->mode, key, err, errlen);
}

static int j_plugin_mode(ss_config_t *cfg, const cJSON *v, const char *key, char *err,
			 size_t errlen)
{
	return mode_of(v, &cfg->plugin_mode, key, err, errlen);
}

static int j_tunnel(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char buf[32];
	const char *s;

	/* Only ss-tunnel uses it; a file shared with the other programs may
	 * carry it, and libev ignores it there. */
	if (cfg->prog != SS_PROG_TUNNEL)
		return 0;
	if (want_string(v, key, &s, buf, sizeof(buf), err, errlen) != 0)
		return -EINVAL;
	if (ss_cfg_tunnel(s, &cfg->tunnel_addr, "-L/tunnel_address", err, errlen) != 0)
		return -EINVAL;
	cfg->have_tunnel_addr = true;
	return 0;
}

static int j_auth(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	(void)cfg;
	if (cJSON_IsTrue(v))
		return ss_cfg_err(err, errlen,
				  "\"%s\": one-time auth was removed from Shadowsocks; use an AEAD "
				  "method",
				  key);
	return 0;
}

/* One "users" entry: {"name": "...", "password": "<uPSK base64>"}. The PSK
 * is read in finish(), once the method is known. */
static int user_of(ss_config_t *cfg, size_t i, const cJSON *v, char *err, size_t errlen)
{
	ss_config_user_t *u = &cfg->users[i];
	const cJSON *name, *psk;
	char shown[96];

	if (!cJSON_IsObject(v))
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] must be an object with \"name\" and "
				  "\"password\", not %s",
				  i, show(v, shown, sizeof(shown)));
	name = cJSON_GetObjectItemCaseSensitive(v, "name");
	psk = cJSON_GetObjectItemCaseSensitive(v, "password");
	if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu]: \"name\" must be a non-empty string, not %s", i,
				  name != NULL ? show(name, shown, sizeof(shown)) : "missing");
	if (ss_cfg_copy(u->name, sizeof(u->name), name->valuestring) != 0)
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu]: \"name\" %s is too long (max %zu bytes)", i,
				  show(name, shown, sizeof(shown)), sizeof(u->name) - 1);
	for (size_t j = 0; j < i; j++)
		if (strcmp(cfg->users[j].name, u->name) == 0)
			return ss_cfg_err(err, errlen,
					  "\"users\"[%zu]: name \"%s\" is already used by "
					  "\"users\"[%zu]",
					  i, u->name, j);
	/* Never echo a secret into a message. */
	if (!cJSON_IsString(psk) || psk->valuestring[0] == '\0')
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): \"password\" must be the user's PSK "
				  "in base64",
				  i, u->name);
	if (ss_cfg_copy(u->psk_b64, sizeof(u->psk_b64), psk->valuestring) != 0)
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): \"password\" is too long for a PSK", i,
				  u->name);
	return 0;
}

static int j_users(ss_config_t *cfg, const cJSON *v, const char *key, char *err, size_t errlen)
{
	char shown[96];
	const cJSON *item;
	size_t i = 0, n;

	if (cfg->prog != SS_PROG_SERVER)
		return ss_cfg_err(err, errlen,
				  "\"%s\" is for ss-server; %s takes the identity and user PSKs as "
				  "\"password\": \"iPSK:uPSK\"",
				  key, cfg->prog_name);
	if (!cJSON_IsArray(v))
		return ss_cfg_err(err, errlen, "\"%s\" must be an array of objects, not %s", key,
				  show(v, shown, sizeof(shown)));

	/* A second "users" replaces the first, as any other key does. */
	if (cfg->users != NULL) {
		ss_wipe(cfg->users, cfg->n_users * sizeof(*cfg->users));
		free(cfg->users);
	}
	cfg->users = NULL;
	cfg->n_users = 0;
	n = (size_t)cJSON_GetArraySize(v);
	if (n == 0)
		return 0;
	cfg->users = calloc(n, sizeof(*cfg->users));
	if (cfg->users == NULL)
		return ss_cfg_err(err, errlen, "\"%s\": %s", key, strerror(ENOMEM));
	cfg->n_users = n;
	cJSON_ArrayForEach(item, v)
	{
		if (user_of(cfg, i++, item, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

enum kind { K_FN, K_STRING, K_BOOL };

static const struct json_key {
	const char *key;
	int field; /* ss_cfg_field_t, or -1 for none */
	enum kind kind;
	size_t off; /* K_STRING, K_BOOL */
	size_t cap; /* K_STRING */
	json_fn fn; /* K_FN */
	/* ss_config_set reads the value as JSON text (an array, an object, a
	 * number or a bool), not as the string itself (every K_BOOL). */
	bool json;
} json_keys[] = {
#define FN(k, f, fn)                                                                               \
	{                                                                                          \
		k, f, K_FN, 0, 0, fn, false                                                        \
	}
#define JSON(k, f, fn)                                                                             \
	{                                                                                          \
		k, f, K_FN, 0, 0, fn, true                                                         \
	}
#define STR(k, f, m)                                                                               \
	{                                                                                          \
		k, f, K_STRING, offsetof(ss_config_t, m), sizeof(((ss_config_t *)0)->m), NULL,     \
		    false                                                                          \
	}
#define BOOL(k, f, m)                                                                              \
	{                                                                                          \
		k, f, K_BOOL, offsetof(ss_config_t, m), 0, NULL, true                              \
	}
    FN("server", SS_CF_SERVERS, j_server),
    JSON("servers", SS_CF_SERVERS, j_servers),
    FN("server_url", SS_CF_SERVERS, j_server_url),
    FN("server_port", SS_CF_SERVER_PORT, j_server_port),
    FN("local_address", SS_CF_LOCAL_ADDR, j_local_addr),
    FN("local_port", SS_CF_LOCAL_PORT, j_local_port),
    FN("local_ipv4_address", SS_CF_LOCAL_V4, j_local_v4),
    FN("local_ipv6_address", SS_CF_LOCAL_V6, j_local_v6),
    FN("password", SS_CF_SECRET, j_password),
    FN("key", SS_CF_SECRET, j_key),
    FN("method", SS_CF_METHOD, j_method),
    FN("timeout", SS_CF_TIMEOUT, j_timeout),
    STR("user", SS_CF_USER, user),
    FN("nofile", SS_CF_NOFILE, j_nofile),
    STR("interface", SS_CF_IFACE, iface),
    BOOL("ipv6_first", SS_CF_IPV6_FIRST, ipv6_first),
    STR("nameserver", SS_CF_NAMESERVER, nameserver),
    FN("tunnel_address", SS_CF_TUNNEL, j_tunnel),
    JSON("verbose", SS_CF_VERBOSE, j_verbose),
    BOOL("fast_open", SS_CF_FAST_OPEN, fast_open),
    BOOL("reuse_port", SS_CF_REUSE_PORT, reuse_port),
    BOOL("no_delay", SS_CF_NO_DELAY, no_delay),
    BOOL("mptcp", SS_CF_MPTCP, mptcp),
    BOOL("tcp_tproxy", SS_CF_TCP_TPROXY, tcp_tproxy),
    BOOL("use_syslog", SS_CF_USE_SYSLOG, use_syslog),
    FN("mode", SS_CF_MODE, j_mode),
    FN("mtu", SS_CF_MTU, j_mtu),
    FN("udp_timeout", SS_CF_UDP_TIMEOUT, j_udp_timeout),
    FN("udp_max_associations", SS_CF_UDP_MAX_ASSOC, j_udp_max_assoc),
    FN("workers", SS_CF_WORKERS, j_workers),
    STR("acl", SS_CF_ACL, acl),
    STR("plugin", SS_CF_PLUGIN, plugin),
    STR("plugin_opts", SS_CF_PLUGIN_OPTS, plugin_opts),
    FN("plugin_mode", SS_CF_PLUGIN_MODE, j_plugin_mode),
    STR("socks_user", SS_CF_SOCKS_AUTH, socks_user),
    STR("socks_pass", SS_CF_SOCKS_AUTH, socks_pass),
    STR("socks_users", SS_CF_SOCKS_AUTH, socks_users_file),
    JSON("auth", -1, j_auth),
    JSON("users", -1, j_users),
    FN("replay_capacity", -1, j_replay_capacity),
#undef FN
#undef JSON
#undef STR
#undef BOOL
};

static const struct json_key *json_key_find(const char *name)
{
	for (size_t i = 0; i < SS_ARRAY_LEN(json_keys); i++)
		if (strcmp(name, json_keys[i].key) == 0)
			return &json_keys[i];
	return NULL;
}

static int apply(ss_config_t *cfg, const struct json_key *k, const cJSON *v, char *err,
		 size_t errlen)
{
	char *base = (char *)cfg;

	switch (k->kind) {
	case K_STRING:
		return copy_string(base + k->off, k->cap, v, k->key, err, errlen);
	case K_BOOL:
		return bool_of(v, (bool *)(base + k->off), k->key, err, errlen);
	case K_FN:
	default:
		return k->fn(cfg, v, k->key, err, errlen);
	}
}

/* The parsed tree holds copies of the secrets, the users' ones one level
 * down; cJSON frees without wiping. */
static void wipe_secrets(cJSON *root, int depth)
{
	cJSON *item;

	cJSON_ArrayForEach(item, root)
	{
		/* ss:// URLs carry a password too, in a list or alone. */
		if (cJSON_IsString(item) &&
		    ((item->string != NULL &&
		      (strcmp(item->string, "password") == 0 || strcmp(item->string, "key") == 0 ||
		       strcmp(item->string, "socks_pass") == 0)) ||
		     strncasecmp(item->valuestring, "ss://", 5) == 0))
			ss_wipe(item->valuestring, strlen(item->valuestring));
		else if (depth < 3 && (cJSON_IsArray(item) || cJSON_IsObject(item)))
			wipe_secrets(item, depth + 1);
	}
}

/* Keys of shadowsocks-libev 3.3.5 (src/jconf.c) that these programs do not
 * act on, each listed in docs/compatibility.md: ss-manager's, ss-redir's,
 * and dscp. A file shared with libev's programs may hold them. */
static const char *const libev_ignored[] = {
    "port_password", "manager_address", "workdir", "tcp_tproxy", "dscp",
};

/* A key we do not know: a warning, with the known key it may be a slip
 * for; and when the file does not set that one, a note for the message
 * that it is missing (ss_cfg_typo_hint). */
static void unknown_key(ss_config_t *cfg, const cJSON *root, const char *key)
{
	const char *known[SS_ARRAY_LEN(json_keys)];
	const char *near;
	const cJSON *set;

	for (size_t i = 0; i < SS_ARRAY_LEN(libev_ignored); i++)
		if (strcmp(key, libev_ignored[i]) == 0)
			return;
	for (size_t i = 0; i < SS_ARRAY_LEN(json_keys); i++)
		known[i] = json_keys[i].key;
	near = ss_cfg_closest(key, known, SS_ARRAY_LEN(known));
	if (near == NULL) {
		ss_cfg_warn(cfg, "unknown key \"%.64s\"%s%s, ignored", key,
			    cfg->config_file[0] ? " in " : "", cfg->config_file);
		return;
	}
	ss_cfg_warn(cfg, "unknown key \"%.64s\"%s%s, did you mean \"%s\"?", key,
		    cfg->config_file[0] ? " in " : "", cfg->config_file, near);
	set = cJSON_GetObjectItemCaseSensitive(root, near);
	if ((set == NULL || cJSON_IsNull(set)) && cfg->n_typos < SS_CONFIG_TYPO_MAX &&
	    strlen(key) < sizeof(cfg->typos[0].key)) {
		strcpy(cfg->typos[cfg->n_typos].key, key);
		cfg->typos[cfg->n_typos++].known = near;
	}
}

void ss_cfg_typo_hint(const ss_config_t *cfg, char *err, size_t errlen)
{
	char quoted[80];
	size_t used = err != NULL && errlen > 0 ? strlen(err) : 0;

	for (size_t i = 0; err != NULL && used + 1 < errlen && i < cfg->n_typos; i++) {
		snprintf(quoted, sizeof(quoted), "\"%s\"", cfg->typos[i].known);
		if (strstr(err, quoted) == NULL)
			continue;
		snprintf(err + used, errlen - used, ": the %s has \"%s\", did you mean %s?",
			 cfg->config_file[0] ? "config file" : "JSON text", cfg->typos[i].key,
			 quoted);
		return;
	}
}

static int parse_root(ss_config_t *cfg, cJSON *root, char *err, size_t errlen)
{
	const cJSON *item;
	bool file_servers = false;

	if (!cJSON_IsObject(root))
		return ss_cfg_err(err, errlen, "the top level must be a JSON object");
	cJSON_ArrayForEach(item, root)
	{
		const struct json_key *k = json_key_find(item->string);

		if (k == NULL)
			unknown_key(cfg, root, item->string);
		if (k == NULL || cJSON_IsNull(item))
			continue;
		if (k->field >= 0 && (cfg->cli_set & ss_cfg_bit((ss_cfg_field_t)k->field)) != 0)
			continue;
		/* "server", "servers" and "server_url" make one list, in the
		 * order the file gives them. */
		if (k->field == SS_CF_SERVERS && !file_servers) {
			ss_cfg_wipe_servers(cfg);
			cfg->n_servers = 0;
			file_servers = true;
		}
		if (apply(cfg, k, item, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

int ss_config_parse_json(ss_config_t *cfg, const char *text, char *err, size_t errlen)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1);
	const char *end = NULL;
	cJSON *root;
	int rc;

	if (buf == NULL)
		return ss_cfg_err(err, errlen, "%s", strerror(ENOMEM));
	/* A copy to make lenient in place; it holds the password. */
	memcpy(buf, text, len + 1);
	ss_cfg_json_relax(buf);
	root = cJSON_ParseWithOpts(buf, &end, 1);
	if (root == NULL) {
		rc = ss_cfg_json_error(buf, end, err, errlen);
	} else {
		rc = parse_root(cfg, root, err, errlen);
		wipe_secrets(root, 0);
		cJSON_Delete(root);
	}
	if (rc != 0)
		ss_cfg_one_line(err, errlen);
	ss_wipe(buf, len);
	free(buf);
	return rc;
}

int ss_cfg_set_key(ss_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
	const struct json_key *k = json_key_find(key);
	cJSON *root, *v = NULL;
	int rc;

	if (k == NULL) {
		ss_cfg_err(err, errlen, "unknown key \"%s\"", key);
		ss_cfg_one_line(err, errlen);
		return -ENOENT;
	}
	if (k->json)
		v = cJSON_Parse(value);
	/* A yes/no key says what it wants of any text; other JSON text may
	 * hold secrets ("users", "servers"), so it is not quoted back. */
	if (v == NULL && k->kind != K_BOOL && k->json)
		return ss_cfg_err(err, errlen, "\"%s\": the value is not valid JSON text", key);
	if (v == NULL)
		v = cJSON_CreateString(value);
	/* Under its key in an object, so that wipe_secrets finds it. */
	root = cJSON_CreateObject();
	if (v == NULL || root == NULL || !cJSON_AddItemToObject(root, key, v)) {
		cJSON_Delete(v);
		cJSON_Delete(root);
		ss_cfg_err(err, errlen, "\"%s\": %s", key, strerror(ENOMEM));
		return -ENOMEM;
	}
	/* One server list, as in a file: a new one replaces the old. */
	if (k->field == SS_CF_SERVERS) {
		ss_cfg_wipe_servers(cfg);
		cfg->n_servers = 0;
	}
	rc = cJSON_IsNull(v) ? 0 : apply(cfg, k, v, err, errlen);
	if (rc != 0)
		ss_cfg_one_line(err, errlen);
	wipe_secrets(root, 0);
	cJSON_Delete(root);
	return rc;
}
