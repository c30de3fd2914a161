/* SPDX-License-Identifier: MIT */
/* The JSON file as shadowsocks-libev 3.3.5 reads it: what it lets pass
 * beyond JSON, where and how what it refuses is reported, and unknown
 * keys. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

static ss_config_t cfg; /* large: keep it off the stack */
static char err[512];

static int parse(const char *json)
{
	ss_config_clear(&cfg);
	ss_config_init(&cfg, SS_PROG_LOCAL);
	err[0] = '\0';
	return ss_config_parse_json(&cfg, json, err, sizeof(err));
}

static void expect_error(const char *json, const char *want)
{
	if (parse(json) != -EINVAL || strstr(err, want) == NULL)
		fail_msg("%s: want an error with <%s>, got <%s>", json, want, err);
}

static void test_libev_leniency(void **state)
{
	(void)state;
	/* Trailing commas, in objects and arrays, nested, before white space. */
	assert_int_equal(parse("{\"server\": [\"a\", \"b\",], \"server_port\": 1,}"), 0);
	assert_int_equal(cfg.n_servers, 2);
	assert_string_equal(cfg.servers[1].host, "b");
	assert_int_equal(cfg.server_port, 1);
	assert_int_equal(parse("{\"timeout\": 5 ,\n\t }"), 0);
	assert_int_equal(cfg.timeout, 5);
	assert_int_equal(parse("{\"x\": {\"a\": [[1,], {},],}, \"timeout\": 7,}"), 0);
	assert_int_equal(cfg.timeout, 7);
	/* A comma inside a string is the string's. */
	assert_int_equal(parse("{\"plugin_opts\": \"a=1,}\",}"), 0);
	assert_string_equal(cfg.plugin_opts, "a=1,}");
	/* One byte order mark. */
	assert_int_equal(parse("\xef\xbb\xbf{\"timeout\": 9}"), 0);
	assert_int_equal(cfg.timeout, 9);
	/* An escape JSON lacks is the letter itself; known ones stay. */
	assert_int_equal(parse("{\"plugin_opts\": \"a\\q\\\\b\\\"c\\u0041\", \"timeout\": 3}"), 0);
	assert_string_equal(cfg.plugin_opts, "aq\\b\"cA");
	assert_int_equal(cfg.timeout, 3);
}

static void test_refused_with_a_fix(void **state)
{
	(void)state;
	/* What libev refuses as well: each names the line, the column and
	 * what to do. */
	expect_error("{\"timeout\": 5,\n  // a comment\n}",
		     "line 2, column 3: JSON has no comments");
	expect_error("{\"timeout\": 5, /* a comment */ \"mtu\": 1}",
		     "line 1, column 16: JSON has no comments");
	expect_error("{\"timeout\": 5, # a comment\n}", "column 16: JSON has no comments");
	expect_error("{\"timeout\": 5 /* a comment */}", "column 15: JSON has no comments");
	expect_error("{'timeout': 5}", "column 2: JSON strings and keys take double quotes");
	expect_error("{\"mtu\": 1, timeout: 5}", "column 12: a key must be a string");
	expect_error("{\"mtu\": 1,, \"timeout\": 5}", "column 11: a comma with no value");
	expect_error("{,}", "column 2: a comma with no value");
	expect_error("{\"a\": [,]}", "column 8: a comma with no value");
	expect_error("{\"mtu\": 1\n \"timeout\": 5}", "line 2, column 2: a comma is missing");
	expect_error("{\"fast_open\": True}", "column 15: the literals are true, false and null");
	expect_error("{\"mtu\": 1} {}", "column 12: text after the end");
	expect_error("{\"mtu\": 1", "the text ends early");
	expect_error(" \n", "the file is empty");
	expect_error("\xef\xbb\xbf\xef\xbb\xbf{}", "line 1, column 2: unexpected byte 0xef");
	/* A column counts characters, not bytes. */
	expect_error("{\"plugin_opts\": \"\xc3\xa9\xc3\xa9\", x}", "column 23: a key must be");
}

