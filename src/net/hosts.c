/* SPDX-License-Identifier: MIT */
#include "net/hosts.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define HOSTS_FILE_MAX (4u << 20) /* larger files are read this far */

static bool hosts_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		*len = sizeof(*in);
		return true;
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
		return true;
	}
	return false;
}

static int hosts_add(ss_hosts_t *h, const char *name, size_t nlen,
		     const struct sockaddr_storage *ss, socklen_t len, size_t max)
{
	if (h->n == max || nlen == 0 || nlen > 255)
		return 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		ss_hosts_entry_t *v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	ss_hosts_entry_t *e = &h->v[h->n++];
	memcpy(e->name, name, nlen);
	e->name[nlen] = '\0';
	e->addr = *ss;
	e->addr_len = len;
	return 0;
}

int ss_hosts_parse(ss_hosts_t *h, const char *text, size_t len, size_t max)
{
	const char *p = text, *end = text + len;

	memset(h, 0, sizeof(*h));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		const char *hash = memchr(p, '#', (size_t)(line_end - p));
		const char *q = p, *stop = hash ? hash : line_end;
		char addr[64];
		struct sockaddr_storage ss;
		socklen_t sl;
		size_t alen;

		p = eol ? eol + 1 : end;
		/* A NUL would cut an address or a name short (to nothing, even)
		 * where it is read as a C string: such a line is not read. */
		if (memchr(q, '\0', (size_t)(stop - q)) != NULL)
			continue;
		while (q < stop && isspace((unsigned char)*q))
			q++;
		const char *a = q;
		while (q < stop && !isspace((unsigned char)*q))
			q++;
		alen = (size_t)(q - a);
		if (alen == 0 || alen >= sizeof(addr))
			continue;
		memcpy(addr, a, alen);
		addr[alen] = '\0';
		if (!hosts_addr(addr, &ss, &sl))
			continue;
		for (;;) {
			while (q < stop && isspace((unsigned char)*q))
				q++;
			const char *name = q;
			while (q < stop && !isspace((unsigned char)*q))
				q++;
			if (q == name)
				break;
			if (hosts_add(h, name, (size_t)(q - name), &ss, sl, max) < 0) {
				ss_hosts_free(h);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

static void hosts_mark(ss_hosts_t *h, const struct stat *st)
{
	h->present = st != NULL;
	h->dev = st ? st->st_dev : 0;
	h->ino = st ? st->st_ino : 0;
	h->size = st ? st->st_size : 0;
	h->mtime = st ? st->st_mtim : (struct timespec){0, 0};
}

int ss_hosts_load(ss_hosts_t *h, const char *path, size_t max)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	char *buf;
	size_t n;
	int rc;

	memset(h, 0, sizeof(*h));
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fileno(f), &st) < 0) {
		rc = -errno;
		fclose(f);
		return rc;
	}
	buf = malloc(HOSTS_FILE_MAX);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, HOSTS_FILE_MAX, f);
	rc = ferror(f) ? -EIO : ss_hosts_parse(h, buf, n, max);
	free(buf);
	fclose(f);
	if (rc == 0)
		hosts_mark(h, &st);
	return rc;
}

bool ss_hosts_refresh(ss_hosts_t *h, const char *path, size_t max)
{
	struct stat st;
	bool present = stat(path, &st) == 0;
	ss_hosts_t fresh;

	if (!present && errno != ENOENT)
		return false; /* cannot tell: keep what we have */
	if (present == h->present &&
	    (!present ||
	     (st.st_dev == h->dev && st.st_ino == h->ino && st.st_size == h->size &&
	      st.st_mtim.tv_sec == h->mtime.tv_sec && st.st_mtim.tv_nsec == h->mtime.tv_nsec)))
		return false;
	if (ss_hosts_load(&fresh, path, max) < 0) {
		/* Keep the old table, and do not try again until it changes. */
		hosts_mark(h, present ? &st : NULL);
		return false;
	}
	ss_hosts_free(h);
	*h = fresh;
	return true;
}

void ss_hosts_free(ss_hosts_t *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static bool hosts_name_eq(const char *entry, const char *name)
{
	size_t a = strlen(entry), b = strlen(name);

	if (a && entry[a - 1] == '.')
		a--;
	if (b && name[b - 1] == '.')
		b--;
	return a == b && strncasecmp(entry, name, a) == 0;
}

const ss_hosts_entry_t *ss_hosts_find(const ss_hosts_t *h, const char *name, bool ipv6_first)
{
	const ss_hosts_entry_t *first = NULL, *v4 = NULL;

	for (size_t i = 0; i < h->n; i++) {
		const ss_hosts_entry_t *e = &h->v[i];
		if (!hosts_name_eq(e->name, name))
			continue;
		if (!first)
			first = e;
		if (e->addr.ss_family == AF_INET6 && ipv6_first)
			return e;
		if (e->addr.ss_family == AF_INET && !v4)
			v4 = e;
	}
	return v4 ? v4 : first;
}
