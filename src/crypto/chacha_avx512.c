/* ChaCha20-Poly1305 with AVX-512 (see chacha_avx512.h).
 *
 * ChaCha20: sixteen blocks run side by side, word i of every block in
 * register i (one block to a 32-bit lane), then a 16 x 16 transpose turns
 * them back into sixteen 64-byte blocks to XOR. Block 0 of the first batch
 * is the one-time Poly1305 key; its other fifteen blocks start the text.
 *
 * Poly1305: the 44/44/42-bit limbs of poly1305_44.h, eight blocks to a
 * register (one to a 64-bit lane), multiplied with the 52-bit multiply-add
 * instructions, whose low and high halves land 52 bits apart: a high half
 * moves up a limb shifted left by 8, and the top limb's high half (2^140)
 * folds back to the bottom times 5 * 2^10. Two sets of lanes take sixteen
 * blocks a step, each multiplied by r^16; at the end lane i of the first
 * set is multiplied by r^(16-i), of the second by r^(8-i), and the lanes are
 * summed. What is left over (fewer than sixteen blocks, the padding and the
 * lengths) goes through the 64-bit code.
 *
 * The small fixed loops are unrolled (the pragmas), so that their arrays of
 * registers stay in registers: a tenth faster at -O2. */
#include "crypto/chacha_avx512.h"
#include "crypto/cpu.h"

#include <errno.h>
#include <string.h>

#include "crypto/poly1305_44.h"
#include "crypto/primitives.h"

bool ss_chacha512_chunk_ok(ss_aead_alg_t alg)
{
	return alg == SS_AEAD_CHACHA20_POLY1305 && ss_chacha512_available();
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define CC_TARGET __attribute__((target("avx512f,avx512bw,avx512ifma")))
#define CC_INLINE static inline __attribute__((always_inline)) CC_TARGET

/* Blocks 1 .. 2^32 - 1 carry text. */
#define CC_MAX_LEN ((((uint64_t)1) << 38) - 64)

bool ss_chacha512_available(void)
{
	return ss_cpu_has(SS_CPU_AVX512F | SS_CPU_AVX512BW | SS_CPU_AVX512IFMA);
}

#define CC_QR(a, b, c, d)                                                                          \
	do {                                                                                       \
		a = _mm512_add_epi32(a, b);                                                        \
		d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 16);                                  \
		c = _mm512_add_epi32(c, d);                                                        \
		b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 12);                                  \
		a = _mm512_add_epi32(a, b);                                                        \
		d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 8);                                   \
		c = _mm512_add_epi32(c, d);                                                        \
		b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 7);                                   \
	} while (0)

/* The input words of sixteen blocks from counter 0 up: base[i] holds word
 * i of every block, base[12] counts 0..15. */
CC_INLINE void cc_setup(__m512i base[16], const uint8_t key[32], const uint8_t nonce[12])
{
	base[0] = _mm512_set1_epi32(0x61707865);
	base[1] = _mm512_set1_epi32(0x3320646e);
	base[2] = _mm512_set1_epi32(0x79622d32);
	base[3] = _mm512_set1_epi32(0x6b206574);
#pragma GCC unroll 16
	for (int i = 0; i < 8; i++)
		base[4 + i] = _mm512_set1_epi32((int)p44_ld32(key + 4 * i));
	base[12] = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#pragma GCC unroll 16
	for (int i = 0; i < 3; i++)
		base[13 + i] = _mm512_set1_epi32((int)p44_ld32(nonce + 4 * i));
}

/* Sixteen blocks of keystream for base, as o[b] = block b. */
CC_INLINE void cc_blocks(const __m512i base[16], __m512i o[16])
{
	__m512i x[16], t[4], u[16];

#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		x[i] = base[i];
	for (int r = 0; r < 10; r++) {
		CC_QR(x[0], x[4], x[8], x[12]);
		CC_QR(x[1], x[5], x[9], x[13]);
		CC_QR(x[2], x[6], x[10], x[14]);
		CC_QR(x[3], x[7], x[11], x[15]);
		CC_QR(x[0], x[5], x[10], x[15]);
		CC_QR(x[1], x[6], x[11], x[12]);
		CC_QR(x[2], x[7], x[8], x[13]);
		CC_QR(x[3], x[4], x[9], x[14]);
	}
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++) {
		x[i] = _mm512_add_epi32(x[i], base[i]);
	}
	/* Within each 128-bit lane k, words 4g..4g+3 of block j + 4k end up
	 * in u[4g + j]. */
