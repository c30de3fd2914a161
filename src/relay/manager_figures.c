/* SPDX-License-Identifier: MIT */
/* What ss-manager's ports relayed, per port and per user: each instance's
 * figures (relay/figures.h, counted by its worker, read here on the main
 * thread without a lock), those of a port's earlier instances (add_user,
 * remove_user) still serving their connections, and what those left once
 * freed (carried), so that a port's counters never go back. Read by ping,
 * stat_users and the metrics endpoint. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/instance.h"
#include "relay/manager_internal.h"

typedef struct {
	const char *user;
	ss_fig_sum_t s;
} mgr_row_t;

typedef struct {
	mgr_row_t *r;
	size_t n, cap;
} mgr_rows_t;

/* The row of user, made when there is none; hint: where it likely is (the
 * instances of a port mostly have their users in the same order). */
static mgr_row_t *rows_find(mgr_rows_t *t, const char *user, size_t hint)
{
	if (hint < t->n && strcmp(t->r[hint].user, user) == 0)
		return &t->r[hint];
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->r[i].user, user) == 0)
			return &t->r[i];
	if (t->n == t->cap)
		return NULL;
	t->r[t->n] = (mgr_row_t){.user = user};
	return &t->r[t->n++];
}

/* Row u of inst, summed over its ports (a manager's port has one number,
 * maybe several listen addresses); the port-wide figures in row 0 only. */
static void inst_row(const ss_instance_t *inst, size_t u, ss_fig_sum_t *out)
{
	const ss_fig_layout_t *l = &inst->shared->fig_layout;

	memset(out, 0, sizeof(*out));
	for (size_t p = 0; p < l->n_ports; p++) {
		ss_fig_sum_t s;
		ss_shared_figures(inst->shared, p, u, &s);
		if (u) {
			memset(s.dgrams, 0, sizeof(s.dgrams));
			s.assoc_opened = s.assoc_closed = 0;
			memset(s.refused, 0, sizeof(s.refused));
		}
		ss_figures_add(out, &s);
	}
}

static size_t inst_users(const ss_instance_t *inst)
{
	return inst->shared->fig_layout.n_users;
}

static void rows_add_inst(mgr_rows_t *t, const ss_instance_t *inst)
{
	const ss_fig_layout_t *l = &inst->shared->fig_layout;

	for (size_t u = 0; u <= l->n_users; u++) {
		mgr_row_t *r = rows_find(t, ss_fig_user_name(l, u), u);
		ss_fig_sum_t s;
		if (!r)
			continue;
		inst_row(inst, u, &s);
		ss_figures_add(&r->s, &s);
	}
}

/* Whether d is an earlier instance of p's port still serving. */
static bool mgr_earlier(const mgr_port_t *d, const mgr_port_t *p)
{
	return d->replaced && d->serial == p->serial && d->inst;
}

int mgr_port_rows(const ss_manager_t *m, const mgr_port_t *p, ss_metrics_row_fn fn, void *ctx)
{
	mgr_rows_t t = {0};

	t.cap = 1 + p->n_carried + inst_users(p->inst) + 1;
	for (const mgr_port_t *d = m->dying; d; d = d->next)
		if (mgr_earlier(d, p))
			t.cap += inst_users(d->inst) + 1;
	if (!(t.r = calloc(t.cap, sizeof(*t.r))))
		return -ENOMEM;
	rows_find(&t, "", 0);
	rows_add_inst(&t, p->inst);
	for (const mgr_port_t *d = m->dying; d; d = d->next)
		if (mgr_earlier(d, p))
			rows_add_inst(&t, d->inst);
	for (size_t i = 0; i < p->n_carried; i++) {
		mgr_row_t *r = rows_find(&t, p->carried[i].user, i);
		if (r)
			ss_figures_add(&r->s, &p->carried[i].s);
	}
	for (size_t i = 0; i < t.n; i++) {
		ss_metrics_row_t row = {
		    .port = p->port, .user = t.r[i].user, .first = i == 0, .s = &t.r[i].s};
		fn(ctx, &row);
	}
	free(t.r);
	return 0;
}

