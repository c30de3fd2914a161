/* SPDX-License-Identifier: MIT */
/* AES-GCM with VAES and VPCLMULQDQ on 512-bit registers.
 *
 * Counter mode: four counter blocks to a register, every round key
 * broadcast to all four lanes, eight registers (512 bytes) a step so that
 * AES's latency hides behind eight independent chains.
 *
 * GHASH: a block's bytes, reversed, read as a 128-bit integer N are the GCM
 * field element with its bit order reversed, so a carry-less product of two
 * such integers is the reversed field product, short by one factor of y
 * (the reversed x): N(ab) = N(a) N(b) y^-127 mod P'(y), with
 * P'(y) = y^128 + y^127 + y^126 + y^121 + 1. The powers of H are stored
 * times y, so each product needs only a Montgomery reduction by y^128: two
 * folds of 64 bits, each one carry-less multiply by 0xC2 << 56. A fold
 * multiplies sixteen blocks by H^16 .. H^1 (the running hash added to the
 * first) and reduces once; the last, shorter fold uses H^n .. H^1 and
 * masked loads, so one path covers every length of the tail. */
#include "crypto/gcm_vaes.h"

#include <errno.h>
#include <string.h>

#include "crypto/cpu.h"
#include "crypto/primitives.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define VGCM_TARGET                                                                                \
	__attribute__((target("aes,pclmul,ssse3,sse4.1,avx2,avx512f,avx512bw,avx512vl,vaes,"       \
			      "vpclmulqdq")))

/* The limit of GCM: 2^32 - 2 blocks. */
#define VGCM_MAX_LEN ((((uint64_t)1) << 36) - 32)

bool ss_vgcm_available(void)
{
	return ss_cpu_has(SS_VGCM_CPU);
}

VGCM_TARGET static inline __m128i byte_rev_mask(void)
{
	return _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

VGCM_TARGET static inline __m128i rev128(__m128i x)
{
	return _mm_shuffle_epi8(x, byte_rev_mask());
}

/* t1 y^128 + t0, times y^-128, mod P'. */
VGCM_TARGET static inline __m128i gf_reduce(__m128i t1, __m128i t0)
{
	const __m128i c = _mm_set_epi64x(0, (long long)0xC200000000000000ULL);
	__m128i w = _mm_xor_si128(_mm_shuffle_epi32(t0, 0x4e), _mm_clmulepi64_si128(t0, c, 0x00));

	return _mm_xor_si128(_mm_xor_si128(t1, _mm_shuffle_epi32(w, 0x4e)),
			     _mm_clmulepi64_si128(w, c, 0x00));
}

/* a b y^-128 mod P'. */
VGCM_TARGET static __m128i gf_mul(__m128i a, __m128i b)
{
	__m128i lo = _mm_clmulepi64_si128(a, b, 0x00);
	__m128i hi = _mm_clmulepi64_si128(a, b, 0x11);
	__m128i mid =
	    _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10));

	return gf_reduce(_mm_xor_si128(hi, _mm_srli_si128(mid, 8)),
			 _mm_xor_si128(lo, _mm_slli_si128(mid, 8)));
}

VGCM_TARGET static inline __m128i key_mix(__m128i k, __m128i t)
{
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	return _mm_xor_si128(k, t);
}

/* The next AES-128 round key, and the next two AES-256 ones. */
#define NEXT128(k, rcon) key_mix(k, _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k, rcon), 0xff))
#define NEXT256_EVEN(k2, k1, rcon)                                                                 \
	key_mix(k2, _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k1, rcon), 0xff))
#define NEXT256_ODD(k2, k1) key_mix(k2, _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k1, 0), 0xaa))

VGCM_TARGET static void expand128(__m128i rk[15], const uint8_t *key)
{
	rk[0] = _mm_loadu_si128((const __m128i *)key);
	rk[1] = NEXT128(rk[0], 0x01);
	rk[2] = NEXT128(rk[1], 0x02);
	rk[3] = NEXT128(rk[2], 0x04);
	rk[4] = NEXT128(rk[3], 0x08);
	rk[5] = NEXT128(rk[4], 0x10);
	rk[6] = NEXT128(rk[5], 0x20);
	rk[7] = NEXT128(rk[6], 0x40);
	rk[8] = NEXT128(rk[7], 0x80);
	rk[9] = NEXT128(rk[8], 0x1b);
	rk[10] = NEXT128(rk[9], 0x36);
}