#pragma GCC unroll 16
	for (int g = 0; g < 4; g++) {
		const __m512i *v = x + 4 * g;
		t[0] = _mm512_unpacklo_epi32(v[0], v[1]);
		t[1] = _mm512_unpackhi_epi32(v[0], v[1]);
		t[2] = _mm512_unpacklo_epi32(v[2], v[3]);
		t[3] = _mm512_unpackhi_epi32(v[2], v[3]);
		u[4 * g + 0] = _mm512_unpacklo_epi64(t[0], t[2]);
		u[4 * g + 1] = _mm512_unpackhi_epi64(t[0], t[2]);
		u[4 * g + 2] = _mm512_unpacklo_epi64(t[1], t[3]);
		u[4 * g + 3] = _mm512_unpackhi_epi64(t[1], t[3]);
	}
	/* Then the four quarters of each block come together. */
#pragma GCC unroll 16
	for (int j = 0; j < 4; j++) {
		__m512i a = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
		__m512i b = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
		__m512i c = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
		__m512i d = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
		o[j] = _mm512_shuffle_i32x4(a, b, 0x88);
		o[j + 8] = _mm512_shuffle_i32x4(a, b, 0xdd);
		o[j + 4] = _mm512_shuffle_i32x4(c, d, 0x88);
		o[j + 12] = _mm512_shuffle_i32x4(c, d, 0xdd);
	}
}

/* XORs blocks o[j0..15] over the first bytes of in (len at most); returns
 * how many bytes that was. */
CC_INLINE size_t cc_xor(const __m512i o[16], int j0, uint8_t *out, const uint8_t *in, size_t len)
{
	size_t done = 0;

	if (j0 == 0 && len >= 1024) {
#pragma GCC unroll 16
		for (int b = 0; b < 16; b++)
			_mm512_storeu_si512(
			    out + 64 * b, _mm512_xor_si512(o[b], _mm512_loadu_si512(in + 64 * b)));
		return 1024;
	}
	for (int b = j0; b < 16 && done < len; b++) {
		size_t n = len - done < 64 ? len - done : 64;
		__mmask64 m = n == 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
		_mm512_mask_storeu_epi8(
		    out + done, m, _mm512_xor_si512(o[b], _mm512_maskz_loadu_epi8(m, in + done)));
		done += n;
	}
	return done;
}

/* The text from block j0 of batch 0 (in o) on: out = in ^ stream. Each
 * further batch adds 16 to the counters of base. */
CC_TARGET static void cc_stream(__m512i base[16], __m512i o[16], int j0, uint8_t *out,
				const uint8_t *in, size_t len)
{
	size_t d = cc_xor(o, j0, out, in, len);

	while ((len -= d) > 0) {
		out += d;
		in += d;
		base[12] = _mm512_add_epi32(base[12], _mm512_set1_epi32(16));
		cc_blocks(base, o);
		d = cc_xor(o, 0, out, in, len);
	}
}

