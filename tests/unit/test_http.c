/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "proto/http.h"
#include "util/result.h"

#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

/* Parses msg whole (with bytes after it, which stay unconsumed) and every
 * proper prefix, which must all be incomplete. */
static void check_ok(const uint8_t *msg, size_t len, ss_http_req_t *req)
{
	uint8_t buf[4096];

	for (size_t i = 0; i < len; i++)
		assert_int_equal(ss_http_parse_request(msg, i, req), SS_AGAIN);
	assert_true(len + 16 <= sizeof(buf));
	memcpy(buf, msg, len);
	memset(buf + len, 'x', 16);
	assert_int_equal(ss_http_parse_request(buf, len + 16, req), SS_OK);
	assert_int_equal(req->head_len, len);
}

static void check_err(const uint8_t *msg, size_t len)
{
	ss_http_req_t req;

	assert_int_equal(ss_http_parse_request(msg, len, &req), SS_ERR);
}

static void test_connect(void **state)
{
	(void)state;
	ss_http_req_t req;

	check_ok(S("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
		   "User-Agent: t\r\n\r\n"),
		 &req);
	assert_true(req.connect);
	assert_int_equal(req.form, SS_HTTP_FORM_AUTHORITY);
	assert_int_equal(req.dst.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(req.dst.domain, "example.com");
	assert_int_equal(req.dst.port, 443);
	assert_int_equal(req.minor, 1);
	assert_false(req.close);

	check_ok(S("CONNECT 192.0.2.7:8443 HTTP/1.0\r\n\r\n"), &req);
	assert_int_equal(req.dst.atyp, SS_ATYP_IPV4);
	assert_int_equal(req.dst.v4[3], 7);
	assert_int_equal(req.dst.port, 8443);
	assert_true(req.close);

	check_ok(S("CONNECT [2001:db8::1]:22 HTTP/1.1\r\n\r\n"), &req);
	assert_int_equal(req.dst.atyp, SS_ATYP_IPV6);
	assert_int_equal(req.dst.v6[0], 0x20);
	assert_int_equal(req.dst.v6[15], 1);
	assert_int_equal(req.dst.port, 22);
}

static void test_connect_bad_targets(void **state)
{
	(void)state;
	check_err(S("CONNECT example.com HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT example.com: HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT example.com:0 HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT example.com:65536 HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT example.com:44x HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT [::1:443 HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT [zz::1]:443 HTTP/1.1\r\n\r\n"));
	check_err(S("CONNECT :443 HTTP/1.1\r\n\r\n"));
	/* Methods are case-sensitive: "connect" is another method, whose
	 * target is then not an absolute URI. */
	check_err(S("connect example.com:443 HTTP/1.1\r\n\r\n"));
}

static void test_host_bound(void **state)
{
	(void)state;
	char msg[600];
	char host[300];
	ss_http_req_t req;

	memset(host, 'a', 255);
	host[255] = '\0';
	snprintf(msg, sizeof(msg), "CONNECT %s:1 HTTP/1.1\r\n\r\n", host);
	check_ok((const uint8_t *)msg, strlen(msg), &req);
	assert_int_equal(req.dst.domain_len, 255);
	memset(host, 'a', 256);
	host[256] = '\0';
	snprintf(msg, sizeof(msg), "CONNECT %s:1 HTTP/1.1\r\n\r\n", host);
	check_err((const uint8_t *)msg, strlen(msg));
}

static void test_absolute(void **state)
{
	(void)state;
	ss_http_req_t req;
	const uint8_t msg[] = "GET http://Example.com:8080/a/b?c=d HTTP/1.1\r\n"
			      "Host: example.com:8080\r\nProxy-Connection: Keep-Alive\r\n"
			      "Accept: */*\r\nContent-Length: 12\r\n\r\n";

	check_ok(msg, sizeof(msg) - 1, &req);
	assert_false(req.connect);
	assert_int_equal(req.form, SS_HTTP_FORM_ABSOLUTE);
	assert_string_equal(req.dst.domain, "Example.com");
	assert_int_equal(req.dst.port, 8080);
	assert_memory_equal(msg + req.path.off, "/a/b?c=d", req.path.len);
	assert_true(req.has_host);
	assert_true(req.has_length);
	assert_int_equal(req.length, 12);
	assert_false(req.chunked);

	check_ok(S("HEAD http://10.0.0.1 HTTP/1.1\r\n\r\n"), &req);
	assert_true(req.head);
	assert_int_equal(req.dst.port, 80);
	assert_int_equal(req.path.len, 0);

	check_ok(S("POST HTTP://h/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n"
		   "Expect: 100-continue\r\nConnection: Upgrade, close\r\n\r\n"),
		 &req);
	assert_true(req.chunked);
	assert_true(req.expect_continue);
	assert_true(req.close);

	check_ok(S("GET http://h/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), &req);
	assert_false(req.close);
}

static void test_not_proxy_requests(void **state)
{
	(void)state;
	check_err(S("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
	check_err(S("GET https://h/ HTTP/1.1\r\n\r\n"));
	check_err(S("GET ftp://h/ HTTP/1.1\r\n\r\n"));
	check_err(S("GET http://u:p@h/ HTTP/1.1\r\n\r\n"));
	check_err(S("GET http:///x HTTP/1.1\r\n\r\n"));
	check_err(S("GET http://h/#frag HTTP/1.1\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/2.0\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1 \r\n\r\n"));
	check_err(S("GET  http://h/ HTTP/1.1\r\n\r\n"));
	check_err(S("G(T http://h/ HTTP/1.1\r\n\r\n"));
}

static void test_malformed_lines(void **state)
{
	(void)state;
	check_err(S("GET http://h/ HTTP/1.1\n\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA: b\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA: b\rc\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA b\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\n: b\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA : b\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nA: b\x01\r\n\r\n"));
	/* Seen as soon as the line is complete, before the head is. */
	check_err(S("GET http://h/ HTTP/1.1\r\nA b\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\n"));
}

static void test_framing_conflicts(void **state)
{
	(void)state;
	ss_http_req_t req;

	check_err(S("POST http://h/ HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"));
	check_err(S("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"));
	check_err(S("GET http://h/ HTTP/1.1\r\nProxy-Authorization: a\r\n"
		    "Proxy-Authorization: b\r\n\r\n"));
	check_ok(S("POST http://h/ HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n"),
		 &req);
	assert_int_equal(req.length, 7);
}

static void test_rewrite(void **state)
{
	(void)state;
	ss_http_req_t req;
	uint8_t out[512];
	const uint8_t msg[] =
	    "GET http://h.test:81/p?q HTTP/1.1\r\nHost: other\r\n"
	    "Proxy-Connection: keep-alive\r\nAccept: */*\r\n"
	    "Proxy-Authorization: Basic dTpw\r\nKeep-Alive: 5\r\nX-A:  b \r\n\r\n";
	const char want[] =
	    "GET /p?q HTTP/1.1\r\nHost: h.test:81\r\nAccept: */*\r\nX-A:  b \r\n\r\n";

	check_ok(msg, sizeof(msg) - 1, &req);
	size_t n = ss_http_rewrite_head(msg, &req, false, out, sizeof(out));
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(out, want, n);
	assert_int_equal(ss_http_rewrite_head(msg, &req, false, out, n - 1), 0);

	const uint8_t bare[] = "OPTIONS http://h?x HTTP/1.0\r\n\r\n";
	const char want_bare[] = "OPTIONS /?x HTTP/1.0\r\nHost: h\r\n\r\n";
	check_ok(bare, sizeof(bare) - 1, &req);
	n = ss_http_rewrite_head(bare, &req, false, out, sizeof(out));
	assert_int_equal(n, sizeof(want_bare) - 1);
	assert_memory_equal(out, want_bare, n);
}

static void test_rewrite_close(void **state)
{
	(void)state;
	ss_http_req_t req;
	uint8_t out[512];
	const uint8_t msg[] = "POST http://h/x HTTP/1.1\r\nConnection: keep-alive\r\nHost: h\r\n"
			      "Content-Length: 3\r\n\r\n";
	const char want[] = "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
			    "Connection: close\r\n\r\n";

	check_ok(msg, sizeof(msg) - 1, &req);
	size_t n = ss_http_rewrite_head(msg, &req, true, out, sizeof(out));
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(out, want, n);

	/* The most it grows: no Host, a path of "?", close added. */
	const uint8_t grow[] = "GET http://h?x HTTP/1.1\r\n\r\n";
	check_ok(grow, sizeof(grow) - 1, &req);
	n = ss_http_rewrite_head(grow, &req, true, out, sizeof(out));
	assert_int_equal(n, sizeof(grow) - 1 + SS_HTTP_REWRITE_GROWTH);
}

/* Feeds msg to a fresh tracker for req in pieces of step bytes; returns
 * the bytes it took, or -1 for SS_ERR, -2 when it wants more. */
static long body_run(const char *head, const char *msg, size_t len, size_t step)
{
	ss_http_req_t req;
	ss_http_body_t b;
	size_t off = 0, used;

	assert_int_equal(ss_http_parse_request((const uint8_t *)head, strlen(head), &req), SS_OK);
	ss_http_body_init(&b, &req);
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		int r = ss_http_body_feed(&b, (const uint8_t *)msg + off, n, &used);
		if (r == SS_ERR)
			return -1;
		if (r == SS_OK)
			return (long)(off + used);
		assert_int_equal(used, n);
		off += n;
	}
	return len == 0 && ss_http_body_feed(&b, NULL, 0, &used) == SS_OK ? 0 : -2;
}

#define CHUNKED "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
#define LENGTH5 "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
#define NOBODY "GET http://h/ HTTP/1.1\r\n\r\n"

static void test_body(void **state)
{
	(void)state;
	const char chunked[] = "5;a=b\r\nhello\r\n1A \r\n0123456789abcdef0123456789\r\n"
			       "0\r\nX-T: 1\r\n\r\nGET next";
	size_t body_len = sizeof(chunked) - 1 - strlen("GET next");

	for (size_t step = 1; step <= sizeof(chunked); step++) {
		assert_int_equal(body_run(CHUNKED, chunked, sizeof(chunked) - 1, step),
				 (long)body_len);
		assert_int_equal(body_run(LENGTH5, "helloGET", 8, step), 5);
		assert_int_equal(body_run(CHUNKED, chunked, body_len - 1, step), -2);
	}
	assert_int_equal(body_run(NOBODY, "GET", 3, 3), 0);
	/* After an upgrade, everything belongs to the request. */
	assert_int_equal(body_run("GET http://h/ HTTP/1.1\r\nConnection: Upgrade\r\n"
				  "Upgrade: websocket\r\n\r\n",
				  "\x81\x05hello GET", 12, 5),
			 -2);
	assert_int_equal(body_run(NOBODY, "", 0, 1), 0);
	assert_int_equal(body_run(LENGTH5, "hell", 4, 1), -2);
	assert_int_equal(body_run(CHUNKED, "0\r\n\r\n", 5, 1), 5);
	assert_int_equal(body_run(CHUNKED, "x\r\n", 3, 1), -1);
	assert_int_equal(body_run(CHUNKED, "1\r\nab\r\n", 7, 1), -1);
	assert_int_equal(body_run(CHUNKED, "1\nab", 5, 1), -1);
	assert_int_equal(body_run(CHUNKED, "1 x\r\n", 5, 1), -1);
	assert_int_equal(body_run(CHUNKED, "0\r\nbad field\r\n\r\n", 18, 2), -1);
	assert_int_equal(body_run(CHUNKED, "1000000000000000\r\n", 18, 4), -1);
}

static void test_chunk_size(void **state)
{
	(void)state;
	size_t used;
	uint64_t size;

	assert_int_equal(ss_http_parse_chunk_size(S("1aF\r\nxx"), &used, &size), SS_OK);
	assert_int_equal(used, 5);
	assert_int_equal(size, 0x1af);
	assert_int_equal(ss_http_parse_chunk_size(S("0;ext=1 \r\n"), &used, &size), SS_OK);
	assert_int_equal(size, 0);
	assert_int_equal(used, 10);
	assert_int_equal(ss_http_parse_chunk_size(S("10 ;a\r\n"), &used, &size), SS_OK);
	assert_int_equal(size, 16);
	assert_int_equal(ss_http_parse_chunk_size(S("1a"), &used, &size), SS_AGAIN);
	assert_int_equal(ss_http_parse_chunk_size(S("1a\r"), &used, &size), SS_AGAIN);
	assert_int_equal(ss_http_parse_chunk_size(S(""), &used, &size), SS_AGAIN);
	assert_int_equal(ss_http_parse_chunk_size(S("g\r\n"), &used, &size), SS_ERR);
	assert_int_equal(ss_http_parse_chunk_size(S("\r\n"), &used, &size), SS_ERR);
	assert_int_equal(ss_http_parse_chunk_size(S("1 2\r\n"), &used, &size), SS_ERR);
	assert_int_equal(ss_http_parse_chunk_size(S("1\n"), &used, &size), SS_ERR);
	assert_int_equal(ss_http_parse_chunk_size(S("-1\r\n"), &used, &size), SS_ERR);
	assert_int_equal(ss_http_parse_chunk_size(S("fffffffffffffff\r\n"), &used, &size), SS_OK);
	assert_int_equal(ss_http_parse_chunk_size(S("1000000000000000\r\n"), &used, &size), SS_ERR);

	uint8_t big[1100];
	big[0] = '1';
	big[1] = ';';
	memset(big + 2, 'e', sizeof(big) - 2);
	assert_int_equal(ss_http_parse_chunk_size(big, 500, &used, &size), SS_AGAIN);
	assert_int_equal(ss_http_parse_chunk_size(big, sizeof(big), &used, &size), SS_ERR);
}

static void test_trailer(void **state)
{
	(void)state;
	size_t used;

	assert_int_equal(ss_http_parse_trailer(S("\r\nGET"), &used), SS_OK);
	assert_int_equal(used, 2);
	assert_int_equal(ss_http_parse_trailer(S("A: b\r\nC: d\r\n\r\n"), &used), SS_OK);
	assert_int_equal(used, 14);
	assert_int_equal(ss_http_parse_trailer(S("A: b\r\n"), &used), SS_AGAIN);
	assert_int_equal(ss_http_parse_trailer(S("A b\r\n\r\n"), &used), SS_ERR);
}

static void test_basic_login(void **state)
{
	(void)state;
	uint8_t scratch[2 * SS_SOCKS5_FIELD_MAX + 2];
	ss_socks5_login_t l;

	/* "alice:s3:cret" */
	assert_int_equal(ss_http_basic_login(S("Basic YWxpY2U6czM6Y3JldA=="), scratch, &l), SS_OK);
	assert_int_equal(l.name_len, 5);
	assert_memory_equal(l.name, "alice", 5);
	assert_int_equal(l.pass_len, 7);
	assert_memory_equal(l.pass, "s3:cret", 7);
	assert_int_equal(ss_http_basic_login(S("bAsIc   YWxpY2U6czM6Y3JldA=="), scratch, &l),
			 SS_OK);
	/* "alice" (no colon), ":p", "u:" */
	assert_int_equal(ss_http_basic_login(S("Basic YWxpY2U="), scratch, &l), SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Basic OnA="), scratch, &l), SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Basic dTo="), scratch, &l), SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Bearer YWxpY2U6czM6Y3JldA=="), scratch, &l),
			 SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Basic YWxp!2U6czM6Y3JldA=="), scratch, &l), SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Basic "), scratch, &l), SS_ERR);
	assert_int_equal(ss_http_basic_login(S("Basic"), scratch, &l), SS_ERR);

	/* A name of 256 bytes is over the bound, 255 is not. */
	char b64[1024], value[1100];
	uint8_t raw[600];
	memset(raw, 'n', 256);
	raw[256] = ':';
	raw[257] = 'p';
	sodium_bin2base64(b64, sizeof(b64), raw, 258, sodium_base64_VARIANT_ORIGINAL);
	snprintf(value, sizeof(value), "Basic %s", b64);
	assert_int_equal(ss_http_basic_login((uint8_t *)value, strlen(value), scratch, &l), SS_ERR);
	sodium_bin2base64(b64, sizeof(b64), raw + 1, 257, sodium_base64_VARIANT_ORIGINAL);
	snprintf(value, sizeof(value), "Basic %s", b64);
	assert_int_equal(ss_http_basic_login((uint8_t *)value, strlen(value), scratch, &l), SS_OK);
	assert_int_equal(l.name_len, 255);
}

