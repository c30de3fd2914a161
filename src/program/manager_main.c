/* SPDX-License-Identifier: MIT */
/* ss-manager's process around the manager (relay/manager.c): the control
 * socket and the ports made, the background, the user, the signals. */

#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program/program.h"
#include "relay/manager.h"
#include "util/log.h"
#include "util/notify.h"
#include "util/proc.h"

typedef struct mgr_run {
	struct ev_loop *loop;
	ss_manager_t *m;
	ss_notify_t *sd;
	/* SIGHUP: the command line and its file again, from where the
	 * program started; the configuration it made (the first is the
	 * caller's). */
	int argc;
	char **argv;
	int cwd; /* -1: unknown */
	bool daemonized;
	ss_config_t *cfg;
	bool cfg_owned;
} mgr_run_t;

static void mgr_reload(mgr_run_t *r)
{
	ss_config_t *cfg = calloc(1, sizeof(*cfg));
	char err[1024] = "out of memory";
	int rc = -1;

	ss_notice("SIGHUP: reading the configuration again");
	ss_notify_send(r->sd, "RELOADING=1");
	if (cfg && r->cwd >= 0 && fchdir(r->cwd) < 0)
		snprintf(err, sizeof(err), "cannot go back to the start-up directory: %s",
			 strerror(errno));
	else if (cfg && ss_config_parse(cfg, SS_PROG_MANAGER, r->argc, r->argv, stdout, err,
					sizeof(err)) == SS_CONFIG_RUN)
		rc = ss_manager_reconfigure(r->m, cfg, err, sizeof(err));
	if (rc < 0) {
		ss_err("reload refused, the running configuration stays: %s", err);
		if (cfg) {
			ss_config_clear(cfg);
			free(cfg);
		}
	} else {
		if (r->cfg_owned) {
			ss_config_clear(r->cfg);
			free(r->cfg);
		}
		r->cfg = cfg;
		r->cfg_owned = true;
		ss_notice("configuration reloaded: %zu ports", ss_manager_n_ports(r->m));
	}
	if (r->daemonized && chdir("/") < 0)
		ss_warn("cannot go back to /: %s", strerror(errno));
	ss_notify_send(r->sd, "READY=1");
}

static void mgr_done(void *arg)
{
	mgr_run_t *r = arg;

	ev_break(r->loop, EVBREAK_ALL);
}

static void mgr_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	mgr_run_t *r = w->data;
	(void)loop;
	(void)revents;

	if (w->signum == SIGHUP) {
		mgr_reload(r);
		return;
	}

	ss_notice("signal %d: shutting down", w->signum);
	ss_manager_stop(r->m, mgr_done, r);
}

int ss_program_manager(ss_config_t *cfg, struct ev_loop *loop, ss_notify_t *sd, int argc,
		       char **argv)
{
	mgr_run_t r = {.loop = loop, .sd = sd, .argc = argc, .argv = argv, .cfg = cfg};
	ev_signal sigint, sigterm, sighup;
	int notify = -1, rc;
	char err[1024];

	/* In the background first: the control socket, the ports and their
	 * plugins are the daemon's, and why it could not start them reaches
	 * the waiting foreground process. */
	r.cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r.daemonized = cfg->pid_file[0] != '\0';
	if (cfg->pid_file[0]) {
		rc = ss_proc_daemonize(cfg->pid_file, &notify, err, sizeof(err));
		if (rc != 0) {
			if (rc < 0)
				ss_err("%s", err);
			return rc < 0 ? 1 : 0;
		}
		ev_loop_fork(loop);
		ss_log_to_syslog();
	}
	if (ss_manager_create(cfg, loop, &r.m, err, sizeof(err)) < 0) {
		ss_err("%s", err);
		ss_proc_daemon_ready(&notify, err);
		return 1;
	}
	if (cfg->user[0] && ss_proc_drop_user(cfg->user, err, sizeof(err)) < 0) {
		ss_err("%s", err);
		ss_proc_daemon_ready(&notify, err);
		ss_manager_destroy(r.m);
		return 1;
	}
	ss_notice("ss-manager %s started, %zu ports", SS_VERSION, ss_manager_n_ports(r.m));
	ss_proc_daemon_ready(&notify, NULL);
	ss_notify_send(sd, "READY=1\nMAINPID=%d\nSTATUS=serving %zu ports", (int)getpid(),
		       ss_manager_n_ports(r.m));
	ev_signal_init(&sigint, mgr_signal_cb, SIGINT);
	ev_signal_init(&sigterm, mgr_signal_cb, SIGTERM);
	ev_signal_init(&sighup, mgr_signal_cb, SIGHUP);
	sigint.data = sigterm.data = sighup.data = &r;
	ev_signal_start(loop, &sigint);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sighup);
	ev_run(loop, 0);
	ev_signal_stop(loop, &sigint);
	ev_signal_stop(loop, &sigterm);
	ev_signal_stop(loop, &sighup);
	ss_notify_send(sd, "STOPPING=1");
	ss_manager_destroy(r.m);
	if (r.cfg_owned) {
		ss_config_clear(r.cfg);
		free(r.cfg);
	}
	if (r.cwd >= 0)
		close(r.cwd);
	return 0;
}