/* h = h * r (per lane) for limbs h, r and s = 20 r of the upper two. */
CC_INLINE void pv_mul(__m512i h[3], const __m512i r[5])
{
	const __m512i z = _mm512_setzero_si512();
	const __m512i m44 = _mm512_set1_epi64(P44_M44), m42 = _mm512_set1_epi64(P44_M42);
	/* d_k = sum of h_i r_j at limb k, low and high 52-bit halves. */
	__m512i d0l = _mm512_madd52lo_epu64(z, h[0], r[0]),
		d0h = _mm512_madd52hi_epu64(z, h[0], r[0]);
	__m512i d1l = _mm512_madd52lo_epu64(z, h[0], r[1]),
		d1h = _mm512_madd52hi_epu64(z, h[0], r[1]);
	__m512i d2l = _mm512_madd52lo_epu64(z, h[0], r[2]),
		d2h = _mm512_madd52hi_epu64(z, h[0], r[2]);
	d0l = _mm512_madd52lo_epu64(d0l, h[1], r[4]);
	d0h = _mm512_madd52hi_epu64(d0h, h[1], r[4]);
	d1l = _mm512_madd52lo_epu64(d1l, h[1], r[0]);
	d1h = _mm512_madd52hi_epu64(d1h, h[1], r[0]);
	d2l = _mm512_madd52lo_epu64(d2l, h[1], r[1]);
	d2h = _mm512_madd52hi_epu64(d2h, h[1], r[1]);
	d0l = _mm512_madd52lo_epu64(d0l, h[2], r[3]);
	d0h = _mm512_madd52hi_epu64(d0h, h[2], r[3]);
	d1l = _mm512_madd52lo_epu64(d1l, h[2], r[4]);
	d1h = _mm512_madd52hi_epu64(d1h, h[2], r[4]);
	d2l = _mm512_madd52lo_epu64(d2l, h[2], r[0]);
	d2h = _mm512_madd52hi_epu64(d2h, h[2], r[0]);
	/* High halves sit 52 bits up: 8 bits into the next limb; the top
	 * one's 2^140 is 2^10 * 2^130, which is 5 * 2^10. */
	__m512i t0 = _mm512_add_epi64(
	    d0l, _mm512_add_epi64(_mm512_slli_epi64(d2h, 10), _mm512_slli_epi64(d2h, 12)));
	__m512i t1 = _mm512_add_epi64(d1l, _mm512_slli_epi64(d0h, 8));
	__m512i t2 = _mm512_add_epi64(d2l, _mm512_slli_epi64(d1h, 8));
	__m512i c = _mm512_srli_epi64(t0, 44);
	t0 = _mm512_and_si512(t0, m44);
	t1 = _mm512_add_epi64(t1, c);
	c = _mm512_srli_epi64(t1, 44);
	t1 = _mm512_and_si512(t1, m44);
	t2 = _mm512_add_epi64(t2, c);
	c = _mm512_srli_epi64(t2, 42);
	t2 = _mm512_and_si512(t2, m42);
	t0 = _mm512_add_epi64(t0, _mm512_add_epi64(c, _mm512_slli_epi64(c, 2)));
	c = _mm512_srli_epi64(t0, 44);
	h[0] = _mm512_and_si512(t0, m44);
	h[1] = _mm512_add_epi64(t1, c);
	h[2] = t2;
}

/* h += the limbs of the eight blocks at p, block i in lane i. */
CC_INLINE void pv_add_blocks(__m512i h[3], const uint8_t *p)
{
	const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
	const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
	const __m512i m44 = _mm512_set1_epi64(P44_M44);
	__m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
	__m512i lo = _mm512_permutex2var_epi64(a, even, b);
	__m512i hi = _mm512_permutex2var_epi64(a, odd, b);

	h[0] = _mm512_add_epi64(h[0], _mm512_and_si512(lo, m44));
	h[1] = _mm512_add_epi64(
	    h[1], _mm512_and_si512(
		      _mm512_or_si512(_mm512_srli_epi64(lo, 44), _mm512_slli_epi64(hi, 20)), m44));
	h[2] = _mm512_add_epi64(
	    h[2], _mm512_or_si512(_mm512_srli_epi64(hi, 24), _mm512_set1_epi64(1ULL << 40)));
}

/* r[] for pv_mul from limbs set per lane. */
CC_INLINE void pv_key(__m512i r[5], __m512i r0, __m512i r1, __m512i r2)
{
	r[0] = r0;
	r[1] = r1;
	r[2] = r2;
	r[3] = _mm512_add_epi64(_mm512_slli_epi64(r1, 4), _mm512_slli_epi64(r1, 2));
	r[4] = _mm512_add_epi64(_mm512_slli_epi64(r2, 4), _mm512_slli_epi64(r2, 2));
}

/* Lane i gets limb l of r^(top - i). */
CC_INLINE __m512i pv_powers(uint64_t pw[17][3], int top, int l)
{
	return _mm512_setr_epi64((long long)pw[top][l], (long long)pw[top - 1][l],
				 (long long)pw[top - 2][l], (long long)pw[top - 3][l],
				 (long long)pw[top - 4][l], (long long)pw[top - 5][l],
				 (long long)pw[top - 6][l], (long long)pw[top - 7][l]);
}

/* The first n blocks of m (n a multiple of 16, at least 32) into p, whose
 * accumulator is zero. */
