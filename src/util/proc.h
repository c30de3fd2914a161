#ifndef SS_UTIL_PROC_H
#define SS_UTIL_PROC_H

#include <stddef.h>

/* Process set-up for the programs. Each returns 0 or -errno with err set. */

/* Raises RLIMIT_NOFILE to n (soft and hard, as far as allowed). */
int ss_proc_set_nofile(long n, char *err, size_t errlen);
/* Forks into the background, detaches from the terminal, writes the child's
 * pid to pid_file. Returns 1 in the parent (which should exit 0), 0 in the
 * child. */
int ss_proc_daemonize(const char *pid_file, char *err, size_t errlen);
/* Switches to user (name or numeric uid), with its primary group. */
int ss_proc_drop_user(const char *user, char *err, size_t errlen);

#endif
