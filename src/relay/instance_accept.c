/* SPDX-License-Identifier: MIT */
/* Taking connections: the listeners, paused for want of a slot or a
 * descriptor and held while no server is reachable; shortages logged when
 * they start and when they end; room made by closing the oldest expendable
 * connection; and, with workers, a new connection handed to a lighter one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay/instance.h"
#include "net/inherit.h"
#include "util/log.h"
#include "util/result.h"

#define ACCEPT_RETRY 1.0 /* seconds between accept attempts while out of descriptors */
/* The most connections one readiness event of a listener takes: a burst
 * is taken in few trips through the loop, yet the connections already
 * open are served between batches. */
#define ACCEPT_BATCH 64
/* A shortage (every slot in use, or no descriptor for accept) is logged
 * when it starts and when it ends, with how often it held accepting back,
 * not each time: under a steady overload it would hit on every close. It
 * ends SHORTAGE_QUIET seconds after accept last found no connection
 * waiting, if it has not hit again by then. */
#define SHORTAGE_QUIET 2.0

static void instance_accept_cb(struct ev_loop *loop, ev_io *w, int revents);

static void instance_listeners(struct ss_instance *inst, bool on)
{
	if (inst->retiring)
		return;
	for (size_t i = 0; i < inst->n_listeners; i++) {
		if (on)
			ev_io_start(inst->loop, &inst->listeners[i].io);
		else
			ev_io_stop(inst->loop, &inst->listeners[i].io);
	}
}

/* Accepting stops for two reasons of its own: a shortage (paused) and no
 * server to reach (held); it goes on when neither holds. */
static void instance_pause(struct ss_instance *inst, bool pause)
{
	if (inst->paused == pause || inst->stopping)
		return;
	inst->paused = pause;
	if (!pause)
		ev_timer_stop(inst->loop, &inst->retry);
	if (!inst->held)
		instance_listeners(inst, !pause);
}

void ss_instance_hold(struct ss_instance *inst, bool hold)
{
	if (inst->held == hold || inst->stopping)
		return;
	inst->held = hold;
	if (!inst->paused)
		instance_listeners(inst, !hold);
}

static void instance_shortage_hit(struct ss_instance *inst, ss_shortage_t *sh, const char *what)
{
	ev_timer_stop(inst->loop, &sh->quiet);
	if (sh->times++ == 0) {
		sh->since = ev_now(inst->loop);
		ss_warn("%s", what);
	}
}

/* accept found no connection waiting. */
static void instance_shortage_eased(struct ss_instance *inst, ss_shortage_t *sh)
{
	if (!sh->times || ev_is_active(&sh->quiet))
		return;
	sh->last = ev_now(inst->loop);
	ev_timer_set(&sh->quiet, SHORTAGE_QUIET, 0.);
	ev_timer_start(inst->loop, &sh->quiet);
}

static void instance_shortage_over_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_shortage_t *sh = w->data;
	(void)loop;
	(void)revents;

	if (sh->closing)
		ss_notice("%s again after %.1f s (%llu expendable connections closed to make room)",
			  sh->what, sh->last - sh->since, (unsigned long long)sh->times);
	else
		ss_notice("%s again after %.1f s (accepting held back %llu times)", sh->what,
			  sh->last - sh->since, (unsigned long long)sh->times);
	sh->times = 0;
}

static void instance_shortage_init(ss_shortage_t *sh, const char *what, bool closing)
{
	sh->what = what;
	sh->closing = closing;
	sh->times = 0;
	ev_init(&sh->quiet, instance_shortage_over_cb);
	sh->quiet.data = sh;
}

void ss_instance_slot_freed(struct ss_instance *inst)
{
	if (!inst->paused)
		return;
	instance_pause(inst, false);
	/* In a shortage of slots, take a waiting connection now rather than
	 * after the loop's next turn; finding none ends the shortage. */
	for (size_t i = 0;
	     i < inst->n_listeners && inst->slots_short.times && !inst->paused && !inst->held; i++)
		instance_accept_cb(inst->loop, &inst->listeners[i].io, EV_READ);
}

