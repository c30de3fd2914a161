/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_HOSTS_H
#define SS_NET_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

/* The hosts file (/etc/hosts), read when the resolver starts and again
 * when it changes, and answered from memory: a name found there never
 * reaches c-ares, whose own hosts lookup reopens the file (and allocates) on
 * every query. Lines are "address name [alias...]" with '#' comments, as
 * hosts(5) describes. */

typedef struct ss_hosts_entry {
	char name[256];
	struct sockaddr_storage addr; /* port 0 */
	socklen_t addr_len;
} ss_hosts_entry_t;

typedef struct ss_hosts {
	ss_hosts_entry_t *v;
	size_t n, cap;
	/* The file as it was read (present false: there was none), to tell
	 * when it has changed. */
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
} ss_hosts_t;

/* Parses len bytes of hosts-file text; lines it cannot read are skipped,
 * as the C library skips them. Entries past max are dropped. 0 or -ENOMEM. */
int ss_hosts_parse(ss_hosts_t *h, const char *text, size_t len, size_t max);
/* Reads path (a missing file gives an empty table). 0 or -errno. */
int ss_hosts_load(ss_hosts_t *h, const char *path, size_t max);
/* Reads path again when it is not the file that was loaded (another inode,
 * size or modification time, or it appeared or went away). The old table
 * stays when the new one cannot be read. true when the table was replaced. */
bool ss_hosts_refresh(ss_hosts_t *h, const char *path, size_t max);
void ss_hosts_free(ss_hosts_t *h);
/* The address of name (case-insensitive, one trailing dot ignored): the
 * first IPv6 one when ipv6_first and there is one, else the first IPv4
 * one, else the first of any family; NULL when name is not there. */
const ss_hosts_entry_t *ss_hosts_find(const ss_hosts_t *h, const char *name, bool ipv6_first);

#endif
