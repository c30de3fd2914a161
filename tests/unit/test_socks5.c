/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/socks5.h"
#include "util/result.h"

/* Greetings */

static void check_greeting(const uint8_t *msg, size_t len, bool want_noauth)
{
	uint8_t buf[300];
	size_t used;
	bool noauth;

	for (size_t i = 0; i < len; i++) {
		used = 999;
		assert_int_equal(ss_socks5_parse_greeting(msg, i, &used, &noauth), SS_AGAIN);
		assert_int_equal(used, 999);
	}
	memcpy(buf, msg, len);
	memset(buf + len, 0x05, 16); /* the request that follows is not consumed */
	noauth = !want_noauth;
	assert_int_equal(ss_socks5_parse_greeting(buf, len + 16, &used, &noauth), SS_OK);
	assert_int_equal(used, len);
	assert_int_equal(noauth, want_noauth);
}

static void test_greeting_noauth(void **state)
{
	(void)state;
	const uint8_t one[] = {0x05, 0x01, 0x00};
	const uint8_t three[] = {0x05, 0x03, 0x02, 0x01, 0x00};
	check_greeting(one, sizeof(one), true);
	check_greeting(three, sizeof(three), true);
}

static void test_greeting_no_acceptable(void **state)
{
	(void)state;
	const uint8_t userpass[] = {0x05, 0x01, 0x02};
	const uint8_t none[] = {0x05, 0x00};
	check_greeting(userpass, sizeof(userpass), false);
	check_greeting(none, sizeof(none), false);

	uint8_t all[2 + 255];
	all[0] = 0x05;
	all[1] = 255;
	for (int i = 0; i < 255; i++)
		all[2 + i] = (uint8_t)(i + 1); /* every method but 0 */
	check_greeting(all, sizeof(all), false);
	all[2 + 254] = 0x00;
	check_greeting(all, sizeof(all), true);
}

static void test_greeting_bad_version(void **state)
{
	(void)state;
	const uint8_t v4[] = {0x04, 0x01, 0x00};
	const uint8_t http[] = "GET / HTTP/1.1\r\n";
	size_t used;
	bool noauth;

	assert_int_equal(ss_socks5_parse_greeting(v4, sizeof(v4), &used, &noauth), SS_ERR);
	assert_int_equal(ss_socks5_parse_greeting(v4, 1, &used, &noauth), SS_ERR);
	assert_int_equal(ss_socks5_parse_greeting(http, sizeof(http) - 1, &used, &noauth), SS_ERR);
}

/* Requests */

static void check_request(const uint8_t *msg, size_t len, uint8_t want_cmd, ss_addr_t *dst)
{
	uint8_t buf[300];
	size_t used;
	uint8_t cmd;
	ss_socks5_rep_t rep;

	for (size_t i = 0; i < len; i++) {
		used = 999;
		cmd = 0xEE;
		assert_int_equal(ss_socks5_parse_request(msg, i, &used, &cmd, dst, &rep), SS_AGAIN);
		assert_int_equal(used, 999);
		assert_int_equal(cmd, 0xEE);
	}
	memcpy(buf, msg, len);
	memcpy(buf + len, "payload", 7);
	assert_int_equal(ss_socks5_parse_request(buf, len + 7, &used, &cmd, dst, &rep), SS_OK);
	assert_int_equal(used, len);
	assert_int_equal(cmd, want_cmd);
	assert_int_equal(ss_socks5_parse_request(msg, len, &used, &cmd, dst, &rep), SS_OK);
	assert_int_equal(used, len);
}

static void test_request_ipv4(void **state)
{
	(void)state;
	const uint8_t msg[] = {0x05, 0x01, 0x00, 0x01, 93, 184, 216, 34, 0x00, 0x50};
	ss_addr_t dst;
	check_request(msg, sizeof(msg), SS_SOCKS5_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV4);
	assert_memory_equal(dst.v4, ((uint8_t[]){93, 184, 216, 34}), 4);
	assert_int_equal(dst.port, 80);
}

static void test_request_ipv6(void **state)
{
	(void)state;
	uint8_t msg[4 + 16 + 2] = {0x05, 0x01, 0x00, 0x04};
	uint8_t want[16];
	ss_addr_t dst;

	inet_pton(AF_INET6, "2606:2800:220:1:248:1893:25c8:1946", want);
	memcpy(msg + 4, want, 16);
	msg[20] = 0x01;
	msg[21] = 0xbb;
	check_request(msg, sizeof(msg), SS_SOCKS5_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV6);
	assert_memory_equal(dst.v6, want, 16);
	assert_int_equal(dst.port, 443);
}

