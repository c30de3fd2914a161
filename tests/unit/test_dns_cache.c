/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proto/dns.h"
#include "relay/dns_cache.h"
#include "util/result.h"

/* An answer for <name> A IN: one A record of TTL ttl (rcode 0), or none
 * with a SOA of TTL ttl and MINIMUM min in the authority section (rcode
 * NXDOMAIN). Returns its length. */
static size_t make_answer(uint8_t *p, const char *name, uint32_t ttl, bool negative, uint32_t min)
{
	size_t n = 12;
	const char *s = name;

	memset(p, 0, 12);
	p[0] = 0x77;
	p[2] = 0x81;
	p[3] = negative ? 0x83 : 0x80;
	p[5] = 1;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		p[n++] = (uint8_t)l;
		memcpy(p + n, s, l);
		n += l;
		s += l + (dot ? 1 : 0);
	}
	p[n++] = 0;
	memcpy(p + n, (const uint8_t[]){0, 1, 0, 1}, 4);
	n += 4;
	const uint8_t ttlb[4] = {(uint8_t)(ttl >> 24), (uint8_t)(ttl >> 16), (uint8_t)(ttl >> 8),
				 (uint8_t)ttl};
	if (!negative) {
		p[7] = 1;
		memcpy(p + n, (const uint8_t[]){0xc0, 0x0c, 0, 1, 0, 1}, 6);
		memcpy(p + n + 6, ttlb, 4);
		memcpy(p + n + 10, (const uint8_t[]){0, 4, 192, 0, 2, 1}, 6);
		return n + 16;
	}
	p[9] = 1;
	memcpy(p + n, (const uint8_t[]){0xc0, 0x0c, 0, 6, 0, 1}, 6);
	memcpy(p + n + 6, ttlb, 4);
	memcpy(p + n + 10, (const uint8_t[]){0, 22, 0, 0}, 4);
	memset(p + n + 14, 0, 16);
	p[n + 14 + 16] = (uint8_t)(min >> 24);
	p[n + 14 + 17] = (uint8_t)(min >> 16);
	p[n + 14 + 18] = (uint8_t)(min >> 8);
	p[n + 14 + 19] = (uint8_t)min;
	return n + 34;
}

static uint32_t first_ttl(const uint8_t *p, size_t n)
{
	ss_dns_msg_t m;

	assert_int_equal(ss_dns_parse(p, n, &m), SS_OK);
	return m.answer_ttl;
}

static void test_ttl_rules(void **state)
{
	(void)state;
	uint8_t buf[512];
	ss_dns_msg_t m;
	size_t n;

	n = make_answer(buf, "a.example", 300, false, 0);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), 300);
	n = make_answer(buf, "a.example", 1u << 30, false, 0);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), SS_DNS_CACHE_TTL_MAX);
	/* RFC 2308: the lesser of the SOA's TTL and its MINIMUM, capped. */
	n = make_answer(buf, "b.example", 900, true, 60);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), 60);
	n = make_answer(buf, "b.example", 90000, true, 90000);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), SS_DNS_CACHE_NEG_TTL_MAX);
	/* Truncated, SERVFAIL: never kept. */
	n = make_answer(buf, "a.example", 300, false, 0);
	buf[2] |= 0x02;
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), 0);
	buf[2] &= (uint8_t)~0x02;
	buf[3] = 0x82;
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_ttl(&m), 0);
}

