/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the Shadowsocks address header (ss_addr_parse), raw.
 * The whole input is one header as it arrives on the wire; every prefix is
 * parsed too, as a server sees the header grow read by read. A header that
 * parses re-encodes to the same bytes, formats, and (for IP addresses) goes
 * through a sockaddr and back. The input is also taken as host text for
 * ss_addr_from_host, as the configuration and ACL give it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/addr.h"

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
