/* SPDX-License-Identifier: MIT */
/* ss-local's SOCKS5 users in the configuration: the flags, the JSON keys,
 * the users file, which wins, and that the password text does not stay. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "proto/socks5_auth.h"
#include "testutil.h"

static char tmpdir[256];
static ss_config_t cfg; /* large: keep it off the stack */
static char err[1024];

/* ss_config_parse on prog with the base flags, then the NULL-terminated rest. */
static ss_config_status_t run(ss_prog_t prog, ...)
{
	char *argv[32] = {"ss-x", "-s", "192.0.2.1", "-p", "8388", "-l", "1080", "-k", "x"};
	int argc = 9;
	const char *s;
	va_list ap;

	va_start(ap, prog);
	while ((s = va_arg(ap, const char *)) != NULL && argc < 31)
		argv[argc++] = (char *)s;
	va_end(ap);
	argv[argc] = NULL;
	if (prog == SS_PROG_TUNNEL) {
		argv[argc++] = "-L";
		argv[argc++] = "192.0.2.2:53";
		argv[argc] = NULL;
	}
	ss_config_clear(&cfg);
	err[0] = '\0';
	return ss_config_parse(&cfg, prog, argc, argv, NULL, err, sizeof(err));
}

static const char *write_file(const char *name, const char *text)
{
	return tmp_write(tmpdir, name, text);
}

static bool logs_in(const char *name, const char *pass)
{
	ss_socks5_login_t l = {(const uint8_t *)name, (const uint8_t *)pass, strlen(name),
			       strlen(pass)};
	return ss_socks5_login_check(cfg.socks_creds, cfg.n_socks_creds, &l);
}

static void expect_error(const char *want, const char *secret, ss_config_status_t st)
{
	if (st != SS_CONFIG_ERROR || strstr(err, want) == NULL)
		fail_msg("want an error with <%s>, got %d <%s>", want, st, err);
	if (secret != NULL && strstr(err, secret) != NULL)
		fail_msg("the message shows the password: <%s>", err);
}

static void test_none_by_default(void **state)
{
	(void)state;
	assert_int_equal(run(SS_PROG_LOCAL, NULL), SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 0);
	assert_null(cfg.socks_creds);
}

static void test_flags(void **state)
{
	(void)state;
	assert_int_equal(run(SS_PROG_LOCAL, "--socks-user", "alice", "--socks-pass", "pw:1", NULL),
			 SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 1);
	assert_true(logs_in("alice", "pw:1"));
	assert_false(logs_in("alice", "pw:2"));
	/* The text is gone once the list is made. */
	assert_string_equal(cfg.socks_pass, "");
	ss_config_clear(&cfg);
	assert_null(cfg.socks_creds);
	assert_int_equal(cfg.n_socks_creds, 0);
}

static void test_flag_errors(void **state)
{
	(void)state;
	char long_[300];

	memset(long_, 'a', 256);
	long_[256] = '\0';
	expect_error("--socks-user/socks_user needs --socks-pass/socks_pass", NULL,
		     run(SS_PROG_LOCAL, "--socks-user", "alice", NULL));
	expect_error("--socks-pass/socks_pass needs --socks-user/socks_user", "hidden",
		     run(SS_PROG_LOCAL, "--socks-pass", "hidden", NULL));
	expect_error("--socks-pass must be 1 to 255 bytes", NULL,
		     run(SS_PROG_LOCAL, "--socks-user", "a", "--socks-pass", "", NULL));
	expect_error("--socks-user must be 1 to 255 bytes", NULL,
		     run(SS_PROG_LOCAL, "--socks-user", long_, "--socks-pass", "p", NULL));
	expect_error("--socks-pass must be 1 to 255 bytes", long_,
		     run(SS_PROG_LOCAL, "--socks-user", "a", "--socks-pass", long_, NULL));
	expect_error("are for ss-local", NULL,
		     run(SS_PROG_SERVER, "--socks-user", "a", "--socks-pass", "b", NULL));
	expect_error("are for ss-local", NULL, run(SS_PROG_TUNNEL, "--socks-users", "f", NULL));
}

static void test_users_file_and_flag(void **state)
{
	(void)state;
	const char *users = write_file("users", "# two\nalice:one\nbob:two\n");
	const char *dup = write_file("dup", "carol:three\n");

	assert_int_equal(run(SS_PROG_LOCAL, "--socks-users", users, "--socks-user", "carol",
			     "--socks-pass", "three", NULL),
			 SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 3);
	assert_true(logs_in("alice", "one"));
	assert_true(logs_in("bob", "two"));
	assert_true(logs_in("carol", "three"));
	assert_false(logs_in("carol", "one"));

	expect_error("given both by --socks-user and in", "four",
		     run(SS_PROG_LOCAL, "--socks-users", dup, "--socks-user", "carol",
			 "--socks-pass", "four", NULL));
	expect_error("line 2: expected name:password", "visible",
		     run(SS_PROG_LOCAL, "--socks-users",
			 write_file("bad", "a:visible\nno-colon-here\n"), NULL));
	expect_error("cannot read SOCKS5 users file", NULL,
		     run(SS_PROG_LOCAL, "--socks-users", "/nonexistent/users", NULL));
}

static void test_json_keys_and_cli_wins(void **state)
{
	(void)state;
	const char *users = write_file("fusers", "frank:f\n");
	char json[1024];

	snprintf(json, sizeof(json),
		 "{\"socks_user\": \"jo\", \"socks_pass\": \"jpw\", \"socks_users\": \"%s\"}",
		 users);
	const char *conf = write_file("c.json", json);

	assert_int_equal(run(SS_PROG_LOCAL, "-c", conf, NULL), SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 2);
	assert_true(logs_in("jo", "jpw"));
	assert_true(logs_in("frank", "f"));

	/* Any of the flags replaces all three keys. */
	assert_int_equal(
	    run(SS_PROG_LOCAL, "-c", conf, "--socks-user", "cli", "--socks-pass", "cpw", NULL),
	    SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 1);
	assert_true(logs_in("cli", "cpw"));
	assert_false(logs_in("frank", "f"));

	/* ss-server and ss-tunnel may share the file: the keys are ignored. */
	assert_int_equal(run(SS_PROG_TUNNEL, "-c", conf, NULL), SS_CONFIG_RUN);
	assert_int_equal(cfg.n_socks_creds, 0);
	assert_true(cfg.n_warnings >= 1);
	assert_non_null(strstr(cfg.warnings[cfg.n_warnings - 1], "are for ss-local"));
	assert_string_equal(cfg.socks_pass, "");
}

static int setup(void **state)
{
	(void)state;
	tmp_template(tmpdir, sizeof(tmpdir), "test_config_socks");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];

	ss_config_clear(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_none_by_default),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_flag_errors),
	    cmocka_unit_test(test_users_file_and_flag),
	    cmocka_unit_test(test_json_keys_and_cli_wins),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
