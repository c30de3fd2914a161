/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_FROM_H
#define SS_RELAY_UDP_FROM_H

#include <ev.h>
#include <stddef.h>
#include <sys/socket.h>

#include "relay/udp_table.h"

/* ss-redir's answers go back to the client from the address the client
 * sent to (the target's), so that its socket takes them: through a
 * transparent UDP socket bound to that address, one per address, kept
 * while answers come from it and closed after the idle timeout, or when
 * the table is full and another address needs one (the least recently
 * used goes). The entries come from a pool reserved at start-up: nothing
 * is allocated per datagram. */

typedef struct ss_udp_from {
	ss_udp_table_t table; /* keyed by the source address; each entry holds a socket */
	struct ev_loop *loop;
	ev_timer expiry;
	double timeout;
	bool ready;
} ss_udp_from_t;

/* Room for max sockets at once, each closed after timeout seconds unused.
 * 0 or -ENOMEM. */
int ss_udp_from_init(ss_udp_from_t *f, struct ev_loop *loop, size_t max, double timeout);
/* Closes every socket and releases the table. */
void ss_udp_from_free(ss_udp_from_t *f);

/* A socket that sends from src (an IP address and port, not a name): the
 * one kept for it, or a new one. fd (owned by f) or -errno. */
int ss_udp_from_socket(ss_udp_from_t *f, const struct sockaddr *src, socklen_t len);

#endif
