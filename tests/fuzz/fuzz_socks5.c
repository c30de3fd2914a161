/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SOCKS5 parsers, raw. The first byte picks the
 * message (by its value modulo 3): the greeting, the request, or the UDP
 * request header; the rest of the input is the message. Every prefix of a
 * TCP message is parsed too, as the handshake sees it grow; a request that
 * parses is answered with a reply carrying its address, which must parse
 * back to the same address. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/socks5.h"

enum { MSG_GREETING, MSG_REQUEST, MSG_UDP };

typedef struct parsed {
	int rc;
	size_t used;
	bool noauth;
	uint8_t cmd;
	ss_addr_t dst;
	ss_socks5_rep_t rep;
} parsed_t;

static parsed_t parse(int msg, const uint8_t *buf, size_t len)
{
	parsed_t p = {.rc = SS_ERR};

	switch (msg) {
	case MSG_GREETING:
		p.rc = ss_socks5_parse_greeting(buf, len, &p.used, &p.noauth);
		if (p.rc == SS_OK) {
			FZ_CHECK(p.used == 2u + buf[1] && p.used <= len);
			FZ_CHECK(p.noauth == (memchr(buf + 2, 0, buf[1]) != NULL));
		}
		break;
	case MSG_REQUEST:
		p.rc = ss_socks5_parse_request(buf, len, &p.used, &p.cmd, &p.dst, &p.rep);
		if (p.rc == SS_OK) {
			FZ_CHECK(p.used <= len && p.cmd == buf[1]);
			FZ_CHECK(p.rep == SS_SOCKS5_REP_SUCCEEDED);
		} else if (p.rc == SS_ERR) {
			FZ_CHECK(p.rep == SS_SOCKS5_REP_GENERAL_FAILURE ||
				 p.rep == SS_SOCKS5_REP_ATYP_NOT_SUPPORTED);
		}
		break;
	default:
		p.rc = ss_socks5_parse_udp(buf, len, &p.dst, &p.used);
		FZ_CHECK(p.rc == SS_OK || p.rc == SS_ERR);
		if (p.rc == SS_OK)
			FZ_CHECK(p.used > 3 && p.used <= len);
	}
	return p;
}

/* The reply to a request that parsed: BND is its address when it is an IP
 * address, else 0.0.0.0:0. */
static void reply(const parsed_t *p)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	uint8_t out[32];
	parsed_t back;
	bool ip = ss_addr_to_sockaddr(&p->dst, &ss, &sl) == 0;
	size_t n = ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED,
					  ip ? (struct sockaddr *)&ss : NULL, out, sizeof(out));

	FZ_CHECK(n == 10 || n == 22);
	FZ_CHECK(ss_socks5_encode_reply(SS_SOCKS5_REP_SUCCEEDED, ip ? (struct sockaddr *)&ss : NULL,
					out, n - 1) == 0);
	/* A reply is laid out as a request, with REP where CMD is. */
	back = parse(MSG_REQUEST, out, n);
	FZ_CHECK(back.rc == SS_OK && back.used == n && back.cmd == SS_SOCKS5_REP_SUCCEEDED);
	if (ip && !(p->dst.atyp == SS_ATYP_IPV6 && back.dst.atyp == SS_ATYP_IPV4))
		FZ_CHECK(fz_addr_eq(&p->dst, &back.dst));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int msg;
	parsed_t full;

	if (size == 0)
		return 0;
	msg = data[0] % 3;
	data++;
	size--;
	full = parse(msg, data, size);
	if (msg == MSG_UDP)
		return 0;
	if (msg == MSG_REQUEST && full.rc == SS_OK)
		reply(&full);
	/* Incremental: a prefix that completes completes the same way in full;
	 * a refusal stays a refusal. */
	for (size_t k = 0; k < size && k <= 2 + 255 + 4 + 2; k++) {
		parsed_t p = parse(msg, data, k);

		if (p.rc == SS_OK)
			FZ_CHECK(full.rc == SS_OK && p.used == full.used);
		else if (p.rc == SS_ERR)
			FZ_CHECK(full.rc == SS_ERR && p.rep == full.rep);
		else
			FZ_CHECK(p.rc == SS_AGAIN && (full.rc != SS_OK || k < full.used));
	}
	return 0;
}
