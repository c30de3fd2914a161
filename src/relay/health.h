/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_HEALTH_H
#define SS_RELAY_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a client has learned of one server from its own traffic, and the
 * rule that picks a server for a new connection or UDP association. Pure:
 * times come in as seconds, randomness as a number in [0, 1), so the rules
 * are tested without a network (tests/unit/test_health.c). No probe is ever
 * sent: a down server is tried again by a real connection once its backoff
 * has passed.
 *
 * - A failed connect (refused, unreachable, timed out; for UDP an ICMP
 *   error) marks an up server down at once.
 * - A close without an answer is a weaker signal (the server may only be
 *   passing on a target's refusal): the caller counts one against a server
 *   only when the same target answered through another server lately, and
 *   SS_HEALTH_STRIKES in a row, with no answer from the server between
 *   them, mark it down.
 * - Down, a server waits ss_health_backoff(fails) before the next
 *   connection may try it: one try at a time (held at most `hold` seconds
 *   when it never ends), and a failed try doubles the wait, up to
 *   SS_HEALTH_BACKOFF_MAX, each wait drawn between 0.75 and 1.25 times its
 *   nominal length so that clients do not come back in step.
 * - A server down for failed connects is up again once a connect succeeds;
 *   one down for silent closes once it answers. */

#define SS_HEALTH_BACKOFF_BASE 1.0 /* seconds before the first try after going down */
#define SS_HEALTH_BACKOFF_MAX 30.0 /* nominal cap, before the jitter */
#define SS_HEALTH_STRIKES 3

typedef enum {
	SS_DOWN_CONNECT, /* connects failed */
	SS_DOWN_SILENT,  /* connections closed without an answer */
} ss_down_why_t;

typedef struct ss_health {
	bool down;
	uint8_t why;        /* ss_down_why_t, when down */
	uint8_t strikes;    /* silent closes counted in a row */
	uint16_t fails;     /* down: failed tries so far, the first going down */
	double since;       /* down: when it went down */
	double retry_at;    /* down: a connection may try it from then */
	double trial_until; /* a try is in flight until then; 0: none */
} ss_health_t;

/* What an event changed, for the log. */
typedef enum {
	SS_HEALTH_SAME,
	SS_HEALTH_WENT_DOWN,
	SS_HEALTH_STILL_DOWN, /* a try failed: the wait grows */
	SS_HEALTH_CAME_UP,
} ss_health_change_t;

/* The wait before try number fails + 1, rnd in [0, 1). */
double ss_health_backoff(unsigned fails, double rnd);

/* A connect failed (or an ICMP error came back). */
ss_health_change_t ss_health_failed(ss_health_t *h, double now, double rnd);
/* A counted silent close (see above). */
ss_health_change_t ss_health_silent(ss_health_t *h, double now, double rnd);
/* A connect succeeded. */
ss_health_change_t ss_health_connected(ss_health_t *h, double now);
/* The server answered (a byte of a connection, a datagram that opened). */
ss_health_change_t ss_health_answered(ss_health_t *h, double now);
/* Address changed: what was learned of the old one is forgotten. */
void ss_health_reset(ss_health_t *h);

/* One server as the picking rule sees it. */
typedef struct ss_pick {
	ss_health_t *h;
	bool usable;   /* it has an address */
	uint32_t load; /* connections (or associations) using it now */
} ss_pick_t;

/* Picks among n servers, leaving out those in exclude (bit i: server i):
 * 1. a down server whose wait has passed and that no try holds, as a try
 *    (*trial true; it holds the try for hold seconds);
 * 2. else the up server with the least load, ties going round-robin from
 *    *rr (advanced past the one picked);
 * 3. else, no server being up, the down one whose wait ends first: a
 *    failure would come anyway, and it may have come back.
 * -1 when none is usable. */
int ss_health_pick(ss_pick_t *s, size_t n, uint32_t exclude, unsigned *rr, double now, double hold,
		   bool *trial);

#endif
