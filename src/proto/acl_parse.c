/* SPDX-License-Identifier: MIT */
#include "proto/acl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ACL_FILE_MAX ((size_t)256 << 20)
#define ACL_MATCH_LIMIT 1000000u

typedef struct {
	ss_acl_t *acl;
	const char *name;
	unsigned lineno;
	int list; /* current list */
	char *err;
	size_t errlen;
} parse_ctx_t;

__attribute__((format(printf, 2, 3))) static int parse_fail(parse_ctx_t *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->lineno);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Grows *arr (of elem-sized items) so that one more fits. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* ---- address prefixes ---- */

static ss_acl_list_stats_t *list_stats(parse_ctx_t *p)
{
	switch (p->list) {
	case SS_ACL_LIST_BYPASS:
		return &p->acl->stats.bypass;
	case SS_ACL_LIST_PROXY:
		return &p->acl->stats.proxy;
	default:
		return &p->acl->stats.block;
	}
}

static int add_v4(ss_acl_list_t *l, const uint8_t a[4], unsigned prefix)
{
	uint32_t ip = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
	uint32_t mask = prefix == 0 ? 0 : UINT32_MAX << (32 - prefix);

	if (grow((void **)&l->v4, &l->cap4, l->n4, sizeof(*l->v4)))
		return -ENOMEM;
	l->v4[l->n4].lo = ip & mask;
	l->v4[l->n4].hi = (ip & mask) | ~mask;
	l->n4++;
	return 0;
}

static uint64_t load_be64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* Mask with the top bits set of a 64-bit half, n in 0..64. */
static uint64_t top_mask(unsigned n)
{
	return n == 0 ? 0 : UINT64_MAX << (64 - n);
}

static int add_v6(ss_acl_list_t *l, const uint8_t a[16], unsigned prefix)
{
	uint64_t mh = top_mask(prefix > 64 ? 64 : prefix);
	uint64_t ml = top_mask(prefix > 64 ? prefix - 64 : 0);
	ss_acl_range6_t *r;

	if (grow((void **)&l->v6, &l->cap6, l->n6, sizeof(*l->v6)))
		return -ENOMEM;
	r = &l->v6[l->n6++];
	r->lo.hi = load_be64(a) & mh;
	r->lo.lo = load_be64(a + 8) & ml;
	r->hi.hi = r->lo.hi | ~mh;
	r->hi.lo = r->lo.lo | ~ml;
	return 0;
}

static int cmp_range4(const void *a, const void *b)
{
	const ss_acl_range4_t *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int u128_cmp(ss_acl_u128_t a, ss_acl_u128_t b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	return a.lo < b.lo ? -1 : a.lo > b.lo;
}

static int cmp_range6(const void *a, const void *b)
{
	const ss_acl_range6_t *x = a, *y = b;

	return u128_cmp(x->lo, y->lo);
}

/* Sorts the ranges and merges those that overlap or touch. */
static void finish_v4(ss_acl_list_t *l)
{
	size_t out = 0;

	if (l->n4 == 0)
		return;
	qsort(l->v4, l->n4, sizeof(*l->v4), cmp_range4);
	for (size_t i = 1; i < l->n4; i++) {
		ss_acl_range4_t *cur = &l->v4[out];
		if (cur->hi == UINT32_MAX || l->v4[i].lo <= cur->hi + 1) {
			if (l->v4[i].hi > cur->hi)
				cur->hi = l->v4[i].hi;
		} else {
			l->v4[++out] = l->v4[i];
		}
	}
	l->n4 = out + 1;
}

static ss_acl_u128_t u128_inc(ss_acl_u128_t a)
{
	a.lo++;
	if (a.lo == 0)
		a.hi++;
	return a;
}

static void finish_v6(ss_acl_list_t *l)
{
	size_t out = 0;

	if (l->n6 == 0)
		return;
	qsort(l->v6, l->n6, sizeof(*l->v6), cmp_range6);
	for (size_t i = 1; i < l->n6; i++) {
		ss_acl_range6_t *cur = &l->v6[out];
		bool top = cur->hi.hi == UINT64_MAX && cur->hi.lo == UINT64_MAX;
		if (top || u128_cmp(l->v6[i].lo, u128_inc(cur->hi)) <= 0) {
			if (u128_cmp(l->v6[i].hi, cur->hi) > 0)
				cur->hi = l->v6[i].hi;
		} else {
			l->v6[++out] = l->v6[i];
		}
	}
	l->n6 = out + 1;
}

/* Does s look like an attempt at an address (only hex digits, '.', ':')? */
static bool looks_like_address(const char *s, size_t n, bool *only_dotted)
{
	bool sep = false, dotted = true;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '.' || c == ':')
			sep = true;
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			   (c >= 'A' && c <= 'F')))
			return false;
		if (c != '.' && !(c >= '0' && c <= '9'))
			dotted = false;
	}
	*only_dotted = dotted;
	return sep;
}

