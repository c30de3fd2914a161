/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 TCP streams: keys, round trips, identity headers (SIP023)
 * and every rejection rule of SIP022, one test each. UDP packets are in
 * test_aead2022_udp.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "blake3/blake3.h"
#include "crypto/aead2022.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "crypto/saltpool.h"
#include "util/result.h"

#include "aead2022_vectors.h"

#define NOW 1700000000ull
/* Room for any request header and a little payload. */
#define WIRE_MIN 4096

#include "test2022.h"

/* ---- TCP helpers ---- */

/* Writes a whole request stream to wire: the header with n initial payload
 * bytes, then chunks of the given sizes; the plaintext goes to plain. wire
 * has room for SS_2022_REQ_HDR_MAX bytes and the rest (WIRE_MIN for a small
 * request). */
static size_t make_request(const ss_method_t *m, const ss_crypto_backend_t *be,
			   const ss_psk_list_t *psks, int padding, uint64_t ts, size_t n,
			   const size_t *sizes, size_t nsizes, uint8_t *wire, uint8_t *plain,
			   size_t *plain_len, uint8_t *salt)
{
	ss_2022_stream_t s;
	uint8_t addr[SS_ADDR_MAX_ENCODED];
	ss_2022_request_t req = {addr, addr_domain(addr), padding, ts};
	size_t w, p = n;
	long h;

	assert_int_equal(ss_2022_stream_init(&s, m, be), 0);
	ss_random_bytes(plain, n);
	memcpy(wire + SS_2022_REQ_HDR_MAX, plain, n);
	h = ss_2022_enc_request(&s, psks, &req, wire + SS_2022_REQ_HDR_MAX, n, SS_2022_REQ_HDR_MAX);
	assert_true(h > 0 && h <= (long)SS_2022_REQ_HDR_MAX);
	w = (size_t)h + n + SS_AEAD_TAG_LEN;
	memmove(wire, wire + SS_2022_REQ_HDR_MAX - h, w);
	assert_memory_equal(wire, s.salt, m->salt_len);
	memcpy(salt, s.salt, m->salt_len);
	for (size_t i = 0; i < nsizes; i++) {
		ss_random_bytes(plain + p, sizes[i]);
		memcpy(wire + w + SS_2022_CHUNK_HDR, plain + p, sizes[i]);
		assert_int_equal(ss_2022_enc_chunk(&s, wire + w, sizes[i]), 0);
		w += sizes[i] + SS_2022_CHUNK_OVERHEAD;
		p += sizes[i];
	}
	ss_2022_stream_free(&s);
	*plain_len = p;
	return w;
}

/* The response stream: header and a first chunk of n bytes, then chunks. */
static size_t make_response(const ss_method_t *m, const ss_crypto_backend_t *be, const uint8_t *key,
			    const uint8_t *req_salt, uint64_t ts, size_t n, const size_t *sizes,
			    size_t nsizes, uint8_t *wire, uint8_t *plain, size_t *plain_len)
{
	ss_2022_stream_t s;
	size_t w, p = n;

	assert_int_equal(ss_2022_stream_init(&s, m, be), 0);
	assert_int_equal(ss_2022_enc_start_response(&s, key, req_salt), 0);
	ss_random_bytes(plain, n);
	memcpy(wire + SS_2022_RESP_HDR_LEN(m), plain, n);
	assert_int_equal(ss_2022_enc_response(&s, wire, n, ts), 0);
	w = SS_2022_RESP_HDR_LEN(m) + n + SS_AEAD_TAG_LEN;
	for (size_t i = 0; i < nsizes; i++) {
		ss_random_bytes(plain + p, sizes[i]);
		memcpy(wire + w + SS_2022_CHUNK_HDR, plain + p, sizes[i]);
		assert_int_equal(ss_2022_enc_chunk(&s, wire + w, sizes[i]), 0);
		w += sizes[i] + SS_2022_CHUNK_OVERHEAD;
		p += sizes[i];
	}
	ss_2022_stream_free(&s);
	*plain_len = p;
	return w;
}

/* A reader as the relay will be: bytes arrive, the decoder takes whole
 * units, the unconsumed tail is kept and presented again. */
typedef struct {
	ss_2022_stream_t s;
	uint8_t *buf, *out;
	size_t len, out_len, max_spans;
	ss_2022_header_t hdr;
	int headers;
	uint64_t now;
} reader_t;

static void reader_init(reader_t *r, const ss_method_t *m, const ss_crypto_backend_t *be,
			size_t cap, size_t max_spans)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(ss_2022_stream_init(&r->s, m, be), 0);
	r->buf = malloc(cap);
	r->out = malloc(cap);
	assert_non_null(r->buf);
	assert_non_null(r->out);
	r->max_spans = max_spans;
	r->now = NOW;
}

static void reader_free(reader_t *r)
{
	ss_2022_stream_free(&r->s);
	free(r->buf);
	free(r->out);
}

static int reader_feed(reader_t *r, const uint8_t *p, size_t n)
{
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	for (;;) {
		ss_span_t spans[8];
		ss_2022_header_t hdr;
		size_t consumed = 99, nspans = 99;
		int rc = ss_2022_dec(&r->s, r->buf, r->len, r->now, &consumed, spans, r->max_spans,
				     &nspans, &hdr);

		assert_true(consumed <= r->len);
		if (rc != SS_OK) {
			assert_int_equal(rc, SS_ERR);
			assert_int_not_equal(r->s.err, SS_2022_E_NONE);
			assert_false(hdr.done);
			return rc;
		}
		/* Units before a failing one are delivered; the call after it
		 * reports the failure. */
		if (r->s.err != SS_2022_E_NONE)
			assert_true(consumed < r->len && (nspans > 0 || hdr.done));
		assert_true(nspans <= r->max_spans);
		if (hdr.done) {
			r->hdr = hdr;
			r->headers++;
		}
		for (size_t i = 0; i < nspans; i++) {
			assert_true(spans[i].len >= 1 && spans[i].len <= SS_2022_MAX_PAYLOAD);
			assert_true(spans[i].ptr >= r->buf &&
				    spans[i].ptr + spans[i].len <= r->buf + consumed);
			memcpy(r->out + r->out_len, spans[i].ptr, spans[i].len);
			r->out_len += spans[i].len;
		}
		memmove(r->buf, r->buf + consumed, r->len - consumed);
		r->len -= consumed;
		if (consumed == 0)
			return SS_OK;
	}
}

static void check_done(reader_t *r, const uint8_t *plain, size_t plain_len)
{
	assert_int_equal(r->out_len, plain_len);
	if (plain_len > 0)
		assert_memory_equal(r->out, plain, plain_len);
	assert_int_equal(r->len, 0);
	assert_int_equal(r->s.pending_len, 0);
	assert_true(r->s.have_header);
	assert_int_equal(r->headers, 1);
}

/* ---- session subkey ---- */

/* The SIP022 session subkey of a known key and salt (checked against b3sum,
 * the BLAKE3 team's implementation, in the test's making). */