static void test_unknown_keys_warn(void **state)
{
	(void)state;
	assert_int_equal(parse("{\"sever_port\": 1, \"plugin_opt\": \"\", \"tiemout\": 5, "
			       "\"zzzzzzzz\": 1, \"q\": 2}"),
			 0);
	assert_int_equal(cfg.n_warnings, 5);
	assert_string_equal(cfg.warnings[0],
			    "unknown key \"sever_port\", did you mean \"server_port\"?");
	assert_string_equal(cfg.warnings[1],
			    "unknown key \"plugin_opt\", did you mean \"plugin_opts\"?");
	assert_string_equal(cfg.warnings[2], "unknown key \"tiemout\", did you mean \"timeout\"?");
	assert_string_equal(cfg.warnings[3], "unknown key \"zzzzzzzz\", ignored");
	assert_string_equal(cfg.warnings[4], "unknown key \"q\", ignored");
	/* The file is named once the parser knows it. */
	strcpy(cfg.config_file, "/etc/x.json");
	assert_int_equal(ss_config_parse_json(&cfg, "{\"methd\": 1}", err, sizeof(err)), 0);
	assert_string_equal(cfg.warnings[5],
			    "unknown key \"methd\" in /etc/x.json, did you mean \"method\"?");
	/* libev's keys that these programs leave alone: no word. */
	assert_int_equal(parse("{\"port_password\": {\"1\": \"x\"}, \"manager_address\": \"a\", "
			       "\"workdir\": \"c\", \"tcp_tproxy\": true, "
			       "\"dscp\": {}, \"timeout\": 4}"),
			 0);
	assert_int_equal(cfg.n_warnings, 0);
	assert_int_equal(cfg.timeout, 4);
	/* Inside a "servers" entry too, named by its place. */
	assert_int_equal(parse("{\"servers\": [{\"server\": \"192.0.2.1\", \"server_port\": 8388, "
			       "\"pasword\": \"x\", \"tcp_weight\": 1}]}"),
			 0);
	assert_int_equal(cfg.n_warnings, 2);
	assert_string_equal(cfg.warnings[0], "unknown key \"pasword\" in \"servers\"[0], did you "
					     "mean \"password\"?");
	assert_string_equal(cfg.warnings[1],
			    "unknown key \"tcp_weight\" in \"servers\"[0], ignored");
	/* Many: the first ones kept, all counted, none overflows. */
	assert_int_equal(parse("{\"a1\":1,\"a2\":1,\"a3\":1,\"a4\":1,\"a5\":1,\"a6\":1,\"a7\":1,"
			       "\"a8\":1,\"a9\":1,\"a10\":1}"),
			 0);
	assert_int_equal(cfg.n_warnings, 10);
	assert_string_equal(cfg.warnings[SS_CONFIG_WARN_MAX - 1], "unknown key \"a8\", ignored");
}

