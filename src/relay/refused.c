/* SPDX-License-Identifier: MIT */
#include "relay/refused.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

static void refused_emit(void *arg, const char *who, uint64_t more)
{
	ss_refused_t *r = arg;

	ss_warn("%s: %llu more from %s in the last %g s", r->what, (unsigned long long)more, who,
		r->log.interval);
}

static void refused_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_refused_t *r = w->data;
	double now = ev_now(loop), next;
	(void)revents;

	next = ss_ratelog_flush(&r->log, now, refused_emit, r);
	if (next) {
		ev_timer_set(w, next - now, 0.);
		ev_timer_start(loop, w);
	}
}

void ss_refused_init(ss_refused_t *r, struct ev_loop *loop, const char *what)
{
	ss_ratelog_init(&r->log, ss_log_interval());
	ev_init(&r->summary, refused_cb);
	r->summary.data = r;
	r->loop = loop;
	r->what = what;
}

void ss_refused_note(ss_refused_t *r, const struct sockaddr *sa, const char *fmt, ...)
{
	bool now = ss_ratelog_note(&r->log, sa, ev_now(r->loop));
	char line[512];
	va_list ap;

	if (!now && !ss_log_enabled(SS_LOG_INFO))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ss_log(now ? SS_LOG_WARN : SS_LOG_INFO, "%s", line);
	/* The timer runs while the table holds anything, so when it is off
	 * this is the first entry, whose interval ends one interval away. */
	if (!ev_is_active(&r->summary)) {
		ev_timer_set(&r->summary, r->log.interval, 0.);
		ev_timer_start(r->loop, &r->summary);
	}
}

void ss_refused_stop(ss_refused_t *r)
{
	if (!r->loop)
		return;
	ev_timer_stop(r->loop, &r->summary);
	ss_ratelog_flush(&r->log, HUGE_VAL, refused_emit, r);
}
