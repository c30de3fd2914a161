/* SPDX-License-Identifier: MIT */
/* The command line of shadowsocks-libev 3.3.5 (ss-local, ss-server,
 * ss-tunnel, ss-redir), as its getopt strings and long options define it,
 * built from the settings table (config_table.c). All four programs accept
 * the union of libev's flags except -L, which only ss-tunnel takes, and -T,
 * which only ss-redir takes; flags of ss-manager are refused with a
 * reason. */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"
#include "util/result.h"

/* getopt_long's value of a long option: past every short one, the row. */
#define LONG_BASE 0x100

/* The options, as getopt_long takes them: the short ones with a leading
 * ':', so that a missing value is its own case, and a long one per row
 * that has one. */
typedef struct cli_options {
	char shorts[1 + 2 * SS_CFG_SETTINGS_MAX + 1];
	struct option longs[SS_CFG_SETTINGS_MAX + 1];
} cli_options_t;

_Static_assert(LONG_BASE > 0xff, "long options follow every short one");

static void cli_options(cli_options_t *o)
{
	size_t ns = 0, nl = 0;

	memset(o, 0, sizeof(*o));
	o->shorts[ns++] = ':';
	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *s = &ss_cfg_settings[i];

		if (s->opt != '\0') {
			o->shorts[ns++] = s->opt;
			if (s->arg != NULL)
				o->shorts[ns++] = ':';
		}
		if (s->lopt != NULL)
			o->longs[nl++] =
			    (struct option){s->lopt, s->arg ? required_argument : no_argument, NULL,
					    LONG_BASE + (int)i};
	}
}

/* The row of what getopt_long returned, and whether it was a long option. */
static const ss_setting_t *cli_row(int c, bool *long_name)
{
	*long_name = c >= LONG_BASE;
	if (*long_name)
		return (size_t)(c - LONG_BASE) < ss_cfg_n_settings ? &ss_cfg_settings[c - LONG_BASE]
								   : NULL;
	for (size_t i = 0; c > 0 && i < ss_cfg_n_settings; i++)
		if (ss_cfg_settings[i].opt == c)
			return &ss_cfg_settings[i];
	return NULL;
}

/* How messages name an option: "-p", "--mtu". */
static const char *opt_name(int c, char *buf, size_t cap)
{
	bool long_name;
	const ss_setting_t *s = cli_row(c, &long_name);

	if (long_name && s != NULL)
		snprintf(buf, cap, "--%s", s->lopt);
	else if (long_name)
		snprintf(buf, cap, "(option %d)", c);
	else if (isprint(c))
		snprintf(buf, cap, "-%c", c);
	else
		snprintf(buf, cap, "-\\x%02x", (unsigned)c & 0xffu);
	return buf;
}

/* Stores one option's value in cfg by its row and marks the setting as the
 * command line's, so the file leaves it alone; 0 or -EINVAL with err. */
static int store_option(ss_config_t *cfg, const ss_setting_t *s, bool long_name, const char *arg,
			char *err, size_t errlen)
{
	ss_cfg_value_t v;
	int rc;

	ss_cfg_value_arg(&v, s, long_name, arg);
	rc = ss_cfg_value_set(cfg, &v, err, errlen);
	if (rc == 0 && s->field >= 0)
		cfg->cli_set |= ss_cfg_bit((ss_cfg_field_t)s->field);
	if (!(s->flags & SS_SET_QUERY))
		cfg->cli_settings = true;
	return rc;
}

size_t ss_config_cli_options(ss_prog_t prog, char (*out)[32], size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *s = &ss_cfg_settings[i];

		if (!ss_cfg_setting_for(s, prog) || (s->flags & SS_SET_REFUSED))
			continue;
		if (s->opt != '\0' && n < cap)
			snprintf(out[n++], sizeof(out[0]), "-%c", s->opt);
		if (s->lopt != NULL && n < cap)
			snprintf(out[n++], sizeof(out[0]), "--%s", s->lopt);
	}
	return n;
}

/* getopt_long's '?' or ':' into err. */
static void cli_refuse(int c, char **argv, char *err, size_t errlen)
{
	char name[32];

	if (c == ':')
		ss_cfg_err(err, errlen, "option %s needs a value",
			   opt_name(optopt, name, sizeof(name)));
	else if (optopt >= LONG_BASE)
		ss_cfg_err(err, errlen, "option %s takes no value",
			   opt_name(optopt, name, sizeof(name)));
	else if (optopt != 0)
		ss_cfg_err(err, errlen, "unknown option %s", opt_name(optopt, name, sizeof(name)));
	else
		ss_cfg_err(err, errlen, "unknown option '%s'", argv[optind - 1]);
}

ss_config_status_t ss_config_parse_cli(ss_config_t *cfg, int argc, char **argv, char *err,
				       size_t errlen)
{
	cli_options_t o;
	int c;

	if (argc <= 1)
		return SS_CONFIG_RUN;

	cli_options(&o);
	/* getopt keeps its state in globals: 0 makes GNU getopt start over
	 * (and re-read its environment), so parsing can run more than once. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, o.shorts, o.longs, NULL)) != -1) {
		bool long_name;
		const ss_setting_t *s = cli_row(c, &long_name);

		if (c == ':' || c == '?' || s == NULL) {
			cli_refuse(c, argv, err, errlen);
			return SS_CONFIG_ERROR;
		}
		if (s->type == SS_SET_HELP)
			return SS_CONFIG_HELP;
		if (s->type == SS_SET_VERSION)
			return SS_CONFIG_VERSION;
		if (store_option(cfg, s, long_name, optarg, err, errlen) != 0)
			return SS_CONFIG_ERROR;
	}
	if (optind < argc) {
		ss_cfg_err(err, errlen, "unexpected argument '%s'", argv[optind]);
		return SS_CONFIG_ERROR;
	}
	return SS_CONFIG_RUN;
}
