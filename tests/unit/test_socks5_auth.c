/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/socks5_auth.h"
#include "util/result.h"

/* The login message */

static size_t login_msg(uint8_t *out, const char *name, const char *pass)
{
	size_t nl = strlen(name), pl = strlen(pass);

	out[0] = 1;
	out[1] = (uint8_t)nl;
	memcpy(out + 2, name, nl);
	out[2 + nl] = (uint8_t)pl;
	memcpy(out + 3 + nl, pass, pl);
	return 3 + nl + pl;
}

static void test_login_parses_and_every_prefix_is_incomplete(void **state)
{
	(void)state;
	uint8_t buf[600];
	size_t n = login_msg(buf, "alice", "secret"), used = 999;
	ss_socks5_login_t l;

	memcpy(buf + n, "\x05\x01\x00", 3); /* the request after it is not consumed */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(ss_socks5_parse_login(buf, i, &used, &l), SS_AGAIN);
		assert_int_equal(used, 999);
	}
	assert_int_equal(ss_socks5_parse_login(buf, n + 3, &used, &l), SS_OK);
	assert_int_equal(used, n);
	assert_int_equal(l.name_len, 5);
	assert_memory_equal(l.name, "alice", 5);
	assert_int_equal(l.pass_len, 6);
	assert_memory_equal(l.pass, "secret", 6);
}

static void test_login_longest_fields(void **state)
{
	(void)state;
	char name[256], pass[256];
	uint8_t buf[600];
	size_t used;
	ss_socks5_login_t l;

	memset(name, 'n', 255);
	memset(pass, 'p', 255);
	name[255] = pass[255] = '\0';
	size_t n = login_msg(buf, name, pass);
	assert_int_equal(n, 513);
	assert_int_equal(ss_socks5_parse_login(buf, n, &used, &l), SS_OK);
	assert_int_equal(l.name_len, 255);
	assert_int_equal(l.pass_len, 255);
}

static void test_login_refusals(void **state)
{
	(void)state;
	const uint8_t v5[] = {5, 1, 'a', 1, 'b'};
	const uint8_t v0[] = {0};
	const uint8_t no_name[] = {1, 0};
	const uint8_t no_pass[] = {1, 1, 'a', 0};
	ss_socks5_login_t l;
	size_t used = 999;

	/* Each is judged as soon as the byte that makes it wrong arrives. */
	assert_int_equal(ss_socks5_parse_login(v5, 1, &used, &l), SS_ERR);
	assert_int_equal(ss_socks5_parse_login(v0, 1, &used, &l), SS_ERR);
	assert_int_equal(ss_socks5_parse_login(no_name, 2, &used, &l), SS_ERR);
	assert_int_equal(ss_socks5_parse_login(no_pass, 4, &used, &l), SS_ERR);
	assert_int_equal(used, 999);
}

static void test_greeting_offers(void **state)
{
	(void)state;
	const uint8_t g[] = {5, 2, 0, 2};
	const uint8_t none[] = {5, 1, 0};

	assert_true(ss_socks5_greeting_offers(g, sizeof(g), SS_SOCKS5_AUTH_USERPASS));
	assert_false(ss_socks5_greeting_offers(none, sizeof(none), SS_SOCKS5_AUTH_USERPASS));
	/* A greeting that claims more methods than it holds offers nothing. */
	assert_false(ss_socks5_greeting_offers(g, 3, SS_SOCKS5_AUTH_USERPASS));
}

static void test_login_reply(void **state)
{
	(void)state;
	uint8_t out[2];

	assert_int_equal(ss_socks5_encode_login_reply(true, out), 2);
	assert_memory_equal(out, "\x01\x00", 2);
	ss_socks5_encode_login_reply(false, out);
	assert_memory_equal(out, "\x01\x01", 2);
}

/* The check */

static ss_socks5_login_t as_login(const char *name, const char *pass)
{
	ss_socks5_login_t l = {(const uint8_t *)name, (const uint8_t *)pass, strlen(name),
			       strlen(pass)};
	return l;
}

