/* SPDX-License-Identifier: MIT */
#include "net/plugin.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/ports.h"
#include "proto/url.h"
#include "util/log.h"

/* Looks for its ports this long after the start, doubling up to the most. */
#define PLUGIN_PROBE_FIRST 0.005
#define PLUGIN_PROBE_MOST 0.25
/* Where the system cannot say which ports are open: up after this long. */
#define PLUGIN_BLIND_UP 1.0

extern char **environ;

static const char *const plugin_env_names[] = {
    "SS_REMOTE_HOST=", "SS_REMOTE_PORT=", "SS_LOCAL_HOST=", "SS_LOCAL_PORT=", "SS_PLUGIN_OPTIONS="};

/* 0 when path is a file we may execute; else -errno and why. */
static int plugin_check_file(const char *path, const char **why)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		*why = strerror(errno);
		return -errno;
	}
	if (S_ISDIR(st.st_mode)) {
		*why = "it is a directory";
		return -EISDIR;
	}
	if (access(path, X_OK) < 0) {
		*why = errno == EACCES ? "it is not executable" : strerror(errno);
		return -errno;
	}
	return 0;
}

static char *plugin_join(const char *dir, size_t dlen, const char *name)
{
	size_t n = strlen(name);
	char *s = malloc(dlen + n + 2);

	if (s) {
		memcpy(s, dir, dlen);
		s[dlen] = '/';
		memcpy(s + dlen + 1, name, n + 1);
	}
	return s;
}

/* A plugin from a URL that is not a plain program name. The parser lets
 * none through; this holds should another way ever hand one over. */
static int plugin_refuse(const char *plugin, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "plugin '%.64s%s': it comes from an ss:// URL and is not a plain program name; "
		 "nothing was run",
		 plugin, strlen(plugin) > 64 ? "..." : "");
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return -EPERM;
}

/* What Debian names plugins that the phone apps, and so the URLs they share
 * and ss-server --print-url writes, name otherwise: tried for a URL's
 * plugin that PATH has not under its own name. Both are plain program
 * names, as a URL's plugin must be. simple-obfs's obfs-local and
 * obfs-server are Debian's names already. */
static const struct {
	const char *name, *debian;
} plugin_debian_names[] = {
    {"v2ray-plugin", "ss-v2ray-plugin"},
};

const char *ss_plugin_debian_name(const char *name)
{
	for (size_t i = 0; i < sizeof(plugin_debian_names) / sizeof(plugin_debian_names[0]); i++)
		if (strcmp(name, plugin_debian_names[i].name) == 0)
			return plugin_debian_names[i].debian;
	return NULL;
}

/* name in PATH's directories (only the absolute ones for name_only) into
 * p->path: 0, -ENOENT (seen[cap] then says why a file of that name that
 * exists would not do, or is empty) or -ENOMEM. */
static int plugin_in_path(ss_plugin_t *p, const char *name, bool name_only, char *seen, size_t cap)
{
	const char *path = getenv("PATH");
	const char *why = NULL;
	int rc;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = path;;) {
		const char *end = strchr(dir, ':');
		size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
		/* A relative entry is the working directory by another name. */
		bool skip = dlen == 0 || (name_only && dir[0] != '/');
		char *cand = skip ? NULL : plugin_join(dir, dlen, name);
		if (!skip && !cand)
			return -ENOMEM;
		if (cand && (rc = plugin_check_file(cand, &why)) == 0) {
			p->path = cand;
			return 0;
		}
		if (cand && rc != -ENOENT && !seen[0])
			snprintf(seen, cap, "%s: %s", cand, why);
		free(cand);
		if (!end)
			return -ENOENT;
		dir = end + 1;
	}
}

/* The file to execute: a path as given (made absolute, as a daemon leaves
 * the working directory), or a name in PATH, then in the working directory
 * (shadowsocks-libev puts it in front of PATH; a file there does not shadow
 * a system one here). name_only (a URL's plugin): a plain name, and only in
 * PATH's absolute directories: a file that happens to be in the working
 * directory (a download, an unpacked archive) is not a program the user
 * installed; when PATH has none of that name, the one of Debian's name for
 * it (p->debian_name). */
