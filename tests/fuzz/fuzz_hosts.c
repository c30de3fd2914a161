/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the hosts-file parser (ss_hosts_parse), raw. The first
 * byte caps the entries (1-256, or none); the rest is the file's text.
 * Every entry must hold a usable address and a name of 1-255 bytes without
 * blanks, and be found again by its name (in any case, with or without a
 * trailing dot) by ss_hosts_find, which must answer with an entry of that
 * name. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "fuzz_util.h"
#include "net/hosts.h"

/* name with its case flipped and a trailing dot added or taken away. */
static void other_spelling(const char *name, char *out)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < n; i++)
		out[i] = (char)(islower((unsigned char)name[i]) ? toupper((unsigned char)name[i])
								: tolower((unsigned char)name[i]));
	/* One trailing dot is ignored, not two: "a.." is only "a..". */
	if (n > 1 && name[n - 1] == '.' && name[n - 2] != '.')
		n--;
	else if (name[n - 1] != '.')
		out[n++] = '.';
	out[n] = '\0';
}

static bool same_name(const char *a, const char *b)
{
	size_t x = strlen(a), y = strlen(b);

	x -= x && a[x - 1] == '.';
	y -= y && b[y - 1] == '.';
	return x == y && strncasecmp(a, b, x) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ss_hosts_t h;
	size_t max;
	char *text;

	if (size == 0)
		return 0;
	max = data[0] == 0 ? SIZE_MAX : data[0];
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	if (ss_hosts_parse(&h, text, size - 1, max) != 0) {
		free(text);
		return 0;
	}
	FZ_CHECK(h.n <= max && h.n <= h.cap);
	for (size_t i = 0; i < h.n; i++) {
		const ss_hosts_entry_t *e = &h.v[i], *got;
		size_t n = strlen(e->name);
		char spelt[258];

		FZ_CHECK(n >= 1 && n <= 255);
		for (size_t j = 0; j < n; j++)
			FZ_CHECK(!isspace((unsigned char)e->name[j]) && e->name[j] != '#');
		if (e->addr.ss_family == AF_INET)
			FZ_CHECK(e->addr_len == sizeof(struct sockaddr_in));
		else
			FZ_CHECK(e->addr.ss_family == AF_INET6 &&
				 e->addr_len == sizeof(struct sockaddr_in6));
		for (int v6 = 0; v6 < 2; v6++) {
			got = ss_hosts_find(&h, e->name, v6);
			FZ_CHECK(got != NULL && same_name(got->name, e->name));
			other_spelling(e->name, spelt);
			got = ss_hosts_find(&h, spelt, v6);
			FZ_CHECK(got != NULL && same_name(got->name, e->name));
		}
	}
	ss_hosts_free(&h);
	free(text);
	return 0;
}
