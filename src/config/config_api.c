/* SPDX-License-Identifier: MIT */
/* The library's way to a configuration (include/shadowsocks.h): the same
 * parsers the programs use, behind an opaque handle. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

int ss_config_new(ss_prog_t prog, ss_config_t **out)
{
	ss_config_t *cfg;

	*out = NULL;
	if (prog != SS_PROG_LOCAL && prog != SS_PROG_SERVER && prog != SS_PROG_TUNNEL &&
	    prog != SS_PROG_REDIR)
		return -EINVAL;
	cfg = malloc(sizeof(*cfg));
	if (cfg == NULL)
		return -ENOMEM;
	ss_config_init(cfg, prog);
	*out = cfg;
	return 0;
}

/* A validated configuration has derived its keys and wiped the text they
 * came from: a new password or method could not be applied any more. */
static int api_changeable(const ss_config_t *cfg, char *err, size_t errlen)
{
	if (!cfg->validated)
		return 0;
	ss_cfg_err(err, errlen, "the configuration is validated and can no longer change");
	return -EBUSY;
}

int ss_config_load_json(ss_config_t *cfg, const char *json, char *err, size_t errlen)
{
	int rc = api_changeable(cfg, err, errlen);

	if (rc < 0)
		return rc;
	if (json == NULL)
		return ss_cfg_err(err, errlen, "no JSON text");
	return ss_config_parse_json(cfg, json, err, errlen);
}

int ss_config_load_args(ss_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
	int rc = api_changeable(cfg, err, errlen);

	if (rc < 0)
		return rc;
	if (argc < 1 || argv == NULL || argv[0] == NULL)
		return ss_cfg_err(err, errlen, "argv needs at least the program's name");
	/* A -c given before is not read again unless given again. prog_name
	 * would point into argv, which the caller need not keep: the default
	 * name stays. */
	cfg->config_file[0] = '\0';
	switch (ss_config_parse_cli(cfg, argc, argv, err, errlen)) {
	case SS_CONFIG_RUN:
		break;
	case SS_CONFIG_HELP:
	case SS_CONFIG_VERSION:
		return ss_cfg_err(err, errlen, "-h/--help and --version are for the programs");
	case SS_CONFIG_ERROR:
	default:
		ss_cfg_one_line(err, errlen);
		return -EINVAL;
	}
	if (cfg->config_file[0] != '\0' &&
	    ss_cfg_load_file(cfg, cfg->config_file, err, errlen) != 0) {
		ss_cfg_one_line(err, errlen);
		return -EINVAL;
	}
	return 0;
}

int ss_config_set(ss_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
	int rc = api_changeable(cfg, err, errlen);

	if (rc < 0)
		return rc;
	if (key == NULL || value == NULL)
		return ss_cfg_err(err, errlen, "a key and a value are needed");
	return ss_cfg_set_key(cfg, key, value, err, errlen);
}

int ss_config_validate(ss_config_t *cfg, char *err, size_t errlen)
{
	if (cfg->validated)
		return 0;
	if (ss_cfg_finish(cfg, err, errlen) == 0)
		return 0;
	ss_cfg_one_line(err, errlen);
	return -EINVAL;
}

void ss_config_free(ss_config_t *cfg)
{
	if (cfg == NULL)
		return;
	ss_config_clear(cfg);
	free(cfg);
}