static void test_encode_status(void **state)
{
	(void)state;
	uint8_t out[256];
	const char want407[] = "HTTP/1.1 407 Proxy Authentication Required\r\n"
			       "Proxy-Authenticate: Basic realm=\"shadowsocks\"\r\n"
			       "Connection: close\r\nContent-Length: 0\r\n\r\n";
	const char want400[] =
	    "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

	assert_int_equal(ss_http_encode_status(407, out, sizeof(out)), sizeof(want407) - 1);
	assert_memory_equal(out, want407, sizeof(want407) - 1);
	assert_int_equal(ss_http_encode_status(400, out, sizeof(out)), sizeof(want400) - 1);
	assert_memory_equal(out, want400, sizeof(want400) - 1);
	assert_int_equal(ss_http_encode_status(400, out, 10), 0);
	assert_int_equal(ss_http_encode_status(431, out, sizeof(out)) > 0, 1);
	assert_memory_equal(out, "HTTP/1.1 431 ", 13);
}

static void test_field_is_proxy(void **state)
{
	(void)state;
	assert_true(ss_http_field_is_proxy(S("Proxy-Connection")));
	assert_true(ss_http_field_is_proxy(S("proxy-authorization")));
	assert_true(ss_http_field_is_proxy(S("KEEP-ALIVE")));
	assert_false(ss_http_field_is_proxy(S("Connection")));
	assert_false(ss_http_field_is_proxy(S("Proxy-Authenticate")));
}