static void test_subkey(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-256-gcm");
	uint8_t key[32], salt[32], want[32], got[32];
	(void)state;

	assert_int_equal(ss_key_from_base64(m, "Lc3tTx0BY6ZJ/fCwOx3JvF0I/anhwJBO5p2+FA5Vce4=", key),
			 0);
	assert_int_equal(
	    ss_key_from_base64(m, "3oFO0VyLyGI4nFN0M9P+62vPND/L6v8IingaPJWTbJA=", salt), 0);
	assert_int_equal(
	    ss_key_from_base64(m, "EdNE+4U8dVnHT0+poAFDK2bdlwfrHT61sUNr9WYPh+E=", want), 0);
	ss_2022_session_subkey(m, key, salt, sizeof(salt), got);
	assert_memory_equal(got, want, 32);

	/* A 16-byte method derives 16 bytes: the prefix of the same output. */
	ss_2022_session_subkey(method("2022-blake3-aes-128-gcm"), key, salt, 16, got);
	{
		uint8_t material[32], full[32];

		memcpy(material, key, 16);
		memcpy(material + 16, salt, 16);
		ss_blake3_derive_key("shadowsocks 2022 session subkey", material, 32, full, 32);
		assert_memory_equal(got, full, 16);
	}
	assert_string_equal(ss_2022_strerror(SS_2022_E_TIME), "timestamp more than 30 s off");
}

/* ---- TCP round trips ---- */

static void roundtrip(const ss_method_t *m, const ss_crypto_backend_t *ebe,
		      const ss_crypto_backend_t *dbe, size_t initial, int padding)
{
	static const size_t sizes[] = {1, 300, SS_2022_MAX_PAYLOAD, 2};
	const size_t cap = 3 * 0x10000 + 4096;
	uint8_t *wire = malloc(cap), *plain = malloc(cap), salt[32];
	size_t wire_len, plain_len;
	ss_psk_list_t psks;
	ss_saltpool_t pool;
	reader_t r;
	uint8_t want_addr[SS_ADDR_MAX_ENCODED], got_addr[SS_ADDR_MAX_ENCODED];

	assert_non_null(wire);
	assert_non_null(plain);
	psks_random(m, &psks, 1);
	assert_int_equal(ss_saltpool_init(&pool, 16, SS_2022_SALT_TTL), 0);

	/* Client to server. */
	wire_len = make_request(m, ebe, &psks, padding, NOW - 3, initial, sizes,
				SS_ARRAY_LEN(sizes), wire, plain, &plain_len, salt);
	reader_init(&r, m, dbe, cap, 8);
	ss_2022_dec_start_server(&r.s, psks.keys[0], NULL, &pool);
	assert_int_equal(reader_feed(&r, wire, wire_len), SS_OK);
	check_done(&r, plain, plain_len);
	assert_int_equal(r.hdr.timestamp, NOW - 3);
	assert_null(r.hdr.user);
	assert_int_equal(ss_addr_encode(&r.hdr.target, got_addr, sizeof(got_addr)),
			 addr_domain(want_addr));
	assert_memory_equal(got_addr, want_addr, addr_domain(want_addr));
	assert_memory_equal(r.s.salt, salt, m->salt_len);
	/* The salt is in the pool now. */
	assert_int_equal(ss_saltpool_check_add(&pool, salt, m->salt_len, NOW), -EEXIST);

	/* Server to client, bound to that request salt. */
	{
		reader_t c;

		wire_len = make_response(m, dbe, psks.keys[0], r.s.salt, NOW + 2, 100, sizes,
					 SS_ARRAY_LEN(sizes), wire, plain, &plain_len);
		reader_init(&c, m, ebe, cap, 3);
		ss_2022_dec_start_client(&c.s, psks.keys[0], salt);
		assert_int_equal(reader_feed(&c, wire, wire_len), SS_OK);
		check_done(&c, plain, plain_len);
		assert_int_equal(c.hdr.timestamp, NOW + 2);
		reader_free(&c);
	}
	reader_free(&r);
	ss_saltpool_free(&pool);
	free(wire);
	free(plain);
}

/* Every method, every pair of backends, with and without initial payload. */
static void test_tcp_roundtrip(void **state)
{
	(void)state;
	for (size_t mi = 0; mi < SS_ARRAY_LEN(methods); mi++) {
		const ss_method_t *m = method(methods[mi]);

		for (size_t e = 0; e < NB; e++) {
			const ss_crypto_backend_t *dbe = backends[(e + 1) % NB];

			roundtrip(m, backends[e], dbe, 0, SS_2022_PAD_AUTO);
			roundtrip(m, backends[e], dbe, 1, SS_2022_PAD_AUTO);
			roundtrip(m, backends[e], dbe, 1000, SS_2022_PAD_AUTO);
			roundtrip(m, backends[e], dbe, 0, 1);
			roundtrip(m, backends[e], dbe, 10, SS_2022_MAX_PADDING);
		}
	}
}

/* The automatic padding: 1..900 random bytes without payload, none with. */
static void test_tcp_padding_policy(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t buf[SS_2022_REQ_HDR_MAX + 64], addr[SS_ADDR_MAX_ENCODED];
	ss_2022_request_t req = {addr, addr_v4(addr), SS_2022_PAD_AUTO, NOW};
	size_t base = ss_2022_request_hdr_len(m, 0, req.addr_len, 0);
	ss_psk_list_t psks;
	ss_2022_stream_t s;
	bool differ = false;
	long first = -1;
	(void)state;

	psks_random(m, &psks, 1);
	assert_int_equal(ss_2022_stream_init(&s, m, &ss_crypto_sodium), 0);
	for (int i = 0; i < 200; i++) {
		long h = ss_2022_enc_request(&s, &psks, &req, buf + SS_2022_REQ_HDR_MAX, 0,
					     SS_2022_REQ_HDR_MAX);

		assert_true(h >= (long)base + 1 && h <= (long)base + SS_2022_MAX_PADDING);
		differ |= first >= 0 && h != first;
		first = h;
		h = ss_2022_enc_request(&s, &psks, &req, buf + SS_2022_REQ_HDR_MAX, 5,
					SS_2022_REQ_HDR_MAX);
		assert_int_equal(h, base);
	}
	assert_true(differ);
	ss_2022_stream_free(&s);
}

