/* SPDX-License-Identifier: MIT */
/* The three codecs, driven through codec/codec.h, as the relay drives them
 * (only a wrong key is made from the codec's own part, codec_internal.h): a
 * client's request sealed into slots and opened by a server across every
 * way the wire can be cut into reads (one byte at a time too), the answer
 * back the same way, replays and wrong keys refused, and datagrams both
 * ways, with their replays and tampering. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "config/config.h"
#include "crypto/backends.h"
#include "proto/addr.h"
#include "util/result.h"

#define UDP_BUF 66560 /* the relay's datagram buffer */
#define UDP_HEAD 256  /* where the relay puts a datagram's address */

typedef struct {
	const char *method;
	const char *server_secret; /* -k for ss-server (NULL: none) */
	const char *client_secret; /* -k for ss-local */
	const char *users;         /* "users" JSON for ss-server, or NULL */
	const char *client_method; /* ss-local's -m, if not method */
} codec_case_t;

/* base64 of 16 and 32 bytes */
#define P16A "AQIDBAUGBwgJCgsMDQ4PEA=="
#define P16B "ERITFBUWFxgZGhscHR4fIA=="
#define P32A "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
#define P32B "ISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0A="

static const codec_case_t cases[] = {
    {"aes-128-gcm", "secret", "secret", NULL, NULL},
    {"aes-256-gcm", "secret", "secret", NULL, NULL},
    {"chacha20-ietf-poly1305", "secret", "secret", NULL, NULL},
    {"xchacha20-ietf-poly1305", "secret", "secret", NULL, NULL},
    {"2022-blake3-aes-128-gcm", P16A, P16A, NULL, NULL},
    {"2022-blake3-aes-256-gcm", P32A, P32A, NULL, NULL},
    {"2022-blake3-chacha20-poly1305", P32A, P32A, NULL, NULL},
    /* SIP023: the server's identity PSK, one user; the client names both. */
    {"2022-blake3-aes-256-gcm", P32A, P32A ":" P32B,
     "[{\"name\": \"alice\", \"password\": \"" P32B "\"}]", NULL},
    /* SIP004 users: the port has no password; the client is the last
     * user, of a method of its own. */
    {"aes-256-gcm", NULL, "pw-carol",
     "[{\"name\": \"alice\", \"password\": \"pw-alice\"}, {\"name\": \"bob\", "
     "\"password\": \"pw-bob\", \"method\": \"aes-128-gcm\"}, {\"name\": \"carol\", "
     "\"password\": \"pw-carol\", \"method\": \"chacha20-ietf-poly1305\"}]",
     "chacha20-ietf-poly1305"},
    {"none", NULL, NULL, NULL, NULL},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static char tmpdir[] = "/tmp/test_codec.XXXXXX";
static ss_config_t scfg, ccfg;
static ss_codec_t ks, kc;

static void make_cfg(ss_config_t *cfg, ss_prog_t prog, const codec_case_t *c)
{
	char path[512], json[1024], err[256];
	char *argv[16];
	int argc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.json", tmpdir, prog == SS_PROG_SERVER ? "s" : "c");
	snprintf(json, sizeof(json), "{\"replay_capacity\": 100000, \"mode\": \"tcp_and_udp\"%s%s}",
		 c->users && prog == SS_PROG_SERVER ? ", \"users\": " : "",
		 c->users && prog == SS_PROG_SERVER ? c->users : "");
	assert_non_null(f = fopen(path, "w"));
	fputs(json, f);
	fclose(f);
	argv[argc++] = prog == SS_PROG_SERVER ? "ss-server" : "ss-local";
	argv[argc++] = "-s";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "-p";
	argv[argc++] = "8388";
	argv[argc++] = "-m";
	argv[argc++] =
	    (char *)(prog != SS_PROG_SERVER && c->client_method ? c->client_method : c->method);
	const char *secret = prog == SS_PROG_SERVER ? c->server_secret : c->client_secret;
	if (secret) {
		argv[argc++] = "-k";
		argv[argc++] = (char *)secret;
	}
	if (prog != SS_PROG_SERVER) {
		argv[argc++] = "-l";
		argv[argc++] = "1080";
	}
	argv[argc++] = "-c";
	argv[argc++] = path;
	argv[argc] = NULL;
	if (ss_config_parse(cfg, prog, argc, argv, NULL, err, sizeof(err)) != SS_CONFIG_RUN)
		fail_msg("%s: %s", c->method, err);
}

/* The server's codec and the client's for case c. */
static void setup_case(const codec_case_t *c)
{
	char err[256];

	make_cfg(&scfg, SS_PROG_SERVER, c);
	make_cfg(&ccfg, SS_PROG_LOCAL, c);
	assert_int_equal(ss_codec_setup(&ks, &scfg, ss_crypto_default(), true, err, sizeof(err)),
			 0);
	assert_int_equal(ss_codec_setup(&kc, &ccfg, ss_crypto_default(), false, err, sizeof(err)),
			 0);
	/* A SIP004 port of users serves plain SIP004 clients. */
	if (ks.ops == &ss_codec_aead_users)
		assert_ptr_equal(kc.ops, &ss_codec_aead);
	else
		assert_ptr_equal(ks.ops, kc.ops);
}

static void teardown_case(void)
{
	ss_codec_free(&ks);
	ss_codec_free(&kc);
	ss_config_clear(&scfg);
	ss_config_clear(&ccfg);
}

static bool addr_eq(const ss_addr_t *a, const ss_addr_t *b)
{
	uint8_t ea[SS_ADDR_MAX_ENCODED], eb[SS_ADDR_MAX_ENCODED];
	size_t na = ss_addr_encode(a, ea, sizeof(ea)), nb = ss_addr_encode(b, eb, sizeof(eb));

	return na == nb && memcmp(ea, eb, na) == 0;
}

/* ---- TCP ---- */

/* One connection end: its encoder and decoder. */
typedef struct {
	ss_codec_t *k;
	void *enc, *dec;
} end_t;

static void end_open(end_t *e, ss_codec_t *k)
{
	size_t size = ss_codec_state_size(k);

	e->k = k;
	e->enc = size ? aligned_alloc(64, size) : NULL;
	e->dec = size ? aligned_alloc(64, size) : NULL;
	if (size) {
		memset(e->enc, 0, size);
		memset(e->dec, 0, size);
	}
	assert_int_equal(ss_codec_init(k, e->enc), 0);
	assert_int_equal(ss_codec_init(k, e->dec), 0);
	ss_codec_start(k, e->enc, e->dec);
}

static void end_close(end_t *e)
{
	ss_codec_reset(e->k, e->enc);
	ss_codec_reset(e->k, e->dec);
	ss_codec_release(e->k, e->enc);
	ss_codec_release(e->k, e->dec);
	free(e->enc);
	free(e->dec);
}

/* Seals one flight from e into wire (appended at *wlen): with target, the
 * request (target, then n bytes of data); without, n bytes more. The data
 * is laid out in the codec's slots as the relay's reads lay it. */
static void seal_flight(end_t *e, uint8_t *buf, const ss_addr_t *target, const uint8_t *data,
			size_t n, uint8_t *wire, size_t *wlen)
{
	const ss_codec_layout_t *l = &e->k->layout;
	size_t lead = 0, cap0, niov = 0;
	struct iovec iov[2];

	if (target)
		lead = e->k->ops->put_target(e->k, target, buf + l->first, SS_ADDR_MAX_ENCODED);
	cap0 = e->k->ops->slot0(e->k, e->enc, target);
	assert_true(cap0 > lead && cap0 <= l->payload);
	for (size_t slot = 0, done = 0; done < n; slot++) {
		size_t room = slot ? l->payload : cap0 - lead;
		size_t m = n - done < room ? n - done : room;

		assert_true(slot < l->slots);
		memcpy(buf + l->first + slot * l->stride + (slot ? 0 : lead), data + done, m);
		done += m;
	}
	assert_int_equal(
	    e->k->ops->seal(e->k, e->enc, buf, lead + n, 1700000000, target, iov, &niov), SS_OK);
	assert_true(niov <= 2);
	for (size_t i = 0; i < niov; i++) {
		assert_true((uint8_t *)iov[i].iov_base >= buf &&
			    (uint8_t *)iov[i].iov_base + iov[i].iov_len <= buf + SS_RELAY_BUF_SIZE);
		memcpy(wire + *wlen, iov[i].iov_base, iov[i].iov_len);
		*wlen += iov[i].iov_len;
	}
}

/* A decoding end as the relay reads: bytes arrive, whole units are taken,
 * the rest waits for more. */
typedef struct {
	uint8_t *buf, *out;
	size_t len, out_len, max_spans;
	ss_codec_hdr_t hdr;
	int headers;
} reader_t;

static int feed(end_t *e, reader_t *r, const uint8_t *p, size_t n)
{
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	for (;;) {
		ss_span_t spans[8];
		ss_codec_hdr_t hdr;
		size_t consumed = 0, nspans = 0;
		int rc = e->k->ops->decode(e->k, e->dec, r->buf, r->len, 1700000000, &consumed,
					   spans, r->max_spans, &nspans, &hdr);

		if (rc != SS_OK) {
			assert_false(hdr.done);
			return rc;
		}
		assert_true(consumed <= r->len && nspans <= r->max_spans);
		if (hdr.done) {
			r->hdr = hdr;
			r->headers++;
		}
		for (size_t i = 0; i < nspans; i++) {
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

/* What the server takes as the request's target and payload: from the
 * header when it carries the target, else from the front of the plaintext. */
static void request_of(const reader_t *r, ss_addr_t *target, const uint8_t **payload,
		       size_t *payload_len)
{
	size_t used = 0;

	if (r->hdr.has_target) {
		*target = r->hdr.target;
	} else {
		assert_int_equal(ss_addr_parse(r->out, r->out_len, target, &used), SS_OK);
	}
	*payload = r->out + used;
	*payload_len = r->out_len - used;
}

#define BIG (3 * 65536 + 1000)
static uint8_t sbuf[SS_RELAY_BUF_SIZE], cbuf[SS_RELAY_BUF_SIZE];
static uint8_t wire[2 * BIG], data[BIG], rbuf[2 * BIG], rout[2 * BIG];

/* A request of n bytes from a fresh client end, opened by a fresh server
 * end whose reads are cut at split (and, with bytewise, one byte at a
 * time); then the answer of m bytes back, cut the same way. */
static void exchange(size_t n, size_t m, size_t split, bool bytewise, size_t max_spans)
{
	ss_addr_t target, got;
	end_t cli, srv;
	reader_t r = {.buf = rbuf, .out = rout, .max_spans = max_spans};
	size_t wlen = 0, plen;
	const uint8_t *payload;

	assert_int_equal(ss_addr_set_domain(&target, "example.com", 443), 0);
	end_open(&cli, &kc);
	end_open(&srv, &ks);
	ss_random_bytes(data, n > m ? n : m);

	seal_flight(&cli, cbuf, &target, data, n, wire, &wlen);
	assert_int_equal(ss_codec_bind(&kc, cli.enc, cli.dec), 0);
	split = split < wlen ? split : wlen;
	if (bytewise) {
		for (size_t i = 0; i < wlen; i++)
			assert_int_equal(feed(&srv, &r, wire + i, 1), SS_OK);
	} else {
		assert_int_equal(feed(&srv, &r, wire, split), SS_OK);
		assert_int_equal(feed(&srv, &r, wire + split, wlen - split), SS_OK);
	}
	assert_int_equal(r.len, 0);
	assert_true(r.headers <= 1);
	request_of(&r, &got, &payload, &plen);
	assert_true(addr_eq(&got, &target));
	assert_int_equal(plen, n);
	if (n)
		assert_memory_equal(payload, data, n);

	/* The answer, bound to the request. */
	assert_int_equal(ss_codec_bind(&ks, srv.dec, srv.enc), 0);
	if (m) {
		reader_t a = {.buf = rbuf, .out = rout, .max_spans = max_spans};

		wlen = 0;
		seal_flight(&srv, sbuf, NULL, data, m, wire, &wlen);
		split = split < wlen ? split : wlen;
		if (bytewise) {
			for (size_t i = 0; i < wlen; i++)
				assert_int_equal(feed(&cli, &a, wire + i, 1), SS_OK);
		} else {
			assert_int_equal(feed(&cli, &a, wire, split), SS_OK);
			assert_int_equal(feed(&cli, &a, wire + split, wlen - split), SS_OK);
		}
		assert_int_equal(a.len, 0);
		assert_int_equal(a.out_len, m);
		assert_memory_equal(a.out, data, m);
	}
	end_close(&cli);
	end_close(&srv);
}

static void test_tcp_every_split(void **state)
{
	(void)state;
	for (size_t c = 0; c < NCASES; c++) {
		setup_case(&cases[c]);
		/* A request and an answer of a few hundred wire bytes: every cut. */
		for (size_t split = 0; split <= 420; split++)
			exchange(100, 150, split, false, split % 2 ? 1 : 8);
		exchange(100, 150, 0, true, 1);
		exchange(100, 150, 0, true, 8);
		/* A request with nothing but its target, answered later. */
		exchange(0, 10, 7, false, 8);
		teardown_case();
	}
}

/* Flights that fill several slots, cut at a few places. */
static void test_tcp_full_slots(void **state)
{
	static const size_t sizes[] = {16256, 16257, 65408, 65409, 3 * 65536};
	(void)state;

	for (size_t c = 0; c < NCASES; c++) {
		setup_case(&cases[c]);
		const ss_codec_layout_t *l = &ks.layout;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i];
			/* What one buffer holds (slot 0 of a request holds less). */
			if (n > (size_t)l->payload * (l->slots - 1))
				n = (size_t)l->payload * (l->slots - 1);
			for (size_t split = 1; split < 2 * BIG; split += 40001)
				exchange(n, n, split, false, 8);
		}
		teardown_case();
	}
}

/* The same request twice: a server takes it once. */
static void test_tcp_replay(void **state)
{
	ss_addr_t target;
	(void)state;

	assert_int_equal(ss_addr_set_domain(&target, "example.com", 443), 0);
	for (size_t c = 0; c < NCASES; c++) {
		end_t cli, srv1, srv2;
		reader_t r1 = {.buf = rbuf, .out = rout, .max_spans = 8};
		size_t wlen = 0;

		setup_case(&cases[c]);
		end_open(&cli, &kc);
		ss_random_bytes(data, 100);
		seal_flight(&cli, cbuf, &target, data, 100, wire, &wlen);
		end_open(&srv1, &ks);
		end_open(&srv2, &ks);
		assert_int_equal(feed(&srv1, &r1, wire, wlen), SS_OK);
		assert_true(r1.out_len >= 100);
		reader_t r2 = {.buf = rbuf, .out = rout, .max_spans = 8};
		int rc = feed(&srv2, &r2, wire, wlen);
		if (ks.ops->identity) {
			/* method none keeps nothing to refuse a replay with */
			assert_int_equal(rc, SS_OK);
		} else {
			assert_int_equal(rc, SS_ERR);
			assert_int_equal(r2.out_len, 0);
			assert_non_null(strstr(ks.ops->why(&ks, srv2.dec), "salt"));
		}
		end_close(&cli);
		end_close(&srv1);
		end_close(&srv2);
		teardown_case();
	}
}

/* A client with another key is refused before any plaintext. */
static void test_tcp_wrong_key(void **state)
{
	ss_addr_t target;
	(void)state;

	assert_int_equal(ss_addr_set_domain(&target, "example.com", 443), 0);
	for (size_t c = 0; c < NCASES; c++) {
		codec_case_t other = cases[c];
		char err[256];
		end_t cli, srv;
		reader_t r = {.buf = rbuf, .out = rout, .max_spans = 8};
		size_t wlen = 0;

		if (!other.client_secret)
			continue; /* none: no key to get wrong */
		setup_case(&cases[c]);
		ss_codec_free(&kc);
		ss_config_clear(&ccfg);
		other.client_secret = other.client_secret[0] == 's'       ? "wrong"
				      : strlen(other.client_secret) == 24 ? P16B
									  : P32B;
		make_cfg(&ccfg, SS_PROG_LOCAL, &other);
		assert_int_equal(
		    ss_codec_setup(&kc, &ccfg, ss_crypto_default(), false, err, sizeof(err)), 0);
		end_open(&cli, &kc);
		end_open(&srv, &ks);
		ss_random_bytes(data, 100);
		seal_flight(&cli, cbuf, &target, data, 100, wire, &wlen);
		assert_int_equal(feed(&srv, &r, wire, wlen), SS_ERR);
		assert_int_equal(r.out_len, 0);
		assert_int_equal(r.headers, 0);
		end_close(&cli);
		end_close(&srv);
		teardown_case();
	}
}

/* ---- UDP ---- */

static uint8_t ubuf[UDP_BUF], sbuf_u[UDP_BUF];

/* One end: its relay state, one association, and on a server what the
 * relay keeps of the association's session (ops->udp_memo_size bytes,
 * relay/udp_sessions.h). */
typedef struct {
	ss_codec_t *k;
	void *rst, *ast, *memo;
} uend_t;

static void uend_open(uend_t *e, ss_codec_t *k, bool client)
{
	e->k = k;
	e->rst = calloc(1, k->ops->udp_relay_size + 1);
	/* aligned_alloc wants a size that is a multiple of the alignment. */
	size_t asize = (k->ops->udp_assoc_size + 64 + 63) & ~(size_t)63;
	e->ast = aligned_alloc(64, asize);
	memset(e->ast, 0, asize);
	e->memo = calloc(1, k->ops->udp_memo_size + 1);
	assert_int_equal(ss_codec_udp_init(k, e->rst), 0);
	assert_int_equal(ss_codec_udp_assoc_init(k, e->rst, e->ast), 0);
	if (client)
		assert_int_equal(ss_codec_udp_assoc_start(k, e->rst, e->ast), 0);
}

static void uend_close(uend_t *e)
{
	ss_codec_udp_assoc_reset(e->k, e->rst, e->ast);
	ss_codec_udp_assoc_free(e->k, e->rst, e->ast);
	ss_codec_udp_free(e->k, e->rst);
	free(e->rst);
	free(e->ast);
	free(e->memo);
}

/* Seals addr + n bytes of data from e into buf; returns the datagram. */
static size_t udp_seal(uend_t *e, uint8_t *buf, const ss_addr_t *addr, const uint8_t *p, size_t n,
		       uint8_t **out)
{
	uint8_t *at = buf + UDP_HEAD;
	size_t alen = ss_addr_encode(addr, at, SS_ADDR_MAX_ENCODED);
	long w;

	memcpy(at + alen, p, n);
	w = e->k->ops->udp_seal(e->k, e->rst, e->ast, buf, UDP_BUF, at, alen, n, 1700000000, out);
	assert_true(w > 0);
	return (size_t)w;
}

/* A server receiving dgram (from the client at from): the association it
 * belongs to is srv when known (the key must then match key), a new one
 * otherwise; a codec with sessions checks it against, and records it in,
 * the session's memo, as the relay does. NULL, or why it was refused. */
static uint64_t serve_now = 1700000000; /* the server's clock, for udp_serve */

static const char *udp_serve(uend_t *srv, bool known, ss_codec_dgram_t *d, const uint8_t *dgram,
			     size_t len, ss_codec_pkt_t *p)
{
	static const struct sockaddr_in from = {.sin_family = AF_INET, .sin_port = 4242};
	uint8_t *wire = sbuf_u + UDP_HEAD - ks.udp_rx_lead;
	const char *why;

	memcpy(wire, dgram, len);
	why = ks.ops->udp_open_request(&ks, srv->rst, wire, len, serve_now,
				       (const struct sockaddr *)&from, sizeof(from), d);
	if (why)
		return why;
	if (ks.ops->udp_memo_size && !ks.ops->udp_fresh(&ks, srv->memo, d))
		return "replayed";
	why = ks.ops->udp_accept(&ks, srv->rst, known ? srv->ast : NULL, d, serve_now, p);
	if (!why && ks.ops->udp_memo_size)
		ks.ops->udp_seen(&ks, srv->memo, d);
	if (!why && !known)
		assert_int_equal(ss_codec_udp_adopt(&ks, srv->rst, srv->ast, d), 0);
	return why;
}

static void test_udp(void **state)
{
	static const size_t sizes[] = {0, 1, 1000, 60000};
	static uint8_t dgram[UDP_BUF];
	(void)state;

	for (size_t c = 0; c < NCASES; c++) {
		ss_addr_t target, source;
		uend_t cli, srv;

		setup_case(&cases[c]);
		assert_int_equal(ss_addr_set_domain(&target, "example.org", 53), 0);
		assert_int_equal(ss_addr_from_host(&source, "192.0.2.7", 53), 0);
		uend_open(&cli, &kc, true);
		uend_open(&srv, &ks, false);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i];
			ss_codec_dgram_t d, d2;
			ss_codec_pkt_t p;
			uint8_t *out;
			size_t len;

			ss_random_bytes(data, n);
			len = udp_seal(&cli, ubuf, &target, data, n, &out);
			memcpy(dgram, out, len);
			assert_null(udp_serve(&srv, i > 0, &d, dgram, len, &p));
			assert_true(addr_eq(&p.addr, &target));
			assert_int_equal(p.payload_len, n);
			if (n)
				assert_memory_equal(p.payload, data, n);
			/* The same datagram again: refused, but by method none. */
			const char *why = udp_serve(&srv, true, &d2, dgram, len, &p);
			if (ks.ops->identity)
				assert_null(why);
			else
				assert_non_null(why);
			/* Any byte changed: refused. */
			if (!ks.ops->identity) {
				dgram[len / 2] ^= 4;
				assert_non_null(udp_serve(&srv, true, &d2, dgram, len, &p));
				dgram[len / 2] ^= 4;
			}
			/* The answer from source back to the client. */
			ss_random_bytes(data, n);
			len = udp_seal(&srv, ubuf, &source, data, n, &out);
			uint8_t *wire = sbuf_u + UDP_HEAD - kc.udp_rx_lead;
			memcpy(wire, out, len);
			assert_null(kc.ops->udp_open_answer(&kc, cli.rst, cli.ast, wire, len,
							    1700000000, &p));
			assert_true(addr_eq(&p.addr, &source));
			assert_int_equal(p.payload_len, n);
			if (n)
				assert_memory_equal(p.payload, data, n);
		}
		uend_close(&cli);
		uend_close(&srv);
		teardown_case();
	}
}

