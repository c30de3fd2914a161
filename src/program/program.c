/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "config/config.h"
#include "net/inherit.h"
#include "program/check.h"
#include "program/online.h"
#include "program/program.h"
#include "relay/instance.h"
#include "relay/workers.h"
#include "shadowsocks.h"
#include "util/qr.h"
#include "util/tarena.h"
#include "util/log.h"
#include "util/notify.h"
#include "util/proc.h"

/* The whole life of a program: configuration, process set-up, the loop. */

/* libev grows its arrays (descriptors, pending events) to the largest load
 * seen so far; its allocator hook, process-wide like libev itself, puts them
 * in an arena per thread (util/tarena.h) reserved on first use rather than
 * on the heap. */
#define PROGRAM_EV_ARENA_PER_CLASS (1u << 20)
static ss_tarenas_t program_ev_arenas = SS_TARENAS_INIT(PROGRAM_EV_ARENA_PER_CLASS);

static void *program_ev_alloc(void *ptr, long size)
{
	if (size == 0) {
		ss_tarenas_free(&program_ev_arenas, ptr);
		return NULL;
	}
	return ss_tarenas_realloc(&program_ev_arenas, ptr, (size_t)size);
}

/* A configuration that a reload replaced, with its workers, which serve
 * the connections it had until they end. */
#define PROGRAM_RETIRED_MAX 32
typedef struct program_retired {
	ss_workers_t workers;
	ss_config_t *cfg;
	bool owned; /* cfg was allocated by a reload (else: the first, freed at exit) */
} program_retired_t;

/* One program's run: what its callbacks need. */
typedef struct program {
	struct ev_loop *loop;
	ss_instance_t *inst;
	ss_workers_t workers; /* --workers: the threads beside this one */
	ss_config_t *cfg;     /* the running configuration */
	bool cfg_owned;       /* made by a reload (freed with its workers) */
	int notify;           /* -f: where the foreground process waits for our word; else -1 */
	ss_notify_t sd;       /* the service manager's readiness socket (Type=notify) */
	int rc;               /* the exit status */
	/* SIGHUP reads the command line and its file again, from the
	 * directory the program started in. */
	ss_prog_t prog;
	int argc;
	char **argv;
	int cwd;         /* that directory, open; -1: unknown */
	bool daemonized; /* it has left it for / since */
	program_retired_t retired[PROGRAM_RETIRED_MAX];
	size_t n_retired;
	ev_timer reap; /* frees what retired once it has no connection left */
	/* The online configuration (SIP008): its fetches, the last good
	 * document (its servers run), a reload waiting for its fetch, and
	 * what the fetch at start brought. */
	ss_online_t online;
	ss_sip008_t *doc;
	ss_config_t *pending;
	bool starting;
	ss_sip008_t *start_doc;
	char start_err[512];
} program_t;

static void program_online_free(program_t *p);

/* The service manager's READY=1, once the listeners are open and the plugins
 * up, with where we listen for `systemctl status`. */
static void program_sd_ready(program_t *p)
{
	char status[512] = "", one[SS_ADDR_STRLEN];
	size_t used = 0;
	struct sockaddr_storage sa;

	for (size_t i = 0; i < p->inst->n_listeners + p->inst->udp.n_listeners; i++) {
		bool tcp = i < p->inst->n_listeners;
		socklen_t len = sizeof(sa);
		int fd = tcp ? p->inst->listeners[i].io.fd
			     : p->inst->udp.listeners[i - p->inst->n_listeners].io.fd;
		if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || used >= sizeof(status))
			continue;
		used +=
		    (size_t)snprintf(status + used, sizeof(status) - used, "%s%s %s",
				     used ? ", " : "", tcp ? "tcp" : "udp",
				     ss_sockaddr_format((struct sockaddr *)&sa, one, sizeof(one)));
	}
	ss_notify_send(&p->sd, "READY=1\nMAINPID=%d\nSTATUS=listening on %s", (int)getpid(),
		       status);
}

/* The loop runs on after a signal until the instance has stopped its
 * plugins and reaped them (STOPPED). */