/* Encoder arguments and limits. */
static void test_tcp_encoder_limits(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-256-gcm");
	const ss_method_t *mc = method("2022-blake3-chacha20-poly1305");
	const size_t cap = SS_2022_REQ_HDR_MAX + 0x10000 + 64;
	uint8_t *buf = malloc(cap), addr[SS_ADDR_MAX_ENCODED], *payload;
	ss_2022_request_t req = {addr, addr_v4(addr), 0, NOW};
	size_t room = SS_2022_REQ_HDR_MAX, max_initial;
	ss_psk_list_t psks, two;
	ss_2022_stream_t s;
	(void)state;

	assert_non_null(buf);
	payload = buf + room;
	psks_random(m, &psks, 1);
	psks_random(m, &two, 2);
	assert_int_equal(ss_2022_stream_init(&s, m, &ss_crypto_sodium), 0);

	/* Nothing before the header. */
	assert_int_equal(ss_2022_enc_chunk(&s, buf, 1), -EINVAL);
	assert_int_equal(ss_2022_enc_response(&s, buf, 1, NOW), -EINVAL);

	/* The variable header is at most 0xFFFF bytes. */
	max_initial = SS_2022_MAX_PAYLOAD - req.addr_len - 2;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, max_initial, room),
			 ss_2022_request_hdr_len(m, 0, req.addr_len, 0));
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, max_initial + 1, room),
			 -EMSGSIZE);
	/* Padding: at most 900, and not none without payload. */
	req.padding = SS_2022_MAX_PADDING + 1;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1, room), -EINVAL);
	req.padding = 0;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 0, room), -EINVAL);
	req.padding = -2;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1, room), -EINVAL);
	req.padding = 0;
	/* Room. */
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1,
					     ss_2022_request_hdr_len(m, 0, req.addr_len, 0) - 1),
			 -ENOSPC);
	assert_int_equal(ss_2022_enc_request(&s, &two, &req, payload, 1,
					     ss_2022_request_hdr_len(m, 1, req.addr_len, 0) - 1),
			 -ENOSPC);
	/* Addresses. */
	req.addr_len = 0;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1, room), -EINVAL);
	req.addr_len = SS_ADDR_MAX_ENCODED + 1;
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1, room), -EINVAL);
	req.addr_len = addr_v4(addr);

	/* Chunks: 1..0xFFFF. */
	assert_int_equal(ss_2022_enc_request(&s, &psks, &req, payload, 1, room),
			 ss_2022_request_hdr_len(m, 0, req.addr_len, 0));
	assert_int_equal(ss_2022_enc_chunk(&s, buf, 0), -EINVAL);
	assert_int_equal(ss_2022_enc_chunk(&s, buf, SS_2022_MAX_PAYLOAD + 1), -EINVAL);
	assert_int_equal(ss_2022_enc_chunk(&s, buf, SS_2022_MAX_PAYLOAD), 0);

	/* A response: once, with 1..0xFFFF bytes. */
	assert_int_equal(ss_2022_enc_start_response(&s, psks.keys[0], buf), 0);
	assert_int_equal(ss_2022_enc_chunk(&s, buf, 1), -EINVAL);
	assert_int_equal(ss_2022_enc_response(&s, buf, 0, NOW), -EINVAL);
	assert_int_equal(ss_2022_enc_response(&s, buf, SS_2022_MAX_PAYLOAD + 1, NOW), -EINVAL);
	assert_int_equal(ss_2022_enc_response(&s, buf, SS_2022_MAX_PAYLOAD, NOW), 0);
	assert_int_equal(ss_2022_enc_response(&s, buf, 1, NOW), -EINVAL);
	assert_int_equal(ss_2022_enc_chunk(&s, buf, 1), 0);
	ss_2022_stream_free(&s);

	/* ChaCha20 has no identity headers. */
	assert_int_equal(ss_2022_stream_init(&s, mc, &ss_crypto_sodium), 0);
	psks_random(mc, &two, 2);
	assert_int_equal(ss_2022_enc_request(&s, &two, &req, payload, 1, room), -EINVAL);
	two.n = 0;
	assert_int_equal(ss_2022_enc_request(&s, &two, &req, payload, 1, room), -EINVAL);
	ss_2022_stream_free(&s);
	ss_2022_stream_free(&s);

	/* Only 2022 methods. */
	{
		const ss_method_t *sip004 = NULL;

		assert_int_equal(ss_method_lookup("aes-128-gcm", &sip004, NULL, 0), 0);
		assert_int_equal(ss_2022_stream_init(&s, sip004, &ss_crypto_sodium), -EINVAL);
		ss_2022_stream_free(&s);
	}
	free(buf);
}

/* The target address may already sit in the room before the payload (as in
 * a SOCKS5 request the client just read): it is moved, not clobbered. */
static void test_tcp_addr_in_room(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t buf[2048], addr[SS_ADDR_MAX_ENCODED], want[SS_ADDR_MAX_ENCODED];
	size_t alen = addr_domain(addr);
	ss_psk_list_t psks;
	ss_2022_stream_t s;
	reader_t r;
	(void)state;

	psks_random(m, &psks, 1);
	for (size_t at = 0; at + alen <= 600; at += 37) {
		uint8_t *payload = buf + 600;
		ss_2022_request_t req = {buf + at, alen, 0, NOW};
		long h;

		memcpy(buf + at, addr, alen);
		memcpy(payload, "data", 4);
		assert_int_equal(ss_2022_stream_init(&s, m, &ss_crypto_sodium), 0);
		h = ss_2022_enc_request(&s, &psks, &req, payload, 4, 600);
		assert_true(h > 0);
		reader_init(&r, m, &ss_crypto_sodium, sizeof(buf), 4);
		ss_2022_dec_start_server(&r.s, psks.keys[0], NULL, NULL);
		assert_int_equal(reader_feed(&r, payload - h, (size_t)h + 4 + 16), SS_OK);
		check_done(&r, (const uint8_t *)"data", 4);
		assert_int_equal(ss_addr_encode(&r.hdr.target, want, sizeof(want)), alen);
		assert_memory_equal(want, addr, alen);
		reader_free(&r);
		ss_2022_stream_free(&s);
	}
}

/* ---- TCP splits ---- */

/* Every two-way split and byte-at-a-time feeding, request and response
 * streams, one and several spans per call. Nothing is consumed until the
 * salt, identity header and fixed header are all there. */
static void test_tcp_splits(void **state)
{
	static const size_t sizes[] = {1, 7, 200, 16, 3};
	uint8_t wire[WIRE_MIN], plain[WIRE_MIN], salt[32];
	(void)state;

	for (size_t mi = 0; mi < SS_ARRAY_LEN(methods); mi++) {
		const ss_method_t *m = method(methods[mi]);
		bool ident = ss_method_has_identity(m);
		ss_2022_users_t users;
		ss_psk_list_t psks;
		size_t wire_len, plain_len, first;

		psks_random(m, &psks, ident ? 2 : 1);
		if (ident) {
			assert_int_equal(ss_2022_users_init(&users, m, &ss_crypto_sodium, 1), 0);
			assert_int_equal(ss_2022_users_add(&users, psks.keys[1], NULL), 0);
		}
		for (int resp = 0; resp < 2; resp++) {
			if (resp) {
				ss_random_bytes(salt, sizeof(salt));
				wire_len = make_response(
				    m, backends[mi % NB], psks.keys[psks.n - 1], salt, NOW, 5,
				    sizes, SS_ARRAY_LEN(sizes), wire, plain, &plain_len);
				first = SS_2022_RESP_HDR_LEN(m);
			} else {
				wire_len = make_request(m, backends[mi % NB], &psks, 0, NOW, 9,
							sizes, SS_ARRAY_LEN(sizes), wire, plain,
							&plain_len, salt);
				first = m->salt_len + (ident ? 16u : 0u) + 11 + 16;
			}

			for (size_t split = 0; split <= wire_len; split++) {
				reader_t r;

				reader_init(&r, m, backends[split % NB], sizeof(wire),
					    split % 2 ? 1 : 8);
				if (resp)
					ss_2022_dec_start_client(&r.s, psks.keys[psks.n - 1], salt);
				else
					ss_2022_dec_start_server(&r.s, psks.keys[0],
								 ident ? &users : NULL, NULL);
				assert_int_equal(reader_feed(&r, wire, split), SS_OK);
				if (split < first)
					assert_int_equal(r.len, split);
				else
					assert_true(r.len < split);
				assert_int_equal(reader_feed(&r, wire + split, wire_len - split),
						 SS_OK);
				check_done(&r, plain, plain_len);
				if (!resp && ident)
					assert_ptr_equal(r.hdr.user, &users.v[0]);
				reader_free(&r);
			}
			for (size_t spans = 1; spans <= 2; spans++) {
				reader_t r;

				reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), spans);
				if (resp)
					ss_2022_dec_start_client(&r.s, psks.keys[psks.n - 1], salt);
				else
					ss_2022_dec_start_server(&r.s, psks.keys[0],
								 ident ? &users : NULL, NULL);
				for (size_t i = 0; i < wire_len; i++)
					assert_int_equal(reader_feed(&r, wire + i, 1), SS_OK);
				check_done(&r, plain, plain_len);
				reader_free(&r);
			}
		}
		if (ident)
			ss_2022_users_free(&users);
	}
}

