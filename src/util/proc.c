/* SPDX-License-Identifier: MIT */
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ss_proc_set_nofile(long n, char *err, size_t errlen)
{
	struct rlimit rl = {.rlim_cur = (rlim_t)n, .rlim_max = (rlim_t)n};

	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return 0;
	/* Without privilege only the soft limit can move, up to the hard one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)n <= rl.rlim_max) {
		rl.rlim_cur = (rlim_t)n;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			return 0;
	}
	int e = errno;
	snprintf(err, errlen, "cannot set the open file limit (-n) to %ld: %s", n, strerror(e));
	return -e;
}

/* The parent's side: the child's word, or its end, or the time running out. */
static int proc_daemon_wait(pid_t pid, int fd, char *word, size_t cap, char *err, size_t errlen)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct timespec start, now;
	size_t got = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = SS_PROC_DAEMON_WAIT * 1000L - (now.tv_sec - start.tv_sec) * 1000L -
			    (now.tv_nsec - start.tv_nsec) / 1000000L;
		if (left <= 0) {
			kill(pid, SIGTERM);
			snprintf(err, errlen,
				 "the background process (pid %d) did not start within %d s",
				 (int)pid, SS_PROC_DAEMON_WAIT);
			return -ETIMEDOUT;
		}
		int n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -errno;
		}
		if (n <= 0)
			continue;
		ssize_t r = read(fd, word + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == cap - 1)
			break;
	}
	word[got] = '\0';
	if (got == 0) {
		snprintf(err, errlen, "the background process (pid %d) ended while starting",
			 (int)pid);
		return -ECHILD;
	}
	return 0;
}

int ss_proc_daemonize(const char *pid_file, int *notify, char *err, size_t errlen)
{
	char word[1024];
	int fd, p[2], rc;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid > 0) {
		close(p[1]);
		rc = proc_daemon_wait(pid, p[0], word, sizeof(word), err, errlen);
		close(p[0]);
		if (rc < 0)
			return rc;
		if (word[0] != 'R') {
			snprintf(err, errlen, "%s", word + 1);
			return -EINVAL;
		}
		FILE *f = fopen(pid_file, "w");
		if (!f) {
			int e = errno;
			snprintf(err, errlen, "cannot write pid file '%s': %s", pid_file,
				 strerror(e));
			kill(pid, SIGTERM);
			return -e;
		}
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
		return 1;
	}
	close(p[0]);
	*notify = p[1];
	setsid();
	umask(022);
	if (chdir("/") < 0) {
		/* keep going: the working directory is only a convenience */
	}
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	return 0;
}

void ss_proc_daemon_ready(int *notify, const char *failure)
{
	char word[1024];
	int n;

	if (*notify < 0)
		return;
	n = snprintf(word, sizeof(word), "%c%s", failure ? 'F' : 'R', failure ? failure : "");
	if (n >= (int)sizeof(word))
		n = (int)sizeof(word) - 1;
	while (write(*notify, word, (size_t)n) < 0 && errno == EINTR)
		;
	close(*notify);
	*notify = -1;
}

int ss_proc_find_user(const char *user, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
	struct passwd *pw = getpwnam(user);
	char *end;

	if (!pw) {
		unsigned long id = strtoul(user, &end, 10);
		if (*user && !*end)
			pw = getpwuid((uid_t)id);
	}
	if (!pw) {
		snprintf(err, errlen, "unknown user '%s' for -a/user", user);
		return -EINVAL;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

int ss_proc_drop_user(const char *user, char *err, size_t errlen)
{
	uid_t uid;
	gid_t gid;

	if (ss_proc_find_user(user, &uid, &gid, err, errlen) < 0)
		return -EINVAL;
	if (setgroups(0, NULL) < 0 && errno != EPERM) {
		snprintf(err, errlen, "setgroups: %s", strerror(errno));
		return -errno;
	}
	if (setgid(gid) < 0 || setuid(uid) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot switch to user '%s': %s", user, strerror(e));
		return -e;
	}
	return 0;
}
