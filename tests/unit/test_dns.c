/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/dns.h"
#include "util/result.h"

/* A query for www.Example.com A IN with an EDNS OPT of 1232 bytes, as dig
 * sends it (id 0x1234, RD). */
static const uint8_t query[] = {
    0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 3, 'w', 'w', 'w', 7,
    'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
    /* OPT: root, type 41, size 1232, ext rcode/version/flags 0, rdlen 0 */
    0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

/* Its answer: www.example.com CNAME web.example.com (TTL 300, compressed
 * against the question), web.example.com A 192.0.2.7 (TTL 60), and
 * AAAA 2001:db8::1 (TTL 120). */
static const uint8_t answer[] = {
    0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 3, 'w', 'w', 'w', 7,
    'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
    /* 33: CNAME */
    0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x06, 3, 'w', 'e', 'b', 0xc0,
    0x10,
    /* 51: A, owner web.example.com at 45 */
    0xc0, 0x2d, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04, 192, 0, 2, 7,
    /* AAAA */
    0xc0, 0x2d, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x00, 0x78, 0x00, 0x10, 0x20, 0x01, 0x0d, 0xb8,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

/* NXDOMAIN for nope.example A, with the zone's SOA in the authority
 * section: TTL 900, MINIMUM 600. */
static const uint8_t nxdomain[] = {0xab, 0xcd, 0x81, 0x83, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
				   0x00, 4, 'n', 'o', 'p', 'e', 7, 'e', 'x', 'a', 'm', 'p', 'l',
				   'e', 0, 0x00, 0x01, 0x00, 0x01,
				   /* 30: SOA owner example (at 17) */
				   0xc0, 0x11, 0x00, 0x06, 0x00, 0x01, 0x00, 0x00, 0x03, 0x84, 0x00,
				   0x20, 2, 'n', 's', 0xc0, 0x11,     /* MNAME ns.example */
				   4, 'r', 'o', 'o', 't', 0xc0, 0x11, /* RNAME root.example */
				   0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x03,
				   0x84, 0x00, 0x09, 0x3a, 0x80, 0x00, 0x00, 0x02, 0x58};

static void test_query(void **state)
{
	(void)state;
	ss_dns_msg_t m;
	const uint8_t wire[] = {3,   'w', 'w', 'w', 7,   'e', 'x', 'a', 'm',
				'p', 'l', 'e', 3,   'c', 'o', 'm', 0};

	assert_int_equal(ss_dns_parse(query, sizeof(query), &m), SS_OK);
	assert_int_equal(m.id, 0x1234);
	assert_int_equal(m.flags & SS_DNS_QR, 0);
	assert_int_equal(m.flags & SS_DNS_RD, SS_DNS_RD);
	assert_int_equal(m.q.qtype, SS_DNS_TYPE_A);
	assert_int_equal(m.q.qclass, SS_DNS_CLASS_IN);
	assert_int_equal(m.q.name_len, sizeof(wire));
	assert_memory_equal(m.q.name, wire, sizeof(wire));
	assert_string_equal(m.q.text, "www.example.com");
	assert_true(m.q.text_ok);
	assert_int_equal(m.question_end, 33);
	assert_true(m.has_opt);
	assert_int_equal(m.opt_udp_size, 1232);
	assert_int_equal(ss_dns_udp_limit(&m), 1232);
	assert_int_equal(m.answer_ttl, UINT32_MAX);
	/* Every proper prefix is refused. */
	for (size_t i = 0; i < sizeof(query); i++)
		assert_int_equal(ss_dns_parse(query, i, &m), SS_ERR);
}

static void test_answer(void **state)
{
	(void)state;
	ss_dns_msg_t m, q;
	const uint8_t v4[] = {192, 0, 2, 7};

	assert_int_equal(ss_dns_parse(answer, sizeof(answer), &m), SS_OK);
	assert_int_equal(m.ancount, 3);
	assert_int_equal(m.answer_ttl, 60);
	assert_false(m.has_soa);
	assert_false(m.has_opt);
	assert_int_equal(ss_dns_udp_limit(&m), 512);
	assert_int_equal(m.n_addrs, 2);
	assert_int_equal(m.addrs[0].len, 4);
	assert_memory_equal(m.addrs[0].addr, v4, 4);
	assert_int_equal(m.addrs[1].len, 16);
	assert_int_equal(m.addrs[1].addr[15], 1);
	assert_int_equal(ss_dns_parse(query, sizeof(query), &q), SS_OK);
	/* The query's name had capitals: the questions are the same. */
	assert_true(ss_dns_same_question(&m.q, &q.q));
	q.q.qtype = SS_DNS_TYPE_AAAA;
	assert_false(ss_dns_same_question(&m.q, &q.q));
	for (size_t i = 0; i < sizeof(answer); i++)
		assert_int_equal(ss_dns_parse(answer, i, &m), SS_ERR);
}

static void test_negative(void **state)
{
	(void)state;
	ss_dns_msg_t m;

	assert_int_equal(ss_dns_parse(nxdomain, sizeof(nxdomain), &m), SS_OK);
	assert_int_equal(m.flags & SS_DNS_RCODE_MASK, SS_DNS_NXDOMAIN);
	assert_true(m.has_soa);
	assert_int_equal(m.soa_ttl, 600); /* MINIMUM below the TTL */
	assert_string_equal(m.q.text, "nope.example");
}

static void test_age(void **state)
{
	(void)state;
	uint8_t buf[sizeof(answer)];
	ss_dns_msg_t m;

	memcpy(buf, answer, sizeof(buf));
	assert_int_equal(ss_dns_age(buf, sizeof(buf), 100), SS_OK);
	assert_int_equal(ss_dns_parse(buf, sizeof(buf), &m), SS_OK);
	/* 300 -> 200, 60 -> 0, 120 -> 20. */
	assert_int_equal(buf[41], 0);
	assert_int_equal(buf[42], 200);
	assert_int_equal(buf[60], 0);
	assert_int_equal(buf[76], 20);
	assert_int_equal(m.answer_ttl, 0);
	/* Nothing else moved. */
	buf[41] = 0x01;
	buf[42] = 0x2c;
	buf[60] = 0x3c;
	buf[76] = 0x78;
	assert_memory_equal(buf, answer, sizeof(buf));

	/* OPT's "TTL" (extended rcode, version, flags) is left alone. */
	uint8_t q[sizeof(query)];
	memcpy(q, query, sizeof(q));
	q[sizeof(q) - 6] = 0x80; /* DO */
	assert_int_equal(ss_dns_age(q, sizeof(q), 5), SS_OK);
	assert_int_equal(q[sizeof(q) - 6], 0x80);
}

static void test_reply_head(void **state)
{
	(void)state;
	uint8_t out[512];
	ss_dns_msg_t m, r;
	size_t n;

	assert_int_equal(ss_dns_parse(query, sizeof(query), &m), SS_OK);
	n = ss_dns_reply_head(query, &m, SS_DNS_RD | SS_DNS_RA | SS_DNS_SERVFAIL, out, sizeof(out));
	assert_int_equal(n, 33);
	assert_int_equal(ss_dns_parse(out, n, &r), SS_OK);
	assert_int_equal(r.id, 0x1234);
	assert_int_equal(r.flags, SS_DNS_QR | SS_DNS_RD | SS_DNS_RA | SS_DNS_SERVFAIL);
	assert_int_equal(r.ancount + r.nscount + r.arcount, 0);
	assert_true(ss_dns_same_question(&m.q, &r.q));
	assert_int_equal(ss_dns_reply_head(query, &m, 0, out, 32), 0);
	/* In place, as the relay truncates an answer. */
	memcpy(out, answer, sizeof(answer));
	assert_int_equal(ss_dns_parse(out, sizeof(answer), &m), SS_OK);
	n = ss_dns_reply_head(out, &m, m.flags | SS_DNS_TC, out, sizeof(out));
	assert_int_equal(ss_dns_parse(out, n, &r), SS_OK);
	assert_true(r.flags & SS_DNS_TC);
}

static void check_bad(const uint8_t *p, size_t n)
{
	ss_dns_msg_t m;

	assert_int_equal(ss_dns_parse(p, n, &m), SS_ERR);
}

static void test_malformed(void **state)
{
	(void)state;
	uint8_t buf[600];

	/* A byte after the last record. */
	memcpy(buf, answer, sizeof(answer));
	buf[sizeof(answer)] = 0;
	check_bad(buf, sizeof(answer) + 1);
	/* Two questions, none. */
	memcpy(buf, query, sizeof(query));
	buf[5] = 2;
	check_bad(buf, sizeof(query));
	buf[5] = 0;
	check_bad(buf, sizeof(query));
	/* A pointer to itself, and one ahead. */
	memcpy(buf, answer, sizeof(answer));
	buf[33] = 0xc0;
	buf[34] = 33;
	check_bad(buf, sizeof(answer));
	buf[34] = 60;
	check_bad(buf, sizeof(answer));
	/* A pointer into the header, and one to labels that run on past it
	 * (the question's name made of bytes after the question). */
	buf[34] = 4;
	check_bad(buf, sizeof(answer));
	memcpy(buf, query, sizeof(query));
	buf[12] = 0xc0; /* www.Example.com as "\xc0\x0e" then 15 bytes */
	buf[13] = 0x0e;
	check_bad(buf, sizeof(query));
	memcpy(buf, answer, sizeof(answer));
	buf[34] = 30; /* labels "\x00" and one over the pointer's own bytes */
	check_bad(buf, sizeof(answer));
	/* An owner name pointing at a label of the record before, which runs
	 * on over the pointer itself and the type after it. */
	const uint8_t spans[] = {
	    0,    1,  0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0, 1,   'a', 0, 0, 1, 0, 1, /* 19: TXT */
	    0,    0,  16,   0,    1, 0, 0, 0, 0, 0, 3, 6, 'x', 'y', /* 33: A, owner at 30 */
	    0xc0, 30, 0,    1,    0, 1, 0, 0, 0, 0, 0, 4, 1,   2,   3, 4};
	check_bad(spans, sizeof(spans));
	memcpy(buf, answer, sizeof(answer));
	/* A label type 01 (extended, gone). */
	buf[33] = 0x40;
	buf[34] = 0x0c;
	check_bad(buf, sizeof(answer));
	/* A record's data past the end. */
	memcpy(buf, answer, sizeof(answer));
	buf[78] = 0x11;
	check_bad(buf, sizeof(answer));
	/* OPT in the answer section. */
	memcpy(buf, query, sizeof(query));
	buf[7] = 1;
	buf[11] = 0;
	check_bad(buf, sizeof(query));
	/* A name over 255 bytes (5 labels of 63), and one of 255 (3 of 63 and
	 * one of 61, with the root), the most. */
	ss_dns_msg_t m;
	for (int last = 63; last >= 61; last -= 2) {
		size_t n = 12;
		memset(buf, 0, 12);
		buf[5] = 1;
		for (int l = 0; l < 4; l++) {
			int len = l == 3 ? last : 63;
			buf[n++] = (uint8_t)len;
			memset(buf + n, 'a', (size_t)len);
			n += (size_t)len;
		}
		if (last == 63) {
			buf[n++] = 1;
			buf[n++] = 'a';
		}
		buf[n++] = 0;
		memcpy(buf + n, (const uint8_t[]){0, 1, 0, 1}, 4);
		if (last == 63) {
			check_bad(buf, n + 4);
			continue;
		}
		assert_int_equal(ss_dns_parse(buf, n + 4, &m), SS_OK);
		assert_int_equal(m.q.name_len, 255);
		assert_int_equal(strlen(m.q.text), 253);
	}
	/* A SOA whose numbers do not fill its data. */
	memcpy(buf, nxdomain, sizeof(nxdomain));
	buf[41] = 0x1f;
	check_bad(buf, sizeof(nxdomain) - 1);
}

static void test_text(void **state)
{
	(void)state;
	ss_dns_msg_t m;
	uint8_t buf[64];
	const uint8_t head[] = {0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	const uint8_t dotted[] = {3, 'a', '.', 'b', 2, 'c', 'd', 0, 0, 1, 0, 1};
	const uint8_t root[] = {0, 0, 2, 0, 1};

	memcpy(buf, head, 12);
	memcpy(buf + 12, dotted, sizeof(dotted));
	assert_int_equal(ss_dns_parse(buf, 12 + sizeof(dotted), &m), SS_OK);
	assert_false(m.q.text_ok);
	assert_string_equal(m.q.text, "a?b.cd");
	memcpy(buf + 12, root, sizeof(root));
	assert_int_equal(ss_dns_parse(buf, 12 + sizeof(root), &m), SS_OK);
	assert_false(m.q.text_ok);
	assert_string_equal(m.q.text, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query),      cmocka_unit_test(test_answer),
	    cmocka_unit_test(test_negative),   cmocka_unit_test(test_age),
	    cmocka_unit_test(test_reply_head), cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
