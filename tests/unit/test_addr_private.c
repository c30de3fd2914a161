/* SPDX-License-Identifier: MIT */
/* --block-private's classifier (proto/addr.c, ss_sockaddr_private_kind):
 * the first and last address of every refused block, and the addresses
 * just outside it; IPv6, IPv4-mapped and NAT64 forms. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "proto/addr.h"

typedef struct {
	const char *ip;
	const char *kind; /* NULL: public */
} case_t;

static const case_t v4_cases[] = {
    {"0.0.0.0", "this network"},
    {"0.255.255.255", "this network"},
    {"1.0.0.0", NULL},
    {"1.1.1.1", NULL},
    {"8.8.8.8", NULL},
    {"9.255.255.255", NULL},
    {"10.0.0.0", "private"},
    {"10.255.255.255", "private"},
    {"11.0.0.0", NULL},
    {"100.63.255.255", NULL},
    {"100.64.0.0", "shared (CGNAT)"},
    {"100.127.255.255", "shared (CGNAT)"},
    {"100.128.0.0", NULL},
    {"126.255.255.255", NULL},
    {"127.0.0.0", "loopback"},
    {"127.0.0.1", "loopback"},
    {"127.255.255.255", "loopback"},
    {"128.0.0.0", NULL},
    {"169.253.255.255", NULL},
    {"169.254.0.0", "link-local"},
    {"169.254.169.254", "link-local"},
    {"169.254.255.255", "link-local"},
    {"169.255.0.0", NULL},
    {"172.15.255.255", NULL},
    {"172.16.0.0", "private"},
    {"172.31.255.255", "private"},
    {"172.32.0.0", NULL},
    {"191.255.255.255", NULL},
    {"192.0.0.0", "IETF protocol"},
    {"192.0.0.255", "IETF protocol"},
    {"192.0.1.0", NULL},
    {"192.0.2.1", NULL}, /* documentation: not refused */
    {"192.167.255.255", NULL},
    {"192.168.0.0", "private"},
    {"192.168.255.255", "private"},
    {"192.169.0.0", NULL},
    {"198.17.255.255", NULL},
    {"198.18.0.0", "benchmarking"},
    {"198.19.255.255", "benchmarking"},
    {"198.20.0.0", NULL},
    {"198.51.100.1", NULL},
    {"203.0.113.1", NULL},
    {"223.255.255.255", NULL},
    {"224.0.0.0", "multicast"},
    {"239.255.255.255", "multicast"},
    {"240.0.0.0", "reserved or broadcast"},
    {"255.255.255.254", "reserved or broadcast"},
    {"255.255.255.255", "reserved or broadcast"},
};

static const case_t v6_cases[] = {
    {"::", "unspecified"},
    {"::1", "loopback"},
    {"::2", "IPv4-compatible (deprecated)"},
    {"::7f00:1", "IPv4-compatible (deprecated)"},
    {"::808:808", "IPv4-compatible (deprecated)"},
    {"::ffff:ffff", "IPv4-compatible (deprecated)"},
    {"::1:0:0", NULL},
    {"::fffe:7f00:1", NULL},
    {"::ffff:127.0.0.1", "loopback"},
    {"::ffff:169.254.169.254", "link-local"},
    {"::ffff:0.0.0.0", "this network"},
    {"::ffff:8.8.8.8", NULL},
    {"64:ff9b::7f00:1", "loopback"},
    {"64:ff9b::a00:1", "private"},
    {"64:ff9b::808:808", NULL},
    {"64:ff9b::1:7f00:1", NULL},
    {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
    {"64:ff9b:1::", "local-use NAT64"},
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "local-use NAT64"},
    {"64:ff9b:2::", NULL},
    {"2001:db8::1", NULL}, /* documentation: not refused */
    {"2001:4860:4860::8888", NULL},
    {"2606:4700:4700::1111", NULL},
    {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
    {"fc00::", "unique local"},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"},
    {"fe00::", NULL},
    {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
    {"fe80::", "link-local"},
    {"fe80::1", "link-local"},
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
    {"fec0::", "site-local (deprecated)"},
    {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local (deprecated)"},
    {"ff00::", "multicast"},
    {"ff02::1", "multicast"},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
};

static void check_kind(const char *ip, const char *got, const char *want)
{
	if (want == got || (want && got && strcmp(want, got) == 0))
		return;
	print_error("%s: got %s, want %s\n", ip, got ? got : "public", want ? want : "public");
	fail();
}

/* An IPv4 address: as itself, IPv4-mapped and behind the NAT64 prefix,
 * the same kind; in the IPv4-compatible form always refused. */
static void test_ipv4(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(v4_cases) / sizeof(v4_cases[0]); i++) {
		const case_t *t = &v4_cases[i];
		struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(80)};
		struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(80)};
		uint8_t ip4[4];

		assert_int_equal(inet_pton(AF_INET, t->ip, ip4), 1);
		check_kind(t->ip, ss_ip4_private_kind(ip4), t->kind);
		memcpy(&in.sin_addr, ip4, 4);
		check_kind(t->ip, ss_sockaddr_private_kind((struct sockaddr *)&in), t->kind);
		assert_int_equal(ss_sockaddr_is_private((struct sockaddr *)&in), t->kind != NULL);

		ss_ip6_map_v4(in6.sin6_addr.s6_addr, ip4);
		check_kind(t->ip, ss_sockaddr_private_kind((struct sockaddr *)&in6), t->kind);

		memset(&in6.sin6_addr, 0, 16);
		in6.sin6_addr.s6_addr[1] = 0x64;
		in6.sin6_addr.s6_addr[2] = 0xff;
		in6.sin6_addr.s6_addr[3] = 0x9b;
		memcpy(in6.sin6_addr.s6_addr + 12, ip4, 4);
		check_kind(t->ip, ss_sockaddr_private_kind((struct sockaddr *)&in6), t->kind);

		memset(&in6.sin6_addr, 0, 16);
		memcpy(in6.sin6_addr.s6_addr + 12, ip4, 4);
		assert_non_null(ss_sockaddr_private_kind((struct sockaddr *)&in6));
	}
}

static void test_ipv6(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(v6_cases) / sizeof(v6_cases[0]); i++) {
		const case_t *t = &v6_cases[i];
		struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};

		assert_int_equal(inet_pton(AF_INET6, t->ip, &in6.sin6_addr), 1);
		check_kind(t->ip, ss_ip6_private_kind(in6.sin6_addr.s6_addr), t->kind);
		check_kind(t->ip, ss_sockaddr_private_kind((struct sockaddr *)&in6), t->kind);
		assert_int_equal(ss_sockaddr_is_private((struct sockaddr *)&in6), t->kind != NULL);
	}
}

/* Anything but an IP address is never a target. */
static void test_other_family(void **state)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX, .sun_path = "/tmp/x"};
	struct sockaddr_storage none;
	(void)state;

	assert_true(ss_sockaddr_is_private((struct sockaddr *)&un));
	memset(&none, 0, sizeof(none));
	none.ss_family = AF_UNSPEC;
	assert_true(ss_sockaddr_is_private((struct sockaddr *)&none));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ipv4),
	    cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_other_family),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