/* Feeds the answers to n requests (bit i of heads: the i-th is a HEAD)
 * whole, in pieces of every size, and byte by byte: each must say the
 * last one ends at want (0: not at all, the tracker then opaque or
 * waiting for more). */
static void check_answers(const uint8_t *p, size_t len, unsigned n, uint32_t heads, size_t want,
			  bool opaque)
{
	for (size_t step = 1; step <= len; step++) {
		ss_http_resp_t r;
		size_t off = 0, used = 0, end = 0;

		ss_http_resp_init(&r);
		for (unsigned i = 0; i < n; i++)
			assert_true(ss_http_resp_expect(&r, heads >> i & 1));
		while (off < len) {
			size_t k = len - off < step ? len - off : step;
			if (ss_http_resp_feed(&r, p + off, k, &used) == SS_OK) {
				end = off + used;
				break;
			}
			assert_int_equal(used, k);
			off += k;
		}
		assert_int_equal(end, want);
		assert_int_equal(ss_http_resp_opaque(&r), opaque);
		assert_int_equal(ss_http_resp_pending(&r) == 0, want != 0);
	}
}

/* The last answer ends junk bytes before the end of lit. */
#define ANSWERS_END(lit, n, heads, junk)                                                           \
	check_answers(S(lit), n, heads, sizeof(lit) - 1 - (junk), false)
