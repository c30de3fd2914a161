/* SPDX-License-Identifier: MIT */
/* ss-manager's loops (--workers) and the way between them and the main
 * thread.
 *
 * Each port is served on one worker. Everything that touches its
 * instance's watchers (making it, replacing it, stopping it, destroying
 * it) runs on that worker's thread, as a job the main thread hands over
 * with an ev_async and waits for, so that an add is answered with its
 * outcome (a port in use, a bad method) as with one loop. Why wait rather
 * than bind on the main thread and start the watchers on the worker: an
 * instance binds, reserves its pools and starts its watchers in one call
 * (ss_instance_create, the library's), which a split would have to take
 * apart, and a reply that must wait for the worker anyway gains nothing
 * from the split. The wait is short (a port is made in about 2 ms, on a
 * thread as on the main loop: the hand-off adds a fraction of that) and
 * holds up for that while what the main loop serves (the control socket,
 * the metrics endpoint, worker 0's ports); a job never waits for the main
 * thread in turn, so they cannot deadlock. What an instance reports
 * (ready, failed, stopped) comes back the other way: posted under a lock
 * to the main thread and handled there. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/manager_internal.h"
#include "relay/workers.h"
#include "util/log.h"

static void mgr_wake_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	mgr_worker_t *w = a->data;
	void (*job)(void *);
	void *arg;
	(void)loop;
	(void)revents;

	pthread_mutex_lock(&w->lock);
	job = w->job;
	arg = w->job_arg;
	w->job = NULL;
	pthread_mutex_unlock(&w->lock);
	if (!job)
		return;
	job(arg);
	pthread_mutex_lock(&w->lock);
	w->job_done = true;
	pthread_cond_signal(&w->done);
	pthread_mutex_unlock(&w->lock);
}

void mgr_on(mgr_worker_t *w, void (*fn)(void *arg), void *arg)
{
	if (!w->running) {
		fn(arg);
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->job = fn;
	w->job_arg = arg;
	w->job_done = false;
	pthread_mutex_unlock(&w->lock);
	ev_async_send(w->loop, &w->wake);
	pthread_mutex_lock(&w->lock);
	while (!w->job_done)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void *mgr_worker_run(void *arg)
{
	mgr_worker_t *w = arg;

	ss_workers_thread_begin(w->index);
	ev_run(w->loop, 0);
	return NULL;
}

static void mgr_quit_job(void *arg)
{
	mgr_worker_t *w = arg;

	ev_break(w->loop, EVBREAK_ALL);
}

static void mgr_events_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	(void)loop;
	(void)revents;
	mgr_events_run(a->data);
}

int mgr_workers_start(ss_manager_t *m, unsigned n, char *err, size_t errlen)
{
	int rc = 0;

	pthread_mutex_init(&m->ev_lock, NULL);
	ev_async_init(&m->ev_wake, mgr_events_cb);
	m->ev_wake.data = m;
	ev_async_start(m->loop, &m->ev_wake);
	if (!(m->w = calloc(n, sizeof(*m->w)))) {
		snprintf(err, errlen, "out of memory for %u workers", n);
		return -ENOMEM;
	}
	if (n > 1)
		ss_log_set_worker(0);
	for (unsigned i = 0; i < n && rc == 0; i++) {
		mgr_worker_t *w = &m->w[i];
		w->index = i;
		m->n_w = i + 1;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->done, NULL);
		if (i == 0) {
			w->loop = m->loop;
			continue;
		}
		if (!(w->loop = ev_loop_new(EVFLAG_AUTO))) {
			snprintf(err, errlen, "cannot make the loop of worker %u", i);
			rc = -ENOMEM;
			break;
		}
		ev_async_init(&w->wake, mgr_wake_cb);
		w->wake.data = w;
		ev_async_start(w->loop, &w->wake);
		rc = ss_workers_thread_start(&w->thread, mgr_worker_run, w);
		if (rc < 0)
			snprintf(err, errlen, "cannot start worker %u: %s", i, strerror(-rc));
		else
			w->running = true;
	}
	return rc;
}

void mgr_workers_end(ss_manager_t *m)
{
	for (unsigned i = 0; i < m->n_w; i++) {
		mgr_worker_t *w = &m->w[i];
		if (w->running) {
			mgr_on(w, mgr_quit_job, w);
			pthread_join(w->thread, NULL);
			w->running = false;
		}
		if (i > 0 && w->loop) {
			ev_async_stop(w->loop, &w->wake);
			ev_loop_destroy(w->loop);
		}
		pthread_cond_destroy(&w->done);
		pthread_mutex_destroy(&w->lock);
	}
	free(m->w);
	m->w = NULL;
	m->n_w = 0;
	if (ev_is_active(&m->ev_wake)) {
		ev_async_stop(m->loop, &m->ev_wake);
		pthread_mutex_destroy(&m->ev_lock);
	}
}

mgr_worker_t *mgr_worker_pick(ss_manager_t *m)
{
	mgr_worker_t *best = &m->w[0];

	for (unsigned i = 1; i < m->n_w; i++)
		if (m->w[i].n_ports < best->n_ports)
			best = &m->w[i];
	return best;
}

/* ---- events, from the workers to the main thread ---- */

void mgr_port_cb(ss_instance_t *inst, ss_instance_event_t ev, const char *msg, void *arg)
{
	mgr_port_t *p = arg;
	ss_manager_t *m = p->m;
	(void)inst;

	pthread_mutex_lock(&m->ev_lock);
	p->events |= 1u << ev;
	if (ev == SS_INSTANCE_FAILED)
		snprintf(p->failed, sizeof(p->failed), "%s", msg ? msg : "failed");
	if (!p->queued) {
		p->queued = true;
		p->ev_next = NULL;
		if (m->ev_tail)
			m->ev_tail->ev_next = p;
		else
			m->ev_head = p;
		m->ev_tail = p;
	}
	pthread_mutex_unlock(&m->ev_lock);
	ev_async_send(m->loop, &m->ev_wake);
}

void mgr_events_run(ss_manager_t *m)
{
	static const ss_instance_event_t order[] = {SS_INSTANCE_READY, SS_INSTANCE_FAILED,
						    SS_INSTANCE_STOPPED};

	for (;;) {
		mgr_port_t *p;
		unsigned events;
		char failed[sizeof(p->failed)];

		pthread_mutex_lock(&m->ev_lock);
		if ((p = m->ev_head)) {
			m->ev_head = p->ev_next;
			if (!m->ev_head)
				m->ev_tail = NULL;
			p->queued = false;
			events = p->events;
			p->events = 0;
			memcpy(failed, p->failed, sizeof(failed));
		}
		pthread_mutex_unlock(&m->ev_lock);
		if (!p)
			return;
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
			if (events & (1u << order[i]))
				mgr_port_event(p, order[i], failed);
	}
}

void mgr_events_forget(ss_manager_t *m, mgr_port_t *p)
{
	if (!m->w)
		return;
	pthread_mutex_lock(&m->ev_lock);
	for (mgr_port_t **pp = &m->ev_head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->ev_next)
		if (*pp == p) {
			*pp = p->ev_next;
			if (m->ev_tail == p)
				m->ev_tail = prev;
			break;
		}
	p->queued = false;
	pthread_mutex_unlock(&m->ev_lock);
}
