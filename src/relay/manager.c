/* SPDX-License-Identifier: MIT */
/* ss-manager's control socket: one command a datagram, the reply to its
 * sender (proto/mgrcmd.h), and the manager's start and end. */

#include "relay/manager.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/sock.h"
#include "proto/mgrcmd.h"
#include "relay/manager_internal.h"
#include "util/log.h"
#include "util/strbuf.h"

/* Commands read per wake-up, so that one busy sender cannot hold the loop. */
#define MGR_BATCH 64

/* "stat: {"8388":BYTES,...}": each port's bytes both ways. */
static void mgr_ping(ss_manager_t *m, ss_strbuf_t *r)
{
	ss_strbuf_printf(r, "stat: {");
	for (size_t i = 0; i < m->n_ports; i++)
		ss_strbuf_printf(r, "%s\"%u\":%llu", i ? "," : "", m->ports[i]->port,
				 (unsigned long long)mgr_port_bytes(m->ports[i]));
	ss_strbuf_printf(r, "}");
}

/* As libev lists them: one object a line, the port as a string, with the
 * password and method and what else the port was added with. */
static void mgr_list(ss_manager_t *m, ss_strbuf_t *r)
{
	ss_strbuf_printf(r, "[");
	for (size_t i = 0; i < m->n_ports; i++) {
		const mgr_port_t *p = m->ports[i];
		cJSON *o = cJSON_CreateObject();
		char port[8], *text = NULL;
		bool ok;

		snprintf(port, sizeof(port), "%u", p->port);
		ok = o && cJSON_AddStringToObject(o, "server_port", port);
		for (const cJSON *f = p->fields->child; ok && f; f = f->next)
			ok = strcmp(f->string, "users") == 0
				 ? cJSON_AddItemToObject(o, "users", cJSON_Parse(f->valuestring))
				 : cJSON_AddStringToObject(o, f->string, f->valuestring) != NULL;
		if (ok && !cJSON_GetObjectItemCaseSensitive(o, "method"))
			ok = cJSON_AddStringToObject(o, "method", mgr_port_method(p)) != NULL;
		text = ok ? cJSON_PrintUnformatted(o) : NULL;
		if (!text)
			r->failed = true;
		else
			ss_strbuf_printf(r, "%s\n\t%s", i ? "," : "", text);
		free(text);
		cJSON_Delete(o);
	}
	ss_strbuf_printf(r, "%s]", m->n_ports ? "\n" : "");
}

/* add_user, remove_user: the port's users with cmd's added or taken
 * away, served by a new instance (mgr_port_replace). 0 or -errno with
 * err. */
