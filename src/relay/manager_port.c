/* SPDX-License-Identifier: MIT */
/* A port of ss-manager: its configuration (the manager's settings, then
 * the add's fields), the checks on what the control socket may ask for,
 * and its instance's life. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
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
	/* Its users never reach the manager's control socket through it. */
	snprintf(p->cfg->manager_door, sizeof(p->cfg->manager_door), "%s", m->cfg->manager_address);
	return 0;
}

static void mgr_port_free(mgr_port_t *p)
{
	ss_instance_destroy(p->inst);
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
	p->next = m->dying;
	m->dying = p;
	ss_instance_stop(p->inst);
}

static void mgr_port_cb(ss_instance_t *inst, ss_instance_event_t ev, const char *msg, void *arg)
{
	mgr_port_t *p = arg;
	(void)inst;

	switch (ev) {
	case SS_INSTANCE_READY:
		ss_info("port %u: serving", p->port);
		break;
	case SS_INSTANCE_FAILED:
		if (p->replaced)
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

static uint64_t mgr_inst_bytes(ss_instance_t *inst)
{
	ss_stats_t st;

	ss_instance_stats(inst, &st);
	return st.bytes_up + st.bytes_down;
}

uint64_t mgr_port_bytes(const mgr_port_t *p)
{
	/* Its instance's figures go on from those of the instances it
	 * replaced (ss_instance_create_after). */
	return mgr_inst_bytes(p->inst);
}

/* Frees the dying ports that have stopped: their listeners close. What a
 * replaced one relayed goes to the instance that serves its number now. */
static void mgr_reap(ss_manager_t *m)
{
	for (mgr_port_t **pp = &m->dying; *pp;) {
		mgr_port_t *p = *pp;
		if (!p->stopped) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		if (!p->replaced)
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

int mgr_port_add(ss_manager_t *m, uint16_t port, cJSON *fields, char *err, size_t errlen)
{
	mgr_port_t *p;
	int rc;

	if (mgr_port_find(m, port)) {
		cJSON_Delete(fields);
		snprintf(err, errlen, "port %u is served already", port);
		return -EEXIST;
	}
	/* A remove just before (in the same batch of commands): its
	 * listeners close now, not on the loop's next turn. */
	mgr_reap(m);
	for (const mgr_port_t *d = m->dying; d; d = d->next)
		if (d->port == port && !d->replaced) {
			cJSON_Delete(fields);
			snprintf(err, errlen, "port %u is still closing (its plugin stopping)",
				 port);
			return -EBUSY;
		}
	if (m->n_ports == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		mgr_port_t **a = realloc(m->ports, cap * sizeof(*a));
		if (!a) {
			cJSON_Delete(fields);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		m->ports = a;
		m->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		cJSON_Delete(fields);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->port = port;
	p->fields = fields;
	p->m = m;
	if ((rc = mgr_port_config(m, p, err, errlen)) < 0 ||
	    (rc = ss_instance_create(p->cfg, m->loop, &p->inst, err, errlen)) < 0) {
		mgr_port_free(p);
		return rc;
	}
	ss_instance_set_cb(p->inst, mgr_port_cb, p);
	m->ports[m->n_ports++] = p;
	return 0;
}

int mgr_port_replace(ss_manager_t *m, mgr_port_t *p, cJSON *fields, const char *gone, char *err,
		     size_t errlen)
{
	mgr_port_t *q = calloc(1, sizeof(*q));
	int rc;

	if (!q) {
		cJSON_Delete(fields);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	q->port = p->port;
	q->fields = fields;
	q->m = m;
	if ((rc = mgr_port_config(m, q, err, errlen)) < 0) {
		mgr_port_free(q);
		return rc;
	}
	ss_instance_offer_listeners(p->inst);
	rc = ss_instance_create_after(q->cfg, m->loop, p->inst, &q->inst, err, errlen);
	if (rc < 0) {
		mgr_port_free(q); /* gives the sockets back (net/inherit.h) */
		ss_inherit_clear();
		return rc;
	}
	ss_instance_mark_handed(p->inst);
	ss_inherit_clear();
	ss_instance_set_cb(q->inst, mgr_port_cb, q);
	for (size_t i = 0; i < m->n_ports; i++)
		if (m->ports[i] == p)
			m->ports[i] = q;
	p->replaced = true;
	p->next = m->dying;
	m->dying = p;
	ss_instance_retire(p->inst);
	/* The user's connections end wherever they are: in this instance or
	 * in those of the port's earlier settings, still serving theirs. */
	for (mgr_port_t *d = m->dying; gone && d; d = d->next)
		if (d->replaced && d->port == p->port && !d->stopped)
			ss_instance_end_user(d->inst, gone);
	return 0;
}

int mgr_port_remove(ss_manager_t *m, uint16_t port)
{
	mgr_port_t *p = mgr_port_find(m, port);

	if (!p)
		return -ENOENT;
	/* What earlier settings of the port still serve ends with it. */
	for (mgr_port_t *d = m->dying; d; d = d->next)
		if (d->replaced && d->port == port)
			ss_instance_stop(d->inst);
	mgr_port_retire(m, p);
	return 0;
}
