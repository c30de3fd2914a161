/* SPDX-License-Identifier: MIT */
/* Online configuration documents (SIP008) and the one-URL answer, the
 * URLs they are fetched from, and the HTTP answer they come in: its head
 * and a chunked body, whole or in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/httpc.h"
#include "proto/sip008.h"
#include "util/result.h"

static ss_sip008_t doc;
static char err[512];

static int parse(const char *text)
{
	return ss_sip008_parse(text, strlen(text), &doc, err, sizeof(err));
}

static void refused(const char *text, const char *why)
{
	if (parse(text) == 0)
		fail_msg("taken: %s", text);
	if (!strstr(err, why))
		fail_msg("%s: '%s' lacks '%s'", text, err, why);
	assert_null(strchr(err, '\n'));
	assert_null(strstr(err, "s3cret"));
	assert_int_equal(doc.n, 0);
}

static void test_document(void **state)
{
	(void)state;
	assert_int_equal(
	    parse("{\"version\": 1, \"servers\": [{\"id\": \"27b8a625\", \"remarks\": \"Server #1\","
		  " \"server\": \"198.51.100.1\", \"server_port\": 8388, \"password\": \"s3cret\","
		  " \"method\": \"chacha20-ietf-poly1305\", \"plugin\": \"v2ray-plugin\","
		  " \"plugin_opts\": \"host=example.com\"}, {\"server\": \"2001:db8::2\","
		  " \"server_port\": 443, \"password\": \"\", \"method\": \"none\", \"id\": \"b\"}],"
		  " \"bytes_used\": 274877906944, \"bytes_remaining\": 824633720832}"),
	    0);
	assert_int_equal(doc.n, 2);
	assert_false(doc.from_url);
	assert_string_equal(doc.s[0].u.host, "198.51.100.1");
	assert_int_equal(doc.s[0].u.port, 8388);
	assert_string_equal(doc.s[0].u.password, "s3cret");
	assert_string_equal(doc.s[0].u.method, "chacha20-ietf-poly1305");
	assert_string_equal(doc.s[0].u.plugin, "v2ray-plugin");
	assert_string_equal(doc.s[0].u.plugin_opts, "host=example.com");
	assert_string_equal(doc.s[0].u.tag, "Server #1");
	assert_string_equal(doc.s[0].id, "27b8a625");
	/* No remarks: the id names it. */
	assert_string_equal(doc.s[1].u.tag, "b");
	assert_string_equal(doc.s[1].u.host, "2001:db8::2");
}

static void test_single_url(void **state)
{
	(void)state;
	assert_int_equal(parse("\r\n ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1\n"), 0);
	assert_true(doc.from_url);
	assert_int_equal(doc.n, 1);
	assert_string_equal(doc.s[0].u.method, "aes-128-gcm");
	assert_string_equal(doc.s[0].u.password, "test");
	assert_string_equal(doc.s[0].u.tag, "Example1");
	refused("ss://bm90IGEgdXJs", "ss://");
}

