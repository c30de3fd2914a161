#ifndef SS_CRYPTO_REPLAY_H
#define SS_CRYPTO_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Salt replay filter for AEAD: two Bloom filters used in rotation. A salt is
 * checked against both and added to the current one; when the current one
 * holds its capacity, the older one is cleared and becomes current. So the
 * last `capacity` to `2 * capacity` salts are always remembered. Memory is
 * taken once, at ss_replay_init. */
typedef struct ss_replay {
	uint8_t *bits[2];
	size_t nbits; /* per filter, a multiple of 64 */
	size_t count; /* salts in the current filter */
	size_t capacity;
	unsigned nhash;
	int current;
	bool older_used;      /* the other filter holds salts (after a rotation) */
	uint8_t hash_key[16]; /* random per filter set: peers cannot aim collisions */
} ss_replay_t;

/* capacity: salts per filter; fp_rate: target false positive rate of a check
 * (against both filters, each sized for half of it), in (0, 1).
 * 0, -EINVAL for a zero capacity or a rate out of range, or -ENOMEM.
 * ss_crypto_global_init must have run (the hash key is random). */
int ss_replay_init(ss_replay_t *r, size_t capacity, double fp_rate);
/* Safe on a zeroed ss_replay_t. */
void ss_replay_free(ss_replay_t *r);
/* true if salt was (probably) seen before; otherwise records it, false. */
bool ss_replay_check_add(ss_replay_t *r, const uint8_t *salt, size_t len);

#endif
