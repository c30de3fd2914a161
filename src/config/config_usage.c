/* SPDX-License-Identifier: MIT */
/* -h text: the flags each program accepts, from the settings table
 * (config_table.c), laid out as shadowsocks-libev lays out its own, so
 * users find them where they expect. */

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"
#include "crypto/primitives.h"

#define DESC_COL 35 /* where descriptions start */
#define WIDTH 78

static void line(FILE *f, const char *flag, const char *desc)
{
	fprintf(f, "       %-27s %s\n", flag, desc);
}

static void more(FILE *f, const char *desc)
{
	fprintf(f, "%*s%s\n", DESC_COL, "", desc);
}

/* The method list, wrapped under the -m description, and the default. */
void ss_cfg_usage_methods(FILE *f, ss_prog_t prog)
{
	const char *const *names = ss_method_names();
	int col = DESC_COL;

	(void)prog;
	fprintf(f, "%*s", DESC_COL, "");
	for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
		bool last = names[i + 1] == NULL;
		int w = (int)strlen(names[i]) + (last ? 1 : 2);
		if (col > DESC_COL && col + 1 + w > WIDTH) {
			fprintf(f, "\n%*s", DESC_COL, "");
			col = DESC_COL;
		} else if (col > DESC_COL) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%s%s", names[i], last ? "." : ",");
		col += w;
	}
	fputc('\n', f);
	more(f, "Default: " SS_DEFAULT_METHOD ".");
}

/* The file -c would default to now. */
void ss_cfg_usage_default_file(FILE *f, ss_prog_t prog)
{
	char path[4096];

	(void)prog;
	ss_cfg_default_path(path, sizeof(path));
	more(f, path);
}

static const char *const prog_names[] = {
    [SS_PROG_LOCAL] = "ss-local", [SS_PROG_SERVER] = "ss-server",   [SS_PROG_TUNNEL] = "ss-tunnel",
    [SS_PROG_REDIR] = "ss-redir", [SS_PROG_MANAGER] = "ss-manager",
};

void ss_config_version(ss_prog_t prog, void *out)
{
	const ss_crypto_backend_t *be = ss_crypto_default();
	const char *const *names = ss_method_names();
	FILE *f = out;
	char line[256];

	if (f == NULL)
		return;
	fprintf(f, "%s (shadowsocks-c) %s\n", prog_names[prog], SS_VERSION);
	fprintf(f, "crypto: %s\n", ss_crypto_own_setting(be, line, sizeof(line)));
	fprintf(f, "what seals each method on this CPU:\n");
	for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
		const ss_method_t *m;

		if (ss_method_lookup(names[i], &m, NULL, 0) == 0)
			fprintf(f, "  %-30s %s\n", names[i],
				ss_crypto_describe(be, m, line, sizeof(line)));
	}
	ss_config_version_libs(f);
}

/* One setting's lines: its options in the first column, in [ ] unless
 * prog needs it, then its help text. */
static void usage_setting(FILE *f, const ss_setting_t *s, ss_prog_t prog)
{
	bool serves = prog == SS_PROG_SERVER || prog == SS_PROG_MANAGER;
	const char *help = prog == SS_PROG_MANAGER && s->help_manager ? s->help_manager
			   : serves && s->help_server                 ? s->help_server
								      : s->help;
	const char *open = (s->required & SS_PROGS(prog)) ? "" : "[";
	const char *close = *open ? "]" : "";
	char flag[64], desc[64];
	size_t n;

	if (s->opt != '\0' && (s->lopt == NULL || (s->flags & SS_SET_HELP_SHORT)))
		n = (size_t)snprintf(flag, sizeof(flag), "%s-%c", open, s->opt);
	else if (s->opt != '\0')
		n = (size_t)snprintf(flag, sizeof(flag), "%s-%c, --%s", open, s->opt, s->lopt);
	else
		n = (size_t)snprintf(flag, sizeof(flag), "%s--%s", open, s->lopt);
	snprintf(flag + n, sizeof(flag) - n, "%s%s%s", s->arg ? " " : "", s->arg ? s->arg : "",
		 close);
	if (s->flags & SS_SET_GAP)
		fputc('\n', f);
	for (bool first = true; help != NULL; first = false) {
		const char *nl = strchr(help, '\n');

		n = nl ? (size_t)(nl - help) : strlen(help);
		snprintf(desc, sizeof(desc), "%.*s", (int)n, help);
		if (first)
			line(f, flag, desc);
		else
			more(f, desc);
		help = nl ? nl + 1 : NULL;
	}
	if (s->help_more != NULL)
		s->help_more(f, prog);
}

void ss_config_usage(ss_prog_t prog, void *out)
{
	FILE *f = out;

	if (f == NULL)
		return;

	fprintf(f, "\nshadowsocks-c %s (flags and config file of shadowsocks-libev 3.3.5)\n\n",
		SS_VERSION);
	fprintf(f, "  usage:\n\n    %s\n\n", prog_names[prog]);
	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *s = &ss_cfg_settings[i];

		if (s->help != NULL && ss_cfg_setting_for(s, prog))
			usage_setting(f, s, prog);
	}
	fputc('\n', f);
}
