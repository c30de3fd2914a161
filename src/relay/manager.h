/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_MANAGER_H
#define SS_RELAY_MANAGER_H

/* ss-manager: many ss-server ports in one process, each an ss_instance on
 * one of the manager's workers (the loop it is given, and --workers - 1
 * threads of a loop each), added and removed over a control socket that
 * speaks shadowsocks-libev's manager protocol (proto/mgrcmd.h), kept in a
 * state file across restarts, their figures served with --metrics. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

struct ev_loop;
typedef struct ss_manager ss_manager_t;

/* Starts the workers' threads, binds the control socket
 * (cfg->manager_address) and the metrics endpoint (cfg->metrics), reads
 * the state file and the configuration's "port_password", and starts their
 * ports, spread over the workers. loop is worker 0's and the control
 * socket's; the caller runs it. cfg (SS_PROG_MANAGER, parsed) must outlive
 * the manager. 0, or -errno with err holding one line (a damaged state
 * file, the control socket, the metrics address); a port that cannot start
 * is logged and left out. */
int ss_manager_create(const ss_config_t *cfg, struct ev_loop *loop, ss_manager_t **out, char *err,
		      size_t errlen);

/* SIGHUP: cfg (parsed again, outliving the manager or the next call)
 * replaces the manager's settings for the ports added from now on (the
 * defaults, "plugins", "acl_dir", "block_private") and adds the ports its
 * "port_password" names that are not served; the running ports go on as
 * they are. The control socket, the state file, the metrics address and
 * the workers change only at a restart: a cfg that changes them is
 * refused. 0 or -errno with err (the running settings stay). */
int ss_manager_reconfigure(ss_manager_t *m, const ss_config_t *cfg, char *err, size_t errlen);

/* Stops every port, the control socket and the metrics endpoint; done (cb
 * called, once) when every port has stopped its plugins. From the loop's
 * thread. */
void ss_manager_stop(ss_manager_t *m, void (*done)(void *arg), void *arg);

/* Frees m and what is left of its ports, and ends the workers' threads.
 * NULL is allowed. */
void ss_manager_destroy(ss_manager_t *m);

/* The ports served now (tests). */
size_t ss_manager_n_ports(const ss_manager_t *m);

#endif
