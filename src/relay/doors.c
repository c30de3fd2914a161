/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "net/sock.h"
#include "proto/addr.h"
#include "relay/doors.h"
#include "relay/metrics.h"
#include "relay/report.h"

static bool doors_unspecified(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

static bool doors_same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->sa_family == AF_INET6 &&
	       memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

static void doors_add(ss_doors_t *d, const struct sockaddr_storage *ss, socklen_t len)
{
	struct sockaddr_storage u = *ss;

	if (d->n == SS_DOORS_MAX || (u.ss_family != AF_INET && u.ss_family != AF_INET6))
		return;
	ss_sockaddr_unmap(&u, &len);
	d->d[d->n].sa = u;
	d->d[d->n].wildcard = doors_unspecified((struct sockaddr *)&u);
	d->n++;
}

/* The host's addresses, for doors on a wildcard. */
static void doors_local(ss_doors_t *d)
{
	struct ifaddrs *ifa, *i;
	size_t n = 0;

	if (getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i; i = i->ifa_next)
		n += i->ifa_addr &&
		     (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6);
	d->local = n ? calloc(n, sizeof(*d->local)) : NULL;
	for (i = ifa; i && d->local; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			memcpy(&d->local[d->n_local++], i->ifa_addr, sizeof(struct sockaddr_in));
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(&d->local[d->n_local++], i->ifa_addr, sizeof(struct sockaddr_in6));
	}
	freeifaddrs(ifa);
}

int ss_doors_init(ss_doors_t *d, const ss_config_t *cfg, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool wild = false;

	memset(d, 0, sizeof(*d));
	if (cfg->prog != SS_PROG_SERVER)
		return 0;
	if (cfg->manager_address[0]) {
		if (ss_report_parse(cfg->manager_address, &ss, &len, err, errlen) < 0)
			return -EINVAL;
		doors_add(d, &ss, len);
	}
	if (cfg->manager_door[0]) {
		if (ss_report_parse(cfg->manager_door, &ss, &len, err, errlen) < 0)
			return -EINVAL;
		doors_add(d, &ss, len);
	}
	if (cfg->metrics[0]) {
		if (ss_metrics_parse(cfg->metrics, &ss, &len, err, errlen) < 0)
			return -EINVAL;
		doors_add(d, &ss, len);
	}
	for (size_t i = 0; i < d->n; i++)
		wild |= d->d[i].wildcard;
	if (wild)
		doors_local(d);
	return 0;
}

void ss_doors_one(ss_doors_t *d, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage ss;

	memset(d, 0, sizeof(*d));
	if (len > sizeof(ss))
		return;
	memcpy(&ss, sa, len);
	doors_add(d, &ss, len);
	if (d->n && d->d[0].wildcard)
		doors_local(d);
}

void ss_doors_free(ss_doors_t *d)
{
	free(d->local);
	d->local = NULL;
	d->n_local = 0;
}

bool ss_doors_match(const ss_doors_t *d, const struct sockaddr *sa)
{
	struct sockaddr_storage t;
	socklen_t len;
	const struct sockaddr *ts = (const struct sockaddr *)&t;
	uint16_t port;

	if (!d->n || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return false;
	len = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	memcpy(&t, sa, len);
	ss_sockaddr_unmap(&t, &len);
	port = ss_sockaddr_port(ts);
	for (size_t i = 0; i < d->n; i++) {
		const struct sockaddr *door = (const struct sockaddr *)&d->d[i].sa;
		if (ss_sockaddr_port(door) != port)
			continue;
		/* The unspecified address is this host, whatever door. */
		if (doors_unspecified(ts) || doors_same_addr(ts, door))
			return true;
		if (!d->d[i].wildcard)
			continue;
		if (ss_sockaddr_is_loopback(ts))
			return true;
		for (size_t k = 0; k < d->n_local; k++)
			if (doors_same_addr(ts, (const struct sockaddr *)&d->local[k]))
				return true;
	}
	return false;
}
