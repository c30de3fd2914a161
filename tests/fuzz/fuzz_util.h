/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_FUZZ_UTIL_H
#define SS_TESTS_FUZZ_UTIL_H

/* Shared by the libFuzzer targets: a reader that turns the fuzzer's bytes
 * into choices, a check that aborts (so libFuzzer keeps the input), and the
 * pieces the structure-aware codec targets have in common. Everything is
 * static inline: each target is its own executable. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/aead.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "proto/addr.h"
#include "util/result.h"

/* A failed invariant: say which, then abort so the input is saved. */
#define FZ_CHECK(cond)                                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__,       \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Before anything else in a target, libFuzzer's main included; the
 * targets' own set-up runs after it, as constructors of default priority. */
__attribute__((constructor(101))) static void fz_init(void)
{
	if (ss_crypto_global_init() != 0)
		abort();
}

/* The fuzzer's input read from the front; past its end every byte is 0, so
 * a short input is a valid one that chooses the first option everywhere. */
typedef struct fz {
	const uint8_t *p;
	size_t n;
} fz_t;

static inline uint8_t fz_u8(fz_t *f)
{
	uint8_t v = 0;

	if (f->n > 0) {
		v = *f->p++;
		f->n--;
	}
	return v;
}

static inline uint16_t fz_u16(fz_t *f)
{
	uint16_t hi = fz_u8(f);

	return (uint16_t)(hi << 8 | fz_u8(f));
}

static inline uint32_t fz_u32(fz_t *f)
{
	uint32_t hi = fz_u16(f);

	return hi << 16 | fz_u16(f);
}

static inline uint64_t fz_u64(fz_t *f)
{
	uint64_t hi = fz_u32(f);

	return hi << 32 | fz_u32(f);
}

static inline bool fz_bool(fz_t *f)
{
	return fz_u8(f) & 1;
}

/* A value in [lo, hi]. */
static inline size_t fz_range(fz_t *f, size_t lo, size_t hi)
{
	uint32_t v = hi - lo < 256 ? fz_u8(f) : hi - lo < 65536 ? fz_u16(f) : fz_u32(f);

	return lo + v % (hi - lo + 1);
}