/* 1: the line was an address or prefix and was added; 0: it is not one;
 * negative: error. */
static int parse_prefix(parse_ctx_t *p, const char *line, size_t n)
{
	const char *slash = memrchr(line, '/', n);
	size_t alen = slash ? (size_t)(slash - line) : n;
	ss_acl_list_t *l = &p->acl->lists[p->list];
	ss_acl_list_stats_t *st = list_stats(p);
	char buf[INET6_ADDRSTRLEN + 8];
	uint8_t a[16];
	unsigned prefix, max;
	bool v6, dotted;

	if (alen == 0 || alen >= sizeof(buf))
		return 0;
	memcpy(buf, line, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, a) == 1) {
		v6 = false;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, a) == 1) {
		v6 = true;
		max = 128;
	} else {
		/* libev would take these as regexes; they are almost surely typos. */
		if (looks_like_address(line, alen, &dotted) && (slash || dotted))
			return parse_fail(p, "invalid %s '%.*s' (bad address)",
					  slash ? "CIDR" : "IPv4 address", (int)n, line);
		return 0;
	}

	prefix = max;
	if (slash) {
		const char *d = slash + 1;
		size_t dn = n - alen - 1;
		bool digits = dn > 0 && dn <= 3;
		for (size_t i = 0; digits && i < dn; i++)
			digits = d[i] >= '0' && d[i] <= '9';
		if (!digits)
			return parse_fail(p, "invalid CIDR '%.*s' (prefix length is not a number)",
					  (int)n, line);
		prefix = 0;
		for (size_t i = 0; i < dn; i++)
			prefix = prefix * 10 + (unsigned)(d[i] - '0');
		if (prefix > max)
			return parse_fail(p, "invalid CIDR '%.*s' (prefix length over %u)", (int)n,
					  line, max);
	}

	if (!v6) {
		st->ipv4++;
		return add_v4(l, a, prefix) ? -ENOMEM : 1;
	}
	st->ipv6++;
	if (prefix >= 96 && ss_ip6_is_v4mapped(a))
		return add_v4(l, a + 12, prefix - 96) ? -ENOMEM : 1;
	return add_v6(l, a, prefix) ? -ENOMEM : 1;
}

/* ---- domain names ---- */

static int names_grow(ss_acl_t *acl)
{
	size_t nslots = acl->nslots ? acl->nslots * 2 : 64;
	ss_acl_slot_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < acl->nslots; i++) {
		ss_acl_slot_t *s = &acl->slots[i];
		if (s->len == 0)
			continue;
		size_t j = s->hash & (nslots - 1);
		while (slots[j].len)
			j = (j + 1) & (nslots - 1);
		slots[j] = *s;
	}
	free(acl->slots);
	acl->slots = slots;
	acl->nslots = nslots;
	return 0;
}

static int names_add(ss_acl_t *acl, const char *name, size_t len, unsigned flag)
{
	uint32_t h = SS_ACL_HASH_INIT;
	size_t j;

	for (size_t i = len; i-- > 0;)
		h = ss_acl_hash_step(h, (unsigned char)name[i]);
	if ((acl->nnames + 1) * 2 > acl->nslots && names_grow(acl))
		return -ENOMEM;
	for (j = h & (acl->nslots - 1); acl->slots[j].len; j = (j + 1) & (acl->nslots - 1)) {
		ss_acl_slot_t *s = &acl->slots[j];
		if (s->hash == h && s->len == len && memcmp(acl->names + s->off, name, len) == 0) {
			s->flags |= flag;
			return 0;
		}
	}
	if (acl->names_len + len > UINT32_MAX)
		return -ENOMEM;
	while (acl->names_len + len > acl->names_cap) {
		size_t ncap = acl->names_cap ? acl->names_cap * 2 : 4096;
		char *np = realloc(acl->names, ncap);
		if (!np)
			return -ENOMEM;
		acl->names = np;
		acl->names_cap = ncap;
	}
	memcpy(acl->names + acl->names_len, name, len);
	acl->slots[j] = (ss_acl_slot_t){
	    .hash = h, .off = (uint32_t)acl->names_len, .len = (uint16_t)len, .flags = flag};
	acl->names_len += len;
	acl->nnames++;
	return 0;
}

