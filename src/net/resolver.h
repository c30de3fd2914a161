/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_RESOLVER_H
#define SS_NET_RESOLVER_H

#include <ares.h>
#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net/hosts.h"

/* c-ares on the libev loop: no blocking lookups on the loop thread. */

/* Called exactly once per ss_resolver_lookup, possibly before it returns.
 * status 0 with an address (port filled in), or -errno (-EHOSTUNREACH when
 * the name has no usable address, -ECANCELED when the resolver is freed). */
typedef void (*ss_resolve_cb)(void *arg, int status, const struct sockaddr *sa, socklen_t len);

#define SS_RESOLVER_MAX_SOCKS 16

typedef struct ss_resolver {
	struct ev_loop *loop;
	ares_channel channel;
	ev_timer timer;
	struct {
		ev_io io;
		int fd; /* -1 when free */
	} socks[SS_RESOLVER_MAX_SOCKS];
	ss_hosts_t hosts;        /* the hosts file: c-ares asks DNS only */
	const char *hosts_path;  /* $SS_HOSTS_FILE, else /etc/hosts */
	ev_tstamp hosts_checked; /* when the file was last looked at */
	bool ipv6_first;
	bool ready;
} ss_resolver_t;

/* nameservers: comma-separated "addr[:port]" list, or NULL/"" for the
 * system's. 0, or -EINVAL with err set. */
int ss_resolver_init(ss_resolver_t *r, struct ev_loop *loop, const char *nameservers,
		     bool ipv6_first, char *err, size_t errlen);
/* Cancels every lookup in flight (their callbacks run with -ECANCELED). */
void ss_resolver_free(ss_resolver_t *r);
/* One lookup in flight; the caller owns it (inside its connection) and keeps
 * it alive until the callback has run. A name in the hosts file (and
 * "localhost" in any case) is answered before this returns. */
typedef struct ss_resolve_req {
	ss_resolver_t *r;
	ss_resolve_cb cb;
	void *arg;
	uint16_t port;
	/* Set before the callback runs: how long the answer may be kept, in
	 * seconds (the DNS record's TTL), or -1 when it has none (the hosts
	 * file, "localhost", a failure). */
	int ttl;
} ss_resolve_req_t;

void ss_resolver_lookup(ss_resolver_t *r, ss_resolve_req_t *req, const char *name, uint16_t port,
			ss_resolve_cb cb, void *arg);

#endif
