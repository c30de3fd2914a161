/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_MANAGER_INTERNAL_H
#define SS_RELAY_MANAGER_INTERNAL_H

/* Shared by manager.c (the control socket), manager_port.c (a port's life),
 * manager_workers.c (the loops the ports are served on), manager_figures.c
 * (what the ports relayed) and manager_state.c (the state file).
 *
 * Threads: everything here belongs to the main thread (worker 0's, with
 * the control socket, the metrics endpoint and the signals) but what a
 * worker's thread does inside a job the main thread runs on it and waits
 * for (mgr_on), and the events a port's instance posts (mgr_port_cb,
 * under ev_lock). The figures of the instances are read from the main
 * thread without a lock (relay/figures.h). */

#include <ev.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "relay/figures.h"
#include "relay/manager.h"
#include "relay/metrics.h"
#include "shadowsocks.h"
#include "util/strbuf.h"

struct cJSON;

/* One of the loops the ports are served on (--workers): worker 0 is the
 * manager's own loop, 1..n-1 each a thread with a loop of its own. A port's
 * instance is made, replaced, stopped and destroyed on its worker's thread
 * (libev loops are not thread-safe), by a job the main thread hands over
 * and waits for. */
typedef struct mgr_worker {
	struct ev_loop *loop;
	unsigned index;
	size_t n_ports; /* ports served on it (main thread) */
	bool running;   /* a thread, started and not joined */
	pthread_t thread;
	ev_async wake; /* on loop: a job waits */
	pthread_mutex_t lock;
	pthread_cond_t done;    /* the job has run */
	void (*job)(void *arg); /* the job waiting (NULL: none), under lock */
	void *job_arg;
	bool job_done;
} mgr_worker_t;

/* One port: what it was added with, and the instance serving it. */
typedef struct mgr_port {
	uint16_t port;
	unsigned long serial; /* the add it comes from: its replacements keep it */
	struct cJSON *fields; /* as ss_mgr_port_parse gives them */
	ss_config_t *cfg;
	ss_instance_t *inst;
	ss_manager_t *m;
	mgr_worker_t *w; /* where inst runs */
	bool stopped;    /* its STOPPED came: destroy it */
	/* Replaced by an instance of new settings (add_user, remove_user):
	 * it serves the connections it has until they end. */
	bool replaced;
	/* Events of inst, posted from w's thread (under m->ev_lock). */
	unsigned events; /* 1 << ss_instance_event_t */
	char failed[256];
	bool queued;
	struct mgr_port *ev_next;
	struct mgr_port *next; /* in m->dying */
} mgr_port_t;

struct ss_manager {
	struct ev_loop *loop;
	const ss_config_t *cfg;
	char *defaults; /* the manager's settings for every port, as JSON text */
	int fd;         /* the control socket; -1 once stopped */
	ev_io io;
	char unix_path[108]; /* a Unix socket's path, unlinked at the end */
	mgr_port_t **ports;  /* served, in the order they were added */
	size_t n_ports, cap;
	unsigned long serial; /* of the last add */
	mgr_port_t *dying;    /* stopped, waiting for their STOPPED */
	ev_timer reap;        /* destroys the dying that have stopped */
	bool stopping;
	void (*done)(void *arg);
	void *done_arg;
	char *buf; /* a datagram received, and room for the NUL */
	mgr_worker_t *w;
	unsigned n_w;
	/* The ports with events posted, oldest first. */
	pthread_mutex_t ev_lock;
	mgr_port_t *ev_head, *ev_tail;
	ev_async ev_wake;
	ss_metrics_t metrics; /* --metrics */
};

/* ---- manager_port.c ---- */
/* Builds the defaults' JSON from the manager's configuration. 0 or -ENOMEM. */
int mgr_defaults(ss_manager_t *m);
/* Starts port with fields (taken over by the port, freed on failure) on
 * the worker with the fewest ports. 0, or -errno with err naming the
 * reason; nothing is left made. */
int mgr_port_add(ss_manager_t *m, uint16_t port, struct cJSON *fields, char *err, size_t errlen);
/* Serves p's port with fields (taken over, freed on failure) instead, on
 * p's worker: the new instance takes p's listening sockets, p's goes on
 * serving its connections until they end, but those of the user named
 * gone (NULL: none), which end now. 0, or -errno with err; p unchanged
 * then. */
int mgr_port_replace(ss_manager_t *m, mgr_port_t *p, struct cJSON *fields, const char *gone,
		     char *err, size_t errlen);
/* Stops the port: its listeners close once it has stopped. -ENOENT. */
int mgr_port_remove(ss_manager_t *m, uint16_t port);
mgr_port_t *mgr_port_find(ss_manager_t *m, uint16_t port);
/* The method the port runs, by name. */
const char *mgr_port_method(const mgr_port_t *p);
/* Frees the dying ports that have stopped. */
void mgr_reap(ss_manager_t *m);
void mgr_reap_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* Destroys p's instance on its worker and frees p (main thread). */
void mgr_port_free(mgr_port_t *p);
/* An event of the instance of port p, on the main thread. */
void mgr_port_event(mgr_port_t *p, ss_instance_event_t ev, const char *msg);

/* ---- manager_workers.c ---- */
/* Worker 0 on m->loop and the threads of workers 1..n-1, each with a loop
 * of its own, running; the events' wake on m->loop. 0 or -errno with err
 * (what was started is stopped). */
int mgr_workers_start(ss_manager_t *m, unsigned n, char *err, size_t errlen);
/* Ends the threads (every port destroyed first) and frees the workers. */
void mgr_workers_end(ss_manager_t *m);
/* Runs fn(arg) on w's thread and returns once it has run (on the caller's
 * for worker 0, or a worker whose thread is not running). Main thread. */
void mgr_on(mgr_worker_t *w, void (*fn)(void *arg), void *arg);
/* The worker with the fewest ports (the first of them). */
mgr_worker_t *mgr_worker_pick(ss_manager_t *m);
/* The instance callback of every port (any thread): its event is posted
 * to the main thread, which handles it in mgr_port_event. */
void mgr_port_cb(ss_instance_t *inst, ss_instance_event_t ev, const char *msg, void *arg);
/* Handles the events posted so far (main thread). */
void mgr_events_run(ss_manager_t *m);
/* p is about to be freed: its events are dropped. */
void mgr_events_forget(ss_manager_t *m, mgr_port_t *p);

/* ---- manager_figures.c ---- */
/* Bytes both ways since the port was added, its earlier instances
 * included (ping). Main thread. */
uint64_t mgr_port_bytes(const mgr_port_t *p);
/* Every port's rows (--metrics). */
ss_metrics_source_t mgr_metrics_source(const ss_manager_t *m);
/* stat_users: {"PORT": {"USER": {"bytes_up": N, ...}, ...}, ...} for the
 * port (0: every port) into r. -ENOENT for a port not served. */
int mgr_stat_users(const ss_manager_t *m, uint16_t port, ss_strbuf_t *r);

/* ---- manager_state.c ---- */
/* Writes every port and its fields to the state file (none: nothing to
 * do), atomically, mode 0600. 0 or -errno, logged. */
int mgr_state_save(ss_manager_t *m);
/* Adds the ports of the state file, if there is one. 0, or -EINVAL with err
 * when it is damaged (a port that does not start is logged and skipped). */
int mgr_state_load(ss_manager_t *m, char *err, size_t errlen);

#endif
