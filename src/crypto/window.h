/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_WINDOW_H
#define SS_CRYPTO_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

/* Sliding window replay filter for the packet ids of one 2022 UDP session
 * (SIP022 section 3.2.4), as WireGuard's: a ring of 64-bit words holding one
 * bit per id below the highest id committed. An id is accepted when it is
 * newer than every id committed so far, or less than SS_WINDOW_SIZE below
 * the highest and not committed yet. Fixed size, no allocation.
 *
 * Check first, then commit only once the packet has authenticated and its
 * header validated: a forged or stale packet must never move the window. */

#define SS_WINDOW_WORDS 32
/* One word less than the ring: the word holding the highest id is shared
 * between the newest and the oldest ids. */
#define SS_WINDOW_SIZE ((SS_WINDOW_WORDS - 1) * 64)

typedef struct ss_window {
	uint64_t last; /* highest id committed */
	uint64_t bits[SS_WINDOW_WORDS];
} ss_window_t;

/* Empty: nothing committed, every id acceptable. */
void ss_window_reset(ss_window_t *w);
/* true when id may be accepted (not replayed, not too old). */
bool ss_window_check(const ss_window_t *w, uint64_t id);
/* Records id as received, sliding the window forward when it is the highest.
 * An id too old to be checked is ignored. */
void ss_window_commit(ss_window_t *w, uint64_t id);

#endif
