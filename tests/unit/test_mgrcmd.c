/* SPDX-License-Identifier: MIT */
/* ss-manager's commands: libev's forms (a port as a number or a string, a
 * trailing newline), the fields an add keeps and their text, the state
 * file's text form read back, and refusals that never quote a password. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "proto/mgrcmd.h"

static ss_mgr_cmd_t cmd;
static char err[256];

static int parse(const char *text)
{
	err[0] = '\0';
	return ss_mgr_cmd_parse(text, strlen(text), &cmd, err, sizeof(err));
}

static const char *field(const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(cmd.fields, key);
	return j ? j->valuestring : NULL;
}

static void test_verbs(void **state)
{
	(void)state;
	assert_int_equal(parse("ping"), 0);
	assert_int_equal(cmd.verb, SS_MGR_PING);
	assert_int_equal(parse("list\n"), 0);
	assert_int_equal(cmd.verb, SS_MGR_LIST);
	assert_int_equal(parse("stat: {\"8388\":1}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_STAT);
	assert_int_equal(parse("remove: {\"server_port\": \"8388\"}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_REMOVE);
	assert_int_equal(cmd.port, 8388);
	assert_null(cmd.fields);
	/* NULs after the command, as some clients send them. */
	assert_int_equal(ss_mgr_cmd_parse("ping\0\0", 6, &cmd, err, sizeof(err)), 0);
}

