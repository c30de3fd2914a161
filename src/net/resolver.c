#include "net/resolver.h"
#include "proto/addr.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void resolver_rearm_timer(ss_resolver_t *r)
{
	struct timeval tv, *tvp;

	ev_timer_stop(r->loop, &r->timer);
	tvp = ares_timeout(r->channel, NULL, &tv);
	if (tvp) {
		ev_timer_set(&r->timer, tvp->tv_sec + tvp->tv_usec / 1e6 + 0.001, 0.);
		ev_timer_start(r->loop, &r->timer);
	}
}

static void resolver_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_resolver_t *r = w->data;
	(void)loop;
	ares_process_fd(r->channel, (revents & EV_READ) ? w->fd : ARES_SOCKET_BAD,
			(revents & EV_WRITE) ? w->fd : ARES_SOCKET_BAD);
	resolver_rearm_timer(r);
}

static void resolver_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_resolver_t *r = w->data;
	(void)loop;
	(void)revents;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	resolver_rearm_timer(r);
}

static void resolver_sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	ss_resolver_t *r = data;
	int i, slot = -1;

	for (i = 0; i < SS_RESOLVER_MAX_SOCKS; i++) {
		if (r->socks[i].fd == fd) {
			slot = i;
			break;
		}
		if (slot < 0 && r->socks[i].fd < 0)
			slot = i;
	}
	if (slot < 0)
		return; /* more sockets than slots: c-ares falls back to its timer */
	ev_io *io = &r->socks[slot].io;
	if (r->socks[slot].fd == fd)
		ev_io_stop(r->loop, io);
	if (!readable && !writable) {
		r->socks[slot].fd = -1;
		return;
	}
	r->socks[slot].fd = fd;
	ev_io_init(io, resolver_io_cb, fd, (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0));
	io->data = r;
	ev_io_start(r->loop, io);
}

int ss_resolver_init(ss_resolver_t *r, struct ev_loop *loop, const char *nameservers,
		     bool ipv6_first, char *err, size_t errlen)
{
	struct ares_options opts = {0};
	int rc, i;

	memset(r, 0, sizeof(*r));
	r->loop = loop;
	r->ipv6_first = ipv6_first;
	for (i = 0; i < SS_RESOLVER_MAX_SOCKS; i++)
		r->socks[i].fd = -1;
	rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		return -EINVAL;
	}
	opts.sock_state_cb = resolver_sock_state_cb;
	opts.sock_state_cb_data = r;
	opts.timeout = 3000;
	opts.tries = 2;
	rc = ares_init_options(&r->channel, &opts,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		ares_library_cleanup();
		return -EINVAL;
	}
	if (nameservers && nameservers[0]) {
		rc = ares_set_servers_ports_csv(r->channel, nameservers);
		if (rc != ARES_SUCCESS) {
			snprintf(err, errlen, "invalid name server list '%s' for -d/nameserver: %s",
				 nameservers, ares_strerror(rc));
			ares_destroy(r->channel);
			ares_library_cleanup();
			return -EINVAL;
		}
	}
	ev_init(&r->timer, resolver_timer_cb);
	r->timer.data = r;
	r->ready = true;
	return 0;
}

void ss_resolver_free(ss_resolver_t *r)
{
	if (!r->ready)
		return;
	ares_destroy(r->channel);
	ev_timer_stop(r->loop, &r->timer);
	for (int i = 0; i < SS_RESOLVER_MAX_SOCKS; i++)
		if (r->socks[i].fd >= 0)
			ev_io_stop(r->loop, &r->socks[i].io);
	ares_library_cleanup();
	r->ready = false;
}

static int status_to_errno(int status)
{
	switch (status) {
	case ARES_ECANCELLED:
	case ARES_EDESTRUCTION:
		return -ECANCELED;
	case ARES_ETIMEOUT:
		return -ETIMEDOUT;
	case ARES_ENOMEM:
		return -ENOMEM;
	default:
		return -EHOSTUNREACH;
	}
}

static void lookup_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	ss_resolve_req_t lk = *(ss_resolve_req_t *)arg;
	struct ares_addrinfo_node *n, *pick = NULL;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	(void)timeouts;

	if (status == ARES_SUCCESS && res) {
		for (n = res->nodes; n; n = n->ai_next) {
			if (n->ai_family != AF_INET && n->ai_family != AF_INET6)
				continue;
			if (!pick)
				pick = n;
			if ((n->ai_family == AF_INET6) == lk.r->ipv6_first) {
				pick = n;
				break;
			}
		}
		if (pick && (size_t)pick->ai_addrlen <= sizeof(ss)) {
			memcpy(&ss, pick->ai_addr, pick->ai_addrlen);
			len = pick->ai_addrlen;
			ss_sockaddr_set_port((struct sockaddr *)&ss, lk.port);
		}
	}
	if (res)
		ares_freeaddrinfo(res);
	if (len)
		lk.cb(lk.arg, 0, (struct sockaddr *)&ss, len);
	else
		lk.cb(lk.arg, status == ARES_SUCCESS ? -EHOSTUNREACH : status_to_errno(status),
		      NULL, 0);
}

void ss_resolver_lookup(ss_resolver_t *r, ss_resolve_req_t *req, const char *name, uint16_t port,
			ss_resolve_cb cb, void *arg)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};

	*req = (ss_resolve_req_t){.r = r, .cb = cb, .arg = arg, .port = port};
	ares_getaddrinfo(r->channel, name, NULL, &hints, lookup_done, req);
	resolver_rearm_timer(r);
}