static void program_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	program_t *p = w->data;
	(void)loop;
	(void)revents;

	ss_notice("signal %d: shutting down", w->signum);
	ss_notify_send(&p->sd, "STOPPING=1");
	for (size_t i = 0; i < p->n_retired; i++) {
		ss_workers_stop(&p->retired[i].workers);
		ss_instance_stop(p->retired[i].workers.w[0].inst);
	}
	ss_workers_stop(&p->workers);
	ss_instance_stop(p->inst);
}

static void program_event_cb(ss_instance_t *inst, ss_instance_event_t ev, const char *msg,
			     void *arg)
{
	program_t *p = arg;
	(void)inst;

	switch (ev) {
	case SS_INSTANCE_READY:
		ss_proc_daemon_ready(&p->notify, NULL);
		program_sd_ready(p);
		break;
	case SS_INSTANCE_FAILED:
		ss_err("%s", msg);
		ss_proc_daemon_ready(&p->notify, msg);
		p->rc = 1;
		break;
	case SS_INSTANCE_STOPPED:
		ev_break(p->loop, EVBREAK_ALL);
		break;
	}
}

static const char *program_name(ss_prog_t prog)
{
	return prog == SS_PROG_SERVER    ? "ss-server"
	       : prog == SS_PROG_TUNNEL  ? "ss-tunnel"
	       : prog == SS_PROG_REDIR   ? "ss-redir"
	       : prog == SS_PROG_MANAGER ? "ss-manager"
					 : "ss-local";
}

/* ss-server --print-url: each URL on stdout, with a QR code of it for a
 * phone's camera; what the user must know goes to stderr. */
static void program_share_cb(void *arg, const char *url, bool placeholder, const char *user)
{
	const char *name = arg;
	int rc;

	if (user)
		printf("user %s:\n", user);
	printf("%s\n", url);
	if (placeholder) {
		fprintf(stderr,
			"%s: the server listens on every address: replace %s in the URL with an "
			"address or name clients reach it at (or give that address with -s); no "
			"QR code for a URL that must be edited\n",
			name, SS_URL_PLACEHOLDER);
		return;
	}
	rc = ss_qr_write(url, isatty(STDOUT_FILENO), stdout);
	if (rc == -ENOTSUP)
		fprintf(stderr,
			"%s: --print-url: this build has no QR codes (built without libqrencode)\n",
			name);
	else if (rc < 0)
		fprintf(stderr, "%s: no QR code: %s\n", name, strerror(-rc));
	printf("\n");
}

/* A start that failed after the workers were set up: says why (to the log
 * and to a waiting parent or systemd), releases everything, exit code 1. */
static int program_fail(program_t *p, ss_config_t *cfg, const char *err)
{
	ss_err("%s", err);
	ss_proc_daemon_ready(&p->notify, err);
	program_online_free(p);
	ss_workers_destroy(&p->workers);
	ss_config_clear(cfg);
	return 1;
}

/* The one method the program runs: ss-server's, or the one all of a
 * client's servers share; NULL when they differ. */
static const ss_method_t *program_method(const ss_config_t *cfg)
{
	const ss_method_t *m = cfg->method;

	if (cfg->prog == SS_PROG_SERVER)
		return m;
	m = cfg->servers[0].method;
	for (size_t i = 1; i < cfg->n_servers; i++)
		if (cfg->servers[i].method != m)
			return NULL;
	return m;
}

