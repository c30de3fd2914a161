/* SPDX-License-Identifier: MIT */
#include "crypto/window.h"

#include <string.h>

#define MASK (SS_WINDOW_WORDS - 1)
_Static_assert((SS_WINDOW_WORDS & MASK) == 0, "SS_WINDOW_WORDS is a power of two");

void ss_window_reset(ss_window_t *w)
{
	memset(w, 0, sizeof(*w));
}

static bool too_old(const ss_window_t *w, uint64_t id)
{
	return id <= w->last && w->last - id >= SS_WINDOW_SIZE;
}

bool ss_window_check(const ss_window_t *w, uint64_t id)
{
	if (id > w->last)
		return true;
	if (too_old(w, id))
		return false;
	return !(w->bits[(id >> 6) & MASK] >> (id & 63) & 1);
}

void ss_window_commit(ss_window_t *w, uint64_t id)
{
	if (too_old(w, id))
		return;
	if (id > w->last) {
		uint64_t cur = w->last >> 6, top = id >> 6;
		uint64_t n = top - cur < SS_WINDOW_WORDS ? top - cur : SS_WINDOW_WORDS;

		/* Words passed over now stand for newer ids: clear them. */
		for (uint64_t i = 1; i <= n; i++)
			w->bits[(cur + i) & MASK] = 0;
		w->last = id;
	}
	w->bits[(id >> 6) & MASK] |= (uint64_t)1 << (id & 63);
}
