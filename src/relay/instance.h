/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_INSTANCE_H
#define SS_RELAY_INSTANCE_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>

#include "config/config.h"
#include "codec/codec.h"
#include "proto/acl.h"
#include "net/plugin.h"
#include "net/resolver.h"
#include "net/sock.h"
#include "relay/conn.h"
#include "relay/dns.h"
#include "relay/refused.h"
#include "relay/servers.h"
#include "relay/shared.h"
#include "relay/udp.h"
#include "shadowsocks.h"
#include "util/pool.h"

/* A stretch of time when accepting was held back for want of something. */
typedef struct ss_shortage {
	const char *what; /* for the line that says it is over */
	ev_tstamp since;  /* when it began */
	ev_tstamp last;   /* when accept last found nothing waiting */
	uint64_t times;   /* accepts held back, or connections closed for room; 0: none now */
	bool closing;     /* what it counts: connections closed to make room */
	ev_timer quiet;   /* running: over unless it hits again first */
} ss_shortage_t;

/* Codecs whose states are interchangeable (ss_codec_same_states): a slot
 * keeps one pair of TCP states per class it has used, an association slot
 * one state, so that connections going to servers of different methods
 * reuse what they set up instead of setting it up again. */
typedef struct ss_codec_class {
	ss_codec_t *k;    /* the first codec of the class */
	uint32_t off;     /* its two TCP states, in a slot's tail */
	uint32_t size;    /* one TCP state, rounded (ss_codec_state_size) */
	uint32_t udp_off; /* its association state, in an association's tail */
} ss_codec_class_t;

typedef struct ss_listener {
	ev_io io;
	struct ss_instance *inst;
	/* ss_instance_listen_door's: its connections start with the door's
	 * handshake, it keeps them, and it is never offered to a reload. */
	bool door;
	/* A reload: the new workers took this socket (net/inherit.h); set by
	 * the main thread before the instance retires. */
	bool handed;
} ss_listener_t;

struct ss_instance {
	const ss_config_t *cfg;
	const ss_handshake_ops_t *ops;
	/* The door's (ss_instance_listen_door), or NULL. */
	const ss_handshake_ops_t *door_ops;
	const ss_crypto_backend_t *be;
	struct ev_loop *loop;
	ss_pool_t conns;
	ss_pool_t bufs;
	ss_resolver_t resolver;
	ss_codec_t codec; /* ss-server's, with the shared replay pools */
	ss_codec_class_t classes[SS_MAX_SERVERS];
	size_t n_classes;
	size_t slot_states;   /* a connection slot's tail: every class's states */
	size_t udp_states;    /* an association's */
	ss_acl_t *acl;        /* --acl: this worker's view of the shared one, or NULL */
	bool acl_by_addr;     /* the ACL has address rules: names may need a lookup */
	bool block_private;   /* ss-server --block-private: refuse targets at private addresses */
	bool splice_ok;       /* splice(2) may move COPY directions (ss_splice_supported) */
	ss_pipe_pool_t pipes; /* their pipes, held only while bytes are in them */
	ss_udp_relay_t udp;   /* when the mode includes UDP */
	ss_listener_t listeners[SS_MAX_SERVERS];
	size_t n_listeners;
	bool paused; /* listeners stopped: no free slot or no descriptor */
	bool held;   /* listeners stopped: no server is reachable over TCP (plugins down) */
	/* No free slot, no descriptor, and every slot in use but expendable
	 * connections closed to make room (no one waits). */
	ss_shortage_t slots_short, fds_short, room_short;
	/* Resumes accepting after a descriptor shortage no slot holds, or
	 * once the oldest expendable connection's grace has ended. */
	ev_timer retry;
	/* Connections that have not completed a handshake since their
	 * accept, and those draining, the oldest first (relay/conn.c): any
	 * of them may make room for a new one. */
	struct {
		ss_conn_t *oldest, *newest;
	} expendable;
	/* Frees closed connections once the callbacks of this loop iteration
	 * have run, before the loop sleeps: a check watcher would wait for the
	 * next event, leaving listeners paused for want of a slot already
	 * free. */
	ev_prepare reaper;
	ss_conn_t *closed;
	ss_servers_t servers; /* clients: each with its codec, address, health and plugin */
	ss_dns_t *dns;        /* ss-local --dns, on worker 0: the DNS relay (relay/dns.h) */
	/* The SIP003 plugins (shared->plugins) are watched by the worker on
	 * their loop: started there (kick) so that they are children of the
	 * process that runs it (after a daemon's fork) with its final user. */
	bool watches_plugins;
	ev_timer kick;
	ss_instance_cb cb;
	void *cb_arg;
	bool ready_sent, stopped_sent;
	/* server: outbound source addresses */
	struct sockaddr_storage bind4, bind6;
	ss_sockopts_t sockopts;
	ss_sockopts_t outopts;
	ev_tstamp timeout;
	ev_tstamp connect_timeout;
	ss_stats_t stats;     /* accepted, active; bytes of connections without a row */
	ss_fig_block_t *fig;  /* this worker's figures: &shared->fig[worker] */
	ss_refused_t refused; /* refused clients (server), unauthenticated answers (clients) */
	bool stopping;
	/* A reload made a new set of workers: this one accepts nothing more
	 * and stops once its last connection and association have ended
	 * (checked by retire_check). */
	bool retiring;
	ev_timer retire_check;
	/* --workers: this is worker `worker` of `workers`, each a loop on a
	 * thread of its own, all with the same shared object (relay/shared.h):
	 * the replay pools, the ACL, the plugins, the UDP sessions, and each
	 * worker's place (shared->w[worker]) where the others read its load
	 * and hand it connections and datagrams. own_shared: made by ss_instance_create
	 * for this one alone, freed with it. */
	unsigned worker, workers;
	ss_shared_t *shared;
	bool own_shared;
};

