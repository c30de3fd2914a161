/* SPDX-License-Identifier: MIT */
/* Shared by the bench tools (ssload, ssfloor), each a single file compiled on its own. */
#ifndef SS_BENCH_ADDR_H
#define SS_BENCH_ADDR_H

#include <netdb.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

/* "1.2.3.4:80", "[::1]:80", "localhost:80" */
static inline bool parse_addr(const char *s, bool passive, struct sockaddr_storage *ss,
			      socklen_t *len)
{
	char host[256];
	const char *port, *end;
	struct addrinfo hints, *res;
	size_t hlen;

	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':')
			return false;
		s++;
		port = end + 2;
	} else {
		end = strrchr(s, ':');
		if (!end)
			return false;
		port = end + 1;
	}
	hlen = (size_t)(end - s);
	if (hlen == 0 || hlen >= sizeof host || !*port)
		return false;
	memcpy(host, s, hlen);
	host[hlen] = '\0';

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return false;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

#endif