CC_TARGET static void pv_blocks(p44_t *p, const uint8_t *m, size_t n)
{
	uint64_t pw[17][3];
	__m512i r16[5], r[5], a[3], b[3];

	/* r^k = r^(k - h) * r^h with h the highest power of two below k: four
	 * rounds of independent products instead of a chain of fifteen. */
	memcpy(pw[1], p->r, sizeof(pw[1]));
	for (int h = 1; h < 16; h *= 2) {
		for (int k = h + 1; k <= 2 * h; k++) {
			memcpy(pw[k], pw[k - h], sizeof(pw[k]));
			p44_mul(pw[k], pw[h]);
		}
	}
	pv_key(r16, _mm512_set1_epi64((long long)pw[16][0]),
	       _mm512_set1_epi64((long long)pw[16][1]), _mm512_set1_epi64((long long)pw[16][2]));
	a[0] = a[1] = a[2] = b[0] = b[1] = b[2] = _mm512_setzero_si512();
	pv_add_blocks(a, m);
	pv_add_blocks(b, m + 128);
	for (size_t i = 16; i < n; i += 16) {
		pv_mul(a, r16);
		pv_mul(b, r16);
		pv_add_blocks(a, m + 16 * i);
		pv_add_blocks(b, m + 16 * i + 128);
	}
	pv_key(r, pv_powers(pw, 16, 0), pv_powers(pw, 16, 1), pv_powers(pw, 16, 2));
	pv_mul(a, r);
	pv_key(r, pv_powers(pw, 8, 0), pv_powers(pw, 8, 1), pv_powers(pw, 8, 2));
	pv_mul(b, r);
	/* Eight lanes of limbs below 2^45 sum well within 64 bits. */
	for (int l = 0; l < 3; l++)
		p->h[l] = (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(a[l], b[l]));
	p44_carry(p->h);
	ss_wipe(pw, sizeof(pw));
}

/* The AEAD tag over len bytes of ct with the one-time key otk. */
static void cc_mac(const uint8_t otk[32], const uint8_t *ct, size_t len, uint8_t tag[16])
{
	size_t nb = len / 16, off = 0;
	p44_t p;

	p44_init(&p, otk);
	if (nb >= 32) {
		nb &= ~(size_t)15;
		pv_blocks(&p, ct, nb);
		off = 16 * nb;
	}
	p44_aead_finish(&p, ct, off, len, otk, tag);
}

/* Batch 0 for key and nonce: base set up, o holding its blocks, otk the
 * first 32 bytes of block 0. */
CC_TARGET static void cc_start(__m512i base[16], __m512i o[16], const uint8_t key[32],
			       const uint8_t nonce[12], uint8_t otk[64])
{
	cc_setup(base, key, nonce);
	cc_blocks(base, o);
	_mm512_storeu_si512(otk, o[0]);
}

CC_TARGET static void cc_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			      const uint8_t *in, size_t len)
{
	__m512i base[16], o[16];
	uint8_t otk[64];

	cc_start(base, o, key, nonce, otk);
	cc_stream(base, o, 1, out, in, len);
	cc_mac(otk, out, len, out + len);
	ss_wipe(base, sizeof(base));
	ss_wipe(o, sizeof(o));
	ss_wipe(otk, sizeof(otk));
}

/* The tag is checked first, so nothing is decrypted for a forgery. */
CC_TARGET static int cc_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			     const uint8_t *in, size_t n)
{
	__m512i base[16], o[16];
	uint8_t otk[64], tag[16];
	int ok;

	cc_start(base, o, key, nonce, otk);
	cc_mac(otk, in, n, tag);
	ok = ss_ct_equal(tag, in + n, 16);
	if (ok)
		cc_stream(base, o, 1, out, in, n);
	else
		ss_wipe(out, n);
	ss_wipe(base, sizeof(base));
	ss_wipe(o, sizeof(o));
	ss_wipe(otk, sizeof(otk));
	ss_wipe(tag, sizeof(tag));
	return ok ? 0 : -EBADMSG;
}

int ss_chacha512_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len)
{
	if (!ss_chacha512_available())
		return -ENOTSUP;
	if ((uint64_t)len > CC_MAX_LEN)
		return -EINVAL;
	cc_seal(key, nonce, out, in, len);
	return 0;
}

int ss_chacha512_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len)
{
	if (!ss_chacha512_available())
		return -ENOTSUP;
	if (len < 16)
		return -EBADMSG;
	if ((uint64_t)(len - 16) > CC_MAX_LEN)
		return -EINVAL;
	return cc_open(key, nonce, out, in, len - 16);
}

/* Batch 0 of a SIP004 chunk: blocks 0 and 1 of n1 (the length's one-time
 * key and keystream), then blocks 0..13 of n2 (the payload's key and first
 * text). base is left set for the payload's next batch. */