void ss_instance_expendable(struct ss_instance *inst)
{
	if (inst->paused && inst->slots_short.times)
		instance_pause(inst, false);
}

static void instance_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	instance_pause(w->data, false);
}

static void instance_retry_in(struct ss_instance *inst, ev_tstamp after)
{
	ev_timer_stop(inst->loop, &inst->retry);
	ev_timer_set(&inst->retry, after, 0.);
	ev_timer_start(inst->loop, &inst->retry);
}

/* Every slot is in use. When the listener has just said that a connection
 * waits (waiting), the oldest expendable connection makes room for it: the
 * reaper frees its slot before the loop polls again, and the listener,
 * left on, brings the waiting one in then. A real client's connection is
 * expendable for a round trip after its accept, less than the grace
 * (relay/conn.c), so under a load of real clients there is none to close
 * and new connections wait in the kernel's backlog as before: accepting
 * pauses until a slot frees, or until the oldest expendable connection's
 * grace ends. */
static void instance_slots_full(struct ss_instance *inst, bool waiting)
{
	char what[160];
	ev_tstamp wait = 0;
	int rc = -ENOENT;

	if (waiting) {
		rc = ss_conn_make_room(inst, &wait);
		if (rc == 0) {
			snprintf(
			    what, sizeof(what),
			    "all %zu connection slots in use; the oldest expendable connection "
			    "(no whole request yet, or refused) makes room for each new one",
			    inst->conns.cap);
			instance_shortage_hit(inst, &inst->room_short, what);
			return;
		}
	} else if (inst->expendable.oldest) {
		/* The listener, left on, says whether anyone waits. */
		return;
	}
	snprintf(what, sizeof(what), "all %zu connection slots in use; new connections wait",
		 inst->conns.cap);
	instance_shortage_hit(inst, &inst->slots_short, what);
	instance_pause(inst, true);
	if (rc == -EAGAIN)
		instance_retry_in(inst, wait);
}

/* --workers: hands the accepted fd to a lighter worker; false: this one
 * keeps it. */
static bool instance_hand_off(struct ss_instance *inst, int fd, const struct sockaddr *peer,
			      socklen_t len)
{
	int to = ss_shared_lighter(inst->shared, inst->worker);

	return to >= 0 && ss_shared_hand_off(inst->shared, (unsigned)to, fd, peer, len);
}

/* Takes the connections handed to this worker. */
static void instance_handoff_drain(struct ss_instance *inst)
{
	struct sockaddr_storage peer;
	socklen_t len;
	int fd;

	while (ss_shared_handoff_pop(inst->shared, inst->worker, &fd, &peer, &len)) {
		/* Counted by the worker that handed it over; ss_conn_accept
		 * counts it as open. */
		ss_instance_load(inst, -1);
		if (inst->stopping)
			close(fd);
		else
			ss_conn_accept(inst, false, fd, (struct sockaddr *)&peer, len);
	}
}

static void instance_handoff_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop;
	(void)revents;
	instance_handoff_drain(w->data);
}

