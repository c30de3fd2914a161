/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/sock.h"
#include "relay/report.h"
#include "util/log.h"

int ss_report_parse(const char *addr, struct sockaddr_storage *to, socklen_t *len, char *err,
		    size_t errlen)
{
	const char *colon = strrchr(addr, ':');
	char host[SS_HOST_MAX];
	size_t hlen;
	char *end;
	long port;

	/* libev takes an address with a port for UDP, anything else for a
	 * Unix socket's path. */
	if (colon && colon[1] && colon > addr) {
		port = strtol(colon + 1, &end, 10);
		if (!*end && port > 0 && port <= 65535) {
			hlen = (size_t)(colon - addr);
			if (addr[0] == '[' && hlen >= 2 && addr[hlen - 1] == ']')
				addr++, hlen -= 2;
			if (hlen >= sizeof(host)) {
				snprintf(err, errlen, "manager address too long: %s", addr);
				return -EINVAL;
			}
			memcpy(host, addr, hlen);
			host[hlen] = '\0';
			return ss_sock_resolve_startup(host, (unsigned)port, false, false, to, len,
						       err, errlen) < 0
				   ? -EINVAL
				   : 0;
		}
	}
	struct sockaddr_un *un = (struct sockaddr_un *)to;
	if (!addr[0] || strlen(addr) >= sizeof(un->sun_path)) {
		snprintf(err, errlen, "bad manager address (HOST:PORT or a socket's path): %s",
			 addr);
		return -EINVAL;
	}
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, addr, strlen(addr));
	*len = (socklen_t)sizeof(*un);
	return 0;
}

int ss_report_format(const ss_shared_t *sh, char *buf, size_t len)
{
	const ss_fig_layout_t *l = &sh->fig_layout;
	size_t n = 0;
	int w;

	w = snprintf(buf, len, "stat: {");
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	n = (size_t)w;
	for (size_t p = 0; p < l->n_ports; p++) {
		ss_fig_sum_t s;
		/* Users removed by a reload included: the count never goes back. */
		ss_shared_figures(sh, p, SS_FIG_PORT_ALL, &s);
		w = snprintf(buf + n, len - n, "%s\"%u\":%llu", p ? "," : "", (unsigned)l->port[p],
			     (unsigned long long)(s.bytes[0] + s.bytes[1]));
		if (w < 0 || (size_t)w >= len - n)
			return -ENOSPC;
		n += (size_t)w;
	}
	w = snprintf(buf + n, len - n, "}");
	if (w < 0 || (size_t)w >= len - n)
		return -ENOSPC;
	return (int)(n + (size_t)w);
}

void ss_report_send(ss_report_t *r)
{
	char buf[64 + SS_FIG_PORTS_MAX * 32];
	int n = ss_report_format(r->sh, buf, sizeof(buf));

	if (n < 0 || r->fd < 0)
		return;
	/* libev sends the text with its NUL; ss-manager reads it as a string. */
	if (sendto(r->fd, buf, (size_t)n + 1, 0, (struct sockaddr *)&r->to, r->to_len) < 0) {
		if (!r->warned)
			ss_warn("cannot send figures to the manager: %s", strerror(errno));
		r->warned = true;
		return;
	}
	r->warned = false;
}

static void report_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	ss_report_send(w->data);
}

int ss_report_start(ss_report_t *r, const ss_shared_t *sh, struct ev_loop *loop, const char *addr,
		    char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (ss_report_parse(addr, &r->to, &r->to_len, err, errlen) < 0)
		return -EINVAL;
	r->fd = socket(r->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the manager's socket: %s", strerror(e));
		return -e;
	}
	r->sh = sh;
	r->loop = loop;
	ev_timer_init(&r->timer, report_timer_cb, SS_REPORT_INTERVAL, SS_REPORT_INTERVAL);
	r->timer.data = r;
	ev_timer_start(loop, &r->timer);
	/* The report alone does not keep the loop running. */
	ev_unref(loop);
	return 0;
}

void ss_report_stop(ss_report_t *r)
{
	if (!r->sh)
		return;
	r->sh = NULL;
	if (r->loop) {
		ev_ref(r->loop);
		ev_timer_stop(r->loop, &r->timer);
		r->loop = NULL;
	}
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
