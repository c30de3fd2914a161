/* SPDX-License-Identifier: MIT */
/* Portable BLAKE3, written from the specification ("BLAKE3: one function,
 * fast everywhere"): one compression at a time, no SIMD, no allocation. */
#include "blake3.h"

#include <stdbool.h>
#include <string.h>

enum {
	FLAG_CHUNK_START = 1 << 0,
	FLAG_CHUNK_END = 1 << 1,
	FLAG_PARENT = 1 << 2,
	FLAG_ROOT = 1 << 3,
	FLAG_KEYED_HASH = 1 << 4,
	FLAG_DERIVE_KEY_CONTEXT = 1 << 5,
	FLAG_DERIVE_KEY_MATERIAL = 1 << 6,
};

#define BLOCKS_PER_CHUNK (SS_BLAKE3_CHUNK_LEN / SS_BLAKE3_BLOCK_LEN)

/* The spec takes SHA-256's initial hash value as its IV. */
static const uint32_t iv[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* Which message word each round reads in each position: row 0 is the
 * identity and every next row applies the spec's fixed permutation
 * (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8) to the row before.
 * A table rather than permuting the words in place each round, so that with
 * the rounds unrolled every index is a constant. */
static const uint8_t schedule[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},
    {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},
    {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

/* A compression's inputs other than the counter: what finalisation keeps of
 * the node that may become the root, since the root is compressed once per
 * 64 bytes of output with the output block's index as counter. */
typedef struct node {
	uint32_t cv[8];
	uint32_t m[16];
	uint64_t counter;
	uint32_t block_len;
	uint32_t flags;
} node_t;

static inline uint32_t rotr32(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static inline uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store_le32(uint8_t *p, uint32_t x)
{
	p[0] = (uint8_t)x;
	p[1] = (uint8_t)(x >> 8);
	p[2] = (uint8_t)(x >> 16);
	p[3] = (uint8_t)(x >> 24);
}

static inline void load_words(uint32_t *w, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w[i] = load_le32(p + 4 * i);
}

/* The quarter-round G on state words a, b, c, d with message words x, y. */
#define G(s, a, b, c, d, x, y)                                                                     \
	do {                                                                                       \
		s[a] += s[b] + (x);                                                                \
		s[d] = rotr32(s[d] ^ s[a], 16);                                                    \
		s[c] += s[d];                                                                      \
		s[b] = rotr32(s[b] ^ s[c], 12);                                                    \
		s[a] += s[b] + (y);                                                                \
		s[d] = rotr32(s[d] ^ s[a], 8);                                                     \
		s[c] += s[d];                                                                      \
		s[b] = rotr32(s[b] ^ s[c], 7);                                                     \
	} while (0)

/* One round: G on the four columns, then on the four diagonals. A macro
 * rather than a function so that r, and with it every message index, is a
 * constant the compiler folds. */
#define ROUND(s, m, r)                                                                             \
	do {                                                                                       \
		const uint8_t *o = schedule[r];                                                    \
		G(s, 0, 4, 8, 12, m[o[0]], m[o[1]]);                                               \
		G(s, 1, 5, 9, 13, m[o[2]], m[o[3]]);                                               \
		G(s, 2, 6, 10, 14, m[o[4]], m[o[5]]);                                              \
		G(s, 3, 7, 11, 15, m[o[6]], m[o[7]]);                                              \
		G(s, 0, 5, 10, 15, m[o[8]], m[o[9]]);                                              \
		G(s, 1, 6, 11, 12, m[o[10]], m[o[11]]);                                            \
		G(s, 2, 7, 8, 13, m[o[12]], m[o[13]]);                                             \
		G(s, 3, 4, 9, 14, m[o[14]], m[o[15]]);                                             \
	} while (0)

/* The seven rounds over the state built from the inputs; s is left unfolded.
 * The work is done on local copies: through the pointers, every store to the
 * state could alias a message word and force reloads, while locals whose
 * address never escapes can live in registers. */
static inline void rounds(uint32_t s[16], const uint32_t cv[8], const uint32_t m[16],
			  uint64_t counter, uint32_t block_len, uint32_t flags)
{
	uint32_t v[16], w[16];

	memcpy(w, m, sizeof(w));
	memcpy(v, cv, 8 * sizeof(uint32_t));
	memcpy(v + 8, iv, 4 * sizeof(uint32_t));
	v[12] = (uint32_t)counter;
	v[13] = (uint32_t)(counter >> 32);
	v[14] = block_len;
	v[15] = flags;
	ROUND(v, w, 0);
	ROUND(v, w, 1);
	ROUND(v, w, 2);
	ROUND(v, w, 3);
	ROUND(v, w, 4);
	ROUND(v, w, 5);
	ROUND(v, w, 6);
	memcpy(s, v, sizeof(v));
}

/* Compression truncated to the 8-word chaining value, written over cv. */
static void compress_cv(uint32_t cv[8], const uint32_t m[16], uint64_t counter, uint32_t block_len,
			uint32_t flags)
{
	uint32_t s[16];

	rounds(s, cv, m, counter, block_len, flags);
	for (int i = 0; i < 8; i++)
		cv[i] = s[i] ^ s[i + 8];
}

static void node_cv(const node_t *n, uint32_t out[8])
{
	memcpy(out, n->cv, sizeof(n->cv));
	compress_cv(out, n->m, n->counter, n->block_len, n->flags);
}

/* A parent node over two child chaining values. */
static void parent_node(node_t *n, const uint32_t left[8], const uint32_t right[8],
			const uint32_t key[8], uint32_t mode)
{
	memcpy(n->cv, key, sizeof(n->cv));
	memcpy(n->m, left, 8 * sizeof(uint32_t));
	memcpy(n->m + 8, right, 8 * sizeof(uint32_t));
	n->counter = 0;
	n->block_len = SS_BLAKE3_BLOCK_LEN;
	n->flags = mode | FLAG_PARENT;
}

static void chunk_reset(ss_blake3_t *h)
{
	memcpy(h->cv, h->key, sizeof(h->cv));
	h->block_len = 0;
	h->blocks_compressed = 0;
}

static uint32_t chunk_start_flag(const ss_blake3_t *h)
{
	return h->blocks_compressed == 0 ? FLAG_CHUNK_START : 0;
}

/* The current chunk is complete and input follows it, so it is not the root:
 * its chaining value goes onto the stack. A chunk count ending in k zero bits
 * completes k subtrees, each merged with its left sibling on the way. */
static void chunk_push(ss_blake3_t *h)
{
	uint32_t cv[8];
	uint64_t chunks = ++h->chunk_counter;
	node_t parent;

	memcpy(cv, h->cv, sizeof(cv));
	while ((chunks & 1) == 0) {
		parent_node(&parent, h->stack[--h->stack_len], cv, h->key, h->flags);
		node_cv(&parent, cv);
		chunks >>= 1;
	}
	memcpy(h->stack[h->stack_len++], cv, sizeof(cv));
	chunk_reset(h);
}

/* Compresses one full block that input is known to follow, so it is never
 * the root's block. */
static void chunk_absorb(ss_blake3_t *h, const uint8_t block[static SS_BLAKE3_BLOCK_LEN])
{
	uint32_t m[16];
	uint32_t flags = h->flags | chunk_start_flag(h);
	bool last = h->blocks_compressed == BLOCKS_PER_CHUNK - 1;

	if (last)
		flags |= FLAG_CHUNK_END;
	load_words(m, block, 16);
	compress_cv(h->cv, m, h->chunk_counter, SS_BLAKE3_BLOCK_LEN, flags);
	h->blocks_compressed++;
	if (last)
		chunk_push(h);
}

static void setup(ss_blake3_t *h, const uint32_t key[8], uint32_t mode)
{
	memcpy(h->key, key, sizeof(h->key));
	h->chunk_counter = 0;
	h->flags = (uint8_t)mode;
	h->stack_len = 0;
	chunk_reset(h);
}

void ss_blake3_init(ss_blake3_t *h)
{
	setup(h, iv, 0);
}

void ss_blake3_init_keyed(ss_blake3_t *h, const uint8_t key[static SS_BLAKE3_KEY_LEN])
{
	uint32_t k[8];

	load_words(k, key, 8);
	setup(h, k, FLAG_KEYED_HASH);
}

void ss_blake3_init_derive_key(ss_blake3_t *h, const char *context)
{
	uint8_t context_key[SS_BLAKE3_KEY_LEN];
	uint32_t k[8];

	setup(h, iv, FLAG_DERIVE_KEY_CONTEXT);
	ss_blake3_update(h, context, strlen(context));
	ss_blake3_final(h, context_key, sizeof(context_key));
	load_words(k, context_key, 8);
	setup(h, k, FLAG_DERIVE_KEY_MATERIAL);
}

void ss_blake3_update(ss_blake3_t *h, const void *data, size_t len)
{
	const uint8_t *p = data;

	/* The last block of the input must stay buffered until finalisation,
	 * which flags it: a block is compressed only once more bytes arrive. */
	while (len > 0) {
		if (h->block_len == SS_BLAKE3_BLOCK_LEN) {
			chunk_absorb(h, h->block);
			h->block_len = 0;
		}
		if (h->block_len == 0) {
			for (; len > SS_BLAKE3_BLOCK_LEN;
			     p += SS_BLAKE3_BLOCK_LEN, len -= SS_BLAKE3_BLOCK_LEN)
				chunk_absorb(h, p);
		}
		size_t n = SS_BLAKE3_BLOCK_LEN - h->block_len;
		if (n > len)
			n = len;
		memcpy(h->block + h->block_len, p, n);
		h->block_len += (uint8_t)n;
		p += n;
		len -= n;
	}
}

/* Through a volatile pointer so the compiler cannot drop a store to memory
 * that is not read afterwards. */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

void ss_blake3_final(const ss_blake3_t *h, uint8_t *out, size_t out_len)
{
	uint8_t block[SS_BLAKE3_BLOCK_LEN] = {0}, buf[SS_BLAKE3_BLOCK_LEN];
	uint32_t right[8], s[16];
	node_t n;

	/* The chunk being read ends the input (it is empty only when the whole
	 * input is), and closes every subtree on the stack from right to left. */
	memcpy(block, h->block, h->block_len);
	memcpy(n.cv, h->cv, sizeof(n.cv));
	load_words(n.m, block, 16);
	n.counter = h->chunk_counter;
	n.block_len = h->block_len;
	n.flags = h->flags | chunk_start_flag(h) | FLAG_CHUNK_END;
	for (size_t i = h->stack_len; i-- > 0;) {
		node_cv(&n, right);
		parent_node(&n, h->stack[i], right, h->key, h->flags);
	}

	for (uint64_t t = 0; out_len > 0; t++) {
		size_t take = out_len < sizeof(buf) ? out_len : sizeof(buf);

		rounds(s, n.cv, n.m, t, n.block_len, n.flags | FLAG_ROOT);
		for (int i = 0; i < 8; i++) {
			store_le32(buf + 4 * i, s[i] ^ s[i + 8]);
			store_le32(buf + 32 + 4 * i, s[i + 8] ^ n.cv[i]);
		}
		memcpy(out, buf, take);
		out += take;
		out_len -= take;
	}
	/* The last block is often all of a short secret input (a derive-key
	 * PSK || salt) and the output a key: drop the copies made here. */
	wipe_memset(block, 0, sizeof(block));
	wipe_memset(buf, 0, sizeof(buf));
	wipe_memset(&n, 0, sizeof(n));
	wipe_memset(s, 0, sizeof(s));
}

void ss_blake3_wipe(ss_blake3_t *h)
{
	wipe_memset(h, 0, sizeof(*h));
}

void ss_blake3_derive_key(const char *context, const uint8_t *material, size_t len, uint8_t *out,
			  size_t out_len)
{
	ss_blake3_t h;

	ss_blake3_init_derive_key(&h, context);
	ss_blake3_update(&h, material, len);
	ss_blake3_final(&h, out, out_len);
	ss_blake3_wipe(&h);
}
