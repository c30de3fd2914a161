/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_FIGURES_H
#define SS_RELAY_FIGURES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* What the relay counts, per listening port and per user: each worker
 * writes its own block (no lock, no allocation: a relaxed load and store
 * of a counter only it writes), any thread reads every worker's block and
 * sums them (ss_figures_sum). The blocks are made with the shared object
 * (relay/shared.h), sized from the configuration: the ports of ss-server's
 * listen entries (a client's local port) times the users plus one (row 0:
 * no user, a single-user port). */

typedef _Atomic uint64_t ss_fig_t;

/* Why a client was refused. */
typedef enum {
	SS_REFUSED_AUTH,    /* its request failed to authenticate or was malformed */
	SS_REFUSED_REPLAY,  /* a replayed salt or request */
	SS_REFUSED_ACL,     /* the ACL refused the client or its target */
	SS_REFUSED_BLOCKED, /* a target the server never relays to (its own doors, private) */
	SS_REFUSED_N,
} ss_refusal_t;

/* One (port, user): TCP connections whose request was accepted
 * (ss_conn_fig_open). */
typedef struct ss_fig_row {
	ss_fig_t bytes[2]; /* plaintext, [SS_IN] up (client to target), [SS_OUT] down */
	ss_fig_t opened, closed;
} ss_fig_row_t;

/* One port: UDP and refusals. */
typedef struct ss_fig_port {
	ss_fig_t dgrams[2]; /* [0] in from clients, [1] out to clients */
	ss_fig_t assoc_opened, assoc_closed;
	ss_fig_t refused[SS_REFUSED_N];
} ss_fig_port_t;

/* One worker's block; or what the generations before a reload counted
 * (relay/shared.h), in the shape of the layout that replaced theirs. */
typedef struct ss_fig_block {
	ss_fig_port_t *port; /* n_ports */
	ss_fig_row_t *row;   /* n_ports * (n_users + 1), port-major */
	/* n_ports: the carried block's rows of users the layout no longer
	 * has, in the port's totals and no user's (a worker's stay zero) */
	ss_fig_row_t *gone;
} ss_fig_block_t;

#define SS_FIG_PORTS_MAX SS_MAX_SERVERS

/* The shape shared by every worker's block. */
typedef struct ss_fig_layout {
	const ss_config_t *cfg;
	size_t n_ports, n_users;
	uint16_t port[SS_FIG_PORTS_MAX]; /* the public port numbers, distinct */
} ss_fig_layout_t;

/* The figures summed over the workers for one (port, user). */
typedef struct ss_fig_sum {
	uint64_t bytes[2];
	uint64_t opened, closed;
	uint64_t dgrams[2];
	uint64_t assoc_opened, assoc_closed;
	uint64_t refused[SS_REFUSED_N];
} ss_fig_sum_t;

/* A counter only the calling worker writes: plain load, add and store, so
 * that the hot path pays no locked instruction. */
static inline void ss_fig_add(ss_fig_t *f, uint64_t n)
{
	atomic_store_explicit(f, atomic_load_explicit(f, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t ss_fig_get(const ss_fig_t *f)
{
	return atomic_load_explicit((ss_fig_t *)f, memory_order_relaxed);
}

/* The layout of cfg's figures (validated cfg, which it keeps). */
void ss_fig_layout_init(ss_fig_layout_t *l, const ss_config_t *cfg);
/* The index of a port number among l's ports, 0 when none matches. */
size_t ss_fig_port_index(const ss_fig_layout_t *l, uint16_t port);
/* The row of a user named by the codec (a pointer to cfg->users[i].name,
 * as ss_codec_hdr_t.user is): i + 1; 0 for NULL or any other pointer. */
size_t ss_fig_user_index(const ss_fig_layout_t *l, const char *user);
/* The name of user row u ("" for row 0). */
const char *ss_fig_user_name(const ss_fig_layout_t *l, size_t u);

/* count zeroed blocks for l. 0 or -ENOMEM. */
int ss_figures_alloc(ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l);
void ss_figures_free(ss_fig_block_t *f, unsigned count);

static inline ss_fig_row_t *ss_figures_row(const ss_fig_block_t *f, const ss_fig_layout_t *l,
					   size_t port, size_t user)
{
	return &f->row[port * (l->n_users + 1) + user];
}

/* As a user: every row of the port, and its gone row. */
#define SS_FIG_PORT_ALL ((size_t)-1)

/* Sums count blocks for (port, user); the port-wide figures (UDP,
 * refusals) are the port's whatever user. */
void ss_figures_sum(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l, size_t port,
		    size_t user, ss_fig_sum_t *out);
/* Adds to *out what count blocks of layout fl counted for (port, user) of
 * layout tl, matched by port number and user name (user 0 with user 0):
 * nothing for a port fl lacks, the port-wide figures alone for a user it
 * lacks. The layouts may be one. */
void ss_figures_add(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *fl,
		    const ss_fig_layout_t *tl, size_t port, size_t user, ss_fig_sum_t *out);
/* Adds to *out every row of count blocks (gone rows included): their
 * bytes and connections, whatever the port and the user. */
void ss_figures_add_all(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l,
			ss_fig_sum_t *out);
/* Never more closed than opened (a reader may see a close before its
 * open: relaxed, and from several workers). */
void ss_figures_clamp(ss_fig_sum_t *s);
/* Moves what count blocks of layout fl counted into the carried block to
 * of layout tl (from the thread that reads to): rows and ports matched as
 * ss_figures_add does, a row of a user tl's port lacks to its gone row, a
 * row of a port tl lacks to *away (counted in the totals alone); the
 * port-wide figures of such a port go. */
void ss_figures_fold(ss_fig_block_t *to, ss_fig_row_t *away, const ss_fig_layout_t *tl,
		     const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *fl);
/* Adds row r into *out, and into row to. */
void ss_figures_add_row(ss_fig_sum_t *out, const ss_fig_row_t *r);
void ss_figures_fold_row(ss_fig_row_t *to, const ss_fig_row_t *r);

#endif
