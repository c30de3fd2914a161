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

static void fig_add_port(ss_fig_layout_t *l, uint16_t port)
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
			fig_add_port(l, cfg->servers[i].port ? cfg->servers[i].port
							     : cfg->server_port);
		l->n_users = cfg->n_users;
	}
	if (!l->n_ports)
		fig_add_port(l, cfg->prog == SS_PROG_SERVER ? cfg->server_port : cfg->local_port);
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

	memset(f, 0, count * sizeof(*f));
	for (unsigned i = 0; i < count; i++) {
		uint8_t *b = aligned_alloc(FIG_ALIGN, ports + rows);
		if (!b) {
			ss_figures_free(f, count);
			return -ENOMEM;
		}
		memset(b, 0, ports + rows);
		f[i].port = (ss_fig_port_t *)b;
		f[i].row = (ss_fig_row_t *)(b + ports);
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
	}
}

void ss_figures_sum(const ss_fig_block_t *f, unsigned count, const ss_fig_layout_t *l, size_t port,
		    size_t user, ss_fig_sum_t *out)
{
	memset(out, 0, sizeof(*out));
	if (port >= l->n_ports || user > l->n_users)
		return;
	for (unsigned i = 0; i < count; i++) {
		const ss_fig_row_t *r = ss_figures_row(&f[i], l, port, user);
		const ss_fig_port_t *p = &f[i].port[port];
		for (int d = 0; d < 2; d++) {
			out->bytes[d] += ss_fig_get(&r->bytes[d]);
			out->dgrams[d] += ss_fig_get(&p->dgrams[d]);
		}
		out->opened += ss_fig_get(&r->opened);
		out->closed += ss_fig_get(&r->closed);
		out->assoc_opened += ss_fig_get(&p->assoc_opened);
		out->assoc_closed += ss_fig_get(&p->assoc_closed);
		for (int k = 0; k < SS_REFUSED_N; k++)
			out->refused[k] += ss_fig_get(&p->refused[k]);
	}
	/* A reader may see a close before its open (relaxed, and from
	 * several workers): never more closed than opened. */
	if (out->closed > out->opened)
		out->closed = out->opened;
	if (out->assoc_closed > out->assoc_opened)
		out->assoc_closed = out->assoc_opened;
}

void ss_figures_add(ss_fig_sum_t *to, const ss_fig_sum_t *from)
{
	for (int d = 0; d < 2; d++) {
		to->bytes[d] += from->bytes[d];
		to->dgrams[d] += from->dgrams[d];
	}
	to->opened += from->opened;
	to->closed += from->closed;
	to->assoc_opened += from->assoc_opened;
	to->assoc_closed += from->assoc_closed;
	for (int k = 0; k < SS_REFUSED_N; k++)
		to->refused[k] += from->refused[k];
}
