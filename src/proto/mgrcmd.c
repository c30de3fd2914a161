/* SPDX-License-Identifier: MIT */
#include "proto/mgrcmd.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each key an add may give is, as JSON. */
typedef enum { KEY_TEXT, KEY_BOOL, KEY_NUMBER, KEY_USERS } key_kind_t;

static const struct {
	const char *key;
	key_kind_t kind;
	bool secret;
} port_keys[] = {
    {"password", KEY_TEXT, true},     {"key", KEY_TEXT, true},
    {"method", KEY_TEXT, false},      {"mode", KEY_TEXT, false},
    {"fast_open", KEY_BOOL, false},   {"no_delay", KEY_BOOL, false},
    {"reuse_port", KEY_BOOL, false},  {"mptcp", KEY_BOOL, false},
    {"timeout", KEY_NUMBER, false},   {"udp_timeout", KEY_NUMBER, false},
    {"plugin", KEY_TEXT, false},      {"plugin_opts", KEY_TEXT, false},
    {"plugin_mode", KEY_TEXT, false}, {"acl", KEY_TEXT, false},
    {"users", KEY_USERS, true},
};
#define N_PORT_KEYS (sizeof(port_keys) / sizeof(port_keys[0]))

/* Longest text a field may hold (a path, plugin options, a PSK list). */
#define FIELD_MAX 4095

static int mgr_err(char *err, size_t errlen, const char *fmt, const char *what)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

/* A port as JSON gives it: a number or a string of digits, 1-65535. */
static int port_value(const cJSON *j, uint16_t *port)
{
	long n = 0;

	if (cJSON_IsNumber(j)) {
		if (j->valuedouble < 1 || j->valuedouble > 65535 ||
		    j->valuedouble != (double)(long)j->valuedouble)
			return -EINVAL;
		n = (long)j->valuedouble;
	} else if (cJSON_IsString(j)) {
		const char *s = j->valuestring;
		size_t len = strlen(s);
		if (len == 0 || len > 5 || strspn(s, "0123456789") != len)
			return -EINVAL;
		sscanf(s, "%ld", &n);
	} else {
		return -EINVAL;
	}
	if (n < 1 || n > 65535)
		return -EINVAL;
	*port = (uint16_t)n;
	return 0;
}

