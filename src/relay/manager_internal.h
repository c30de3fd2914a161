/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_MANAGER_INTERNAL_H
#define SS_RELAY_MANAGER_INTERNAL_H

/* Shared by manager.c (the control socket), manager_port.c (a port's life)
 * and manager_state.c (the state file). */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "relay/manager.h"
#include "shadowsocks.h"

struct cJSON;

/* One port: what it was added with, and the instance serving it. */
typedef struct mgr_port {
	uint16_t port;
	struct cJSON *fields; /* as ss_mgr_port_parse gives them */
	ss_config_t *cfg;
	ss_instance_t *inst;
	ss_manager_t *m;
	bool stopped; /* its STOPPED came: destroy it */
	/* Replaced by an instance of new settings (add_user, remove_user):
	 * it serves the connections it has until they end. */
	bool replaced;
	struct mgr_port *next; /* in m->dying */
} mgr_port_t;

struct ss_manager {
	struct ev_loop *loop;
	const ss_config_t *cfg;
	char *defaults; /* the manager's settings for every port, as JSON text */
	int fd;         /* the control socket; -1 once stopped */
	ev_io io;
	char unix_path[108]; /* a Unix socket's path, unlinked at the end */
	mgr_port_t **ports;  /* served, in the order they were added */
	size_t n_ports, cap;
	mgr_port_t *dying; /* stopped, waiting for their STOPPED */
	ev_timer reap;     /* destroys the dying that have stopped */
	bool stopping;
	void (*done)(void *arg);
	void *done_arg;
	char *buf; /* a datagram received, and room for the NUL */
};

/* ---- manager_port.c ---- */
/* Builds the defaults' JSON from the manager's configuration. 0 or -ENOMEM. */
int mgr_defaults(ss_manager_t *m);
/* Starts port with fields (taken over by the port, freed on failure). 0,
 * or -errno with err naming the reason; nothing is left made. */
int mgr_port_add(ss_manager_t *m, uint16_t port, struct cJSON *fields, char *err, size_t errlen);
/* Serves p's port with fields (taken over, freed on failure) instead:
 * the new instance takes p's listening sockets, p's goes on serving its
 * connections until they end, but those of the user named gone (NULL:
 * none), which end now. 0, or -errno with err; p unchanged then. */
int mgr_port_replace(ss_manager_t *m, mgr_port_t *p, struct cJSON *fields, const char *gone,
		     char *err, size_t errlen);
/* Bytes both ways since the port was added, its earlier instances
 * included. */
uint64_t mgr_port_bytes(const mgr_port_t *p);
/* Stops the port: its listeners close once it has stopped. -ENOENT. */
int mgr_port_remove(ss_manager_t *m, uint16_t port);
mgr_port_t *mgr_port_find(ss_manager_t *m, uint16_t port);
/* The method the port runs, by name. */
const char *mgr_port_method(const mgr_port_t *p);
void mgr_reap_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ---- manager_state.c ---- */
/* Writes every port and its fields to the state file (none: nothing to
 * do), atomically, mode 0600. 0 or -errno, logged. */
int mgr_state_save(ss_manager_t *m);
/* Adds the ports of the state file, if there is one. 0, or -EINVAL with err
 * when it is damaged (a port that does not start is logged and skipped). */
int mgr_state_load(ss_manager_t *m, char *err, size_t errlen);

#endif
