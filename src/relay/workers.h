/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_WORKERS_H
#define SS_RELAY_WORKERS_H

#include <ev.h>
#include <pthread.h>
#include <stdbool.h>

#include "relay/instance.h"

/* --workers N: the program's main thread runs worker 0 (its instance on the
 * default loop, with the signals, the plugins and the service manager's
 * word); workers 1..N-1 are threads, each running an instance of its own on
 * a loop of its own (ev_loop_new). All are created on the main thread
 * before any thread starts, so that the listeners are open (and, with -a,
 * opened with the privileges the program started with) before the daemon's
 * fork and the switch of user; the threads start after both. */

typedef struct ss_worker {
	struct ev_loop *loop;
	ss_instance_t *inst;
	ev_async stop; /* sent by the main thread: stop the instance */
	pthread_t thread;
	bool running; /* the thread was started and not yet joined */
	unsigned index;
} ss_worker_t;

typedef struct ss_workers {
	ss_worker_t *w; /* workers 1..n */
	unsigned n;
	ss_instance_t **all; /* worker 0's instance, then theirs (ss_instance_set_peers) */
} ss_workers_t;

/* Workers 1..cfg->workers-1 beside first (worker 0, created with
 * ss_instance_create_worker(cfg, loop, 0, cfg->workers, NULL, ...)). 0 or
 * -errno with err; on failure what was made is freed. */
int ss_workers_create(ss_workers_t *ws, const ss_config_t *cfg, ss_instance_t *first, char *err,
		      size_t errlen);
/* In the daemon after its fork: the loops take it into account. */
void ss_workers_forked(ss_workers_t *ws);
/* Starts the threads, with every signal blocked in them (the main thread
 * takes SIGINT, SIGTERM and SIGCHLD). 0 or -errno with err; threads already
 * started are stopped and joined. */
int ss_workers_start(ss_workers_t *ws, char *err, size_t errlen);
/* From the main thread: each worker stops its instance (closing its
 * connections) and its thread ends. Safe more than once. */
void ss_workers_stop(ss_workers_t *ws);
/* Waits for the threads to end (after ss_workers_stop). */
void ss_workers_join(ss_workers_t *ws);
/* Frees the instances and loops (threads joined); before worker 0's
 * instance, whose replay pools they use. Safe on a zeroed ss_workers_t. */
void ss_workers_destroy(ss_workers_t *ws);

/* At -v, what a worker's instance relayed (its connections and bytes each
 * way), for the log that tells workers apart. */
void ss_workers_log_stats(const ss_instance_t *inst);

#endif
