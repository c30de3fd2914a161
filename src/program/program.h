/* SPDX-License-Identifier: MIT */
#ifndef SS_PROGRAM_PROGRAM_H
#define SS_PROGRAM_PROGRAM_H

#include "config/config.h"
#include "util/notify.h"

struct ev_loop;

/* ss-manager's run once its configuration is parsed (from argc, argv,
 * parsed again on SIGHUP) and logging set up (manager_main.c): serves
 * until SIGINT or SIGTERM. The exit status. */
int ss_program_manager(ss_config_t *cfg, struct ev_loop *loop, ss_notify_t *sd, int argc,
		       char **argv);

#endif
