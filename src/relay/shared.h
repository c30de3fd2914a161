/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_SHARED_H
#define SS_RELAY_SHARED_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "codec/codec.h"
#include "config/config.h"
#include "net/plugin.h"
#include "proto/acl.h"
#include "relay/doors.h"
#include "relay/figures.h"
#include "relay/udp_sessions.h"

/* What the workers of one program share: made once from the configuration
 * before any worker, handed to each (ss_instance_create_worker), freed after
 * the last. Every worker uses it the same way; none owns what is in it.
 *
 * Thread rules:
 * - Immutable once ss_shared_create returns, read by any worker without a
 *   lock: cfg, count, the limits (max_conns, max_assoc, max_pipes), codec
 *   (a server's: it holds the replay pools, which lock themselves), acl
 *   and acl_by_addr (each worker queries it through a view of its own,
 *   ss_acl_view, as a query writes its match block), and entry_plugin[]
 *   with each plugin's local address.
 * - The plugins change state on `loop` only: they run and are watched there,
 *   by whoever called ss_shared_watch_plugins (the worker on that loop, as
 *   a plugin is a child of the process that runs it).
 * - sessions: behind its own mutex (relay/udp_sessions.h).
 * - w[i] is worker i's place: its load is atomic (any worker reads it,
 *   each adds to it); its hand-off queue and UDP inbox are under their own
 *   locks, any worker pushes into them, only worker i takes from them, on
 *   its loop, and only worker i opens and closes them.
 * - fig[i] is worker i's figures (relay/figures.h): only worker i writes
 *   them, any thread reads them; fig_layout is fixed.
 * A manager or a reload that changes what is immutable here makes a new
 * object for the connections that start after it (ss_shared_create_after),
 * and what the running one remembers carries over to it:
 * - the replay records: the new codec holds the same salt pools (they lock
 *   themselves), and the same table of UDP sessions, where their kind
 *   allows (codec/codec.h's ss_codec_setup_after), so that a request seen
 *   before the change is refused after it;
 * - the figures: the objects still serving make a chain, oldest first
 *   (older, newer), and the newest's figures add the others' to its own,
 *   matched by port number and user name; one that goes (ss_shared_free)
 *   leaves what it counted in the newest's carried block, fig[count].
 *   The chain, fig[count] and fig_away change, and are read
 *   (ss_shared_figures, ss_shared_carried), on the thread that makes and
 *   frees the objects of the chain: worker 0's (the program's main thread,
 *   the manager's loop). */

/* --workers: connections a worker accepted for another, waiting for it. */
#define SS_HANDOFF_SLOTS 64
typedef struct ss_handoff {
	pthread_mutex_t lock;
	bool open; /* its worker takes connections */
	struct {
		int fd;
		socklen_t len;
		struct sockaddr_storage peer;
	} q[SS_HANDOFF_SLOTS];
	unsigned head, n;
	struct ev_loop *loop; /* the receiving worker's */
	ev_async wake;        /* on that loop */
} ss_handoff_t;

/* Worker i's place in the shared object. */
typedef struct ss_shared_worker {
	atomic_uint load;     /* its open connections and those handed to it */
	ss_handoff_t handoff; /* connections handed to it */
	ss_udp_inbox_t inbox; /* datagrams of its sessions handed to it (relay/udp_server.c) */
} ss_shared_worker_t;

typedef void (*ss_shared_plugin_cb)(void *arg, ss_plugin_t *p, ss_plugin_event_t ev,
				    const char *msg);

typedef struct ss_shared {
	const ss_config_t *cfg;
	unsigned count;       /* workers */
	struct ev_loop *loop; /* the plugins' */
	/* Each worker's share of what the descriptor limit and the
	 * configuration allow: connections, UDP associations, splice pipes. */
	size_t max_conns, max_assoc, max_pipes;
	bool tcp, udp;    /* what the program relays */
	ss_codec_t codec; /* ss-server's, with the replay pools of all workers */
	ss_acl_t *acl;    /* --acl, parsed once, or NULL */
	bool acl_by_addr; /* the ACL has address rules: names may need a lookup */
	/* SIP003 plugins: a client's, one per server entry that has one;
	 * ss-server's, one per listen address. entry_plugin[i]: entry i's. */
	ss_plugin_t plugins[SS_MAX_SERVERS];
	size_t n_plugins;
	ss_plugin_t *entry_plugin[SS_MAX_SERVERS];
	ss_shared_plugin_cb watch;
	void *watch_arg;
	/* ss-server with a codec that has sessions: every worker's, held
	 * (ss_udp_sessions_ref) with the configurations before and after a
	 * reload; worker i claims sessions as holder0 + i. */
	ss_udp_sessions_t *sessions;
	unsigned holder0;
	ss_shared_worker_t *w; /* count places */
	ss_fig_layout_t fig_layout;
	/* count + 1 blocks: the workers', then what the objects before it
	 * counted (those gone from the chain), in its layout */
	ss_fig_block_t *fig;
	ss_fig_row_t fig_away;           /* theirs of ports it does not have */
	struct ss_shared *older, *newer; /* the chain (above) */
	ss_doors_t doors;                /* ss-server's own addresses, never a target (fixed) */
} ss_shared_t;

