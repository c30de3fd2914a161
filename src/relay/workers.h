/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_WORKERS_H
#define SS_RELAY_WORKERS_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "relay/instance.h"
#include "relay/metrics.h"
#include "relay/report.h"

/* --workers N: one shared object (relay/shared.h) and N workers, each an
 * instance made with it. Worker 0 runs on the caller's loop and thread
 * (the program's main thread, with the signals and the service manager's
 * word; that loop is the plugins' too); workers 1..N-1 are threads, each
 * running its instance on a loop of its own (ev_loop_new). All are created
 * on the main thread before any thread starts, so that the listeners are
 * open (and, with -a, opened with the privileges the program started with)
 * before the daemon's fork and the switch of user; the threads start after
 * both. */

typedef struct ss_worker {
	struct ev_loop *loop;
	ss_instance_t *inst;
	ev_async stop;    /* threaded: sent by the main thread: stop the instance */
	ev_async retire;  /* threaded: sent by the main thread: retire the instance */
	atomic_bool done; /* its instance has stopped (a threaded one's thread ends) */
	pthread_t thread;
	bool threaded; /* on a thread and a loop of its own */
	bool running;  /* the thread was started and not yet joined */
	unsigned index;
} ss_worker_t;

typedef struct ss_workers {
	ss_shared_t *shared; /* made before the workers, freed after them */
	ss_worker_t *w;      /* n workers, w[0] on the caller's loop */
	unsigned n;
	/* On the caller's loop, or NULL; apart from the set, whose struct a
	 * reload copies while their timers and watchers run: */
	ss_report_t *report;   /* --manager-address */
	ss_metrics_t *metrics; /* --metrics */
} ss_workers_t;

/* The shared object and the cfg->workers workers, worker 0 on loop, every
 * TCP listener listening once all are bound, and with --manager-address
 * (ss-server) the figures' report to the manager on loop, with --metrics
 * their HTTP endpoint there. prev (NULL: none): the running set that a
 * reload replaces, whose replay records the new set takes over and whose
 * figures it goes on from (ss_shared_create_after; prev is destroyed
 * before or after ws, on loop's thread). 0 or -errno with err; on failure
 * what was made is freed. */
int ss_workers_create(ss_workers_t *ws, const ss_config_t *cfg, struct ev_loop *loop,
		      ss_workers_t *prev, char *err, size_t errlen);
/* In the daemon after its fork: the threads' loops take it into account. */
void ss_workers_forked(ss_workers_t *ws);
/* Starts the threads of workers 1..n-1, with every signal blocked in them (the main thread
 * takes SIGINT, SIGTERM and SIGCHLD). 0 or -errno with err; threads already
 * started are stopped and joined. */
int ss_workers_start(ss_workers_t *ws, char *err, size_t errlen);
/* From the main thread: each threaded worker stops its instance (closing
 * its connections) and its thread ends. Safe more than once. */
void ss_workers_stop(ss_workers_t *ws);
/* A reload: from the main thread, once the new workers hold the
 * listeners and before the offers are cleared (net/inherit.h): each
 * worker retires its instance (ss_instance_retire), which
 * stops once its connections and associations have ended. */
void ss_workers_retire(ss_workers_t *ws);
/* Whether every worker's instance has stopped (retired and drained, or
 * stopped): the threads then end at once, and ss_workers_join does not
 * wait. */
bool ss_workers_done(ss_workers_t *ws);
/* Waits for the threads to end (after ss_workers_stop). */
void ss_workers_join(ss_workers_t *ws);
/* Frees the instances, the threads' loops and then the shared object
 * (threads joined). Safe on a zeroed ss_workers_t. */
void ss_workers_destroy(ss_workers_t *ws);

/* At -v, what a worker's instance relayed (its connections and bytes each
 * way), for the log that tells workers apart. */
void ss_workers_log_stats(const ss_instance_t *inst);

#endif
