/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/figures.h"

/* Each worker's block on cache lines of its own, so that two workers never
 * write the same line. */
#define FIG_ALIGN 64

static size_t fig_round(size_t n)
{
	return (n + FIG_ALIGN - 1) / FIG_ALIGN * FIG_ALIGN;
}

static void fig_layout_add_port(ss_fig_layout_t *l, uint16_t port)
{
	for (size_t i = 0; i < l->n_ports; i++)
		if (l->port[i] == port)
			return;
	if (l->n_ports < SS_FIG_PORTS_MAX)
		l->port[l->n_ports++] = port;
}

void ss_fig_layout_init(ss_fig_layout_t *l, const ss_config_t *cfg)
{
	memset(l, 0, sizeof(*l));
	l->cfg = cfg;
	if (cfg->prog == SS_PROG_SERVER) {
		for (size_t i = 0; i < cfg->n_servers; i++)
			fig_layout_add_port(l, cfg->servers[i].port ? cfg->servers[i].port
								    : cfg->server_port);
		l->n_users = cfg->n_users;
	}
	if (!l->n_ports)
		fig_layout_add_port(l, cfg->prog == SS_PROG_SERVER ? cfg->server_port
								   : cfg->local_port);
}

size_t ss_fig_port_index(const ss_fig_layout_t *l, uint16_t port)
{
	for (size_t i = 0; i < l->n_ports; i++)
		if (l->port[i] == port)
			return i;
	return 0;
}

size_t ss_fig_user_index(const ss_fig_layout_t *l, const char *user)
{
	uintptr_t p = (uintptr_t)user, base = (uintptr_t)l->cfg->users;
	size_t i;

	if (!user || !l->n_users || p < base)
		return 0;
	i = (p - base) / sizeof(ss_config_user_t);
	if (i >= l->n_users || user != l->cfg->users[i].name)
		return 0;
	return i + 1;
}

const char *ss_fig_user_name(const ss_fig_layout_t *l, size_t u)
{
	return u == 0 || u > l->n_users ? "" : l->cfg->users[u - 1].name;
}

int ss_figures_alloc(ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l)
{
	size_t ports = fig_round(l->n_ports * sizeof(ss_fig_port_t));
	size_t rows = fig_round(l->n_ports * (l->n_users + 1) * sizeof(ss_fig_row_t));
	size_t gone = fig_round(l->n_ports * sizeof(ss_fig_row_t));

	memset(f, 0, count * sizeof(*f));
	for (unsigned i = 0; i < count; i++) {
		uint8_t *b = aligned_alloc(FIG_ALIGN, ports + rows + gone);
		if (!b) {
			ss_figures_free(f, count);
			return -ENOMEM;
		}
		memset(b, 0, ports + rows + gone);
		f[i].port = (ss_fig_port_t *)b;
		f[i].row = (ss_fig_row_t *)(b + ports);
		f[i].gone = (ss_fig_row_t *)(b + ports + rows);
	}
	return 0;
}

void ss_figures_free(ss_fig_block_t *f, unsigned count)
{
	if (!f)
		return;
	for (unsigned i = 0; i < count; i++) {
		free(f[i].port);
		f[i].port = NULL;
		f[i].row = NULL;
		f[i].gone = NULL;
	}
}

/* ---- reading, and carrying over a reload ---- */

/* The index of port number `port` among l's ports, or -1. */
static long fig_port_find(const ss_fig_layout_t *l, uint16_t port)
{
	for (size_t i = 0; i < l->n_ports; i++)
		if (l->port[i] == port)
			return (long)i;
	return -1;
}

/* The row in l of user row u of layout from (by name; 0 for 0), or -1. */
static long fig_user_find(const ss_fig_layout_t *l, const ss_fig_layout_t *from, size_t u)
{
	const char *name;

	if (u == 0 || l == from)
		return (long)u;
	name = ss_fig_user_name(from, u);
	for (size_t i = 0; i < l->n_users; i++)
		if (strcmp(l->cfg->users[i].name, name) == 0)
			return (long)i + 1;
	return -1;
}

void ss_figures_add_row(ss_fig_sum_t *out, const ss_fig_row_t *r)
{
	for (int d = 0; d < 2; d++)
		out->bytes[d] += ss_fig_get(&r->bytes[d]);
	out->opened += ss_fig_get(&r->opened);
	out->closed += ss_fig_get(&r->closed);
}

