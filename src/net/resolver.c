/* SPDX-License-Identifier: MIT */
#include "net/resolver.h"
#include "proto/addr.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/tarena.h"
#include "util/log.h"

/* c-ares takes its allocator as process-wide hooks with no context: they
 * draw from an arena per thread (util/tarena.h), kept until exit (c-ares may
 * hold blocks until its last cleanup). Its reservations are virtual; only
 * the blocks in use become resident. c-ares 1.18's library init and cleanup
 * count their callers without a lock, so ours take one. */
#define RESOLVER_ARENA_PER_CLASS (2u << 20)
#define RESOLVER_HOSTS_FILE "/etc/hosts"
#define RESOLVER_HOSTS_RECHECK 1.0 /* seconds between looks at the hosts file */
#define RESOLVER_HOSTS_MAX 65536
static ss_tarenas_t resolver_arenas = SS_TARENAS_INIT(RESOLVER_ARENA_PER_CLASS);
static pthread_mutex_t resolver_lib_lock = PTHREAD_MUTEX_INITIALIZER;

static void *resolver_malloc(size_t n)
{
	return ss_tarenas_alloc(&resolver_arenas, n);
}

static void resolver_free(void *p)
{
	ss_tarenas_free(&resolver_arenas, p);
}

static void *resolver_realloc(void *p, size_t n)
{
	return ss_tarenas_realloc(&resolver_arenas, p, n);
}

static int resolver_lib_init(void)
{
	pthread_mutex_lock(&resolver_lib_lock);
	int rc = ares_library_init_mem(ARES_LIB_INIT_ALL, resolver_malloc, resolver_free,
				       resolver_realloc);
	pthread_mutex_unlock(&resolver_lib_lock);
	return rc;
}

static void resolver_lib_cleanup(void)
{
	pthread_mutex_lock(&resolver_lib_lock);
	ares_library_cleanup();
	pthread_mutex_unlock(&resolver_lib_lock);
}

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
	rc = resolver_lib_init();
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		return -EINVAL;
	}
	r->hosts_path = getenv("SS_HOSTS_FILE");
	if (!r->hosts_path || !r->hosts_path[0])
		r->hosts_path = RESOLVER_HOSTS_FILE;
	rc = ss_hosts_load(&r->hosts, r->hosts_path, RESOLVER_HOSTS_MAX);
	r->hosts_checked = ev_now(loop);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read %s: %s", r->hosts_path, strerror(-rc));
		resolver_lib_cleanup();
		return rc;
	}
	opts.sock_state_cb = resolver_sock_state_cb;
	opts.sock_state_cb_data = r;
	opts.timeout = 3000;
	opts.tries = 2;
	opts.lookups = (char *)"b"; /* the hosts file is ours */
	rc = ares_init_options(&r->channel, &opts,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
				   ARES_OPT_LOOKUPS);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		ss_hosts_free(&r->hosts);
		resolver_lib_cleanup();
		return -EINVAL;
	}
	if (nameservers && nameservers[0]) {
		rc = ares_set_servers_ports_csv(r->channel, nameservers);
		if (rc != ARES_SUCCESS) {
			snprintf(err, errlen, "invalid name server list '%s' for -d/nameserver: %s",
				 nameservers, ares_strerror(rc));
			ares_destroy(r->channel);
			ss_hosts_free(&r->hosts);
			resolver_lib_cleanup();
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
	ss_hosts_free(&r->hosts);
	resolver_lib_cleanup();
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
	((ss_resolve_req_t *)arg)->ttl = len ? pick->ai_ttl : -1;
	if (res)
		ares_freeaddrinfo(res);
	if (len)
		lk.cb(lk.arg, 0, (struct sockaddr *)&ss, len);
	else
		lk.cb(lk.arg, status == ARES_SUCCESS ? -EHOSTUNREACH : status_to_errno(status),
		      NULL, 0);
}

/* "localhost" and names under it are the loopback address (RFC 6761), also
 * when the hosts file does not say so. */
static bool resolver_localhost(const ss_resolver_t *r, const char *name,
			       struct sockaddr_storage *ss, socklen_t *len)
{
	size_t n = strlen(name);

	if (n && name[n - 1] == '.')
		n--;
	if (!((n == 9 && strncasecmp(name, "localhost", 9) == 0) ||
	      (n > 10 && strncasecmp(name + n - 10, ".localhost", 10) == 0)))
		return false;
	memset(ss, 0, sizeof(*ss));
	if (r->ipv6_first) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		*len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*in);
	}
	return true;
}

void ss_resolver_lookup(ss_resolver_t *r, ss_resolve_req_t *req, const char *name, uint16_t port,
			ss_resolve_cb cb, void *arg)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct sockaddr_storage ss;
	socklen_t len;
	ev_tstamp now = ev_now(r->loop);

	req->ttl = -1;
	/* Edits to the hosts file count from the next second: one stat(2) a
	 * second at most, and a new table only when the file changed. */
	if (now - r->hosts_checked >= RESOLVER_HOSTS_RECHECK) {
		r->hosts_checked = now;
		if (ss_hosts_refresh(&r->hosts, r->hosts_path, RESOLVER_HOSTS_MAX))
			ss_debug("resolver: %s changed, read again (%zu names)", r->hosts_path,
				 r->hosts.n);
	}
	const ss_hosts_entry_t *e = ss_hosts_find(&r->hosts, name, r->ipv6_first);

	if (e || resolver_localhost(r, name, &ss, &len)) {
		if (e) {
			ss = e->addr;
			len = e->addr_len;
		}
		ss_sockaddr_set_port((struct sockaddr *)&ss, port);
		cb(arg, 0, (struct sockaddr *)&ss, len);
		return;
	}

	*req = (ss_resolve_req_t){.r = r, .cb = cb, .arg = arg, .port = port};
	ares_getaddrinfo(r->channel, name, NULL, &hints, lookup_done, req);
	resolver_rearm_timer(r);
}