static void mgr_add_bytes(void *ctx, const ss_metrics_row_t *row)
{
	uint64_t *n = ctx;

	*n += row->s->bytes[0] + row->s->bytes[1];
}

uint64_t mgr_port_bytes(const ss_manager_t *m, const mgr_port_t *p)
{
	uint64_t n = 0;

	mgr_port_rows(m, p, mgr_add_bytes, &n); /* 0 when out of memory */
	return n;
}

int mgr_port_carry(mgr_port_t *now, const mgr_port_t *old)
{
	const ss_fig_layout_t *l = &old->inst->shared->fig_layout;

	for (size_t u = 0; u <= l->n_users; u++) {
		const char *user = ss_fig_user_name(l, u);
		mgr_carried_t *c = NULL;
		ss_fig_sum_t s;

		for (size_t i = 0; i < now->n_carried && !c; i++)
			if (strcmp(now->carried[i].user, user) == 0)
				c = &now->carried[i];
		if (!c) {
			mgr_carried_t *a = realloc(now->carried, (now->n_carried + 1) * sizeof(*a));
			if (!a)
				return -ENOMEM;
			now->carried = a;
			c = &a[now->n_carried++];
			memset(c, 0, sizeof(*c));
			snprintf(c->user, sizeof(c->user), "%s", user);
		}
		inst_row(old->inst, u, &s);
		ss_figures_add(&c->s, &s);
	}
	return 0;
}

/* ---- the metrics endpoint's rows ---- */

static void mgr_each(const void *arg, ss_metrics_row_fn fn, void *ctx)
{
	const ss_manager_t *m = arg;

	for (size_t i = 0; i < m->n_ports; i++)
		mgr_port_rows(m, m->ports[i], fn, ctx);
}

ss_metrics_source_t mgr_metrics_source(const ss_manager_t *m)
{
	return (ss_metrics_source_t){.each = mgr_each, .arg = m};
}

/* ---- stat_users ---- */

/* A JSON string of text: quotes, backslashes and control bytes escaped. */
static void mgr_json_string(ss_strbuf_t *r, const char *s)
{
	ss_strbuf_printf(r, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			ss_strbuf_printf(r, "\\%c", c);
		else if (c < 0x20)
			ss_strbuf_printf(r, "\\u%04x", c);
		else
			ss_strbuf_printf(r, "%c", c);
	}
	ss_strbuf_printf(r, "\"");
}

static void mgr_user_json(void *ctx, const ss_metrics_row_t *row)
{
	ss_strbuf_t *r = ctx;

	if (!row->first)
		ss_strbuf_printf(r, ",");
	mgr_json_string(r, row->user);
	ss_strbuf_printf(r,
			 ":{\"bytes_up\":%llu,\"bytes_down\":%llu,\"connections\":%llu,"
			 "\"connections_total\":%llu}",
			 (unsigned long long)row->s->bytes[0], (unsigned long long)row->s->bytes[1],
			 (unsigned long long)(row->s->opened - row->s->closed),
			 (unsigned long long)row->s->opened);
}

int mgr_stat_users(const ss_manager_t *m, uint16_t port, ss_strbuf_t *r)
{
	bool any = false;

	ss_strbuf_printf(r, "{");
	for (size_t i = 0; i < m->n_ports; i++) {
		const mgr_port_t *p = m->ports[i];
		if (port && p->port != port)
			continue;
		ss_strbuf_printf(r, "%s\"%u\":{", any ? "," : "", p->port);
		if (mgr_port_rows(m, p, mgr_user_json, r) < 0)
			r->failed = true;
		ss_strbuf_printf(r, "}");
		any = true;
	}
	ss_strbuf_printf(r, "}");
	return port && !any ? -ENOENT : 0;
}
