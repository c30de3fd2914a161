/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_DNS_CACHE_H
#define SS_RELAY_DNS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/dns.h"

/* The DNS relay's answers, kept for their TTL: a fixed number of entries,
 * each with a slot of fixed size for its message, all allocated at start;
 * the least recently used entry makes room for a new one. Keyed by the
 * question (name lowercased, type, class) and the path the answer came by
 * (relay/dns.h), so that a name asked through the server and directly is
 * two entries. No allocation after init; one thread. */

/* Cap on how long an answer is kept, and a negative one (RFC 2308 5
 * suggests one to three hours). */
#define SS_DNS_CACHE_TTL_MAX 86400
#define SS_DNS_CACHE_NEG_TTL_MAX 3600

typedef struct ss_dns_cache_entry {
	uint32_t chain;      /* the next entry of its bucket */
	uint32_t prev, next; /* the use order, the most recent first */
	uint32_t hash;
	double stored, expires;
	uint16_t qtype, qclass;
	uint16_t len; /* of its message; 0: the entry is free */
	uint8_t path, name_len;
	uint8_t name[SS_DNS_NAME_MAX];
} ss_dns_cache_entry_t;

typedef struct ss_dns_cache {
	ss_dns_cache_entry_t *e;
	uint32_t *buckets;
	uint8_t *data; /* cap slots of slot bytes, touched only when used */
	size_t cap, nbuckets, slot;
	uint32_t head, tail; /* the use order */
	uint32_t free;       /* the free entries, chained through chain */
	size_t used;
	uint64_t hits, misses, stored_n, evicted;
} ss_dns_cache_t;

/* Room for entries answers of at most slot bytes each (entries 0: a cache
 * that keeps nothing). 0 or -ENOMEM. */
int ss_dns_cache_init(ss_dns_cache_t *c, size_t entries, size_t slot);
void ss_dns_cache_free(ss_dns_cache_t *c);

/* How long the answer m may be kept: the least TTL of its answer section
 * for an answer with records, the SOA's for a negative one (NXDOMAIN, or
 * no record of the type), each capped; 0 (not kept) for anything else: a
 * truncated answer, another rcode, a negative one without SOA. */
uint32_t ss_dns_cache_ttl(const ss_dns_msg_t *m);

/* The answer kept for q by path at time now (seconds): copied into out
 * (cap bytes) with its TTLs lowered by the whole seconds it was kept, its
 * length returned; 0 when there is none (or it expired, and is dropped). */
size_t ss_dns_cache_get(ss_dns_cache_t *c, const ss_dns_question_t *q, uint8_t path, double now,
			uint8_t *out, size_t cap);

/* Keeps msg (len bytes, an answer to q by path) for ttl seconds from now,
 * in place of what it held for the same key; nothing when ttl is 0 or the
 * message is larger than a slot. */
void ss_dns_cache_put(ss_dns_cache_t *c, const ss_dns_question_t *q, uint8_t path,
		      const uint8_t *msg, size_t len, uint32_t ttl, double now);

#endif
