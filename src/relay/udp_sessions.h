/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_SESSIONS_H
#define SS_RELAY_UDP_SESSIONS_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "codec/codec.h"
#include "proto/addr.h"
#include "util/pool.h"

/* ss-server's UDP sessions, for a codec whose associations are keyed by a
 * session the client names (SIP022) rather than by the client's address:
 * one table for the whole process, whichever worker a datagram reaches.
 *
 * The kernel spreads datagrams over the workers' sockets by their source
 * address, which a session does not keep (NAT rebinding) and a replayed
 * datagram need not keep either. So each session has one record here,
 * saying which worker holds its association, and the codec's memory of it
 * (its packet-id window, ss_codec_ops_t.udp_memo_size bytes). A worker that
 * opens a datagram of a session another worker holds hands the datagram
 * over (ss_udp_inbox_t), and the holder checks it against the memory and
 * relays it, from the one association the session has.
 *
 * A record outlives its association: it is kept `ttl` seconds after the
 * association ended (idle or evicted), as long as a datagram of the session
 * could still pass the codec's time check, so that a replay is refused then
 * too; a datagram of the session in that time takes the record back with
 * its memory. Records come from a pool reserved at start-up: the most
 * associations the workers hold at once, plus SS_UDP_SESSIONS_ENDED
 * sessions ended in the last `ttl` seconds. Nothing is allocated per
 * datagram.
 *
 * Locking: the table's mutex guards the hash, the list of ended sessions and
 * each record's holder. A record's memory belongs to its holder alone (no
 * lock), and passes to the next holder through the mutex.
 *
 * Ownership: the table and every worker's inbox live in the workers' shared
 * object (relay/shared.h), which makes the table before the workers and
 * frees both after them; each worker sets up, opens and closes its own
 * inbox. */

#define SS_UDP_SESSIONS_ENDED 16384

typedef struct ss_udp_session {
	void *pool_link; /* first: the pool's free list writes here */
	struct ss_udp_session *hnext;
	struct ss_udp_session *prev, *next; /* ended: oldest first */
	ss_inaddr_t key;
	uint32_t hash;
	int holder;     /* the worker holding its association; -1: ended */
	bool recorded;  /* memo holds a datagram: the record is worth keeping */
	double last;    /* holder: when memo last recorded a datagram */
	double expires; /* ended: when the record may go */
	_Alignas(16) unsigned char memo[];
} ss_udp_session_t;

typedef struct ss_udp_sessions {
	pthread_mutex_t lock;
	ss_pool_t pool;
	ss_udp_session_t **buckets;
	size_t nbuckets; /* power of two */
	size_t memo_size;
	double ttl;
	ss_udp_session_t *oldest, *newest; /* ended, by when they ended */
	uint64_t seed[2];
	bool ready;
	size_t live_max;      /* sessions held at once it has room for */
	atomic_uint refs;     /* ss_udp_sessions_new's: its holders */
	unsigned next_holder; /* the first holder number not given out */
	/* figures, under the lock */
	size_t live, ended;
	uint64_t taken_back; /* ended sessions whose datagrams came again */
	uint64_t refused_full;
} ss_udp_sessions_t;

/* Room for live_max sessions held at once (every worker's associations)
 * and ended_max ended ones, each with memo_size bytes of the codec's,
 * kept ttl seconds after they end. 0 or -ENOMEM. */
int ss_udp_sessions_init(ss_udp_sessions_t *t, size_t memo_size, double ttl, size_t live_max,
			 size_t ended_max);
/* Every worker is gone. Safe on a zeroed table, and twice. */
void ss_udp_sessions_free(ss_udp_sessions_t *t);

/* A table on the heap that several holders keep, each until it lets go:
 * the shared objects of one configuration and of the next after a reload,
 * so that a session's packet-id window outlives the reload. NULL when it
 * cannot be made. */
ss_udp_sessions_t *ss_udp_sessions_new(size_t memo_size, double ttl, size_t live_max,
				       size_t ended_max);
