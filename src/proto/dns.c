/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "proto/dns.h"
#include "util/result.h"

/* A chain of compression pointers longer than this is refused: each
 * pointer leads to an earlier offset, so a chain ends anyway, but a
 * message need never have more than a name's labels. */
#define DNS_HOPS_MAX 128
/* Records whose TTLs ss_dns_age lowers, at most: more than a message of
 * the cache's slot size can hold (each takes 11 bytes at least). */
#define DNS_AGE_MAX 1024

/* What a walk over a message keeps of where the TTLs are (NULL: nothing). */
typedef struct dns_ttls {
	uint16_t at[DNS_AGE_MAX];
	size_t n;
} dns_ttls_t;

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The name at *off, within p[0..end) where it sits (the message, or a
 * record's data): *off moves past it as written (a pointer ends it), and
 * out (may be NULL) gets it expanded, lowercased, in wire form (*out_len
 * bytes). A pointer leads back to labels that end before it. SS_OK or
 * SS_ERR. */
static int dns_name(const uint8_t *p, size_t end, size_t *off, uint8_t *out, uint8_t *out_len)
{
	size_t pos = *off, total = 0, lim = end;
	unsigned hops = 0;
	bool jumped = false;

	for (;;) {
		if (pos >= lim)
			return SS_ERR;
		uint8_t l = p[pos];
		if ((l & 0xc0) == 0xc0) {
			if (pos + 2 > lim || ++hops > DNS_HOPS_MAX)
				return SS_ERR;
			size_t to = (size_t)(l & 0x3f) << 8 | p[pos + 1];
			/* Back to a name that lies wholly before this pointer,
			 * never in the header (which a reply rewrites). */
			if (to >= pos || to < SS_DNS_HEADER_LEN)
				return SS_ERR;
			if (!jumped)
				*off = pos + 2;
			jumped = true;
			lim = pos;
			pos = to;
			continue;
		}
		if (l & 0xc0)
			return SS_ERR; /* the extended label types are gone (RFC 6891) */
		if (pos + 1 + l > lim || total + 1 + l > SS_DNS_NAME_MAX)
			return SS_ERR;
		if (out) {
			out[total] = l;
			for (size_t i = 0; i < l; i++) {
				uint8_t c = p[pos + 1 + i];
				out[total + 1 + i] = c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
			}
		}
		total += 1 + (size_t)l;
		pos += 1 + (size_t)l;
		if (l == 0)
			break;
	}
	if (!jumped)
		*off = pos;
	if (out_len)
		*out_len = (uint8_t)total;
	return SS_OK;
}

/* The question's name as text: labels joined by '.'. */
static void dns_text(ss_dns_question_t *q)
{
	size_t i = 0, t = 0;

	q->text_ok = true;
	while (i < q->name_len && q->name[i]) {
		uint8_t l = q->name[i++];
		if (t)
			q->text[t++] = '.';
		for (uint8_t k = 0; k < l; k++, i++) {
			uint8_t c = q->name[i];
			bool ok = c > 0x20 && c < 0x7f && c != '.';
			q->text_ok &= ok;
			q->text[t++] = ok ? (char)c : '?';
		}
	}
	q->text[t] = '\0';
	/* The root itself: no name a host could have. */
	if (t == 0)
		q->text_ok = false;
}

/* A SOA record's data at p[off..end): MNAME, RNAME, then five numbers, of
 * which MINIMUM is the last. */
static int dns_soa_minimum(const uint8_t *p, size_t off, size_t end, uint32_t *min)
{
	if (dns_name(p, end, &off, NULL, NULL) != SS_OK ||
	    dns_name(p, end, &off, NULL, NULL) != SS_OK || off + 20 != end)
		return SS_ERR;
	*min = get32(p + off + 16);
	return SS_OK;
}

/* One record at *off of section sec (0 answer, 1 authority, 2 additional):
 * noted in m, where its TTL is in ttls when ttls is not NULL. */
static int dns_record(const uint8_t *p, size_t n, size_t *off, int sec, ss_dns_msg_t *m,
		      dns_ttls_t *ttls)
{
	size_t at;
	uint16_t type, rdlen;
	uint32_t ttl;

	if (dns_name(p, n, off, NULL, NULL) != SS_OK || *off + 10 > n)
		return SS_ERR;
	at = *off;
	type = get16(p + at);
	ttl = get32(p + at + 4);
	rdlen = get16(p + at + 8);
	*off = at + 10 + rdlen;
	if (*off > n)
		return SS_ERR;
	if (type == SS_DNS_TYPE_OPT) {
		/* One OPT, in the additional section, owned by the root. */
		if (sec != 2 || m->has_opt || p[at - 1] != 0)
			return SS_ERR;
		m->has_opt = true;
		m->opt_udp_size = get16(p + at + 2);
		return SS_OK;
	}
	if (ttl > INT32_MAX)
		ttl = 0; /* RFC 2181 8: such a TTL means zero */
	if (ttls) {
		if (ttls->n == DNS_AGE_MAX)
			return SS_ERR;
		ttls->at[ttls->n++] = (uint16_t)(at + 4);
	}
	if (sec == 0) {
		if (ttl < m->answer_ttl)
			m->answer_ttl = ttl;
		if ((type == SS_DNS_TYPE_A && rdlen == 4) ||
		    (type == SS_DNS_TYPE_AAAA && rdlen == 16)) {
			if (m->n_addrs < SS_DNS_ADDRS_MAX) {
				m->addrs[m->n_addrs].len = (uint8_t)rdlen;
				memcpy(m->addrs[m->n_addrs].addr, p + at + 10, rdlen);
			}
			m->n_addrs++;
		}
	} else if (sec == 1 && type == SS_DNS_TYPE_SOA && !m->has_soa) {
		uint32_t min;
		if (dns_soa_minimum(p, at + 10, *off, &min) != SS_OK)
			return SS_ERR;
		m->has_soa = true;
		m->soa_ttl = ttl < min ? ttl : min;
	}
	return SS_OK;
}

static int dns_walk(const uint8_t *p, size_t n, ss_dns_msg_t *m, dns_ttls_t *ttls)
{
	size_t off = SS_DNS_HEADER_LEN;

	memset(m, 0, offsetof(ss_dns_msg_t, addrs));
	if (n < SS_DNS_HEADER_LEN || n > UINT16_MAX)
		return SS_ERR;
	m->id = get16(p);
	m->flags = get16(p + 2);
	m->qdcount = get16(p + 4);
	m->ancount = get16(p + 6);
	m->nscount = get16(p + 8);
	m->arcount = get16(p + 10);
	m->answer_ttl = UINT32_MAX;
	if (m->qdcount != 1)
		return SS_ERR;
	if (dns_name(p, n, &off, m->q.name, &m->q.name_len) != SS_OK || off + 4 > n)
		return SS_ERR;
	m->q.qtype = get16(p + off);
	m->q.qclass = get16(p + off + 2);
	off += 4;
	m->question_end = off;
	const uint16_t counts[3] = {m->ancount, m->nscount, m->arcount};
	for (int sec = 0; sec < 3; sec++)
		for (unsigned i = 0; i < counts[sec]; i++)
			if (dns_record(p, n, &off, sec, m, ttls) != SS_OK)
				return SS_ERR;
	if (off != n)
		return SS_ERR;
	dns_text(&m->q);
	return SS_OK;
}

int ss_dns_parse(const uint8_t *p, size_t n, ss_dns_msg_t *m)
{
	return dns_walk(p, n, m, NULL);
}

/* The TTLs are found first and rewritten after: a name may point into
 * bytes that a rewrite changes. */
int ss_dns_age(uint8_t *p, size_t n, uint32_t age)
{
	ss_dns_msg_t m;
	dns_ttls_t ttls;

	ttls.n = 0;
	if (dns_walk(p, n, &m, &ttls) != SS_OK)
		return SS_ERR;
	for (size_t i = 0; i < ttls.n; i++) {
		uint32_t ttl = get32(p + ttls.at[i]);
		if (ttl > INT32_MAX)
			ttl = 0; /* RFC 2181 8: such a TTL means zero */
		put32(p + ttls.at[i], ttl > age ? ttl - age : 0);
	}
	return SS_OK;
}

bool ss_dns_same_question(const ss_dns_question_t *a, const ss_dns_question_t *b)
{
	return a->qtype == b->qtype && a->qclass == b->qclass && a->name_len == b->name_len &&
	       memcmp(a->name, b->name, a->name_len) == 0;
}

size_t ss_dns_udp_limit(const ss_dns_msg_t *m)
{
	return m->has_opt && m->opt_udp_size > SS_DNS_UDP_PLAIN ? m->opt_udp_size
								: SS_DNS_UDP_PLAIN;
}

size_t ss_dns_reply_head(const uint8_t *msg, const ss_dns_msg_t *m, uint16_t flags, uint8_t *out,
			 size_t cap)
{
	size_t n = m->question_end;

	if (n > cap)
		return 0;
	memmove(out, msg, n);
	flags |= SS_DNS_QR;
	out[2] = (uint8_t)(flags >> 8);
	out[3] = (uint8_t)flags;
	memset(out + 6, 0, 6);
	return n;
}