/* A server worker that holds no association for the sessions it opens, as
 * one that hands their datagrams to the worker holding them: each opens
 * whole, session after session, however their ids fall on the codec's
 * scratch states (SIP022 keeps a few set up by id); and then an association
 * made for one of them takes the right session. */
static void test_udp_sessions_elsewhere(void **state)
{
	enum { CLIENTS = 20, ROUNDS = 3 };
	static uint8_t dgram[UDP_BUF];
	(void)state;

	for (size_t c = 0; c < NCASES; c++) {
		uend_t cli[CLIENTS], srv;
		ss_addr_t target;

		setup_case(&cases[c]);
		if (ks.ops->identity || !ks.ops->udp_memo_size) {
			teardown_case();
			continue;
		}
		assert_int_equal(ss_addr_set_domain(&target, "example.org", 53), 0);
		uend_open(&srv, &ks, false);
		for (size_t i = 0; i < CLIENTS; i++)
			uend_open(&cli[i], &kc, true);
		/* 20 sessions on 8 scratch states: ids collide, in turn. */
		for (size_t r = 0; r < ROUNDS; r++) {
			for (size_t i = 0; i < CLIENTS; i++) {
				ss_codec_dgram_t d;
				ss_codec_pkt_t p;
				uint8_t *out;
				uint8_t *wire = sbuf_u + UDP_HEAD - ks.udp_rx_lead;
				static const struct sockaddr_in from = {.sin_family = AF_INET};

				ss_random_bytes(data, 64);
				size_t len = udp_seal(&cli[i], ubuf, &target, data, 64, &out);
				memcpy(dgram, out, len);
				memcpy(wire, dgram, len);
				assert_null(ks.ops->udp_open_request(
				    &ks, srv.rst, wire, len, serve_now,
				    (const struct sockaddr *)&from, sizeof(from), &d));
				assert_null(
				    ks.ops->udp_accept(&ks, srv.rst, NULL, &d, serve_now, &p));
				assert_int_equal(p.payload_len, 64);
				assert_memory_equal(p.payload, data, 64);
				/* The last round: client 7's session gets an association
				 * here; its next datagram opens with it. */
				if (r == ROUNDS - 1 && i == 7) {
					assert_int_equal(
					    ss_codec_udp_adopt(&ks, srv.rst, srv.ast, &d), 0);
					len = udp_seal(&cli[i], ubuf, &target, data, 32, &out);
					memcpy(wire, out, len);
					assert_null(ks.ops->udp_open_request(
					    &ks, srv.rst, wire, len, serve_now,
					    (const struct sockaddr *)&from, sizeof(from), &d));
					assert_null(ks.ops->udp_accept(&ks, srv.rst, srv.ast, &d,
								       serve_now, &p));
					assert_int_equal(p.payload_len, 32);
				}
			}
		}
		for (size_t i = 0; i < CLIENTS; i++)
			uend_close(&cli[i]);
		uend_close(&srv);
		teardown_case();
	}
}

