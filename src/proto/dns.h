/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_DNS_H
#define SS_PROTO_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DNS messages (RFC 1035, with EDNS(0) of RFC 6891), as far as a relay
 * that forwards and caches them must read them: the header, the one
 * question, and of the records (compressed names followed, every offset
 * checked) their TTLs, a negative answer's SOA and the addresses of the
 * answer section. Pure: no I/O, no allocation; the message is a read-only
 * view except for ss_dns_age, which rewrites TTLs in place. */

#define SS_DNS_HEADER_LEN 12
/* A name in wire form, labels and the root's zero included (RFC 1035 2.3.4). */
#define SS_DNS_NAME_MAX 255
/* As text: labels joined by '.', no trailing dot. */
#define SS_DNS_TEXT_MAX 254
/* Addresses of the answer section kept by ss_dns_parse. */
#define SS_DNS_ADDRS_MAX 16
/* The payload a UDP answer may fill without EDNS (RFC 1035 4.2.1). */
#define SS_DNS_UDP_PLAIN 512

enum {
	SS_DNS_TYPE_A = 1,
	SS_DNS_TYPE_SOA = 6,
	SS_DNS_TYPE_PTR = 12,
	SS_DNS_TYPE_AAAA = 28,
	SS_DNS_TYPE_OPT = 41,
	SS_DNS_CLASS_IN = 1,
};

/* Header flags, in host order. */
enum {
	SS_DNS_QR = 0x8000,
	SS_DNS_OPCODE_MASK = 0x7800,
	SS_DNS_AA = 0x0400,
	SS_DNS_TC = 0x0200,
	SS_DNS_RD = 0x0100,
	SS_DNS_RA = 0x0080,
	SS_DNS_RCODE_MASK = 0x000f,
};

typedef enum {
	SS_DNS_NOERROR = 0,
	SS_DNS_FORMERR = 1,
	SS_DNS_SERVFAIL = 2,
	SS_DNS_NXDOMAIN = 3,
	SS_DNS_NOTIMP = 4,
	SS_DNS_REFUSED = 5,
} ss_dns_rcode_t;

typedef struct ss_dns_question {
	/* The name in wire form, uncompressed and lowercased (A-Z only). */
	uint8_t name[SS_DNS_NAME_MAX];
	uint8_t name_len;
	/* As text, for the ACL and log lines; text_ok false when a label holds
	 * a byte a host name cannot ('.', a control byte, a space or one
	 * above 0x7e), the text then having '?' for those. */
	bool text_ok;
	char text[SS_DNS_TEXT_MAX + 1];
	uint16_t qtype, qclass;
} ss_dns_question_t;

typedef struct ss_dns_msg {
	uint16_t id, flags;
	uint16_t qdcount, ancount, nscount, arcount;
	ss_dns_question_t q;
	size_t question_end; /* offset of what follows the question */
	/* The smallest TTL of the answer section's records; UINT32_MAX when it
	 * has none. */
	uint32_t answer_ttl;
	/* A SOA record in the authority section: the lesser of its TTL and
	 * its MINIMUM field (RFC 2308 5), the TTL of a negative answer. */
	bool has_soa;
	uint32_t soa_ttl;
	/* EDNS: an OPT record in the additional section, with the UDP payload
	 * size its sender takes. */
	bool has_opt;
	uint16_t opt_udp_size;
	/* A and AAAA records of the answer section, by their family: the
	 * first SS_DNS_ADDRS_MAX of n_addrs. */
	size_t n_addrs;
	struct {
		uint8_t len; /* 4 or 16 */
		uint8_t addr[16];
	} addrs[SS_DNS_ADDRS_MAX];
} ss_dns_msg_t;

/* Parses the message p[0..n) (at most 65535 bytes): a header, exactly one
 * question, then every record of the three sections whole, with no byte
 * after the last one. Names may be compressed (a pointer leads to an
 * earlier offset past the header, so that no chain loops) and are at most
 * SS_DNS_NAME_MAX bytes expanded. SS_OK with *m filled, or SS_ERR. */
int ss_dns_parse(const uint8_t *p, size_t n, ss_dns_msg_t *m);

/* Takes age seconds off the TTL of every record but OPT (none below 0) of
 * a message that parses (SS_OK); else SS_ERR, p unchanged, also for one of
 * more than 1024 records. A name that points into a TTL (no name server
 * writes one) may read otherwise afterwards; the question cannot. */
int ss_dns_age(uint8_t *p, size_t n, uint32_t age);

/* Whether two questions ask the same (their names are lowercased). */
bool ss_dns_same_question(const ss_dns_question_t *a, const ss_dns_question_t *b);

/* The UDP payload the sender of query m takes in an answer: its EDNS size,
 * at least SS_DNS_UDP_PLAIN, or SS_DNS_UDP_PLAIN without EDNS. */
size_t ss_dns_udp_limit(const ss_dns_msg_t *m);

/* The header and question of msg (which parsed as m) as a reply of its
 * own: flags as given (QR set), the counts of the sections after the
 * question zero. Written to out (cap bytes); returns its length, or 0 when
 * it does not fit. For an answer too large for UDP (flags with TC) and for
 * an error reply to a query (rcode in flags). */
size_t ss_dns_reply_head(const uint8_t *msg, const ss_dns_msg_t *m, uint16_t flags, uint8_t *out,
			 size_t cap);

/* The id of a message in place. */
static inline void ss_dns_set_id(uint8_t *p, uint16_t id)
{
	p[0] = (uint8_t)(id >> 8);
	p[1] = (uint8_t)id;
}

#endif
