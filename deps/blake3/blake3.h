/* SPDX-License-Identifier: MIT */
#ifndef SS_DEPS_BLAKE3_H
#define SS_DEPS_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

/* BLAKE3: hash, keyed hash (MAC) and key derivation, with output of any
 * length. One API over two implementations chosen at build time: the system's
 * libblake3 when pkg-config finds it (SS_HAVE_LIBBLAKE3, blake3_system.c), and
 * otherwise our portable one (blake3.c).
 *
 * Ownership: the caller owns the ss_blake3_t (stack, struct member, pool slot)
 * and every buffer it passes; nothing is allocated and no pointer is kept past
 * the call that received it. A hasher holds no resources, so it needs no
 * teardown, but a keyed or derive-key hasher holds its key and the input's
 * state: wipe it with ss_blake3_wipe once done when either is secret.
 * A hasher is not thread-safe; distinct hashers are independent. */

#define SS_BLAKE3_KEY_LEN 32
#define SS_BLAKE3_OUT_LEN 32 /* the default output length */
#define SS_BLAKE3_BLOCK_LEN 64
#define SS_BLAKE3_CHUNK_LEN 1024
/* Enough subtree chaining values for 2^64 bytes of input: 2^54 chunks. */
#define SS_BLAKE3_MAX_DEPTH 54

#ifdef SS_HAVE_LIBBLAKE3
#include <blake3.h>

typedef struct ss_blake3 {
	blake3_hasher sys;
} ss_blake3_t;
#else
typedef struct ss_blake3 {
	uint32_t key[8];        /* IV, the key, or the context key: every chunk starts from it */
	uint32_t cv[8];         /* chaining value of the chunk being read */
	uint64_t chunk_counter; /* index of that chunk = chunks already pushed */
	uint8_t block[SS_BLAKE3_BLOCK_LEN]; /* input not yet compressed */
	uint8_t block_len;
	uint8_t blocks_compressed; /* in the current chunk */
	uint8_t flags;             /* the mode's domain flags */
	uint8_t stack_len;
	uint32_t stack[SS_BLAKE3_MAX_DEPTH][8]; /* roots of completed subtrees, oldest first */
} ss_blake3_t;
#endif

/* Start a plain hash. */
void ss_blake3_init(ss_blake3_t *h);

/* Start a keyed hash (a MAC or PRF). The key is copied into h. */
void ss_blake3_init_keyed(ss_blake3_t *h, const uint8_t key[static SS_BLAKE3_KEY_LEN]);

/* Start a key derivation with a NUL-terminated context string, which should
 * be a hard-coded, globally unique constant naming the application and
 * purpose. Feed the key material with ss_blake3_update. */
void ss_blake3_init_derive_key(ss_blake3_t *h, const char *context);

/* Absorb len bytes of data; data may be NULL when len is 0. Any split of the
 * input into updates gives the same result. */
void ss_blake3_update(ss_blake3_t *h, const void *data, size_t len);

/* Write out_len bytes (any length, 0 included) of output to out. h is not
 * changed: calling again gives the same bytes, and more input may follow. A
 * shorter output is a prefix of a longer one. */
void ss_blake3_final(const ss_blake3_t *h, uint8_t *out, size_t out_len);

/* Wipe h, key and buffered input included. h must be initialised again
 * before further use. */
void ss_blake3_wipe(ss_blake3_t *h);

/* One-shot key derivation: out_len bytes derived from the len bytes of
 * material under the NUL-terminated context. The internal state is wiped
 * before returning; the caller wipes material and out. */
void ss_blake3_derive_key(const char *context, const uint8_t *material, size_t len, uint8_t *out,
			  size_t out_len);

#endif
