/* SPDX-License-Identifier: MIT */
/* ss-manager's own settings: the ports of "port_password", the plugins a
 * port may be added with, --executable (taken and ignored), and the checks
 * of its configuration as a whole. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"
#include "crypto/primitives.h"
#include "proto/url.h"

int ss_cfg_set_port_password(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	char *text;

	if (v->json == NULL || !cJSON_IsObject(v->json))
		return ss_cfg_err(err, errlen,
				  "%s must be an object of ports and passwords "
				  "({\"8388\": \"password\", ...})",
				  v->name);
	for (const cJSON *p = v->json->child; p != NULL; p = p->next) {
		uint16_t port;

		if (ss_cfg_port(p->string, &port) != 0 || !cJSON_IsString(p) ||
		    p->valuestring[0] == '\0')
			return ss_cfg_err(err, errlen,
					  "%s: \"%.16s\" must be a port (1-65535) with a "
					  "non-empty password",
					  v->name, p->string);
	}
	text = cJSON_PrintUnformatted(v->json);
	if (text == NULL)
		return ss_cfg_err(err, errlen, "%s: out of memory", v->name);
	if (cfg->port_password != NULL) {
		ss_wipe(cfg->port_password, strlen(cfg->port_password));
		free(cfg->port_password);
	}
	cfg->port_password = text;
	return 0;
}

/* An array of program names, kept one a line. */
int ss_cfg_set_plugins(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	size_t used = 0;

	if (v->json == NULL || !cJSON_IsArray(v->json))
		return ss_cfg_err(err, errlen, "%s must be an array of plugin names", v->name);
	cfg->plugins_allowed[0] = '\0';
	for (const cJSON *p = v->json->child; p != NULL; p = p->next) {
		size_t n;

		if (!cJSON_IsString(p) || !ss_url_plugin_name_ok(p->valuestring))
			return ss_cfg_value_refuse(
			    v, "must hold plugin programs' names (no path, no options)", err,
			    errlen);
		n = strlen(p->valuestring);
		if (used + n + 2 > sizeof(cfg->plugins_allowed))
			return ss_cfg_err(err, errlen, "%s: too many plugins", v->name);
		memcpy(cfg->plugins_allowed + used, p->valuestring, n);
		used += n;
		cfg->plugins_allowed[used++] = '\n';
		cfg->plugins_allowed[used] = '\0';
	}
	return 0;
}

int ss_cfg_set_executable(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	ss_cfg_warn(cfg, "%s is ignored: ss-manager serves every port itself, in one process",
		    v->name);
	return 0;
}

int ss_cfg_finish_manager(ss_config_t *cfg, char *err, size_t errlen)
{
	if (cfg->manager_address[0] == '\0')
		return ss_cfg_err(err, errlen,
				  "missing manager address (--manager-address or "
				  "\"manager_address\")");
	if (cfg->plugin[0] &&
	    ss_cfg_plugin_carries(cfg, cfg->plugin, cfg->plugin_mode, &cfg->plugin_tcp,
				  &cfg->plugin_udp, NULL, err, errlen) != 0)
		return -EINVAL;
	if (cfg->state_file[0] == '\0' && cfg->workdir[0] != '\0' &&
	    snprintf(cfg->state_file, sizeof(cfg->state_file), "%s/ss-manager.json",
		     cfg->workdir) >= (int)sizeof(cfg->state_file))
		return ss_cfg_err(err, errlen, "-D/--workdir: path too long");
	if (cfg->timeout == 0)
		cfg->timeout = 60;
	if (cfg->workers == 0)
		cfg->workers = ss_cfg_online_cpus();
	cfg->validated = true;
	return 0;
}
