/* SPDX-License-Identifier: MIT */
/* net/child.c and the start-up checks of net/plugin.c: a child process on
 * libev's default loop (ev_child) and on a loop of its own (pidfd), its
 * output line by line, its exit, its process group, what it inherits. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/child.h"
#include "net/plugin.h"

#define MAX_LINES 16

typedef struct {
	ss_child_t ch;
	char lines[MAX_LINES][SS_CHILD_LINE_MAX];
	int n_lines;
	int status;
	bool exited;
} run_t;

static void on_line(ss_child_t *ch, const char *line)
{
	run_t *r = ch->data;
	if (r->n_lines < MAX_LINES)
		snprintf(r->lines[r->n_lines++], SS_CHILD_LINE_MAX, "%s", line);
}

static void on_exit_cb(ss_child_t *ch, int status)
{
	run_t *r = ch->data;
	r->status = status;
	r->exited = true;
	ev_break(ch->loop, EVBREAK_ALL);
}

static void deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Runs argv[0] with argv on loop until it exits (10 s at most), without a
 * shell in between (sh would reset what it inherits). */
static void run_argv(run_t *r, struct ev_loop *loop, char *const argv[])
{
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	char err[256];
	ev_timer deadline;

	memset(r, 0, sizeof(*r));
	ss_child_init(&r->ch, loop, on_line, on_exit_cb, r);
	assert_int_equal(ss_child_spawn(&r->ch, argv[0], argv, envp, err, sizeof(err)), 0);
	ev_timer_init(&deadline, deadline_cb, 10., 0.);
	ev_timer_start(loop, &deadline);
	ev_run(loop, 0);
	ev_timer_stop(loop, &deadline);
	assert_true(r->exited);
}

/* Runs "sh -c script" on loop until it exits (10 s at most). */
static void run_sh(run_t *r, struct ev_loop *loop, const char *script)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};

	run_argv(r, loop, argv);
	assert_int_equal(r->ch.pid, 0);
	assert_int_equal(r->ch.out.fd, -1);
}

static void check_output_and_status(struct ev_loop *loop)
{
	run_t r;

	/* A long line comes in pieces; a last line without its end comes too. */
	run_sh(&r, loop,
	       "echo one; echo 'two\ttab' >&2; printf 'x%.0s' $(seq 600); echo; "
	       "printf 'esc\\033[0m'; exit 3");
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 3);
	assert_int_equal(r.n_lines, 5);
	assert_string_equal(r.lines[0], "one");
	assert_string_equal(r.lines[1], "two\ttab");
	assert_int_equal(strlen(r.lines[2]), SS_CHILD_LINE_MAX - 1);
	assert_int_equal(strlen(r.lines[3]), 600 - (SS_CHILD_LINE_MAX - 1));
	assert_string_equal(r.lines[4], "esc?[0m");
}

/* The signals 1-31 of a SigBlk:/SigIgn: line of /proc/PID/status. The C
 * library keeps 32 and 33 for itself and will not reset them: whatever
 * started us may have left them ignored, and the child inherits that. */
static unsigned long long signal_mask(const char *line, const char *name)
{
	unsigned long long mask = ~0ull;

	assert_int_equal(strncmp(line, name, strlen(name)), 0);
	assert_int_equal(sscanf(line + strlen(name), "%llx", &mask), 1);
	return mask & 0x7fffffffull;
}

/* Its own process group, nothing blocked, only 0, 1 and 2 open even when we
 * hold a descriptor without close-on-exec, stdin on /dev/null. */
static void check_inheritance(struct ev_loop *loop)
{
	int leak = socket(AF_INET, SOCK_DGRAM, 0);
	sigset_t block, old;
	run_t r;
	int pgid = 0, pid = -1;

	assert_true(leak > 2);
	/* What the child must not inherit: a blocked and an ignored signal. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	char *grep[] = {"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
	run_argv(&r, loop, grep);
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGPIPE, SIG_DFL);
	assert_int_equal(r.n_lines, 2);
	assert_int_equal(signal_mask(r.lines[0], "SigBlk:"), 0);
	assert_int_equal(signal_mask(r.lines[1], "SigIgn:"), 0);
	/* ls as a simple command: a pipeline would have the shell hold a
	 * pipe's ends while ls looks. */
	run_sh(&r, loop,
	       "echo pgid=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; ls /proc/$$/fd; "
	       "readlink /proc/$$/fd/0");
	close(leak);
	assert_int_equal(r.n_lines, 5);
	assert_int_equal(sscanf(r.lines[0], "pgid=%d pid=%d", &pgid, &pid), 2);
	assert_int_equal(pgid, pid);
	assert_string_equal(r.lines[1], "0");
	assert_string_equal(r.lines[2], "1");
	assert_string_equal(r.lines[3], "2");
	assert_string_equal(r.lines[4], "/dev/null");
}

