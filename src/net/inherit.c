/* SPDX-License-Identifier: MIT */
#include "net/inherit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

typedef struct inherit_entry {
	int fd, type;
	bool taken;
	struct sockaddr_storage addr;
	socklen_t len;
} inherit_entry_t;

static inherit_entry_t inherit_table[SS_INHERIT_MAX];
static size_t inherit_n;
/* ss-manager's ports are made and closed on its workers' threads. */
static pthread_mutex_t inherit_lock = PTHREAD_MUTEX_INITIALIZER;

void ss_inherit_offer(int fd)
{
	inherit_entry_t *e;
	socklen_t tlen = sizeof(int);

	if (fd < 0)
		return;
	pthread_mutex_lock(&inherit_lock);
	e = &inherit_table[inherit_n];
	if (inherit_n < SS_INHERIT_MAX) {
		memset(e, 0, sizeof(*e));
		e->fd = fd;
		e->len = sizeof(e->addr);
		if (getsockname(fd, (struct sockaddr *)&e->addr, &e->len) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &e->type, &tlen) == 0)
			inherit_n++;
	}
	pthread_mutex_unlock(&inherit_lock);
}

/* The same address family, address and port (what bind(2) was given). */
static bool inherit_same(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (b->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port == y->sin6_port &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0 &&
		       x->sin6_scope_id == y->sin6_scope_id;
	}
	return false;
}

int ss_inherit_take(const struct sockaddr *addr, socklen_t len, int type)
{
	int fd = -1;

	(void)len;
	pthread_mutex_lock(&inherit_lock);
	for (size_t i = 0; i < inherit_n && fd < 0; i++) {
		inherit_entry_t *e = &inherit_table[i];
		if (e->taken || e->type != type || !inherit_same(&e->addr, addr))
			continue;
		e->taken = true;
		fd = e->fd;
	}
	pthread_mutex_unlock(&inherit_lock);
	return fd;
}

bool ss_inherit_taken(int fd)
{
	bool taken = false;

	pthread_mutex_lock(&inherit_lock);
	for (size_t i = 0; i < inherit_n; i++)
		if (inherit_table[i].fd == fd) {
			taken = inherit_table[i].taken;
			break;
		}
	pthread_mutex_unlock(&inherit_lock);
	return taken;
}

bool ss_inherit_give_back(int fd)
{
	bool back = false;

	pthread_mutex_lock(&inherit_lock);
	for (size_t i = 0; i < inherit_n && !back; i++)
		if (inherit_table[i].fd == fd && inherit_table[i].taken) {
			inherit_table[i].taken = false;
			back = true;
		}
	pthread_mutex_unlock(&inherit_lock);
	return back;
}

void ss_inherit_clear(void)
{
	pthread_mutex_lock(&inherit_lock);
	inherit_n = 0;
	pthread_mutex_unlock(&inherit_lock);
}
