/* SPDX-License-Identifier: MIT */
#include "relay/workers.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/inherit.h"
#include "util/log.h"

static void workers_stopped_cb(ss_instance_t *inst, ss_instance_event_t ev, const char *msg,
			       void *arg)
{
	ss_worker_t *w = arg;
	(void)inst;

	if (ev == SS_INSTANCE_FAILED)
		ss_err("%s", msg);
	if (ev == SS_INSTANCE_STOPPED) {
		atomic_store(&w->done, true);
		/* Worker 0 shares the caller's loop, which goes on. */
		if (w->threaded)
			ev_break(w->loop, EVBREAK_ALL);
	}
}

static void workers_retire_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	ss_worker_t *w = a->data;
	(void)loop;
	(void)revents;

	ss_instance_retire(w->inst);
}

static void workers_stop_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	ss_worker_t *w = a->data;
	(void)revents;

	ev_async_stop(loop, a);
	ss_instance_stop(w->inst);
}

void ss_workers_log_stats(const ss_instance_t *inst)
{
	ss_stats_t st;

	ss_instance_worker_stats(inst, &st);
	ss_info("worker stopped: %llu connections, %llu bytes up, %llu bytes down",
		(unsigned long long)st.accepted, (unsigned long long)st.bytes_up,
		(unsigned long long)st.bytes_down);
}

static void *workers_run(void *arg)
{
	ss_worker_t *w = arg;
	char name[16];

	/* For top -H and the tests: which threads are workers. */
	snprintf(name, sizeof(name), "ss-worker-%u", w->index);
	pthread_setname_np(pthread_self(), name);
	ss_log_set_worker((int)w->index);
	ev_run(w->loop, 0);
	ss_workers_log_stats(w->inst);
	return NULL;
}

/* Worker i on a loop of its own, stopped from the main thread through its
 * async watcher. */
static int workers_threaded(ss_workers_t *ws, ss_worker_t *w, char *err, size_t errlen)
{
	int rc;

	w->threaded = true;
	w->loop = ev_loop_new(EVFLAG_AUTO);
	if (!w->loop) {
		snprintf(err, errlen, "cannot make the loop of worker %u", w->index);
		return -ENOMEM;
	}
	/* Its lines at start-up name it as its thread's will. */
	ss_log_set_worker((int)w->index);
	rc = ss_instance_create_worker(ws->shared, w->loop, w->index, &w->inst, err, errlen);
	ss_log_set_worker(0);
	if (rc < 0)
		return rc;
	ss_instance_set_cb(w->inst, workers_stopped_cb, w);
	ev_async_init(&w->stop, workers_stop_cb);
	w->stop.data = w;
	ev_async_start(w->loop, &w->stop);
	ev_async_init(&w->retire, workers_retire_cb);
	w->retire.data = w;
	ev_async_start(w->loop, &w->retire);
	return 0;
}

int ss_workers_create(ss_workers_t *ws, const ss_config_t *cfg, struct ev_loop *loop,
		      ss_workers_t *prev, char *err, size_t errlen)
{
	unsigned n = cfg->workers > 1 ? (unsigned)cfg->workers : 1;
	int rc;

	memset(ws, 0, sizeof(*ws));
	ws->w = calloc(n, sizeof(*ws->w));
	if (!ws->w) {
		snprintf(err, errlen, "out of memory for %u workers", n);
		return -ENOMEM;
	}
	if ((rc = ss_shared_create_after(cfg, n, loop, prev ? prev->shared : NULL, &ws->shared, err,
					 errlen)) < 0)
		goto fail;
	for (unsigned i = 0; i < n; i++) {
		ss_worker_t *w = &ws->w[i];
		w->index = i;
		ws->n = i + 1;
		w->loop = loop;
		rc = i ? workers_threaded(ws, w, err, errlen)
		       : ss_instance_create_worker(ws->shared, loop, 0, &w->inst, err, errlen);
		if (rc < 0)
			goto fail;
	}
	for (unsigned i = 0; i < n; i++)
		if ((rc = ss_instance_listen(ws->w[i].inst, err, errlen)) < 0)
			goto fail;
	if (cfg->prog == SS_PROG_SERVER && cfg->manager_address[0] &&
	    (!(ws->report = calloc(1, sizeof(*ws->report))) ||
	     (rc = ss_report_start(ws->report, ws->shared, loop, cfg->manager_address, err,
				   errlen)) < 0)) {
		if (!ws->report) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
		}
		goto fail;
	}
	if (cfg->prog == SS_PROG_SERVER && cfg->metrics[0] &&
	    (!(ws->metrics = calloc(1, sizeof(*ws->metrics))) ||
	     (rc = ss_metrics_start(ws->metrics, ws->shared, loop, cfg->metrics, err, errlen)) <
		 0)) {
		if (!ws->metrics) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
		}
		goto fail;
	}
	return 0;