/* A bad chunk after good ones: every unit before it is delivered and the
 * stream then fails, whatever the reads were (all at once, byte by byte,
 * split anywhere, one span a call or several). */
static void test_tcp_good_then_bad(void **state)
{
	static const size_t sizes[] = {200, 300, 400};
	uint8_t wire[WIRE_MIN], plain[WIRE_MIN], salt[32];
	(void)state;

	for (size_t mi = 0; mi < SS_ARRAY_LEN(methods); mi++) {
		const ss_method_t *m = method(methods[mi]);
		ss_psk_list_t psks;
		size_t wire_len, plain_len;

		psks_random(m, &psks, 1);
		for (int resp = 0; resp < 2; resp++) {
			if (resp) {
				ss_random_bytes(salt, sizeof(salt));
				wire_len = make_response(m, &ss_crypto_sodium, psks.keys[0], salt,
							 NOW, 100, sizes, SS_ARRAY_LEN(sizes), wire,
							 plain, &plain_len);
			} else {
				wire_len = make_request(m, &ss_crypto_sodium, &psks, 0, NOW, 100,
							sizes, SS_ARRAY_LEN(sizes), wire, plain,
							&plain_len, salt);
			}
			/* Spoil the last chunk's payload: 600 bytes authenticate. */
			wire[wire_len - 20] ^= 0x40;
			for (size_t split = 0; split <= wire_len; split += 7) {
				for (size_t spans = 1; spans <= 8; spans += 7) {
					reader_t r;
					int rc;

					reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), spans);
					if (resp)
						ss_2022_dec_start_client(&r.s, psks.keys[0], salt);
					else
						ss_2022_dec_start_server(&r.s, psks.keys[0], NULL,
									 NULL);
					rc = reader_feed(&r, wire, split);
					if (rc == SS_OK)
						rc =
						    reader_feed(&r, wire + split, wire_len - split);
					assert_int_equal(rc, SS_ERR);
					assert_int_equal(r.s.err, SS_2022_E_AUTH);
					assert_int_equal(r.out_len, plain_len - 400);
					assert_memory_equal(r.out, plain, r.out_len);
					reader_free(&r);
				}
			}
		}
	}
}

/* ---- identity headers (SIP023) ---- */

static void test_users_table(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t keys[5][16], hash[16];
	ss_2022_users_t u;
	int tags[5];
	(void)state;

	assert_int_equal(
	    ss_2022_users_init(&u, method("2022-blake3-chacha20-poly1305"), &ss_crypto_sodium, 4),
	    -EINVAL);
	ss_2022_users_free(&u);
	assert_int_equal(ss_2022_users_init(&u, m, &ss_crypto_sodium, 0), -EINVAL);
	assert_int_equal(ss_2022_users_init(&u, m, &ss_crypto_sodium, 4), 0);
	for (int i = 0; i < 5; i++)
		ss_random_bytes(keys[i], 16);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ss_2022_users_add(&u, keys[i], &tags[i]), 0);
	assert_int_equal(ss_2022_users_add(&u, keys[4], NULL), -ENOSPC);
	for (int i = 0; i < 4; i++) {
		ss_2022_user_t *user;

		ss_2022_psk_hash(m, keys[i], hash);
		user = ss_2022_users_find(&u, hash);
		assert_non_null(user);
		assert_ptr_equal(user->data, &tags[i]);
		assert_memory_equal(user->key, keys[i], 16);
		/* The hash SIP023 names: BLAKE3(key), first 16 bytes. */
		{
			uint8_t want[32];
			ss_blake3_t h;

			ss_blake3_init(&h);
			ss_blake3_update(&h, keys[i], 16);
			ss_blake3_final(&h, want, 32);
			assert_memory_equal(user->hash, want, 16);
		}
	}
	ss_2022_psk_hash(m, keys[4], hash);
	assert_null(ss_2022_users_find(&u, hash));
	ss_2022_users_free(&u);

	assert_int_equal(ss_2022_users_init(&u, m, &ss_crypto_sodium, 4), 0);
	assert_int_equal(ss_2022_users_add(&u, keys[0], NULL), 0);
	assert_int_equal(ss_2022_users_add(&u, keys[0], NULL), -EEXIST);
	assert_int_equal(u.n, 1);
	ss_2022_users_free(&u);
	ss_2022_users_free(&u);
}

/* Two users behind one server PSK; each request names its user, whose PSK
 * keys both directions. */
static void test_tcp_identity(void **state)
{
	static const size_t sizes[] = {10, 20};
	uint8_t wire[4096], plain[4096], salt[32];
	(void)state;

	for (size_t mi = 0; mi < 2; mi++) {
		const ss_method_t *m = method(methods[mi]);
		ss_psk_list_t a, b, stranger;
		ss_2022_users_t users;
		size_t wire_len, plain_len;

		psks_random(m, &a, 2);
		psks_random(m, &b, 2);
		psks_random(m, &stranger, 2);
		memcpy(b.keys[0], a.keys[0], m->key_len); /* the same server */
		memcpy(stranger.keys[0], a.keys[0], m->key_len);
		assert_int_equal(ss_2022_users_init(&users, m, &ss_crypto_sodium, 2), 0);
		assert_int_equal(ss_2022_users_add(&users, a.keys[1], "a"), 0);
		assert_int_equal(ss_2022_users_add(&users, b.keys[1], "b"), 0);

		for (int who = 0; who < 2; who++) {
			const ss_psk_list_t *c = who ? &b : &a;
			reader_t r, cr;

			wire_len = make_request(m, backends[who % NB], c, SS_2022_PAD_AUTO, NOW, 33,
						sizes, 2, wire, plain, &plain_len, salt);
			reader_init(&r, m, backends[(who + 1) % NB], sizeof(wire), 4);
			ss_2022_dec_start_server(&r.s, a.keys[0], &users, NULL);
			assert_int_equal(reader_feed(&r, wire, wire_len), SS_OK);
			check_done(&r, plain, plain_len);
			assert_non_null(r.hdr.user);
			assert_string_equal((const char *)r.hdr.user->data, who ? "b" : "a");
			assert_ptr_equal(r.s.user, r.hdr.user);

			/* The response under the user's PSK. */
			wire_len = make_response(m, &ss_crypto_sodium, r.hdr.user->key, r.s.salt,
						 NOW, 7, sizes, 2, wire, plain, &plain_len);
			reader_init(&cr, m, &ss_crypto_sodium, sizeof(wire), 4);
			ss_2022_dec_start_client(&cr.s, c->keys[1], salt);
			assert_int_equal(reader_feed(&cr, wire, wire_len), SS_OK);
			check_done(&cr, plain, plain_len);
			reader_free(&cr);
			reader_free(&r);
		}
		ss_2022_users_free(&users);
	}
}

