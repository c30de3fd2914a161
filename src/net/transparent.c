/* SPDX-License-Identifier: MIT */
#include "net/transparent.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "proto/addr.h"

#ifdef __linux__
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#endif

#ifdef __linux__

int ss_transparent_set(int fd, int family)
{
	int one = 1;

	if (setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0)
		return -errno;
	if (family == AF_INET6 && setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

int ss_transparent_recv_dst(int fd, int family)
{
	int one = 1;

	/* An IPv6 socket takes IPv4 too (dual-stack): both kinds of record. */
	if (setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (family == AF_INET6 &&
	    setsockopt(fd, SOL_IPV6, IPV6_RECVORIGDSTADDR, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

static uint16_t transparent_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

static bool transparent_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family || transparent_port(a) != transparent_port(b))
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

bool ss_transparent_is_self(const struct sockaddr_storage *sa, socklen_t len, uint16_t listen_port)
{
	struct sockaddr_storage probe;
	bool local;
	int fd;

	if (transparent_port(sa) != listen_port)
		return false;
	/* Only the host's own addresses can be bound without IP_TRANSPARENT. */
	fd = socket(sa->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true; /* cannot tell: the safe answer */
	memcpy(&probe, sa, len);
	if (probe.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&probe)->sin6_port = 0;
	else
		((struct sockaddr_in *)&probe)->sin_port = 0;
	local = bind(fd, (struct sockaddr *)&probe, len) == 0 || errno != EADDRNOTAVAIL;
	close(fd);
	return local;
}

int ss_transparent_tcp_dst(int fd, bool tproxy, uint16_t listen_port, struct sockaddr_storage *out,
			   socklen_t *len)
{
	struct sockaddr_storage self;
	socklen_t self_len = sizeof(self);

	if (getsockname(fd, (struct sockaddr *)&self, &self_len) < 0)
		return -errno;
	ss_sockaddr_unmap(&self, &self_len);
	memset(out, 0, sizeof(*out));
	if (tproxy) {
		/* TPROXY leaves the destination alone: the socket has it. A
		 * connection to the proxy's own port on one of the host's
		 * addresses came straight to us. */
		if (ss_transparent_is_self(&self, self_len, listen_port))
			return -ENOENT;
		memcpy(out, &self, self_len);
		*len = self_len;
		return 0;
	}
	*len =
	    self.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int rc = self.ss_family == AF_INET6
		     ? getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, out, len)
		     : getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, out, len);
	if (rc < 0)
		return errno == ENOENT || errno == ENOTCONN ? -ENOENT : -errno;
	ss_sockaddr_unmap(out, len);
	/* Conntrack remembers every connection: one that no rule rewrote
	 * has the proxy's own address. */
	if (transparent_same(out, &self))
		return -ENOENT;
	return 0;
}

int ss_transparent_cmsg_dst(const struct msghdr *m, struct sockaddr_storage *out, socklen_t *len)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c != NULL;
	     c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		size_t n = 0;
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_ORIGDSTADDR)
			n = sizeof(struct sockaddr_in);
		else if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR)
			n = sizeof(struct sockaddr_in6);
		if (n == 0 || c->cmsg_len < CMSG_LEN(n))
			continue;
		memset(out, 0, sizeof(*out));
		memcpy(out, CMSG_DATA(c), n);
		*len = (socklen_t)n;
		ss_sockaddr_unmap(out, len);
		return 0;
	}
	return -ENOENT;
}

int ss_transparent_udp_from(const struct sockaddr *addr, socklen_t len)
{
	int one = 1, rc;
	int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if ((rc = ss_transparent_set(fd, addr->sa_family)) < 0)
		goto fail;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, addr, len) < 0) {
		rc = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

#else

int ss_transparent_set(int fd, int family)
{
	(void)fd;
	(void)family;
	return -EOPNOTSUPP;
}

int ss_transparent_recv_dst(int fd, int family)
{
	(void)fd;
	(void)family;
	return -EOPNOTSUPP;
}

int ss_transparent_tcp_dst(int fd, bool tproxy, uint16_t listen_port, struct sockaddr_storage *out,
			   socklen_t *len)
{
	(void)fd;
	(void)tproxy;
	(void)listen_port;
	(void)out;
	(void)len;
	return -EOPNOTSUPP;
}

int ss_transparent_cmsg_dst(const struct msghdr *m, struct sockaddr_storage *out, socklen_t *len)
{
	(void)m;
	(void)out;
	(void)len;
	return -ENOENT;
}

int ss_transparent_udp_from(const struct sockaddr *addr, socklen_t len)
{
	(void)addr;
	(void)len;
	return -EOPNOTSUPP;
}

bool ss_transparent_is_self(const struct sockaddr_storage *sa, socklen_t len, uint16_t listen_port)
{
	(void)sa;
	(void)len;
	(void)listen_port;
	return false;
}

#endif
