/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_REFUSED_H
#define SS_RELAY_REFUSED_H

#include <ev.h>
#include <sys/socket.h>

#include "util/ratelog.h"

/* Lines about refused peers, at the default level but rate-limited per
 * source address (util/ratelog.h): ss-server's clients that fail to
 * authenticate, replay, or are refused by the ACL; a client's servers
 * whose answers fail to authenticate. Every refusal is still logged at -v. */

struct ss_instance;

typedef struct ss_refused {
	ss_ratelog_t log;
	ev_timer summary; /* running while the table holds an address */
	struct ev_loop *loop;
	const char *what; /* the summaries' subject */
} ss_refused_t;

void ss_refused_init(ss_refused_t *r, struct ev_loop *loop, const char *what);
/* A refusal of (or by) the peer at sa (NULL: not an IP peer): the line,
 * printf-style, at WARN when the limiter lets it through, else at INFO. */
void ss_refused_note(ss_refused_t *r, const struct sockaddr *sa, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes the summaries still owed and stops the timer. */
void ss_refused_stop(ss_refused_t *r);

#endif
