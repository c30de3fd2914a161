/* SPDX-License-Identifier: MIT */
/* A port of ss-manager: its configuration (the manager's settings, then
 * the add's fields), the checks on what the control socket may ask for,
 * and its instance's life, on the worker that serves it
 * (manager_workers.c). */

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "net/inherit.h"
#include "relay/instance.h"
#include "relay/manager_internal.h"
#include "util/log.h"

static const char *const mode_names[] = {"tcp_only", "tcp_and_udp", "udp_only"};

static bool add_text(cJSON *o, const char *key, const char *text)
{
	return !text[0] || cJSON_AddStringToObject(o, key, text) != NULL;
}

static bool add_bool(cJSON *o, const char *key, bool on)
{
	return !on || cJSON_AddTrueToObject(o, key) != NULL;
}

static bool add_int(cJSON *o, const char *key, long n)
{
	return n == 0 || cJSON_AddNumberToObject(o, key, (double)n) != NULL;
}

int mgr_defaults(ss_manager_t *m)
{
	const ss_config_t *c = m->cfg;
	cJSON *o = cJSON_CreateObject(), *servers = cJSON_CreateArray();
	bool ok = o && servers;

	for (size_t i = 0; ok && i < c->n_servers; i++)
		ok = cJSON_AddItemToArray(servers, cJSON_CreateString(c->servers[i].host));
	if (ok && c->n_servers) {
		ok = cJSON_AddItemToObject(o, "server", servers);
		servers = NULL;
	}
	ok = ok && (!c->method || cJSON_AddStringToObject(o, "method", c->method->name)) &&
	     add_int(o, "timeout", c->timeout) && add_int(o, "udp_timeout", c->udp_timeout) &&
	     cJSON_AddStringToObject(o, "mode", mode_names[c->mode]) &&
	     add_bool(o, "fast_open", c->fast_open) && add_bool(o, "no_delay", c->no_delay) &&
	     add_bool(o, "reuse_port", c->reuse_port) && add_bool(o, "mptcp", c->mptcp) &&
	     add_bool(o, "block_private", c->block_private) &&
	     add_bool(o, "ipv6_first", c->ipv6_first) && add_text(o, "nameserver", c->nameserver) &&
	     add_text(o, "interface", c->iface) && add_text(o, "local_address", c->local_addr) &&
	     add_text(o, "acl", c->acl) && add_text(o, "plugin", c->plugin) &&
	     add_text(o, "plugin_opts", c->plugin_opts) && add_int(o, "mtu", c->mtu) &&
	     (!c->plugin[0] ||
	      cJSON_AddStringToObject(o, "plugin_mode", mode_names[c->plugin_mode]));
	if (ok)
		m->defaults = cJSON_PrintUnformatted(o);
	cJSON_Delete(servers);
	cJSON_Delete(o);
	return m->defaults ? 0 : -ENOMEM;
}

mgr_port_t *mgr_port_find(ss_manager_t *m, uint16_t port)
{
	for (size_t i = 0; i < m->n_ports; i++)
		if (m->ports[i]->port == port)
			return m->ports[i];
	return NULL;
}

const char *mgr_port_method(const mgr_port_t *p)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(p->fields, "method");

	return j ? j->valuestring : p->cfg->method->name;
}

/* A plugin the command names must be one the manager's "plugins" lists:
 * a program's name, run from PATH without a shell. */
static int mgr_plugin_ok(const ss_manager_t *m, const char *plugin, char *err, size_t errlen)
{
	size_t n = strlen(plugin);

	for (const char *l = m->cfg->plugins_allowed; *l;) {
		const char *nl = strchr(l, '\n');
		if ((size_t)(nl - l) == n && memcmp(l, plugin, n) == 0)
			return 0;
		l = nl + 1;
	}
	snprintf(err, errlen,
		 "plugin '%.64s' is not one the manager's configuration allows (\"plugins\")",
		 plugin);
	return -EPERM;
}

/* An ACL the command names must lie under the manager's "acl_dir". */
static int mgr_acl_ok(const ss_manager_t *m, const char *acl, char *err, size_t errlen)
{
	char dir[PATH_MAX], file[PATH_MAX];
	size_t n;

	if (!m->cfg->acl_dir[0]) {
		snprintf(err, errlen, "acl: the manager's configuration names no \"acl_dir\"");
		return -EPERM;
	}
	if (strstr(acl, "..") || !realpath(m->cfg->acl_dir, dir) || !realpath(acl, file)) {
		snprintf(err, errlen, "acl '%.128s': not a file under \"acl_dir\"", acl);
		return -EPERM;
	}
	n = strlen(dir);
	if (strncmp(file, dir, n) != 0 || (file[n] != '/' && dir[n - 1] != '/')) {
		snprintf(err, errlen, "acl '%.128s' lies outside \"acl_dir\" %.128s", acl, dir);
		return -EPERM;
	}
	return 0;
}

