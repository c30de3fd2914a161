/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_SALTPOOL_H
#define SS_CRYPTO_SALTPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Salt pools: exact sets of the salts a server has seen, never reporting one
 * it has not (no false positives).
 * - Timed (ss_saltpool_init), for Shadowsocks 2022 (SIP022 section 3.1.5):
 *   the request salts of the last `ttl` seconds. When every entry is younger
 *   than ttl the pool is full and refuses new salts rather than forget one
 *   early.
 * - First in, first out (ss_saltpool_init_fifo), for SIP004 replay
 *   protection: the last `capacity` salts; a new one pushes the oldest out.
 *
 * Salts sit in a ring in arrival order, so expiry pops the oldest; an open
 * addressing table (linear probing, keyed SipHash, at most half full) finds
 * them. Both are reserved at init and only touched as they fill: the ring
 * fills in order, and the table uses a prefix of its reservation that
 * doubles (rebuilt from the ring) as the count grows, so a pool holding n
 * salts has about 48 n + 8 n bytes resident whatever its capacity. Nothing
 * is allocated per salt. */

#define SS_SALTPOOL_MAX_SALT 32

typedef struct ss_saltpool_entry {
	uint8_t salt[SS_SALTPOOL_MAX_SALT];
	uint64_t time; /* when it was added */
	uint32_t hash; /* low bits pick its home slot */
	uint8_t len;
} ss_saltpool_entry_t;

typedef struct ss_saltpool {
	ss_saltpool_entry_t *ring; /* capacity entries, the oldest at head */
	uint32_t *slots;           /* ring index + 1, or 0 for an empty slot */
	size_t capacity;
	size_t head;
	size_t count;
	size_t mask;     /* slots in use - 1: a power of two, at least 2 * count */
	size_t max_mask; /* slots reserved - 1: a power of two >= 2 * capacity */
	uint64_t ttl;
	bool fifo;            /* full: push the oldest out instead of refusing */
	uint8_t hash_key[16]; /* random: peers cannot aim collisions */
	bool shared;          /* workers on several threads check it: under lock */
	pthread_mutex_t lock;
	atomic_uint refs; /* ss_saltpool_new's: its holders */
} ss_saltpool_t;

/* capacity: salts held at once (the most new connections per ttl seconds);
 * ttl: seconds a salt is remembered (SIP022: 60). 0, -EINVAL for a zero
 * capacity or ttl or a capacity over 2^30, or -ENOMEM.
 * ss_crypto_global_init must have run (the hash key is random). */
int ss_saltpool_init(ss_saltpool_t *p, size_t capacity, uint64_t ttl);
/* The last capacity salts, whatever their age. 0, -EINVAL or -ENOMEM. */
int ss_saltpool_init_fifo(ss_saltpool_t *p, size_t capacity);
/* From now on threads may call ss_saltpool_check_add on p at once: each
 * check and its record happen under p's lock, so a salt one thread
 * recorded is refused to every other. Call before the threads start. */
void ss_saltpool_share(ss_saltpool_t *p);
/* Safe on a zeroed ss_saltpool_t, and twice. */
void ss_saltpool_free(ss_saltpool_t *p);

/* A pool on the heap that several holders keep, each until it lets go:
 * a server's codecs of one configuration and those of the next, after a
 * reload, refuse each other's salts. Shared (ss_saltpool_share) from the
 * start, as its holders may run on different threads. capacity and ttl as
 * above, ttl 0 for a FIFO pool. NULL when it cannot be made (bad capacity,
 * no memory). */
ss_saltpool_t *ss_saltpool_new(size_t capacity, uint64_t ttl);
/* One more holder of p (ss_saltpool_new's); returns p. */
ss_saltpool_t *ss_saltpool_ref(ss_saltpool_t *p);
/* A holder lets go of p; the last one frees it. NULL is ignored. */
void ss_saltpool_unref(ss_saltpool_t *p);
/* Whether p is the kind of pool ss_saltpool_new(capacity, ttl) makes. */
bool ss_saltpool_is(const ss_saltpool_t *p, size_t capacity, uint64_t ttl);

/* Forgets the salts added more than ttl seconds before now (unix seconds).
 * ss_saltpool_check_add does this itself. */
void ss_saltpool_expire(ss_saltpool_t *p, uint64_t now);

/* Checks salt (1..32 bytes) against the salts of the last ttl seconds (the
 * last capacity salts for a FIFO pool) and, if new, records it at time now.
 * 0: new, now recorded; -EEXIST: seen (a replay); -ENOBUFS: new but a timed
 * pool is full, not recorded (refuse the connection); -EINVAL: bad length.
 * now should not go backwards; if it does, salts still expire in the order
 * they were added, so a few are kept longer than ttl (never shorter). */
int ss_saltpool_check_add(ss_saltpool_t *p, const uint8_t *salt, size_t len, uint64_t now);

#endif