/* A client opening an answer; NULL, or why it was refused. */
static const char *udp_answer(uend_t *cli, const uint8_t *dgram, size_t len, ss_codec_pkt_t *p)
{
	uint8_t *wire = sbuf_u + UDP_HEAD - kc.udp_rx_lead;

	memcpy(wire, dgram, len);
	return kc.ops->udp_open_answer(&kc, cli->rst, cli->ast, wire, len, 1700000000, p);
}

#define NANS 4

/* What a peer or the path can do to datagrams: cut them short, change a
 * byte, send them again or out of order, seal them with another key or at
 * another time. Every codec that authenticates refuses what it must and
 * still takes the good datagram after a bad one. */
static void test_udp_hostile(void **state)
{
	static uint8_t req[UDP_BUF], ans[NANS][UDP_BUF];
	size_t alen[NANS];
	(void)state;

	for (size_t c = 0; c < NCASES; c++) {
		bool sip022 = strncmp(cases[c].method, "2022-", 5) == 0;
		ss_addr_t target, source;
		ss_codec_dgram_t d;
		ss_codec_pkt_t p;
		uend_t cli, srv;
		uint8_t *out;
		size_t len;

		setup_case(&cases[c]);
		if (ks.ops->identity) {
			teardown_case();
			continue;
		}
		assert_int_equal(ss_addr_set_domain(&target, "example.org", 53), 0);
		assert_int_equal(ss_addr_from_host(&source, "192.0.2.7", 53), 0);
		uend_open(&cli, &kc, true);
		uend_open(&srv, &ks, false);
		ss_random_bytes(data, 100);
		len = udp_seal(&cli, ubuf, &target, data, 100, &out);
		memcpy(req, out, len);

		/* Cut short anywhere: refused, by the server. */
		for (size_t n = 0; n < len; n += n < 96 ? 1 : 97)
			assert_non_null(udp_serve(&srv, false, &d, req, n, &p));
		assert_non_null(udp_serve(&srv, false, &d, req, len - 1, &p));
		/* Sealed too long ago or too far ahead: SIP022 refuses it. */
		if (sip022) {
			serve_now = 1700000000 + 3600;
			assert_non_null(udp_serve(&srv, false, &d, req, len, &p));
			serve_now = 1700000000 - 3600;
			assert_non_null(udp_serve(&srv, false, &d, req, len, &p));
			serve_now = 1700000000;
		}
		/* None of that spoiled the good one. */
		assert_null(udp_serve(&srv, false, &d, req, len, &p));
		assert_int_equal(p.payload_len, 100);
		assert_memory_equal(p.payload, data, 100);

		/* Answers, delivered out of order: all taken. */
		for (size_t i = 0; i < NANS; i++) {
			ss_random_bytes(data, 10);
			alen[i] = udp_seal(&srv, ubuf, &source, data, 10, &out);
			memcpy(ans[i], out, alen[i]);
		}
		static const size_t order[] = {2, 0, 1};
		for (size_t i = 0; i < 3; i++) {
			assert_null(udp_answer(&cli, ans[order[i]], alen[order[i]], &p));
			assert_true(addr_eq(&p.addr, &source));
			assert_int_equal(p.payload_len, 10);
		}
		/* Again: SIP022's packet ids refuse it; SIP004 has no replay
		 * protection on answers (a client keeps no salts). */
		const char *why = udp_answer(&cli, ans[0], alen[0], &p);
		if (sip022)
			assert_non_null(why);
		else
			assert_null(why);
		/* Changed anywhere, or cut short: refused; the intact one after
		 * that is still taken (a refused packet uses up no packet id). */
		for (size_t at = 0; at < alen[3]; at += 7) {
			ans[3][at] ^= 0x40;
			assert_non_null(udp_answer(&cli, ans[3], alen[3], &p));
			ans[3][at] ^= 0x40;
		}
		for (size_t n = 0; n < alen[3]; n += 5)
			assert_non_null(udp_answer(&cli, ans[3], n, &p));
		assert_null(udp_answer(&cli, ans[3], alen[3], &p));

		/* A server with another key: its answers are refused. */
		if (!cases[c].users) {
			static uint8_t badkey[SS_MAX_KEY_LEN];
			static ss_psk_list_t badpsks;
			ss_codec_t kbad;
			uend_t bad;

			const ss_codec_priv_t *kp = ss_codec_priv(&kc);

			memcpy(badkey, kp->key, sizeof(badkey));
			badkey[0] ^= 1;
			badpsks = *kp->psks;
			if (badpsks.n)
				badpsks.keys[badpsks.n - 1][0] ^= 1;
			ss_codec_setup_client(&kbad, kp->method, badkey, &badpsks, kp->be);
			ss_codec_priv(&kbad)->server = true;
			/* (started as a client's, so that it has a session to
			 * send with) */
			uend_open(&bad, &kbad, true);
			len = udp_seal(&bad, ubuf, &source, data, 10, &out);
			memcpy(ans[0], out, len);
			why = udp_answer(&cli, ans[0], len, &p);
			assert_non_null(why);
			/* refused as unauthentic, before any session is looked at */
			assert_string_not_equal(why, "answer for another session");
			uend_close(&bad);
			ss_codec_free(&kbad);
		}

		/* The server restarted: its new session's answers are taken by
		 * the same client association. */
		if (sip022) {
			uend_close(&srv);
			uend_open(&srv, &ks, false);
			len = udp_seal(&cli, ubuf, &target, data, 20, &out);
			memcpy(req, out, len);
			assert_null(udp_serve(&srv, false, &d, req, len, &p));
			len = udp_seal(&srv, ubuf, &source, data, 30, &out);
			memcpy(ans[0], out, len);
			assert_null(udp_answer(&cli, ans[0], len, &p));
			assert_int_equal(p.payload_len, 30);
		}
		uend_close(&cli);
		uend_close(&srv);
		teardown_case();
	}
}