fail:
	ss_workers_destroy(ws);
	return rc;
}

void ss_workers_forked(ss_workers_t *ws)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i].threaded)
			ev_loop_fork(ws->w[i].loop);
}

int ss_workers_start(ss_workers_t *ws, char *err, size_t errlen)
{
	sigset_t all, old;
	int rc = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned i = 0; i < ws->n && rc == 0; i++) {
		if (!ws->w[i].threaded)
			continue;
		rc = -pthread_create(&ws->w[i].thread, NULL, workers_run, &ws->w[i]);
		if (rc == 0)
			ws->w[i].running = true;
		else
			snprintf(err, errlen, "cannot start worker %u: %s", ws->w[i].index,
				 strerror(-rc));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		ss_workers_stop(ws);
		ss_workers_join(ws);
	}
	return rc;
}

void ss_workers_stop(ss_workers_t *ws)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i].running)
			ev_async_send(ws->w[i].loop, &ws->w[i].stop);
}

void ss_workers_retire(ss_workers_t *ws)
{
	/* The next set reports and serves the figures from now on (going on
	 * from these, relay/shared.h), on the listener it took. */
	if (ws->report)
		ss_report_stop(ws->report);
	if (ws->metrics) {
		ws->metrics->handed = ss_inherit_taken(ws->metrics->lis.fd);
		ss_metrics_stop(ws->metrics);
	}
	for (unsigned i = 0; i < ws->n; i++) {
		ss_worker_t *w = &ws->w[i];
		/* Read by the worker's thread after the wake below. */
		ss_instance_mark_handed(w->inst);
		if (w->threaded) {
			if (w->running)
				ev_async_send(w->loop, &w->retire);
			continue;
		}
		ss_instance_set_cb(w->inst, workers_stopped_cb, w);
		ss_instance_retire(w->inst);
	}
}

bool ss_workers_done(ss_workers_t *ws)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (!atomic_load(&ws->w[i].done) && (ws->w[i].running || !ws->w[i].threaded))
			return false;
	return true;
}

void ss_workers_join(ss_workers_t *ws)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i].running) {
			pthread_join(ws->w[i].thread, NULL);
			ws->w[i].running = false;
		}
}

void ss_workers_destroy(ss_workers_t *ws)
{
	if (ws->report)
		ss_report_stop(ws->report);
	free(ws->report);
	ws->report = NULL;
	if (ws->metrics)
		ss_metrics_stop(ws->metrics);
	free(ws->metrics);
	ws->metrics = NULL;
	for (unsigned i = ws->n; i-- > 0;) {
		ss_worker_t *w = &ws->w[i];
		if (w->inst && w->threaded) {
			ev_async_stop(w->loop, &w->stop);
			ev_async_stop(w->loop, &w->retire);
		}
		ss_instance_destroy(w->inst);
		if (w->threaded && w->loop)
			ev_loop_destroy(w->loop);
	}
	ss_shared_free(ws->shared);
	free(ws->w);
	memset(ws, 0, sizeof(*ws));
}