/* Whether pid exists and is not a zombie. */
static bool process_alive(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	char *paren;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) != NULL)
		alive = paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
	fclose(f);
	return alive;
}

/* SIGTERM to the group reaches what the child started too. */
static void check_signal_group(struct ev_loop *loop)
{
	char *argv[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	char err[256], how[96];
	ev_timer deadline;
	run_t r;
	pid_t grandchild = 0;

	memset(&r, 0, sizeof(r));
	ss_child_init(&r.ch, loop, on_line, on_exit_cb, &r);
	assert_int_equal(ss_child_spawn(&r.ch, "/bin/sh", argv, envp, err, sizeof(err)), 0);
	/* its first line: the sleeper's pid */
	ev_timer_init(&deadline, deadline_cb, 0.05, 0.05);
	ev_timer_start(loop, &deadline);
	for (int i = 0; i < 200 && r.n_lines == 0; i++)
		ev_run(loop, EVRUN_ONCE);
	assert_int_equal(r.n_lines, 1);
	grandchild = (pid_t)atoi(r.lines[0]);
	assert_true(grandchild > 0);
	ss_child_signal(&r.ch, SIGTERM);
	for (int i = 0; i < 200 && !r.exited; i++)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &deadline);
	assert_true(r.exited);
	assert_true(WIFSIGNALED(r.status));
	assert_string_equal(ss_child_describe(r.status, how, sizeof(how)),
			    "was killed by signal 15 (Terminated)");
	/* the sleeper has ended (a zombie is for whoever inherited it) */
	for (int i = 0; i < 100 && process_alive(grandchild); i++)
		usleep(10000);
	assert_false(process_alive(grandchild));
}