/* n bytes to out; zeros past the input's end. */
static inline void fz_bytes(fz_t *f, void *out, size_t n)
{
	size_t k = f->n < n ? f->n : n;

	memcpy(out, f->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	f->p += k;
	f->n -= k;
}

/* Fills out with the rest of the input repeated, each pass offset by its
 * count so that long messages from short inputs are not periodic; a counter
 * when the input is used up. Takes nothing from f. */
static inline void fz_fill(const fz_t *f, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = f->n ? (uint8_t)(f->p[i % f->n] + i / f->n) : (uint8_t)i;
}

/* The SIP004 methods. */
#define FZ_N_AEAD 5
static const char *const fz_aead_names[FZ_N_AEAD] = {
    "aes-128-gcm",
    "aes-192-gcm",
    "aes-256-gcm",
    "chacha20-ietf-poly1305",
    "xchacha20-ietf-poly1305",
};

static inline const ss_method_t *fz_method(const char *name)
{
	const ss_method_t *m = NULL;

	if (ss_method_lookup(name, &m, NULL, 0) != 0)
		abort();
	return m;
}

/* What a structure-aware target does to the wire it sealed: nothing, one
 * bit flipped, or the wire cut short; each target's own ways to make it
 * wrong are numbered from FZ_OWN. */
enum { FZ_AS_SEALED, FZ_FLIP, FZ_CUT, FZ_OWN };

/* Flips a bit of wire[0..len) or cuts it, where the input says, for
 * FZ_FLIP and FZ_CUT (nothing otherwise). Returns the new length. */
static inline size_t fz_spoil(fz_t *f, int what, uint8_t *wire, size_t len)
{
	if (what == FZ_FLIP) {
		size_t at = fz_u32(f) % len;

		wire[at] ^= (uint8_t)(1u << fz_u8(f) % 8);
	} else if (what == FZ_CUT) {
		len = fz_u32(f) % len;
	}
	return len;
}

/* The fixed key number i of the raw targets, whose seeds are sealed with it
 * (SS_MAX_KEY_LEN bytes; a method uses the first key_len). */
static inline void fz_key(unsigned i, uint8_t *key)
{
	for (size_t j = 0; j < SS_MAX_KEY_LEN; j++)
		key[j] = (uint8_t)(0x5a ^ (i * 0x31 + j * 7));
}

/* The library backends, each a separate path through the codecs. */
static inline const ss_crypto_backend_t *fz_backend(unsigned i)
{
#ifdef SS_HAVE_OPENSSL
	if (i % 2)
		return &ss_crypto_openssl;
#endif
	(void)i;
	return &ss_crypto_sodium;
}

#define FZ_N_BACKENDS 2

/* A well-formed address (IPv4, IPv6 or a domain of 1-255 bytes without NUL)
 * chosen by the input, encoded into out (SS_ADDR_MAX_ENCODED bytes).
 * Returns the encoded length. */
static inline size_t fz_addr(fz_t *f, ss_addr_t *a, uint8_t *out)
{
	memset(a, 0, sizeof(*a));
	switch (fz_u8(f) % 3) {
	case 0:
		a->atyp = SS_ATYP_IPV4;
		fz_bytes(f, a->v4, sizeof(a->v4));
		break;
	case 1:
		a->atyp = SS_ATYP_IPV6;
		fz_bytes(f, a->v6, sizeof(a->v6));
		break;
	default:
		a->atyp = SS_ATYP_DOMAIN;
		a->domain_len = (uint8_t)fz_range(f, 1, 255);
		fz_bytes(f, a->domain, a->domain_len);
		for (size_t i = 0; i < a->domain_len; i++)
			if (a->domain[i] == '\0')
				a->domain[i] = 'a';
		a->domain[a->domain_len] = '\0';
	}
	a->port = fz_u16(f);
	return ss_addr_encode(a, out, SS_ADDR_MAX_ENCODED);
}

static inline bool fz_addr_eq(const ss_addr_t *a, const ss_addr_t *b)
{
	if (a->atyp != b->atyp || a->port != b->port)
		return false;
	switch (a->atyp) {
	case SS_ATYP_IPV4:
		return memcmp(a->v4, b->v4, 4) == 0;
	case SS_ATYP_IPV6:
		return memcmp(a->v6, b->v6, 16) == 0;
	default:
		return a->domain_len == b->domain_len &&
		       memcmp(a->domain, b->domain, a->domain_len + 1u) == 0;
	}
}

static inline bool fz_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- A stream decoder fed as a relay feeds it ---- */

/* One decode call: as ss_aead_dec and ss_2022_dec, over ctx. */
typedef int (*fz_dec_fn)(void *ctx, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
			 size_t max_spans, size_t *nspans);

#define FZ_MAX_READS 64

/* How the wire reaches the decoder: reads of these sizes (the last one takes
 * the rest), and at most max_spans pieces of plaintext per call. */
typedef struct fz_split {
	size_t reads[FZ_MAX_READS];
	size_t n_reads;
	size_t max_spans;
} fz_split_t;

/* The wire in one read. */
static inline void fz_split_whole(fz_split_t *s, size_t max_spans)
{
	s->n_reads = 0;
	s->max_spans = max_spans;
}

/* The raw targets' form: a read size byte (every read that long; 0: the
 * wire in one read) and then the most spans per call (1-8). */
static inline void fz_split_fixed(fz_t *f, fz_split_t *s)
{
	uint8_t size = fz_u8(f);

	s->max_spans = fz_range(f, 1, 8);
	s->n_reads = 0;
	if (size != 0)
		for (; s->n_reads < FZ_MAX_READS; s->n_reads++)
			s->reads[s->n_reads] = size;
}

/* Read sizes from the input (mostly small, sometimes large). */
static inline void fz_split_read(fz_t *f, fz_split_t *s)
{
	s->max_spans = fz_range(f, 1, 8);
	s->n_reads = fz_range(f, 0, FZ_MAX_READS);
	for (size_t i = 0; i < s->n_reads; i++)
		s->reads[i] = fz_bool(f) ? fz_range(f, 0, 64) : fz_range(f, 0, 70000);
}

typedef struct fz_decoded {
	int rc;          /* SS_OK once all was fed, or the SS_ERR that stopped it */
	size_t fed;      /* wire bytes handed to the decoder */
	size_t leftover; /* bytes presented but not consumed at the end */
	size_t out_len;  /* plaintext bytes reported */
} fz_decoded_t;

/* Feeds wire[0..len) to dec in the reads split describes, as the relay does:
 * the bytes a call did not consume are presented again, followed by the next
 * read, and a call that consumed or reported something is repeated before
 * reading more. Plaintext goes to out (cap bytes; more is an invariant
 * failure). scratch holds len bytes; wire is not modified. */
static inline fz_decoded_t fz_feed(fz_dec_fn dec, void *ctx, const uint8_t *wire, size_t len,
				   const fz_split_t *split, uint8_t *scratch, uint8_t *out,
				   size_t cap)
{
	fz_decoded_t d = {SS_OK, 0, 0, 0};
	size_t have = 0, r = 0;
	ss_span_t spans[8];

	FZ_CHECK(split->max_spans >= 1 && split->max_spans <= 8);
	while (d.fed < len) {
		size_t n = r < split->n_reads ? split->reads[r++] : len - d.fed;

		if (n > len - d.fed)
			n = len - d.fed;
		memcpy(scratch + have, wire + d.fed, n);
		have += n;
		d.fed += n;
		for (;;) {
			size_t used = 0, nspans = 0;

			d.rc = dec(ctx, scratch, have, &used, spans, split->max_spans, &nspans);
			FZ_CHECK(used <= have && nspans <= split->max_spans);
			for (size_t i = 0; i < nspans; i++) {
				/* Spans lie inside the consumed bytes, in order. */
				FZ_CHECK(spans[i].ptr >= scratch &&
					 spans[i].ptr + spans[i].len <= scratch + used);
				FZ_CHECK(d.out_len + spans[i].len <= cap);
				memcpy(out + d.out_len, spans[i].ptr, spans[i].len);
				d.out_len += spans[i].len;
			}
			memmove(scratch, scratch + used, have - used);
			have -= used;
			if (d.rc != SS_OK) {
				FZ_CHECK(d.rc == SS_ERR && nspans == 0);
				d.leftover = have;
				return d;
			}
			if (used == 0 && nspans == 0)
				break;
		}
	}
	d.leftover = have;
	return d;
}

/* ss_aead_dec as an fz_dec_fn, ctx the stream. */
static inline int fz_aead_dec(void *ctx, uint8_t *buf, size_t len, size_t *consumed,
			      ss_span_t *spans, size_t max_spans, size_t *nspans)
{
	return ss_aead_dec(ctx, buf, len, consumed, spans, max_spans, nspans);
}

#endif
