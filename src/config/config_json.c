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
#include "config/config_table.h"
#include "crypto/primitives.h"
#include "util/result.h"

/* A "servers" entry's port, as the top-level "server_port" is read. */
static int port_of(const cJSON *v, uint16_t *port, const char *name, char *err, size_t errlen)
{
	ss_cfg_value_t val = {.json = v};
	char buf[32], shown[96];
	const char *t = ss_cfg_value_text(&val, buf, sizeof(buf));

	if (t == NULL || ss_cfg_port(t, port) != 0) {
		if (t == NULL)
			t = ss_cfg_show_json(v, shown, sizeof(shown));
		return ss_cfg_err(err, errlen, "invalid port '%s' for %s (expected 1-65535)", t,
				  name);
	}
	return 0;
}

/* -s, "server": a host[:port] or an ss:// URL; a file may give an array. */
int ss_cfg_set_server(ss_config_t *cfg, const ss_cfg_value_t *val, char *err, size_t errlen)
{
	const cJSON *v = val->json, *item;
	const char *label = val->set->label;
	char shown[96];

	if (v == NULL)
		return ss_cfg_add_server(cfg, val->arg, label, false, err, errlen);
	if (cJSON_IsString(v))
		return ss_cfg_add_server(cfg, v->valuestring, label, false, err, errlen);
	if (!cJSON_IsArray(v))
		return ss_cfg_value_refuse(val, "must be a string or an array of strings", err,
					   errlen);
	cJSON_ArrayForEach(item, v)
	{
		if (!cJSON_IsString(item))
			return ss_cfg_err(err, errlen, "%s entries must be strings, not %s",
					  val->name, ss_cfg_show_json(item, shown, sizeof(shown)));
		if (ss_cfg_add_server(cfg, item->valuestring, label, false, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

/* --server-url, "server_url": one ss:// URL; a file may give an array. */
int ss_cfg_set_server_url(ss_config_t *cfg, const ss_cfg_value_t *val, char *err, size_t errlen)
{
	const cJSON *v = val->json, *item;
	char shown[96], origin[64];
	int i = 0;

	if (v == NULL)
		return ss_cfg_add_server(cfg, val->arg, val->name, true, err, errlen);
	if (cJSON_IsString(v))
		return ss_cfg_add_server(cfg, v->valuestring, val->name, true, err, errlen);
	if (!cJSON_IsArray(v))
		return ss_cfg_value_refuse(val, "must be an ss:// URL or an array of them", err,
					   errlen);
	cJSON_ArrayForEach(item, v)
	{
		snprintf(origin, sizeof(origin), "%s[%d]", val->name, i++);
		if (!cJSON_IsString(item))
			return ss_cfg_err(err, errlen, "%s must be an ss:// URL, not %s", origin,
					  ss_cfg_show_json(item, shown, sizeof(shown)));
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
				  ss_cfg_show_json(v, shown, sizeof(shown)));
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
				  ss_cfg_show_json(o, shown, sizeof(shown)));
	slip = entry_unknown_keys(cfg, o, origin, &near);
	if ((v = entry_item(o, "disabled", NULL)) && cJSON_IsTrue(v))
		return 0;
	if (v && !cJSON_IsBool(v))
		return ss_cfg_err(err, errlen, "%s: \"disabled\" must be true or false, not %s",
				  origin, ss_cfg_show_json(v, shown, sizeof(shown)));
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
					  origin, ss_cfg_show_json(v, shown, sizeof(shown)));
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
		if (ss_cfg_mode_json(v, &e->plugin_mode, err, errlen) != 0)
			return -EINVAL;
		e->own_plugin_mode = true;
	}
	cfg->n_servers++;
	return 0;
}

int ss_cfg_set_servers(ss_config_t *cfg, const ss_cfg_value_t *val, char *err, size_t errlen)
{
	char origin[64];
	const cJSON *item;
	int i = 0;

	if (!cJSON_IsArray(val->json))
		return ss_cfg_value_refuse(val, "must be an array of objects", err, errlen);
	cJSON_ArrayForEach(item, val->json)
	{
		snprintf(origin, sizeof(origin), "%s[%d]", val->name, i++);
		if (server_object(cfg, item, origin, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

/* A "users" entry's secrets: "password" (a 2022 PSK in base64, or a SIP004
 * password), "key" (SIP004 only, base64), read in finish() once the method
 * is known. Never echoed into a message. */
static int user_secrets(ss_config_user_t *u, size_t i, const cJSON *v, char *err, size_t errlen)
{
	const cJSON *pw = cJSON_GetObjectItemCaseSensitive(v, "password");
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(v, "key");
	bool has_pw = cJSON_IsString(pw) && pw->valuestring[0];
	bool has_key = cJSON_IsString(key) && key->valuestring[0];

	if ((pw && !has_pw) || (key && !has_key) || (!has_pw && !has_key))
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): \"password\" must be the user's PSK "
				  "in base64 (2022 methods) or its password (SIP004 methods, which "
				  "also take \"key\" in base64 instead)",
				  i, u->name);
	if (has_pw && ss_cfg_copy(u->password, sizeof(u->password), pw->valuestring) != 0)
		return ss_cfg_err(
		    err, errlen,
		    "\"users\"[%zu] (\"%s\"): \"password\" is too long (max %zu bytes)", i, u->name,
		    sizeof(u->password) - 1);
	if (has_key && ss_cfg_copy(u->key_b64, sizeof(u->key_b64), key->valuestring) != 0)
		return ss_cfg_err(err, errlen, "\"users\"[%zu] (\"%s\"): \"key\" is too long", i,
				  u->name);
	return 0;
}

/* A "users" entry's own "method" (SIP004 users), checked in finish(). */
static int user_method(ss_config_user_t *u, size_t i, const cJSON *v, char *err, size_t errlen)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "method");
	char why[512], shown[96];

	if (m == NULL)
		return 0;
	if (!cJSON_IsString(m))
		return ss_cfg_err(
		    err, errlen,
		    "\"users\"[%zu] (\"%s\"): \"method\" must be a method's name, not "
		    "%s",
		    i, u->name, ss_cfg_show_json(m, shown, sizeof(shown)));
	if (ss_method_lookup(m->valuestring, &u->method, why, sizeof(why)) != 0)
		return ss_cfg_err(err, errlen, "\"users\"[%zu] (\"%s\"): %s", i, u->name, why);
	return 0;
}

/* One "users" entry: {"name": "...", "password": "...", and for SIP004
 * optionally "key" and "method"}. */
static int user_of(ss_config_t *cfg, size_t i, const cJSON *v, char *err, size_t errlen)
{
	ss_config_user_t *u = &cfg->users[i];
	const cJSON *name;
	char shown[96];

	if (!cJSON_IsObject(v))
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] must be an object with \"name\" and "
				  "\"password\", not %s",
				  i, ss_cfg_show_json(v, shown, sizeof(shown)));
	name = cJSON_GetObjectItemCaseSensitive(v, "name");
	if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
		return ss_cfg_err(
		    err, errlen, "\"users\"[%zu]: \"name\" must be a non-empty string, not %s", i,
		    name != NULL ? ss_cfg_show_json(name, shown, sizeof(shown)) : "missing");
	if (ss_cfg_copy(u->name, sizeof(u->name), name->valuestring) != 0)
		return ss_cfg_err(
		    err, errlen, "\"users\"[%zu]: \"name\" %s is too long (max %zu bytes)", i,
		    ss_cfg_show_json(name, shown, sizeof(shown)), sizeof(u->name) - 1);
	for (size_t j = 0; j < i; j++)
		if (strcmp(cfg->users[j].name, u->name) == 0)
			return ss_cfg_err(err, errlen,
					  "\"users\"[%zu]: name \"%s\" is already used by "
					  "\"users\"[%zu]",
					  i, u->name, j);
	if (user_secrets(u, i, v, err, errlen) != 0 || user_method(u, i, v, err, errlen) != 0)
		return -EINVAL;
	return 0;
}

