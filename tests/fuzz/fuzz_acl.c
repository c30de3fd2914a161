/* SPDX-License-Identifier: MIT */
/* libFuzzer target: ACL files through ss_acl_parse, then a few queries on
 * whatever parsed. The last line of the input, when it starts with '@', is
 * not parsed but used as the host to ask about. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/acl.h"

static void query(const ss_acl_t *acl, const char *host)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	static const char *const hosts[] = {"example.com",
					    "a.b.example.com",
					    "EXAMPLE.COM.",
					    "10.1.2.3",
					    "::ffff:10.1.2.3",
					    "[2001:db8::1]",
					    "",
					    "."};

	ss_acl_match_host(acl, host);
	ss_acl_outbound_blocked_host(acl, host);
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		ss_acl_match_host(acl, hosts[i]);
		ss_acl_outbound_blocked_host(acl, hosts[i]);
	}
	/* Addresses built from the host's bytes reach arbitrary table spots. */
	memcpy(&s4.sin_addr, host, strlen(host) >= 4 ? 4 : 0);
	memcpy(&s6.sin6_addr, host, strlen(host) >= 16 ? 16 : 0);
	ss_acl_resolve(acl, ss_acl_match_addr(acl, (struct sockaddr *)&s4));
	ss_acl_match_addr(acl, (struct sockaddr *)&s6);
	ss_acl_outbound_blocked_addr(acl, (struct sockaddr *)&s4);
	ss_acl_outbound_blocked_addr(acl, (struct sockaddr *)&s6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[300] = "www.example.com";
	char err[256];
	ss_acl_t *acl;
	size_t len = size;
	const uint8_t *nl = size ? memrchr(data, '\n', size) : NULL;

	if (nl && (size_t)(nl - data) + 1 < size && nl[1] == '@') {
		size_t hl = size - (size_t)(nl - data) - 2;
		if (hl >= sizeof(host))
			hl = sizeof(host) - 1;
		memcpy(host, nl + 2, hl);
		host[hl] = '\0';
		len = (size_t)(nl - data);
	}
	if (ss_acl_parse(&acl, (const char *)data, len, "fuzz.acl", err, sizeof(err)) == 0) {
		query(acl, host);
		ss_acl_free(acl);
	}
	return 0;
}
