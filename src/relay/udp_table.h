/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_TABLE_H
#define SS_RELAY_UDP_TABLE_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/addr.h"
#include "util/pool.h"

/* The UDP association table: entries keyed by the client's address (or,
 * where the codec keys associations by session, an AF_UNSPEC key laid out as
 * an IPv6 address), found through a fixed hash, kept in least-recently-used
 * order so that idle expiry and eviction both take from the tail. Entries come from a pool
 * reserved at start-up; nothing is allocated per datagram. The table knows
 * nothing of sockets: the caller embeds ss_udp_entry_t first in its own
 * association and releases what it holds when told an entry goes. */

typedef struct ss_udp_entry {
	void *pool_link; /* first: the pool's free list writes here */
	struct ss_udp_entry *hnext;
	struct ss_udp_entry *prev, *next; /* LRU: head is the most recent */
	ss_inaddr_t key;                  /* an IPv4/IPv6 address, or a session laid out as IPv6 */
	socklen_t key_len;
	uint32_t hash;
	double last_active;
} ss_udp_entry_t;

typedef struct ss_udp_table {
	ss_pool_t pool;
	size_t keep_from; /* entry bytes from here on are the caller's, kept across reuse */
	ss_udp_entry_t **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
	size_t max;
	ss_udp_entry_t *head, *tail;
	uint64_t seed[2];
} ss_udp_table_t;

/* Room for max entries of entry_size bytes (>= sizeof(ss_udp_entry_t)).
 * A new entry is zeroed up to keep_from (<= entry_size); the bytes after it
 * are zero in a slot's first use and afterwards hold what the caller left
 * there (state it sets up once per slot). 0 or -ENOMEM. */
int ss_udp_table_init(ss_udp_table_t *t, size_t entry_size, size_t keep_from, size_t max);
void ss_udp_table_free(ss_udp_table_t *t);

ss_udp_entry_t *ss_udp_table_find(ss_udp_table_t *t, const struct sockaddr *key, socklen_t key_len);
/* A new entry for key, most recent, with last_active = now; NULL when the
 * table is full (the caller evicts ss_udp_table_oldest first). The bytes
 * after the ss_udp_entry_t are zero up to keep_from. */
ss_udp_entry_t *ss_udp_table_add(ss_udp_table_t *t, const struct sockaddr *key, socklen_t key_len,
				 double now);
/* The least recently used entry, or NULL when empty. */
ss_udp_entry_t *ss_udp_table_oldest(ss_udp_table_t *t);
/* Marks activity: moves e to the head. */
void ss_udp_table_touch(ss_udp_table_t *t, ss_udp_entry_t *e, double now);
/* Unlinks e (it stays valid until ss_udp_table_put). */
void ss_udp_table_unlink(ss_udp_table_t *t, ss_udp_entry_t *e);
/* Returns an unlinked entry to the pool. */
void ss_udp_table_put(ss_udp_table_t *t, ss_udp_entry_t *e);
/* The least recently used entry if it has been idle for timeout seconds at
 * now, else NULL. */
ss_udp_entry_t *ss_udp_table_expired(ss_udp_table_t *t, double now, double timeout);
/* Sets timer (an ev_timer set up by the caller, whose callback takes the
 * expired entries) to fire when the least recently used entry will have
 * been idle for timeout seconds, at least 0.01 s from the loop's now; stops
 * it when the table is empty. */
void ss_udp_table_arm(ss_udp_table_t *t, struct ev_loop *loop, ev_timer *timer, double timeout);
/* A key's hash under seed: a keyed mix, so that a peer cannot aim many
 * addresses at one bucket. Equal keys (ss_udp_addr_equal) hash alike. */
uint32_t ss_udp_key_hash(const uint64_t seed[static 2], const struct sockaddr *sa);
/* Same keys, including the port (IPv4-mapped IPv6 equals IPv4). */
bool ss_udp_addr_equal(const struct sockaddr *a, const struct sockaddr *b);

#endif