VGCM_TARGET static void expand256(__m128i rk[15], const uint8_t *key)
{
	rk[0] = _mm_loadu_si128((const __m128i *)key);
	rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
	rk[2] = NEXT256_EVEN(rk[0], rk[1], 0x01);
	rk[3] = NEXT256_ODD(rk[1], rk[2]);
	rk[4] = NEXT256_EVEN(rk[2], rk[3], 0x02);
	rk[5] = NEXT256_ODD(rk[3], rk[4]);
	rk[6] = NEXT256_EVEN(rk[4], rk[5], 0x04);
	rk[7] = NEXT256_ODD(rk[5], rk[6]);
	rk[8] = NEXT256_EVEN(rk[6], rk[7], 0x08);
	rk[9] = NEXT256_ODD(rk[7], rk[8]);
	rk[10] = NEXT256_EVEN(rk[8], rk[9], 0x10);
	rk[11] = NEXT256_ODD(rk[9], rk[10]);
	rk[12] = NEXT256_EVEN(rk[10], rk[11], 0x20);
	rk[13] = NEXT256_ODD(rk[11], rk[12]);
	rk[14] = NEXT256_EVEN(rk[12], rk[13], 0x40);
}

VGCM_TARGET static __m128i aes_block(const ss_vgcm_t *g, __m128i x)
{
	const __m128i *rk = (const __m128i *)g->rk;

	x = _mm_xor_si128(x, _mm_load_si128(&rk[0]));
	for (unsigned r = 1; r < g->rounds; r++)
		x = _mm_aesenc_si128(x, _mm_load_si128(&rk[r]));
	return _mm_aesenclast_si128(x, _mm_load_si128(&rk[g->rounds]));
}

VGCM_TARGET static int vgcm_setkey(ss_vgcm_t *g, const uint8_t *key, size_t key_len)
{
	__m128i rk[15], h, p;
	uint64_t q[2];

	if (key_len == 16)
		expand128(rk, key);
	else
		expand256(rk, key);
	g->rounds = key_len == 16 ? 10 : 14;
	for (unsigned r = 0; r <= g->rounds; r++)
		_mm_store_si128((__m128i *)g->rk[r], rk[r]);

	/* H times y: shift left one bit, folding y^128 back as P' - y^128. */
	h = rev128(aes_block(g, _mm_setzero_si128()));
	_mm_storeu_si128((__m128i *)q, h);
	{
		uint64_t carry = q[1] >> 63;

		q[1] = (q[1] << 1) | (q[0] >> 63);
		q[0] <<= 1;
		q[1] ^= carry * 0xC200000000000000ULL;
		q[0] ^= carry;
	}
	h = _mm_loadu_si128((const __m128i *)q);
	p = h;
	_mm_store_si128((__m128i *)g->hpow[15], p);
	for (int i = 14; i >= 0; i--) {
		p = gf_mul(p, h);
		_mm_store_si128((__m128i *)g->hpow[i], p);
	}
	ss_wipe(rk, sizeof(rk));
	ss_wipe(q, sizeof(q));
	return 0;
}

VGCM_TARGET static inline __m128i xor_lanes(__m512i v)
{
	__m256i a = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));

	return _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
}

/* The bytes of register j (64 each) among the first n of a step. */
static inline __mmask64 step_mask(size_t n, unsigned j)
{
	size_t off = (size_t)j * 64;

	if (n <= off)
		return 0;
	return n - off >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - off)) - 1);
}

/* Folds nb blocks (1..16, byte order as on the wire, zero past the data)
 * into the hash y. */
