/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/addr.h"
#include "util/result.h"

static const uint8_t v4_wire[] = {0x01, 192, 0, 2, 1, 0x1f, 0x90};
static const uint8_t v6_wire[] = {0x04, 0x20, 0x01, 0x0d, 0xb8, 0, 0,    0,    0,   0,
				  0,    0,    0,    0,    0,    0, 0x01, 0x01, 0xbb};
static const uint8_t dom_wire[] = {0x03, 11,  'e', 'x', 'a', 'm',  'p', 'l',
				   'e',  '.', 'c', 'o', 'm', 0x00, 0x50};

/* Every proper prefix is incomplete; the whole parses with *used exact and
 * bytes after it left alone. */
static void check_prefixes(const uint8_t *wire, size_t len, ss_addr_t *out)
{
	uint8_t buf[300];
	size_t used;

	for (size_t i = 0; i < len; i++) {
		used = 12345;
		assert_int_equal(ss_addr_parse(wire, i, out, &used), SS_AGAIN);
		assert_int_equal(used, 12345);
	}
	memcpy(buf, wire, len);
	memset(buf + len, 0xAA, 8);
	assert_int_equal(ss_addr_parse(buf, len + 8, out, &used), SS_OK);
	assert_int_equal(used, len);
	assert_int_equal(ss_addr_parse(wire, len, out, &used), SS_OK);
	assert_int_equal(used, len);
}

static void test_parse_ipv4(void **state)
{
	(void)state;
	ss_addr_t a;
	check_prefixes(v4_wire, sizeof(v4_wire), &a);
	assert_int_equal(a.atyp, SS_ATYP_IPV4);
	assert_memory_equal(a.v4, ((uint8_t[]){192, 0, 2, 1}), 4);
	assert_int_equal(a.port, 8080);
}

static void test_parse_ipv6(void **state)
{
	(void)state;
	ss_addr_t a;
	uint8_t want[16];
	check_prefixes(v6_wire, sizeof(v6_wire), &a);
	inet_pton(AF_INET6, "2001:db8::1", want);
	assert_int_equal(a.atyp, SS_ATYP_IPV6);
	assert_memory_equal(a.v6, want, 16);
	assert_int_equal(a.port, 443);
}

static void test_parse_domain(void **state)
{
	(void)state;
	ss_addr_t a;
	check_prefixes(dom_wire, sizeof(dom_wire), &a);
	assert_int_equal(a.atyp, SS_ATYP_DOMAIN);
	assert_int_equal(a.domain_len, 11);
	assert_string_equal(a.domain, "example.com");
	assert_int_equal(a.port, 80);
}

static void test_parse_domain_255(void **state)
{
	(void)state;
	uint8_t wire[1 + 1 + 255 + 2];
	ss_addr_t a;
	size_t used;

	wire[0] = SS_ATYP_DOMAIN;
	wire[1] = 255;
	memset(wire + 2, 'a', 255);
	wire[257] = 0xff;
	wire[258] = 0xff;
	assert_int_equal(ss_addr_parse(wire, sizeof(wire) - 1, &a, &used), SS_AGAIN);
	assert_int_equal(ss_addr_parse(wire, sizeof(wire), &a, &used), SS_OK);
	assert_int_equal(used, sizeof(wire));
	assert_int_equal(a.domain_len, 255);
	assert_int_equal(strlen(a.domain), 255);
	assert_int_equal(a.port, 65535);
	assert_int_equal(sizeof(wire), SS_ADDR_MAX_ENCODED);
}

