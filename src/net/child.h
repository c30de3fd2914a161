/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_CHILD_H
#define SS_NET_CHILD_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One child process watched on a libev loop: its exit, and its output, read
 * line by line without ever blocking the loop.
 *
 * The child runs in a process group of its own (a terminal's Ctrl-C reaches
 * us, and we stop it in order), with stdin on /dev/null, stdout and stderr
 * into one pipe that the loop reads, no other descriptor of ours, every
 * signal at its default and none blocked, and on Linux SIGKILL when the
 * thread that started it ends (PR_SET_PDEATHSIG), so that it does not
 * outlive us even when we are killed.
 *
 * Its exit is taken without disturbing anyone else's children: on libev's
 * default loop through an ev_child watcher (libev reaps every child there
 * already), on any other loop through a pidfd (Linux 5.3), which reaps this
 * pid alone and needs no SIGCHLD handler. When it exits, whatever it left in
 * its process group is killed. */

typedef struct ss_child ss_child_t;

/* One line of its output, without the line end; control bytes are '?',
 * a line longer than SS_CHILD_LINE_MAX - 1 bytes comes in pieces. */
typedef void (*ss_child_line_cb)(ss_child_t *ch, const char *line);
/* It has exited and is reaped; its output is read to the end. status is
 * what waitpid gives, or -1 when another part of the process reaped it. */
typedef void (*ss_child_exit_cb)(ss_child_t *ch, int status);

#define SS_CHILD_LINE_MAX 512

struct ss_child {
	struct ev_loop *loop;
	pid_t pid; /* 0: none running */
	ev_child exited;
	ev_io pidfd; /* fd -1: not used */
	ev_io out;   /* fd -1: closed */
	size_t line_len;
	char line[SS_CHILD_LINE_MAX];
	ss_child_line_cb on_line;
	ss_child_exit_cb on_exit;
	void *data; /* the owner's */
};

void ss_child_init(ss_child_t *ch, struct ev_loop *loop, ss_child_line_cb on_line,
		   ss_child_exit_cb on_exit, void *data);

/* Starts path with argv (NULL-terminated, at most 15 entries) and envp. A
 * file without the #! line is run by /bin/sh, as execvp would. Returns 0, or
 * -errno with err saying what failed, an exec failure included: it comes back
 * from the child before this returns. */
int ss_child_spawn(ss_child_t *ch, const char *path, char *const argv[], char *const envp[],
		   char *err, size_t errlen);

/* Sends sig to its process group. */
void ss_child_signal(ss_child_t *ch, int sig);

/* Without the loop: gives it up to grace seconds to exit, then kills its
 * process group, and reaps it. No callback runs. */
void ss_child_reap_now(ss_child_t *ch, double grace);

/* "exited with status 3", "was killed by signal 9 (Killed)". */
const char *ss_child_describe(int status, char *buf, size_t len);

#endif