static int plugin_find(ss_plugin_t *p, const char *plugin, bool name_only, char *err, size_t errlen)
{
	char cwd[4096];
	const char *why = NULL, *debian = name_only ? ss_plugin_debian_name(plugin) : NULL;
	int rc = -ENOENT;

	if (name_only && !ss_url_plugin_name_ok(plugin))
		return plugin_refuse(plugin, err, errlen);
	if (name_only || !getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	if (strchr(plugin, '/')) {
		p->path = plugin[0] == '/' || !cwd[0] ? strdup(plugin)
						      : plugin_join(cwd, strlen(cwd), plugin);
		if (!p->path)
			goto oom;
		if ((rc = plugin_check_file(p->path, &why)) < 0) {
			snprintf(err, errlen, "plugin '%s': %s", plugin, why);
			return rc;
		}
		return 0;
	}
	char seen[4096] = "";
	if ((rc = plugin_in_path(p, plugin, name_only, seen, sizeof(seen))) != -ENOENT)
		goto found;
	if (cwd[0]) {
		char *cand = plugin_join(cwd, strlen(cwd), plugin);
		if (!cand)
			goto oom;
		if ((rc = plugin_check_file(cand, &why)) == 0) {
			p->path = cand;
			return 0;
		}
		if (rc != -ENOENT && !seen[0])
			snprintf(seen, sizeof(seen), "%s: %s", cand, why);
		free(cand);
	}
	if (debian && !seen[0] &&
	    (rc = plugin_in_path(p, debian, true, seen, sizeof(seen))) != -ENOENT) {
		p->debian_name = debian;
		goto found;
	}
	if (seen[0]) {
		snprintf(err, errlen, "plugin '%s': %s", plugin, seen);
		return -EACCES;
	}
	snprintf(err, errlen, "plugin '%s': not found in PATH%s%s%s", plugin,
		 name_only ? "" : " or the working directory", debian ? ", nor Debian's " : "",
		 debian ? debian : "");
	return -ENOENT;
found:
	if (rc == 0)
		return 0;
oom:
	snprintf(err, errlen, "plugin '%s': out of memory", plugin);
	return -ENOMEM;
}

static bool plugin_env_ours(const char *entry)
{
	for (size_t i = 0; i < sizeof(plugin_env_names) / sizeof(plugin_env_names[0]); i++)
		if (strncmp(entry, plugin_env_names[i], strlen(plugin_env_names[i])) == 0)
			return true;
	return false;
}

/* Ours, with the five SIP003 variables in place of any we had. */
static int plugin_build_env(ss_plugin_t *p, const ss_plugin_spec_t *spec)
{
	unsigned lport = ntohs(((struct sockaddr_in *)&p->local)->sin_port);
	size_t n = 0, k = 0;

	for (char **e = environ; e && *e; e++)
		n++;
	p->envp = calloc(n + 6, sizeof(char *));
	if (!p->envp)
		return -ENOMEM;
	for (char **e = environ; e && *e; e++)
		if (!plugin_env_ours(*e) && !(p->envp[k++] = strdup(*e)))
			return -ENOMEM;
	if (asprintf(&p->envp[k++], "SS_REMOTE_HOST=%s", spec->remote_host) < 0 ||
	    asprintf(&p->envp[k++], "SS_REMOTE_PORT=%u", (unsigned)spec->remote_port) < 0 ||
	    asprintf(&p->envp[k++], "SS_LOCAL_HOST=127.0.0.1") < 0 ||
	    asprintf(&p->envp[k++], "SS_LOCAL_PORT=%u", lport) < 0)
		return -ENOMEM;
	if (spec->opts && spec->opts[0] &&
	    asprintf(&p->envp[k++], "SS_PLUGIN_OPTIONS=%s", spec->opts) < 0)
		return -ENOMEM;
	return 0;
}

static void plugin_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void plugin_line_cb(ss_child_t *ch, const char *line);
static void plugin_exit_cb(ss_child_t *ch, int status);

/* A plugin given as a command line ("obfs-server --fast-open", "FOO=1
 * plugin") rather than a file: shadowsocks-libev runs every plugin as
 * sh -c "exec PLUGIN", so such a string works there and must here. */
static bool plugin_is_command(const char *plugin)
{
	return strpbrk(plugin, " \t\n;&|<>()$`\\\"'*?[]#~={}") != NULL;
}

/* Its first word, when that is a plain file name the shell will look up:
 * checked here for a clear error before anything runs. */
static size_t plugin_first_word(const char *plugin)
{
	size_t n = strcspn(plugin, " \t\n");

	for (size_t i = 0; i < n; i++)
		if (!strchr(
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-:@,",
			plugin[i]))
			return 0;
	return n;
}

/* sh -c "exec PLUGIN": the shell execs it in its own place, so the pid we
 * watch is the plugin's. */
static int plugin_use_shell(ss_plugin_t *p, const char *plugin, char *err, size_t errlen)
{
	char word[4096];
	size_t n = strcspn(plugin, " \t\n");
	const char *base;
	int rc;

	if (n >= sizeof(word))
		n = sizeof(word) - 1;
	memcpy(word, plugin, n);
	word[n] = '\0';
	base = strrchr(word, '/');
	snprintf(p->name, sizeof(p->name), "%.*s", (int)sizeof(p->name) - 1,
		 base ? base + 1 : word);
	if (n && plugin_first_word(plugin) == n) {
		if ((rc = plugin_find(p, word, false, err, errlen)) < 0)
			return rc;
		free(p->path);
		p->path = NULL;
	}
	p->path = strdup("/bin/sh");
	p->argv[0] = strdup("sh");
	p->argv[1] = strdup("-c");
	if (asprintf(&p->argv[2], "exec %s", plugin) < 0)
		p->argv[2] = NULL;
	if (!p->path || !p->argv[0] || !p->argv[1] || !p->argv[2]) {
		snprintf(err, errlen, "plugin '%s': out of memory", plugin);
		return -ENOMEM;
	}
	return 0;
}

int ss_plugin_locate(const char *plugin, bool name_only, char *path, size_t cap, char *err,
		     size_t errlen)
{
	ss_plugin_t p;
	char word[4096];
	size_t n = plugin_first_word(plugin);
	int rc;

	memset(&p, 0, sizeof(p));
	if (!name_only && plugin_is_command(plugin)) {
		/* The shell finds what it runs; only a plain first word can be
		 * looked for here, as ss_plugin_init does. */
		if (n == 0 || n >= sizeof(word) || plugin[n] == '\0') {
			snprintf(path, cap, "/bin/sh");
			return 0;
		}
		memcpy(word, plugin, n);
		word[n] = '\0';
		plugin = word;
	}
	rc = plugin_find(&p, plugin, name_only, err, errlen);
	if (rc == 0)
		snprintf(path, cap, "%s", p.path);
	free(p.path);
	return rc;
}

int ss_plugin_init(ss_plugin_t *p, struct ev_loop *loop, const ss_plugin_spec_t *spec,
		   ss_plugin_cb cb, void *data, char *err, size_t errlen)
{
	const char *base = strrchr(spec->plugin, '/');
	/* A URL's plugin never reaches a shell, whatever it holds. */
	bool command = !spec->name_only && plugin_is_command(spec->plugin);
	struct sockaddr_in *sin = (struct sockaddr_in *)&p->local;
	uint16_t port;
	int rc;

	memset(p, 0, sizeof(*p));
	p->loop = loop;
	p->cb = cb;
	p->data = data;
	p->tcp = spec->tcp;
	p->udp = spec->udp;
	p->server = spec->server;
	p->pause = SS_PLUGIN_BACKOFF_FIRST;
	snprintf(p->name, sizeof(p->name), "%s", base ? base + 1 : spec->plugin);
	ss_child_init(&p->child, loop, plugin_line_cb, plugin_exit_cb, p);
	ev_init(&p->timer, plugin_timer_cb);
	p->timer.data = p;
	rc = command ? plugin_use_shell(p, spec->plugin, err, errlen)
		     : plugin_find(p, spec->plugin, spec->name_only, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = ss_port_pick_loopback(spec->tcp, spec->udp, spec->avoid, 2, &port)) < 0) {
		snprintf(err, errlen, "plugin '%s': no free port on 127.0.0.1: %s", spec->plugin,
			 strerror(-rc));
		return rc;
	}
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons(port);
	p->local_len = sizeof(*sin);
	p->port = spec->server ? spec->remote_port : port;
	if (!command)
		p->argv[0] = strdup(p->debian_name ? p->debian_name : spec->plugin);
	/* Once, at start-up: the user asked for another name. */
	if (p->debian_name)
		ss_notice("plugin %s is not in PATH under that name: running %s, Debian's name "
			  "for it",
			  spec->plugin, p->path);
	if (!p->argv[0] || plugin_build_env(p, spec) < 0) {
		snprintf(err, errlen, "plugin '%s': out of memory", spec->plugin);
		return -ENOMEM;
	}
	return 0;
}

