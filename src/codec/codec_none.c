/* SPDX-License-Identifier: MIT */
/* Method none as a codec: the request's target in front of the first bytes,
 * then the bytes as they are, both ways; datagrams are the address, then the
 * payload. An identity codec: the relay copies (and splices) the stream and
 * calls decode only on a server's first flight, to find the target. */
#include <string.h>

#include "codec/codec_internal.h"
#include "util/result.h"

/* The relay buffer holds the plaintext as it is, from 0: one slot, the
 * whole buffer. A datagram carries nothing around its plaintext. */
static void none_describe(ss_codec_t *k)
{
	k->layout = (ss_codec_layout_t){0, SS_RELAY_BUF_SIZE, SS_RELAY_BUF_SIZE, 1};
	k->udp_rx_lead = 0;
	k->udp_tail = 0;
}

static int none_seal(ss_codec_t *k, void *enc, uint8_t *buf, size_t total, uint64_t now,
		     const ss_addr_t *req_target, struct iovec *iov, size_t *niov)
{
	(void)enc;
	(void)now;
	(void)req_target;
	iov[0] = (struct iovec){buf + k->layout.first, total};
	*niov = total ? 1 : 0;
	return SS_OK;
}

static int none_decode(ss_codec_t *k, void *dec, uint8_t *buf, size_t len, uint64_t now,
		       size_t *consumed, ss_span_t *spans, size_t max, size_t *nspans,
		       ss_codec_hdr_t *hdr)
{
	(void)k;
	(void)dec;
	(void)now;
	(void)max;
	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	*nspans = 0;
	if (len)
		spans[(*nspans)++] = (ss_span_t){buf, len};
	*consumed = len;
	return SS_OK;
}

static const char *none_why(ss_codec_t *k, const void *dec)
{
	(void)k;
	(void)dec;
	return "cannot fail";
}

/* ---- UDP: the address, then the payload ---- */

static long none_udp_seal(ss_codec_t *k, void *rst, void *ast, uint8_t *buf, size_t cap,
			  uint8_t *addr, size_t addr_len, size_t n, uint64_t now, uint8_t **out)
{
	(void)k;
	(void)rst;
	(void)ast;
	(void)buf;
	(void)cap;
	(void)now;
	*out = addr;
	return (long)(addr_len + n);
}

static const char *none_udp_parse(uint8_t *wire, size_t len, ss_codec_pkt_t *p)
{
	size_t used;

	if (ss_addr_parse(wire, len, &p->addr, &used) != SS_OK)
		return "bad address header";
	p->addr_raw = wire;
	p->payload = wire + used;
	p->payload_len = len - used;
	return NULL;
}

static const char *none_udp_open_answer(ss_codec_t *k, void *rst, void *ast, uint8_t *wire,
					size_t len, uint64_t now, ss_codec_pkt_t *p)
{
	(void)k;
	(void)rst;
	(void)ast;
	(void)now;
	return none_udp_parse(wire, len, p);
}

static const char *none_udp_open_request(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
					 uint64_t now, const struct sockaddr *from,
					 socklen_t fromlen, ss_codec_dgram_t *d)
{
	(void)k;
	(void)rst;
	(void)now;
	return none_udp_parse(wire, len, ss_codec_dgram_by_source(d, from, fromlen));
}

const ss_codec_ops_t ss_codec_none = {
    .name = "none",
    .identity = true,
    .describe = none_describe,
    .put_target = ss_codec_target_inline,
    .slot0 = ss_codec_slot0_full,
    .seal = none_seal,
    .decode = none_decode,
    .why = none_why,
    .udp_seal = none_udp_seal,
    .udp_open_answer = none_udp_open_answer,
    .udp_open_request = none_udp_open_request,
    .udp_accept = ss_codec_udp_accept_opened,
};
