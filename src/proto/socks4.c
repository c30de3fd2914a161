/* SPDX-License-Identifier: MIT */
#include "proto/socks4.h"

#include <stdbool.h>
#include <string.h>

#include "util/result.h"

#define FIXED_LEN 8

/* Finds the NUL that ends a string of at most max bytes at buf[0..len).
 * SS_OK with *n its length; SS_AGAIN when it may still end in bounds. */
static int socks4_string(const uint8_t *buf, size_t len, size_t max, size_t *n)
{
	size_t look = len < max + 1 ? len : max + 1;
	const uint8_t *nul = memchr(buf, 0, look);

	if (nul == NULL)
		return look == max + 1 ? SS_ERR : SS_AGAIN;
	*n = (size_t)(nul - buf);
	return SS_OK;
}

int ss_socks4_parse_request(const uint8_t *buf, size_t len, size_t *used, uint8_t *cmd,
			    ss_addr_t *dst)
{
	size_t uid, host;

	if (len < 1)
		return SS_AGAIN;
	if (buf[0] != SS_SOCKS4_VERSION)
		return SS_ERR;
	if (len < FIXED_LEN)
		return SS_AGAIN;

	int r = socks4_string(buf + FIXED_LEN, len - FIXED_LEN, SS_SOCKS4_USERID_MAX, &uid);
	if (r != SS_OK)
		return r;
	size_t end = FIXED_LEN + uid + 1;
	/* 4a: an address no one can mean, 0.0.0.x, says a name follows. */
	bool named = buf[4] == 0 && buf[5] == 0 && buf[6] == 0 && buf[7] != 0;

	if (named) {
		r = socks4_string(buf + end, len - end, SS_SOCKS4_HOST_MAX, &host);
		if (r != SS_OK)
			return r;
		if (host == 0)
			return SS_ERR;
	}

	memset(dst, 0, sizeof(*dst));
	dst->port = (uint16_t)(buf[2] << 8 | buf[3]);
	if (named) {
		dst->atyp = SS_ATYP_DOMAIN;
		dst->domain_len = (uint8_t)host;
		memcpy(dst->domain, buf + end, host);
		end += host + 1;
	} else {
		dst->atyp = SS_ATYP_IPV4;
		memcpy(dst->v4, buf + 4, 4);
	}
	*cmd = buf[1];
	*used = end;
	return SS_OK;
}

size_t ss_socks4_encode_reply(ss_socks4_rep_t rep, uint8_t out[SS_SOCKS4_REPLY_LEN])
{
	memset(out, 0, SS_SOCKS4_REPLY_LEN);
	out[1] = (uint8_t)rep;
	return SS_SOCKS4_REPLY_LEN;
}