int ss_instance_listen(struct ss_instance *inst, char *err, size_t errlen)
{
	if (!inst->sockopts.bind_only)
		return 0;
	for (size_t i = 0; i < inst->n_listeners; i++) {
		int rc = ss_sock_listen(inst->listeners[i].io.fd);
		if (rc < 0) {
			snprintf(err, errlen, "cannot listen: %s", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static void instance_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_listener_t *l = (ss_listener_t *)w;
	struct ss_instance *inst = l->inst;
	(void)loop;
	(void)revents;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		if (inst->conns.in_use >= inst->conns.cap) {
			/* The first look follows the listener's word that a
			 * connection waits; a later one does not know. */
			instance_slots_full(inst, i == 0);
			return;
		}
		int fd =
		    accept4(w->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* The pending connection stays readable: left
				 * on, the listener would spin. A connection's
				 * end resumes it, and so does the timer, as the
				 * descriptors may be held by something else. */
				char what[96];
				snprintf(what, sizeof(what), "accept: %s; new connections wait",
					 strerror(errno));
				instance_shortage_hit(inst, &inst->fds_short, what);
				instance_pause(inst, true);
				instance_retry_in(inst, ACCEPT_RETRY);
			} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
				instance_shortage_eased(inst, &inst->slots_short);
				instance_shortage_eased(inst, &inst->fds_short);
				instance_shortage_eased(inst, &inst->room_short);
			} else if (errno != EINTR && errno != ECONNABORTED) {
				ss_warn("accept: %s", strerror(errno));
			}
			return;
		}
		if (!inst->ops->client &&
		    !ss_instance_client_allowed(inst, (struct sockaddr *)&peer)) {
			char who[SS_ADDR_STRLEN];
			ss_instance_count_refused(inst, fd, SS_REFUSED_ACL);
			ss_refused_note(
			    &inst->refused, (struct sockaddr *)&peer,
			    "server %s: refused by the ACL",
			    ss_sockaddr_format((struct sockaddr *)&peer, who, sizeof(who)));
			close(fd);
			continue;
		}
		if (inst->workers > 1 && !l->door &&
		    instance_hand_off(inst, fd, (struct sockaddr *)&peer, plen))
			continue;
		ss_conn_accept(inst, l->door, fd, (struct sockaddr *)&peer, plen);
	}
}

/* Opens a listener on host:port (see ss_instance_listen_on) whose
 * datagrams go through front (NULL: the program's); door: see
 * ss_instance_listen_door. */
static int instance_listen(struct ss_instance *inst, const char *host, uint16_t port, bool tcp,
			   bool udp, const struct ss_udp_front *front, bool door, char *err,
			   size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char where[SS_ADDR_STRLEN];
	int fd;

	if (inst->n_listeners == SS_ARRAY_LEN(inst->listeners)) {
		snprintf(err, errlen, "too many listen addresses");
		return -EINVAL;
	}
	if (ss_sock_resolve_startup(host, port, inst->cfg->ipv6_first, true, &ss, &len, err,
				    errlen) < 0)
		return -EINVAL;
	if (udp) {
		fd = ss_udp_listen(&inst->udp, front, door, (struct sockaddr *)&ss, len, err,
				   errlen);
		if (fd == -EAFNOSUPPORT && strcmp(host, "::") == 0)
			return instance_listen(inst, "0.0.0.0", port, tcp, udp, front, door, err,
					       errlen);
		if (fd < 0)
			return fd;
	}
	if (!tcp)
		return 0;
	fd = door ? -1 : ss_inherit_take((struct sockaddr *)&ss, len, SOCK_STREAM);
	if (fd < 0)
		fd = ss_sock_listen_tcp((struct sockaddr *)&ss, len, &inst->sockopts);
	if (fd == -EAFNOSUPPORT && strcmp(host, "::") == 0) {
		/* No IPv6 on this host: the dual-stack default becomes IPv4 only. */
		return instance_listen(inst, "0.0.0.0", port, tcp, false, front, door, err, errlen);
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s%s",
			 ss_sockaddr_format((struct sockaddr *)&ss, where, sizeof(where)),
			 strerror(-fd),
			 fd == -EPERM && inst->sockopts.transparent
			     ? " (a TPROXY listener needs CAP_NET_ADMIN or CAP_NET_RAW)"
			     : "");
		return fd;
	}
	ss_listener_t *l = &inst->listeners[inst->n_listeners++];
	l->inst = inst;
	l->door = door;
	ev_io_init(&l->io, instance_accept_cb, fd, EV_READ);
	if (!inst->held)
		ev_io_start(inst->loop, &l->io);
	if (!door)
		ss_notice("listening on %s",
			  ss_sockaddr_format((struct sockaddr *)&ss, where, sizeof(where)));
	return 0;
}

int ss_instance_listen_on(struct ss_instance *inst, const char *host, uint16_t port, bool tcp,
			  bool udp, char *err, size_t errlen)
{
	return instance_listen(inst, host, port, tcp, udp, NULL, false, err, errlen);
}