/* Printable text of at most FIELD_MAX bytes. */
static bool text_ok(const cJSON *j)
{
	if (!cJSON_IsString(j) || strlen(j->valuestring) > FIELD_MAX)
		return false;
	for (const char *p = j->valuestring; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* The users a port may have at most, as ss-server takes them. */
#define USERS_MAX 4096

/* A user object: "name" and "password" or "key" (and "method") as
 * printable text, nothing else kept; a copy into *out, or NULL. */
static cJSON *user_copy(const cJSON *u, bool name_only)
{
	static const char *const keys[] = {"name", "password", "key", "method"};
	cJSON *o;

	if (!cJSON_IsObject(u) || !text_ok(cJSON_GetObjectItemCaseSensitive(u, "name")) ||
	    !cJSON_GetObjectItemCaseSensitive(u, "name")->valuestring[0])
		return NULL;
	if (!name_only && !cJSON_GetObjectItemCaseSensitive(u, "password") &&
	    !cJSON_GetObjectItemCaseSensitive(u, "key"))
		return NULL;
	if (!(o = cJSON_CreateObject()))
		return NULL;
	for (size_t i = 0; i < (name_only ? 1 : sizeof(keys) / sizeof(keys[0])); i++) {
		const cJSON *j = cJSON_GetObjectItemCaseSensitive(u, keys[i]);
		if (j == NULL)
			continue;
		if (!text_ok(j) || !cJSON_AddStringToObject(o, keys[i], j->valuestring)) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

/* "users": an array of user objects (or its text, as the state file keeps
 * it), checked and kept as text of the copies. */
static char *users_text(const cJSON *j)
{
	cJSON *in = NULL, *out = NULL;
	const cJSON *arr = j;
	char *text = NULL;
	int n = 0;

	if (cJSON_IsString(j)) {
		in = cJSON_Parse(j->valuestring);
		arr = in;
	}
	if (!cJSON_IsArray(arr) || (n = cJSON_GetArraySize(arr)) < 1 || n > USERS_MAX ||
	    !(out = cJSON_CreateArray()))
		goto done;
	for (const cJSON *u = arr->child; u; u = u->next) {
		cJSON *c = user_copy(u, false);
		if (!c || !cJSON_AddItemToArray(out, c)) {
			cJSON_Delete(c);
			goto done;
		}
	}
	text = cJSON_PrintUnformatted(out);
done:
	cJSON_Delete(in);
	cJSON_Delete(out);
	return text;
}

/* One field's value as text into out; -EINVAL when it is not of its
 * kind, or holds a control byte. */
static int field_text(const cJSON *j, key_kind_t kind, char *buf, size_t cap, const char **out)
{
	switch (kind) {
	/* A bool or number may come as its text too: the state file keeps
	 * every field as the text ss_config_set takes. */
	case KEY_BOOL:
		if (cJSON_IsString(j) &&
		    (strcmp(j->valuestring, "true") == 0 || strcmp(j->valuestring, "false") == 0))
			*out = j->valuestring[0] == 't' ? "true" : "false";
		else if (cJSON_IsBool(j))
			*out = cJSON_IsTrue(j) ? "true" : "false";
		else
			return -EINVAL;
		return 0;
	case KEY_NUMBER:
		if (cJSON_IsString(j)) {
			size_t n = strlen(j->valuestring);
			if (n == 0 || n > 10 || strspn(j->valuestring, "0123456789") != n)
				return -EINVAL;
			snprintf(buf, cap, "%s", j->valuestring);
		} else if (cJSON_IsNumber(j) && j->valuedouble >= 0 &&
			   j->valuedouble <= 2147483647.0 &&
			   j->valuedouble == (double)(long)j->valuedouble) {
			snprintf(buf, cap, "%ld", (long)j->valuedouble);
		} else {
			return -EINVAL;
		}
		*out = buf;
		return 0;
	case KEY_USERS:
		return -EINVAL; /* ss_mgr_port_parse's own */
	case KEY_TEXT:
	default:
		if (!text_ok(j))
			return -EINVAL;
		*out = j->valuestring;
		return 0;
	}
}

int ss_mgr_port_parse(const cJSON *obj, uint16_t *port, cJSON **fields, char *err, size_t errlen)
{
	cJSON *out;

	*fields = NULL;
	if (!cJSON_IsObject(obj))
		return mgr_err(err, errlen, "%s", "a port is a JSON object");
	if (port_value(cJSON_GetObjectItemCaseSensitive(obj, "server_port"), port) != 0)
		return mgr_err(err, errlen, "%s", "\"server_port\" must be a port, 1-65535");
	out = cJSON_CreateObject();
	if (out == NULL)
		return mgr_err(err, errlen, "%s", "out of memory");
	for (size_t i = 0; i < N_PORT_KEYS; i++) {
		const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, port_keys[i].key);
		char num[32];
		const char *text;

		if (j == NULL || cJSON_IsNull(j))
			continue;
		if (port_keys[i].kind == KEY_USERS) {
			char *users = users_text(j);
			bool ok = users && cJSON_AddStringToObject(out, "users", users);
			free(users);
			if (!ok) {
				cJSON_Delete(out);
				return mgr_err(
				    err, errlen, "%s",
				    "\"users\" must be an array of 1 to 4096 objects, "
				    "each with a \"name\" and a \"password\" or \"key\"");
			}
			continue;
		}
		if (field_text(j, port_keys[i].kind, num, sizeof(num), &text) != 0) {
			cJSON_Delete(out);
			return mgr_err(
			    err, errlen,
			    port_keys[i].kind == KEY_BOOL     ? "\"%s\" must be true or false"
			    : port_keys[i].kind == KEY_NUMBER ? "\"%s\" must be a number"
							      : "\"%s\" must be a string "
								"of printable text",
			    port_keys[i].key);
		}
		if (cJSON_AddStringToObject(out, port_keys[i].key, text) == NULL) {
			cJSON_Delete(out);
			return mgr_err(err, errlen, "%s", "out of memory");
		}
	}
	*fields = out;
	return 0;
}

/* The JSON after "verb:", parsed. */
static int cmd_object(const char *text, size_t len, cJSON **obj, char *err, size_t errlen)
{
	const char *end = NULL;

	while (len > 0 && (*text == ' ' || *text == '\t')) {
		text++;
		len--;
	}
	*obj = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (*obj == NULL)
		return mgr_err(err, errlen, "%s", "the command's JSON does not parse");
	if (end != text + len) {
		cJSON_Delete(*obj);
		*obj = NULL;
		return mgr_err(err, errlen, "%s", "text after the command's JSON");
	}
	return 0;
}

static bool verb_is(const char *buf, size_t len, const char *verb, bool args)
{
	size_t n = strlen(verb);

	if (len < n || memcmp(buf, verb, n) != 0)
		return false;
	return args ? len > n && buf[n] == ':' : len == n;
}

int ss_mgr_cmd_parse(const char *buf, size_t len, ss_mgr_cmd_t *cmd, char *err, size_t errlen)
{
	cJSON *obj = NULL;
	int rc;

	memset(cmd, 0, sizeof(*cmd));
	if (len > SS_MGR_CMD_MAX)
		return mgr_err(err, errlen, "%s", "command too long");
	while (len > 0 && (buf[len - 1] == '\0' || buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
			   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (verb_is(buf, len, "ping", false)) {
		cmd->verb = SS_MGR_PING;
		return 0;
	}
	if (verb_is(buf, len, "list", false)) {
		cmd->verb = SS_MGR_LIST;
		return 0;
	}
	if (verb_is(buf, len, "stat", true)) {
		cmd->verb = SS_MGR_STAT;
		return 0;
	}
	if (verb_is(buf, len, "stat_users", false)) {
		cmd->verb = SS_MGR_STAT_USERS;
		return 0;
	}
	static const struct {
		const char *name;
		ss_mgr_verb_t verb;
	} verbs[] = {{"add", SS_MGR_ADD},
		     {"remove", SS_MGR_REMOVE},
		     {"add_user", SS_MGR_ADD_USER},
		     {"remove_user", SS_MGR_REMOVE_USER},
		     {"stat_users", SS_MGR_STAT_USERS}};
	size_t skip = 0;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]) && !skip; i++)
		if (verb_is(buf, len, verbs[i].name, true)) {
			cmd->verb = verbs[i].verb;
			skip = strlen(verbs[i].name) + 1;
		}
	if (!skip)
		return mgr_err(err, errlen, "%s",
			       "unknown command (add, remove, list, ping, add_user, remove_user, "
			       "stat_users)");
	if ((rc = cmd_object(buf + skip, len - skip, &obj, err, errlen)) < 0)
		return rc;
	if (cmd->verb == SS_MGR_ADD) {
		rc = ss_mgr_port_parse(obj, &cmd->port, &cmd->fields, err, errlen);
		if (rc == 0 && cJSON_GetObjectItemCaseSensitive(cmd->fields, "password") == NULL &&
		    cJSON_GetObjectItemCaseSensitive(cmd->fields, "key") == NULL &&
		    cJSON_GetObjectItemCaseSensitive(cmd->fields, "users") == NULL)
			rc = mgr_err(err, errlen, "%s",
				     "add needs a \"password\" (or \"key\", or \"users\")");
	} else if ((cmd->verb == SS_MGR_ADD_USER || cmd->verb == SS_MGR_REMOVE_USER) &&
		   cJSON_IsObject(obj) &&
		   port_value(cJSON_GetObjectItemCaseSensitive(obj, "server_port"), &cmd->port) ==
		       0) {
		cmd->user = user_copy(obj, cmd->verb == SS_MGR_REMOVE_USER);
		rc = cmd->user
			 ? 0
			 : mgr_err(err, errlen, "%s",
				   cmd->verb == SS_MGR_ADD_USER
				       ? "add_user needs a \"name\" and a \"password\" or \"key\""
				       : "remove_user needs a \"name\"");
	} else if (!cJSON_IsObject(obj) ||
		   port_value(cJSON_GetObjectItemCaseSensitive(obj, "server_port"), &cmd->port) !=
		       0) {
		rc = mgr_err(err, errlen, "%s", "\"server_port\" must be a port, 1-65535");
	} else {
		rc = 0;
	}
	cJSON_Delete(obj);
	if (rc < 0)
		ss_mgr_cmd_free(cmd);
	return rc;
}

void ss_mgr_cmd_free(ss_mgr_cmd_t *cmd)
{
	cJSON_Delete(cmd->fields);
	cJSON_Delete(cmd->user);
	cmd->fields = NULL;
	cmd->user = NULL;
}
