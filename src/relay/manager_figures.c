/* SPDX-License-Identifier: MIT */
/* What ss-manager's ports relayed, per port and per user: each instance's
 * figures (relay/figures.h, counted by its worker, read here on the main
 * thread without a lock), which go on from those of the port's earlier
 * instances (add_user, remove_user), those still serving their connections
 * and what those left once freed (relay/shared.h), so that a port's
 * counters never go back. Read by ping, stat_users and the metrics
 * endpoint. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/instance.h"
#include "relay/manager_internal.h"

/* Calls fn(ctx, row) for each row of port p: the row of no user first
 * (with the port-wide figures), then one per user by name. Its instance's
 * figures go on from those of the instances it replaced, those still
 * serving their connections and those freed (ss_instance_create_after). */
static void mgr_port_rows(const mgr_port_t *p, ss_metrics_row_fn fn, void *ctx)
{
	ss_shared_lines(p->inst->shared, fn, ctx);
}

uint64_t mgr_port_bytes(const mgr_port_t *p)
{
	const ss_shared_t *sh = p->inst->shared;
	uint64_t n = 0;

	for (size_t i = 0; i < sh->fig_layout.n_ports; i++) {
		ss_fig_sum_t s;
		ss_shared_figures(sh, i, SS_FIG_PORT_ALL, &s);
		n += s.bytes[SS_IN] + s.bytes[SS_OUT];
	}
	return n;
}

/* ---- the metrics endpoint's rows ---- */

static void mgr_each(const void *arg, ss_metrics_row_fn fn, void *ctx)
{
	const ss_manager_t *m = arg;

	for (size_t i = 0; i < m->n_ports; i++)
		mgr_port_rows(m->ports[i], fn, ctx);
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
		mgr_port_rows(p, mgr_user_json, r);
		ss_strbuf_printf(r, "}");
		any = true;
	}
	ss_strbuf_printf(r, "}");
	return port && !any ? -ENOENT : 0;
}
