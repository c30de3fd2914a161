/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_SOCK_H
#define SS_NET_SOCK_H

#include <stdbool.h>
#include <sys/socket.h>

/* Socket options a program asks for, taken from the configuration. */
typedef struct ss_sockopts {
	bool fast_open;
	bool reuse_port;
	bool no_delay;
	bool mptcp;
	bool transparent;             /* listeners: IP_TRANSPARENT (net/transparent.h) */
	bool bind_only;               /* listeners: bound, listen(2) later (ss_sock_listen) */
	const char *iface;            /* SO_BINDTODEVICE, NULL or "" for none */
	const struct sockaddr *bind4; /* outbound source for IPv4, or NULL */
	const struct sockaddr *bind6; /* outbound source for IPv6, or NULL */
} ss_sockopts_t;

/* A non-blocking, close-on-exec listening TCP socket on addr. An IPv6
 * wildcard listener is dual-stack. Returns the fd or -errno. */
int ss_sock_listen_tcp(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o);
/* The listen(2) a socket bound with o->bind_only waits for. 0 or -errno. */
int ss_sock_listen(int fd);

/* Starts a non-blocking connect to addr. Returns the fd (connect in progress
 * or done) or -errno. With fast_open the first write carries the SYN. *done
 * says whether the connection is already established: a plain TCP connect to
 * a loopback address runs the whole handshake inside the call, so it is
 * checked at once instead of through a wait for writability. */
int ss_sock_connect_tcp(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o,
			bool *done);

/* Whether sa is a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104). */
bool ss_sockaddr_is_loopback(const struct sockaddr *sa);

/* A non-blocking UDP socket bound to addr (listening side; an IPv6 wildcard
 * is dual-stack). Returns the fd or -errno. */
int ss_sock_udp_bind(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o);
/* A non-blocking UDP socket for sending (an IPv6 one is dual-stack), bound
 * to o's source address for its family and to o's interface. fd or -errno. */
int ss_sock_udp_open(int family, const ss_sockopts_t *o);

/* Options for an accepted socket (no-delay; no pacing when the peer, which
 * may be NULL, is on this host). */
void ss_sock_tune_accepted(int fd, const ss_sockopts_t *o, const struct sockaddr *peer);

/* A TCP socket whose peer is on this host: when the system's congestion
 * control paces (bbr), switch to one that does not (cubic, else reno);
 * otherwise, or when SS_NO_LOOPBACK_CC is set, nothing. Errors are ignored.
 * Connects to a loopback address and accepted sockets with a loopback peer
 * get this already. */
void ss_sock_loopback_cc(int fd);

/* The pending error of a socket whose connect finished: 0 or errno. */
int ss_sock_error(int fd);

/* Bytes written to a TCP socket that its peer has not acknowledged yet, or
 * -1 when the system cannot tell. */
long ss_sock_outq(int fd);

/* Resolves host (literal or name) and port at start-up, before any loop
 * runs; prefers IPv6 when ipv6_first. 0 or -errno; err gets a line. */
int ss_sock_resolve_startup(const char *host, unsigned port, bool ipv6_first, bool passive,
			    struct sockaddr_storage *out, socklen_t *len, char *err, size_t errlen);

#endif
