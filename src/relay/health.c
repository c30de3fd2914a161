/* SPDX-License-Identifier: MIT */
#include "relay/health.h"

#include <string.h>

double ss_health_backoff(unsigned fails, double rnd)
{
	double wait = SS_HEALTH_BACKOFF_BASE;

	for (unsigned i = 1; i < fails && wait < SS_HEALTH_BACKOFF_MAX; i++)
		wait *= 2;
	if (wait > SS_HEALTH_BACKOFF_MAX)
		wait = SS_HEALTH_BACKOFF_MAX;
	return wait * (0.75 + 0.5 * rnd);
}

static ss_health_change_t health_down(ss_health_t *h, ss_down_why_t why, double now, double rnd)
{
	h->trial_until = 0;
	if (!h->down) {
		h->down = true;
		h->why = (uint8_t)why;
		h->fails = 1;
		h->since = now;
		h->retry_at = now + ss_health_backoff(1, rnd);
		return SS_HEALTH_WENT_DOWN;
	}
	/* Connections that were under way when it went down, or that were
	 * sent to it for want of any server up, tell nothing new: only a
	 * failure once the wait has passed (a try) makes it longer. */
	if (now < h->retry_at)
		return SS_HEALTH_SAME;
	if (h->fails < UINT16_MAX)
		h->fails++;
	h->retry_at = now + ss_health_backoff(h->fails, rnd);
	return SS_HEALTH_STILL_DOWN;
}

static ss_health_change_t health_up(ss_health_t *h)
{
	bool was = h->down;

	memset(h, 0, sizeof(*h));
	return was ? SS_HEALTH_CAME_UP : SS_HEALTH_SAME;
}

ss_health_change_t ss_health_failed(ss_health_t *h, double now, double rnd)
{
	h->strikes = 0;
	return health_down(h, SS_DOWN_CONNECT, now, rnd);
}

ss_health_change_t ss_health_silent(ss_health_t *h, double now, double rnd)
{
	if (!h->down && ++h->strikes < SS_HEALTH_STRIKES)
		return SS_HEALTH_SAME;
	h->strikes = 0;
	return health_down(h, SS_DOWN_SILENT, now, rnd);
}

ss_health_change_t ss_health_connected(ss_health_t *h, double now)
{
	(void)now;
	/* One down for silent closes must answer first. */
	if (h->down && h->why == SS_DOWN_SILENT)
		return SS_HEALTH_SAME;
	return h->down ? health_up(h) : SS_HEALTH_SAME;
}

ss_health_change_t ss_health_answered(ss_health_t *h, double now)
{
	(void)now;
	return health_up(h);
}

void ss_health_reset(ss_health_t *h)
{
	memset(h, 0, sizeof(*h));
}

int ss_health_pick(ss_pick_t *s, size_t n, uint32_t exclude, unsigned *rr, double now, double hold,
		   bool *trial)
{
	int best = -1;

	*trial = false;
	if (n == 0)
		return -1;
	/* Round-robin order from *rr: the first found among equals wins. */
	for (size_t k = 0; k < n; k++) {
		size_t i = (*rr + k) % n;
		ss_health_t *h = s[i].h;
		if (!s[i].usable || (exclude >> i & 1) || !h->down || now < h->retry_at ||
		    now < h->trial_until)
			continue;
		h->trial_until = now + hold;
		*trial = true;
		return (int)i;
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = (*rr + k) % n;
		if (!s[i].usable || (exclude >> i & 1) || s[i].h->down)
			continue;
		if (best < 0 || s[i].load < s[best].load)
			best = (int)i;
	}
	if (best >= 0) {
		*rr = (unsigned)(best + 1) % n;
		return best;
	}
	for (size_t i = 0; i < n; i++) {
		if (!s[i].usable || (exclude >> i & 1))
			continue;
		if (best < 0 || s[i].h->retry_at < s[best].h->retry_at)
			best = (int)i;
	}
	return best;
}