/* A client of a relay (iPSK0:iPSK1:uPSK). The relay, as SIP023 describes it,
 * decrypts the first identity header with the iPSK0-derived subkey, finds
 * iPSK1's hash, and forwards the salt and the rest without that header to a
 * server whose identity PSK is iPSK1. */
static void test_tcp_identity_chain(void **state)
{
	static const size_t sizes[] = {10};
	const ss_method_t *m = method("2022-blake3-aes-256-gcm");
	uint8_t wire[4096], plain[4096], salt[32], fwd[4096];
	uint8_t material[64], subkey[32], hash[16], want[16];
	size_t wire_len, plain_len;
	ss_2022_users_t users;
	ss_psk_list_t psks;
	ss_aes_block_t aes;
	reader_t r;
	(void)state;

	psks_random(m, &psks, 3);
	wire_len = make_request(m, &ss_crypto_sodium, &psks, 0, NOW, 5, sizes, 1, wire, plain,
				&plain_len, salt);

	memcpy(material, psks.keys[0], 32);
	memcpy(material + 32, salt, 32);
	ss_blake3_derive_key("shadowsocks 2022 identity subkey", material, 64, subkey, 32);
	assert_int_equal(ss_crypto_sodium.aes_init(&aes), 0);
	assert_int_equal(ss_crypto_sodium.aes_setkey(&aes, subkey, 32), 0);
	assert_int_equal(ss_crypto_sodium.aes_decrypt(&aes, wire + 32, hash), 0);
	ss_crypto_sodium.aes_free(&aes);
	ss_2022_psk_hash(m, psks.keys[1], want);
	assert_memory_equal(hash, want, 16);

	memcpy(fwd, wire, 32);
	memcpy(fwd + 32, wire + 48, wire_len - 48);
	assert_int_equal(ss_2022_users_init(&users, m, &ss_crypto_sodium, 1), 0);
	assert_int_equal(ss_2022_users_add(&users, psks.keys[2], NULL), 0);
	reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), 4);
	ss_2022_dec_start_server(&r.s, psks.keys[1], &users, NULL);
	assert_int_equal(reader_feed(&r, fwd, wire_len - 16), SS_OK);
	check_done(&r, plain, plain_len);
	assert_ptr_equal(r.hdr.user, &users.v[0]);
	reader_free(&r);
	ss_2022_users_free(&users);
}

/* ---- TCP rejections: a request sealed by hand so every field can be wrong ---- */

typedef struct {
	uint8_t type;
	uint64_t ts;
	int len; /* the fixed header's length field; -1: the real length */
	const uint8_t *var;
	size_t var_len;
	const uint8_t *ipsk; /* with an identity header naming user_key */
	const uint8_t *user_key;
} forge_t;

static size_t forge_request(const ss_method_t *m, const uint8_t *key, const forge_t *f,
			    uint8_t *wire)
{
	const ss_crypto_backend_t *be = &ss_crypto_sodium;
	uint8_t nonce[12] = {0}, subkey[32], *p = wire;
	ss_aead_t a;

	ss_random_bytes(p, m->salt_len);
	p += m->salt_len;
	if (f->ipsk) {
		uint8_t material[64];
		ss_aes_block_t aes;

		memcpy(material, f->ipsk, m->key_len);
		memcpy(material + m->key_len, wire, m->salt_len);
		ss_blake3_derive_key("shadowsocks 2022 identity subkey", material,
				     m->key_len + m->salt_len, subkey, m->key_len);
		ss_2022_psk_hash(m, f->user_key, p);
		assert_int_equal(be->aes_init(&aes), 0);
		assert_int_equal(be->aes_setkey(&aes, subkey, m->key_len), 0);
		assert_int_equal(be->aes_encrypt(&aes, p, p), 0);
		be->aes_free(&aes);
		p += 16;
		key = f->user_key;
	}
	ss_2022_session_subkey(m, key, wire, m->salt_len, subkey);
	assert_int_equal(be->aead_init(&a, m->alg), 0);
	assert_int_equal(be->aead_setkey(&a, subkey, m->key_len), 0);
	p[0] = f->type;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(f->ts >> (56 - 8 * i));
	p[9] = (uint8_t)((f->len < 0 ? f->var_len : (size_t)f->len) >> 8);
	p[10] = (uint8_t)(f->len < 0 ? f->var_len : (size_t)f->len);
	assert_int_equal(be->aead_seal(&a, nonce, p, p, 11), 0);
	p += 27;
	nonce[0]++;
	memcpy(p, f->var, f->var_len);
	assert_int_equal(be->aead_seal(&a, nonce, p, p, f->var_len), 0);
	p += f->var_len + 16;
	be->aead_free(&a);
	return (size_t)(p - wire);
}

/* Feeds wire to a fresh server decoder (key, optional users and pool) in
 * one piece and returns the error it stopped with. */
static ss_2022_err_t server_verdict(const ss_method_t *m, const uint8_t *key,
				    ss_2022_users_t *users, ss_saltpool_t *pool,
				    const uint8_t *wire, size_t len, uint64_t now)
{
	ss_2022_err_t e;
	reader_t r;

	reader_init(&r, m, &ss_crypto_sodium, len + 1, 4);
	r.now = now;
	ss_2022_dec_start_server(&r.s, key, users, pool);
	(void)reader_feed(&r, wire, len);
	e = r.s.err;
	if (e != SS_2022_E_NONE) {
		size_t consumed, nspans;
		ss_span_t sp[1];

		/* Dead: it refuses everything after, with the same reason. */
		assert_int_equal(
		    ss_2022_dec(&r.s, r.buf, r.len, now, &consumed, sp, 1, &nspans, NULL), SS_ERR);
		assert_int_equal(r.s.err, e);
		assert_int_equal(nspans, 0);
	}
	reader_free(&r);
	return e;
}

/* A valid variable header: IPv4 address, padding, payload. */
static size_t var_header(uint8_t *v, size_t pad, size_t payload)
{
	size_t n = addr_v4(v);

	v[n++] = (uint8_t)(pad >> 8);
	v[n++] = (uint8_t)pad;
	memset(v + n, 0, pad + payload);
	return n + pad + payload;
}