/* It does not end in lit: the tracker waits for more, or is opaque. */
#define ANSWERS_OPEN(lit, n, heads, opaque) check_answers(S(lit), n, heads, 0, opaque)

static void test_answers(void **state)
{
	(void)state;
	static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
				  "HTTP/1.1 404 Not Found\r\ncontent-length:  3 \r\n\r\nnot";
	/* Content-Length, two pipelined; bytes after the last answer. */
	ANSWERS_END("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloJUNK", 1, 0, 4);
	check_answers((const uint8_t *)two, sizeof(two) - 1, 2, 0, sizeof(two) - 1, false);
	check_answers((const uint8_t *)two, sizeof(two) - 1, 3, 0, 0, false);
	/* Chunked, with extensions and a trailer; chunked last after gzip. */
	ANSWERS_END("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		    "3;a=b\r\nabc\r\n0\r\nX-T: 1\r\n\r\n+",
		    1, 0, 1);
	/* No body: HEAD (whatever its Content-Length), 204, 304. */
	ANSWERS_END("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
		    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		    2, 1, 0);
	ANSWERS_END("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", 1, 0, 0);
	ANSWERS_END("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 1, 0, 0);
	/* Interim answers come before the final one; bare LF line ends. */
	ANSWERS_END("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\nLink: <a>\n\n"
		    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		    1, 0, 0);
	/* A zero Content-Length, and the same length twice. */
	ANSWERS_END("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", 1, 0, 0);
	/* Until the close: no length, a coding not chunked last, 101, and
	 * heads that do not parse. */
	ANSWERS_OPEN("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nbody", 1, 0, true);
	ANSWERS_OPEN(
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1,
	    0, true);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", 1, 0,
		     true);
	ANSWERS_OPEN("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", 1, 0,
		     true);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", 1, 0, true);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\n Folded: x\r\nContent-Length: 0\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("HTTP/2 200\r\nContent-Length: 0\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("HTTP/1.1 200\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("ICY 200 OK\r\n\r\n", 1, 0, true);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\nNo-Colon\r\n\r\n", 1, 0, true);
	ANSWERS_END("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", 1, 0, 0);
	ANSWERS_OPEN("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZ\r\n", 1, 0, true);
	/* The status line without a reason phrase. */
	ANSWERS_END("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 1, 0, 0);
}

static void test_answers_in_flight(void **state)
{
	(void)state;
	ss_http_resp_t r;
	size_t used = 7;

	ss_http_resp_init(&r);
	/* Nothing in flight: no byte is an answer. */
	assert_int_equal(ss_http_resp_feed(&r, S("HTTP/1.1 200 OK\r\n\r\n"), &used), SS_OK);
	assert_int_equal(used, 0);
	for (int i = 0; i < SS_HTTP_RESP_MAX; i++)
		assert_true(ss_http_resp_expect(&r, i == SS_HTTP_RESP_MAX - 1));
	assert_false(ss_http_resp_expect(&r, false));
	assert_int_equal(ss_http_resp_pending(&r), SS_HTTP_RESP_MAX);
	for (int i = 0; i < SS_HTTP_RESP_MAX - 1; i++)
		assert_int_equal(ss_http_resp_feed(
				     &r, S("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"), &used),
				 SS_AGAIN);
	assert_int_equal(ss_http_resp_pending(&r), 1);
	/* The last one was a HEAD: its Content-Length has no body. */
	assert_true(ss_http_resp_expect(&r, false));
	assert_int_equal(
	    ss_http_resp_feed(&r, S("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"), &used),
	    SS_AGAIN);
	assert_int_equal(ss_http_resp_pending(&r), 1);
	assert_int_equal(
	    ss_http_resp_feed(&r, S("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"), &used),
	    SS_OK);
	assert_int_equal(used, 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect),
	    cmocka_unit_test(test_connect_bad_targets),
	    cmocka_unit_test(test_host_bound),
	    cmocka_unit_test(test_absolute),
	    cmocka_unit_test(test_not_proxy_requests),
	    cmocka_unit_test(test_malformed_lines),
	    cmocka_unit_test(test_framing_conflicts),
	    cmocka_unit_test(test_rewrite),
	    cmocka_unit_test(test_rewrite_close),
	    cmocka_unit_test(test_body),
	    cmocka_unit_test(test_chunk_size),
	    cmocka_unit_test(test_trailer),
	    cmocka_unit_test(test_basic_login),
	    cmocka_unit_test(test_encode_status),
	    cmocka_unit_test(test_field_is_proxy),
	    cmocka_unit_test(test_answers),
	    cmocka_unit_test(test_answers_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