static void test_parse_errors(void **state)
{
	(void)state;
	ss_addr_t a;
	size_t used;
	const uint8_t bad_atyp[] = {0x02, 1, 2, 3, 4, 0, 80};
	const uint8_t zero_atyp[] = {0x00};
	const uint8_t empty_dom[] = {0x03, 0x00, 0x00, 0x50};
	const uint8_t nul_dom[] = {0x03, 0x03, 'a', 0x00, 'b', 0x00, 0x50};

	assert_int_equal(ss_addr_parse(bad_atyp, sizeof(bad_atyp), &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(bad_atyp, 1, &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(zero_atyp, 1, &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(empty_dom, sizeof(empty_dom), &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(empty_dom, 2, &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(nul_dom, sizeof(nul_dom), &a, &used), SS_ERR);
	/* Refused as soon as the NUL byte is in view. */
	assert_int_equal(ss_addr_parse(nul_dom, 4, &a, &used), SS_ERR);
	assert_int_equal(ss_addr_parse(nul_dom, 3, &a, &used), SS_AGAIN);
}

static void test_encode_roundtrip(void **state)
{
	(void)state;
	const uint8_t *wires[] = {v4_wire, v6_wire, dom_wire};
	const size_t lens[] = {sizeof(v4_wire), sizeof(v6_wire), sizeof(dom_wire)};
	uint8_t out[SS_ADDR_MAX_ENCODED];

	for (size_t i = 0; i < 3; i++) {
		ss_addr_t a;
		size_t used;
		assert_int_equal(ss_addr_parse(wires[i], lens[i], &a, &used), SS_OK);
		assert_int_equal(ss_addr_encode(&a, out, sizeof(out)), lens[i]);
		assert_memory_equal(out, wires[i], lens[i]);
		assert_int_equal(ss_addr_encode(&a, out, lens[i]), lens[i]);
		assert_int_equal(ss_addr_encode(&a, out, lens[i] - 1), 0);
	}
}

static void test_encode_invalid(void **state)
{
	(void)state;
	ss_addr_t a;
	uint8_t out[SS_ADDR_MAX_ENCODED];

	memset(&a, 0, sizeof(a));
	a.atyp = 2;
	assert_int_equal(ss_addr_encode(&a, out, sizeof(out)), 0);
	a.atyp = SS_ATYP_DOMAIN;
	a.domain_len = 0;
	assert_int_equal(ss_addr_encode(&a, out, sizeof(out)), 0);
}

static void test_sockaddr_v4(void **state)
{
	(void)state;
	ss_addr_t a, b;
	struct sockaddr_storage ss;
	socklen_t len;
	size_t used;

	assert_int_equal(ss_addr_parse(v4_wire, sizeof(v4_wire), &a, &used), SS_OK);
	assert_int_equal(ss_addr_to_sockaddr(&a, &ss, &len), 0);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 8080);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xC0000201);
	assert_int_equal(ss_addr_from_sockaddr(&b, (struct sockaddr *)&ss), 0);
	assert_int_equal(b.atyp, SS_ATYP_IPV4);
	assert_memory_equal(b.v4, a.v4, 4);
	assert_int_equal(b.port, 8080);
}

static void test_sockaddr_v6(void **state)
{
	(void)state;
	ss_addr_t a, b;
	struct sockaddr_storage ss;
	socklen_t len;
	size_t used;

	assert_int_equal(ss_addr_parse(v6_wire, sizeof(v6_wire), &a, &used), SS_OK);
	assert_int_equal(ss_addr_to_sockaddr(&a, &ss, &len), 0);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	assert_int_equal(sin6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(sin6->sin6_port), 443);
	assert_memory_equal(&sin6->sin6_addr, a.v6, 16);
	assert_int_equal(ss_addr_from_sockaddr(&b, (struct sockaddr *)&ss), 0);
	assert_int_equal(b.atyp, SS_ATYP_IPV6);
	assert_memory_equal(b.v6, a.v6, 16);
	assert_int_equal(b.port, 443);
}

static void test_sockaddr_mapped_and_errors(void **state)
{
	(void)state;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
	socklen_t len;
	ss_addr_t a;

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(53);
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &sin6.sin6_addr);
	assert_int_equal(ss_addr_from_sockaddr(&a, (struct sockaddr *)&sin6), 0);
	assert_int_equal(a.atyp, SS_ATYP_IPV4);
	assert_memory_equal(a.v4, ((uint8_t[]){10, 1, 2, 3}), 4);
	assert_int_equal(a.port, 53);

	struct sockaddr un = {.sa_family = AF_UNIX};
	assert_int_equal(ss_addr_from_sockaddr(&a, &un), -EAFNOSUPPORT);

	assert_int_equal(ss_addr_set_domain(&a, "example.com", 80), 0);
	assert_int_equal(ss_addr_to_sockaddr(&a, &ss, &len), -EINVAL);
}

static void test_set_domain(void **state)
{
	(void)state;
	ss_addr_t a;
	char name[300];

	assert_int_equal(ss_addr_set_domain(&a, "", 1), -EINVAL);
	memset(name, 'x', 256);
	name[256] = '\0';
	assert_int_equal(ss_addr_set_domain(&a, name, 1), -EINVAL);
	name[255] = '\0';
	assert_int_equal(ss_addr_set_domain(&a, name, 7), 0);
	assert_int_equal(a.atyp, SS_ATYP_DOMAIN);
	assert_int_equal(a.domain_len, 255);
	assert_int_equal(a.port, 7);
	assert_string_equal(a.domain, name);
}

static void test_from_host(void **state)
{
	(void)state;
	ss_addr_t a;
	uint8_t v6[16];

	assert_int_equal(ss_addr_from_host(&a, "10.0.0.1", 1), 0);
	assert_int_equal(a.atyp, SS_ATYP_IPV4);
	assert_memory_equal(a.v4, ((uint8_t[]){10, 0, 0, 1}), 4);
	assert_int_equal(a.port, 1);

	inet_pton(AF_INET6, "2001:db8::53", v6);
	assert_int_equal(ss_addr_from_host(&a, "2001:db8::53", 53), 0);
	assert_int_equal(a.atyp, SS_ATYP_IPV6);
	assert_memory_equal(a.v6, v6, 16);
	assert_int_equal(ss_addr_from_host(&a, "[2001:db8::53]", 53), 0);
	assert_int_equal(a.atyp, SS_ATYP_IPV6);
	assert_memory_equal(a.v6, v6, 16);
	assert_int_equal(a.port, 53);

	assert_int_equal(ss_addr_from_host(&a, "dns.example", 53), 0);
	assert_int_equal(a.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(a.domain, "dns.example");
	/* Not quite an IPv4 literal: a name, left to the resolver. */
	assert_int_equal(ss_addr_from_host(&a, "1.2.3", 53), 0);
	assert_int_equal(a.atyp, SS_ATYP_DOMAIN);

	assert_int_equal(ss_addr_from_host(&a, "", 53), -EINVAL);
	assert_int_equal(ss_addr_from_host(&a, "[]", 53), -EINVAL);
	assert_int_equal(ss_addr_from_host(&a, "[example.com]", 53), -EINVAL);
	assert_int_equal(ss_addr_from_host(&a, "[::1", 53), -EINVAL);
	assert_int_equal(ss_addr_from_host(&a, "fe80::1%eth0", 53), -EINVAL);
	assert_int_equal(ss_addr_from_host(&a, "host:53", 53), -EINVAL);
}

static void test_format(void **state)
{
	(void)state;
	ss_addr_t a;
	char buf[SS_ADDR_STRLEN];
	size_t used;

	assert_int_equal(ss_addr_parse(v4_wire, sizeof(v4_wire), &a, &used), SS_OK);
	assert_string_equal(ss_addr_format(&a, buf, sizeof(buf)), "192.0.2.1:8080");
	assert_int_equal(ss_addr_parse(v6_wire, sizeof(v6_wire), &a, &used), SS_OK);
	assert_string_equal(ss_addr_format(&a, buf, sizeof(buf)), "[2001:db8::1]:443");
	assert_int_equal(ss_addr_parse(dom_wire, sizeof(dom_wire), &a, &used), SS_OK);
	assert_string_equal(ss_addr_format(&a, buf, sizeof(buf)), "example.com:80");

	/* Control bytes from a peer do not reach a log line. */
	const uint8_t odd[] = {0x03, 4, 'a', '\n', 0xff, 'b', 0, 1};
	assert_int_equal(ss_addr_parse(odd, sizeof(odd), &a, &used), SS_OK);
	assert_string_equal(ss_addr_format(&a, buf, sizeof(buf)), "a??b:1");

	/* The longest form fits SS_ADDR_STRLEN. */
	char name[256];
	memset(name, 'n', 255);
	name[255] = '\0';
	assert_int_equal(ss_addr_set_domain(&a, name, 65535), 0);
	ss_addr_format(&a, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 255 + 6);

	/* Truncates, never overflows. */
	char small[6];
	assert_int_equal(ss_addr_set_domain(&a, "example.com", 80), 0);
	assert_string_equal(ss_addr_format(&a, small, sizeof(small)), "examp");
}

static void test_sockaddr_format(void **state)
{
	(void)state;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1080)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(8388)};
	char buf[SS_ADDR_STRLEN];

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	assert_string_equal(ss_sockaddr_format((struct sockaddr *)&sin, buf, sizeof(buf)),
			    "127.0.0.1:1080");
	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	assert_string_equal(ss_sockaddr_format((struct sockaddr *)&sin6, buf, sizeof(buf)),
			    "[::1]:8388");
	inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr);
	sin6.sin6_scope_id = 2;
	assert_string_equal(ss_sockaddr_format((struct sockaddr *)&sin6, buf, sizeof(buf)),
			    "[fe80::1%2]:8388");
}

