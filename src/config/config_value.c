/* SPDX-License-Identifier: MIT */
/* A setting's value, from whichever source, checked and stored by its row
 * of the table (config_table.c): an option's argument and a JSON value
 * meet the same rules, and only the way a message quotes them differs
 * (-t ... not '0'; "timeout" ... not 0). */

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"

void ss_cfg_value_arg(ss_cfg_value_t *v, const ss_setting_t *s, bool long_name, const char *arg)
{
	memset(v, 0, sizeof(*v));
	v->set = s;
	v->arg = arg;
	if (long_name || s->opt == '\0')
		snprintf(v->name, sizeof(v->name), "--%s", s->lopt);
	else
		snprintf(v->name, sizeof(v->name), "-%c", s->opt);
}

void ss_cfg_value_json(ss_cfg_value_t *v, const ss_setting_t *s, const cJSON *j)
{
	memset(v, 0, sizeof(*v));
	v->set = s;
	v->json = j;
	snprintf(v->name, sizeof(v->name), "\"%s\"", s->key);
}

const char *ss_cfg_show_json(const cJSON *j, char *buf, size_t cap)
{
	if (cJSON_IsString(j)) {
		if (strlen(j->valuestring) > 64)
			snprintf(buf, cap, "\"%.64s...\"", j->valuestring);
		else
			snprintf(buf, cap, "\"%s\"", j->valuestring);
	} else if (cJSON_IsNumber(j)) {
		snprintf(buf, cap, "%.17g", j->valuedouble);
	} else if (cJSON_IsBool(j)) {
		snprintf(buf, cap, "%s", cJSON_IsTrue(j) ? "true" : "false");
	} else if (cJSON_IsArray(j)) {
		snprintf(buf, cap, "an array");
	} else if (cJSON_IsObject(j)) {
		snprintf(buf, cap, "an object");
	} else {
		snprintf(buf, cap, "null");
	}
	return buf;
}

const char *ss_cfg_value_text(const ss_cfg_value_t *v, char *buf, size_t cap)
{
	const cJSON *j = v->json;

	if (j == NULL)
		return v->arg;
	if (cJSON_IsString(j))
		return j->valuestring;
	if (cJSON_IsNumber(j) && j->valuedouble > -1e15 && j->valuedouble < 1e15 &&
	    j->valuedouble == (double)(long long)j->valuedouble) {
		snprintf(buf, cap, "%lld", (long long)j->valuedouble);
		return buf;
	}
	return NULL;
}

int ss_cfg_value_refuse(const ss_cfg_value_t *v, const char *what, char *err, size_t errlen)
{
	char shown[96];

	if (v->json == NULL)
		return ss_cfg_err(err, errlen, "%s %s, not '%s'", v->name, what, v->arg);
	return ss_cfg_err(err, errlen, "%s %s, not %s", v->name, what,
			  ss_cfg_show_json(v->json, shown, sizeof(shown)));
}

int ss_cfg_value_set_string(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	const ss_setting_t *s = v->set;
	char *dst = (char *)cfg + s->off, buf[32];
	const char *text = ss_cfg_value_text(v, buf, sizeof(buf));

	if (text == NULL)
		return ss_cfg_value_refuse(v, "must be a string", err, errlen);
	if (v->json == NULL && (s->flags & SS_SET_ARG_NONEMPTY) && text[0] == '\0')
		return ss_cfg_err(err, errlen, "empty %s for %s", s->noun, s->label);
	if (ss_cfg_copy(dst, s->size, text) == 0) {
		if (v->json != NULL && (s->flags & SS_SET_FILE_NONEMPTY) && text[0] == '\0')
			return ss_cfg_err(err, errlen, "%s must not be empty", v->name);
		return 0;
	}
	/* Never echo a secret into a message. */
	if (v->json != NULL)
		return ss_cfg_err(err, errlen, "%s is too long (max %zu bytes)", v->name,
				  s->size - 1);
	if (s->flags & SS_SET_SECRET)
		return ss_cfg_err(err, errlen, "%s for %s is too long (max %zu bytes)", s->noun,
				  s->label, s->size - 1);
	return ss_cfg_err(err, errlen, "value '%.64s...' for %s is too long (max %zu bytes)", text,
			  v->name, s->size - 1);
}

static int set_int(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	const ss_setting_t *s = v->set;
	char buf[32], what[96];
	const char *text = ss_cfg_value_text(v, buf, sizeof(buf));
	long n;

	if (text == NULL || ss_cfg_long(text, s->min, s->unit ? LONG_MAX : s->max, &n) != 0) {
		if (s->expect != NULL)
			snprintf(what, sizeof(what), "must be %s", s->expect);
		else
			snprintf(what, sizeof(what), "must be a number from %ld to %ld", s->min,
				 s->max);
		return ss_cfg_value_refuse(v, what, err, errlen);
	}
	if (n > s->max) {
		snprintf(what, sizeof(what), "must be at most %ld %s", s->max, s->unit);
		return ss_cfg_value_refuse(v, what, err, errlen);
	}
	if (s->size == sizeof(long))
		*(long *)((char *)cfg + s->off) = n;
	else
		*(int *)((char *)cfg + s->off) = (int)n;
	return 0;
}

