/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/socks4.h"
#include "util/result.h"

/* Parses msg whole (with bytes after it, which stay unconsumed) and every
 * proper prefix of it, which must all be incomplete. */
static void check_ok(const uint8_t *msg, size_t len, uint8_t want_cmd, ss_addr_t *dst)
{
	uint8_t buf[1024];
	size_t used;
	uint8_t cmd;

	for (size_t i = 0; i < len; i++) {
		used = 999;
		assert_int_equal(ss_socks4_parse_request(msg, i, &used, &cmd, dst), SS_AGAIN);
		assert_int_equal(used, 999);
	}
	assert_true(len + 16 <= sizeof(buf));
	memcpy(buf, msg, len);
	memset(buf + len, 'x', 16);
	cmd = 0xee;
	assert_int_equal(ss_socks4_parse_request(buf, len + 16, &used, &cmd, dst), SS_OK);
	assert_int_equal(used, len);
	assert_int_equal(cmd, want_cmd);
}

static void test_connect_ipv4(void **state)
{
	(void)state;
	const uint8_t msg[] = {4, 1, 0x1f, 0x90, 192, 0, 2, 7, 'b', 'o', 'b', 0};
	const uint8_t anon[] = {4, 1, 0, 80, 10, 0, 0, 1, 0};
	const uint8_t v4[] = {192, 0, 2, 7};
	ss_addr_t dst;

	check_ok(msg, sizeof(msg), SS_SOCKS4_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV4);
	assert_int_equal(dst.port, 8080);
	assert_memory_equal(dst.v4, v4, 4);

	check_ok(anon, sizeof(anon), SS_SOCKS4_CMD_CONNECT, &dst);
	assert_int_equal(dst.port, 80);
	assert_int_equal(dst.v4[0], 10);
}

static void test_connect_4a(void **state)
{
	(void)state;
	const uint8_t msg[] = {4,   1,   0,   80,  0,   0,   0,   1,   'u', 0,   'w',
			       'w', 'w', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0};
	ss_addr_t dst;

	check_ok(msg, sizeof(msg), SS_SOCKS4_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_DOMAIN);
	assert_int_equal(dst.domain_len, 11);
	assert_string_equal(dst.domain, "www.example");
	assert_int_equal(dst.port, 80);
}

/* 0.0.0.0 is an address (a useless one), not a 4a marker. */
static void test_zero_address_is_not_4a(void **state)
{
	(void)state;
	const uint8_t msg[] = {4, 1, 0, 80, 0, 0, 0, 0, 0};
	ss_addr_t dst;

	check_ok(msg, sizeof(msg), SS_SOCKS4_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV4);
}

static void test_command_reported(void **state)
{
	(void)state;
	uint8_t msg[] = {4, 2, 0, 21, 192, 0, 2, 1, 0};
	ss_addr_t dst;

	check_ok(msg, sizeof(msg), SS_SOCKS4_CMD_BIND, &dst);
	msg[1] = 0x7f;
	check_ok(msg, sizeof(msg), 0x7f, &dst);
}

static void test_bad_version(void **state)
{
	(void)state;
	const uint8_t v5[] = {5, 1, 0};
	const uint8_t http[] = "GET / HTTP/1.0\r\n";
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;

	assert_int_equal(ss_socks4_parse_request(v5, 1, &used, &cmd, &dst), SS_ERR);
	assert_int_equal(ss_socks4_parse_request(http, 16, &used, &cmd, &dst), SS_ERR);
	assert_int_equal(ss_socks4_parse_request(v5, 0, &used, &cmd, &dst), SS_AGAIN);
}

/* A string of n bytes then NUL after the fixed part: n up to the bound
 * parses, one more is refused as soon as its bytes are in. */
static void test_userid_bound(void **state)
{
	(void)state;
	uint8_t buf[8 + 300] = {4, 1, 0, 80, 192, 0, 2, 1};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;

	memset(buf + 8, 'u', 300);
	buf[8 + SS_SOCKS4_USERID_MAX] = 0;
	assert_int_equal(ss_socks4_parse_request(buf, sizeof(buf), &used, &cmd, &dst), SS_OK);
	assert_int_equal(used, 8 + SS_SOCKS4_USERID_MAX + 1);

	buf[8 + SS_SOCKS4_USERID_MAX] = 'u';
	assert_int_equal(ss_socks4_parse_request(buf, 8 + SS_SOCKS4_USERID_MAX, &used, &cmd, &dst),
			 SS_AGAIN);
	assert_int_equal(
	    ss_socks4_parse_request(buf, 8 + SS_SOCKS4_USERID_MAX + 1, &used, &cmd, &dst), SS_ERR);
	assert_int_equal(ss_socks4_parse_request(buf, sizeof(buf), &used, &cmd, &dst), SS_ERR);
}

static void test_host_bound(void **state)
{
	(void)state;
	uint8_t buf[9 + 300] = {4, 1, 0, 80, 0, 0, 0, 9, 0};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;

	memset(buf + 9, 'h', 300);
	buf[9 + SS_SOCKS4_HOST_MAX] = 0;
	assert_int_equal(ss_socks4_parse_request(buf, sizeof(buf), &used, &cmd, &dst), SS_OK);
	assert_int_equal(used, 9 + SS_SOCKS4_HOST_MAX + 1);
	assert_int_equal(dst.domain_len, SS_SOCKS4_HOST_MAX);
	assert_int_equal(strlen(dst.domain), SS_SOCKS4_HOST_MAX);

	buf[9 + SS_SOCKS4_HOST_MAX] = 'h';
	assert_int_equal(ss_socks4_parse_request(buf, 9 + SS_SOCKS4_HOST_MAX, &used, &cmd, &dst),
			 SS_AGAIN);
	assert_int_equal(ss_socks4_parse_request(buf, sizeof(buf), &used, &cmd, &dst), SS_ERR);
}

static void test_empty_host(void **state)
{
	(void)state;
	const uint8_t msg[] = {4, 1, 0, 80, 0, 0, 0, 1, 'u', 0, 0};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;

	assert_int_equal(ss_socks4_parse_request(msg, sizeof(msg) - 1, &used, &cmd, &dst),
			 SS_AGAIN);
	assert_int_equal(ss_socks4_parse_request(msg, sizeof(msg), &used, &cmd, &dst), SS_ERR);
}

static void test_encode_reply(void **state)
{
	(void)state;
	uint8_t out[SS_SOCKS4_REPLY_LEN];
	const uint8_t granted[] = {0, 90, 0, 0, 0, 0, 0, 0};
	const uint8_t rejected[] = {0, 91, 0, 0, 0, 0, 0, 0};

	memset(out, 0xaa, sizeof(out));
	assert_int_equal(ss_socks4_encode_reply(SS_SOCKS4_REP_GRANTED, out), 8);
	assert_memory_equal(out, granted, 8);
	memset(out, 0xaa, sizeof(out));
	assert_int_equal(ss_socks4_encode_reply(SS_SOCKS4_REP_REJECTED, out), 8);
	assert_memory_equal(out, rejected, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect_ipv4),
	    cmocka_unit_test(test_connect_4a),
	    cmocka_unit_test(test_zero_address_is_not_4a),
	    cmocka_unit_test(test_command_reported),
	    cmocka_unit_test(test_bad_version),
	    cmocka_unit_test(test_userid_bound),
	    cmocka_unit_test(test_host_bound),
	    cmocka_unit_test(test_empty_host),
	    cmocka_unit_test(test_encode_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