static void test_more_than_kept(void **state)
{
	char text[8192];
	size_t n = 0;

	(void)state;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"servers\": [");
	for (int i = 0; i < SS_SIP008_KEEP + 3; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s{\"server\": \"10.0.0.%d\", \"server_port\": %d, "
				      "\"password\": \"p\", \"method\": \"aes-256-gcm\"}",
				      i ? "," : "", i + 1, 1000 + i);
	snprintf(text + n, sizeof(text) - n, "]}");
	assert_int_equal(parse(text), 0);
	assert_int_equal(doc.n, SS_SIP008_KEEP);
	assert_int_equal(doc.n_more, 3);
	assert_int_equal(doc.s[SS_SIP008_KEEP - 1].u.port, 1000 + SS_SIP008_KEEP - 1);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("", "not a JSON document");
	refused("[1]", "must be a JSON object");
	refused("{\"version\": 2, \"servers\": []}", "\"version\" must be 1");
	refused("{\"version\": 1}", "no \"servers\"");
	refused("{\"servers\": []}", "empty");
	refused("{\"servers\": [{\"server_port\": 1, \"password\": \"s3cret\", \"method\": \"m\"}]}",
		"\"servers\"[0]: no \"server\"");
	refused("{\"servers\": [{\"server\": \"h\", \"server_port\": 0, \"password\": \"s3cret\","
		" \"method\": \"m\"}]}",
		"server_port");
	refused("{\"servers\": [{\"server\": \"h\", \"server_port\": 1.5, \"password\": \"s3cret\","
		" \"method\": \"m\"}]}",
		"server_port");
	refused("{\"servers\": [{\"server\": \"h\", \"server_port\": 1, \"method\": \"m\"}]}",
		"no \"password\"");
	refused("{\"servers\": [{\"server\": \"h\", \"server_port\": 1, \"password\": 5,"
		" \"method\": \"m\"}]}",
		"\"password\" must be a string");
	refused("{\"servers\": [{\"remarks\": \"r\", \"server\": \"h\", \"server_port\": 1,"
		" \"password\": \"s3cret\", \"method\": \"m\", \"plugin\": \"/bin/sh\"}]}",
		"\"servers\"[0] (\"r\"): \"plugin\" must be a program's name alone");
	refused("{\"servers\": [{\"server\": \"h\", \"server_port\": 1, \"password\": \"s3cret\","
		" \"method\": \"m\", \"plugin\": \"p\", \"plugin_opts\": \"a\\nb\"}]}",
		"control byte");
	refused("{\"servers\": [{\"server\": \"a b\", \"server_port\": 1, \"password\": \"s3cret\","
		" \"method\": \"m\"}]}",
		"not a host");
}

static void test_same(void **state)
{
	static ss_sip008_t a;
	const char *one = "{\"servers\": [{\"server\": \"h\", \"server_port\": 1, \"password\": "
			  "\"p\", \"method\": \"aes-256-gcm\"}]}";

	(void)state;
	assert_int_equal(ss_sip008_parse(one, strlen(one), &a, err, sizeof(err)), 0);
	assert_int_equal(parse(one), 0);
	assert_true(ss_sip008_same(&a, &doc));
	doc.s[0].u.password[0] = 'q';
	assert_false(ss_sip008_same(&a, &doc));
	ss_sip008_clear(&a);
}

