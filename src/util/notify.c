/* SPDX-License-Identifier: MIT */
#include "util/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ss_notify_open(ss_notify_t *n, char *err, size_t errlen)
{
	const char *v = getenv("NOTIFY_SOCKET");
	char path[sizeof(n->sa.sun_path) + 1];
	size_t len;

	n->fd = -1;
	if (!v)
		return 0;
	len = strlen(v);
	if (len >= sizeof(path)) {
		snprintf(err, errlen, "NOTIFY_SOCKET is longer than a socket path can be");
		unsetenv("NOTIFY_SOCKET");
		return -ENAMETOOLONG;
	}
	memcpy(path, v, len + 1);
	unsetenv("NOTIFY_SOCKET");
	if (path[0] != '/' && path[0] != '@') {
		snprintf(err, errlen, "NOTIFY_SOCKET='%s' is neither an absolute path nor '@name'",
			 path);
		return -EINVAL;
	}
	if (len < 2 || (path[0] == '/' && len >= sizeof(n->sa.sun_path))) {
		snprintf(err, errlen, "NOTIFY_SOCKET='%s' is not a usable socket address", path);
		return -EINVAL;
	}
	memset(&n->sa, 0, sizeof(n->sa));
	n->sa.sun_family = AF_UNIX;
	memcpy(n->sa.sun_path, path, len);
	if (path[0] == '@')
		n->sa.sun_path[0] = '\0'; /* abstract: the length ends the name, no NUL */
	n->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "NOTIFY_SOCKET: socket: %s", strerror(e));
		return -e;
	}
	return 0;
}

int ss_notify_send(ss_notify_t *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int len;

	if (n->fd < 0)
		return 0;
	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len >= (int)sizeof(msg))
		len = (int)sizeof(msg) - 1;
	if (sendto(n->fd, msg, (size_t)len, MSG_NOSIGNAL, (struct sockaddr *)&n->sa, n->len) < 0)
		return -errno;
	return 0;
}

void ss_notify_close(ss_notify_t *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