const struct sockaddr *ss_plugin_local(const ss_plugin_t *p, socklen_t *len)
{
	*len = p->local_len;
	return (const struct sockaddr *)&p->local;
}

static void plugin_line_cb(ss_child_t *ch, const char *line)
{
	ss_plugin_t *p = ch->data;

	snprintf(p->last, sizeof(p->last), "%s", line);
	ss_notice("plugin %s[%d]: %s", p->name, (int)ch->pid, line);
}

static void plugin_arm(ss_plugin_t *p, ev_tstamp after)
{
	ev_timer_stop(p->loop, &p->timer);
	ev_timer_set(&p->timer, after, 0.);
	ev_timer_start(p->loop, &p->timer);
}

static const char *plugin_protos(const ss_plugin_t *p)
{
	return p->tcp && p->udp ? "TCP and UDP" : p->tcp ? "TCP" : "UDP";
}

/* It exited (why): it starts again after the pause, which doubles. */
static void plugin_restart_later(ss_plugin_t *p, const char *why)
{
	ss_warn("%s; starting it again in %.1f s", why, p->pause);
	p->state = SS_PLUGIN_WAITING;
	plugin_arm(p, p->pause);
	p->pause = p->pause * 2 < SS_PLUGIN_BACKOFF_MAX ? p->pause * 2 : SS_PLUGIN_BACKOFF_MAX;
}