static void test_reject_time(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], var[64], wire[256];
	forge_t f = {0, 0, -1, var, var_header(var, 1, 0), NULL, NULL};
	static const struct {
		int64_t off;
		ss_2022_err_t want;
	} tc[] = {{-31, SS_2022_E_TIME}, {31, SS_2022_E_TIME},    {-30, SS_2022_E_NONE},
		  {30, SS_2022_E_NONE},  {-3600, SS_2022_E_TIME}, {0, SS_2022_E_NONE}};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	for (size_t i = 0; i < SS_ARRAY_LEN(tc); i++) {
		size_t n;

		f.ts = NOW + (uint64_t)tc[i].off;
		n = forge_request(m, key, &f, wire);
		assert_int_equal(server_verdict(m, key, NULL, NULL, wire, n, NOW), tc[i].want);
	}
	/* Far off either way, without overflow. */
	f.ts = UINT64_MAX;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_TIME);
	f.ts = 0;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_TIME);
}

static void test_reject_type(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-256-gcm");
	uint8_t key[32], var[64], wire[256];
	forge_t f = {1, NOW, -1, var, var_header(var, 1, 0), NULL, NULL};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_TYPE);
	f.type = 2;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_TYPE);
	f.type = 0;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_NONE);
}

/* A response whose header says "request" (type 0) to a client. */
static void test_reject_type_response(void **state)
{
	const ss_method_t *m = method("2022-blake3-chacha20-poly1305");
	const ss_crypto_backend_t *be = &ss_crypto_sodium;
	uint8_t key[32], req_salt[32], wire[256], subkey[32], nonce[12] = {0}, *fixed;
	ss_aead_t a;
	reader_t r;
	(void)state;

	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(req_salt, sizeof(req_salt));
	ss_random_bytes(wire, 32);
	ss_2022_session_subkey(m, key, wire, 32, subkey);
	assert_int_equal(be->aead_init(&a, m->alg), 0);
	assert_int_equal(be->aead_setkey(&a, subkey, 32), 0);
	for (int type = 0; type < 2; type++) {
		fixed = wire + 32;
		memset(nonce, 0, sizeof(nonce));
		fixed[0] = (uint8_t)type;
		for (int i = 0; i < 8; i++)
			fixed[1 + i] = (uint8_t)(NOW >> (56 - 8 * i));
		memcpy(fixed + 9, req_salt, 32);
		fixed[41] = 0;
		fixed[42] = 1;
		assert_int_equal(be->aead_seal(&a, nonce, fixed, fixed, 43), 0);
		nonce[0] = 1;
		fixed[59] = 'x';
		assert_int_equal(be->aead_seal(&a, nonce, fixed + 59, fixed + 59, 1), 0);

		reader_init(&r, m, be, sizeof(wire), 4);
		ss_2022_dec_start_client(&r.s, key, req_salt);
		(void)reader_feed(&r, wire, 32 + 59 + 17);
		assert_int_equal(r.s.err, type == 0 ? SS_2022_E_TYPE : SS_2022_E_NONE);
		if (type == 1)
			check_done(&r, (const uint8_t *)"x", 1);
		reader_free(&r);
	}
	be->aead_free(&a);
}

static void test_reject_empty(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], var[64], wire[256];
	forge_t f = {0, NOW, -1, var, var_header(var, 0, 0), NULL, NULL};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_EMPTY);
	/* One byte of either is enough. */
	f.var_len = var_header(var, 0, 1);
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_NONE);
	f.var_len = var_header(var, 1, 0);
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_NONE);
}

static void test_reject_padding(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], var[2048], wire[4096];
	forge_t f = {0, NOW, -1, var, 0, NULL, NULL};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	/* Padding length 10 with 9 bytes left in the header. */
	f.var_len = var_header(var, 10, 0) - 1;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_PADDING);
	/* The largest claim. */
	var[7] = 0xff;
	var[8] = 0xff;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_PADDING);
	/* Exactly to the end is fine; so is more than 900 (only senders are
	 * bound by MaxPaddingLength). */
	f.var_len = var_header(var, 10, 0);
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_NONE);
	f.var_len = var_header(var, 1500, 0);
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_NONE);
}

static void test_reject_length(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], var[64], wire[256];
	forge_t f = {0, NOW, -1, var, 0, NULL, NULL};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	/* Shorter than any address and padding length: refused at the fixed
	 * header, before waiting for a variable header. */
	for (int len = 0; len < 7; len++) {
		size_t n;

		f.len = len;
		f.var_len = (size_t)len;
		memset(var, 0, sizeof(var));
		n = forge_request(m, key, &f, wire);
		assert_int_equal(server_verdict(m, key, NULL, NULL, wire, m->salt_len + 27, NOW),
				 SS_2022_E_LENGTH);
		assert_int_equal(server_verdict(m, key, NULL, NULL, wire, n, NOW),
				 SS_2022_E_LENGTH);
	}
	/* An IPv4 address cut short by the header's end. */
	f.len = -1;
	f.var_len = var_header(var, 1, 0);
	f.var_len = 6 + 1;
	var[0] = SS_ATYP_IPV6;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_LENGTH);
	/* The address, then no room for the padding length. */
	f.var_len = addr_v4(var) + 1;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_LENGTH);
}

static void test_reject_addr(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], var[64], wire[256];
	forge_t f = {0, NOW, -1, var, 0, NULL, NULL};
	static const uint8_t bad_atyp[] = {0, 2, 5, 9, 0xff};
	(void)state;

	ss_random_bytes(key, sizeof(key));
	for (size_t i = 0; i < sizeof(bad_atyp); i++) {
		f.var_len = var_header(var, 1, 4);
		var[0] = bad_atyp[i];
		assert_int_equal(
		    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
		    SS_2022_E_ADDR);
	}
	/* An empty domain. */
	memcpy(var, (const uint8_t[]){SS_ATYP_DOMAIN, 0, 0, 80, 0, 1, 0}, 7);
	f.var_len = 7;
	assert_int_equal(
	    server_verdict(m, key, NULL, NULL, wire, forge_request(m, key, &f, wire), NOW),
	    SS_2022_E_ADDR);
}

/* Any changed byte of the salt, the fixed or the variable header, or of a
 * chunk fails authentication; so does the wrong key. */
static void test_reject_auth(void **state)
{
	static const size_t sizes[] = {40};
	uint8_t wire[WIRE_MIN], plain[WIRE_MIN], salt[32];
	(void)state;

	for (size_t mi = 0; mi < SS_ARRAY_LEN(methods); mi++) {
		const ss_method_t *m = method(methods[mi]);
		ss_psk_list_t psks, other;
		size_t wire_len, plain_len;

		psks_random(m, &psks, 1);
		psks_random(m, &other, 1);
		wire_len = make_request(m, &ss_crypto_sodium, &psks, 0, NOW, 20, sizes, 1, wire,
					plain, &plain_len, salt);
		assert_int_equal(server_verdict(m, psks.keys[0], NULL, NULL, wire, wire_len, NOW),
				 SS_2022_E_NONE);
		assert_int_equal(server_verdict(m, other.keys[0], NULL, NULL, wire, wire_len, NOW),
				 SS_2022_E_AUTH);
		for (size_t i = 0; i < wire_len; i++) {
			wire[i] ^= 0x20;
			assert_int_equal(
			    server_verdict(m, psks.keys[0], NULL, NULL, wire, wire_len, NOW),
			    SS_2022_E_AUTH);
			wire[i] ^= 0x20;
		}
	}
}

/* An identity header naming nobody; a request without one to a multi-user
 * server; one with an identity header to a single-user server. */
