/* SPDX-License-Identifier: MIT */
/* SIP004 AEAD as a codec: crypto/aead.c's stream in each direction, the
 * request's target in front of the first plaintext, a random salt and a
 * fresh subkey per datagram. Nothing binds one direction to the other. */
#include <errno.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "util/result.h"

/* The relay buffer as this codec's encoder fills it: the salt before the
 * first chunk, then chunks back to back, one per slot, each slot's
 * plaintext between its sealed length and its tag.
 *
 *   first = 50, stride = 16290, payload = 16256, 16 slots:
 *
 *   0     32-salt 32      50                  16306  16322     16340
 *   |      [salt][len+tag][ slot 0 plaintext ][ tag ][len+tag][ slot 1 ...
 *
 * A salt shorter than 32 bytes starts later; the chunks do not move. */
#define AEAD_FIRST (SS_MAX_SALT_LEN + SS_AEAD_CHUNK_HDR)
#define AEAD_SLOT SS_AEAD_FILL_PAYLOAD
#define AEAD_STRIDE (AEAD_SLOT + SS_AEAD_CHUNK_OVERHEAD)
#define AEAD_SLOTS 16
SS_CODEC_LAYOUT_FITS("SIP004", AEAD_FIRST, AEAD_SLOT, AEAD_STRIDE, AEAD_SLOTS);
_Static_assert(SS_AEAD_TAG_LEN <= SS_CODEC_UDP_TAIL_MAX, "SS_CODEC_UDP_TAIL_MAX");

/* A datagram is [salt][sealed address + payload][tag]. */
void ss_codec_aead_describe(ss_codec_t *k)
{
	k->layout = (ss_codec_layout_t){AEAD_FIRST, AEAD_STRIDE, AEAD_SLOT, AEAD_SLOTS};
	k->udp_rx_lead = ss_codec_priv(k)->method->salt_len;
	k->udp_tail = SS_AEAD_TAG_LEN;
}

/* The last replay_capacity salts of connections whose first chunk
 * authenticated, and apart from them those of datagrams that opened, so
 * that datagrams cannot push out a connection's salt. */
static int aead_server_setup(ss_codec_t *k, const ss_config_t *cfg, char *err, size_t errlen)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);
	size_t cap = (size_t)cfg->replay_capacity;

	if (!(kp->pool = ss_codec_replay_pool(k, 0, cap, 0)) ||
	    (cfg->mode != SS_MODE_TCP_ONLY && !(kp->udp_pool = ss_codec_replay_pool(k, 1, cap, 0))))
		return ss_codec_pool_error(cfg, err, errlen);
	return 0;
}

static int aead_init(ss_codec_t *k, void *st)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);

	return ss_aead_stream_init(st, kp->method, kp->be);
}

static void aead_reset(ss_codec_t *k, void *st)
{
	(void)k;
	ss_aead_stream_reset(st);
}

static void aead_free(ss_codec_t *k, void *st)
{
	(void)k;
	ss_aead_stream_free(st);
}

static void aead_start(ss_codec_t *k, void *enc, void *dec)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);

	(void)enc; /* its salt is drawn when it first seals */
	if (kp->server)
		ss_aead_dec_start_server(dec, kp->key, kp->pool);
	else
		ss_aead_dec_start(dec, kp->key);
}

/* The chunks run back to back from slot 0's, after the salt on the first
 * call: one piece of output. */
int ss_codec_aead_seal_stream(const ss_codec_t *k, ss_aead_stream_t *s, const uint8_t *key,
			      uint8_t *buf, size_t total, struct iovec *iov, size_t *niov)
{
	const ss_codec_layout_t *l = &k->layout;
	uint8_t *start = buf + l->first - SS_AEAD_CHUNK_HDR, *end = start;

	if (!s->have_salt) {
		start -= s->method->salt_len;
		if (ss_aead_enc_start(s, key, start) < 0)
			return SS_ERR;
	}
	for (size_t i = 0; total; i++) {
		size_t m = total < l->payload ? total : l->payload;
		uint8_t *chunk = buf + l->first + i * l->stride - SS_AEAD_CHUNK_HDR;

		if (ss_aead_enc_chunk(s, chunk, m) < 0)
			return SS_ERR;
		end = chunk + m + SS_AEAD_CHUNK_OVERHEAD;
		total -= m;
	}
	iov[0] = (struct iovec){start, (size_t)(end - start)};
	*niov = end > start ? 1 : 0;
	return SS_OK;
}

