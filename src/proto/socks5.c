/* SPDX-License-Identifier: MIT */
#include "proto/socks5.h"

#include <string.h>

#include "util/result.h"

int ss_socks5_parse_greeting(const uint8_t *buf, size_t len, size_t *used, bool *noauth)
{
	if (len < 1)
		return SS_AGAIN;
	if (buf[0] != SS_SOCKS5_VERSION)
		return SS_ERR;
	if (len < 2)
		return SS_AGAIN;

	size_t need = 2 + (size_t)buf[1];
	if (len < need)
		return SS_AGAIN;

	/* NMETHODS 0 is malformed, but answering "no acceptable method" is
	 * the reply RFC 1928 gives for it, so it parses with noauth false. */
	*noauth = memchr(buf + 2, SS_SOCKS5_AUTH_NONE, buf[1]) != NULL;
	*used = need;
	return SS_OK;
}

int ss_socks5_parse_request(const uint8_t *buf, size_t len, size_t *used, uint8_t *cmd,
			    ss_addr_t *dst, ss_socks5_rep_t *rep)
{
	if (len < 1)
		return SS_AGAIN;
	if (buf[0] != SS_SOCKS5_VERSION) {
		*rep = SS_SOCKS5_REP_GENERAL_FAILURE;
		return SS_ERR;
	}
	/* VER CMD RSV ATYP: the address type is judged as soon as it arrives. */
	if (len < 4)
		return SS_AGAIN;
	if (buf[3] != SS_ATYP_IPV4 && buf[3] != SS_ATYP_DOMAIN && buf[3] != SS_ATYP_IPV6) {
		*rep = SS_SOCKS5_REP_ATYP_NOT_SUPPORTED;
		return SS_ERR;
	}

	size_t addr_used;
	int r = ss_addr_parse(buf + 3, len - 3, dst, &addr_used);
	if (r == SS_AGAIN)
		return SS_AGAIN;
	if (r != SS_OK) {
		*rep = SS_SOCKS5_REP_GENERAL_FAILURE;
		return SS_ERR;
	}

	*cmd = buf[1];
	*used = 3 + addr_used;
	*rep = SS_SOCKS5_REP_SUCCEEDED;
	return SS_OK;
}

size_t ss_socks5_encode_method(uint8_t method, uint8_t out[2])
{
	out[0] = SS_SOCKS5_VERSION;
	out[1] = method;
	return 2;
}

size_t ss_socks5_encode_reply(ss_socks5_rep_t rep, const struct sockaddr *bnd, uint8_t *out,
			      size_t cap)
{
	ss_addr_t a;

	/* An unknown family (or none) is reported as 0.0.0.0:0, which tells
	 * the client nothing but is still a well-formed reply. */
	if (bnd == NULL || ss_addr_from_sockaddr(&a, bnd) != 0) {
		memset(&a, 0, sizeof(a));
		a.atyp = SS_ATYP_IPV4;
	}
	if (cap < 3)
		return 0;

	size_t n = ss_addr_encode(&a, out + 3, cap - 3);
	if (n == 0)
		return 0;
	out[0] = SS_SOCKS5_VERSION;
	out[1] = (uint8_t)rep;
	out[2] = 0;
	return 3 + n;
}

int ss_socks5_parse_udp(const uint8_t *buf, size_t len, ss_addr_t *dst, size_t *used)
{
	size_t alen;

	if (len < 3)
		return SS_ERR;
	/* A datagram is whole: an incomplete address is as bad as a wrong one. */
	if (ss_addr_parse(buf + 3, len - 3, dst, &alen) != SS_OK)
		return SS_ERR;
	*used = 3 + alen;
	return SS_OK;
}
