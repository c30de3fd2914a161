/* SPDX-License-Identifier: MIT */
#include "proto/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "util/result.h"

/* Bytes of ATYP + address + port for a fixed-size type; 0 for others. */
static size_t fixed_len(uint8_t atyp)
{
	switch (atyp) {
	case SS_ATYP_IPV4:
		return 1 + 4 + 2;
	case SS_ATYP_IPV6:
		return 1 + 16 + 2;
	default:
		return 0;
	}
}

int ss_addr_parse(const uint8_t *buf, size_t len, ss_addr_t *out, size_t *used)
{
	size_t need;

	if (len < 1)
		return SS_AGAIN;

	switch (buf[0]) {
	case SS_ATYP_IPV4:
	case SS_ATYP_IPV6:
		need = fixed_len(buf[0]);
		if (len < need)
			return SS_AGAIN;
		out->atyp = buf[0];
		out->domain_len = 0;
		if (buf[0] == SS_ATYP_IPV4)
			memcpy(out->v4, buf + 1, 4);
		else
			memcpy(out->v6, buf + 1, 16);
		break;
	case SS_ATYP_DOMAIN: {
		if (len < 2)
			return SS_AGAIN;
		uint8_t dlen = buf[1];
		if (dlen == 0)
			return SS_ERR;
		/* Reject a NUL as soon as it arrives: it would cut the name short
		 * when the name is later used as a C string. */
		size_t have = len - 2 < dlen ? len - 2 : dlen;
		if (memchr(buf + 2, '\0', have) != NULL)
			return SS_ERR;
		need = 2 + (size_t)dlen + 2;
		if (len < need)
			return SS_AGAIN;
		out->atyp = SS_ATYP_DOMAIN;
		out->domain_len = dlen;
		memcpy(out->domain, buf + 2, dlen);
		out->domain[dlen] = '\0';
		break;
	}
	default:
		return SS_ERR;
	}

	out->port = (uint16_t)((buf[need - 2] << 8) | buf[need - 1]);
	*used = need;
	return SS_OK;
}

size_t ss_addr_encode(const ss_addr_t *a, uint8_t *out, size_t cap)
{
	size_t n;

	switch (a->atyp) {
	case SS_ATYP_IPV4:
		n = fixed_len(a->atyp);
		if (cap < n)
			return 0;
		memcpy(out + 1, a->v4, 4);
		break;
	case SS_ATYP_IPV6:
		n = fixed_len(a->atyp);
		if (cap < n)
			return 0;
		memcpy(out + 1, a->v6, 16);
		break;
	case SS_ATYP_DOMAIN:
		if (a->domain_len == 0)
			return 0;
		n = 2 + (size_t)a->domain_len + 2;
		if (cap < n)
			return 0;
		out[1] = a->domain_len;
		memcpy(out + 2, a->domain, a->domain_len);
		break;
	default:
		return 0;
	}
	out[0] = a->atyp;
	out[n - 2] = (uint8_t)(a->port >> 8);
	out[n - 1] = (uint8_t)(a->port & 0xff);
	return n;
}

int ss_addr_to_sockaddr(const ss_addr_t *a, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->atyp == SS_ATYP_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->v4, 4);
		*len = sizeof(*sin);
		return 0;
	}
	if (a->atyp == SS_ATYP_IPV6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		memcpy(&sin6->sin6_addr, a->v6, 16);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

socklen_t ss_inaddr_set(ss_inaddr_t *dst, const struct sockaddr *sa, socklen_t len)
{
	if (len > sizeof(*dst))
		len = sizeof(*dst);
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, sa, len);
	return len;
}

static const uint8_t addr_v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool ss_ip6_is_v4mapped(const uint8_t ip6[static 16])
{
	return memcmp(ip6, addr_v4mapped_prefix, sizeof(addr_v4mapped_prefix)) == 0;
}

void ss_ip6_map_v4(uint8_t ip6[static 16], const void *ip4)
{
	memcpy(ip6, addr_v4mapped_prefix, sizeof(addr_v4mapped_prefix));
	memcpy(ip6 + 12, ip4, 4);
}

