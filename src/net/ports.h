/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_PORTS_H
#define SS_NET_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ports of this host, for SIP003 plugins: one to hand a plugin, and whether
 * one is open yet. */

/* A port free on 127.0.0.1 for TCP, UDP or both (the same number), as the
 * kernel gives it for port 0, and none of the n ports in avoid (ports this
 * program or its plugin will bind soon, which are free now). Someone else
 * may take it before it is used, as with any port chosen this way. 0 or
 * -errno. */
int ss_port_pick_loopback(bool tcp, bool udp, const uint16_t *avoid, size_t n, uint16_t *port);

/* Whether some socket of this network namespace, on any address, listens on
 * TCP port (udp false) or is bound to UDP port (udp true): 1 or 0, read from
 * /proc/net/{tcp,tcp6,udp,udp6}; -errno when none of them can be read. */
int ss_port_bound(bool udp, uint16_t port);

#endif
