/* SPDX-License-Identifier: MIT */
#ifndef SS_PROGRAM_ONLINE_H
#define SS_PROGRAM_ONLINE_H

#include <ev.h>
#include <stdbool.h>

#include "config/config.h"
#include "net/fetch.h"
#include "net/resolver.h"
#include "proto/httpc.h"
#include "proto/sip008.h"

/* A client's online configuration (SIP008): its document fetched over
 * HTTPS on the program's loop when asked, then every update interval.
 * What a fetch brings is the program's to act on (program.c). */

/* The most a document may weigh, and how long a fetch may take. */
#define SS_ONLINE_DOC_MAX (1u << 20)
#define SS_ONLINE_FETCH_TIMEOUT 30.0

/* The end of one fetch: a document the callee now owns (free it with
 * ss_online_doc_free), or NULL with err saying why, in one line. */
typedef void (*ss_online_cb)(void *arg, ss_sip008_t *doc, const char *err);

typedef struct ss_online {
	struct ev_loop *loop;
	ss_resolver_t resolver;
	bool have_resolver;
	ss_fetch_t *fetch; /* in flight, or NULL */
	ev_timer timer;    /* the next fetch */
	char url[sizeof(((ss_config_t *)0)->online_url)];
	char shown[SS_HTTPC_SHOWN_MAX]; /* url as logs may name it */
	char ca_file[sizeof(((ss_config_t *)0)->ca_file)];
	char nameserver[sizeof(((ss_config_t *)0)->nameserver)];
	bool ipv6_first;
	double interval;
	ss_online_cb cb;
	void *arg;
} ss_online_t;

/* Takes cfg's URL, CA file, interval and name servers (again after a
 * reload: a fetch in flight goes on with what it started with). Fetches
 * nothing yet. 0, or -errno with err. */
int ss_online_configure(ss_online_t *o, struct ev_loop *loop, const ss_config_t *cfg,
			ss_online_cb cb, void *arg, char *err, size_t errlen);

/* A fetch now, replacing one in flight; the next follows the interval
 * after it ends. The callback never runs before this returns. 0, or
 * -errno with err (nothing will call back). */
int ss_online_fetch_now(ss_online_t *o, char *err, size_t errlen);

/* Stops all and frees what it holds; no callback runs after. */
void ss_online_stop(ss_online_t *o);

void ss_online_doc_free(ss_sip008_t *doc);

#endif