void ss_sockaddr_unmap(struct sockaddr_storage *ss, socklen_t *len)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_in in = {.sin_family = AF_INET};

	if (ss->ss_family != AF_INET6 || !ss_ip6_is_v4mapped(in6->sin6_addr.s6_addr))
		return;
	in.sin_port = in6->sin6_port;
	memcpy(&in.sin_addr, in6->sin6_addr.s6_addr + 12, 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &in, sizeof(in));
	*len = sizeof(in);
}

/* The IPv4 blocks --block-private refuses, in address order. */
static const struct {
	uint32_t net;
	uint8_t bits;
	const char *kind;
} addr_private4[] = {
    {0x00000000, 8, "this network"},          /* 0.0.0.0/8, RFC 791 */
    {0x0a000000, 8, "private"},               /* 10.0.0.0/8, RFC 1918 */
    {0x64400000, 10, "shared (CGNAT)"},       /* 100.64.0.0/10, RFC 6598 */
    {0x7f000000, 8, "loopback"},              /* 127.0.0.0/8 */
    {0xa9fe0000, 16, "link-local"},           /* 169.254.0.0/16, RFC 3927 */
    {0xac100000, 12, "private"},              /* 172.16.0.0/12 */
    {0xc0000000, 24, "IETF protocol"},        /* 192.0.0.0/24, RFC 6890 */
    {0xc0a80000, 16, "private"},              /* 192.168.0.0/16 */
    {0xc6120000, 15, "benchmarking"},         /* 198.18.0.0/15, RFC 2544 */
    {0xe0000000, 4, "multicast"},             /* 224.0.0.0/4 */
    {0xf0000000, 4, "reserved or broadcast"}, /* 240.0.0.0/4, RFC 1112 */
};

const char *ss_ip4_private_kind(const uint8_t ip4[static 4])
{
	uint32_t a =
	    (uint32_t)ip4[0] << 24 | (uint32_t)ip4[1] << 16 | (uint32_t)ip4[2] << 8 | ip4[3];

	for (size_t i = 0; i < sizeof(addr_private4) / sizeof(addr_private4[0]); i++) {
		uint32_t mask = ~(uint32_t)0 << (32 - addr_private4[i].bits);
		if ((a & mask) == addr_private4[i].net)
			return addr_private4[i].kind;
	}
	return NULL;
}

/* 64:ff9b::/96 (RFC 6052): a NAT64 gateway turns it into the IPv4
 * address of its last 4 bytes, private ones included. */
