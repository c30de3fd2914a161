/* SPDX-License-Identifier: MIT */
/* libFuzzer target: DNS messages (ss_dns_parse), raw: one datagram, as the
 * relay reads a query from a client or an answer from a name server. A
 * message that parses has its question inside it, a name of at most 255
 * bytes whose text fits. Aged by nothing, when it parses again (a name
 * may point into a TTL), it has the same question and least TTL; aged by
 * its first byte's worth of seconds, the same question with no TTL grown;
 * one that cannot be aged is left as it was. Its reply head parses to the same question with every
 * section after it empty. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ss_dns_msg_t m, again;
	uint8_t *copy;
	size_t n;

	if (ss_dns_parse(data, size, &m) != SS_OK)
		return 0;
	FZ_CHECK(m.qdcount == 1 && m.question_end <= size);
	FZ_CHECK(m.q.name_len >= 1 && m.q.name_len <= SS_DNS_NAME_MAX);
	FZ_CHECK(m.q.name[m.q.name_len - 1] == 0);
	FZ_CHECK(strlen(m.q.text) <= SS_DNS_TEXT_MAX);
	FZ_CHECK(ss_dns_udp_limit(&m) >= SS_DNS_UDP_PLAIN);
	for (size_t i = 0; i < m.q.name_len; i++)
		FZ_CHECK(m.q.name[i] < 'A' || m.q.name[i] > 'Z');

	copy = malloc(size);
	FZ_CHECK(copy);
	memcpy(copy, data, size);
	if (ss_dns_age(copy, size, 0) == SS_OK) {
		if (ss_dns_parse(copy, size, &again) == SS_OK) {
			FZ_CHECK(ss_dns_same_question(&m.q, &again.q));
			FZ_CHECK(again.answer_ttl == m.answer_ttl);
		}
		memcpy(copy, data, size);
		FZ_CHECK(ss_dns_age(copy, size, data[0]) == SS_OK);
		if (ss_dns_parse(copy, size, &again) == SS_OK) {
			FZ_CHECK(ss_dns_same_question(&m.q, &again.q));
			FZ_CHECK(again.answer_ttl <= m.answer_ttl);
		}
	} else {
		FZ_CHECK(memcmp(copy, data, size) == 0);
	}

	n = ss_dns_reply_head(data, &m, SS_DNS_TC, copy, size);
	FZ_CHECK(n == m.question_end);
	FZ_CHECK(ss_dns_parse(copy, n, &again) == SS_OK);
	FZ_CHECK(ss_dns_same_question(&m.q, &again.q));
	FZ_CHECK(again.ancount == 0 && again.nscount == 0 && again.arcount == 0);
	FZ_CHECK(again.flags == (SS_DNS_QR | SS_DNS_TC));
	free(copy);
	return 0;
}