/* One more holder of t (ss_udp_sessions_new's); returns t. */
ss_udp_sessions_t *ss_udp_sessions_ref(ss_udp_sessions_t *t);
/* A holder lets go of t, once its workers are gone; the last one frees it.
 * NULL is ignored. */
void ss_udp_sessions_unref(ss_udp_sessions_t *t);
/* Holder numbers for count workers, distinct from those given to the
 * workers of other configurations using t: worker i claims sessions as
 * first + i. From the thread that makes the shared objects. */
unsigned ss_udp_sessions_workers(ss_udp_sessions_t *t, unsigned count);

typedef enum {
	SS_UDP_SESSION_MINE,  /* *out is held by the caller now: new (memo zero) or ended */
	SS_UDP_SESSION_OTHER, /* *holder holds it: hand the datagram there */
	SS_UDP_SESSION_FULL,  /* no room: every record is held or still protecting */
} ss_udp_claim_t;

/* Worker me (its holder number) opened a datagram of session key and holds
 * no association for it: takes the session's record (a new one, or an
 * ended one with its memory), unless another worker holds it. */
ss_udp_claim_t ss_udp_sessions_claim(ss_udp_sessions_t *t, const struct sockaddr *key, unsigned me,
				     double now, ss_udp_session_t **out, unsigned *holder);
/* Its holder's association ended at now (or was never made): the record is
 * kept ttl seconds, while its last recorded datagram could still be
 * replayed, or goes at once when nothing was recorded or that time has
 * passed. */
void ss_udp_sessions_release(ss_udp_sessions_t *t, ss_udp_session_t *s, double now);

/* ---- Datagrams handed to the worker holding their session ---- */

#define SS_UDP_INBOX_SLOTS 64

/* One opened datagram: what the codec kept of it (for the memo check), its
 * target, its payload (in the inbox's area) and where it came from. */
typedef struct ss_udp_handed {
	ss_codec_dgram_t d;
	ss_addr_t target;
	ss_inaddr_t from;
	socklen_t fromlen;
	uint8_t listener;
	size_t len;
	uint8_t *payload;
} ss_udp_handed_t;

typedef struct ss_udp_inbox {
	pthread_mutex_t lock;
	bool open;     /* its worker takes datagrams */
	unsigned head; /* the oldest waiting */
	unsigned n;    /* waiting, or being handled */
	ss_udp_handed_t *q;
	uint8_t *area; /* SS_UDP_INBOX_SLOTS payloads of slot_size bytes */
	size_t slot_size;
	struct ev_loop *loop; /* its worker's */
	ev_async wake;
} ss_udp_inbox_t;

/* Room for SS_UDP_INBOX_SLOTS datagrams of at most slot_size payload bytes,
 * waking cb on loop; closed until ss_udp_inbox_open. 0 or -ENOMEM. */
int ss_udp_inbox_init(ss_udp_inbox_t *b, struct ev_loop *loop, size_t slot_size,
		      void (*cb)(struct ev_loop *, ev_async *, int), void *data);
/* From its own worker: takes datagrams from now on. */
void ss_udp_inbox_open(ss_udp_inbox_t *b);
/* From its own worker: takes none from now on; what waits is dropped.
 * Returns how many were dropped. */
unsigned ss_udp_inbox_close(ss_udp_inbox_t *b);
/* After every other worker is gone. Safe on a zeroed inbox. */
void ss_udp_inbox_free(ss_udp_inbox_t *b);
/* From another worker: copies the datagram in (h's payload pointer is
 * ignored; payload[0..len) is copied) and wakes the inbox's worker.
 * false when the inbox is closed or full: the datagram is dropped. */
bool ss_udp_inbox_push(ss_udp_inbox_t *b, const ss_udp_handed_t *h, const uint8_t *payload,
		       size_t len);
/* From its own worker: the datagrams waiting now, *first the oldest, n of
 * them in a ring of SS_UDP_INBOX_SLOTS (index (first + i) % SLOTS); they stay
 * the caller's until ss_udp_inbox_done(b, n). */
unsigned ss_udp_inbox_take(ss_udp_inbox_t *b, unsigned *first);
void ss_udp_inbox_done(ss_udp_inbox_t *b, unsigned n);

#endif