/* The address the socket fd is bound to. */
static int instance_bound(int fd, struct sockaddr_storage *out, char *err, size_t errlen)
{
	socklen_t len = sizeof(*out);

	if (getsockname(fd, (struct sockaddr *)out, &len) < 0) {
		snprintf(err, errlen, "getsockname: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int ss_instance_listen_door(struct ss_instance *inst, const ss_handshake_ops_t *ops,
			    const struct ss_udp_front *front, struct sockaddr_storage *tcp_out,
			    struct sockaddr_storage *udp_out, char *err, size_t errlen)
{
	int rc;

	if (inst->door_ops) {
		snprintf(err, errlen, "one door an instance");
		return -EBUSY;
	}
	inst->door_ops = ops;
	rc = instance_listen(inst, "127.0.0.1", 0, ops != NULL, front != NULL, front, true, err,
			     errlen);
	if (rc < 0)
		return rc;
	if (ops && (rc = instance_bound(inst->listeners[inst->n_listeners - 1].io.fd, tcp_out, err,
					errlen)) < 0)
		return rc;
	if (front && (rc = instance_bound(inst->udp.listeners[inst->udp.n_listeners - 1].io.fd,
					  udp_out, err, errlen)) < 0)
		return rc;
	return 0;
}

void ss_instance_accept_init(struct ss_instance *inst)
{
	ss_shared_handoff_init(inst->shared, inst->worker, inst->loop, instance_handoff_cb, inst);
	if (inst->workers > 1)
		ss_shared_handoff_open(inst->shared, inst->worker);
	ev_init(&inst->retry, instance_retry_cb);
	inst->retry.data = inst;
	instance_shortage_init(&inst->slots_short, "connection slots free", false);
	instance_shortage_init(&inst->fds_short, "descriptors available", false);
	instance_shortage_init(&inst->room_short, "connection slots free", true);
}

void ss_instance_accept_stop(struct ss_instance *inst)
{
	for (size_t i = 0; i < inst->n_listeners; i++)
		ev_io_stop(inst->loop, &inst->listeners[i].io);
	ev_timer_stop(inst->loop, &inst->retry);
	ev_timer_stop(inst->loop, &inst->slots_short.quiet);
	ev_timer_stop(inst->loop, &inst->fds_short.quiet);
	ev_timer_stop(inst->loop, &inst->room_short.quiet);
}

void ss_instance_mark_handed(struct ss_instance *inst)
{
	ss_dns_mark_handed(inst->dns);
	for (size_t j = 0; j < inst->n_listeners; j++)
		inst->listeners[j].handed =
		    !inst->listeners[j].door && ss_inherit_taken(inst->listeners[j].io.fd);
	for (size_t j = 0; j < inst->udp.n_listeners; j++)
		inst->udp.listeners[j].handed =
		    !inst->udp.listeners[j].door && ss_inherit_taken(inst->udp.listeners[j].io.fd);
}

void ss_instance_offer_listeners(struct ss_instance *inst)
{
	ss_dns_offer(inst->dns);
	for (size_t j = 0; j < inst->n_listeners; j++)
		if (!inst->listeners[j].door)
			ss_inherit_offer(inst->listeners[j].io.fd);
	for (size_t j = 0; j < inst->udp.n_listeners; j++)
		if (!inst->udp.listeners[j].door)
			ss_inherit_offer(inst->udp.listeners[j].io.fd);
}

void ss_instance_accept_retire(struct ss_instance *inst)
{
	for (size_t i = 0; i < inst->n_listeners; i++) {
		ev_io *io = &inst->listeners[i].io;
		ev_io_stop(inst->loop, io);
		/* A listener no one took: what waits in its queue is served
		 * here rather than reset when it closes. */
		for (int n = 0; n < 16 && !inst->listeners[i].handed; n++)
			instance_accept_cb(inst->loop, io, EV_READ);
		if (!inst->listeners[i].handed)
			close(io->fd);
		io->fd = -1;
	}
	ev_timer_stop(inst->loop, &inst->retry);
}

void ss_instance_handoff_close(struct ss_instance *inst)
{
	ss_shared_handoff_close(inst->shared, inst->worker);
	instance_handoff_drain(inst);
}