/* As ss_instance_create, for worker index of shared->count, each created
 * with the same shared object (which outlives it) and a loop of its own.
 * The limits and pools of the configuration are split between the workers;
 * the listeners set SO_REUSEPORT when count > 1, so the kernel spreads
 * connections and UDP flows (by their addresses) over them. */
int ss_instance_create_worker(ss_shared_t *shared, struct ev_loop *loop, unsigned index,
			      ss_instance_t **out, char *err, size_t errlen);

/* As ss_instance_create, for a configuration that takes over from prev's
 * (an instance of ss_instance_create or of this call, which may go on
 * serving its connections, and is destroyed before or after the new one,
 * from the same thread): the new one refuses what prev's replay records
 * hold, and its figures (ss_instance_stats, ss_instance_figures) go on
 * from prev's, matched by port number and user name
 * (relay/shared.h). */
int ss_instance_create_after(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t *prev,
			     ss_instance_t **out, char *err, size_t errlen);
/* This worker's own counters, as ss_instance_stats gives them without
 * what the configurations before a reload counted. */
void ss_instance_worker_stats(const ss_instance_t *inst, ss_stats_t *out);

/* --workers: the TCP listeners, bound by ss_instance_create_worker, start
 * listening; called once every worker's are bound, so that a client that
 * reaches one finds all (their UDP sockets too). 0 or -errno with err. */
int ss_instance_listen(struct ss_instance *inst, char *err, size_t errlen);
/* The handshake c starts with: its listener's. */
static inline const ss_handshake_ops_t *ss_conn_ops(const ss_conn_t *c)
{
	return c->door ? c->inst->door_ops : c->inst->ops;
}

/* A connection of inst's opened (+1) or ended (-1), for the handoff. */
static inline void ss_instance_load(struct ss_instance *inst, int delta)
{
	ss_shared_load(inst->shared, inst->worker, delta);
}

/* c's row in its worker's figures, NULL before the relay stage. */
static inline ss_fig_row_t *ss_conn_fig(const ss_conn_t *c)
{
	return c->fig ? &c->inst->fig->row[c->fig - 1] : NULL;
}
/* n plaintext bytes delivered in direction d: counted in c's row. */
static inline void ss_conn_count(const ss_conn_t *c, int d, uint64_t n)
{
	ss_fig_row_t *f = ss_conn_fig(c);

	if (f)
		ss_fig_add(&f->bytes[d], n);
}
/* c enters the relay stage as user (ss_fig_user_index; 0: none): it counts
 * in its port's and user's row from now on, with the bytes it delivered
 * before. Once; later calls do nothing. */
void ss_conn_fig_open(ss_conn_t *c, size_t user);
/* The figures' index of the port a socket's local address is on. */
size_t ss_instance_fig_port(struct ss_instance *inst, int fd);
/* A client refused for why, on the port of socket fd (its accepted
 * socket; -1: the first port). For a UDP datagram, ss_udp_fig's port
 * (relay/udp_internal.h). SS_REFUSED_BLOCKED is for targets the server never
 * relays to, whatever the ACL. */
