/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_NOTIFY_H
#define SS_UTIL_NOTIFY_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

/* The service manager's readiness protocol (sd_notify(3)), without
 * libsystemd: "KEY=value" lines in one datagram to the unix socket that
 * NOTIFY_SOCKET names (a path, or '@' for the abstract namespace). */
typedef struct ss_notify {
	int fd; /* -1: no service manager listens */
	struct sockaddr_un sa;
	socklen_t len;
} ss_notify_t;

/* Takes NOTIFY_SOCKET out of the environment (children must not speak for
 * us) and opens a socket to it. 0, with n->fd -1 when the variable is not
 * set; -errno with err set when it is unusable (n->fd -1 too). */
int ss_notify_open(ss_notify_t *n, char *err, size_t errlen);
/* Sends the lines, printf-style. 0 or -errno; nothing when n->fd is -1. */
int ss_notify_send(ss_notify_t *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ss_notify_close(ss_notify_t *n);

#endif