/* --check: what would run, or the first problem; starts nothing. */
static int program_check(ss_config_t *cfg, const char *name)
{
	char err[1024];
	int rc;

	ss_check_warnings(cfg, stderr);
	rc = ss_check_run(cfg, stdout, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s%s: %s\n", ss_log_stderr_prefix(SS_LOG_ERROR), name, err);
	ss_config_clear(cfg);
	return rc < 0 ? 1 : 0;
}

/* --print-url: the URLs that share the configuration; starts nothing. */
static int program_print_url(ss_config_t *cfg, const char *name)
{
	char err[1024];
	int rc;

	ss_check_warnings(cfg, stderr);
	rc = ss_config_share_urls(cfg, program_share_cb, (void *)name, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s: %s\n", name, err);
	fflush(stdout);
	ss_config_clear(cfg);
	return rc < 0 ? 1 : 0;
}

/* The crypto library and the configuration (command line, JSON); --help,
 * --version, --check and --print-url are answered here. true: run the
 * program; false: it is done, with exit status *status. */
static bool program_configure(ss_config_t *cfg, ss_prog_t prog, int argc, char **argv, int *status)
{
	const char *name = program_name(prog);
	char err[1024];

	*status = 1;
	if (ss_codec_global_init() < 0) {
		fprintf(stderr, "%s%s: cannot initialise the crypto library\n",
			ss_log_stderr_prefix(SS_LOG_ERROR), name);
		return false;
	}
	switch (ss_config_parse(cfg, prog, argc, argv, stdout, err, sizeof(err))) {
	case SS_CONFIG_HELP:
	case SS_CONFIG_VERSION:
		*status = 0;
		return false;
	case SS_CONFIG_ERROR:
		fprintf(stderr, "%s%s: %s\n", ss_log_stderr_prefix(SS_LOG_ERROR), name, err);
		return false;
	case SS_CONFIG_RUN:
		break;
	}
	if (cfg->check) {
		*status = program_check(cfg, name);
		return false;
	}
	if (cfg->print_url) {
		*status = program_print_url(cfg, name);
		return false;
	}
	return true;
}

/* The log, the service manager's socket, and what the user should know
 * before anything starts. */
static void program_log_setup(program_t *p, const ss_config_t *cfg, const char *name)
{
	char err[1024];

	ss_log_setup(name, cfg->verbose, cfg->use_syslog);
	/* Taken out of the environment before plugins inherit it. */
	if (ss_notify_open(&p->sd, err, sizeof(err)) < 0)
		ss_warn("%s", err);
	/* Which file, above all when none was named: a package's and libev's
	 * may both be there. */
	if (cfg->config_file[0])
		ss_notice("configuration from %s%s", cfg->config_file,
			  cfg->config_default ? " (the default file: no settings given)" : "");
	ss_check_warnings(cfg, NULL);
	/* A client's servers say so each (relay/servers.c). */
	if (cfg->key_ignored && cfg->prog == SS_PROG_SERVER)
		ss_warn("method %s encrypts nothing: the password or key is not used",
			cfg->method->name);
	if (cfg->nofile > 0 && ss_proc_set_nofile(cfg->nofile, err, sizeof(err)) < 0)
		ss_warn("%s", err);
}

/* Worker 0 on the default loop, and the workers beside it (not started
 * yet). 0, or -errno with err saying why (nothing is left to release). */
static int program_create(program_t *p, const ss_config_t *cfg, char *err, size_t errlen)
{
	ev_set_allocator(program_ev_alloc);
	p->loop = EV_DEFAULT;
	if (cfg->workers > 1)
		ss_log_set_worker(0);
	if (ss_workers_create(&p->workers, cfg, p->loop, NULL, err, errlen) < 0)
		return -1;
	p->inst = p->workers.w[0].inst;
	return 0;
}

/* With a pid file, the program goes on in the background. true: this
 * process goes on (the daemon, or no pid file); false: it is done (the
 * foreground part, or a failed fork), with exit status *status, having let
 * go of what the daemon now holds on its own. */
static bool program_daemonize(program_t *p, ss_config_t *cfg, int *status)
{
	char err[1024];
	int rc;

	if (!cfg->pid_file[0])
		return true;
	/* The foreground part waits for the word that the background one
	 * serves (its plugins up), or why it could not. */
	rc = ss_proc_daemonize(cfg->pid_file, &p->notify, err, sizeof(err));
	if (rc != 0) {
		if (rc < 0)
			ss_err("%s", err);
		program_online_free(p);
		ss_workers_destroy(&p->workers);
		ss_config_clear(cfg);
		*status = rc < 0 ? 1 : 0;
		return false;
	}
	ev_loop_fork(p->loop);
	ss_workers_forked(&p->workers);
	ss_log_to_syslog(); /* stderr is /dev/null now */
	return true;
}

static void program_log_started(const ss_config_t *cfg, const char *name)
{
	const ss_method_t *m = program_method(cfg);
	char what[256];

	if (m)
		ss_notice("%s %s started, method %s (%s)", name, SS_VERSION, m->name,
			  ss_codec_impl(ss_codec_backend(), m, what, sizeof(what)));
	else
		ss_notice("%s %s started, %zu servers with methods of their own", name, SS_VERSION,
			  cfg->n_servers);
	if (cfg->workers > 1)
		ss_notice("%d workers, each a loop on a thread of its own", cfg->workers);
}

/* ---- SIGHUP: the configuration read again ---------------------------- */

static void program_free_cfg(ss_config_t *cfg, bool owned)
{
	ss_config_clear(cfg);
	if (owned)
		free(cfg);
}

/* What a reload leaves to the workers it replaced, freed once they have
 * no connection left. */
static void program_reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	program_t *p = w->data;
	(void)revents;

	for (size_t i = 0; i < p->n_retired;) {
		program_retired_t *r = &p->retired[i];
		if (!ss_workers_done(&r->workers)) {
			i++;
			continue;
		}
		ss_workers_join(&r->workers);
		ss_workers_destroy(&r->workers);
		if (r->owned)
			program_free_cfg(r->cfg, true);
		ss_notice("the configuration before a reload has no connection left");
		*r = p->retired[--p->n_retired];
	}
	if (!p->n_retired)
		ev_timer_stop(loop, w);
}

/* The command line and its file again, from where the program started,
 * into cfg; what a reload cannot change is refused. 0 or -1 with err. */
static int program_reparse(program_t *p, ss_config_t *cfg, char *err, size_t errlen)
{
	ss_config_status_t rc;

	if (p->cwd >= 0 && fchdir(p->cwd) < 0) {
		snprintf(err, errlen, "cannot go back to the start-up directory: %s",
			 strerror(errno));
		return -1;
	}
	rc = ss_config_parse(cfg, p->prog, p->argc, p->argv, stdout, err, errlen);
	if (rc != SS_CONFIG_RUN) {
		if (rc != SS_CONFIG_ERROR)
			snprintf(err, errlen, "the command line asks for no relay");
		return -1;
	}
	/* ss-server's plugins hold its port themselves: two sets cannot. */
	if (p->prog == SS_PROG_SERVER && (p->workers.shared->n_plugins || cfg->plugin[0])) {
		snprintf(err, errlen, "ss-server with a SIP003 plugin changes only at a restart");
		return -1;
	}
	if (strcmp(cfg->user, p->cfg->user) != 0 || strcmp(cfg->pid_file, p->cfg->pid_file) != 0 ||
	    cfg->use_syslog != p->cfg->use_syslog || cfg->nofile != p->cfg->nofile)
		ss_warn("reload: the user, pid file, log and descriptor limit change only at a "
			"restart");
	return 0;
}

/* The new workers take over the listeners that stay (net/inherit.h), the
 * replay records and the figures (relay/shared.h), then the running ones
 * retire: they accept nothing more and serve what they have until it ends.
 * On any error the running configuration stays. */
static int program_swap(program_t *p, ss_config_t *cfg, char *err, size_t errlen)
{
	ss_workers_t next;
	int rc;

	for (unsigned i = 0; i < p->workers.n; i++)
		ss_instance_offer_listeners(p->workers.w[i].inst);
	if (p->workers.metrics)
		ss_inherit_offer(p->workers.metrics->lis.fd);
	rc = ss_workers_create(&next, cfg, p->loop, &p->workers, err, errlen);
	if (rc == 0 && (rc = ss_workers_start(&next, err, errlen)) < 0)
		ss_workers_destroy(&next);
	if (rc < 0) {
		ss_inherit_clear();
		return -1;
	}
	ss_workers_retire(&p->workers);
	ss_inherit_clear();
	p->retired[p->n_retired++] =
	    (program_retired_t){.workers = p->workers, .cfg = p->cfg, .owned = p->cfg_owned};
	p->workers = next;
	p->cfg = cfg;
	p->cfg_owned = true;
	p->inst = next.w[0].inst;
	ss_instance_set_cb(p->inst, program_event_cb, p);
	ev_timer_again(p->loop, &p->reap);
	return 0;
}

/* The end of a reload: cfg swapped in, or refused with err (cfg freed). */
static void program_reload_end(program_t *p, ss_config_t *cfg, const char *err)
{
	if (err) {
		ss_err("reload refused, the running configuration stays: %s", err);
		if (cfg)
			program_free_cfg(cfg, true);
		ss_notify_send(&p->sd, "READY=1");
	} else {
		ss_notice("configuration reloaded");
	}
}

/* ---- The online configuration (SIP008) -------------------------------- */

/* cfg with doc's servers after its own; says what was left out. */
static int program_with_doc(ss_config_t *cfg, const ss_sip008_t *doc, char *err, size_t errlen)
{
	size_t left_out;

	if (ss_config_set_document(cfg, doc, &left_out, err, errlen) < 0)
		return -1;
	if (left_out)
		ss_warn("online configuration: %zu of its servers left out (at most %d servers in "
			"all)",
			left_out, SS_MAX_SERVERS);
	return 0;
}

static void program_doc_keep(program_t *p, ss_sip008_t *doc)
{
	if (doc == p->doc)
		return;
	ss_online_doc_free(p->doc);
	p->doc = doc;
}

/* A document that differs from the running one: the running
 * configuration with its servers, swapped in as a reload is. */
static void program_online_apply(program_t *p, ss_sip008_t *doc)
{
	char err[1024];
	ss_config_t *cfg = NULL;

	if (p->doc && ss_sip008_same(p->doc, doc)) {
		ss_info("online configuration: unchanged, %zu servers", doc->n);
		ss_online_doc_free(doc);
		return;
	}
	if (p->n_retired == PROGRAM_RETIRED_MAX)
		snprintf(err, sizeof(err), "%d earlier configurations still serve connections",
			 PROGRAM_RETIRED_MAX);
	else if (!(cfg = calloc(1, sizeof(*cfg))) || ss_config_copy(cfg, p->cfg) < 0)
		snprintf(err, sizeof(err), "out of memory");
	if (p->n_retired == PROGRAM_RETIRED_MAX || !cfg || !cfg->validated ||
	    program_with_doc(cfg, doc, err, sizeof(err)) < 0 ||
	    program_swap(p, cfg, err, sizeof(err)) < 0) {
		ss_err("online configuration refused, the servers stay as they are: %s", err);
		if (cfg)
			program_free_cfg(cfg, true);
		ss_online_doc_free(doc);
		return;
	}
	ss_notice("online configuration: %zu servers now (%zu before)", doc->n,
		  p->doc ? p->doc->n : 0);
	program_doc_keep(p, doc);
}

/* A reload's fetch has ended: its configuration with the new document,
 * or with the last good one when the URL is the same. */
static void program_reload_online(program_t *p, ss_sip008_t *doc, const char *why)
{
	ss_config_t *cfg = p->pending;
	bool same_url = strcmp(cfg->online_url, p->cfg->online_url) == 0;
	ss_sip008_t *use = doc ? doc : same_url ? p->doc : NULL;
	char err[1024];

	p->pending = NULL;
	if (!doc)
		ss_err("online configuration: %s%s", why, use ? "; its last good list stays" : "");
	if (use && program_with_doc(cfg, use, err, sizeof(err)) < 0)
		cfg = (program_reload_end(p, cfg, err), NULL);
	else if (!use && cfg->n_servers == 0)
		cfg = (program_reload_end(p, cfg, "no server: the online configuration failed"),
		       NULL);
	else if (program_swap(p, cfg, err, sizeof(err)) < 0)
		cfg = (program_reload_end(p, cfg, err), NULL);
	if (!cfg) {
		ss_online_doc_free(doc);
		return;
	}
	program_reload_end(p, NULL, NULL);
	if (use)
		program_doc_keep(p, use);
	else
		program_doc_keep(p, NULL);
}

static void program_online_cb(void *arg, ss_sip008_t *doc, const char *err)
{
	program_t *p = arg;

	if (p->starting) {
		p->start_doc = doc;
		if (!doc)
			snprintf(p->start_err, sizeof(p->start_err), "%s", err);
		ev_break(p->loop, EVBREAK_ONE);
	} else if (p->pending) {
		program_reload_online(p, doc, err);
	} else if (!doc) {
		ss_err("online configuration: %s; the servers stay as they are", err);
	} else {
		program_online_apply(p, doc);
	}
}

static void program_online_free(program_t *p)
{
	ss_online_stop(&p->online);
	program_doc_keep(p, NULL);
	if (p->pending)
		program_free_cfg(p->pending, true);
	p->pending = NULL;
}

/* Before serving: the document's servers join cfg's. Without a server of
 * its own, cfg cannot do without them: -1 with err. */
static int program_online_start(program_t *p, ss_config_t *cfg, char *err, size_t errlen)
{
	if (!cfg->online_url[0])
		return 0;
	ev_set_allocator(program_ev_alloc);
	p->loop = EV_DEFAULT;
	if (ss_online_configure(&p->online, p->loop, cfg, program_online_cb, p, p->start_err,
				sizeof(p->start_err)) == 0 &&
	    ss_online_fetch_now(&p->online, p->start_err, sizeof(p->start_err)) == 0) {
		struct sigaction ign = {.sa_handler = SIG_IGN}, hup;

		ss_notice("fetching the online configuration from %s", p->online.shown);
		/* No reload before the first configuration serves: a SIGHUP now
		 * is dropped, not the default end of the process. */
		sigemptyset(&ign.sa_mask);
		sigaction(SIGHUP, &ign, &hup);
		p->starting = true;
		ev_run(p->loop, 0);
		p->starting = false;
		sigaction(SIGHUP, &hup, NULL);
	}
	if (p->start_doc &&
	    program_with_doc(cfg, p->start_doc, p->start_err, sizeof(p->start_err)) == 0) {
		ss_notice("online configuration: %zu servers", p->start_doc->n);
		program_doc_keep(p, p->start_doc);
		return 0;
	}
	ss_online_doc_free(p->start_doc);
	if (cfg->n_servers == 0) {
		snprintf(err, errlen, "online configuration: %s", p->start_err);
		return -1;
	}
	ss_warn("online configuration: %s; going on with the %zu servers of the configuration",
		p->start_err, cfg->n_servers);
	return 0;
}

static void program_reload(program_t *p)
{
	char err[1024];
	ss_config_t *cfg;

	ss_notice("SIGHUP: reading the configuration again");
	ss_notify_send(&p->sd, "RELOADING=1");
	cfg = calloc(1, sizeof(*cfg));
	if (p->n_retired == PROGRAM_RETIRED_MAX)
		snprintf(err, sizeof(err), "%d earlier configurations still serve connections",
			 PROGRAM_RETIRED_MAX);
	else if (!cfg)
		snprintf(err, sizeof(err), "out of memory");
	if (p->n_retired == PROGRAM_RETIRED_MAX || !cfg ||
	    program_reparse(p, cfg, err, sizeof(err)) < 0) {
		program_reload_end(p, cfg, err);
	} else if (cfg->online_url[0]) {
		/* The swap waits for the document (program_reload_online). */
		if (p->pending)
			program_free_cfg(p->pending, true);
		p->pending = cfg;
		if (ss_online_configure(&p->online, p->loop, cfg, program_online_cb, p, err,
					sizeof(err)) < 0 ||
		    ss_online_fetch_now(&p->online, err, sizeof(err)) < 0)
			program_reload_online(p, NULL, err);
	} else {
		ss_online_stop(&p->online);
		/* An earlier reload's fetch no longer matters: this one wins. */
		if (p->pending)
			program_free_cfg(p->pending, true);
		p->pending = NULL;
		if (program_swap(p, cfg, err, sizeof(err)) < 0) {
			program_reload_end(p, cfg, err);
		} else {
			program_reload_end(p, NULL, NULL);
			program_doc_keep(p, NULL);
		}
	}
	if (p->daemonized && chdir("/") < 0)
		ss_warn("cannot go back to /: %s", strerror(errno));
}

static void program_hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	program_reload(w->data);
}