static inline void ss_instance_count_refused(struct ss_instance *inst, int fd, ss_refusal_t why)
{
	ss_fig_add(&inst->fig->port[fd < 0 ? 0 : ss_instance_fig_port(inst, fd)].refused[why], 1);
}

/* ss-server with an ACL: whether a client at sa may connect (TCP) or send
 * (UDP). */
bool ss_instance_client_allowed(struct ss_instance *inst, const struct sockaddr *sa);
/* ss-server with an ACL: whether a target is in [outbound_block_list], by
 * name (may be NULL) or address (may be NULL). */
bool ss_instance_target_blocked(struct ss_instance *inst, const char *host,
				const struct sockaddr *sa);
/* ss-server with --block-private: the kind of address sa (a target about
 * to be connected or sent to, after any name lookup) is, when it must be
 * refused (proto/addr.h, ss_sockaddr_private_kind); NULL to go on. Whatever
 * the ACL says. One test when the setting is off. */
static inline const char *ss_instance_target_private(const struct ss_instance *inst,
						     const struct sockaddr *sa)
{
	return inst->block_private ? ss_sockaddr_private_kind(sa) : NULL;
}

/* A reload made a new set of workers: inst accepts nothing more (what
 * waits on a listener the new set did not take is accepted first), reads
 * its UDP listeners no more, and stops (SS_INSTANCE_STOPPED) once its last
 * connection and association have ended; those go on as they were. */
void ss_instance_retire(ss_instance_t *inst);

/* ss-server, a port of several users: the connections of the user called
 * name end now. */
void ss_instance_end_user(ss_instance_t *inst, const char *name);

/* The class of k's states (adding one for it), or -ENOSPC. */
int ss_instance_codec_class(struct ss_instance *inst, ss_codec_t *k);

/* ---- Taking connections (instance_accept.c) ---- */

/* At creation, before anything can fail: the retry timer, the shortages'
 * state and, with workers, this worker's hand-off queue (opened). */
void ss_instance_accept_init(struct ss_instance *inst);
/* Opens a listener on host:port for tcp and/or udp (an IPv6 wildcard falls
 * back to IPv4 on a host without IPv6). 0 or -errno with err. */
int ss_instance_listen_on(struct ss_instance *inst, const char *host, uint16_t port, bool tcp,
			  bool udp, char *err, size_t errlen);
/* A door: a listener on a loopback address the kernel picks, for what the
 * core sends through the relay itself (the DNS relay, relay/dns.h), whose
 * connections start with ops (when not NULL: TCP) and whose datagrams go
 * through the UDP front front (when not NULL: UDP). This worker keeps what
 * comes in on it (nothing is handed to another), and no reload takes it
 * over. The addresses it has, in tcp_out and udp_out. One door an
 * instance. 0 or -errno with err. */
struct ss_udp_front;
int ss_instance_listen_door(struct ss_instance *inst, const ss_handshake_ops_t *ops,
			    const struct ss_udp_front *front, struct sockaddr_storage *tcp_out,
			    struct sockaddr_storage *udp_out, char *err, size_t errlen);
/* Stops accepting while no server is reachable over TCP (hold), or again. */
void ss_instance_hold(struct ss_instance *inst, bool hold);
/* At stop: the listeners and the timers of accepting stop. */
void ss_instance_accept_stop(struct ss_instance *inst);
/* A reload, on the main thread: the listening sockets (TCP and UDP) are
 * offered to the instances made next (net/inherit.h), and then marked
 * with whether one took them, before inst retires. */
void ss_instance_offer_listeners(struct ss_instance *inst);
void ss_instance_mark_handed(struct ss_instance *inst);
/* A reload: connections still waiting on a listener that the new workers
 * did not take are accepted here, then every listener closes (a taken one
 * lives on in the new workers' duplicate). */
void ss_instance_accept_retire(struct ss_instance *inst);
/* Connections handed to this worker and not taken yet are closed; none is
 * handed to it from now on. */
void ss_instance_handoff_close(struct ss_instance *inst);
/* Called by the connection code when a slot frees. */
void ss_instance_slot_freed(struct ss_instance *inst);
/* Called by the connection code when a connection that had completed a
 * handshake becomes expendable (it drains): accepting, if held back for
 * want of a slot, looks again, as that one may make room. */
void ss_instance_expendable(struct ss_instance *inst);

#endif
