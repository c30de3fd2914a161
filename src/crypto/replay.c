#include "crypto/replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/primitives.h"

#define MIN_BITS 1024
#define MAX_HASH 64

/* e^-x for x >= 0 as (1 - x/2^20)^(2^20), close enough for sizing and
 * without libm. */
static double exp_neg(double x)
{
	double y = 1.0 - x / 1048576.0;

	for (int i = 0; i < 20; i++)
		y *= y;
	return y;
}

/* False positive rate of n entries in m bits with k hashes. */
static double bloom_rate(size_t n, size_t m, unsigned k)
{
	double q = 1.0 - exp_neg((double)k * (double)n / (double)m), r = 1.0;

	for (unsigned i = 0; i < k; i++)
		r *= q;
	return r;
}

/* Maps a 64-bit hash onto [0, n) by multiply-shift, which needs no power of
 * two and no division. */
static inline uint64_t reduce(uint64_t h, uint64_t n)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)h * n) >> 64);
#else
	/* n <= 2^32 here (checked at init). */
	return ((h >> 32) * n) >> 32;
#endif
}

/* Each index goes through a full 64-bit mix: with multiply-shift reduction
 * the index is taken from the top bits, and a plain h1 + i * h2 sequence
 * whose h2 lies near a simple fraction of 2^64 would put the k indices on a
 * handful of bits. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

int ss_replay_init(ss_replay_t *r, size_t capacity, double fp_rate)
{
	double bits, q = 1.0;
	unsigned k = 0;
	size_t nbits;

	memset(r, 0, sizeof(*r));
	if (capacity == 0 || !(fp_rate > 0.0 && fp_rate < 1.0))
		return -EINVAL;

	/* Bloom filter: with k = log2(1/p) hashes (rounded up) and
	 * m = n k / ln 2 bits the rate is 2^-k <= p, about the memory
	 * shadowsocks-libev spends for the same n and p. Each hash is a cache
	 * miss, so then take the fewest hashes that still meet the rate in
	 * those m bits. */
	fp_rate /= 2; /* a salt is checked against both filters */
	while (q > fp_rate && k < MAX_HASH) {
		q /= 2;
		k++;
	}
	bits = (double)capacity * k * 1.4426950408889634; /* 1 / ln 2 */
	if (bits > (double)(SIZE_MAX / 2))
		return -ENOMEM;
#ifndef __SIZEOF_INT128__
	if (bits > 4294967296.0)
		return -ENOMEM;
#endif
	nbits = (size_t)bits + 1;
	nbits = nbits < MIN_BITS ? MIN_BITS : (nbits + 63) / 64 * 64;
	for (unsigned j = 1; j < k; j++) {
		if (bloom_rate(capacity, nbits, j) <= fp_rate) {
			k = j;
			break;
		}
	}
	r->nhash = k;
	r->nbits = nbits;
	r->capacity = capacity;

	/* calloc of a large block maps zero pages: only touched ones become
	 * resident. */
	r->bits[0] = calloc(1, nbits / 8);
	r->bits[1] = calloc(1, nbits / 8);
	if (!r->bits[0] || !r->bits[1]) {
		ss_replay_free(r);
		return -ENOMEM;
	}
	ss_random_bytes(r->hash_key, sizeof(r->hash_key));
	return 0;
}

void ss_replay_free(ss_replay_t *r)
{
	free(r->bits[0]);
	free(r->bits[1]);
	ss_wipe(r, sizeof(*r));
}

static bool filter_has(const ss_replay_t *r, const uint8_t *bits, uint64_t h1, uint64_t h2)
{
	for (unsigned i = 0; i < r->nhash; i++) {
		uint64_t b = reduce(mix64(h1 + i * h2), r->nbits);

		if (!(bits[b >> 3] & (1u << (b & 7))))
			return false;
	}
	return true;
}

bool ss_replay_check_add(ss_replay_t *r, const uint8_t *salt, size_t len)
{
	/* A keyed hash, so a peer cannot pick salts that collide in the
	 * filter; double hashing (h1 + i * h2) gives the nhash indices. */
	uint8_t h[crypto_shorthash_siphashx24_BYTES];
	uint64_t h1, h2;
	uint8_t *cur;

	crypto_shorthash_siphashx24(h, salt, len, r->hash_key);
	memcpy(&h1, h, 8);
	memcpy(&h2, h + 8, 8);
	h2 |= 1; /* never 0, which would give one index k times */

	/* The older filter is read only once it holds something: reading its
	 * untouched pages would make them resident for nothing. */
	if (filter_has(r, r->bits[r->current], h1, h2) ||
	    (r->older_used && filter_has(r, r->bits[1 - r->current], h1, h2)))
		return true;

	if (r->count >= r->capacity) {
		r->older_used = true;
		r->current = 1 - r->current;
		memset(r->bits[r->current], 0, r->nbits / 8);
		r->count = 0;
	}
	cur = r->bits[r->current];
	for (unsigned i = 0; i < r->nhash; i++) {
		uint64_t b = reduce(mix64(h1 + i * h2), r->nbits);

		cur[b >> 3] |= (uint8_t)(1u << (b & 7));
	}
	r->count++;
	return false;
}
