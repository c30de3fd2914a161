/* SPDX-License-Identifier: MIT */
#include "program/online.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

void ss_online_doc_free(ss_sip008_t *doc)
{
	if (doc) {
		ss_sip008_clear(doc);
		free(doc);
	}
}

static void online_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_online_t *o = w->data;
	char err[512];
	(void)loop;
	(void)revents;

	if (ss_online_fetch_now(o, err, sizeof(err)) < 0)
		o->cb(o->arg, NULL, err);
}

static void online_fetched(void *arg, int rc, const char *body, size_t len, const char *err)
{
	ss_online_t *o = arg;
	ss_sip008_t *doc = NULL;
	char why[512];

	o->fetch = NULL;
	ev_timer_set(&o->timer, o->interval, 0);
	ev_timer_start(o->loop, &o->timer);
	if (rc < 0) {
		o->cb(o->arg, NULL, err);
		return;
	}
	ss_debug("online configuration: %zu bytes from %s", len, o->shown);
	doc = malloc(sizeof(*doc));
	if (!doc) {
		o->cb(o->arg, NULL, "out of memory");
		return;
	}
	if (ss_sip008_parse(body, len, doc, why, sizeof(why)) < 0) {
		char msg[640];
		free(doc);
		snprintf(msg, sizeof(msg), "the document from %.100s: %s", o->shown, why);
		o->cb(o->arg, NULL, msg);
		return;
	}
	o->cb(o->arg, doc, NULL);
}

int ss_online_configure(ss_online_t *o, struct ev_loop *loop, const ss_config_t *cfg,
			ss_online_cb cb, void *arg, char *err, size_t errlen)
{
	bool dns_same = o->have_resolver && strcmp(o->nameserver, cfg->nameserver) == 0 &&
			o->ipv6_first == cfg->ipv6_first;

	if (!o->loop) {
		ev_timer_init(&o->timer, online_timer_cb, 0, 0);
		o->timer.data = o;
	}
	o->loop = loop;
	o->cb = cb;
	o->arg = arg;
	snprintf(o->url, sizeof(o->url), "%s", cfg->online_url);
	ss_httpc_url_shown(o->url, o->shown, sizeof(o->shown));
	snprintf(o->ca_file, sizeof(o->ca_file), "%s", cfg->ca_file);
	o->interval = cfg->online_interval;
	if (dns_same)
		return 0;
	/* A fetch in flight holds a lookup of the old resolver. */
	if (o->have_resolver) {
		ss_fetch_cancel(o->fetch);
		o->fetch = NULL;
		ss_resolver_free(&o->resolver);
		o->have_resolver = false;
	}
	snprintf(o->nameserver, sizeof(o->nameserver), "%s", cfg->nameserver);
	o->ipv6_first = cfg->ipv6_first;
	if (ss_resolver_init(&o->resolver, loop, o->nameserver, o->ipv6_first, err, errlen) < 0)
		return -EINVAL;
	o->have_resolver = true;
	return 0;
}

int ss_online_fetch_now(ss_online_t *o, char *err, size_t errlen)
{
	ev_timer_stop(o->loop, &o->timer);
	ss_fetch_cancel(o->fetch);
	o->fetch = ss_fetch_start(o->loop, &o->resolver, o->url, o->ca_file,
				  SS_ONLINE_FETCH_TIMEOUT, SS_ONLINE_DOC_MAX, online_fetched, o, err,
				  errlen);
	if (!o->fetch) {
		/* Tried again after the interval. */
		ev_timer_set(&o->timer, o->interval, 0);
		ev_timer_start(o->loop, &o->timer);
		return -EINVAL;
	}
	return 0;
}

void ss_online_stop(ss_online_t *o)
{
	if (!o->loop)
		return;
	ev_timer_stop(o->loop, &o->timer);
	ss_fetch_cancel(o->fetch);
	o->fetch = NULL;
	if (o->have_resolver)
		ss_resolver_free(&o->resolver);
	memset(o, 0, sizeof(*o));
}