static int mgr_user(ss_manager_t *m, const ss_mgr_cmd_t *cmd, char *err, size_t errlen)
{
	mgr_port_t *p = mgr_port_find(m, cmd->port);
	const cJSON *had, *name = cJSON_GetObjectItemCaseSensitive(cmd->user, "name");
	cJSON *users = NULL, *fields = NULL, *found = NULL;
	char *text = NULL, gone[SS_USER_NAME_MAX] = "";
	int rc = -EINVAL;

	if (!p) {
		snprintf(err, errlen, "port %u is not served", cmd->port);
		return -ENOENT;
	}
	had = cJSON_GetObjectItemCaseSensitive(p->fields, "users");
	users = had ? cJSON_Parse(had->valuestring) : cJSON_CreateArray();
	if (!users) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (cJSON *u = users->child; u; u = u->next)
		if (strcmp(cJSON_GetObjectItemCaseSensitive(u, "name")->valuestring,
			   name->valuestring) == 0)
			found = u;
	if (cmd->verb == SS_MGR_ADD_USER) {
		if (found) {
			snprintf(err, errlen, "user '%.64s' is one already", name->valuestring);
			goto out;
		}
		cJSON_AddItemToArray(users, cJSON_Duplicate(cmd->user, true));
	} else {
		if (!found) {
			snprintf(err, errlen, "no user '%.64s'", name->valuestring);
			goto out;
		}
		if (cJSON_GetArraySize(users) == 1) {
			snprintf(err, errlen, "the port's last user (remove the port instead)");
			goto out;
		}
		snprintf(gone, sizeof(gone), "%s", name->valuestring);
		cJSON_Delete(cJSON_DetachItemViaPointer(users, found));
	}
	if (!(text = cJSON_PrintUnformatted(users)) ||
	    !(fields = cJSON_Duplicate(p->fields, true)) ||
	    (cJSON_DeleteItemFromObjectCaseSensitive(fields, "users"),
	     !cJSON_AddStringToObject(fields, "users", text))) {
		cJSON_Delete(fields);
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = mgr_port_replace(m, p, fields, gone[0] ? gone : NULL, err, errlen);
out:
	free(text);
	cJSON_Delete(users);
	return rc;
}

/* One command; the reply in r (nothing for "stat:"). */
static void mgr_command(ss_manager_t *m, const char *buf, size_t len, const char *from,
			ss_strbuf_t *r)
{
	ss_mgr_cmd_t cmd;
	char err[512];
	int rc;

	if (ss_mgr_cmd_parse(buf, len, &cmd, err, sizeof(err)) < 0) {
		ss_warn("control socket: command from %s refused: %s", from, err);
		ss_strbuf_printf(r, "err");
		return;
	}
	switch (cmd.verb) {
	case SS_MGR_PING:
		mgr_ping(m, r);
		break;
	case SS_MGR_LIST:
		mgr_list(m, r);
		break;
	case SS_MGR_STAT:
		break;
	case SS_MGR_ADD:
		rc = mgr_port_add(m, cmd.port, cmd.fields, err, sizeof(err));
		cmd.fields = NULL; /* the port's now, or freed */
		if (rc < 0) {
			ss_err("add port %u: %s", cmd.port, err);
			ss_strbuf_printf(r, "err");
			break;
		}
		ss_notice("port %u added", cmd.port);
		mgr_state_save(m);
		ss_strbuf_printf(r, "ok");
		break;
	case SS_MGR_ADD_USER:
	case SS_MGR_REMOVE_USER:
		if ((rc = mgr_user(m, &cmd, err, sizeof(err))) < 0) {
			ss_err("%s on port %u: %s",
			       cmd.verb == SS_MGR_ADD_USER ? "add_user" : "remove_user", cmd.port,
			       err);
			ss_strbuf_printf(r, "err");
			break;
		}
		ss_notice("port %u: user %s %s", cmd.port,
			  cJSON_GetObjectItemCaseSensitive(cmd.user, "name")->valuestring,
			  cmd.verb == SS_MGR_ADD_USER ? "added" : "removed");
		mgr_state_save(m);
		ss_strbuf_printf(r, "ok");
		break;
	case SS_MGR_REMOVE:
		/* libev answers ok for a port it does not serve, too. */
		if (mgr_port_remove(m, cmd.port) < 0) {
			ss_warn("remove port %u: not served", cmd.port);
		} else {
			ss_notice("port %u removed", cmd.port);
			mgr_state_save(m);
		}
		ss_strbuf_printf(r, "ok");
		break;
	}
	ss_mgr_cmd_free(&cmd);
}

static void mgr_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_manager_t *m = w->data;
	(void)loop;
	(void)revents;

	for (int i = 0; i < MGR_BATCH && m->fd >= 0; i++) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		ss_strbuf_t r = {0};
		char from[SS_ADDR_STRLEN] = "a local socket";
		ssize_t n =
		    recvfrom(m->fd, m->buf, SS_MGR_CMD_MAX, 0, (struct sockaddr *)&sa, &salen);

		if (n < 0)
			break;
		if (sa.ss_family != AF_UNIX)
			ss_sockaddr_format((struct sockaddr *)&sa, from, sizeof(from));
		mgr_command(m, m->buf, (size_t)n, from, &r);
		if (r.failed || r.len > SS_MGR_CMD_MAX) {
			ss_err("control socket: the reply to %s does not fit a datagram", from);
			free(r.p);
			r = (ss_strbuf_t){0};
			ss_strbuf_printf(&r, "err");
		}
		if (r.len && salen > sizeof(sa_family_t) &&
		    sendto(m->fd, r.p, r.len, 0, (struct sockaddr *)&sa, salen) < 0)
			ss_debug("control socket: reply to %s: %s", from, strerror(errno));
		free(r.p);
	}
}

/* A Unix socket's path (nothing of HOST:PORT's form), or HOST:PORT. */
static bool mgr_is_unix(const char *addr)
{
	return addr[0] == '/' || addr[0] == '.' || !strchr(addr, ':');
}

static bool mgr_loopback(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static int mgr_bind_unix(ss_manager_t *m, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	mode_t old;
	int rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen,
			 "--manager-address %.128s: a Unix socket path is at most %zu bytes", path,
			 sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	m->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0)
		goto fail;
	/* A stale socket of an earlier run; never a file of another kind. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	old = umask(0177); /* the socket is made 0600, with no moment wider */
	rc = bind(m->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0)
		goto fail;
	strcpy(m->unix_path, path);
	ss_notice("control socket: %s (Unix, mode 0600)", path);
	return 0;
fail:
	rc = -errno;
	snprintf(err, errlen, "--manager-address %.128s: %s", path, strerror(errno));
	return rc;
}