VGCM_TARGET static inline __m128i ghash_step(const ss_vgcm_t *g, __m128i y, const __m512i d[4],
					     unsigned nb, __m512i rev)
{
	const uint8_t *pw = g->hpow[16 - nb];
	__m512i lo = _mm512_setzero_si512(), hi = lo, mid = lo;

	for (unsigned j = 0; j < 4 && 4 * j < nb; j++) {
		unsigned lanes = nb - 4 * j > 4 ? 4 : nb - 4 * j;
		__m512i h =
		    _mm512_maskz_loadu_epi64((__mmask8)((1u << (2 * lanes)) - 1), pw + 64 * j);
		__m512i x = _mm512_shuffle_epi8(d[j], rev);

		if (j == 0)
			x = _mm512_xor_si512(x, _mm512_inserti32x4(_mm512_setzero_si512(), y, 0));
		lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(x, h, 0x00));
		hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(x, h, 0x11));
		mid = _mm512_ternarylogic_epi64(mid, _mm512_clmulepi64_epi128(x, h, 0x01),
						_mm512_clmulepi64_epi128(x, h, 0x10), 0x96);
	}
	__m128i l = xor_lanes(lo), m = xor_lanes(mid), u = xor_lanes(hi);

	return gf_reduce(_mm_xor_si128(u, _mm_srli_si128(m, 8)),
			 _mm_xor_si128(l, _mm_slli_si128(m, 8)));
}

/* The keystream of nreg registers (four blocks each) from ctr on; returns
 * the counter after them. */
VGCM_TARGET static inline __attribute__((always_inline)) __m512i
keystream(__m512i *ks, __m512i ctr, const __m512i rk[15], unsigned nr, unsigned nreg)
{
	const __m512i rev = _mm512_broadcast_i32x4(byte_rev_mask());
	const __m512i four = _mm512_broadcast_i32x4(_mm_set_epi32(0, 0, 0, 4));

	for (unsigned j = 0; j < nreg; j++) {
		ks[j] = _mm512_xor_si512(_mm512_shuffle_epi8(ctr, rev), rk[0]);
		ctr = _mm512_add_epi32(ctr, four);
	}
	for (unsigned r = 1; r < nr; r++)
		for (unsigned j = 0; j < nreg; j++)
			ks[j] = _mm512_aesenc_epi128(ks[j], rk[r]);
	for (unsigned j = 0; j < nreg; j++)
		ks[j] = _mm512_aesenclast_epi128(ks[j], rk[nr]);
	return ctr;
}

/* Counter mode from block 2 on, hashing the ciphertext (out when sealing,
 * in when opening). Returns the tag. */
VGCM_TARGET static __m128i vgcm_crypt(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out,
				      const uint8_t *in, size_t len, bool seal)
{
	const __m512i rev = _mm512_broadcast_i32x4(byte_rev_mask());
	const unsigned nr = g->rounds;
	const size_t total = len;
	__m512i rk[15];
	uint8_t j0b[16];
	__m128i j0, ej0, y = _mm_setzero_si128();

	for (unsigned r = 0; r <= nr; r++)
		rk[r] = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)g->rk[r]));
	memcpy(j0b, nonce, 12);
	j0b[12] = 0;
	j0b[13] = 0;
	j0b[14] = 0;
	j0b[15] = 1;
	j0 = _mm_loadu_si128((const __m128i *)j0b);
	ej0 = aes_block(g, j0);
	/* Counters byte-reversed, so the 32-bit count is each lane's first
	 * dword and adds wrap as GCM's inc32 does. */
	__m512i ctr =
	    _mm512_add_epi32(_mm512_broadcast_i32x4(rev128(j0)),
			     _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1));

	/* Eight registers (512 bytes) a step: AES's latency hides behind
	 * eight independent chains; two GHASH folds of sixteen blocks. */
	while (len >= 512) {
		__m512i ks[8], d[8];

		ctr = keystream(ks, ctr, rk, nr, 8);
		for (unsigned j = 0; j < 8; j++) {
			__m512i x = _mm512_loadu_si512(in + 64 * j);
			__m512i c = _mm512_xor_si512(x, ks[j]);

			_mm512_storeu_si512(out + 64 * j, c);
			d[j] = seal ? c : x;
		}
		y = ghash_step(g, y, d, 16, rev);
		y = ghash_step(g, y, d + 4, 16, rev);
		in += 512;
		out += 512;
		len -= 512;
	}
	/* The rest, up to 256 bytes a step, through masks. */
	while (len > 0) {
		size_t n = len < 256 ? len : 256;
		unsigned nreg = (unsigned)((n + 63) / 64);
		__m512i ks[4], d[4];

		ctr = keystream(ks, ctr, rk, nr, nreg);
		for (unsigned j = 0; j < nreg; j++) {
			__mmask64 m = step_mask(n, j);
			__m512i x = _mm512_maskz_loadu_epi8(m, in + 64 * j);
			__m512i c = _mm512_xor_si512(x, ks[j]);

			_mm512_mask_storeu_epi8(out + 64 * j, m, c);
			d[j] = seal ? _mm512_maskz_mov_epi8(m, c) : x;
		}
		y = ghash_step(g, y, d, (unsigned)((n + 15) / 16), rev);
		in += n;
		out += n;
		len -= n;
	}
	/* The lengths block: no associated data, total * 8 bits of text. */
	y = _mm_xor_si128(y, _mm_set_epi64x(0, (long long)(total * 8)));
	y = gf_mul(y, _mm_load_si128((const __m128i *)g->hpow[15]));
	/* The round keys' copies the compiler keeps on the stack. */
	ss_wipe(rk, sizeof(rk));
	return _mm_xor_si128(ej0, rev128(y));
}