static void test_sockaddr_port(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(8388)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	struct sockaddr un = {.sa_family = AF_UNIX};
	(void)state;

	assert_int_equal(ss_sockaddr_port((struct sockaddr *)&in), 8388);
	assert_int_equal(ss_sockaddr_port((struct sockaddr *)&in6), 443);
	assert_int_equal(ss_sockaddr_port(&un), 0);
	ss_sockaddr_set_port((struct sockaddr *)&in, 53);
	ss_sockaddr_set_port((struct sockaddr *)&in6, 65535);
	ss_sockaddr_set_port(&un, 1); /* ignored */
	assert_int_equal(ntohs(in.sin_port), 53);
	assert_int_equal(ntohs(in6.sin6_port), 65535);
	assert_int_equal(ss_sockaddr_port((struct sockaddr *)&in6), 65535);
}

/* An address into the 28-byte union: its own length kept, the rest zeroed
 * (table keys are compared and hashed whole), a longer length clamped. */
static void test_inaddr_set(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(53)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	struct sockaddr_storage big;
	ss_inaddr_t a, zero;
	(void)state;

	memset(&zero, 0, sizeof(zero));
	inet_pton(AF_INET, "192.0.2.7", &in.sin_addr);
	inet_pton(AF_INET6, "2001:db8::9", &in6.sin6_addr);
	memset(&a, 0xa5, sizeof(a));
	assert_int_equal(ss_inaddr_set(&a, (struct sockaddr *)&in, sizeof(in)), sizeof(in));
	assert_memory_equal(&a.sin, &in, sizeof(in));
	assert_memory_equal((uint8_t *)&a + sizeof(in), (uint8_t *)&zero + sizeof(in),
			    sizeof(a) - sizeof(in));

	memset(&a, 0xa5, sizeof(a));
	assert_int_equal(ss_inaddr_set(&a, (struct sockaddr *)&in6, sizeof(in6)), sizeof(in6));
	assert_memory_equal(&a.sin6, &in6, sizeof(in6));

	memset(&big, 0x5a, sizeof(big));
	memcpy(&big, &in6, sizeof(in6));
	assert_int_equal(ss_inaddr_set(&a, (struct sockaddr *)&big, sizeof(big)), sizeof(a));
	assert_memory_equal(&a.sin6, &in6, sizeof(in6));
}