static void url_ok(const char *text, const char *host, unsigned port, const char *path)
{
	ss_httpc_url_t u;

	if (ss_httpc_url_parse(text, &u, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	assert_string_equal(u.host, host);
	assert_int_equal(u.port, port);
	assert_string_equal(u.path, path);
}

static void url_bad(const char *text, const char *why)
{
	ss_httpc_url_t u;

	assert_int_equal(ss_httpc_url_parse(text, &u, err, sizeof(err)), -22);
	if (!strstr(err, why))
		fail_msg("%s: '%s' lacks '%s'", text, err, why);
}

static void test_urls(void **state)
{
	(void)state;
	url_ok("https://example.com", "example.com", 443, "/");
	url_ok("https://example.com:8443/a/b?c=d#frag", "example.com", 8443, "/a/b?c=d");
	url_ok("ssconf://s3.amazonaws.com/bucket/key.json#name", "s3.amazonaws.com", 443,
	       "/bucket/key.json");
	url_ok("HTTPS://[2001:db8::1]:9/x", "2001:db8::1", 9, "/x");
	url_ok("https://h?q", "h", 443, "/?q");
	url_bad("http://example.com/", "https://");
	url_bad("https://user:pw@example.com/", "user name");
	url_bad("https:///path", "no host");
	url_bad("https://h:0/", "port");
	url_bad("https://h:65536/", "port");
	url_bad("https://h:/", "port");
	url_bad("https://[::1/", "']'");
	url_bad("https://[h]/", "brackets");
	url_bad("https://h/a b", "space");
	/* An error names neither the path nor a password. */
	url_bad("https://user:pw@example.com/key", "'https://...@example.com/...'");
	url_bad("https://h:0/secret", "'https://h:0/...'");
}

static void shown(const char *text, const char *want)
{
	char buf[SS_HTTPC_SHOWN_MAX];

	assert_string_equal(ss_httpc_url_shown(text, buf, sizeof(buf)), want);
}

static void test_url_shown(void **state)
{
	(void)state;
	shown("ssconf://h.example:8443/AccessKey#name", "ssconf://h.example:8443/...");
	shown("https://[2001:db8::1]:9?k=v", "https://[2001:db8::1]:9/...");
	shown("https://h", "https://h");
	shown("https://a:b@h/x", "https://...@h/...");
	shown("key/not://a/url", "key/...");
	shown("https://h\x01x/", "https://h?x/...");
}

static int head(const char *text, ss_httpc_head_t *h)
{
	return ss_httpc_parse_head((const uint8_t *)text, strlen(text), h);
}

static void test_heads(void **state)
{
	ss_httpc_head_t h;
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			 "content-length:  12 \r\n\r\n{}";

	(void)state;
	assert_int_equal(head(ok, &h), SS_OK);
	assert_int_equal(h.status, 200);
	assert_true(h.has_length);
	assert_int_equal(h.length, 12);
	assert_int_equal(h.len, strlen(ok) - 2);
	/* Every prefix is incomplete, never an error. */
	for (size_t n = 0; n < strlen(ok) - 2; n++)
		assert_int_equal(ss_httpc_parse_head((const uint8_t *)ok, n, &h), SS_AGAIN);
	assert_int_equal(head("HTTP/1.1 301 Moved\r\nLocation: https://e/x\r\n\r\n", &h), SS_OK);
	assert_int_equal(h.status, 301);
	assert_string_equal(h.location, "https://e/x");
	assert_int_equal(head("HTTP/1.0 200\r\nTransfer-Encoding: chunked\r\n\r\n", &h), SS_OK);
	assert_true(h.chunked);
	assert_int_equal(head("HTTP/1.1 200 OK\nX: y\r\n\r\n", &h), SS_ERR);
	assert_int_equal(head("HTTP/2 200 OK\r\n\r\n", &h), SS_ERR);
	assert_int_equal(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", &h), SS_ERR);
	assert_int_equal(
	    head("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", &h), SS_ERR);
	assert_int_equal(
	    head("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", &h),
	    SS_ERR);
	assert_int_equal(head("HTTP/1.1 200 OK\r\n folded\r\n\r\n", &h), SS_ERR);
}

static void test_dechunk(void **state)
{
	const char *body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";
	uint8_t buf[128];
	size_t n = strlen(body), out;

	(void)state;
	for (size_t k = 0; k < n; k++) {
		memcpy(buf, body, n);
		assert_int_equal(ss_httpc_dechunk(buf, k, 100, &out), SS_AGAIN);
		assert_memory_equal(buf, body, n); /* untouched until whole */
	}
	memcpy(buf, body, n);
	assert_int_equal(ss_httpc_dechunk(buf, n, 100, &out), SS_OK);
	assert_int_equal(out, 12);
	assert_memory_equal(buf, "hello, world", 12);
	memcpy(buf, body, n);
	assert_int_equal(ss_httpc_dechunk(buf, n, 11, &out), SS_ERR); /* over the cap */
	memcpy(buf, "3\r\nabcd\r\n0\r\n\r\n", 15);
	assert_int_equal(ss_httpc_dechunk(buf, 15, 100, &out), SS_ERR);
	memcpy(buf, "zz\r\n", 4);
	assert_int_equal(ss_httpc_dechunk(buf, 4, 100, &out), SS_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_document),  cmocka_unit_test(test_single_url),
	    cmocka_unit_test(test_more_than_kept), cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_same),      cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_url_shown),
	    cmocka_unit_test(test_heads),     cmocka_unit_test(test_dechunk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
