/* SPDX-License-Identifier: MIT */
/* -h names exactly the options the parser takes, program by program: both
 * come from the settings table (src/config/config_table.c), which the man
 * pages and completions are checked against through -h
 * (tests/integration/test_completions.py). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

#define MAX_OPTS 64

static bool has(char (*set)[32], size_t n, const char *opt)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(set[i], opt) == 0)
			return true;
	return false;
}

/* Each "-x" or "--name" token of the usage text, as a reader sees them. */
static size_t usage_options(ss_prog_t prog, char (*out)[32])
{
	char *text = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	ss_config_usage(prog, f);
	fclose(f);
	for (char *p = text; *p != '\0'; p++) {
		size_t k = 0;
		if (*p != '-' || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-')))
			continue;
		while (p[k] == '-')
			k++;
		if (k > 2 || !isalnum((unsigned char)p[k]))
			continue;
		while (isalnum((unsigned char)p[k]) || p[k] == '-')
			k++;
		if (k >= 32 || (p[1] != '-' && k != 2))
			continue;
		char opt[32];
		memcpy(opt, p, k);
		opt[k] = '\0';
		if (!has(out, n, opt) && n < MAX_OPTS)
			strcpy(out[n++], opt);
		p += k - 1;
	}
	free(text);
	return n;
}

static void check_prog(ss_prog_t prog)
{
	char table[MAX_OPTS][32], usage[MAX_OPTS][32];
	size_t nt = ss_config_cli_options(prog, table, MAX_OPTS);
	size_t nu = usage_options(prog, usage);

	assert_true(nt > 20 && nt < MAX_OPTS);
	for (size_t i = 0; i < nt; i++)
		if (!has(usage, nu, table[i]))
			fail_msg("program %d takes %s but -h does not name it", (int)prog,
				 table[i]);
	for (size_t i = 0; i < nu; i++)
		if (!has(table, nt, usage[i]))
			fail_msg("-h of program %d names %s, which it does not take", (int)prog,
				 usage[i]);
}

static void test_usage_matches_parser(void **state)
{
	(void)state;
	check_prog(SS_PROG_LOCAL);
	check_prog(SS_PROG_SERVER);
	check_prog(SS_PROG_TUNNEL);
	check_prog(SS_PROG_REDIR);
	check_prog(SS_PROG_MANAGER);
}

static void test_options_per_program(void **state)
{
	char t[MAX_OPTS][32];
	size_t n;

	(void)state;
	n = ss_config_cli_options(SS_PROG_TUNNEL, t, MAX_OPTS);
	assert_true(has(t, n, "-L") && has(t, n, "--server-url") && !has(t, n, "--print-url"));
	assert_true(has(t, n, "--check") && !has(t, n, "-A") && !has(t, n, "--executable"));
	n = ss_config_cli_options(SS_PROG_SERVER, t, MAX_OPTS);
	assert_true(!has(t, n, "-L") && !has(t, n, "--server-url") && has(t, n, "--print-url"));
	n = ss_config_cli_options(SS_PROG_LOCAL, t, MAX_OPTS);
	assert_true(!has(t, n, "-L") && has(t, n, "--server-url") && !has(t, n, "--print-url"));
	/* Never more than cap. */
	assert_int_equal(ss_config_cli_options(SS_PROG_LOCAL, t, 3), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usage_matches_parser),
	    cmocka_unit_test(test_options_per_program),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