static void check_reap_now(struct ev_loop *loop)
{
	/* It ignores SIGTERM: SIGKILL after the grace. */
	char *argv[] = {"sh", "-c", "trap '' TERM; while :; do sleep 1; done", NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	char err[256];
	run_t r;
	pid_t pid;

	memset(&r, 0, sizeof(r));
	ss_child_init(&r.ch, loop, on_line, on_exit_cb, &r);
	assert_int_equal(ss_child_spawn(&r.ch, "/bin/sh", argv, envp, err, sizeof(err)), 0);
	pid = r.ch.pid;
	usleep(100000);
	ss_child_signal(&r.ch, SIGTERM);
	ss_child_reap_now(&r.ch, 0.3);
	assert_int_equal(r.ch.pid, 0);
	assert_false(r.exited); /* no callback */
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void check_exec_failure(struct ev_loop *loop)
{
	char *argv[] = {"nothing", NULL};
	char *envp[] = {NULL};
	char err[256];
	run_t r;

	memset(&r, 0, sizeof(r));
	ss_child_init(&r.ch, loop, on_line, on_exit_cb, &r);
	assert_int_equal(
	    ss_child_spawn(&r.ch, "/nonexistent/nothing", argv, envp, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "cannot execute /nonexistent/nothing: No such file or directory");
	assert_int_equal(r.ch.pid, 0);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* reaped already */
}

static void test_default_loop(void **state)
{
	struct ev_loop *loop = EV_DEFAULT;
	(void)state;
	check_output_and_status(loop);
	check_inheritance(loop);
	check_signal_group(loop);
	check_reap_now(loop);
	check_exec_failure(loop);
}

static void test_own_loop(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	(void)state;
	assert_non_null(loop);
	check_output_and_status(loop);
	check_inheritance(loop);
	check_signal_group(loop);
	check_reap_now(loop);
	check_exec_failure(loop);
	ev_loop_destroy(loop);
}

static void plugin_cb(ss_plugin_t *p, ss_plugin_event_t ev, const char *msg)
{
	(void)p;
	(void)ev;
	(void)msg;
}

/* ss_plugin_init for plugin (name_only: from a URL); p is the caller's to
 * free. */
static int plugin_init_as(ss_plugin_t *p, const char *plugin, bool name_only, char *err,
			  size_t errlen)
{
	ss_plugin_spec_t spec = {.plugin = plugin,
				 .name_only = name_only,
				 .remote_host = "127.0.0.1",
				 .remote_port = 1,
				 .tcp = true};

	return ss_plugin_init(p, EV_DEFAULT, &spec, plugin_cb, NULL, err, errlen);
}

static int plugin_init_err(const char *plugin, bool name_only, char *err, size_t errlen)
{
	ss_plugin_t p;
	int rc = plugin_init_as(&p, plugin, name_only, err, errlen);

	ss_plugin_free(&p);
	return rc;
}

/* Writes a script at dir/name with mode; its path into path[cap]. */
static void put_script(const char *dir, const char *name, mode_t mode, char *path, size_t cap)
{
	FILE *f;

	snprintf(path, cap, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_plugin_not_runnable(void **state)
{
	char dir[] = "/tmp/ss-test-plugin-XXXXXX", path[64], err[512], want[600];
	(void)state;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(plugin_init_err("ss-no-such-plugin", false, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "plugin 'ss-no-such-plugin': not found in PATH or the working "
				 "directory");
	put_script(dir, "plugin", 0644, path, sizeof(path));
	assert_int_equal(plugin_init_err(path, false, err, sizeof(err)), -EACCES);
	snprintf(want, sizeof(want), "plugin '%s': it is not executable", path);
	assert_string_equal(err, want);
	assert_int_equal(plugin_init_err(dir, false, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "plugin '%s': it is a directory", dir);
	assert_string_equal(err, want);
	/* A name found in the working directory, when PATH has none. */
	chmod(path, 0755);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(plugin_init_err("plugin", false, err, sizeof(err)), 0);
	assert_int_equal(chdir(cwd), 0);
	unlink(path);
	rmdir(dir);
}

/* A URL's plugin (name_only), however it got here: a command line, a path
 * or an option is refused before anything is looked up or run; a plain name
 * is looked for in PATH's absolute directories only, never in the working
 * directory, and is executed itself with just its name as argv. */
static void test_plugin_name_only(void **state)
{
	static const char *const bad[] = {
	    "touch pwned #", "sh -c id", "$(id)",   "`id`",      "a;b", "a|b", "a&b", "a>b",
	    "a\nb",          "a\tb",     "/bin/sh", "../bin/sh", "./x", "-x",  "x/",  "",
	    "'a'",           "\"a\"",    "a\\b",
	};
	char dir[] = "/tmp/ss-test-plugin-XXXXXX", cwd[4096], path[256], err[512], found[4096];
	char oldpath[4096], newpath[4096 + 300];
	ss_plugin_t p;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(plugin_init_err(bad[i], true, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "comes from an ss:// URL and is not a plain program "
					    "name; nothing was run"));
		assert_null(strchr(err, '\n'));
		assert_int_equal(
		    ss_plugin_locate(bad[i], true, found, sizeof(found), err, sizeof(err)), -EPERM);
	}
	/* The configuration's plugin may still be a path. */
	assert_int_equal(ss_plugin_locate("/bin/sh", false, found, sizeof(found), err, sizeof(err)),
			 0);

	assert_non_null(mkdtemp(dir));
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(oldpath, sizeof(oldpath), "%s", getenv("PATH") ? getenv("PATH") : "");
	put_script(dir, "ss-url-plugin", 0755, path, sizeof(path));
	assert_int_equal(chdir(dir), 0);
	/* In the working directory, and in PATH as ".": not a program of PATH. */
	snprintf(newpath, sizeof(newpath), ".:%s", oldpath);
	setenv("PATH", newpath, 1);
	assert_int_equal(plugin_init_err("ss-url-plugin", true, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "plugin 'ss-url-plugin': not found in PATH");
	/* From the configuration, the same name is found there. */
	assert_int_equal(plugin_init_err("ss-url-plugin", false, err, sizeof(err)), 0);
	/* In an absolute directory of PATH: found, and run without a shell. */
	snprintf(newpath, sizeof(newpath), "%s:%s", dir, oldpath);
	setenv("PATH", newpath, 1);
	assert_int_equal(plugin_init_as(&p, "ss-url-plugin", true, err, sizeof(err)), 0);
	assert_string_equal(p.path, path);
	assert_string_equal(p.argv[0], "ss-url-plugin");
	assert_null(p.argv[1]);
	ss_plugin_free(&p);
	assert_int_equal(
	    ss_plugin_locate("ss-url-plugin", true, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, path);

	setenv("PATH", oldpath, 1);
	assert_int_equal(chdir(cwd), 0);
	unlink(path);
	rmdir(dir);
}

/* A URL's plugin that PATH has not under its own name, but under Debian's
 * (v2ray-plugin as ss-v2ray-plugin): run under that name, from PATH's
 * absolute directories only; its own name wins where it is there too. The
 * configuration's plugin is the user's own text: never renamed. */
static void test_plugin_debian_name(void **state)
{
	char dir[] = "/tmp/ss-test-plugin-XXXXXX", cwd[4096], path[256], own[256], err[512];
	char found[4096], oldpath[4096], newpath[4096 + 300];
	ss_plugin_t p;
	(void)state;

	assert_string_equal(ss_plugin_debian_name("v2ray-plugin"), "ss-v2ray-plugin");
	assert_null(ss_plugin_debian_name("obfs-local"));
	assert_null(ss_plugin_debian_name("ss-v2ray-plugin"));
	assert_null(ss_plugin_debian_name("v2ray-plugin "));

	assert_non_null(mkdtemp(dir));
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(oldpath, sizeof(oldpath), "%s", getenv("PATH") ? getenv("PATH") : "");
	put_script(dir, "ss-v2ray-plugin", 0755, path, sizeof(path));
	/* Only in the working directory, as "." in PATH: not found either way. */
	assert_int_equal(chdir(dir), 0);
	setenv("PATH", ".:/nonexistent", 1);
	assert_int_equal(plugin_init_err("v2ray-plugin", true, err, sizeof(err)), -ENOENT);
	assert_string_equal(
	    err, "plugin 'v2ray-plugin': not found in PATH, nor Debian's ss-v2ray-plugin");
	assert_int_equal(chdir(cwd), 0);

	snprintf(newpath, sizeof(newpath), "/nonexistent:%s", dir);
	setenv("PATH", newpath, 1);
	assert_int_equal(plugin_init_as(&p, "v2ray-plugin", true, err, sizeof(err)), 0);
	assert_string_equal(p.path, path);
	assert_string_equal(p.debian_name, "ss-v2ray-plugin");
	assert_string_equal(p.argv[0], "ss-v2ray-plugin");
	assert_null(p.argv[1]);
	assert_string_equal(p.name, "v2ray-plugin");
	ss_plugin_free(&p);
	assert_int_equal(
	    ss_plugin_locate("v2ray-plugin", true, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, path);
	/* The configuration's "v2ray-plugin" is looked for as it is. */
	assert_int_equal(plugin_init_err("v2ray-plugin", false, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "plugin 'v2ray-plugin': not found in PATH or the working "
				 "directory");

	/* A v2ray-plugin that cannot run is reported, not passed over. */
	put_script(dir, "v2ray-plugin", 0644, own, sizeof(own));
	assert_int_equal(plugin_init_err("v2ray-plugin", true, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "it is not executable"));
	/* Under its own name it is itself. */
	assert_int_equal(chmod(own, 0755), 0);
	assert_int_equal(plugin_init_as(&p, "v2ray-plugin", true, err, sizeof(err)), 0);
	assert_string_equal(p.path, own);
	assert_null(p.debian_name);
	assert_string_equal(p.argv[0], "v2ray-plugin");
	ss_plugin_free(&p);

	setenv("PATH", oldpath, 1);
	unlink(own);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_loop),        cmocka_unit_test(test_own_loop),
	    cmocka_unit_test(test_plugin_not_runnable), cmocka_unit_test(test_plugin_name_only),
	    cmocka_unit_test(test_plugin_debian_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