/* The IPv4-mapped form: recognised only with the whole ::ffff: prefix,
 * made from 4 bytes, and undone on a sockaddr keeping its port. */
static void test_v4mapped(void **state)
{
	uint8_t ip6[16], ip4[4] = {192, 0, 2, 7};
	struct sockaddr_storage ss, before;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	socklen_t len;
	(void)state;

	inet_pton(AF_INET6, "::ffff:10.1.2.3", ip6);
	assert_true(ss_ip6_is_v4mapped(ip6));
	inet_pton(AF_INET6, "::10.1.2.3", ip6);
	assert_false(ss_ip6_is_v4mapped(ip6));
	inet_pton(AF_INET6, "::fffe:10.1.2.3", ip6);
	assert_false(ss_ip6_is_v4mapped(ip6));
	inet_pton(AF_INET6, "1::ffff:10.1.2.3", ip6);
	assert_false(ss_ip6_is_v4mapped(ip6));

	memset(ip6, 0xa5, sizeof(ip6));
	ss_ip6_map_v4(ip6, ip4);
	assert_true(ss_ip6_is_v4mapped(ip6));
	assert_memory_equal(ip6 + 12, ip4, 4);

	memset(&ss, 0x5a, sizeof(ss));
	memset(in6, 0, sizeof(*in6));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(5353);
	ss_ip6_map_v4(in6->sin6_addr.s6_addr, ip4);
	len = sizeof(*in6);
	ss_sockaddr_unmap(&ss, &len);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(in->sin_family, AF_INET);
	assert_int_equal(ntohs(in->sin_port), 5353);
	assert_memory_equal(&in->sin_addr, ip4, 4);
	for (size_t i = sizeof(*in); i < sizeof(ss); i++)
		assert_int_equal(((uint8_t *)&ss)[i], 0);

	/* Already IPv4, plain IPv6, another family: left alone. */
	ss_sockaddr_unmap(&ss, &len);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &in6->sin6_addr);
	len = sizeof(*in6);
	before = ss;
	ss_sockaddr_unmap(&ss, &len);
	assert_int_equal(len, sizeof(*in6));
	assert_memory_equal(&ss, &before, sizeof(ss));
	ss.ss_family = AF_UNIX;
	before = ss;
	ss_sockaddr_unmap(&ss, &len);
	assert_memory_equal(&ss, &before, sizeof(ss));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ipv4),
	    cmocka_unit_test(test_parse_ipv6),
	    cmocka_unit_test(test_parse_domain),
	    cmocka_unit_test(test_parse_domain_255),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_encode_roundtrip),
	    cmocka_unit_test(test_encode_invalid),
	    cmocka_unit_test(test_sockaddr_v4),
	    cmocka_unit_test(test_sockaddr_v6),
	    cmocka_unit_test(test_sockaddr_mapped_and_errors),
	    cmocka_unit_test(test_set_domain),
	    cmocka_unit_test(test_from_host),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_sockaddr_format),
	    cmocka_unit_test(test_sockaddr_port),
	    cmocka_unit_test(test_inaddr_set),
	    cmocka_unit_test(test_v4mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
