#ifndef SS_CRYPTO_POLY1305_44_H
#define SS_CRYPTO_POLY1305_44_H

/* Poly1305 in 64-bit C for the short-message ChaCha20-Poly1305
 * (chacha_short.c). The accumulator keeps three limbs of 44, 44 and 42 bits, so each
 * limb product fits in 128 bits with room for the sums; products that reach
 * 2^130 fold back times 5 (times 20 for the ones landing at 2^132). */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/primitives.h"

#define P44_M44 0xfffffffffffULL
#define P44_M42 0x3ffffffffffULL

static inline uint32_t p44_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t p44_ld64(const uint8_t *p)
{
	return (uint64_t)p44_ld32(p) | (uint64_t)p44_ld32(p + 4) << 32;
}

static inline void p44_st32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void p44_st64(uint8_t *p, uint64_t v)
{
	p44_st32(p, (uint32_t)v);
	p44_st32(p + 4, (uint32_t)(v >> 32));
}

typedef struct {
	uint64_t r[3]; /* r, clamped */
	uint64_t h[3]; /* the accumulator, partly carried */
} p44_t;

static inline void p44_init(p44_t *p, const uint8_t key[16])
{
	uint64_t t0 = p44_ld64(key), t1 = p44_ld64(key + 8);

	/* r, clamped as the algorithm requires, split 44/44/42. */
	p->r[0] = t0 & 0xffc0fffffffULL;
	p->r[1] = ((t0 >> 44) | (t1 << 20)) & 0xfffffc0ffffULL;
	p->r[2] = (t1 >> 24) & 0x00ffffffc0fULL;
	p->h[0] = p->h[1] = p->h[2] = 0;
}

/* x = x * r mod 2^130 - 5, carried to limbs below 2^44 (2^44 + 2^10 for
 * the middle one) and 2^42. Inputs may be up to a few bits wider. */
static inline void p44_mul(uint64_t x[3], const uint64_t r[3])
{
	typedef unsigned __int128 u128;
	uint64_t s1 = r[1] * 20, s2 = r[2] * 20, c;
	u128 d0 = (u128)x[0] * r[0] + (u128)x[1] * s2 + (u128)x[2] * s1;
	u128 d1 = (u128)x[0] * r[1] + (u128)x[1] * r[0] + (u128)x[2] * s2;
	u128 d2 = (u128)x[0] * r[2] + (u128)x[1] * r[1] + (u128)x[2] * r[0];

	c = (uint64_t)(d0 >> 44);
	x[0] = (uint64_t)d0 & P44_M44;
	d1 += c;
	c = (uint64_t)(d1 >> 44);
	x[1] = (uint64_t)d1 & P44_M44;
	d2 += c;
	c = (uint64_t)(d2 >> 42);
	x[2] = (uint64_t)d2 & P44_M42;
	x[0] += c * 5;
	c = x[0] >> 44;
	x[0] &= P44_M44;
	x[1] += c;
}

/* Carries limbs a few bits over their width back to 44/44/42 bits (the
 * middle limb up to 2^44 + 2^10). */
static inline void p44_carry(uint64_t h[3])
{
	uint64_t c = h[0] >> 44;

	h[0] &= P44_M44;
	h[1] += c;
	c = h[1] >> 44;
	h[1] &= P44_M44;
	h[2] += c;
	c = h[2] >> 42;
	h[2] &= P44_M42;
	h[0] += c * 5;
	c = h[0] >> 44;
	h[0] &= P44_M44;
	h[1] += c;
}

/* One full 16-byte block (the AEAD pads the last one). */
static inline void p44_block(p44_t *p, const uint8_t m[16])
{
	uint64_t t0 = p44_ld64(m), t1 = p44_ld64(m + 8);

	p->h[0] += t0 & P44_M44;
	p->h[1] += ((t0 >> 44) | (t1 << 20)) & P44_M44;
	p->h[2] += ((t1 >> 24) & P44_M42) + (1ULL << 40);
	p44_mul(p->h, p->r);
}

/* h mod 2^130 - 5, plus s, mod 2^128, little-endian; wipes p. */
static inline void p44_finish(p44_t *p, const uint8_t s[16], uint8_t tag[16])
{
	uint64_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2], g0, g1, g2, c, t0, t1;

	/* Carry fully (two rounds): h < 2^130. */
	for (int round = 0; round < 2; round++) {
		c = h1 >> 44;
		h1 &= P44_M44;
		h2 += c;
		c = h2 >> 42;
		h2 &= P44_M42;
		h0 += c * 5;
		c = h0 >> 44;
		h0 &= P44_M44;
		h1 += c;
	}

	/* g = h + 5 - 2^130; take g where it does not go negative. */
	g0 = h0 + 5;
	c = g0 >> 44;
	g0 &= P44_M44;
	g1 = h1 + c;
	c = g1 >> 44;
	g1 &= P44_M44;
	g2 = h2 + c - (1ULL << 42);
	c = (g2 >> 63) - 1; /* all ones when h >= p */
	h0 = (h0 & ~c) | (g0 & c);
	h1 = (h1 & ~c) | (g1 & c);
	h2 = (h2 & ~c) | (g2 & c);

	t0 = p44_ld64(s);
	t1 = p44_ld64(s + 8);
	h0 += t0 & P44_M44;
	c = h0 >> 44;
	h0 &= P44_M44;
	h1 += (((t0 >> 44) | (t1 << 20)) & P44_M44) + c;
	c = h1 >> 44;
	h1 &= P44_M44;
	h2 += ((t1 >> 24) & P44_M42) + c;
	h2 &= P44_M42;
	p44_st64(tag, h0 | (h1 << 44));
	p44_st64(tag + 8, (h1 >> 20) | (h2 << 24));
	ss_wipe(p, sizeof(*p));
}

/* The AEAD's tag (no associated data) over len bytes of ct, of which the
 * first off (a multiple of 16) are already in p: the rest of the text
 * padded to a block, then the two lengths. */
static inline void p44_aead_finish(p44_t *p, const uint8_t *ct, size_t off, size_t len,
				   const uint8_t otk[32], uint8_t tag[16])
{
	uint8_t blk[16];

	for (; off + 16 <= len; off += 16)
		p44_block(p, ct + off);
	if (off < len) {
		memset(blk, 0, sizeof(blk));
		memcpy(blk, ct + off, len - off);
		p44_block(p, blk);
	}
	p44_st64(blk, 0); /* no associated data */
	p44_st64(blk + 8, len);
	p44_block(p, blk);
	p44_finish(p, otk + 16, tag);
}

#endif