void ss_figures_fold_row(ss_fig_row_t *to, const ss_fig_row_t *r)
{
	for (int d = 0; d < 2; d++)
		ss_fig_add(&to->bytes[d], ss_fig_get(&r->bytes[d]));
	ss_fig_add(&to->opened, ss_fig_get(&r->opened));
	ss_fig_add(&to->closed, ss_fig_get(&r->closed));
}

static void fig_add_port(ss_fig_sum_t *out, const ss_fig_port_t *p)
{
	for (int d = 0; d < 2; d++)
		out->dgrams[d] += ss_fig_get(&p->dgrams[d]);
	out->assoc_opened += ss_fig_get(&p->assoc_opened);
	out->assoc_closed += ss_fig_get(&p->assoc_closed);
	for (int k = 0; k < SS_REFUSED_N; k++)
		out->refused[k] += ss_fig_get(&p->refused[k]);
}

static void fig_fold_port(ss_fig_port_t *to, const ss_fig_port_t *p)
{
	for (int d = 0; d < 2; d++)
		ss_fig_add(&to->dgrams[d], ss_fig_get(&p->dgrams[d]));
	ss_fig_add(&to->assoc_opened, ss_fig_get(&p->assoc_opened));
	ss_fig_add(&to->assoc_closed, ss_fig_get(&p->assoc_closed));
	for (int k = 0; k < SS_REFUSED_N; k++)
		ss_fig_add(&to->refused[k], ss_fig_get(&p->refused[k]));
}

void ss_figures_add(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *fl,
		    const ss_fig_layout_t *tl, size_t port, size_t user, ss_fig_sum_t *out)
{
	long fp, fu = -1;

	if (port >= tl->n_ports || (user > tl->n_users && user != SS_FIG_PORT_ALL))
		return;
	fp = fl == tl ? (long)port : fig_port_find(fl, tl->port[port]);
	if (fp < 0)
		return;
	if (user != SS_FIG_PORT_ALL)
		fu = fig_user_find(fl, tl, user);
	for (unsigned i = 0; i < count; i++) {
		fig_add_port(out, &f[i].port[fp]);
		if (user == SS_FIG_PORT_ALL) {
			for (size_t u = 0; u <= fl->n_users; u++)
				ss_figures_add_row(out, ss_figures_row(&f[i], fl, (size_t)fp, u));
			ss_figures_add_row(out, &f[i].gone[fp]);
		} else if (fu >= 0) {
			ss_figures_add_row(out, ss_figures_row(&f[i], fl, (size_t)fp, (size_t)fu));
		}
	}
}

void ss_figures_add_all(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l,
			ss_fig_sum_t *out)
{
	for (unsigned i = 0; i < count; i++)
		for (size_t p = 0; p < l->n_ports; p++) {
			for (size_t u = 0; u <= l->n_users; u++)
				ss_figures_add_row(out, ss_figures_row(&f[i], l, p, u));
			ss_figures_add_row(out, &f[i].gone[p]);
		}
}

void ss_figures_clamp(ss_fig_sum_t *s)
{
	if (s->closed > s->opened)
		s->closed = s->opened;
	if (s->assoc_closed > s->assoc_opened)
		s->assoc_closed = s->assoc_opened;
}

void ss_figures_sum(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l, size_t port,
		    size_t user, ss_fig_sum_t *out)
{
	memset(out, 0, sizeof(*out));
	ss_figures_add(f, count, l, l, port, user, out);
	ss_figures_clamp(out);
}

void ss_figures_fold(ss_fig_block_t *to, ss_fig_row_t *away, const ss_fig_layout_t *tl,
		     const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *fl)
{
	for (size_t p = 0; p < fl->n_ports; p++) {
		long tp = fig_port_find(tl, fl->port[p]);
		for (unsigned i = 0; i < count; i++) {
			ss_fig_row_t *gone = tp >= 0 ? &to->gone[tp] : away;
			if (tp >= 0)
				fig_fold_port(&to->port[tp], &f[i].port[p]);
			for (size_t u = 0; u <= fl->n_users; u++) {
				long tu = tp >= 0 ? fig_user_find(tl, fl, u) : -1;
				ss_figures_fold_row(
				    tu >= 0 ? ss_figures_row(to, tl, (size_t)tp, (size_t)tu) : gone,
				    ss_figures_row(&f[i], fl, p, u));
			}
			ss_figures_fold_row(gone, &f[i].gone[p]);
		}
	}
}
