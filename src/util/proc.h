/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_PROC_H
#define SS_UTIL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Process set-up for the programs. Each returns 0 or -errno with err set. */

/* Raises RLIMIT_NOFILE to n (soft and hard, as far as allowed). */
int ss_proc_set_nofile(long n, char *err, size_t errlen);
/* Forks into the background and detaches from the terminal. The parent
 * waits (up to SS_PROC_DAEMON_WAIT seconds) for the child's word through
 * ss_proc_daemon_ready: on success it writes the child's pid to pid_file and
 * returns 1 (it should exit 0); on a failure it returns -errno with the
 * child's reason in err (it should exit 1). The child gets 0 and *notify, the
 * descriptor to give its word on. */
#define SS_PROC_DAEMON_WAIT 60
int ss_proc_daemonize(const char *pid_file, int *notify, char *err, size_t errlen);
/* The child's word: started (failure NULL) or not, and why. Once: *notify is
 * closed and set to -1; nothing happens when it is -1 already. */
void ss_proc_daemon_ready(int *notify, const char *failure);
/* Looks user up (a name, or a numeric uid) as ss_proc_drop_user does, for
 * --check: its uid and primary group. 0, or -EINVAL with err naming the
 * user. */
int ss_proc_find_user(const char *user, uid_t *uid, gid_t *gid, char *err, size_t errlen);
/* Switches to user (name or numeric uid), with its primary group. */
int ss_proc_drop_user(const char *user, char *err, size_t errlen);

#endif