static void test_request_domain(void **state)
{
	(void)state;
	const uint8_t msg[] = {0x05, 0x01, 0x00, 0x03, 11,  'e', 'x', 'a',  'm',
			       'p',  'l',  'e',  '.',  'o', 'r', 'g', 0x1f, 0x90};
	ss_addr_t dst;
	check_request(msg, sizeof(msg), SS_SOCKS5_CMD_CONNECT, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(dst.domain, "example.org");
	assert_int_equal(dst.port, 8080);
}

static void test_request_every_command(void **state)
{
	(void)state;
	/* The parser reports the command; judging it is the caller's job, so
	 * unknown ones parse too. */
	const uint8_t cmds[] = {SS_SOCKS5_CMD_CONNECT,
				SS_SOCKS5_CMD_BIND,
				SS_SOCKS5_CMD_UDP_ASSOCIATE,
				0x00,
				0x04,
				0xff};
	for (size_t i = 0; i < sizeof(cmds); i++) {
		const uint8_t msg[] = {0x05, cmds[i], 0x00, 0x01, 0, 0, 0, 0, 0, 0};
		ss_addr_t dst;
		check_request(msg, sizeof(msg), cmds[i], &dst);
		assert_int_equal(dst.atyp, SS_ATYP_IPV4);
		assert_int_equal(dst.port, 0);
	}
}

static void test_request_unknown_atyp(void **state)
{
	(void)state;
	const uint8_t msg[] = {0x05, 0x01, 0x00, 0x02, 1, 2, 3, 4, 0, 80};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;
	ss_socks5_rep_t rep;

	/* Judged as soon as the ATYP byte arrives. */
	for (size_t len = 4; len <= sizeof(msg); len++) {
		rep = SS_SOCKS5_REP_SUCCEEDED;
		assert_int_equal(ss_socks5_parse_request(msg, len, &used, &cmd, &dst, &rep),
				 SS_ERR);
		assert_int_equal(rep, SS_SOCKS5_REP_ATYP_NOT_SUPPORTED);
	}
	const uint8_t zero[] = {0x05, 0x01, 0x00, 0x00};
	assert_int_equal(ss_socks5_parse_request(zero, sizeof(zero), &used, &cmd, &dst, &rep),
			 SS_ERR);
	assert_int_equal(rep, SS_SOCKS5_REP_ATYP_NOT_SUPPORTED);
}

static void test_request_bad_version(void **state)
{
	(void)state;
	const uint8_t msg[] = {0x04, 0x01, 0x00, 0x01, 1, 2, 3, 4, 0, 80};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;
	ss_socks5_rep_t rep = SS_SOCKS5_REP_SUCCEEDED;

	assert_int_equal(ss_socks5_parse_request(msg, sizeof(msg), &used, &cmd, &dst, &rep),
			 SS_ERR);
	assert_int_equal(rep, SS_SOCKS5_REP_GENERAL_FAILURE);
	rep = SS_SOCKS5_REP_SUCCEEDED;
	assert_int_equal(ss_socks5_parse_request(msg, 1, &used, &cmd, &dst, &rep), SS_ERR);
	assert_int_equal(rep, SS_SOCKS5_REP_GENERAL_FAILURE);
}

static void test_request_bad_domain(void **state)
{
	(void)state;
	const uint8_t empty[] = {0x05, 0x01, 0x00, 0x03, 0x00, 0x00, 0x50};
	const uint8_t nul[] = {0x05, 0x01, 0x00, 0x03, 0x02, 'a', 0x00, 0x00, 0x50};
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;
	ss_socks5_rep_t rep;

	assert_int_equal(ss_socks5_parse_request(empty, sizeof(empty), &used, &cmd, &dst, &rep),
			 SS_ERR);
	assert_int_equal(rep, SS_SOCKS5_REP_GENERAL_FAILURE);
	assert_int_equal(ss_socks5_parse_request(nul, sizeof(nul), &used, &cmd, &dst, &rep),
			 SS_ERR);
	assert_int_equal(rep, SS_SOCKS5_REP_GENERAL_FAILURE);
}

/* Encoders */

static void test_encode_method(void **state)
{
	(void)state;
	uint8_t out[2];
	assert_int_equal(ss_socks5_encode_method(SS_SOCKS5_AUTH_NONE, out), 2);
	assert_memory_equal(out, ((uint8_t[]){0x05, 0x00}), 2);
	assert_int_equal(ss_socks5_encode_method(SS_SOCKS5_AUTH_NO_ACCEPTABLE, out), 2);
	assert_memory_equal(out, ((uint8_t[]){0x05, 0xff}), 2);
}

static void test_encode_reply(void **state)
{
	(void)state;
	uint8_t out[32];
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1080)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(1081)};

	assert_int_equal(ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, NULL, out, sizeof(out)),
			 10);
	assert_memory_equal(out, ((uint8_t[]){5, 0, 0, 1, 0, 0, 0, 0, 0, 0}), 10);

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	assert_int_equal(ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin,
						out, sizeof(out)),
			 10);
	assert_memory_equal(out, ((uint8_t[]){5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38}), 10);

	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	assert_int_equal(ss_socks5_encode_reply(SS_SOCKS5_REP_HOST_UNREACHABLE,
						(struct sockaddr *)&sin6, out, sizeof(out)),
			 22);
	assert_memory_equal(out, ((uint8_t[]){5, 4, 0, 4}), 4);
	assert_memory_equal(out + 4, &sin6.sin6_addr, 16);
	assert_int_equal(out[20], 0x04);
	assert_int_equal(out[21], 0x39);

	/* A dual-stack socket's v4-mapped address is answered as IPv4. */
	inet_pton(AF_INET6, "::ffff:192.0.2.7", &sin6.sin6_addr);
	assert_int_equal(ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin6,
						out, sizeof(out)),
			 10);
	assert_memory_equal(out, ((uint8_t[]){5, 0, 0, 1, 192, 0, 2, 7, 0x04, 0x39}), 10);

	assert_int_equal(
	    ss_socks5_encode_reply(SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED, NULL, out, sizeof(out)),
	    10);
	assert_int_equal(out[1], 0x07);

	assert_int_equal(ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, NULL, out, 9), 0);
	assert_int_equal(
	    ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin, out, 2), 0);
	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	assert_int_equal(
	    ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin6, out, 21), 0);
}