static const uint8_t addr_nat64_prefix[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

const char *ss_ip6_private_kind(const uint8_t ip6[static 16])
{
	static const uint8_t zero[12];

	if (ss_ip6_is_v4mapped(ip6) ||
	    memcmp(ip6, addr_nat64_prefix, sizeof(addr_nat64_prefix)) == 0)
		return ss_ip4_private_kind(ip6 + 12);
	if (memcmp(ip6, zero, sizeof(zero)) == 0) {
		/* ::/96: ::, ::1 and the deprecated IPv4-compatible form */
		if (ip6[12] == 0 && ip6[13] == 0 && ip6[14] == 0 && ip6[15] <= 1)
			return ip6[15] ? "loopback" : "unspecified";
		return "IPv4-compatible (deprecated)";
	}
	if ((ip6[0] & 0xfe) == 0xfc)
		return "unique local"; /* fc00::/7, RFC 4193 */
	if (ip6[0] == 0xfe && (ip6[1] & 0xc0) == 0x80)
		return "link-local"; /* fe80::/10 */
	if (ip6[0] == 0xfe && (ip6[1] & 0xc0) == 0xc0)
		return "site-local (deprecated)"; /* fec0::/10, RFC 3879 */
	if (ip6[0] == 0xff)
		return "multicast"; /* ff00::/8 */
	if (memcmp(ip6, addr_nat64_prefix, 4) == 0 && ip6[4] == 0 && ip6[5] == 1)
		return "local-use NAT64"; /* 64:ff9b:1::/48, RFC 8215 */
	return NULL;
}

const char *ss_sockaddr_private_kind(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ss_ip4_private_kind(
		    (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr.s_addr);
	if (sa->sa_family == AF_INET6)
		return ss_ip6_private_kind(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	return "not an IP";
}

int ss_addr_from_sockaddr(ss_addr_t *a, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		a->atyp = SS_ATYP_IPV4;
		a->domain_len = 0;
		a->port = ntohs(sin->sin_port);
		memcpy(a->v4, &sin->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		a->domain_len = 0;
		a->port = ntohs(sin6->sin6_port);
		/* A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d;
		 * callers want the IPv4 address (ACLs, SOCKS5 replies). */
		if (ss_ip6_is_v4mapped(sin6->sin6_addr.s6_addr)) {
			a->atyp = SS_ATYP_IPV4;
			memcpy(a->v4, sin6->sin6_addr.s6_addr + 12, 4);
		} else {
			a->atyp = SS_ATYP_IPV6;
			memcpy(a->v6, &sin6->sin6_addr, 16);
		}
		return 0;
	}
	return -EAFNOSUPPORT;
}

int ss_addr_set_domain(ss_addr_t *a, const char *host, uint16_t port)
{
	size_t n = strlen(host);

	if (n == 0 || n > 255)
		return -EINVAL;
	a->atyp = SS_ATYP_DOMAIN;
	a->domain_len = (uint8_t)n;
	a->port = port;
	memcpy(a->domain, host, n);
	a->domain[n] = '\0';
	return 0;
}

int ss_addr_from_host(ss_addr_t *a, const char *host, uint16_t port)
{
	size_t n = strlen(host);
	char v6[INET6_ADDRSTRLEN + 1];

	if (n == 0)
		return -EINVAL;

	if (host[0] == '[') {
		/* Brackets only ever hold an IPv6 literal. */
		if (n < 3 || host[n - 1] != ']' || n - 2 >= sizeof(v6))
			return -EINVAL;
		memcpy(v6, host + 1, n - 2);
		v6[n - 2] = '\0';
		if (inet_pton(AF_INET6, v6, a->v6) != 1)
			return -EINVAL;
		a->atyp = SS_ATYP_IPV6;
		a->domain_len = 0;
		a->port = port;
		return 0;
	}

	uint8_t tmp[16];
	if (inet_pton(AF_INET, host, tmp) == 1) {
		a->atyp = SS_ATYP_IPV4;
		a->domain_len = 0;
		a->port = port;
		memcpy(a->v4, tmp, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, tmp) == 1) {
		a->atyp = SS_ATYP_IPV6;
		a->domain_len = 0;
		a->port = port;
		memcpy(a->v6, tmp, 16);
		return 0;
	}
	/* No host name holds a colon; this is a malformed IPv6 literal (or
	 * one with a zone, which an address header cannot carry). */
	if (strchr(host, ':') != NULL)
		return -EINVAL;
	return ss_addr_set_domain(a, host, port);
}

char *ss_addr_format(const ss_addr_t *a, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	char name[256];

	if (len == 0)
		return out;

	switch (a->atyp) {
	case SS_ATYP_IPV4:
		inet_ntop(AF_INET, a->v4, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, a->port);
		break;
	case SS_ATYP_IPV6:
		inet_ntop(AF_INET6, a->v6, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, a->port);
		break;
	case SS_ATYP_DOMAIN:
		/* The name comes from the peer and goes into log lines: keep
		 * control and non-ASCII bytes out of them. */
		for (size_t i = 0; i < a->domain_len; i++) {
			unsigned char c = (unsigned char)a->domain[i];
			name[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
		}
		name[a->domain_len] = '\0';
		snprintf(out, len, "%s:%u", name, a->port);
		break;
	default:
		snprintf(out, len, "(address type %u)", a->atyp);
		break;
	}
	return out;
}

char *ss_sockaddr_format(const struct sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (len == 0)
		return out;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		if (sin6->sin6_scope_id != 0)
			snprintf(out, len, "[%s%%%u]:%u", ip, (unsigned)sin6->sin6_scope_id,
				 ntohs(sin6->sin6_port));
		else
			snprintf(out, len, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(out, len, "(address family %u)", (unsigned)sa->sa_family);
	}
	return out;
}

uint16_t ss_sockaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void ss_sockaddr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}
