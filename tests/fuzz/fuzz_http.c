/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP proxy parsers, raw; the first byte picks
 * which. Every prefix is parsed too, as the handshake and the body reader
 * see their input grow: a prefix that completes completes as the whole
 * does, and a refusal stays a refusal. A request that parses is rewritten
 * to origin form, which must hold no proxy field and parse back to the
 * same fields. A chunked body streamed in pieces ends where the
 * contiguous parsers say it does; answers streamed back in pieces end
 * where they end fed whole. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/http.h"

#define HEAD_MAX 8192

static bool same_prefix_rule(int full, size_t full_used, int part, size_t part_used, size_t k)
{
	if (part == SS_OK)
		return full == SS_OK && part_used == full_used;
	if (part == SS_ERR)
		return full == SS_ERR;
	return full != SS_OK || k < full_used;
}

/* The rewritten head: "METHOD /... HTTP/1.x", Host first, no proxy field. */
static void check_rewrite(const uint8_t *buf, const ss_http_req_t *req, bool close)
{
	static uint8_t out[HEAD_MAX + 600];
	size_t n = ss_http_rewrite_head(buf, req, close, out, sizeof(out));

	FZ_CHECK(n > 0 && n <= req->head_len + (close ? SS_HTTP_REWRITE_GROWTH : 2));
	FZ_CHECK(memcmp(out, buf, req->method.len) == 0 && out[req->method.len] == ' ' &&
		 out[req->method.len + 1] == '/');
	FZ_CHECK(memcmp(out + n - 4, "\r\n\r\n", 4) == 0);
	FZ_CHECK(ss_http_rewrite_head(buf, req, close, out, n - 1) == 0);
	n = ss_http_rewrite_head(buf, req, close, out, n);

	/* Back to absolute form, it must parse to the same request. */
	static uint8_t again[HEAD_MAX + 1200];
	size_t sp = req->method.len + 1, a = 0;
	memcpy(again, out, sp);
	a = sp;
	memcpy(again + a, "http://", 7);
	a += 7;
	size_t auth = req->path.off - req->target.off - 7;
	memcpy(again + a, buf + req->target.off + 7, auth);
	a += auth;
	memcpy(again + a, out + sp, n - sp);
	a += n - sp;
	ss_http_req_t r2;
	FZ_CHECK(ss_http_parse_request(again, a, &r2) == SS_OK);
	FZ_CHECK(r2.head_len == a && !r2.has_auth && r2.has_host);
	FZ_CHECK(r2.chunked == req->chunked && r2.has_length == req->has_length &&
		 r2.length == req->length && r2.expect_continue == req->expect_continue &&
		 r2.minor == req->minor && r2.head == req->head);
	if (close)
		FZ_CHECK(r2.close);
	FZ_CHECK(r2.dst.atyp == req->dst.atyp && r2.dst.port == req->dst.port);
}

static void fuzz_request(const uint8_t *buf, size_t len)
{
	ss_http_req_t full, part;
	int rc = ss_http_parse_request(buf, len, &full);

	FZ_CHECK(rc == SS_OK || rc == SS_AGAIN || rc == SS_ERR);
	if (rc == SS_OK) {
		FZ_CHECK(full.head_len >= 4 && full.head_len <= len);
		FZ_CHECK(memcmp(buf + full.head_len - 4, "\r\n\r\n", 4) == 0);
		FZ_CHECK(full.dst.atyp == SS_ATYP_IPV4 || full.dst.atyp == SS_ATYP_IPV6 ||
			 full.dst.atyp == SS_ATYP_DOMAIN);
		FZ_CHECK(full.dst.port != 0);
		FZ_CHECK(!(full.chunked && full.has_length));
		if (full.dst.atyp == SS_ATYP_DOMAIN)
			FZ_CHECK(full.dst.domain_len > 0 &&
				 strlen(full.dst.domain) == full.dst.domain_len);
		if (!full.connect && full.head_len <= HEAD_MAX) {
			check_rewrite(buf, &full, false);
			check_rewrite(buf, &full, true);
		}
	}
	for (size_t k = 0; k < len && k <= HEAD_MAX; k++) {
		int r = ss_http_parse_request(buf, k, &part);
		FZ_CHECK(same_prefix_rule(rc, full.head_len, r, part.head_len, k));
	}
}

static void fuzz_chunk(const uint8_t *buf, size_t len)
{
	size_t used = 0, u2 = 0;
	uint64_t size = 0, s2;
	int rc = ss_http_parse_chunk_size(buf, len, &used, &size);

	if (rc == SS_OK)
		FZ_CHECK(used >= 3 && used <= len && buf[used - 1] == '\n' && size < (1ull << 60));
	for (size_t k = 0; k < len && k <= 1100; k++)
		FZ_CHECK(
		    same_prefix_rule(rc, used, ss_http_parse_chunk_size(buf, k, &u2, &s2), u2, k));
}

static void fuzz_trailer(const uint8_t *buf, size_t len)
{
	size_t used = 0, u2 = 0;
	int rc = ss_http_parse_trailer(buf, len, &used);

	if (rc == SS_OK)
		FZ_CHECK(used >= 2 && used <= len && buf[used - 1] == '\n');
	for (size_t k = 0; k < len && k <= 2000; k++)
		FZ_CHECK(same_prefix_rule(rc, used, ss_http_parse_trailer(buf, k, &u2), u2, k));
}

/* The chunked body after a head, walked with the contiguous parsers and
 * streamed through ss_http_body_feed in pieces whose sizes the input's
 * first byte picks: both must agree on where it ends, and on what is bad
 * (the stream may see it a few bytes sooner). */
