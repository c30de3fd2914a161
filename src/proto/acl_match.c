/* SPDX-License-Identifier: MIT */
#include "proto/acl_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

unsigned ss_acl_names_lookup(const ss_acl_t *acl, const char *name, size_t len, uint32_t hash)
{
	if (acl->nslots == 0)
		return 0;
	for (size_t j = hash & (acl->nslots - 1); acl->slots[j].len;
	     j = (j + 1) & (acl->nslots - 1)) {
		const ss_acl_slot_t *s = &acl->slots[j];
		if (s->hash == hash && s->len == len && memcmp(acl->names + s->off, name, len) == 0)
			return s->flags;
	}
	return 0;
}

/* Flags of every '|' / '||' rule that covers host: '|' and '||' on the name
 * itself, '||' on each of its parent names. */
static unsigned domain_flags(const ss_acl_t *acl, const char *host, size_t len)
{
	char name[SS_ACL_NAME_MAX];
	uint32_t h = SS_ACL_HASH_INIT;
	unsigned flags = 0;

	if (acl->nnames == 0)
		return 0;
	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || len > SS_ACL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = host[i];
		name[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	for (size_t i = len; i-- > 0;) {
		h = ss_acl_hash_step(h, (unsigned char)name[i]);
		if (i == 0)
			flags |= ss_acl_names_lookup(acl, name, len, h);
		else if (name[i - 1] == '.')
			flags |=
			    ss_acl_names_lookup(acl, name + i, len - i, h) & SS_ACL_ALL_SUBTREE;
	}
	return flags;
}

static bool regex_any(const ss_acl_t *acl, const ss_acl_list_t *l, const char *host, size_t len)
{
	for (size_t i = 0; i < l->nre; i++) {
		if (pcre2_match(l->re[i], (PCRE2_SPTR)host, len, 0, 0, acl->md, acl->mctx) >= 0)
			return true;
	}
	return false;
}

static bool has_v4(const ss_acl_list_t *l, uint32_t ip)
{
	size_t lo = 0, hi = l->n4;

	/* First range whose lo exceeds ip; the one before it is the candidate. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->v4[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && ip <= l->v4[lo - 1].hi;
}

static bool u128_le(ss_acl_u128_t a, ss_acl_u128_t b)
{
	return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

static bool has_v6(const ss_acl_list_t *l, ss_acl_u128_t ip)
{
	size_t lo = 0, hi = l->n6;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u128_le(l->v6[mid].lo, ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && u128_le(ip, l->v6[lo - 1].hi);
}

/* An address in network byte order: 4 bytes, or 16 that are not
 * IPv4-mapped. */
typedef struct {
	bool v6;
	uint32_t v4;
	ss_acl_u128_t v6addr;
} ip_key_t;

static uint64_t be64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static void key_v4(ip_key_t *k, const uint8_t a[4])
{
	k->v6 = false;
	k->v4 = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

static void key_v6(ip_key_t *k, const uint8_t a[16])
{
	if (ss_ip6_is_v4mapped(a)) {
		key_v4(k, a + 12);
		return;
	}
	k->v6 = true;
	k->v6addr.hi = be64(a);
	k->v6addr.lo = be64(a + 8);
}

static bool key_in(const ss_acl_list_t *l, const ip_key_t *k)
{
	return k->v6 ? has_v6(l, k->v6addr) : has_v4(l, k->v4);
}

static ss_acl_decision_t decide_key(const ss_acl_t *acl, const ip_key_t *k)
{
	if (key_in(&acl->lists[SS_ACL_LIST_BYPASS], k))
		return SS_ACL_BYPASS;
	if (key_in(&acl->lists[SS_ACL_LIST_PROXY], k))
		return SS_ACL_PROXY;
	return SS_ACL_UNDECIDED;
}

static bool key_from_sockaddr(ip_key_t *k, const struct sockaddr *sa)
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		key_v4(k, (const uint8_t *)&in->sin_addr);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		key_v6(k, in6->sin6_addr.s6_addr);
		return true;
	}
	return false;
}

/* An IP literal host (IPv4, IPv6, or "[IPv6]") as a key. */
static bool key_from_text(ip_key_t *k, const char *host, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 2];
	uint8_t a[16];

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, host, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, a) == 1) {
		key_v4(k, a);
		return true;
	}
	if (inet_pton(AF_INET6, buf, a) == 1) {
		key_v6(k, a);
		return true;
	}
	return false;
}

static bool host_in(const ss_acl_t *acl, int list, unsigned flags, const char *host, size_t len)
{
	if (flags & (SS_ACL_EXACT(list) | SS_ACL_SUBTREE(list)))
		return true;
	return regex_any(acl, &acl->lists[list], host, len);
}

ss_acl_decision_t ss_acl_match_host(const ss_acl_t *acl, const char *host)
{
	ip_key_t k;
	size_t len;
	unsigned flags;

	if (!host || !host[0])
		return SS_ACL_UNDECIDED;
	len = strlen(host);
	if (key_from_text(&k, host, len))
		return decide_key(acl, &k);
	flags = domain_flags(acl, host, len);
	if (host_in(acl, SS_ACL_LIST_BYPASS, flags, host, len))
		return SS_ACL_BYPASS;
	if (host_in(acl, SS_ACL_LIST_PROXY, flags, host, len))
		return SS_ACL_PROXY;
	return SS_ACL_UNDECIDED;
}

ss_acl_decision_t ss_acl_match_addr(const ss_acl_t *acl, const struct sockaddr *sa)
{
	ip_key_t k;

	if (!key_from_sockaddr(&k, sa))
		return SS_ACL_UNDECIDED;
	return decide_key(acl, &k);
}

ss_acl_decision_t ss_acl_match_target(const ss_acl_t *acl, const ss_addr_t *target)
{
	ip_key_t k;

	switch (target->atyp) {
	case SS_ATYP_IPV4:
		key_v4(&k, target->v4);
		return decide_key(acl, &k);
	case SS_ATYP_IPV6:
		key_v6(&k, target->v6);
		return decide_key(acl, &k);
	case SS_ATYP_DOMAIN:
		return ss_acl_match_host(acl, target->domain);
	default:
		return SS_ACL_UNDECIDED;
	}
}

ss_acl_decision_t ss_acl_default(const ss_acl_t *acl)
{
	return acl->mode;
}

ss_acl_decision_t ss_acl_resolve(const ss_acl_t *acl, ss_acl_decision_t d)
{
	return d == SS_ACL_UNDECIDED ? acl->mode : d;
}

bool ss_acl_outbound_blocked_host(const ss_acl_t *acl, const char *host)
{
	ip_key_t k;
	size_t len;

	if (!host || !host[0])
		return false;
	len = strlen(host);
	if (key_from_text(&k, host, len))
		return key_in(&acl->lists[SS_ACL_LIST_BLOCK], &k);
	return host_in(acl, SS_ACL_LIST_BLOCK, domain_flags(acl, host, len), host, len);
}

bool ss_acl_outbound_blocked_addr(const ss_acl_t *acl, const struct sockaddr *sa)
{
	ip_key_t k;

	return key_from_sockaddr(&k, sa) && key_in(&acl->lists[SS_ACL_LIST_BLOCK], &k);
}

void ss_acl_stats(const ss_acl_t *acl, ss_acl_stats_t *out)
{
	*out = acl->stats;
}
