/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_TRANSPARENT_H
#define SS_NET_TRANSPARENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Sockets of a transparent proxy (ss-redir): where the firewall's REDIRECT
 * or TPROXY rule meant the traffic to go. Linux; elsewhere each returns
 * -EOPNOTSUPP. */

/* Lets fd take traffic for, and bind to, addresses that are not the host's
 * (IP_TRANSPARENT; IPV6_TRANSPARENT too on an IPv6 socket). 0 or -errno:
 * -EPERM without CAP_NET_ADMIN. */
int ss_transparent_set(int fd, int family);

/* UDP: each datagram read with recvmsg carries its original destination
 * (IP_RECVORIGDSTADDR; IPV6_RECVORIGDSTADDR too on an IPv6 socket). 0 or
 * -errno. */
int ss_transparent_recv_dst(int fd, int family);

/* A redirected TCP connection's original destination, into out (len set):
 * by REDIRECT, what conntrack remembers (SO_ORIGINAL_DST,
 * IP6T_SO_ORIGINAL_DST); by TPROXY (tproxy), the accepted socket's own
 * address. An IPv4 destination comes out as AF_INET whatever the socket's
 * family. -ENOENT when the connection was not redirected: no NAT record, or
 * the destination is the proxy itself (its own address with listen_port),
 * where relaying would loop; other -errno values as the calls fail. */
int ss_transparent_tcp_dst(int fd, bool tproxy, uint16_t listen_port, struct sockaddr_storage *out,
			   socklen_t *len);

/* The original destination of a datagram, from the control messages
 * recvmsg filled in m (after ss_transparent_recv_dst); AF_INET for IPv4.
 * 0, or -ENOENT when none is there. */
int ss_transparent_cmsg_dst(const struct msghdr *m, struct sockaddr_storage *out, socklen_t *len);

/* Whether sa is the proxy itself: listen_port on one of the host's
 * addresses. Traffic for it came straight to the proxy, and relaying it
 * would loop. */
bool ss_transparent_is_self(const struct sockaddr_storage *sa, socklen_t len, uint16_t listen_port);

/* A non-blocking UDP socket bound to addr, which need not be the host's
 * (transparent, SO_REUSEADDR so that several processes and the listener can
 * share it): answers sent from it seem to come from addr. fd or -errno. */
int ss_transparent_udp_from(const struct sockaddr *addr, socklen_t len);

#endif