/* A start that did not come up: the first one is given up at once (the
 * operator is there to read why), a restart is tried again after the pause
 * unless that has failed too often in a row. */
static void plugin_failed(ss_plugin_t *p, const char *why)
{
	char msg[512];

	p->state = SS_PLUGIN_IDLE;
	if (!p->ever_up) {
		p->cb(p, SS_PLUGIN_FAILED, why);
		return;
	}
	if (++p->fails >= SS_PLUGIN_MAX_FAILS) {
		snprintf(msg, sizeof(msg),
			 "plugin %s given up after %d restarts in a row failed: %s", p->name,
			 p->fails, why);
		p->cb(p, SS_PLUGIN_FAILED, msg);
		return;
	}
	plugin_restart_later(p, why);
}

static void plugin_exit_cb(ss_child_t *ch, int status)
{
	ss_plugin_t *p = ch->data;
	ss_plugin_state_t was = p->state;
	char how[96], msg[512];

	ev_timer_stop(p->loop, &p->timer);
	ss_child_describe(status, how, sizeof(how));
	if (was == SS_PLUGIN_STOPPING) {
		ss_info("plugin %s %s", p->name, how);
		p->state = SS_PLUGIN_IDLE;
		p->cb(p, SS_PLUGIN_GONE, NULL);
		return;
	}
	if (was == SS_PLUGIN_STARTING) {
		if (p->timed_out)
			snprintf(
			    msg, sizeof(msg),
			    "plugin %s did not open %s port %u within %.0f s, and was killed%s%s",
			    p->name, plugin_protos(p), (unsigned)p->port, SS_PLUGIN_START_TIMEOUT,
			    p->last[0] ? "; its last line: " : "", p->last);
		else if (!p->last[0])
			snprintf(msg, sizeof(msg),
				 "plugin %s %s before opening %s port %u (it printed nothing)",
				 p->name, how, plugin_protos(p), (unsigned)p->port);
		else
			snprintf(msg, sizeof(msg),
				 "plugin %s %s before opening %s port %u; its last line: %s",
				 p->name, how, plugin_protos(p), (unsigned)p->port, p->last);
		plugin_failed(p, msg);
		return;
	}
	/* It was up. */
	if (ev_time() - p->since >= SS_PLUGIN_STABLE) {
		p->fails = 0;
		p->pause = SS_PLUGIN_BACKOFF_FIRST;
	}
	snprintf(msg, sizeof(msg), "plugin %s %s", p->name, how);
	plugin_restart_later(p, msg);
	p->cb(p, SS_PLUGIN_DOWN, msg);
}

/* 1 when every port it carries is open, 0 when not yet, -errno when the
 * system cannot tell. */
static int plugin_ports_open(const ss_plugin_t *p)
{
	int t = p->tcp ? ss_port_bound(false, p->port) : 1;
	int u = p->udp ? ss_port_bound(true, p->port) : 1;

	if (t < 0 || u < 0)
		return t < 0 ? t : u;
	return t && u;
}