static void test_reject_user(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t wire[WIRE_MIN], plain[WIRE_MIN], salt[32];
	ss_psk_list_t known, stranger, single;
	ss_2022_users_t users;
	size_t n, plain_len;
	(void)state;

	psks_random(m, &known, 2);
	psks_random(m, &stranger, 2);
	memcpy(stranger.keys[0], known.keys[0], 16);
	single.n = 1;
	memcpy(single.keys[0], known.keys[1], 16);
	assert_int_equal(ss_2022_users_init(&users, m, &ss_crypto_sodium, 1), 0);
	assert_int_equal(ss_2022_users_add(&users, known.keys[1], NULL), 0);

	n = make_request(m, &ss_crypto_sodium, &known, 0, NOW, 1, NULL, 0, wire, plain, &plain_len,
			 salt);
	assert_int_equal(server_verdict(m, known.keys[0], &users, NULL, wire, n, NOW),
			 SS_2022_E_NONE);
	/* The identity header decrypted under another server PSK. */
	assert_int_equal(server_verdict(m, stranger.keys[1], &users, NULL, wire, n, NOW),
			 SS_2022_E_USER);
	/* A single-user server reads the identity header as the fixed header. */
	assert_int_equal(server_verdict(m, known.keys[1], NULL, NULL, wire, n, NOW),
			 SS_2022_E_AUTH);
	n = make_request(m, &ss_crypto_sodium, &stranger, 0, NOW, 1, NULL, 0, wire, plain,
			 &plain_len, salt);
	assert_int_equal(server_verdict(m, known.keys[0], &users, NULL, wire, n, NOW),
			 SS_2022_E_USER);
	n = make_request(m, &ss_crypto_sodium, &single, 0, NOW, 1, NULL, 0, wire, plain, &plain_len,
			 salt);
	assert_int_equal(server_verdict(m, known.keys[0], &users, NULL, wire, n, NOW),
			 SS_2022_E_USER);
	/* Every bit of the identity header matters. */
	n = make_request(m, &ss_crypto_sodium, &known, 0, NOW, 1, NULL, 0, wire, plain, &plain_len,
			 salt);
	for (size_t i = 16; i < 32; i++) {
		wire[i] ^= 1;
		assert_int_equal(server_verdict(m, known.keys[0], &users, NULL, wire, n, NOW),
				 SS_2022_E_USER);
		wire[i] ^= 1;
	}
	ss_2022_users_free(&users);
}

static void test_reject_replay(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-256-gcm");
	uint8_t wire[2][WIRE_MIN], plain[WIRE_MIN], salt[32];
	size_t n[2], plain_len;
	ss_saltpool_t pool;
	ss_psk_list_t psks;
	(void)state;

	psks_random(m, &psks, 1);
	assert_int_equal(ss_saltpool_init(&pool, 1, SS_2022_SALT_TTL), 0);
	for (int i = 0; i < 2; i++)
		n[i] = make_request(m, &ss_crypto_sodium, &psks, 0, NOW, 1, NULL, 0, wire[i], plain,
				    &plain_len, salt);
	assert_int_equal(server_verdict(m, psks.keys[0], NULL, &pool, wire[0], n[0], NOW),
			 SS_2022_E_NONE);
	assert_int_equal(server_verdict(m, psks.keys[0], NULL, &pool, wire[0], n[0], NOW + 10),
			 SS_2022_E_REPLAY);
	/* A pool that cannot remember another salt refuses it. */
	assert_int_equal(server_verdict(m, psks.keys[0], NULL, &pool, wire[1], n[1], NOW),
			 SS_2022_E_FULL);
	/* Forged or stale requests never reach the pool. */
	wire[1][n[1] - 1] ^= 1;
	ss_saltpool_free(&pool);
	assert_int_equal(ss_saltpool_init(&pool, 1, SS_2022_SALT_TTL), 0);
	assert_int_equal(server_verdict(m, psks.keys[0], NULL, &pool, wire[0], n[0], NOW + 31),
			 SS_2022_E_TIME);
	assert_int_equal(pool.count, 0);
	assert_int_equal(server_verdict(m, psks.keys[0], NULL, &pool, wire[0], n[0], NOW + 30),
			 SS_2022_E_NONE);
	assert_int_equal(pool.count, 1);
	ss_saltpool_free(&pool);
}

/* A response bound to another request, and a stale response. */
static void test_reject_salt(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	uint8_t key[16], req_salt[16], other[16], wire[256], plain[64];
	size_t n, plain_len;
	reader_t r;
	(void)state;

	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(req_salt, sizeof(req_salt));
	memcpy(other, req_salt, sizeof(other));
	other[15] ^= 0x80;
	n = make_response(m, &ss_crypto_sodium, key, req_salt, NOW, 3, NULL, 0, wire, plain,
			  &plain_len);

	reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), 4);
	ss_2022_dec_start_client(&r.s, key, other);
	assert_int_equal(reader_feed(&r, wire, n), SS_ERR);
	assert_int_equal(r.s.err, SS_2022_E_SALT);
	reader_free(&r);

	reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), 4);
	r.now = NOW + 31;
	ss_2022_dec_start_client(&r.s, key, req_salt);
	assert_int_equal(reader_feed(&r, wire, n), SS_ERR);
	assert_int_equal(r.s.err, SS_2022_E_TIME);
	reader_free(&r);

	reader_init(&r, m, &ss_crypto_sodium, sizeof(wire), 4);
	ss_2022_dec_start_client(&r.s, key, req_salt);
	assert_int_equal(reader_feed(&r, wire, n), SS_OK);
	check_done(&r, plain, plain_len);
	reader_free(&r);
}

/* Empty payload blocks (length 0) are taken and report nothing. */
static void test_tcp_empty_chunk(void **state)
{
	const ss_method_t *m = method("2022-blake3-aes-128-gcm");
	const ss_crypto_backend_t *be = &ss_crypto_sodium;
	uint8_t wire[WIRE_MIN], plain[64], salt[16];
	size_t n, plain_len;
	ss_psk_list_t psks;
	ss_aead_t a;
	uint8_t subkey[16], nonce[12] = {0};
	reader_t r;
	(void)state;

	psks_random(m, &psks, 1);
	n = make_request(m, be, &psks, 0, NOW, 4, NULL, 0, wire, plain, &plain_len, salt);
	/* Seal a zero length and its empty payload with the next two nonces. */
	ss_2022_session_subkey(m, psks.keys[0], salt, 16, subkey);
	assert_int_equal(be->aead_init(&a, m->alg), 0);
	assert_int_equal(be->aead_setkey(&a, subkey, 16), 0);
	nonce[0] = 2;
	wire[n] = wire[n + 1] = 0;
	assert_int_equal(be->aead_seal(&a, nonce, wire + n, wire + n, 2), 0);
	nonce[0] = 3;
	assert_int_equal(be->aead_seal(&a, nonce, wire + n + 18, wire + n + 18, 0), 0);
	be->aead_free(&a);

	reader_init(&r, m, be, sizeof(wire), 1);
	ss_2022_dec_start_server(&r.s, psks.keys[0], NULL, NULL);
	assert_int_equal(reader_feed(&r, wire, n + 34), SS_OK);
	check_done(&r, plain, plain_len);
	reader_free(&r);
}