/* A whole handshake as a client sends it in one write: greeting, then
 * request, then payload; each parser takes only its own bytes. */
static void test_pipelined(void **state)
{
	(void)state;
	const uint8_t wire[] = {0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 10,
				0,    0,    1,    0x00, 0x16, 'S',  'S',  'H'};
	size_t used, off = 0;
	bool noauth;
	uint8_t cmd;
	ss_addr_t dst;
	ss_socks5_rep_t rep;

	assert_int_equal(ss_socks5_parse_greeting(wire, sizeof(wire), &used, &noauth), SS_OK);
	assert_true(noauth);
	off += used;
	assert_int_equal(
	    ss_socks5_parse_request(wire + off, sizeof(wire) - off, &used, &cmd, &dst, &rep),
	    SS_OK);
	off += used;
	assert_int_equal(dst.port, 22);
	assert_int_equal(sizeof(wire) - off, 3);
	assert_memory_equal(wire + off, "SSH", 3);
}

/* UDP request headers (RFC 1928 section 7) */

/* msg is a whole header of hdr_len bytes followed by data: SS_OK with
 * used == hdr_len, the buffer untouched; every shorter datagram (a header
 * cut anywhere) is an error, as a datagram never grows. */
static void check_udp(const uint8_t *msg, size_t len, size_t hdr_len, ss_addr_t *dst)
{
	uint8_t copy[600];
	size_t used;

	assert_true(len <= sizeof(copy));
	memcpy(copy, msg, len);
	for (size_t cut = 0; cut < hdr_len; cut++) {
		used = 999;
		assert_int_equal(ss_socks5_parse_udp(copy, cut, dst, &used), SS_ERR);
		assert_int_equal(used, 999);
	}
	used = 999;
	assert_int_equal(ss_socks5_parse_udp(copy, len, dst, &used), SS_OK);
	assert_int_equal(used, hdr_len);
	/* A header with no data after it is a datagram with an empty payload. */
	assert_int_equal(ss_socks5_parse_udp(copy, hdr_len, dst, &used), SS_OK);
	assert_int_equal(used, hdr_len);
	assert_memory_equal(copy, msg, len);
}

static void test_udp_ipv4(void **state)
{
	(void)state;
	const uint8_t msg[] = {0, 0, 0, 0x01, 127, 0, 0, 1, 0x1f, 0x90, 'p', 'i', 'n', 'g'};
	ss_addr_t dst;

	check_udp(msg, sizeof(msg), 10, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV4);
	assert_memory_equal(dst.v4, ((uint8_t[]){127, 0, 0, 1}), 4);
	assert_int_equal(dst.port, 8080);
}

static void test_udp_ipv6(void **state)
{
	(void)state;
	uint8_t msg[22 + 100] = {0, 0, 0, 0x04};
	uint8_t want[16];
	ss_addr_t dst;

	inet_pton(AF_INET6, "2001:db8::53", want);
	memcpy(msg + 4, want, 16);
	msg[20] = 0x00;
	msg[21] = 0x35;
	memset(msg + 22, 0xab, 100);
	check_udp(msg, sizeof(msg), 22, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_IPV6);
	assert_memory_equal(dst.v6, want, 16);
	assert_int_equal(dst.port, 53);
}

