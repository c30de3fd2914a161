/* SPDX-License-Identifier: MIT */
#include "util/ratelog.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/addr.h"

void ss_ratelog_init(ss_ratelog_t *r, double interval)
{
	memset(r, 0, sizeof(*r));
	r->interval = interval;
}

/* The address of sa without its port, IPv4-mapped IPv6 as IPv4 (a
 * dual-stack listener sees both for one client). false: not an IP
 * address. */
static bool ratelog_key(const struct sockaddr *sa, uint8_t *family, uint8_t addr[static 16])
{
	memset(addr, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		*family = AF_INET;
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (ss_ip6_is_v4mapped(a)) {
			*family = AF_INET;
			memcpy(addr, a + 12, 4);
		} else {
			*family = AF_INET6;
			memcpy(addr, a, 16);
		}
		return true;
	}
	return false;
}

static void ratelog_other(ss_ratelog_t *r, double now)
{
	if (!r->other_more)
		r->other_start = now;
	r->other_more++;
}

bool ss_ratelog_note(ss_ratelog_t *r, const struct sockaddr *sa, double now)
{
	ss_ratelog_entry_t *free_e = NULL;
	uint8_t family, addr[16];

	if (!ratelog_key(sa, &family, addr)) {
		ratelog_other(r, now);
		return false;
	}
	for (size_t i = 0; i < SS_RATELOG_SLOTS; i++) {
		ss_ratelog_entry_t *e = &r->e[i];
		if (!e->family) {
			if (!free_e)
				free_e = e;
			continue;
		}
		if (e->family != family || memcmp(e->addr, addr, 16))
			continue;
		/* An interval that ended with nothing counted (the flush has
		 * not come by yet) starts again with a line of its own; one
		 * with a count waits for its summary. */
		if (now >= e->start + r->interval && !e->more) {
			e->start = now;
			return true;
		}
		e->more++;
		return false;
	}
	if (!free_e) {
		ratelog_other(r, now);
		return false;
	}
	*free_e = (ss_ratelog_entry_t){.start = now, .family = family};
	memcpy(free_e->addr, addr, 16);
	return true;
}

static double ratelog_soonest(double next, double end)
{
	return !next || end < next ? end : next;
}

double ss_ratelog_flush(ss_ratelog_t *r, double now, ss_ratelog_emit_cb emit, void *arg)
{
	char who[SS_RATELOG_WHO_LEN];
	double next = 0;

	for (size_t i = 0; i < SS_RATELOG_SLOTS; i++) {
		ss_ratelog_entry_t *e = &r->e[i];
		if (!e->family)
			continue;
		if (now < e->start + r->interval) {
			next = ratelog_soonest(next, e->start + r->interval);
			continue;
		}
		if (!e->more) {
			e->family = 0; /* quiet for a whole interval: forgotten */
			continue;
		}
		if (!inet_ntop(e->family, e->addr, who, sizeof(who)))
			strcpy(who, "?");
		emit(arg, who, e->more);
		/* Kept for one more interval, counting: a peer that goes on
		 * gets one summary per interval and no line of its own. */
		e->more = 0;
		e->start = now;
		next = ratelog_soonest(next, now + r->interval);
	}
	if (r->other_more) {
		if (now >= r->other_start + r->interval) {
			emit(arg, "other addresses", r->other_more);
			r->other_more = 0;
		} else {
			next = ratelog_soonest(next, r->other_start + r->interval);
		}
	}
	return next;
}