static int set_port(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	char buf[32], shown[96];
	const char *text = ss_cfg_value_text(v, buf, sizeof(buf));

	if (text == NULL || ss_cfg_port(text, (uint16_t *)((char *)cfg + v->set->off)) != 0)
		return ss_cfg_err(err, errlen, "invalid port '%s' for %s (expected 1-65535)",
				  text ? text : ss_cfg_show_json(v->json, shown, sizeof(shown)),
				  v->set->label);
	return 0;
}

static int set_bool(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	bool *dst = (bool *)((char *)cfg + v->set->off);

	if (v->json == NULL) {
		*dst = true;
		return 0;
	}
	if (!cJSON_IsBool(v->json))
		return ss_cfg_value_refuse(v, "must be true or false", err, errlen);
	*dst = cJSON_IsTrue(v->json);
	return 0;
}

/* Looks text up in names[]; *what gets the names as a message lists them,
 * each in q: "tcp_only, tcp_and_udp or udp_only". */
static int enum_of(const char *const *names, const char *text, const char *q, int *out, char *what,
		   size_t cap)
{
	size_t n = 0, used;

	for (n = 0; names[n] != NULL; n++)
		if (text != NULL && strcmp(text, names[n]) == 0) {
			*out = (int)n;
			return 0;
		}
	used = (size_t)snprintf(what, cap, "must be");
	for (size_t i = 0; i < n && used < cap; i++)
		used += (size_t)snprintf(what + used, cap - used, "%s%s%s%s",
					 i == 0      ? " "
					 : i + 1 < n ? ", "
						     : " or ",
					 q, names[i], q);
	return -EINVAL;
}

/* An ENUM value into *dst. */
static int enum_value(const ss_cfg_value_t *v, int *dst, char *err, size_t errlen)
{
	const ss_setting_t *s = v->set;
	const char *text = v->json ? cJSON_GetStringValue(v->json) : v->arg;
	char what[128];

	if (v->json == NULL && v->arg == NULL) {
		*dst = s->flag_value;
		return 0;
	}
	if (enum_of(s->names, text, v->json ? "\"" : "", dst, what, sizeof(what)) != 0)
		return ss_cfg_value_refuse(v, what, err, errlen);
	return 0;
}

int ss_cfg_mode_json(const cJSON *j, ss_relay_mode_t *mode, char *err, size_t errlen)
{
	ss_cfg_value_t v;

	ss_cfg_value_json(&v, ss_cfg_setting_by_key("plugin_mode"), j);
	return enum_value(&v, (int *)mode, err, errlen);
}

/* Outside the programs it is for: 1 to skip a file's value, 0 to go on,
 * or -EINVAL with err. */
static int out_of_scope(const ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	const ss_setting_t *s = v->set;

	if (ss_cfg_setting_for(s, cfg->prog))
		return 0;
	if (v->json != NULL && (s->flags & SS_SET_FILE_SKIPS))
		return 1;
	if (v->json != NULL && (s->flags & SS_SET_FILE_KEEPS))
		return 0;
	/* ss-manager reads a file its ports' programs may share (libev's
	 * does), and sets its ports' settings over the control socket. */
	if (v->json != NULL && cfg->prog == SS_PROG_MANAGER)
		return 1;
	if (s->scope == NULL)
		return ss_cfg_err(err, errlen, "%s is not a setting of %s", v->name,
				  cfg->prog_name);
	return ss_cfg_err(err, errlen, s->scope, v->name, cfg->prog_name);
}

int ss_cfg_value_set(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	int rc = out_of_scope(cfg, v, err, errlen);

	if (rc != 0)
		return rc > 0 ? 0 : rc;
	switch (v->set->type) {
	case SS_SET_STRING:
		return ss_cfg_value_set_string(cfg, v, err, errlen);
	case SS_SET_INT:
		return set_int(cfg, v, err, errlen);
	case SS_SET_BOOL:
		return set_bool(cfg, v, err, errlen);
	case SS_SET_ENUM:
		return enum_value(v, (int *)((char *)cfg + v->set->off), err, errlen);
	case SS_SET_PORT:
		return set_port(cfg, v, err, errlen);
	case SS_SET_FN:
		return v->set->fn(cfg, v, err, errlen);
	case SS_SET_HELP:
	case SS_SET_VERSION:
	case SS_SET_UNUSED:
	default:
		return 0;
	}
}
