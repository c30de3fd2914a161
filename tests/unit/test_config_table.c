/* SPDX-License-Identifier: MIT */
/* The settings table (src/config/config_table.c): each key and option
 * names one row, each row says what its type needs, and a value is held
 * to the same bounds whether it comes from the command line or a file. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"

static char err[512];

static void test_names_unique(void **state)
{
	(void)state;
	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *a = &ss_cfg_settings[i];

		assert_true(a->key != NULL || a->opt != '\0' || a->lopt != NULL);
		for (size_t j = i + 1; j < ss_cfg_n_settings; j++) {
			const ss_setting_t *b = &ss_cfg_settings[j];

			if (a->key && b->key && strcmp(a->key, b->key) == 0)
				fail_msg("key \"%s\" twice", a->key);
			if (a->opt && a->opt == b->opt)
				fail_msg("-%c twice", a->opt);
			if (a->lopt && b->lopt && strcmp(a->lopt, b->lopt) == 0)
				fail_msg("--%s twice", a->lopt);
		}
	}
}

static void test_rows_complete(void **state)
{
	(void)state;
	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *s = &ss_cfg_settings[i];
		bool option = s->opt != '\0' || s->lopt != NULL;

		switch (s->type) {
		case SS_SET_STRING:
			assert_true(s->size > 1);
			break;
		case SS_SET_INT:
			assert_true(s->min <= s->max);
			assert_true(s->size == sizeof(int) || s->size == sizeof(long));
			break;
		case SS_SET_ENUM:
			assert_non_null(s->names);
			break;
		case SS_SET_PORT:
			assert_non_null(s->label);
			break;
		case SS_SET_FN:
			assert_non_null(s->fn);
			break;
		default:
			break;
		}
		if (s->flags & (SS_SET_ARG_NONEMPTY | SS_SET_SECRET))
			assert_true(s->type == SS_SET_FN || (s->noun != NULL && s->label != NULL));
		/* An option outside some programs says why there. */
		if (s->type != SS_SET_UNUSED && (s->progs & SS_PROGS_ALL) != SS_PROGS_ALL &&
		    (option || !(s->flags & (SS_SET_FILE_SKIPS | SS_SET_FILE_KEEPS))))
			assert_non_null(s->scope);
		/* -h names every option a program takes. */
		if (option && !(s->flags & SS_SET_REFUSED))
			assert_non_null(s->help);
	}
}

/* Whether the command line takes "-x value" (or "--name value"). */
static bool cli_takes(const ss_setting_t *s, const char *value)
{
	char name[40], *argv[4];
	ss_config_t cfg;

	if (s->opt != '\0')
		snprintf(name, sizeof(name), "-%c", s->opt);
	else
		snprintf(name, sizeof(name), "--%s", s->lopt);
	argv[0] = "ss-local";
	argv[1] = name;
	argv[2] = (char *)value;
	argv[3] = NULL;
	ss_config_init(&cfg, SS_PROG_LOCAL);
	return ss_config_parse_cli(&cfg, 3, argv, err, sizeof(err)) == SS_CONFIG_RUN;
}

static bool json_takes(const ss_setting_t *s, const char *value)
{
	char text[128];
	ss_config_t cfg;

	snprintf(text, sizeof(text), "{\"%s\": \"%s\"}", s->key, value);
	ss_config_init(&cfg, SS_PROG_LOCAL);
	return ss_config_parse_json(&cfg, text, err, sizeof(err)) == 0;
}

/* Every integer with both a key and an option: one range, whichever source. */
static void test_int_bounds_shared(void **state)
{
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < ss_cfg_n_settings; i++) {
		const ss_setting_t *s = &ss_cfg_settings[i];
		long edges[] = {s->min - 1, s->min, s->max, s->max + 1};
		char value[32];

		if (s->type != SS_SET_INT || s->key == NULL || (!s->opt && !s->lopt))
			continue;
		for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
			bool in = edges[e] >= s->min && edges[e] <= s->max;

			snprintf(value, sizeof(value), "%ld", edges[e]);
			assert_int_equal(cli_takes(s, value), in);
			assert_int_equal(json_takes(s, value), in);
		}
		n++;
	}
	assert_true(n >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_unique),
	    cmocka_unit_test(test_rows_complete),
	    cmocka_unit_test(test_int_bounds_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