static int aead_seal(ss_codec_t *k, void *enc, uint8_t *buf, size_t total, uint64_t now,
		     const ss_addr_t *req_target, struct iovec *iov, size_t *niov)
{
	(void)now;
	(void)req_target;
	return ss_codec_aead_seal_stream(k, enc, ss_codec_priv(k)->key, buf, total, iov, niov);
}

static int aead_decode(ss_codec_t *k, void *dec, uint8_t *buf, size_t len, uint64_t now,
		       size_t *consumed, ss_span_t *spans, size_t max, size_t *nspans,
		       ss_codec_hdr_t *hdr)
{
	(void)k;
	(void)now;
	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	return ss_aead_dec(dec, buf, len, consumed, spans, max, nspans);
}

static const char *aead_why(ss_codec_t *k, const void *dec)
{
	const ss_aead_stream_t *s = dec;
	(void)k;

	return s->replayed
		   ? "repeated salt, possible replay attack"
		   : "authentication failed (a wrong password or key, or not a Shadowsocks peer)";
}

/* ---- UDP: [salt][sealed address + payload][tag], one cipher state for
 * the relay, re-keyed per datagram ---- */

static int aead_udp_init(ss_codec_t *k, void *rst)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);

	return kp->be->aead_init(rst, kp->method->alg);
}

static void aead_udp_free(ss_codec_t *k, void *rst)
{
	ss_codec_priv(k)->be->aead_free(rst);
}

static long aead_udp_seal(ss_codec_t *k, void *rst, void *ast, uint8_t *buf, size_t cap,
			  uint8_t *addr, size_t addr_len, size_t n, uint64_t now, uint8_t **out)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);
	const ss_method_t *m = kp->method;
	(void)ast;
	(void)now;

	if ((size_t)(addr - buf) < m->salt_len)
		return -ENOSPC;
	*out = addr - m->salt_len;
	return ss_aead_seal_packet(m, kp->be, rst, kp->key, addr, addr_len + n, *out,
				   cap - (size_t)(*out - buf));
}

/* Opens wire in place; the plaintext is the address, then the payload. */
static const char *aead_udp_open(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
				 ss_codec_pkt_t *p, bool replays)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);
	uint8_t *plain;
	long plen = ss_aead_open_packet(kp->method, kp->be, rst, kp->key, wire, len, &plain);
	size_t used;

	if (plen < 0)
		return "failed to decrypt";
	if (replays && ss_saltpool_check_add(kp->udp_pool, wire, kp->method->salt_len, 0) != 0)
		return "repeated salt, possible replay";
	if (ss_addr_parse(plain, (size_t)plen, &p->addr, &used) != SS_OK)
		return "bad address header";
	p->addr_raw = plain;
	p->payload = plain + used;
	p->payload_len = (size_t)plen - used;
	return NULL;
}

static const char *aead_udp_open_answer(ss_codec_t *k, void *rst, void *ast, uint8_t *wire,
					size_t len, uint64_t now, ss_codec_pkt_t *p)
{
	(void)ast;
	(void)now;
	return aead_udp_open(k, rst, wire, len, p, false);
}

/* A server's datagram opens whole here (its salt recorded once it has):
 * its association is its client's address. */
static const char *aead_udp_open_request(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
					 uint64_t now, const struct sockaddr *from,
					 socklen_t fromlen, ss_codec_dgram_t *d)
{
	(void)now;
	return aead_udp_open(k, rst, wire, len, ss_codec_dgram_by_source(d, from, fromlen), true);
}

const ss_codec_ops_t ss_codec_aead = {
    .name = "SIP004 AEAD",
    .state_size = sizeof(ss_aead_stream_t),
    .describe = ss_codec_aead_describe,
    .server_setup = aead_server_setup,
    .init = aead_init,
    .reset = aead_reset,
    .free = aead_free,
    .start = aead_start,
    .put_target = ss_codec_target_inline,
    .slot0 = ss_codec_slot0_full,
    .seal = aead_seal,
    .decode = aead_decode,
    .why = aead_why,
    .udp_relay_size = sizeof(ss_aead_t),
    .udp_init = aead_udp_init,
    .udp_free = aead_udp_free,
    .udp_seal = aead_udp_seal,
    .udp_open_answer = aead_udp_open_answer,
    .udp_open_request = aead_udp_open_request,
    .udp_accept = ss_codec_udp_accept_opened,
};
