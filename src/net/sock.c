/* SPDX-License-Identifier: MIT */
#include "net/sock.h"
#include "net/transparent.h"
#include "proto/addr.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/sockios.h>
#endif

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif

/* Binds fd to o's interface (SO_BINDTODEVICE) if one is set. Returns fd, or
 * -errno after closing it. */
static int sock_bind_iface(int fd, const ss_sockopts_t *o)
{
	if (o && o->iface && o->iface[0] &&
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->iface, strlen(o->iface)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int sock_open(int family, const ss_sockopts_t *o)
{
	int fd = -1;

	if (o && o->mptcp)
		fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_MPTCP);
	if (fd < 0)
		fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	return sock_bind_iface(fd, o);
}

int ss_sock_listen_tcp(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o)
{
	int one = 1, zero = 0, fd = sock_open(addr->sa_family, o);

	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (o && o->reuse_port)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (o && o->transparent) {
		int rc = ss_transparent_set(fd, addr->sa_family);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	if (o && o->fast_open) {
		int qlen = 256;
		setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN, &qlen, sizeof(qlen));
	}
	if (bind(fd, addr, len) < 0 || (!(o && o->bind_only) && ss_sock_listen(fd) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int ss_sock_listen(int fd)
{
	return listen(fd, 1024) < 0 ? -errno : 0;
}

bool ss_sockaddr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (ss_ip6_is_v4mapped(a->s6_addr) && a->s6_addr[12] == 127);
	}
	return false;
}

/* ---- No pacing on loopback ----
 * With a congestion control that paces (bbr), TCP spaces a socket's packets
 * with high-resolution timers of its own wherever no qdisc does it, as on
 * loopback, where they cost a relay about half its bulk CPU and serve
 * nobody. A socket whose peer is on this host switches to one that does not
 * pace: cubic, or reno where cubic is not allowed to unprivileged processes
 * (net.ipv4.tcp_allowed_congestion_control always lists reno). Sockets on
 * real network paths keep the system's choice. SS_NO_LOOPBACK_CC=1 leaves
 * every socket alone. */

static pthread_once_t loopback_cc_once = PTHREAD_ONCE_INIT;
static bool loopback_cc_wanted; /* written once, under loopback_cc_once */

/* Whether new TCP sockets get a pacing congestion control: asked of a probe
 * socket, so it is this network namespace's default. */
static void loopback_cc_probe(void)
{
	const char *no = getenv("SS_NO_LOOPBACK_CC");
	char name[32] = "";
	socklen_t len = sizeof(name) - 1;
	int fd;

	if (no && no[0] && strcmp(no, "0") != 0)
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0)
		loopback_cc_wanted = strncmp(name, "bbr", 3) == 0;
	close(fd);
}

void ss_sock_loopback_cc(int fd)
{
	static const char cubic[] = "cubic", reno[] = "reno";

	pthread_once(&loopback_cc_once, loopback_cc_probe);
	if (!loopback_cc_wanted)
		return;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cubic, sizeof(cubic) - 1) < 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof(reno) - 1);
}

int ss_sock_connect_tcp(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o,
			bool *done)
{
	int one = 1, fd = sock_open(addr->sa_family, o);

	*done = false;
	if (fd < 0)
		return fd;
	if (o) {
		if (o->no_delay)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (o->fast_open)
			setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one));
		const struct sockaddr *src = addr->sa_family == AF_INET6 ? o->bind6 : o->bind4;
		if (src) {
			socklen_t slen = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								    : sizeof(struct sockaddr_in);
			setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
			if (bind(fd, src, slen) < 0) {
				int e = errno;
				close(fd);
				return -e;
			}
		}
	}
	bool loopback = ss_sockaddr_is_loopback(addr);
	if (loopback)
		ss_sock_loopback_cc(fd);
	int rc = connect(fd, addr, len);
	if (rc < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* Fast open defers the SYN to the first write, and MPTCP may still be
	 * joining subflows: those wait for writability as usual. */
	if (o && (o->fast_open || o->mptcp))
		return fd;
	if (rc == 0) {
		*done = true;
		return fd;
	}
	/* A second connect tells how the first one ended: 0 (or EISCONN) once
	 * established, EALREADY while the handshake runs, or the error it
	 * failed with. */
	if (loopback) {
		if (connect(fd, addr, len) == 0 || errno == EISCONN) {
			*done = true;
		} else if (errno != EALREADY && errno != EINPROGRESS && errno != EINTR) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	return fd;
}

void ss_sock_tune_accepted(int fd, const ss_sockopts_t *o, const struct sockaddr *peer)
{
	int one = 1;

	if (peer && ss_sockaddr_is_loopback(peer))
		ss_sock_loopback_cc(fd);
	if (o && o->no_delay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int ss_sock_error(int fd)
{
	int e = 0;
	socklen_t l = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
		return errno;
	return e;
}

long ss_sock_outq(int fd)
{
#ifdef SIOCOUTQ
	int q = 0;

	if (ioctl(fd, SIOCOUTQ, &q) == 0)
		return q;
#else
	(void)fd;
#endif
	return -1;
}

int ss_sock_resolve_startup(const char *host, unsigned port, bool ipv6_first, bool passive,
			    struct sockaddr_storage *out, socklen_t *len, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
	struct addrinfo *res, *ai, *pick = NULL;
	char portstr[8];
	int rc;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%u", port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (!pick)
			pick = ai;
		if ((ai->ai_family == AF_INET6) == ipv6_first) {
			pick = ai;
			break;
		}
	}
	if (!pick) {
		freeaddrinfo(res);
		snprintf(err, errlen, "cannot resolve '%s': no IPv4 or IPv6 address", host);
		return -EHOSTUNREACH;
	}
	memcpy(out, pick->ai_addr, pick->ai_addrlen);
	*len = pick->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Room for bursts of whole 64 KiB datagrams; the kernel caps what it gives. */
#define UDP_SOCKBUF (4 << 20)

static int udp_socket(int family, const ss_sockopts_t *o)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), zero = 0;
	int size = UDP_SOCKBUF;

	if (fd < 0)
		return -errno;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	return sock_bind_iface(fd, o);
}

int ss_sock_udp_bind(const struct sockaddr *addr, socklen_t len, const ss_sockopts_t *o)
{
	int one = 1, fd = udp_socket(addr->sa_family, NULL);

	if (fd < 0)
		return fd;
	if (o && o->reuse_port)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, addr, len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int ss_sock_udp_open(int family, const ss_sockopts_t *o)
{
	int fd = udp_socket(family, o);

	if (fd < 0 || !o)
		return fd;
	const struct sockaddr *src = family == AF_INET6 ? o->bind6 : o->bind4;
	if (src && bind(fd, src,
			src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						   : sizeof(struct sockaddr_in)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}