static void fuzz_body(const uint8_t *data, size_t size)
{
	static const uint8_t head[] =
	    "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	ss_http_req_t req;
	ss_http_body_t b;
	size_t pos = 0, used = 0, end = 0;
	uint64_t chunk;
	int want = SS_AGAIN, r = SS_AGAIN;

	if (size < 1)
		return;
	size_t step = (size_t)(data[0] % 17) + 1;
	const uint8_t *buf = data + 1;
	size_t len = size - 1;

	/* Contiguous. */
	for (;;) {
		int c = ss_http_parse_chunk_size(buf + pos, len - pos, &used, &chunk);
		if (c != SS_OK) {
			want = c;
			break;
		}
		pos += used;
		if (chunk == 0) {
			c = ss_http_parse_trailer(buf + pos, len - pos, &used);
			want = c;
			end = pos + used;
			break;
		}
		/* The CRLF after the data is judged byte by byte as it comes. */
		if (len - pos <= chunk) {
			want = SS_AGAIN;
			break;
		}
		pos += chunk;
		if (buf[pos] != '\r' || (len - pos > 1 && buf[pos + 1] != '\n')) {
			want = SS_ERR;
			break;
		}
		if (len - pos == 1) {
			want = SS_AGAIN;
			break;
		}
		pos += 2;
	}
	/* Streamed. */
	FZ_CHECK(ss_http_parse_request(head, sizeof(head) - 1, &req) == SS_OK);
	ss_http_body_init(&b, &req);
	size_t off = 0, got = 0;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		r = ss_http_body_feed(&b, buf + off, n, &used);
		if (r != SS_AGAIN) {
			got = off + used;
			break;
		}
		FZ_CHECK(used == n);
		off += n;
	}
	/* The contiguous parsers judge a line once it is whole; the stream
	 * judges each byte as it comes, so it may refuse sooner. */
	if (want == SS_OK)
		FZ_CHECK(r == SS_OK && got == end);
	else if (want == SS_ERR)
		FZ_CHECK(r == SS_ERR);
	else
		FZ_CHECK(r != SS_OK);
}

static void fuzz_login(const uint8_t *buf, size_t len)
{
	uint8_t scratch[2 * SS_SOCKS5_FIELD_MAX + 2];
	ss_socks5_login_t l;

	if (ss_http_basic_login(buf, len, scratch, &l) == SS_OK) {
		FZ_CHECK(l.name_len >= 1 && l.name_len <= SS_SOCKS5_FIELD_MAX);
		FZ_CHECK(l.pass_len >= 1 && l.pass_len <= SS_SOCKS5_FIELD_MAX);
		FZ_CHECK(l.name == scratch && l.pass == scratch + l.name_len + 1);
		FZ_CHECK(memchr(l.name, ':', l.name_len) == NULL);
	}
}

/* Answers on their way back: after a byte that picks the piece size and
 * one that picks how many requests are in flight (1-8) and which are HEAD,
 * the origin's bytes fed to ss_http_resp_feed whole and in pieces: both
 * must end the last answer at the same byte, or both not at all, and
 * never take more than they were given. */
static int resp_run(const uint8_t *buf, size_t len, size_t step, uint8_t reqs, size_t *end)
{
	ss_http_resp_t r;
	size_t off = 0, used = 0;
	unsigned n = (unsigned)(reqs & 7) + 1;

	ss_http_resp_init(&r);
	FZ_CHECK(ss_http_resp_pending(&r) == 0);
	for (unsigned i = 0; i < n; i++)
		FZ_CHECK(ss_http_resp_expect(&r, reqs >> (3 + i % 5) & 1));
	FZ_CHECK(ss_http_resp_pending(&r) == n);
	while (off < len) {
		size_t k = len - off < step ? len - off : step;
		unsigned before = ss_http_resp_pending(&r);
		int rc = ss_http_resp_feed(&r, buf + off, k, &used);
		FZ_CHECK(used <= k && ss_http_resp_pending(&r) <= before);
		if (rc == SS_OK) {
			FZ_CHECK(ss_http_resp_pending(&r) == 0 && !ss_http_resp_opaque(&r));
			*end = off + used;
			/* Nothing more is an answer. */
			FZ_CHECK(ss_http_resp_feed(&r, buf, len, &used) == SS_OK && used == 0);
			return SS_OK;
		}
		FZ_CHECK(rc == SS_AGAIN && used == k && ss_http_resp_pending(&r) > 0);
		off += k;
	}
	return SS_AGAIN;
}

static void fuzz_resp(const uint8_t *data, size_t size)
{
	size_t whole = 0, split = 0, bytes = 0;

	if (size < 2)
		return;
	const uint8_t *buf = data + 2;
	size_t len = size - 2;
	int a = resp_run(buf, len, len ? len : 1, data[1], &whole);
	int b = resp_run(buf, len, (size_t)(data[0] % 23) + 1, data[1], &split);
	int c = resp_run(buf, len, 1, data[1], &bytes);
	FZ_CHECK(a == b && b == c);
	if (a == SS_OK)
		FZ_CHECK(whole == split && split == bytes && whole <= len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] & 7) {
	case 0:
		fuzz_request(data + 1, size - 1);
		break;
	case 1:
		fuzz_chunk(data + 1, size - 1);
		break;
	case 2:
		fuzz_trailer(data + 1, size - 1);
		break;
	case 4:
		fuzz_body(data + 1, size - 1);
		break;
	case 5:
		fuzz_resp(data + 1, size - 1);
		break;
	default:
		fuzz_login(data + 1, size - 1);
		break;
	}
	return 0;
}