/* Runs worker 0's loop until it stops (a signal, or a plugin that failed),
 * then stops the other workers and waits for them. */
static void program_run(program_t *p)
{
	ev_signal sigint, sigterm, sighup;

	ss_instance_set_cb(p->inst, program_event_cb, p);
	ev_signal_init(&sigint, program_signal_cb, SIGINT);
	ev_signal_init(&sigterm, program_signal_cb, SIGTERM);
	ev_signal_init(&sighup, program_hup_cb, SIGHUP);
	sigint.data = sigterm.data = sighup.data = p;
	ev_init(&p->reap, program_reap_cb);
	p->reap.repeat = 0.25;
	p->reap.data = p;
	ev_signal_start(p->loop, &sigint);
	ev_signal_start(p->loop, &sigterm);
	ev_signal_start(p->loop, &sighup);
	ev_run(p->loop, 0);
	ev_signal_stop(p->loop, &sigint);
	ev_signal_stop(p->loop, &sigterm);
	ev_signal_stop(p->loop, &sighup);
	ev_timer_stop(p->loop, &p->reap);
	ss_workers_stop(&p->workers);
	ss_workers_join(&p->workers);
	if (p->cfg->workers > 1)
		ss_workers_log_stats(p->inst);
	while (p->n_retired) {
		program_retired_t *r = &p->retired[--p->n_retired];
		ss_workers_stop(&r->workers);
		ss_workers_join(&r->workers);
		ss_workers_destroy(&r->workers);
		if (r->owned)
			program_free_cfg(r->cfg, true);
	}
}