static void test_get_put(void **state)
{
	(void)state;
	ss_dns_cache_t c;
	uint8_t buf[512], out[512];
	ss_dns_msg_t m;
	size_t n, got;

	assert_int_equal(ss_dns_cache_init(&c, 4, 512), 0);
	n = make_answer(buf, "A.Example", 300, false, 0);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	assert_int_equal(ss_dns_cache_get(&c, &m.q, 0, 1000.0, out, sizeof(out)), 0);
	ss_dns_cache_put(&c, &m.q, 0, buf, n, 300, 1000.0);
	/* The other path is another key. */
	assert_int_equal(ss_dns_cache_get(&c, &m.q, 1, 1000.0, out, sizeof(out)), 0);
	got = ss_dns_cache_get(&c, &m.q, 0, 1100.7, out, sizeof(out));
	assert_int_equal(got, n);
	assert_int_equal(first_ttl(out, got), 200); /* 100 whole seconds kept */
	/* Too small a buffer, and past the TTL: gone. */
	assert_int_equal(ss_dns_cache_get(&c, &m.q, 0, 1101.0, out, n - 1), 0);
	ss_dns_cache_put(&c, &m.q, 0, buf, n, 300, 1000.0);
	assert_int_equal(ss_dns_cache_get(&c, &m.q, 0, 1300.0, out, sizeof(out)), 0);
	assert_int_equal(c.used, 0);
	/* A TTL of 0, or a message over a slot: not kept. */
	ss_dns_cache_put(&c, &m.q, 0, buf, n, 0, 1000.0);
	assert_int_equal(c.used, 0);
	ss_dns_cache_free(&c);
	assert_int_equal(ss_dns_cache_init(&c, 4, 16), 0);
	ss_dns_cache_put(&c, &m.q, 0, buf, n, 300, 1000.0);
	assert_int_equal(c.used, 0);
	ss_dns_cache_free(&c);
}

static void test_eviction(void **state)
{
	(void)state;
	ss_dns_cache_t c;
	uint8_t buf[512], out[512];
	ss_dns_msg_t m[6];
	char name[32];
	size_t n;

	assert_int_equal(ss_dns_cache_init(&c, 4, 512), 0);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		n = make_answer(buf, name, 60, false, 0);
		assert_int_equal(ss_dns_parse(buf, n, &m[i]), SS_OK);
		if (i < 4)
			ss_dns_cache_put(&c, &m[i].q, 0, buf, n, 60, 1.0);
	}
	/* n0 used: n1 is now the least recently used, then n2. */
	assert_int_not_equal(ss_dns_cache_get(&c, &m[0].q, 0, 2.0, out, sizeof(out)), 0);
	for (int i = 4; i < 6; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		n = make_answer(buf, name, 60, false, 0);
		ss_dns_cache_put(&c, &m[i].q, 0, buf, n, 60, 3.0);
	}
	assert_int_equal(c.used, 4);
	assert_int_equal(c.evicted, 2);
	assert_int_equal(ss_dns_cache_get(&c, &m[1].q, 0, 4.0, out, sizeof(out)), 0);
	assert_int_equal(ss_dns_cache_get(&c, &m[2].q, 0, 4.0, out, sizeof(out)), 0);
	for (int i = 0; i < 6; i++)
		if (i != 1 && i != 2)
			assert_int_not_equal(
			    ss_dns_cache_get(&c, &m[i].q, 0, 4.0, out, sizeof(out)), 0);
	/* Put again under the same key: replaced, not doubled. */
	n = make_answer(buf, "n0.example", 30, false, 0);
	ss_dns_cache_put(&c, &m[0].q, 0, buf, n, 30, 5.0);
	assert_int_equal(c.used, 4);
	n = ss_dns_cache_get(&c, &m[0].q, 0, 5.0, out, sizeof(out));
	assert_int_equal(first_ttl(out, n), 30);
	ss_dns_cache_free(&c);
}

static void test_empty(void **state)
{
	(void)state;
	ss_dns_cache_t c;
	uint8_t buf[512], out[512];
	ss_dns_msg_t m;
	size_t n;

	assert_int_equal(ss_dns_cache_init(&c, 0, 512), 0);
	n = make_answer(buf, "a.example", 60, false, 0);
	assert_int_equal(ss_dns_parse(buf, n, &m), SS_OK);
	ss_dns_cache_put(&c, &m.q, 0, buf, n, 60, 1.0);
	assert_int_equal(ss_dns_cache_get(&c, &m.q, 0, 1.0, out, sizeof(out)), 0);
	ss_dns_cache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ttl_rules),
	    cmocka_unit_test(test_get_put),
	    cmocka_unit_test(test_eviction),
	    cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
