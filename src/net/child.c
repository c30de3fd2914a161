/* SPDX-License-Identifier: MIT */
#include "net/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define CHILD_ARGV_MAX 16
/* Output read per wake-up, so that a chatty child cannot hold up the loop;
 * and at its exit, what may still be in the pipe (its capacity, at most). */
#define CHILD_READ_TURN (64 << 10)
#define CHILD_READ_DRAIN (1 << 20)

static void child_out_cb(struct ev_loop *loop, ev_io *w, int revents);
static void child_exited_cb(struct ev_loop *loop, ev_child *w, int revents);
static void child_pidfd_cb(struct ev_loop *loop, ev_io *w, int revents);

void ss_child_init(ss_child_t *ch, struct ev_loop *loop, ss_child_line_cb on_line,
		   ss_child_exit_cb on_exit, void *data)
{
	memset(ch, 0, sizeof(*ch));
	ch->loop = loop;
	ch->on_line = on_line;
	ch->on_exit = on_exit;
	ch->data = data;
	ev_io_init(&ch->out, child_out_cb, -1, EV_READ);
	ch->out.data = ch;
	ev_io_init(&ch->pidfd, child_pidfd_cb, -1, EV_READ);
	ch->pidfd.data = ch;
	ev_child_init(&ch->exited, child_exited_cb, 0, 0);
	ch->exited.data = ch;
}

/* --- in the child, between fork and exec: async-signal-safe calls only --- */

static void child_close_from(int lo, int except)
{
	struct rlimit rl;
	int hi = 65536;

#ifdef SYS_close_range
	/* Marked rather than closed, so that the status pipe stays open
	 * until exec. */
	if (syscall(SYS_close_range, (unsigned)lo, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) == 0)
		return;
#endif
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)(1 << 20))
		hi = (int)rl.rlim_cur;
	for (int fd = lo; fd < hi; fd++)
		if (fd != except)
			close(fd);
}

static _Noreturn void child_exec(const char *path, char *const argv[], char *const envp[], int out,
				 int status, pid_t parent)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int e, null;

	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL); /* fails harmlessly for KILL, STOP and libc's own */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
#ifdef __linux__
	/* The parent may have died before the setting took: then nobody
	 * would send the signal. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
		e = ESRCH;
		goto fail;
	}
#else
	(void)parent;
#endif
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
	    dup2(out, STDERR_FILENO) < 0) {
		e = errno;
		goto fail;
	}
	child_close_from(STDERR_FILENO + 1, status);
	execve(path, argv, envp);
	e = errno;
	if (e == ENOEXEC) {
		char *sh[CHILD_ARGV_MAX + 2] = {"sh", (char *)path};
		for (int i = 1; i < CHILD_ARGV_MAX && argv[i]; i++)
			sh[i + 1] = argv[i];
		execve("/bin/sh", sh, envp);
		e = errno;
	}
fail:
	while (write(status, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* --- in the parent --- */

static void child_emit(ss_child_t *ch)
{
	ch->line[ch->line_len] = '\0';
	ch->line_len = 0;
	if (ch->on_line)
		ch->on_line(ch, ch->line);
}

static void child_feed(ss_child_t *ch, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)buf[i];
		if (b == '\n') {
			child_emit(ch);
			continue;
		}
		if (b == '\r')
			continue;
		ch->line[ch->line_len++] = (b < 0x20 && b != '\t') || b == 0x7f ? '?' : (char)b;
		if (ch->line_len == sizeof(ch->line) - 1)
			child_emit(ch);
	}
}

static void child_out_close(ss_child_t *ch)
{
	if (ch->out.fd < 0)
		return;
	if (ch->line_len)
		child_emit(ch);
	ev_io_stop(ch->loop, &ch->out);
	close(ch->out.fd);
	ev_io_set(&ch->out, -1, EV_READ);
}

/* Reads what the pipe holds now, up to limit bytes; closes it at its end. */
static void child_read(ss_child_t *ch, size_t limit)
{
	char buf[4096];
	size_t total = 0;

	while (ch->out.fd >= 0 && total < limit) {
		ssize_t n = read(ch->out.fd, buf, sizeof(buf));
		if (n > 0) {
			child_feed(ch, buf, (size_t)n);
			total += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return;
		} else {
			child_out_close(ch);
		}
	}
}

static void child_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	child_read(w->data, CHILD_READ_TURN);
}

