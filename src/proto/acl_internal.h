/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_ACL_INTERNAL_H
#define SS_PROTO_ACL_INTERNAL_H

/* Shared by acl_parse.c (building) and acl_match.c (lookups). */

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>

#include "proto/acl.h"

enum {
	SS_ACL_LIST_BYPASS = 0,
	SS_ACL_LIST_PROXY = 1,
	SS_ACL_LIST_BLOCK = 2,
	SS_ACL_NLISTS = 3,
};

/* Longest name a '|' or '||' rule may hold, trailing dot removed. */
#define SS_ACL_NAME_MAX 253

/* Inclusive address ranges, sorted by lo and merged, so that at most one
 * range can hold an address and a binary search finds it. */
typedef struct {
	uint32_t lo, hi;
} ss_acl_range4_t;

typedef struct {
	uint64_t hi, lo; /* big-endian halves of an IPv6 address */
} ss_acl_u128_t;

typedef struct {
	ss_acl_u128_t lo, hi;
} ss_acl_range6_t;

typedef struct {
	ss_acl_range4_t *v4;
	size_t n4, cap4;
	ss_acl_range6_t *v6;
	size_t n6, cap6;
	pcre2_code **re;
	size_t nre, capre;
} ss_acl_list_t;

/* Domain rule flags: per list, one bit for '|' (exact) and one for '||'
 * (the name and its subdomains). */
#define SS_ACL_EXACT(list) (1u << (2 * (list)))
#define SS_ACL_SUBTREE(list) (2u << (2 * (list)))
#define SS_ACL_ALL_SUBTREE (SS_ACL_SUBTREE(0) | SS_ACL_SUBTREE(1) | SS_ACL_SUBTREE(2))

/* Open-addressing hash table slot; len 0 marks an empty slot. Names are
 * stored lower-case without a trailing dot in acl->names. */
typedef struct {
	uint32_t hash;
	uint32_t off;
	uint16_t len;
	uint16_t flags;
} ss_acl_slot_t;

struct ss_acl {
	ss_acl_decision_t mode;
	ss_acl_list_t lists[SS_ACL_NLISTS];
	ss_acl_slot_t *slots;
	size_t nslots; /* power of two, or 0 */
	size_t nnames;
	char *names;
	size_t names_len, names_cap;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	ss_acl_stats_t stats;
	bool view; /* the rules are another ACL's (ss_acl_view) */
};

/* FNV-1a over the name read from its last byte to its first, so that one
 * backward pass over a host yields the hash of each of its suffixes. */
#define SS_ACL_HASH_INIT 2166136261u
static inline uint32_t ss_acl_hash_step(uint32_t h, unsigned char c)
{
	return (h ^ c) * 16777619u;
}

/* Flags of the stored name (lower-case, no trailing dot), 0 if absent. */
unsigned ss_acl_names_lookup(const ss_acl_t *acl, const char *name, size_t len, uint32_t hash);

#endif
