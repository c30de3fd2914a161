/* SPDX-License-Identifier: MIT */
#include "net/ports.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PICK_ATTEMPTS 16
/* /proc/net/tcp states (include/net/tcp_states.h) */
#define TCP_STATE_LISTEN 0x0A

static int ports_bind(int type, uint16_t port, uint16_t *got)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(port)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	*got = ntohs(sin.sin_port);
	return fd;
}

static bool ports_avoided(uint16_t p, const uint16_t *avoid, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (avoid[i] == p)
			return true;
	return false;
}

int ss_port_pick_loopback(bool tcp, bool udp, const uint16_t *avoid, size_t n, uint16_t *port)
{
	/* An avoided port the kernel gave stays bound until the end, or the
	 * kernel would give it again (bind prefers one half of the range). */
	int held[PICK_ATTEMPTS], nheld = 0, rc = -EADDRINUSE;

	for (int i = 0; i < PICK_ATTEMPTS; i++) {
		uint16_t p = 0, q = 0;
		int a = ports_bind(tcp ? SOCK_STREAM : SOCK_DGRAM, 0, &p), b = -1;
		if (a < 0) {
			rc = a;
			break;
		}
		if (ports_avoided(p, avoid, n)) {
			held[nheld++] = a;
			continue;
		}
		if (tcp && udp)
			b = ports_bind(SOCK_DGRAM, p, &q);
		close(a);
		if (b >= 0)
			close(b);
		if (!(tcp && udp) || b >= 0) {
			*port = p;
			rc = 0;
			break;
		}
		rc = b;
	}
	while (nheld)
		close(held[--nheld]);
	return rc;
}

/* 1 when the table in path has a socket on port (in state, or any state when
 * state is 0), 0 when not, -errno when it cannot be read. */
static int ports_scan(const char *path, uint16_t port, unsigned state)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int found = 0;

	if (!f)
		return -errno;
	/* "  0: 0100007F:1F90 00000000:0000 0A ..." after a header line */
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned lport, st;
		if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &lport, &st) == 2 &&
		    lport == port && (!state || st == state))
			found = 1;
	}
	fclose(f);
	return found;
}

int ss_port_bound(bool udp, uint16_t port)
{
	const char *v4 = udp ? "/proc/net/udp" : "/proc/net/tcp";
	const char *v6 = udp ? "/proc/net/udp6" : "/proc/net/tcp6";
	unsigned state = udp ? 0 : TCP_STATE_LISTEN;
	int a = ports_scan(v4, port, state), b;

	if (a > 0)
		return 1;
	b = ports_scan(v6, port, state);
	if (b > 0)
		return 1;
	return a == 0 || b == 0 ? 0 : a;
}