int ss_vgcm_setkey(ss_vgcm_t *g, const uint8_t *key, size_t key_len)
{
	/* Nothing of a previous key survives, even where the new one fails
	 * or schedules fewer rounds. */
	ss_vgcm_wipe(g);
	if (key_len != 16 && key_len != 24 && key_len != 32)
		return -EINVAL;
	if (key_len == 24 || !ss_vgcm_available())
		return -ENOTSUP;
	return vgcm_setkey(g, key, key_len);
}

int ss_vgcm_seal(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len)
{
	__m128i tag;

	if (!g->rounds || (uint64_t)len > VGCM_MAX_LEN) {
		ss_wipe(out, len + 16);
		return -EINVAL;
	}
	tag = vgcm_crypt(g, nonce, out, in, len, true);
	memcpy(out + len, &tag, 16);
	return 0;
}

int ss_vgcm_open(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len)
{
	uint8_t want[16], got[16];
	__m128i tag;
	size_t n;

	if (len < 16)
		return g->rounds ? -EBADMSG : -EINVAL;
	n = len - 16;
	if (!g->rounds || (uint64_t)n > VGCM_MAX_LEN) {
		ss_wipe(out, n);
		return g->rounds ? -EBADMSG : -EINVAL;
	}
	/* In place the tag follows the ciphertext and is not overwritten;
	 * copied first all the same, in case out differs from in. */
	memcpy(want, in + n, 16);
	tag = vgcm_crypt(g, nonce, out, in, n, false);
	memcpy(got, &tag, 16);
	if (!ss_ct_equal(got, want, 16)) {
		ss_wipe(out, n);
		return -EBADMSG;
	}
	return 0;
}

#else /* not x86-64 */

bool ss_vgcm_available(void)
{
	return false;
}

int ss_vgcm_setkey(ss_vgcm_t *g, const uint8_t *key, size_t key_len)
{
	(void)key;
	g->rounds = 0;
	return key_len == 16 || key_len == 24 || key_len == 32 ? -ENOTSUP : -EINVAL;
}

int ss_vgcm_seal(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len)
{
	(void)g, (void)nonce, (void)in;
	ss_wipe(out, len + 16);
	return -EINVAL;
}

int ss_vgcm_open(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len)
{
	(void)g, (void)nonce, (void)in;
	if (len > 16)
		ss_wipe(out, len - 16);
	return -EINVAL;
}

#endif

void ss_vgcm_wipe(ss_vgcm_t *g)
{
	ss_wipe(g, sizeof(*g));
}
