/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_RATELOG_H
#define SS_UTIL_RATELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A limiter for log lines about refused peers, per source address (the port
 * is left out): the first refusal from an address is logged at once; those
 * within the next interval are only counted, and a summary line says how
 * many. The table has a fixed size and lives inside its owner; when every
 * entry is taken, new addresses share one "other addresses" count, so that
 * a flood from many sources (UDP sources are easy to forge) still writes
 * at most two lines per entry and one more per interval. */

#define SS_RATELOG_SLOTS 64
#define SS_RATELOG_WHO_LEN 48 /* an IPv6 address and a NUL, or "other addresses" */

typedef struct ss_ratelog_entry {
	double start;   /* when the current interval began */
	uint64_t more;  /* refusals counted in it, not logged */
	uint8_t family; /* AF_INET or AF_INET6; 0: free */
	uint8_t addr[16];
} ss_ratelog_entry_t;

typedef struct ss_ratelog {
	double interval;
	ss_ratelog_entry_t e[SS_RATELOG_SLOTS];
	double other_start; /* the table was full: everyone else's count */
	uint64_t other_more;
} ss_ratelog_t;

/* Called for each summary: who (an address, or "other addresses") had
 * `more` refusals not logged in the interval that just ended. */
typedef void (*ss_ratelog_emit_cb)(void *arg, const char *who, uint64_t more);

void ss_ratelog_init(ss_ratelog_t *r, double interval);
/* A refusal from sa (any family; NULL counts as "other") at time now.
 * true: log it now; false: counted for a summary. */
bool ss_ratelog_note(ss_ratelog_t *r, const struct sockaddr *sa, double now);
/* Emits the summaries of the intervals that have ended by now and forgets
 * addresses that went quiet. Returns when the next interval ends, or 0 when
 * the table is empty (nothing to wait for). */
double ss_ratelog_flush(ss_ratelog_t *r, double now, ss_ratelog_emit_cb emit, void *arg);

#endif