/* ---- against the independent Python encoder ---- */

/* tests/tools/ss2022_ref.py wrote aead2022_vectors.h from the spec with
 * python3-cryptography and b3sum; our encoders must give the same bytes from
 * the same salts, timestamps and padding, and our decoders must take the
 * script's bytes. */
static void test_known_answer(void **state)
{
	static const struct {
		const char *method, *psk0, *psk1, *salt, *rsalt, *req, *resp;
		uint64_t ts;
		int v4, padding;
		const char *initial, *chunk, *first, *rchunk;
	} tc[] = {
	    {"2022-blake3-aes-128-gcm", V_TCP_AES128_PSK0, V_TCP_AES128_PSK1, V_TCP_AES128_SALT,
	     V_TCP_AES128_RSALT, V_TCP_AES128_REQ, V_TCP_AES128_RESP, 1700000000, 0, 0,
	     "GET / HTTP/1.1\r\n\r\n", "hello", "HTTP/1.1 200 OK\r\n\r\n", "world!"},
	    {"2022-blake3-chacha20-poly1305", V_TCP_CHACHA_PSK0, NULL, V_TCP_CHACHA_SALT,
	     V_TCP_CHACHA_RSALT, V_TCP_CHACHA_REQ, V_TCP_CHACHA_RESP, 1700000002, 1, 7, "", "ping",
	     "pong", NULL},
	};
	(void)state;

	for (size_t t = 0; t < SS_ARRAY_LEN(tc); t++) {
		const ss_method_t *m = method(tc[t].method);
		uint8_t want[1024], buf[2048], salt[32], rsalt[32], addr[SS_ADDR_MAX_ENCODED];
		size_t want_len = unhex(tc[t].req, want), n = strlen(tc[t].initial), w;
		ss_2022_request_t req = {addr, 0, tc[t].padding, tc[t].ts};
		ss_2022_users_t users;
		ss_psk_list_t psks = {0};
		ss_2022_stream_t s;
		reader_t r;
		long h;

		req.addr_len = tc[t].v4 ? addr_v4(addr) : addr_domain(addr);
		psks.n = tc[t].psk1 ? 2 : 1;
		unhex(tc[t].psk0, psks.keys[0]);
		if (tc[t].psk1)
			unhex(tc[t].psk1, psks.keys[1]);
		unhex(tc[t].salt, salt);
		unhex(tc[t].rsalt, rsalt);

		for (size_t b = 0; b < NB; b++) {
			assert_int_equal(ss_2022_stream_init(&s, m, backends[b]), 0);
			memcpy(buf + 1024, tc[t].initial, n);
			h = ss_2022_enc_request_salt(&s, &psks, &req, buf + 1024, n, 1024, salt);
			assert_true(h > 0);
			w = (size_t)h + n + 16;
			memcpy(buf + 1024 + w - h + 18, tc[t].chunk, strlen(tc[t].chunk));
			assert_int_equal(
			    ss_2022_enc_chunk(&s, buf + 1024 + w - h, strlen(tc[t].chunk)), 0);
			w += strlen(tc[t].chunk) + SS_2022_CHUNK_OVERHEAD;
			assert_int_equal(w, want_len);
			assert_memory_equal(buf + 1024 - h, want, want_len);
			ss_2022_stream_free(&s);
		}

		/* Our server takes the script's request. */
		reader_init(&r, m, &ss_crypto_sodium, sizeof(buf), 4);
		r.now = tc[t].ts;
		if (tc[t].psk1) {
			assert_int_equal(ss_2022_users_init(&users, m, &ss_crypto_sodium, 1), 0);
			assert_int_equal(ss_2022_users_add(&users, psks.keys[1], NULL), 0);
		}
		ss_2022_dec_start_server(&r.s, psks.keys[0], tc[t].psk1 ? &users : NULL, NULL);
		assert_int_equal(reader_feed(&r, want, want_len), SS_OK);
		assert_int_equal(r.out_len, n + strlen(tc[t].chunk));
		assert_memory_equal(r.out, tc[t].initial, n);
		assert_memory_equal(r.out + n, tc[t].chunk, strlen(tc[t].chunk));
		assert_int_equal(r.hdr.timestamp, tc[t].ts);
		reader_free(&r);

		/* The response, both ways. */
		want_len = unhex(tc[t].resp, want);
		n = strlen(tc[t].first);
		assert_int_equal(ss_2022_stream_init(&s, m, &ss_crypto_sodium), 0);
		assert_int_equal(
		    ss_2022_enc_start_response_salt(&s, psks.keys[psks.n - 1], salt, rsalt), 0);
		memcpy(buf + SS_2022_RESP_HDR_LEN(m), tc[t].first, n);
		assert_int_equal(ss_2022_enc_response(&s, buf, n, tc[t].ts + 1), 0);
		w = SS_2022_RESP_HDR_LEN(m) + n + 16;
		if (tc[t].rchunk) {
			memcpy(buf + w + 18, tc[t].rchunk, strlen(tc[t].rchunk));
			assert_int_equal(ss_2022_enc_chunk(&s, buf + w, strlen(tc[t].rchunk)), 0);
			w += strlen(tc[t].rchunk) + SS_2022_CHUNK_OVERHEAD;
		}
		assert_int_equal(w, want_len);
		assert_memory_equal(buf, want, want_len);
		ss_2022_stream_free(&s);

		reader_init(&r, m, &ss_crypto_sodium, sizeof(buf), 4);
		r.now = tc[t].ts;
		ss_2022_dec_start_client(&r.s, psks.keys[psks.n - 1], salt);
		assert_int_equal(reader_feed(&r, want, want_len), SS_OK);
		assert_int_equal(r.out_len, n + (tc[t].rchunk ? strlen(tc[t].rchunk) : 0));
		assert_memory_equal(r.out, tc[t].first, n);
		reader_free(&r);
		if (tc[t].psk1)
			ss_2022_users_free(&users);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_subkey),
	    cmocka_unit_test(test_tcp_roundtrip),
	    cmocka_unit_test(test_tcp_padding_policy),
	    cmocka_unit_test(test_tcp_encoder_limits),
	    cmocka_unit_test(test_tcp_addr_in_room),
	    cmocka_unit_test(test_tcp_splits),
	    cmocka_unit_test(test_tcp_good_then_bad),
	    cmocka_unit_test(test_users_table),
	    cmocka_unit_test(test_tcp_identity),
	    cmocka_unit_test(test_tcp_identity_chain),
	    cmocka_unit_test(test_reject_time),
	    cmocka_unit_test(test_reject_type),
	    cmocka_unit_test(test_reject_type_response),
	    cmocka_unit_test(test_reject_empty),
	    cmocka_unit_test(test_reject_padding),
	    cmocka_unit_test(test_reject_length),
	    cmocka_unit_test(test_reject_addr),
	    cmocka_unit_test(test_reject_auth),
	    cmocka_unit_test(test_reject_user),
	    cmocka_unit_test(test_reject_replay),
	    cmocka_unit_test(test_reject_salt),
	    cmocka_unit_test(test_tcp_empty_chunk),
	    cmocka_unit_test(test_known_answer),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