static void test_udp_domain(void **state)
{
	(void)state;
	uint8_t msg[3 + 1 + 1 + 255 + 2 + 8] = {0, 0, 0, 0x03, 9};
	ss_addr_t dst;

	memcpy(msg + 5, "localhost", 9);
	msg[14] = 0x30;
	msg[15] = 0x39;
	memcpy(msg + 16, "datadata", 8);
	check_udp(msg, 24, 16, &dst);
	assert_int_equal(dst.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(dst.domain, "localhost");
	assert_int_equal(dst.domain_len, 9);
	assert_int_equal(dst.port, 12345);

	/* The longest name. */
	msg[4] = 255;
	memset(msg + 5, 'x', 255);
	msg[260] = 0xff;
	msg[261] = 0xfe;
	memcpy(msg + 262, "datadata", 8);
	check_udp(msg, sizeof(msg), 262, &dst);
	assert_int_equal(dst.domain_len, 255);
	assert_int_equal(strlen(dst.domain), 255);
	assert_int_equal(dst.port, 0xfffe);
}

static void test_udp_frag_left_to_caller(void **state)
{
	(void)state;
	/* FRAG (byte 2) is not the parser's business: any value parses, and
	 * the caller, which drops fragments, finds it where it was. */
	for (unsigned frag = 0; frag <= 0xff; frag += 0x11) {
		const uint8_t msg[] = {0, 0, (uint8_t)frag, 0x01, 10, 0, 0, 1, 0, 53, 'q'};
		ss_addr_t dst;
		size_t used = 0;

		assert_int_equal(ss_socks5_parse_udp(msg, sizeof(msg), &dst, &used), SS_OK);
		assert_int_equal(used, 10);
		assert_int_equal(msg[2], frag);
		assert_int_equal(dst.port, 53);
	}
	const uint8_t last[] = {0, 0, 0x80, 0x01, 10, 0, 0, 1, 0, 53};
	ss_addr_t dst;
	size_t used = 0;
	assert_int_equal(ss_socks5_parse_udp(last, sizeof(last), &dst, &used), SS_OK);
	assert_int_equal(used, sizeof(last));
}

static void test_udp_malformed(void **state)
{
	(void)state;
	ss_addr_t dst;
	size_t used;

	/* Unknown address types, whatever follows. */
	const uint8_t atyps[] = {0x00, 0x02, 0x05, 0x06, 0x7f, 0xff};
	for (size_t i = 0; i < sizeof(atyps); i++) {
		uint8_t msg[40] = {0, 0, 0, atyps[i], 1, 2, 3, 4, 0, 80};
		for (size_t len = 4; len <= sizeof(msg); len++)
			assert_int_equal(ss_socks5_parse_udp(msg, len, &dst, &used), SS_ERR);
	}
	/* An empty name, and a name with a NUL in it. */
	const uint8_t empty[] = {0, 0, 0, 0x03, 0x00, 0x00, 0x50, 'x', 'y'};
	const uint8_t nul[] = {0, 0, 0, 0x03, 0x02, 'a', 0x00, 0x00, 0x50, 'x'};
	assert_int_equal(ss_socks5_parse_udp(empty, sizeof(empty), &dst, &used), SS_ERR);
	assert_int_equal(ss_socks5_parse_udp(nul, sizeof(nul), &dst, &used), SS_ERR);
	/* A name that claims more bytes than the datagram has. */
	const uint8_t longname[] = {0, 0, 0, 0x03, 0x20, 'a', 'b', 'c', 0x00, 0x50};
	assert_int_equal(ss_socks5_parse_udp(longname, sizeof(longname), &dst, &used), SS_ERR);
	/* Nothing at all, and only the reserved bytes and FRAG. */
	assert_int_equal(ss_socks5_parse_udp(empty, 0, &dst, &used), SS_ERR);
	assert_int_equal(ss_socks5_parse_udp(empty, 3, &dst, &used), SS_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_greeting_noauth),
	    cmocka_unit_test(test_greeting_no_acceptable),
	    cmocka_unit_test(test_greeting_bad_version),
	    cmocka_unit_test(test_request_ipv4),
	    cmocka_unit_test(test_request_ipv6),
	    cmocka_unit_test(test_request_domain),
	    cmocka_unit_test(test_request_every_command),
	    cmocka_unit_test(test_request_unknown_atyp),
	    cmocka_unit_test(test_request_bad_version),
	    cmocka_unit_test(test_request_bad_domain),
	    cmocka_unit_test(test_encode_method),
	    cmocka_unit_test(test_encode_reply),
	    cmocka_unit_test(test_pipelined),
	    cmocka_unit_test(test_udp_ipv4),
	    cmocka_unit_test(test_udp_ipv6),
	    cmocka_unit_test(test_udp_domain),
	    cmocka_unit_test(test_udp_frag_left_to_caller),
	    cmocka_unit_test(test_udp_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
