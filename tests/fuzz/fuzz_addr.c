/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the Shadowsocks address header (ss_addr_parse), raw.
 * The whole input is one header as it arrives on the wire; every prefix is
 * parsed too, as a server sees the header grow read by read. A header that
 * parses re-encodes to the same bytes, formats, and (for IP addresses) goes
 * through a sockaddr and back, and is classified for --block-private as a
 * reference written apart classifies it. The input is also taken as host
 * text for ss_addr_from_host, as the configuration and ACL give it. */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/addr.h"

/* The blocks --block-private refuses as CIDR text (docs/security.md):
 * IPv6 ones, and IPv4 ones, which also count behind the IPv4-mapped and
 * NAT64 prefixes. */
static const char *const ref_blocks6[] = {"::/96",     "fc00::/7", "fe80::/10",
					  "fec0::/10", "ff00::/8", "64:ff9b:1::/48"};
static const char *const ref_blocks4[] = {
    "0.0.0.0/8",     "10.0.0.0/8",   "100.64.0.0/10",  "127.0.0.0/8",   "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3"};
static const char *const ref_v4_forms[] = {"::ffff:0.0.0.0", "64:ff9b::"};

/* Whether the first bits of ip and net agree, bit by bit. */
static bool ref_match(const uint8_t ip[16], const uint8_t net[16], unsigned bits)
{
	for (unsigned i = 0; i < bits; i++)
		if ((ip[i / 8] >> (7 - i % 8) & 1) != (net[i / 8] >> (7 - i % 8) & 1))
			return false;
	return true;
}

static bool ref_private(const ss_addr_t *a)
{
	uint8_t ip[16], net[16];
	char text[64];

	if (a->atyp == SS_ATYP_IPV4) {
		inet_pton(AF_INET6, "::ffff:0.0.0.0", ip);
		memcpy(ip + 12, a->v4, 4);
	} else {
		memcpy(ip, a->v6, 16);
	}
	for (size_t i = 0; i < sizeof(ref_blocks6) / sizeof(ref_blocks6[0]); i++) {
		const char *slash = strchr(ref_blocks6[i], '/');
		memcpy(text, ref_blocks6[i], (size_t)(slash - ref_blocks6[i]));
		text[slash - ref_blocks6[i]] = '\0';
		FZ_CHECK(inet_pton(AF_INET6, text, net) == 1);
		if (ref_match(ip, net, (unsigned)atoi(slash + 1)))
			return true;
	}
	for (size_t f = 0; f < 2; f++) {
		for (size_t i = 0; i < sizeof(ref_blocks4) / sizeof(ref_blocks4[0]); i++) {
			const char *slash = strchr(ref_blocks4[i], '/');
			FZ_CHECK(inet_pton(AF_INET6, ref_v4_forms[f], net) == 1);
			memcpy(text, ref_blocks4[i], (size_t)(slash - ref_blocks4[i]));
			text[slash - ref_blocks4[i]] = '\0';
			FZ_CHECK(inet_pton(AF_INET, text, net + 12) == 1);
			if (ref_match(ip, net, 96 + (unsigned)atoi(slash + 1)))
				return true;
		}
	}
	return false;
}

static void check_private(const ss_addr_t *a, const struct sockaddr *sa)
{
	const char *kind = ss_sockaddr_private_kind(sa);

	FZ_CHECK((kind != NULL) == ref_private(a));
	if (a->atyp == SS_ATYP_IPV4) {
		uint8_t mapped[16];
		const char *k6;

		ss_ip6_map_v4(mapped, a->v4);
		k6 = ss_ip6_private_kind(mapped);
		FZ_CHECK(k6 == kind || (k6 && kind && strcmp(k6, kind) == 0));
	}
}

static void check_parsed(const uint8_t *buf, size_t used, const ss_addr_t *a)
{
	uint8_t enc[SS_ADDR_MAX_ENCODED];
	char text[SS_ADDR_STRLEN];
	struct sockaddr_storage ss;
	socklen_t sl;
	ss_addr_t back;

	FZ_CHECK(ss_addr_encode(a, enc, sizeof(enc)) == used);
	FZ_CHECK(memcmp(enc, buf, used) == 0);
	/* One byte short of room is refused, never overrun. */
	FZ_CHECK(ss_addr_encode(a, enc, used - 1) == 0);
	ss_addr_format(a, text, sizeof(text));
	FZ_CHECK(memchr(text, '\0', sizeof(text)) != NULL);
	if (a->atyp == SS_ATYP_DOMAIN) {
		FZ_CHECK(a->domain_len > 0 && strlen(a->domain) == a->domain_len);
		FZ_CHECK(ss_addr_to_sockaddr(a, &ss, &sl) == -EINVAL);
		return;
	}
	FZ_CHECK(ss_addr_to_sockaddr(a, &ss, &sl) == 0);
	FZ_CHECK(ss_sockaddr_port((struct sockaddr *)&ss) == a->port);
	FZ_CHECK(ss_addr_from_sockaddr(&back, (struct sockaddr *)&ss) == 0);
	FZ_CHECK(back.port == a->port);
	/* A v4-mapped IPv6 address comes back as IPv4; anything else as it was. */
	if (a->atyp == SS_ATYP_IPV6 && back.atyp == SS_ATYP_IPV4)
		FZ_CHECK(memcmp(a->v6 + 12, back.v4, 4) == 0);
	else
		FZ_CHECK(fz_addr_eq(a, &back));
	ss_sockaddr_format((struct sockaddr *)&ss, text, sizeof(text));
	check_private(a, (struct sockaddr *)&ss);
}

static void from_host(const uint8_t *data, size_t size)
{
	char host[300];
	size_t n = size < sizeof(host) - 1 ? size : sizeof(host) - 1;
	ss_addr_t a;
	uint8_t enc[SS_ADDR_MAX_ENCODED];
	size_t used;

	memcpy(host, data, n);
	host[n] = '\0';
	if (ss_addr_from_host(&a, host, 443) != 0)
		return;
	/* What the text gave is a header that encodes and parses back. */
	n = ss_addr_encode(&a, enc, sizeof(enc));
	FZ_CHECK(n > 0);
	{
		ss_addr_t b;

		FZ_CHECK(ss_addr_parse(enc, n, &b, &used) == SS_OK && used == n);
		FZ_CHECK(fz_addr_eq(&a, &b));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ss_addr_t a;
	size_t used = 0;
	int rc = ss_addr_parse(data, size, &a, &used);

	if (rc == SS_OK) {
		FZ_CHECK(used > 0 && used <= size && used <= SS_ADDR_MAX_ENCODED);
		check_parsed(data, used, &a);
	}
	/* A prefix that parses parses the same way in full; a prefix that is
	 * refused is refused in full; a header is incomplete until it is all
	 * there. */
	for (size_t k = 0; k < size && k <= SS_ADDR_MAX_ENCODED; k++) {
		ss_addr_t b;
		size_t u = 0;
		int r = ss_addr_parse(data, k, &b, &u);

		if (r == SS_OK)
			FZ_CHECK(rc == SS_OK && u == used && fz_addr_eq(&a, &b));
		else if (r == SS_ERR)
			FZ_CHECK(rc == SS_ERR);
		else
			FZ_CHECK(r == SS_AGAIN && (rc != SS_OK || k < used));
	}
	from_host(data, size);
	return 0;
}
