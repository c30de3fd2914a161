/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_DOORS_H
#define SS_RELAY_DOORS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "config/config.h"

/* ss-server's own doors: the manager it reports to (--manager-address,
 * over UDP), its metrics endpoint (--metrics), and the control socket of
 * the ss-manager running it (cfg->manager_door). Clients may never reach
 * them through the relay, whatever the ACL: a datagram to the manager
 * would forge figures or commands, a scrape would read them. A door on a
 * wildcard address is reached at any local address at its port: loopback,
 * the unspecified address, and every address of the host's interfaces at
 * start. Fixed once made; read by every worker without a lock. */

#define SS_DOORS_MAX 3

typedef struct ss_doors {
	size_t n;
	struct {
		struct sockaddr_storage sa; /* IPv4-mapped addresses unmapped */
		bool wildcard;
	} d[SS_DOORS_MAX];
	/* The host's addresses, for wildcard doors (n_local may be 0). */
	struct sockaddr_storage *local;
	size_t n_local;
} ss_doors_t;

/* The doors of cfg (ss-server; none for the others). 0 or -errno with
 * err (an address that does not parse). */
int ss_doors_init(ss_doors_t *d, const ss_config_t *cfg, char *err, size_t errlen);
/* One door at sa (the DNS relay's own address, say), the host's
 * addresses with it when it is a wildcard; ss_doors_free after. */
void ss_doors_one(ss_doors_t *d, const struct sockaddr *sa, socklen_t len);
void ss_doors_free(ss_doors_t *d);
/* Whether a target at sa is one of the doors. */
bool ss_doors_match(const ss_doors_t *d, const struct sockaddr *sa);

#endif
