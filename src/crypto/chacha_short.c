/* ChaCha20-Poly1305 for short messages: two ChaCha20 blocks (the one-time
 * Poly1305 key from block 0, the keystream from block 1) side by side, so
 * the compiler interleaves eight independent quarter-round chains (as fast
 * here as two blocks in AVX2 registers, whose single chain is latency
 * bound), and Poly1305 over at most five 16-byte blocks, in 64-bit C.
 *
 * Poly1305 keeps the accumulator in three limbs of 44, 44 and 42 bits, so
 * each limb product fits in 128 bits with room for the sums; products that
 * reach 2^130 fold back times 5 (times 20 for the ones landing at 2^132). */
#include "crypto/chacha_short.h"

#include <errno.h>
#include <string.h>

#include "crypto/primitives.h"

#define M44 0xfffffffffffULL
#define M42 0x3ffffffffffULL

static inline uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ld64(const uint8_t *p)
{
	return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
}

static inline void st32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void st64(uint8_t *p, uint64_t v)
{
	st32(p, (uint32_t)v);
	st32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t rotl(uint32_t v, int n)
{
	return (v << n) | (v >> (32 - n));
}

#define QR(a, b, c, d)                                                                             \
	do {                                                                                       \
		a += b;                                                                            \
		d = rotl(d ^ a, 16);                                                               \
		c += d;                                                                            \
		b = rotl(b ^ c, 12);                                                               \
		a += b;                                                                            \
		d = rotl(d ^ a, 8);                                                                \
		c += d;                                                                            \
		b = rotl(b ^ c, 7);                                                                \
	} while (0)

static void chacha_input(uint32_t in[16], const uint8_t key[32], const uint8_t nonce[12])
{
	in[0] = 0x61707865;
	in[1] = 0x3320646e;
	in[2] = 0x79622d32;
	in[3] = 0x6b206574;
	for (int i = 0; i < 8; i++)
		in[4 + i] = ld32(key + 4 * i);
	in[12] = 0;
	in[13] = ld32(nonce);
	in[14] = ld32(nonce + 4);
	in[15] = ld32(nonce + 8);
}

/* Blocks 0 and 1 for key and nonce, 128 bytes. */
static void chacha_two_blocks(const uint8_t key[32], const uint8_t nonce[12], uint8_t out[128])
{
	uint32_t in[16], x[16], y[16];

	chacha_input(in, key, nonce);
	memcpy(x, in, sizeof(x));
	memcpy(y, in, sizeof(y));
	y[12] = 1;
	for (int r = 0; r < 10; r++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(y[0], y[4], y[8], y[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(y[1], y[5], y[9], y[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(y[2], y[6], y[10], y[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(y[3], y[7], y[11], y[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(y[0], y[5], y[10], y[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(y[1], y[6], y[11], y[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(y[2], y[7], y[8], y[13]);
		QR(x[3], x[4], x[9], x[14]);
		QR(y[3], y[4], y[9], y[14]);
	}
	for (int i = 0; i < 16; i++) {
		st32(out + 4 * i, x[i] + in[i]);
		st32(out + 64 + 4 * i, y[i] + in[i] + (i == 12));
	}
	ss_wipe(in, sizeof(in));
	ss_wipe(x, sizeof(x));
	ss_wipe(y, sizeof(y));
}

typedef struct {
	uint64_t r0, r1, r2, s1, s2, h0, h1, h2;
} poly_t;

static void poly_init(poly_t *p, const uint8_t key[16])
{
	uint64_t t0 = ld64(key), t1 = ld64(key + 8);

	/* r, clamped as the algorithm requires, split 44/44/42. */
	p->r0 = t0 & 0xffc0fffffffULL;
	p->r1 = ((t0 >> 44) | (t1 << 20)) & 0xfffffc0ffffULL;
	p->r2 = (t1 >> 24) & 0x00ffffffc0fULL;
	p->s1 = p->r1 * 20;
	p->s2 = p->r2 * 20;
	p->h0 = p->h1 = p->h2 = 0;
}

/* One full 16-byte block (every block here is full: the AEAD pads). */
static void poly_block(poly_t *p, const uint8_t m[16])
{
	typedef unsigned __int128 u128;
	uint64_t t0 = ld64(m), t1 = ld64(m + 8), c;
	uint64_t h0 = p->h0 + (t0 & M44);
	uint64_t h1 = p->h1 + (((t0 >> 44) | (t1 << 20)) & M44);
	uint64_t h2 = p->h2 + ((t1 >> 24) & M42) + (1ULL << 40);
	u128 d0 = (u128)h0 * p->r0 + (u128)h1 * p->s2 + (u128)h2 * p->s1;
	u128 d1 = (u128)h0 * p->r1 + (u128)h1 * p->r0 + (u128)h2 * p->s2;
	u128 d2 = (u128)h0 * p->r2 + (u128)h1 * p->r1 + (u128)h2 * p->r0;

	c = (uint64_t)(d0 >> 44);
	h0 = (uint64_t)d0 & M44;
	d1 += c;
	c = (uint64_t)(d1 >> 44);
	h1 = (uint64_t)d1 & M44;
	d2 += c;
	c = (uint64_t)(d2 >> 42);
	h2 = (uint64_t)d2 & M42;
	h0 += c * 5;
	c = h0 >> 44;
	h0 &= M44;
	h1 += c;
	p->h0 = h0;
	p->h1 = h1;
	p->h2 = h2;
}

/* h mod 2^130 - 5, plus s, mod 2^128, little-endian. */
static void poly_finish(poly_t *p, const uint8_t s[16], uint8_t tag[16])
{
	uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2, g0, g1, g2, c, t0, t1;

	/* Carry fully (two rounds): h < 2^130. */
	for (int round = 0; round < 2; round++) {
		c = h1 >> 44;
		h1 &= M44;
		h2 += c;
		c = h2 >> 42;
		h2 &= M42;
		h0 += c * 5;
		c = h0 >> 44;
		h0 &= M44;
		h1 += c;
	}

	/* g = h + 5 - 2^130; take g where it does not go negative. */
	g0 = h0 + 5;
	c = g0 >> 44;
	g0 &= M44;
	g1 = h1 + c;
	c = g1 >> 44;
	g1 &= M44;
	g2 = h2 + c - (1ULL << 42);
	c = (g2 >> 63) - 1; /* all ones when h >= p */
	h0 = (h0 & ~c) | (g0 & c);
	h1 = (h1 & ~c) | (g1 & c);
	h2 = (h2 & ~c) | (g2 & c);

	t0 = ld64(s);
	t1 = ld64(s + 8);
	h0 += t0 & M44;
	c = h0 >> 44;
	h0 &= M44;
	h1 += (((t0 >> 44) | (t1 << 20)) & M44) + c;
	c = h1 >> 44;
	h1 &= M44;
	h2 += ((t1 >> 24) & M42) + c;
	h2 &= M42;
	st64(tag, h0 | (h1 << 44));
	st64(tag + 8, (h1 >> 20) | (h2 << 24));
	ss_wipe(p, sizeof(*p));
}

/* The tag over ct (len bytes): padded text, then the two lengths. */
static void mac(const uint8_t otk[32], const uint8_t *ct, size_t len, uint8_t tag[16])
{
	uint8_t blk[16];
	poly_t p;
	size_t off = 0;

	poly_init(&p, otk);
	for (; off + 16 <= len; off += 16)
		poly_block(&p, ct + off);
	if (off < len) {
		memset(blk, 0, sizeof(blk));
		memcpy(blk, ct + off, len - off);
		poly_block(&p, blk);
	}
	st64(blk, 0); /* no associated data */
	st64(blk + 8, len);
	poly_block(&p, blk);
	poly_finish(&p, otk + 16, tag);
}

int ss_chacha_short_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			 const uint8_t *in, size_t len)
{
	uint8_t ks[128];

	if (len > SS_CHACHA_SHORT_MAX)
		return -EINVAL;
	chacha_two_blocks(key, nonce, ks);
	for (size_t i = 0; i < len; i++)
		out[i] = in[i] ^ ks[64 + i];
	mac(ks, out, len, out + len);
	ss_wipe(ks, sizeof(ks));
	return 0;
}

int ss_chacha_short_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			 const uint8_t *in, size_t len)
{
	uint8_t ks[128], tag[16];
	size_t n;
	int ok;

	if (len < 16 || len > SS_CHACHA_SHORT_MAX + 16)
		return -EBADMSG;
	n = len - 16;
	chacha_two_blocks(key, nonce, ks);
	mac(ks, in, n, tag);
	ok = ss_ct_equal(tag, in + n, 16);
	for (size_t i = 0; i < n; i++)
		out[i] = ok ? in[i] ^ ks[64 + i] : 0;
	ss_wipe(ks, sizeof(ks));
	return ok ? 0 : -EBADMSG;
}

void ss_chacha_short_poly1305(const uint8_t key[32], const uint8_t *msg, size_t len,
			      uint8_t tag[16])
{
	poly_t p;

	poly_init(&p, key);
	for (size_t off = 0; off + 16 <= len; off += 16)
		poly_block(&p, msg + off);
	poly_finish(&p, key + 16, tag);
}