/* Makes what count workers of cfg share (validated; cfg outlives it), with
 * the plugins set up to run on loop (not started). 0 or -errno with err;
 * *out is NULL on failure. */
int ss_shared_create(const ss_config_t *cfg, unsigned count, struct ev_loop *loop,
		     ss_shared_t **out, char *err, size_t errlen);
/* As ss_shared_create, for a configuration that replaces prev's (NULL:
 * none), the newest of its chain, whose workers may go on serving what
 * they have: the new object takes over prev's replay records and joins its
 * chain. */
int ss_shared_create_after(const ss_config_t *cfg, unsigned count, struct ev_loop *loop,
			   ss_shared_t *prev, ss_shared_t **out, char *err, size_t errlen);
/* After every worker is destroyed: the plugins (reaped if they run, no
 * callback), pools, table and queues; what it counted goes to the newest
 * of its chain. NULL is ignored. */
void ss_shared_free(ss_shared_t *sh);

/* On loop: plugin events go to cb(arg, ...) from now on (cb NULL: none). */
void ss_shared_watch_plugins(ss_shared_t *sh, ss_shared_plugin_cb cb, void *arg);
/* On loop: starts every plugin. 0 or -errno with err. */
int ss_shared_start_plugins(ss_shared_t *sh, char *err, size_t errlen);
/* Whether every plugin is in state (true without plugins). */
bool ss_shared_plugins_all(const ss_shared_t *sh, ss_plugin_state_t state);

/* The worker with the fewest connections, if `me` has more than one more
 * than it and it has room for another; -1 for none. */
int ss_shared_lighter(ss_shared_t *sh, unsigned me);
/* Hands the accepted fd (with its peer address) to worker `to`; false when
 * its queue is closed or full: the caller keeps it. */
bool ss_shared_hand_off(ss_shared_t *sh, unsigned to, int fd, const struct sockaddr *peer,
			socklen_t len);
/* A connection of worker i's opened (+1) or ended (-1). */
static inline void ss_shared_load(ss_shared_t *sh, unsigned i, int delta)
{
	if (sh->count > 1)
		atomic_fetch_add_explicit(&sh->w[i].load, (unsigned)delta, memory_order_relaxed);
}

/* The figures of (port, user) of fig_layout (user SS_FIG_PORT_ALL: the
 * port's whole), summed over the workers and those of the objects before
 * it in its chain. */
void ss_shared_figures(const ss_shared_t *sh, size_t port, size_t user, ss_fig_sum_t *out);
/* What the objects before sh in its chain counted, whatever the port and
 * the user: their bytes and connections (the open ones as opened and not
 * closed). */
void ss_shared_carried(const ss_shared_t *sh, ss_fig_sum_t *out);

/* Worker i's hand-off queue, from its own loop: wakes cb(data) there when
 * a connection is handed over, from ss_shared_handoff_open on. */
void ss_shared_handoff_init(ss_shared_t *sh, unsigned i, struct ev_loop *loop,
			    void (*cb)(struct ev_loop *, ev_async *, int), void *data);
void ss_shared_handoff_open(ss_shared_t *sh, unsigned i);
/* Takes the next connection handed to worker i, or returns false. */
bool ss_shared_handoff_pop(ss_shared_t *sh, unsigned i, int *fd, struct sockaddr_storage *peer,
			   socklen_t *len);
/* Worker i takes no more: pushes fail from now on, and its wake stops;
 * what waits stays for ss_shared_handoff_pop. */
void ss_shared_handoff_close(ss_shared_t *sh, unsigned i);

#endif