/* The port's configuration: the manager's settings, then the fields. */
static int mgr_port_config(ss_manager_t *m, mgr_port_t *p, char *err, size_t errlen)
{
	char num[16];
	int rc;

	if ((rc = ss_config_new(SS_PROG_SERVER, &p->cfg)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if ((rc = ss_config_load_json(p->cfg, m->defaults, err, errlen)) < 0)
		return rc;
	for (const cJSON *f = p->fields ? p->fields->child : NULL; f; f = f->next) {
		if (strcmp(f->string, "plugin") == 0 &&
		    (rc = mgr_plugin_ok(m, f->valuestring, err, errlen)) < 0)
			return rc;
		if (strcmp(f->string, "acl") == 0 &&
		    (rc = mgr_acl_ok(m, f->valuestring, err, errlen)) < 0)
			return rc;
		if ((rc = ss_config_set(p->cfg, f->string, f->valuestring, err, errlen)) < 0)
			return rc;
	}
	snprintf(num, sizeof(num), "%u", p->port);
	if ((rc = ss_config_set(p->cfg, "server_port", num, err, errlen)) < 0 ||
	    (rc = ss_config_set(p->cfg, "workers", "1", err, errlen)) < 0 ||
	    (rc = ss_config_validate(p->cfg, err, errlen)) < 0)
		return rc;
	p->cfg->plugin_name_only = cJSON_GetObjectItemCaseSensitive(p->fields, "plugin") != NULL;
	/* Its users never reach the manager's control socket through it, nor
	 * the metrics endpoint serving its figures (relay/doors.h). */
	snprintf(p->cfg->manager_door, sizeof(p->cfg->manager_door), "%s", m->cfg->manager_address);
	snprintf(p->cfg->metrics, sizeof(p->cfg->metrics), "%s", m->cfg->metrics);
	return 0;
}

/* ---- jobs, run on the port's worker ---- */

typedef struct {
	mgr_port_t *p, *q; /* the port; its next instance (replace) */
	const char *gone;  /* replace: the user whose connections end */
	char *err;
	size_t errlen;
	int rc;
} mgr_job_t;

static void mgr_create_job(void *arg)
{
	mgr_job_t *j = arg;
	mgr_port_t *p = j->p;

	j->rc = ss_instance_create(p->cfg, p->w->loop, &p->inst, j->err, j->errlen);
	if (j->rc == 0)
		ss_instance_set_cb(p->inst, mgr_port_cb, p);
}

static void mgr_stop_job(void *arg)
{
	ss_instance_stop(arg);
}

static void mgr_destroy_job(void *arg)
{
	ss_instance_destroy(arg);
}

/* q takes p's listening sockets, then p retires; the connections of the
 * user gone end in p and in the port's earlier instances still serving. */
static void mgr_replace_job(void *arg)
{
	mgr_job_t *j = arg;
	mgr_port_t *p = j->p, *q = j->q;

	ss_instance_offer_listeners(p->inst);
	/* p's replay records and figures carry over (relay/shared.h): p's
	 * chain lives on this thread, and the main thread waits. */
	j->rc = ss_instance_create_after(q->cfg, q->w->loop, p->inst, &q->inst, j->err, j->errlen);
	if (j->rc < 0) {
		/* It gave back what it took (net/inherit.h). */
		ss_inherit_clear();
		return;
	}
	ss_instance_mark_handed(p->inst);
	ss_inherit_clear();
	ss_instance_set_cb(q->inst, mgr_port_cb, q);
	ss_instance_retire(p->inst);
	if (!j->gone)
		return;
	ss_instance_end_user(p->inst, j->gone);
	for (mgr_port_t *d = p->m->dying; d; d = d->next)
		if (d->replaced && d->serial == p->serial && !d->stopped)
			ss_instance_end_user(d->inst, j->gone);
}

/* ---- the port's life, on the main thread ---- */

void mgr_port_free(mgr_port_t *p)
{
	if (p->inst)
		mgr_on(p->w, mgr_destroy_job, p->inst);
	mgr_events_forget(p->m, p);
	ss_config_free(p->cfg);
	cJSON_Delete(p->fields);
	free(p);
}

/* Out of the served ports, into the dying: its instance stops. */
static void mgr_port_retire(ss_manager_t *m, mgr_port_t *p)
{
	for (size_t i = 0; i < m->n_ports; i++)
		if (m->ports[i] == p) {
			memmove(&m->ports[i], &m->ports[i + 1],
				(m->n_ports - i - 1) * sizeof(m->ports[0]));
			m->n_ports--;
			break;
		}
	p->w->n_ports--;
	p->next = m->dying;
	m->dying = p;
	mgr_on(p->w, mgr_stop_job, p->inst);
}

void mgr_port_event(mgr_port_t *p, ss_instance_event_t ev, const char *msg)
{
	switch (ev) {
	case SS_INSTANCE_READY:
		ss_info("port %u: serving on worker %u", p->port, p->w->index);
		break;
	case SS_INSTANCE_FAILED:
		if (p->replaced || p->stopped || mgr_port_find(p->m, p->port) != p)
			break; /* it stops: its STOPPED frees it */
		/* The state file keeps it: a restart tries it again. */
		ss_err("port %u: %s; the port is dropped", p->port, msg);
		mgr_port_retire(p->m, p);
		break;
	case SS_INSTANCE_STOPPED:
		p->stopped = true;
		ev_timer_start(p->m->loop, &p->m->reap);
		break;
	}
}

/* Frees the dying ports that have stopped: their listeners close. What a
 * replaced one relayed goes on in the instance that serves its number now
 * (ss_instance_create_after). */
void mgr_reap(ss_manager_t *m)
{
	mgr_events_run(m);
	for (mgr_port_t **pp = &m->dying; *pp;) {
		mgr_port_t *p = *pp;
		if (!p->stopped) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		if (p->replaced)
			ss_info("port %u: the instance of its earlier settings has ended", p->port);
		else
			ss_info("port %u: closed", p->port);
		mgr_port_free(p);
	}
}

void mgr_reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_manager_t *m = w->data;
	(void)loop;
	(void)revents;

	mgr_reap(m);
	if (m->stopping && m->dying == NULL && m->done) {
		void (*done)(void *) = m->done;
		m->done = NULL;
		done(m->done_arg);
	}
}

/* An add refused: fields freed, err says why. rc. */
static int mgr_port_refuse(cJSON *fields, int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int mgr_port_refuse(cJSON *fields, int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	cJSON_Delete(fields);
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* A port of fields (taken over) with its configuration, no instance yet.
 * 0, or -errno with err (fields freed). */
static int mgr_port_new(ss_manager_t *m, uint16_t port, cJSON *fields, mgr_port_t **out, char *err,
			size_t errlen)
{
	mgr_port_t *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p)
		return mgr_port_refuse(fields, -ENOMEM, err, errlen, "out of memory");
	p->port = port;
	p->fields = fields;
	p->m = m;
	if ((rc = mgr_port_config(m, p, err, errlen)) < 0) {
		mgr_port_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int mgr_port_add(ss_manager_t *m, uint16_t port, cJSON *fields, char *err, size_t errlen)
{
	mgr_job_t j = {.err = err, .errlen = errlen};
	mgr_port_t *p;
	int rc;

	if (mgr_port_find(m, port))
		return mgr_port_refuse(fields, -EEXIST, err, errlen, "port %u is served already",
				       port);
	/* A remove just before (in the same batch of commands): its
	 * listeners close now, not on the loop's next turn. */
	mgr_reap(m);
	for (const mgr_port_t *d = m->dying; d; d = d->next)
		if (d->port == port && !d->replaced)
			return mgr_port_refuse(fields, -EBUSY, err, errlen,
					       "port %u is still closing (its plugin stopping)",
					       port);
	if (m->n_ports == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		mgr_port_t **a = realloc(m->ports, cap * sizeof(*a));
		if (!a)
			return mgr_port_refuse(fields, -ENOMEM, err, errlen, "out of memory");
		m->ports = a;
		m->cap = cap;
	}
	if ((rc = mgr_port_new(m, port, fields, &p, err, errlen)) < 0)
		return rc;
	p->w = mgr_worker_pick(m);
	j.p = p;
	mgr_on(p->w, mgr_create_job, &j);
	if (j.rc < 0) {
		mgr_port_free(p);
		return j.rc;
	}
	p->serial = ++m->serial;
	p->w->n_ports++;
	m->ports[m->n_ports++] = p;
	return 0;
}

int mgr_port_replace(ss_manager_t *m, mgr_port_t *p, cJSON *fields, const char *gone, char *err,
		     size_t errlen)
{
	mgr_job_t j = {.p = p, .gone = gone, .err = err, .errlen = errlen};
	mgr_port_t *q;
	int rc;

	if ((rc = mgr_port_new(m, p->port, fields, &q, err, errlen)) < 0)
		return rc;
	q->w = p->w;
	q->serial = p->serial;
	j.q = q;
	mgr_on(p->w, mgr_replace_job, &j);
	if (j.rc < 0) {
		mgr_port_free(q);
		return j.rc;
	}
	for (size_t i = 0; i < m->n_ports; i++)
		if (m->ports[i] == p)
			m->ports[i] = q;
	p->replaced = true;
	p->next = m->dying;
	m->dying = p;
	return 0;
}

int mgr_port_remove(ss_manager_t *m, uint16_t port)
{
	mgr_port_t *p = mgr_port_find(m, port);

	if (!p)
		return -ENOENT;
	/* What earlier settings of the port still serve ends with it. */
	for (mgr_port_t *d = m->dying; d; d = d->next)
		if (d->replaced && d->serial == p->serial && !d->stopped)
			mgr_on(d->w, mgr_stop_job, d->inst);
	mgr_port_retire(m, p);
	return 0;
}