CC_TARGET static void cc_start_pair(__m512i base[16], __m512i o[16], const uint8_t key[32],
				    const uint8_t n1[12], const uint8_t n2[12])
{
	const __mmask16 first = 0x3;

	cc_setup(base, key, n2);
	base[12] = _mm512_setr_epi32(0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13);
#pragma GCC unroll 16
	for (int i = 0; i < 3; i++)
		base[13 + i] =
		    _mm512_mask_set1_epi32(base[13 + i], first, (int)p44_ld32(n1 + 4 * i));
	cc_blocks(base, o);
	/* Counters 14.. of n2 next: cc_stream adds 16. */
#pragma GCC unroll 16
	for (int i = 0; i < 3; i++)
		base[13 + i] = _mm512_set1_epi32((int)p44_ld32(n2 + 4 * i));
	base[12] = _mm512_sub_epi32(
	    _mm512_setr_epi32(14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29),
	    _mm512_set1_epi32(16));
}

CC_TARGET static void cc_seal_chunk(const uint8_t key[32], const uint8_t n1[12],
				    const uint8_t n2[12], uint8_t *chunk, size_t n)
{
	__m512i base[16], o[16];
	uint8_t ks[3][64], *payload = chunk + 18;

	cc_start_pair(base, o, key, n1, n2);
	_mm512_storeu_si512(ks[0], o[0]);
	_mm512_storeu_si512(ks[1], o[1]);
	_mm512_storeu_si512(ks[2], o[2]);
	chunk[0] ^= ks[1][0];
	chunk[1] ^= ks[1][1];
	cc_mac(ks[0], chunk, 2, chunk + 2);
	cc_stream(base, o, 3, payload, payload, n);
	cc_mac(ks[2], payload, n, payload + n);
	ss_wipe(base, sizeof(base));
	ss_wipe(o, sizeof(o));
	ss_wipe(ks, sizeof(ks));
}

CC_TARGET static int cc_open_chunk(const uint8_t key[32], const uint8_t n1[12],
				   const uint8_t n2[12], uint8_t *chunk, size_t avail, size_t max,
				   size_t *plen)
{
	__m512i base[16], o[16];
	uint8_t ks[3][64], tag[16], *payload = chunk + 18;
	int rc = -EBADMSG;

	cc_start_pair(base, o, key, n1, n2);
	_mm512_storeu_si512(ks[0], o[0]);
	_mm512_storeu_si512(ks[1], o[1]);
	_mm512_storeu_si512(ks[2], o[2]);
	cc_mac(ks[0], chunk, 2, tag);
	if (!ss_ct_equal(tag, chunk + 2, 16))
		goto out;
	chunk[0] ^= ks[1][0];
	chunk[1] ^= ks[1][1];
	*plen = (size_t)chunk[0] << 8 | chunk[1];
	if (*plen == 0 || *plen > max)
		goto out;
	rc = 0;
	if (avail - 18 < *plen + 16)
		goto out; /* the payload is not all here yet */
	cc_mac(ks[2], payload, *plen, tag);
	if (!ss_ct_equal(tag, payload + *plen, 16)) {
		rc = -EBADMSG;
		goto out;
	}
	cc_stream(base, o, 3, payload, payload, *plen);
	rc = 1;
out:
	ss_wipe(base, sizeof(base));
	ss_wipe(o, sizeof(o));
	ss_wipe(ks, sizeof(ks));
	ss_wipe(tag, sizeof(tag));
	return rc;
}

int ss_chacha512_seal_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t n)
{
	if (!ss_chacha512_available())
		return -ENOTSUP;
	cc_seal_chunk(key, n1, n2, chunk, n);
	return 0;
}

int ss_chacha512_open_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t avail, size_t max, size_t *plen)
{
	if (!ss_chacha512_available())
		return -ENOTSUP;
	if (avail < 18)
		return -EINVAL;
	return cc_open_chunk(key, n1, n2, chunk, avail, max, plen);
}

#else /* not x86-64 */

bool ss_chacha512_available(void)
{
	return false;
}

int ss_chacha512_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len)
{
	(void)key;
	(void)nonce;
	(void)out;
	(void)in;
	(void)len;
	return -ENOTSUP;
}

int ss_chacha512_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len)
{
	(void)key;
	(void)nonce;
	(void)out;
	(void)in;
	(void)len;
	return -ENOTSUP;
}

int ss_chacha512_seal_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t n)
{
	(void)key;
	(void)n1;
	(void)n2;
	(void)chunk;
	(void)n;
	return -ENOTSUP;
}

int ss_chacha512_open_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t avail, size_t max, size_t *plen)
{
	(void)key;
	(void)n1;
	(void)n2;
	(void)chunk;
	(void)avail;
	(void)max;
	(void)plen;
	return -ENOTSUP;
}

#endif
