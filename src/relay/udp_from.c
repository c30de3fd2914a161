/* SPDX-License-Identifier: MIT */
#include "relay/udp_from.h"

#include <errno.h>
#include <unistd.h>

#include "net/transparent.h"
#include "util/log.h"

typedef struct udp_from_entry {
	ss_udp_entry_t entry; /* first: key = the address it sends from */
	int fd;
} udp_from_entry_t;

static void udp_from_close(ss_udp_from_t *f, udp_from_entry_t *e)
{
	close(e->fd);
	ss_udp_table_unlink(&f->table, &e->entry);
	ss_udp_table_put(&f->table, &e->entry);
}

static void udp_from_arm(ss_udp_from_t *f)
{
	ss_udp_table_arm(&f->table, f->loop, &f->expiry, f->timeout);
}

static void udp_from_expiry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_udp_from_t *f = w->data;
	ss_udp_entry_t *e;
	(void)revents;

	while ((e = ss_udp_table_expired(&f->table, ev_now(loop), f->timeout)))
		udp_from_close(f, (udp_from_entry_t *)e);
	udp_from_arm(f);
}

int ss_udp_from_init(ss_udp_from_t *f, struct ev_loop *loop, size_t max, double timeout)
{
	int rc = ss_udp_table_init(&f->table, sizeof(udp_from_entry_t), sizeof(udp_from_entry_t),
				   max ? max : 1);

	if (rc < 0)
		return rc;
	f->loop = loop;
	f->timeout = timeout;
	ev_init(&f->expiry, udp_from_expiry_cb);
	f->expiry.data = f;
	f->ready = true;
	return 0;
}

void ss_udp_from_free(ss_udp_from_t *f)
{
	ss_udp_entry_t *e;

	if (!f->ready)
		return;
	while ((e = ss_udp_table_oldest(&f->table)))
		udp_from_close(f, (udp_from_entry_t *)e);
	ev_timer_stop(f->loop, &f->expiry);
	ss_udp_table_free(&f->table);
	f->ready = false;
}

int ss_udp_from_socket(ss_udp_from_t *f, const struct sockaddr *src, socklen_t len)
{
	udp_from_entry_t *e = (udp_from_entry_t *)ss_udp_table_find(&f->table, src, len);
	ev_tstamp now = ev_now(f->loop);
	int fd;

	if (e) {
		ss_udp_table_touch(&f->table, &e->entry, now);
		return e->fd;
	}
	if (f->table.count == f->table.max)
		udp_from_close(f, (udp_from_entry_t *)ss_udp_table_oldest(&f->table));
	fd = ss_transparent_udp_from(src, len);
	if (fd < 0)
		return fd;
	e = (udp_from_entry_t *)ss_udp_table_add(&f->table, src, len, now);
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	e->fd = fd;
	if (!ev_is_active(&f->expiry))
		udp_from_arm(f);
	return fd;
}