static void child_unwatch(ss_child_t *ch)
{
	ev_child_stop(ch->loop, &ch->exited);
	if (ch->pidfd.fd >= 0) {
		ev_io_stop(ch->loop, &ch->pidfd);
		close(ch->pidfd.fd);
		ev_io_set(&ch->pidfd, -1, EV_READ);
	}
}

static void child_done(ss_child_t *ch, int status)
{
	pid_t pid = ch->pid;

	child_unwatch(ch);
	ch->pid = 0;
	/* Anything it started and left behind would hold its ports. */
	kill(-pid, SIGKILL);
	child_read(ch, CHILD_READ_DRAIN);
	child_out_close(ch);
	if (ch->on_exit)
		ch->on_exit(ch, status);
}

static void child_exited_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	(void)loop;
	(void)revents;
	child_done(w->data, w->rstatus);
}

static void child_pidfd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_child_t *ch = w->data;
	int status;
	pid_t r;
	(void)loop;
	(void)revents;

	do
		r = waitpid(ch->pid, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return;
	child_done(ch, r < 0 ? -1 : status);
}

static int child_watch(ss_child_t *ch, char *err, size_t errlen)
{
	int fd = -1;

	if (ev_is_default_loop(ch->loop)) {
		ev_child_set(&ch->exited, ch->pid, 0);
		ev_child_start(ch->loop, &ch->exited);
		return 0;
	}
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
#else
	errno = ENOSYS;
#endif
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot watch pid %d on this loop: pidfd_open: %s",
			 (int)ch->pid, strerror(e));
		return -e;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	ev_io_set(&ch->pidfd, fd, EV_READ);
	ev_io_start(ch->loop, &ch->pidfd);
	return 0;
}

static void child_wait_blocking(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int ss_child_spawn(ss_child_t *ch, const char *path, char *const argv[], char *const envp[],
		   char *err, size_t errlen)
{
	int out[2], st[2], e = 0, rc;
	pid_t parent = getpid(), pid;
	ssize_t n;

	if (pipe2(out, O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot start %s: pipe: %s", path, strerror(e));
		return -e;
	}
	if (pipe2(st, O_CLOEXEC) < 0) {
		e = errno;
		close(out[0]);
		close(out[1]);
		snprintf(err, errlen, "cannot start %s: pipe: %s", path, strerror(e));
		return -e;
	}
	pid = fork();
	if (pid == 0)
		child_exec(path, argv, envp, out[1], st[1], parent);
	e = errno;
	close(out[1]);
	close(st[1]);
	if (pid < 0) {
		close(out[0]);
		close(st[0]);
		snprintf(err, errlen, "cannot start %s: fork: %s", path, strerror(e));
		return -e;
	}
	/* Also here, so that a signal to the group right after this returns
	 * cannot miss it; EACCES once it has run exec is fine. */
	setpgid(pid, pid);
	/* The status pipe closes at exec, or carries the errno that stopped it:
	 * a wait as long as the child takes to reach exec. */
	do
		n = read(st[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(st[0]);
	if (n == (ssize_t)sizeof(e)) {
		close(out[0]);
		child_wait_blocking(pid);
		snprintf(err, errlen, "cannot execute %s: %s", path, strerror(e));
		return -e;
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	ch->pid = pid;
	ch->line_len = 0;
	ev_io_set(&ch->out, out[0], EV_READ);
	ev_io_start(ch->loop, &ch->out);
	if ((rc = child_watch(ch, err, errlen)) < 0) {
		kill(-pid, SIGKILL);
		child_wait_blocking(pid);
		ch->pid = 0;
		child_out_close(ch);
		return rc;
	}
	return 0;
}

void ss_child_signal(ss_child_t *ch, int sig)
{
	if (ch->pid > 0)
		kill(-ch->pid, sig);
}

void ss_child_reap_now(ss_child_t *ch, double grace)
{
	struct timespec nap = {.tv_nsec = 10 * 1000 * 1000};
	pid_t pid = ch->pid;

	if (pid <= 0)
		return;
	child_unwatch(ch);
	for (double waited = 0; waited < grace; waited += 0.01) {
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			goto reaped;
		nanosleep(&nap, NULL);
	}
	kill(-pid, SIGKILL);
	child_wait_blocking(pid);
reaped:
	kill(-pid, SIGKILL);
	ch->pid = 0;
	child_out_close(ch);
}

const char *ss_child_describe(int status, char *buf, size_t len)
{
	if (status < 0)
		snprintf(buf, len, "exited (its status was taken by another part of the process)");
	else if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "stopped with wait status 0x%x", (unsigned)status);
	return buf;
}