static int mgr_bind(ss_manager_t *m, char *err, size_t errlen)
{
	const char *addr = m->cfg->manager_address;
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct sockaddr_storage sa;
	socklen_t len;
	char one[SS_ADDR_STRLEN], *end;
	long port;
	int rc;

	if (mgr_is_unix(addr))
		return mgr_bind_unix(m, addr, err, errlen);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 1 || port > 65535) {
		snprintf(err, errlen, "--manager-address %.128s: the port must be 1-65535", addr);
		return -EINVAL;
	}
	if ((rc = ss_sock_resolve_startup(host, (unsigned)port, false, true, &sa, &len, err,
					  errlen)) < 0)
		return rc;
	m->fd = socket(sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0 || bind(m->fd, (struct sockaddr *)&sa, len) < 0) {
		rc = -errno;
		snprintf(err, errlen, "--manager-address %.128s: %s", addr, strerror(errno));
		return rc;
	}
	ss_sockaddr_format((struct sockaddr *)&sa, one, sizeof(one));
	if (!mgr_loopback(&sa))
		ss_warn("control socket %s is not on loopback: whoever reaches it can add ports "
			"and read their passwords",
			one);
	else
		ss_notice("control socket: %s (UDP)", one);
	return 0;
}

/* The ports of the configuration's "port_password" not in the state file. */
static void mgr_port_password(ss_manager_t *m)
{
	cJSON *o = m->cfg->port_password ? cJSON_Parse(m->cfg->port_password) : NULL;
	char err[512];

	for (const cJSON *p = o ? o->child : NULL; p; p = p->next) {
		uint16_t port = (uint16_t)atoi(p->string);
		cJSON *fields = cJSON_CreateObject();

		if (mgr_port_find(m, port)) {
			cJSON_Delete(fields);
			continue;
		}
		if (!fields || !cJSON_AddStringToObject(fields, "password", p->valuestring)) {
			cJSON_Delete(fields);
			break;
		}
		if (mgr_port_add(m, port, fields, err, sizeof(err)) < 0)
			ss_err("port %u (port_password): %s", port, err);
	}
	cJSON_Delete(o);
}

int ss_manager_reconfigure(ss_manager_t *m, const ss_config_t *cfg, char *err, size_t errlen)
{
	const ss_config_t *was = m->cfg;
	char *defaults = m->defaults;

	if (strcmp(cfg->manager_address, was->manager_address) != 0 ||
	    strcmp(cfg->state_file, was->state_file) != 0 ||
	    strcmp(cfg->workdir, was->workdir) != 0) {
		snprintf(err, errlen,
			 "the control socket and the state file change only at a restart");
		return -EINVAL;
	}
	m->cfg = cfg;
	if (mgr_defaults(m) < 0) {
		m->cfg = was;
		m->defaults = defaults;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	free(defaults);
	mgr_port_password(m);
	mgr_state_save(m);
	return 0;
}

int ss_manager_create(const ss_config_t *cfg, struct ev_loop *loop, ss_manager_t **out, char *err,
		      size_t errlen)
{
	ss_manager_t *m = calloc(1, sizeof(*m));
	int rc;

	*out = NULL;
	if (!m || !(m->buf = malloc(SS_MGR_CMD_MAX + 1))) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->loop = loop;
	m->cfg = cfg;
	m->fd = -1;
	ev_timer_init(&m->reap, mgr_reap_cb, 0, 0);
	m->reap.data = m;
	if ((rc = mgr_defaults(m)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if ((rc = mgr_state_load(m, err, errlen)) < 0)
		goto fail;
	mgr_port_password(m);
	if ((rc = mgr_bind(m, err, errlen)) < 0)
		goto fail;
	ev_io_init(&m->io, mgr_io_cb, m->fd, EV_READ);
	m->io.data = m;
	ev_io_start(loop, &m->io);
	/* The file is not written back here: a port of it that could not
	 * start (its address taken for a moment) stays in it until a change. */
	if (!cfg->state_file[0])
		ss_warn("no state file (--state or -D/--workdir): ports added now are not kept "
			"across restarts");
	*out = m;
	return 0;
fail:
	ss_manager_destroy(m);
	return rc;
}

void ss_manager_stop(ss_manager_t *m, void (*done)(void *arg), void *arg)
{
	m->stopping = true;
	m->done = done;
	m->done_arg = arg;
	if (m->fd >= 0) {
		ev_io_stop(m->loop, &m->io);
		close(m->fd);
		m->fd = -1;
	}
	while (m->n_ports)
		mgr_port_remove(m, m->ports[m->n_ports - 1]->port);
	ev_timer_start(m->loop, &m->reap);
}

void ss_manager_destroy(ss_manager_t *m)
{
	if (!m)
		return;
	m->done = NULL;
	if (m->fd >= 0) {
		ev_io_stop(m->loop, &m->io);
		close(m->fd);
	}
	if (m->unix_path[0])
		unlink(m->unix_path);
	while (m->n_ports)
		mgr_port_remove(m, m->ports[m->n_ports - 1]->port);
	for (mgr_port_t *p = m->dying, *next; p; p = next) {
		next = p->next;
		ss_instance_destroy(p->inst);
		ss_config_free(p->cfg);
		cJSON_Delete(p->fields);
		free(p);
	}
	ev_timer_stop(m->loop, &m->reap);
	free(m->ports);
	free(m->defaults);
	free(m->buf);
	free(m);
}

size_t ss_manager_n_ports(const ss_manager_t *m)
{
	return m->n_ports;
}