/* "users": the 2022 users of ss-server; a second replaces the first, as
 * any other key does. */
int ss_cfg_set_users(ss_config_t *cfg, const ss_cfg_value_t *val, char *err, size_t errlen)
{
	const cJSON *v = val->json, *item;
	size_t i = 0, n;

	if (!cJSON_IsArray(v))
		return ss_cfg_value_refuse(val, "must be an array of objects", err, errlen);
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
		return ss_cfg_err(err, errlen, "%s: %s", val->name, strerror(ENOMEM));
	cfg->n_users = n;
	cJSON_ArrayForEach(item, v)
	{
		if (user_of(cfg, i++, item, err, errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

/* The parsed tree holds copies of the secrets, the users' ones one level
 * down; cJSON frees without wiping. */
static void wipe_secrets(cJSON *root, int depth)
{
	cJSON *item;

	cJSON_ArrayForEach(item, root)
	{
		/* ss:// URLs carry a password too, in a list or alone. */
		const ss_setting_t *s = item->string ? ss_cfg_setting_by_key(item->string) : NULL;

		if (cJSON_IsString(item) && ((s != NULL && (s->flags & SS_SET_SECRET)) ||
					     strncasecmp(item->valuestring, "ss://", 5) == 0))
			ss_wipe(item->valuestring, strlen(item->valuestring));
		else if (depth < 3 && (cJSON_IsArray(item) || cJSON_IsObject(item)))
			wipe_secrets(item, depth + 1);
	}
}

/* A key we do not know: a warning, with the known key it may be a slip
 * for; and when the file does not set that one, a note for the message
 * that it is missing (ss_cfg_typo_hint). */
static void unknown_key(ss_config_t *cfg, const cJSON *root, const char *key)
{
	const char *known[ss_cfg_n_settings];
	const char *near;
	const cJSON *set;
	size_t n = 0;

	for (size_t i = 0; i < ss_cfg_n_settings; i++)
		if (ss_cfg_settings[i].key != NULL && ss_cfg_settings[i].type != SS_SET_UNUSED)
			known[n++] = ss_cfg_settings[i].key;
	near = ss_cfg_closest(key, known, n);
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
		const ss_setting_t *s = ss_cfg_setting_by_key(item->string);
		ss_cfg_value_t v;

		if (s == NULL)
			unknown_key(cfg, root, item->string);
		if (s == NULL || s->type == SS_SET_UNUSED || cJSON_IsNull(item))
			continue;
		if (s->field >= 0 && (cfg->cli_set & ss_cfg_bit((ss_cfg_field_t)s->field)) != 0)
			continue;
		/* "server", "servers" and "server_url" make one list, in the
		 * order the file gives them. */
		if (s->field == SS_CF_SERVERS && !file_servers) {
			ss_cfg_wipe_servers(cfg);
			cfg->n_servers = 0;
			file_servers = true;
		}
		ss_cfg_value_json(&v, s, item);
		if (ss_cfg_value_set(cfg, &v, err, errlen) != 0)
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
	const ss_setting_t *s = ss_cfg_setting_by_key(key);
	bool is_bool = s != NULL && s->type == SS_SET_BOOL;
	bool json = s != NULL && (is_bool || (s->flags & SS_SET_JSON_TEXT));
	ss_cfg_value_t val;
	cJSON *root, *v = NULL;
	int rc;

	if (s == NULL || s->type == SS_SET_UNUSED) {
		ss_cfg_err(err, errlen, "unknown key \"%s\"", key);
		ss_cfg_one_line(err, errlen);
		return -ENOENT;
	}
	if (json)
		v = cJSON_Parse(value);
	/* A yes/no key says what it wants of any text; other JSON text may
	 * hold secrets ("users", "servers"), so it is not quoted back. */
	if (v == NULL && !is_bool && json)
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
	if (s->field == SS_CF_SERVERS) {
		ss_cfg_wipe_servers(cfg);
		cfg->n_servers = 0;
	}
	ss_cfg_value_json(&val, s, v);
	rc = cJSON_IsNull(v) ? 0 : ss_cfg_value_set(cfg, &val, err, errlen);
	if (rc != 0)
		ss_cfg_one_line(err, errlen);
	wipe_secrets(root, 0);
	cJSON_Delete(root);
	return rc;
}
