/* ChaCha20-Poly1305 for short messages: two ChaCha20 blocks (the one-time
 * Poly1305 key from block 0, the keystream from block 1) side by side, so
 * the compiler interleaves eight independent quarter-round chains (as fast
 * here as two blocks in AVX2 registers, whose single chain is latency
 * bound), and Poly1305 over at most five 16-byte blocks (poly1305_44.h). */
#include "crypto/chacha_short.h"

#include <errno.h>
#include <string.h>

#include "crypto/poly1305_44.h"
#include "crypto/primitives.h"

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
		in[4 + i] = p44_ld32(key + 4 * i);
	in[12] = 0;
	in[13] = p44_ld32(nonce);
	in[14] = p44_ld32(nonce + 4);
	in[15] = p44_ld32(nonce + 8);
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
		p44_st32(out + 4 * i, x[i] + in[i]);
		p44_st32(out + 64 + 4 * i, y[i] + in[i] + (i == 12));
	}
	ss_wipe(in, sizeof(in));
	ss_wipe(x, sizeof(x));
	ss_wipe(y, sizeof(y));
}

/* The tag over ct (len bytes): padded text, then the two lengths. */
static void mac(const uint8_t otk[32], const uint8_t *ct, size_t len, uint8_t tag[16])
{
	p44_t p;

	p44_init(&p, otk);
	p44_aead_finish(&p, ct, 0, len, otk, tag);
}

int ss_chacha_short_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			 const uint8_t *in, size_t len)
{
	uint8_t ks[128];

	if (len > SS_CHACHA_SHORT_MAX) {
		ss_wipe(out, len + 16);
		return -EINVAL;
	}
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

	if (len < 16)
		return -EBADMSG;
	n = len - 16;
	if (n > SS_CHACHA_SHORT_MAX) {
		ss_wipe(out, n);
		return -EBADMSG;
	}
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
	p44_t p;

	p44_init(&p, key);
	for (size_t off = 0; off + 16 <= len; off += 16)
		p44_block(&p, msg + off);
	p44_finish(&p, key + 16, tag);
}
