#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

int ss_proc_daemonize(const char *pid_file, char *err, size_t errlen)
{
	int fd;
	pid_t pid = fork();

	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid > 0) {
		FILE *f = fopen(pid_file, "w");
		if (!f) {
			int e = errno;
			snprintf(err, errlen, "cannot write pid file '%s': %s", pid_file,
				 strerror(e));
			return -e;
		}
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
		return 1;
	}
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

int ss_proc_drop_user(const char *user, char *err, size_t errlen)
{
	struct passwd *pw = getpwnam(user);
	char *end;

	if (!pw) {
		unsigned long uid = strtoul(user, &end, 10);
		if (*user && !*end)
			pw = getpwuid((uid_t)uid);
	}
	if (!pw) {
		snprintf(err, errlen, "unknown user '%s' for -a/user", user);
		return -EINVAL;
	}
	if (setgroups(0, NULL) < 0 && errno != EPERM) {
		snprintf(err, errlen, "setgroups: %s", strerror(errno));
		return -errno;
	}
	if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot switch to user '%s': %s", user, strerror(e));
		return -e;
	}
	return 0;
}