static int parse_domain(parse_ctx_t *p, const char *line, size_t n)
{
	bool subtree = n >= 2 && line[1] == '|';
	const char *d = line + (subtree ? 2 : 1);
	size_t dn = n - (size_t)(d - line);
	char name[SS_ACL_NAME_MAX];
	const char *why = NULL;

	if (dn > 0 && d[dn - 1] == '.')
		dn--;
	if (dn == 0)
		why = "empty name";
	else if (dn > SS_ACL_NAME_MAX)
		why = "name longer than 253 characters";
	for (size_t i = 0, label = 0; !why && i < dn; i++) {
		unsigned char c = (unsigned char)d[i];
		if (c == '.') {
			if (label == 0)
				why = "empty label";
			label = 0;
			name[i] = '.';
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			why = "character not allowed in a host name";
		else if (++label > 63)
			why = "label longer than 63 characters";
		name[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	if (why)
		return parse_fail(p, "invalid domain rule '%.*s' (%s)", (int)n, line, why);

	ss_acl_list_stats_t *st = list_stats(p);
	st->domains++;
	return names_add(p->acl, name, dn,
			 subtree ? SS_ACL_SUBTREE(p->list) : SS_ACL_EXACT(p->list));
}

/* ---- regular expressions ---- */

static int parse_regex(parse_ctx_t *p, const char *line, size_t n)
{
	ss_acl_list_t *l = &p->acl->lists[p->list];
	PCRE2_SIZE off;
	int code;
	pcre2_code *re;

	re = pcre2_compile((PCRE2_SPTR)line, n, 0, &code, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			snprintf((char *)msg, sizeof(msg), "error %d", code);
		return parse_fail(p, "invalid regular expression '%.*s': %s at offset %zu", (int)n,
				  line, (const char *)msg, (size_t)off);
	}
	/* Without JIT support the interpreter runs the same pattern. */
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	if (grow((void **)&l->re, &l->capre, l->nre, sizeof(*l->re))) {
		pcre2_code_free(re);
		return -ENOMEM;
	}
	l->re[l->nre++] = re;
	ss_acl_list_stats_t *st = list_stats(p);
	st->regexes++;
	return 0;
}

/* ---- lines ---- */

static bool is_section(const char *line, size_t n)
{
	if (n < 3 || line[0] != '[' || line[n - 1] != ']')
		return false;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = line[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int parse_section(parse_ctx_t *p, const char *line, size_t n)
{
	static const struct {
		const char *name;
		int list; /* -1: a mode header */
		ss_acl_decision_t mode;
	} sections[] = {
	    {"[proxy_all]", -1, SS_ACL_PROXY},
	    {"[accept_all]", -1, SS_ACL_PROXY},
	    {"[bypass_all]", -1, SS_ACL_BYPASS},
	    {"[reject_all]", -1, SS_ACL_BYPASS},
	    {"[bypass_list]", SS_ACL_LIST_BYPASS, 0},
	    {"[black_list]", SS_ACL_LIST_BYPASS, 0},
	    {"[proxy_list]", SS_ACL_LIST_PROXY, 0},
	    {"[white_list]", SS_ACL_LIST_PROXY, 0},
	    {"[outbound_block_list]", SS_ACL_LIST_BLOCK, 0},
	};

	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (strlen(sections[i].name) != n || memcmp(sections[i].name, line, n) != 0)
			continue;
		if (sections[i].list < 0)
			p->acl->mode = sections[i].mode;
		else
			p->list = sections[i].list;
		return 0;
	}
	return parse_fail(p, "unknown section '%.*s'", (int)n, line);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static int parse_line(parse_ctx_t *p, const char *line, size_t n)
{
	int rc;

	while (n > 0 && is_space(line[0])) {
		line++;
		n--;
	}
	while (n > 0 && is_space(line[n - 1]))
		n--;
	if (n == 0 || line[0] == '#')
		return 0;
	if (memchr(line, '\0', n))
		return parse_fail(p, "line contains a NUL byte");
	if (is_section(line, n))
		return parse_section(p, line, n);
	if (line[0] == '|')
		return parse_domain(p, line, n);
	rc = parse_prefix(p, line, n);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	return parse_regex(p, line, n);
}

/* A match block of its own, for the queries of one thread. */
static int acl_match_block(ss_acl_t *acl)
{
	/* One ovector pair is enough: only "did it match" is asked. */
	acl->md = pcre2_match_data_create(1, NULL);
	acl->mctx = pcre2_match_context_create(NULL);
	if (!acl->md || !acl->mctx)
		return -ENOMEM;
	pcre2_set_match_limit(acl->mctx, ACL_MATCH_LIMIT);
	return 0;
}

ss_acl_t *ss_acl_view(const ss_acl_t *acl)
{
	ss_acl_t *v = malloc(sizeof(*v));

	if (!v)
		return NULL;
	*v = *acl;
	v->view = true;
	if (acl_match_block(v) < 0) {
		ss_acl_free(v);
		return NULL;
	}
	return v;
}

void ss_acl_free(ss_acl_t *acl)
{
	if (!acl)
		return;
	for (int i = 0; i < SS_ACL_NLISTS && !acl->view; i++) {
		ss_acl_list_t *l = &acl->lists[i];
		free(l->v4);
		free(l->v6);
		for (size_t j = 0; j < l->nre; j++)
			pcre2_code_free(l->re[j]);
		free(l->re);
	}
	if (!acl->view) {
		free(acl->slots);
		free(acl->names);
	}
	pcre2_match_data_free(acl->md);
	pcre2_match_context_free(acl->mctx);
	free(acl);
}

int ss_acl_parse(ss_acl_t **out, const char *text, size_t len, const char *name, char *err,
		 size_t errlen)
{
	parse_ctx_t p = {
	    .name = name ? name : "acl", .list = SS_ACL_LIST_BYPASS, .err = err, .errlen = errlen};
	size_t pos = 0;
	int rc = -ENOMEM;

	*out = NULL;
	if (errlen > 0)
		err[0] = '\0';
	p.acl = calloc(1, sizeof(*p.acl));
	if (!p.acl)
		goto out;
	p.acl->mode = SS_ACL_PROXY;
	if (acl_match_block(p.acl) < 0)
		goto out;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		p.lineno++;
		rc = parse_line(&p, text + pos, end - pos);
		if (rc < 0)
			goto out;
		pos = end + 1;
	}
	for (int i = 0; i < SS_ACL_NLISTS; i++) {
		finish_v4(&p.acl->lists[i]);
		finish_v6(&p.acl->lists[i]);
	}
	*out = p.acl;
	p.acl = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM && errlen > 0)
		snprintf(err, errlen, "%s: out of memory", p.name);
	ss_acl_free(p.acl);
	return rc;
}

int ss_acl_load(ss_acl_t **out, const char *path, char *err, size_t errlen)
{
	FILE *f;
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f) {
		rc = -errno;
		goto fail;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;
			if (cap >= ACL_FILE_MAX) {
				rc = -EFBIG;
				goto fail;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				rc = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap = ncap;
		} else if (!buf) {
			buf = malloc(cap);
			if (!buf) {
				rc = -ENOMEM;
				goto fail;
			}
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0) {
			if (ferror(f)) {
				rc = -EIO;
				goto fail;
			}
			break;
		}
		if (len > ACL_FILE_MAX) {
			rc = -EFBIG;
			goto fail;
		}
	}
	fclose(f);
	rc = ss_acl_parse(out, buf ? buf : "", len, path, err, errlen);
	free(buf);
	return rc;
fail:
	if (errlen > 0)
		snprintf(err, errlen, "%s: %s", path,
			 rc == -EFBIG ? "file too large" : strerror(-rc));
	if (f)
		fclose(f);
	free(buf);
	return rc;
}
