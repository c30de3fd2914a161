/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_METRICS_H
#define SS_RELAY_METRICS_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "relay/shared.h"

/* --metrics ADDR:PORT: a small HTTP/1.1 server on a loop that answers
 * GET /metrics with the figures (relay/figures.h) of a source of rows (the
 * workers' shared object for ss-server, every port of ss-manager), as
 * Prometheus text (format 0.0.4), and anything else with 404, 405 or
 * 400, closing the connection after each answer. It serves a few clients
 * at a time (SS_METRICS_CLIENTS; more wait in the listen queue), reads a
 * request head of at most SS_METRICS_REQ_MAX bytes, and drops a client
 * that takes longer than SS_METRICS_TIMEOUT seconds. */
#define SS_METRICS_CLIENTS 4
#define SS_METRICS_REQ_MAX 2048
#define SS_METRICS_TIMEOUT 5.0

/* One row of figures: a port and one of its users (relay/figures.h). */
typedef ss_fig_line_t ss_metrics_row_t;
typedef ss_fig_line_fn ss_metrics_row_fn;

/* Where the figures come from: each(arg, fn, ctx) calls fn(ctx, row) for
 * every row, the rows of a port one after the other, the first of them
 * the port's row of no user (""). Called on the endpoint's loop, as often
 * as the text has families of figures; the row and what it points to are
 * the source's, valid during the call. */
typedef struct ss_metrics_source {
	void (*each)(const void *arg, ss_metrics_row_fn fn, void *ctx);
	const void *arg;
} ss_metrics_source_t;

/* The rows of sh's figures, summed over its workers (ss-server). */
ss_metrics_source_t ss_metrics_shared_source(const ss_shared_t *sh);

typedef struct ss_metrics ss_metrics_t;

typedef struct ss_metrics_client {
	ev_io io;
	ev_timer timer;
	ss_metrics_t *m;
	uint8_t req[SS_METRICS_REQ_MAX];
	size_t n;
	char *out; /* the answer, while it is written */
	size_t out_len, out_off;
	bool lingering; /* answered: reading what the client still sends until it closes */
} ss_metrics_client_t;

struct ss_metrics {
	ss_metrics_source_t src;
	bool on; /* started, not stopped */
	struct ev_loop *loop;
	ev_io lis;
	ss_metrics_client_t c[SS_METRICS_CLIENTS];
	size_t busy;
	/* A reload: the next set of workers took the listener (net/inherit.h);
	 * stopping leaves it open. */
	bool handed;
};

/* Parses "PORT", "HOST:PORT" or "[V6]:PORT" (host: a literal address;
 * default 127.0.0.1). 0 or -EINVAL with err. */
int ss_metrics_parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len, char *err,
		     size_t errlen);
/* Listens at addr and serves src's figures on loop, which it does not keep
 * running (the loop ends when the workers stop); a listener a reload offers
 * at addr (net/inherit.h) is taken over. src's arg outlives m. 0 or -errno
 * with err. */
int ss_metrics_start(ss_metrics_t *m, const ss_metrics_source_t *src, struct ev_loop *loop,
		     const char *addr, char *err, size_t errlen);
/* Closes the listener (unless handed, or given back to the set that offered
 * it) and every client. Safe on a zeroed one or twice. */
void ss_metrics_stop(ss_metrics_t *m);
/* The text of src's figures, in a buffer of malloc's the caller frees, and
 * its length in *len; NULL when out of memory. */
char *ss_metrics_render(const ss_metrics_source_t *src, size_t *len);

#endif
