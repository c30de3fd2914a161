/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SOCKS4/4a request parser, raw. Every prefix is
 * parsed too, as the handshake sees the request grow: a prefix that
 * completes completes as the whole does, and a refusal stays a refusal. A
 * request that parses is checked against its own bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/socks4.h"

typedef struct parsed {
	int rc;
	size_t used;
	uint8_t cmd;
	ss_addr_t dst;
} parsed_t;

static parsed_t parse(const uint8_t *buf, size_t len)
{
	parsed_t p = {.rc = SS_ERR};

	p.rc = ss_socks4_parse_request(buf, len, &p.used, &p.cmd, &p.dst);
	FZ_CHECK(p.rc == SS_OK || p.rc == SS_AGAIN || p.rc == SS_ERR);
	return p;
}

static void check(const uint8_t *buf, size_t len, const parsed_t *p)
{
	size_t uid = strnlen((const char *)buf + 8, len - 8);

	FZ_CHECK(p->used <= len && p->used >= 9 && buf[p->used - 1] == 0);
	FZ_CHECK(buf[0] == SS_SOCKS4_VERSION && p->cmd == buf[1]);
	FZ_CHECK(p->dst.port == (buf[2] << 8 | buf[3]));
	FZ_CHECK(uid <= SS_SOCKS4_USERID_MAX);
	if (p->dst.atyp == SS_ATYP_DOMAIN) {
		const char *host = (const char *)buf + 8 + uid + 1;
		FZ_CHECK(buf[4] == 0 && buf[5] == 0 && buf[6] == 0 && buf[7] != 0);
		FZ_CHECK(p->dst.domain_len > 0 && p->dst.domain_len <= SS_SOCKS4_HOST_MAX);
		FZ_CHECK(strlen(p->dst.domain) == p->dst.domain_len);
		FZ_CHECK(memcmp(p->dst.domain, host, p->dst.domain_len) == 0);
		FZ_CHECK(p->used == 8 + uid + 1 + p->dst.domain_len + 1u);
	} else {
		FZ_CHECK(p->dst.atyp == SS_ATYP_IPV4 && memcmp(p->dst.v4, buf + 4, 4) == 0);
		FZ_CHECK(p->used == 8 + uid + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parsed_t full = parse(data, size);
	uint8_t out[SS_SOCKS4_REPLY_LEN];

	if (full.rc == SS_OK)
		check(data, size, &full);
	FZ_CHECK(ss_socks4_encode_reply(SS_SOCKS4_REP_REJECTED, out) == 8 && out[0] == 0 &&
		 out[1] == SS_SOCKS4_REP_REJECTED);
	for (size_t k = 0; k < size && k <= 8 + 256 + 256; k++) {
		parsed_t p = parse(data, k);

		if (p.rc == SS_OK)
			FZ_CHECK(full.rc == SS_OK && p.used == full.used);
		else if (p.rc == SS_ERR)
			FZ_CHECK(full.rc == SS_ERR);
		else
			FZ_CHECK(full.rc != SS_OK || k < full.used);
	}
	return 0;
}
