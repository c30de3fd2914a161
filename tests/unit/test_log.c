/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/log.h"

/* Runs fn with stderr sent to a file; returns what it wrote. */
static size_t captured(void (*fn)(int *), int *arg, char *out, size_t len)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	fn(arg);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(f);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
	return n;
}

static void log_debug_counting(int *n)
{
	ss_debug("debug line %d", ++*n);
}

static void log_info_counting(int *n)
{
	ss_info("info line %d", ++*n);
}

static void log_notice(int *n)
{
	(void)n;
	ss_notice("notice line");
}

static void test_silent_levels_skip_their_arguments(void **state)
{
	char out[512];
	int n = 0;
	(void)state;

	ss_log_setup("test", 0, false);
	assert_int_equal(captured(log_debug_counting, &n, out, sizeof(out)), 0);
	assert_int_equal(captured(log_info_counting, &n, out, sizeof(out)), 0);
	assert_int_equal(n, 0);
	/* An if without braces around a log line still takes its else. */
	if (n)
		ss_info("never %d", ++n);
	else
		n = 7;
	assert_int_equal(n, 7);
}

static void test_enabled_levels_print(void **state)
{
	char out[512];
	int n = 0;
	(void)state;

	ss_log_setup("test", 0, false);
	captured(log_notice, &n, out, sizeof(out));
	assert_non_null(strstr(out, "notice line"));

	ss_log_setup("test", 1, false);
	captured(log_info_counting, &n, out, sizeof(out));
	assert_int_equal(n, 1);
	assert_non_null(strstr(out, "INFO: info line 1"));
	assert_int_equal(captured(log_debug_counting, &n, out, sizeof(out)), 0);
	assert_int_equal(n, 1);

	ss_log_setup("test", 2, false);
	captured(log_debug_counting, &n, out, sizeof(out));
	assert_int_equal(n, 2);
	assert_non_null(strstr(out, "DEBUG: debug line 2"));
	ss_log_setup("test", 0, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_silent_levels_skip_their_arguments),
	    cmocka_unit_test(test_enabled_levels_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