/* Parses json for prog and checks it as a whole: the error must be want. */
static void expect_finish_error(ss_prog_t prog, const char *json, const char *want)
{
	ss_config_clear(&cfg);
	ss_config_init(&cfg, prog);
	assert_int_equal(ss_config_parse_json(&cfg, json, err, sizeof(err)), 0);
	assert_int_equal(ss_cfg_finish(&cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want);
}

/* A slip in a key the program needs: the message that it is missing names
 * the slip, as the warning does for any other key. */
static void test_slip_for_a_missing_key(void **state)
{
	(void)state;
	expect_finish_error(SS_PROG_SERVER, "{\"sever_port\": 8388, \"password\": \"x\"}",
			    "missing server port (-p or \"server_port\"): the JSON text has "
			    "\"sever_port\", did you mean \"server_port\"?");
	expect_finish_error(SS_PROG_LOCAL,
			    "{\"server\": \"h\", \"server_port\": 1, \"local_port\": 2, "
			    "\"pasword\": \"x\"}",
			    "missing password (-k or \"password\") or key (--key or \"key\"): the "
			    "JSON text has \"pasword\", did you mean \"password\"?");
	expect_finish_error(SS_PROG_LOCAL,
			    "{\"sever\": \"h\", \"server_port\": 1, \"local_port\": 2, "
			    "\"password\": \"x\"}",
			    "missing server address (-s or \"server\"): the JSON text has "
			    "\"sever\", did you mean \"server\"?");
	expect_finish_error(SS_PROG_TUNNEL,
			    "{\"server\": \"h\", \"server_port\": 1, \"local_port\": 2, "
			    "\"password\": \"x\", \"tunel_address\": \"a:1\"}",
			    "missing tunnel address (-L host:port or \"tunnel_address\"): the JSON "
			    "text has \"tunel_address\", did you mean \"tunnel_address\"?");
	/* The file named, as the program reads it. */
	ss_config_clear(&cfg);
	ss_config_init(&cfg, SS_PROG_LOCAL);
	strcpy(cfg.config_file, "/etc/x.json");
	assert_int_equal(ss_config_parse_json(&cfg,
					      "{\"server\": \"h\", \"server_port\": 1, "
					      "\"password\": \"x\", \"locl_port\": 2}",
					      err, sizeof(err)),
			 0);
	assert_int_equal(ss_cfg_finish(&cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "missing local port (-l or \"local_port\"): the config file has "
				 "\"locl_port\", did you mean \"local_port\"?");
	/* A slip for another key than the one missing says nothing here. */
	expect_finish_error(SS_PROG_SERVER, "{\"methd\": \"none\", \"password\": \"x\"}",
			    "missing server port (-p or \"server_port\")");
	/* Nor is one kept for a key the file sets as well. */
	assert_int_equal(parse("{\"sever_port\": 1, \"server_port\": 2, \"methd\": 3}"), 0);
	assert_int_equal(cfg.n_typos, 1);
	assert_string_equal(cfg.typos[0].key, "methd");
	assert_string_equal(cfg.typos[0].known, "method");
	/* A "servers" entry without its address. */
	expect_error("{\"servers\": [{\"sever\": \"192.0.2.1\"}]}",
		     "\"servers\"[0]: missing \"server\" (the server's address): it has "
		     "\"sever\", did you mean \"server\"?");
	expect_error("{\"servers\": [{\"adress\": \"192.0.2.1\"}]}", "did you mean \"address\"?");
	expect_error("{\"servers\": [{\"port\": 1}]}",
		     "\"servers\"[0]: missing \"server\" (the server's address)");
	assert_null(strstr(err, "did you mean"));
}

static void test_closest(void **state)
{
	static const char *const known[] = {"server", "server_port", "local_port", "mode", "mtu"};
	(void)state;
	assert_string_equal(ss_cfg_closest("sever", known, 5), "server");
	assert_string_equal(ss_cfg_closest("server_prot", known, 5), "server_port");
	assert_string_equal(ss_cfg_closest("locl_port", known, 5), "local_port");
	assert_string_equal(ss_cfg_closest("mdoe", known, 5), "mode");
	assert_null(ss_cfg_closest("method", known, 5));
	assert_null(ss_cfg_closest("x", known, 5));
	assert_null(ss_cfg_closest("", known, 5));
	assert_null(ss_cfg_closest("a_key_far_longer_than_forty_bytes_of_any_row", known, 5));
}

static int teardown(void **state)
{
	(void)state;
	ss_config_clear(&cfg);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libev_leniency),    cmocka_unit_test(test_refused_with_a_fix),
	    cmocka_unit_test(test_unknown_keys_warn), cmocka_unit_test(test_slip_for_a_missing_key),
	    cmocka_unit_test(test_closest),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