/* Every codec's slots fit the relay buffer, slot 0 ends before the
 * handshake area, and room before slot 0 holds any stream header. */
static void test_layout(void **state)
{
	(void)state;
	for (size_t c = 0; c < NCASES; c++) {
		setup_case(&cases[c]);
		const ss_codec_layout_t *l = &ks.layout;
		assert_true(l->slots >= 1 && l->slots <= SS_CODEC_MAX_SLOTS);
		assert_true((size_t)l->first + (l->slots - 1) * (size_t)l->stride + l->payload <=
			    SS_RELAY_BUF_SIZE);
		assert_true((size_t)l->first + l->payload <= SS_HS_OFF || l->slots == 1);
		if (!ks.ops->identity)
			assert_true(l->stride >= l->payload + SS_AEAD_CHUNK_OVERHEAD);
		teardown_case();
	}
}

/* SIP004 users: the user a connection's key belongs to is named, whatever
 * the order tried (a client address never seen, then one whose last user
 * is another); a key no user has is refused as a wrong key. */
static void test_aead_users(void **state)
{
	const codec_case_t *c = &cases[NCASES - 2];
	struct sockaddr_in from = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002)};
	ss_addr_t target;
	(void)state;

	assert_non_null(c->client_method);
	assert_int_equal(ss_addr_set_domain(&target, "example.com", 443), 0);
	setup_case(c);
	assert_ptr_equal(ks.ops, &ss_codec_aead_users);
	for (int round = 0; round < 3; round++) {
		end_t cli, srv;
		ss_codec_hdr_t hdr;
		size_t wlen = 0, consumed, nspans;
		ss_span_t spans[8];

		end_open(&cli, &kc);
		ss_random_bytes(data, 100);
		seal_flight(&cli, cbuf, &target, data, 100, wire, &wlen);
		end_open(&srv, &ks);
		ss_codec_peer(&ks, srv.dec, (const struct sockaddr *)&from);
		/* Short of the longest salt and a length block: wait. */
		memcpy(rbuf, wire, 49);
		assert_int_equal(
		    ks.ops->decode(&ks, srv.dec, rbuf, 49, 0, &consumed, spans, 8, &nspans, &hdr),
		    SS_OK);
		assert_int_equal(consumed, 0);
		assert_null(hdr.user);
		memcpy(rbuf, wire, wlen);
		assert_int_equal(
		    ks.ops->decode(&ks, srv.dec, rbuf, wlen, 0, &consumed, spans, 8, &nspans, &hdr),
		    SS_OK);
		/* The configuration's own entry, as the figures read it. */
		assert_ptr_equal(hdr.user, scfg.users[2].name);
		assert_int_equal(nspans, 1);
		assert_int_equal(ss_codec_bind(&ks, srv.dec, srv.enc), 0);
		end_close(&cli);
		end_close(&srv);
	}
	/* A key no user has. */
	{
		ss_codec_t kbad;
		uint8_t badkey[32];
		end_t cli, srv;
		size_t wlen = 0;
		reader_t r = {.buf = rbuf, .out = rout, .max_spans = 8};

		ss_key_from_password(ccfg.method, "pw-eve", badkey);
		ss_codec_setup_client(&kbad, ccfg.method, badkey, NULL, ss_crypto_default());
		end_open(&cli, &kbad);
		seal_flight(&cli, cbuf, &target, data, 100, wire, &wlen);
		end_open(&srv, &ks);
		assert_int_equal(feed(&srv, &r, wire, wlen), SS_ERR);
		assert_int_equal(r.out_len, 0);
		assert_non_null(strstr(ks.ops->why(&ks, srv.dec), "no user's password or key"));
		end_close(&cli);
		end_close(&srv);
		ss_codec_free(&kbad);
	}
	teardown_case();
}

static int group_setup(void **state)
{
	(void)state;
	if (ss_crypto_global_init() < 0 || !mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	char path[512];
	(void)state;

	snprintf(path, sizeof(path), "%s/s.json", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/c.json", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_tcp_every_split),
	    cmocka_unit_test(test_tcp_full_slots),
	    cmocka_unit_test(test_tcp_replay),
	    cmocka_unit_test(test_tcp_wrong_key),
	    cmocka_unit_test(test_udp),
	    cmocka_unit_test(test_udp_hostile),
	    cmocka_unit_test(test_aead_users),
	    cmocka_unit_test(test_udp_sessions_elsewhere),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