int ss_program_main(ss_prog_t prog, int argc, char **argv)
{
	static ss_config_t cfg;
	const char *name = program_name(prog);
	program_t p = {.notify = -1,
		       .sd = {.fd = -1},
		       .cfg = &cfg,
		       .prog = prog,
		       .argc = argc,
		       .argv = argv,
		       .cwd = -1};
	char err[1024];
	int status;

	signal(SIGPIPE, SIG_IGN);
	if (!program_configure(&cfg, prog, argc, argv, &status))
		return status;
	program_log_setup(&p, &cfg, name);
	if (prog == SS_PROG_MANAGER) {
		ev_set_allocator(program_ev_alloc);
		status = ss_program_manager(&cfg, EV_DEFAULT, &p.sd, argc, argv);
		ss_notify_close(&p.sd);
		ss_config_clear(&cfg);
		return status;
	}
	if (program_online_start(&p, &cfg, err, sizeof(err)) < 0 ||
	    program_create(&p, &cfg, err, sizeof(err)) < 0) {
		program_online_free(&p);
		ss_err("%s", err);
		ss_config_clear(&cfg);
		return 1;
	}
	p.cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!program_daemonize(&p, &cfg, &status))
		return status;
	p.daemonized = cfg.pid_file[0] != '\0';
	if (cfg.user[0] && ss_proc_drop_user(cfg.user, err, sizeof(err)) < 0)
		return program_fail(&p, &cfg, err);
	program_log_started(&cfg, name);
	if (ss_workers_start(&p.workers, err, sizeof(err)) < 0)
		return program_fail(&p, &cfg, err);
	program_run(&p);
	program_online_free(&p);
	ss_proc_daemon_ready(&p.notify, "stopped before it started");
	ss_workers_destroy(&p.workers);
	ss_notify_close(&p.sd);
	if (p.cfg_owned)
		program_free_cfg(p.cfg, true);
	ss_config_clear(&cfg);
	if (p.cwd >= 0)
		close(p.cwd);
	return p.rc;
}