/* stat_users: every port, or the one it names. */
static void test_stat_users(void **state)
{
	(void)state;
	assert_int_equal(parse("stat_users\n"), 0);
	assert_int_equal(cmd.verb, SS_MGR_STAT_USERS);
	assert_int_equal(cmd.port, 0);
	assert_int_equal(parse("stat_users: {\"server_port\": \"8388\"}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_STAT_USERS);
	assert_int_equal(cmd.port, 8388);
	assert_null(cmd.fields);
	assert_null(cmd.user);
	/* Not libev's stat, which an ss-server sends. */
	assert_int_equal(parse("stat: {\"8388\": 5}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_STAT);
	assert_int_not_equal(parse("stat_users: {}"), 0);
	assert_int_not_equal(parse("stat_users: {\"server_port\": 0}"), 0);
	assert_int_not_equal(parse("stat_users:"), 0);
	assert_int_not_equal(parse("stat_usersx"), 0);
	assert_int_not_equal(parse("stat_users {\"server_port\": 1}"), 0);
	assert_int_not_equal(parse("bogus"), 0);
	assert_non_null(strstr(err, "stat_users"));
}

static void test_add_fields(void **state)
{
	(void)state;
	assert_int_equal(parse("add: {\"server_port\": 8388, \"password\": \"pw\", \"method\": "
			       "\"aes-256-gcm\", \"fast_open\": true, \"timeout\": 300, "
			       "\"mode\": \"tcp_and_udp\", \"user\": \"root\", \"plugin\": null}"),
			 0);
	assert_int_equal(cmd.verb, SS_MGR_ADD);
	assert_int_equal(cmd.port, 8388);
	assert_string_equal(field("password"), "pw");
	assert_string_equal(field("method"), "aes-256-gcm");
	assert_string_equal(field("fast_open"), "true");
	assert_string_equal(field("timeout"), "300");
	assert_string_equal(field("mode"), "tcp_and_udp");
	/* Keys an add may not set are dropped; null is no value. */
	assert_null(field("user"));
	assert_null(field("plugin"));
	ss_mgr_cmd_free(&cmd);
	assert_null(cmd.fields);
}

/* The state file keeps every field as text: it reads back the same. */
static void test_text_fields_read_back(void **state)
{
	cJSON *o = cJSON_Parse("{\"server_port\": 1, \"password\": \"p\", \"fast_open\": "
			       "\"true\", \"timeout\": \"30\"}");
	cJSON *fields;
	uint16_t port;

	(void)state;
	assert_int_equal(ss_mgr_port_parse(o, &port, &fields, err, sizeof(err)), 0);
	assert_int_equal(port, 1);
	assert_string_equal(cJSON_GetObjectItem(fields, "fast_open")->valuestring, "true");
	assert_string_equal(cJSON_GetObjectItem(fields, "timeout")->valuestring, "30");
	cJSON_Delete(fields);
	cJSON_Delete(o);
}

static void refused(const char *text)
{
	if (parse(text) == 0)
		fail_msg("taken: %s", text);
	assert_null(cmd.fields);
	assert_true(err[0] != '\0');
	assert_null(strchr(err, '\n'));
	assert_null(strstr(err, "sekrit"));
}

static void test_users(void **state)
{
	const cJSON *name;

	(void)state;
	/* An add of users alone; only the keys of a user are kept, as text. */
	assert_int_equal(parse("add: {\"server_port\": 9, \"method\": \"aes-256-gcm\", \"users\": "
			       "[{\"name\": \"a\", \"password\": \"x\", \"other\": 1},"
			       " {\"name\": \"b\", \"key\": \"eA==\"}]}"),
			 0);
	assert_string_equal(
	    field("users"),
	    "[{\"name\":\"a\",\"password\":\"x\"},{\"name\":\"b\",\"key\":\"eA==\"}]");
	ss_mgr_cmd_free(&cmd);
	/* The text form (the state file's) reads back the same. */
	assert_int_equal(parse("add: {\"server_port\": 9, \"users\": "
			       "\"[{\\\"name\\\":\\\"a\\\",\\\"password\\\":\\\"x\\\"}]\"}"),
			 0);
	assert_string_equal(field("users"), "[{\"name\":\"a\",\"password\":\"x\"}]");
	ss_mgr_cmd_free(&cmd);
	assert_int_equal(
	    parse("add_user: {\"server_port\": 9, \"name\": \"c\", \"password\": \"y\"}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_ADD_USER);
	assert_int_equal(cmd.port, 9);
	name = cJSON_GetObjectItemCaseSensitive(cmd.user, "name");
	assert_string_equal(name->valuestring, "c");
	ss_mgr_cmd_free(&cmd);
	assert_int_equal(parse("remove_user: {\"server_port\": \"9\", \"name\": \"c\"}"), 0);
	assert_int_equal(cmd.verb, SS_MGR_REMOVE_USER);
	assert_null(cJSON_GetObjectItemCaseSensitive(cmd.user, "password"));
	ss_mgr_cmd_free(&cmd);
	/* Refused: no users, a user without a name or secret, an empty name,
	 * a control byte, add_user without a secret, remove_user without a
	 * name or port. */
	const char *bad[] = {
	    "add: {\"server_port\": 9, \"users\": []}",
	    "add: {\"server_port\": 9, \"users\": [{\"password\": \"x\"}]}",
	    "add: {\"server_port\": 9, \"users\": [{\"name\": \"a\"}]}",
	    "add: {\"server_port\": 9, \"users\": [{\"name\": \"\", \"password\": \"x\"}]}",
	    "add: {\"server_port\": 9, \"users\": [{\"name\": \"a\\n\", \"password\": \"x\"}]}",
	    "add: {\"server_port\": 9, \"users\": {\"name\": \"a\", \"password\": \"x\"}}",
	    "add_user: {\"server_port\": 9, \"name\": \"c\"}",
	    "remove_user: {\"server_port\": 9}",
	    "remove_user: {\"name\": \"c\"}",
	    "add_user {\"server_port\": 9, \"name\": \"c\", \"password\": \"y\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i]), -EINVAL);
		assert_null(cmd.fields);
		assert_null(cmd.user);
		assert_true(err[0] != '\0');
	}
}

static void test_refused(void **state)
{
	(void)state;
	refused("");
	refused("bogus");
	refused("pingx");
	refused("add");
	refused("add:");
	refused("add: {bad");
	refused("add: {\"server_port\": 8388}");
	refused("add: {\"server_port\": 0, \"password\": \"sekrit\"}");
	refused("add: {\"server_port\": 65536, \"password\": \"sekrit\"}");
	refused("add: {\"server_port\": 1.5, \"password\": \"sekrit\"}");
	refused("add: {\"server_port\": \"12a\", \"password\": \"sekrit\"}");
	refused("add: {\"server_port\": 1, \"password\": \"sek\\nrit\"}");
	refused("add: {\"server_port\": 1, \"password\": 5}");
	refused("add: {\"server_port\": 1, \"password\": \"sekrit\", \"fast_open\": \"yes\"}");
	refused("add: {\"server_port\": 1, \"password\": \"sekrit\", \"timeout\": -1}");
	refused("add: {\"server_port\": 1, \"password\": \"sekrit\"} more");
	refused("add: [1]");
	refused("remove: {}");
	refused("remove: {\"server_port\": true}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verbs),
	    cmocka_unit_test(test_stat_users),
	    cmocka_unit_test(test_add_fields),
	    cmocka_unit_test(test_text_fields_read_back),
	    cmocka_unit_test(test_users),
	    cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