static void test_check(void **state)
{
	(void)state;
	ss_socks5_cred_t c[2];

	assert_int_equal(ss_socks5_cred_set(&c[0], "alice", "one"), 0);
	assert_int_equal(ss_socks5_cred_set(&c[1], "bob", "two"), 0);

	ss_socks5_login_t ok1 = as_login("alice", "one"), ok2 = as_login("bob", "two");
	assert_true(ss_socks5_login_check(c, 2, &ok1));
	assert_true(ss_socks5_login_check(c, 2, &ok2));

	/* Another user's password, a prefix, an extension, a case change. */
	const char *bad[][2] = {{"alice", "two"}, {"bob", "one"},    {"alice", "on"},
				{"alic", "one"},  {"alicee", "one"}, {"Alice", "one"},
				{"carol", "one"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ss_socks5_login_t l = as_login(bad[i][0], bad[i][1]);
		assert_false(ss_socks5_login_check(c, 2, &l));
	}
	/* A trailing NUL the stored padding holds is still a longer password. */
	ss_socks5_login_t nul = {(const uint8_t *)"alice", (const uint8_t *)"one\0", 5, 4};
	assert_false(ss_socks5_login_check(c, 2, &nul));
	assert_false(ss_socks5_login_check(c, 0, &ok1));
}

static void test_cred_set_lengths(void **state)
{
	(void)state;
	ss_socks5_cred_t c;
	char long_[300];

	memset(long_, 'x', 256);
	long_[256] = '\0';
	assert_int_equal(ss_socks5_cred_set(&c, "", "p"), -EINVAL);
	assert_int_equal(ss_socks5_cred_set(&c, "n", ""), -EINVAL);
	assert_int_equal(ss_socks5_cred_set(&c, long_, "p"), -EINVAL);
	assert_int_equal(ss_socks5_cred_set(&c, "n", long_), -EINVAL);
	long_[255] = '\0';
	assert_int_equal(ss_socks5_cred_set(&c, long_, long_), 0);
	assert_int_equal(c.name_len, 255);
}

/* The users file */

static void test_users_file(void **state)
{
	(void)state;
	const char text[] = "# users\n\nalice:one\r\nbob:pass:with:colons\n#carol:x\ndave:d";
	ss_socks5_cred_t *v = NULL;
	size_t n = 0;
	char err[128] = "";

	assert_int_equal(ss_socks5_users_parse(text, strlen(text), &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	ss_socks5_login_t a = as_login("alice", "one"), b = as_login("bob", "pass:with:colons"),
			  d = as_login("dave", "d"), c = as_login("#carol", "x"),
			  cr = as_login("alice", "one\r");
	assert_true(ss_socks5_login_check(v, n, &a));
	assert_true(ss_socks5_login_check(v, n, &b));
	assert_true(ss_socks5_login_check(v, n, &d));
	assert_false(ss_socks5_login_check(v, n, &c));
	assert_false(ss_socks5_login_check(v, n, &cr));
	free(v);
}

static void users_bad(const char *text, size_t len, const char *want)
{
	ss_socks5_cred_t *v = NULL;
	size_t n = 0;
	char err[128] = "";

	assert_int_equal(ss_socks5_users_parse(text, len, &v, &n, err, sizeof(err)), -EINVAL);
	assert_null(v);
	assert_non_null(strstr(err, want));
}

static void test_users_file_refusals(void **state)
{
	(void)state;
	char big[600];

	users_bad("alice:one\nbob\n", 14, "line 2: expected name:password");
	users_bad(":nameless\n", 10, "line 1: the name must be 1 to 255 bytes");
	users_bad("a:\n", 3, "line 1: the password must be 1 to 255 bytes");
	users_bad("a:1\nb:2\na:3\n", 12, "line 3: the name is taken twice");
	users_bad("a:x\0y\n", 6, "line 1: holds a NUL byte");
	users_bad("# only a comment\n\n", 18, "no users");
	users_bad("", 0, "no users");
	memset(big, 'p', sizeof(big));
	memcpy(big, "a:", 2);
	users_bad(big, 2 + 256, "line 1: the password must be 1 to 255 bytes");
	/* The password never shows in a message. */
	users_bad("a:visible\nb\n", 12, "line 2");
}

static void test_users_file_most(void **state)
{
	(void)state;
	size_t cap = (SS_SOCKS5_USERS_MAX + 1) * 16, len = 0;
	char *text = malloc(cap);
	ss_socks5_cred_t *v = NULL;
	size_t n = 0;
	char err[128];

	assert_non_null(text);
	for (int i = 0; i < SS_SOCKS5_USERS_MAX; i++)
		len += (size_t)snprintf(text + len, cap - len, "u%d:p\n", i);
	assert_int_equal(ss_socks5_users_parse(text, len, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, SS_SOCKS5_USERS_MAX);
	free(v);
	v = NULL;
	len += (size_t)snprintf(text + len, cap - len, "one-more:p\n");
	assert_int_equal(ss_socks5_users_parse(text, len, &v, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 1024 users"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_login_parses_and_every_prefix_is_incomplete),
	    cmocka_unit_test(test_login_longest_fields),
	    cmocka_unit_test(test_login_refusals),
	    cmocka_unit_test(test_greeting_offers),
	    cmocka_unit_test(test_login_reply),
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_cred_set_lengths),
	    cmocka_unit_test(test_users_file),
	    cmocka_unit_test(test_users_file_refusals),
	    cmocka_unit_test(test_users_file_most),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