static void plugin_probe(ss_plugin_t *p)
{
	ev_tstamp ran = ev_time() - p->since;
	int open = plugin_ports_open(p);

	if (open > 0 || (open < 0 && ran >= PLUGIN_BLIND_UP)) {
		p->state = SS_PLUGIN_RUNNING;
		p->ever_up = true;
		if (p->server)
			ss_notice("plugin %s (pid %d) up after %.0f ms: it listens on %s port %u "
				  "and forwards to 127.0.0.1",
				  p->name, (int)p->child.pid, ran * 1e3, plugin_protos(p),
				  (unsigned)p->port);
		else
			ss_notice("plugin %s (pid %d) up after %.0f ms on 127.0.0.1:%u (%s)",
				  p->name, (int)p->child.pid, ran * 1e3, (unsigned)p->port,
				  plugin_protos(p));
		/* At this timer, a run counts as stable. */
		plugin_arm(p, SS_PLUGIN_STABLE);
		p->cb(p, SS_PLUGIN_UP, NULL);
		return;
	}
	if (ran >= SS_PLUGIN_START_TIMEOUT) {
		/* Its exit reports the failure. */
		p->timed_out = true;
		ss_child_signal(&p->child, SIGKILL);
		return;
	}
	plugin_arm(p, p->probe);
	p->probe = p->probe * 2 < PLUGIN_PROBE_MOST ? p->probe * 2 : PLUGIN_PROBE_MOST;
}

static void plugin_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_plugin_t *p = w->data;
	char err[512];
	(void)loop;
	(void)revents;

	switch (p->state) {
	case SS_PLUGIN_STARTING:
		plugin_probe(p);
		break;
	case SS_PLUGIN_RUNNING:
		p->fails = 0;
		p->pause = SS_PLUGIN_BACKOFF_FIRST;
		break;
	case SS_PLUGIN_WAITING:
		if (ss_plugin_start(p, err, sizeof(err)) < 0)
			plugin_failed(p, err);
		break;
	case SS_PLUGIN_STOPPING:
		ss_info("plugin %s (pid %d) still there %.0f s after SIGTERM: SIGKILL", p->name,
			(int)p->child.pid, SS_PLUGIN_GRACE);
		ss_child_signal(&p->child, SIGKILL);
		break;
	case SS_PLUGIN_IDLE:
		break;
	}
}

int ss_plugin_start(ss_plugin_t *p, char *err, size_t errlen)
{
	char why[400];
	int rc;

	p->last[0] = '\0';
	p->timed_out = false;
	rc = ss_child_spawn(&p->child, p->path, p->argv, p->envp, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "plugin %s: %s", p->name, why);
		p->state = SS_PLUGIN_IDLE;
		return rc;
	}
	ss_info("plugin %s started: pid %d, %s", p->name, (int)p->child.pid, p->path);
	p->state = SS_PLUGIN_STARTING;
	p->since = ev_time();
	p->probe = PLUGIN_PROBE_FIRST;
	plugin_arm(p, p->probe);
	return 0;
}

void ss_plugin_stop(ss_plugin_t *p)
{
	switch (p->state) {
	case SS_PLUGIN_STARTING:
	case SS_PLUGIN_RUNNING:
		p->state = SS_PLUGIN_STOPPING;
		ss_child_signal(&p->child, SIGTERM);
		plugin_arm(p, SS_PLUGIN_GRACE);
		break;
	case SS_PLUGIN_WAITING:
		ev_timer_stop(p->loop, &p->timer);
		p->state = SS_PLUGIN_IDLE;
		break;
	case SS_PLUGIN_STOPPING:
	case SS_PLUGIN_IDLE:
		break;
	}
}

void ss_plugin_free(ss_plugin_t *p)
{
	if (p->child.pid > 0) {
		if (p->state != SS_PLUGIN_STOPPING)
			ss_child_signal(&p->child, SIGTERM);
		ss_child_reap_now(&p->child, SS_PLUGIN_GRACE);
	}
	if (p->loop)
		ev_timer_stop(p->loop, &p->timer);
	p->state = SS_PLUGIN_IDLE;
	if (p->envp)
		for (char **e = p->envp; *e; e++)
			free(*e);
	free(p->envp);
	for (size_t i = 0; i < sizeof(p->argv) / sizeof(p->argv[0]); i++) {
		free(p->argv[i]);
		p->argv[i] = NULL;
	}
	free(p->path);
	p->envp = NULL;
	p->path = NULL;
}
