/* SPDX-License-Identifier: MIT */
/* The online configuration (SIP008): its settings, and the servers of a
 * document it brings into a running configuration. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"
#include "crypto/primitives.h"
#include "proto/httpc.h"
#include "proto/sip008.h"

/* The URL, checked now so that a typo is told at start. */
static int online_url(ss_config_t *cfg, const ss_cfg_value_t *v, const char *text, char *err,
		      size_t errlen)
{
	ss_httpc_url_t u;
	char why[512];

	if (!text[0])
		return ss_cfg_err(err, errlen, "empty URL for %s", v->name);
	if (ss_cfg_copy(cfg->online_url, sizeof(cfg->online_url), text) != 0)
		return ss_cfg_err(err, errlen, "%s: the URL is longer than %zu bytes", v->name,
				  sizeof(cfg->online_url) - 1);
	if (ss_httpc_url_parse(text, &u, why, sizeof(why)) != 0)
		return ss_cfg_err(err, errlen, "%s: %s", v->name, why);
	return 0;
}

int ss_cfg_set_online(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	const cJSON *j = v->json, *item, *url = NULL;

	if (j == NULL || cJSON_IsString(j))
		return online_url(cfg, v, j ? j->valuestring : v->arg, err, errlen);
	if (!cJSON_IsObject(j))
		return ss_cfg_value_refuse(
		    v, "must be a URL or an object with \"url\" and \"update_interval\"", err,
		    errlen);
	cJSON_ArrayForEach(item, j)
	{
		if (strcmp(item->string, "url") == 0) {
			url = item;
		} else if (strcmp(item->string, "update_interval") == 0) {
			double d = item->valuedouble;
			if (!cJSON_IsNumber(item) || d < 1 || d > SS_TIMEOUT_MAX ||
			    (double)(long)d != d)
				return ss_cfg_err(err, errlen,
						  "%s: \"update_interval\" must be a number of "
						  "seconds from 1 to %ld",
						  v->name, SS_TIMEOUT_MAX);
			cfg->online_interval = (int)d;
		} else {
			return ss_cfg_err(err, errlen,
					  "%s: unknown key \"%.64s\" (it takes \"url\" and "
					  "\"update_interval\")",
					  v->name, item->string);
		}
	}
	if (!cJSON_IsString(url))
		return ss_cfg_err(err, errlen, "%s needs \"url\", a string", v->name);
	return online_url(cfg, v, url->valuestring, err, errlen);
}

int ss_cfg_finish_online(ss_config_t *cfg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (cfg->ca_file[0] && !cfg->online_url[0])
		ss_cfg_warn(cfg, "--ca-file/\"ca_file\" is for the online configuration, which "
				 "is not set: ignored");
	if (cfg->online_url[0] && cfg->online_interval == 0)
		cfg->online_interval = SS_ONLINE_INTERVAL_DEFAULT;
	return 0;
}

/* Wipes entries [from, n_servers) and drops them. */
static void online_drop(ss_config_t *cfg, size_t from)
{
	for (size_t i = from; i < cfg->n_servers; i++)
		ss_wipe(&cfg->servers[i], sizeof(cfg->servers[i]));
	cfg->n_servers = from;
}

int ss_config_set_document(ss_config_t *cfg, const struct ss_sip008 *doc, size_t *left_out,
			   char *err, size_t errlen)
{
	size_t first = cfg->n_static_servers;
	char name[128];

	online_drop(cfg, first);
	*left_out = doc->n_more;
	for (size_t i = 0; i < doc->n; i++) {
		const ss_sip008_server_t *s = &doc->s[i];

		if (cfg->n_servers == SS_MAX_SERVERS) {
			*left_out += doc->n - i;
			break;
		}
		snprintf(name, sizeof(name), "online server %zu%s%.40s%s", i + 1,
			 s->u.tag[0] ? " (\"" : "", s->u.tag, s->u.tag[0] ? "\")" : "");
		if (ss_cfg_add_url_entry(cfg, &s->u, "online configuration", name, err,
					 errlen) != 0 ||
		    ss_cfg_finish_entry(cfg, cfg->n_servers - 1, err, errlen) != 0)
			goto fail;
	}
	if (ss_cfg_check_worker_plugins(cfg, err, errlen) != 0)
		goto fail;
	return 0;
fail:
	online_drop(cfg, first);
	ss_cfg_one_line(err, errlen);
	return -EINVAL;
}

int ss_config_copy(ss_config_t *dst, const ss_config_t *src)
{
	memcpy(dst, src, sizeof(*dst));
	dst->users = NULL;
	dst->socks_creds = NULL;
	dst->port_password = NULL;
	if (src->n_users && !(dst->users = malloc(src->n_users * sizeof(*src->users))))
		goto fail;
	if (dst->users)
		memcpy(dst->users, src->users, src->n_users * sizeof(*src->users));
	if (src->n_socks_creds &&
	    !(dst->socks_creds = malloc(src->n_socks_creds * sizeof(*src->socks_creds))))
		goto fail;
	if (dst->socks_creds)
		memcpy(dst->socks_creds, src->socks_creds,
		       src->n_socks_creds * sizeof(*src->socks_creds));
	if (src->port_password && !(dst->port_password = strdup(src->port_password)))
		goto fail;
	return 0;
fail:
	if (!dst->users)
		dst->n_users = 0;
	if (!dst->socks_creds)
		dst->n_socks_creds = 0;
	ss_config_clear(dst);
	return -ENOMEM;
}
