/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_SERVERS_H
#define SS_RELAY_SERVERS_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "codec/codec.h"
#include "config/config.h"
#include "net/plugin.h"
#include "net/resolver.h"
#include "proto/addr.h"
#include "relay/health.h"

/* The servers of a client (ss-local, ss-tunnel): each with its codec, its
 * address (looked up again on a schedule and after failures, with c-ares
 * on the loop) and its health as learned from real traffic
 * (relay/health.h). Connections and UDP associations ask here which server
 * to use and report how it went; nothing here sends anything of its own
 * to a server.
 *
 * Name lookups: at start-up, then when the answer's TTL runs out (at least
 * SS_RESOLVE_MIN, at most SS_RESOLVE_MAX seconds later; SS_RESOLVE_MIN for
 * answers without one, from the hosts file), and right after a connect to
 * the server failed (at most once per SS_RESOLVE_AFTER_FAILURE seconds:
 * a connection that has no other server waits for it). A
 * failed lookup keeps the address there was and is retried after
 * SS_RESOLVE_MIN seconds, doubling up to SS_RESOLVE_MAX. A new address is
 * used from the next connection on, with a clean health record.
 *
 * A server with a SIP003 plugin is reached at the plugin's loopback address
 * for what the plugin carries (TCP, UDP or both), and at its own address
 * for the rest; a server reached only through its plugin is never looked
 * up (the plugin gets the configured name). While its plugin is not up,
 * the server is not picked for what the plugin carries; once it is up
 * again the server starts with a clean health record. */

#define SS_RESOLVE_MIN 5.0
#define SS_RESOLVE_MAX 300.0
#define SS_RESOLVE_AFTER_FAILURE 2.0
/* A connect gets this long when another server is left to try (the last
 * one gets the whole connect timeout). */
#define SS_FAILOVER_CONNECT_TIMEOUT 4.0
/* A close without an answer counts against a server only when it comes
 * within this long of the connect, and the same target answered through
 * another server within SS_ALIVE_TTL. */
#define SS_SILENT_WINDOW 15.0
#define SS_ALIVE_TTL 600.0
#define SS_ALIVE_SLOTS 256

struct ss_instance;
struct ss_conn;

typedef struct ss_server {
	struct ss_servers *set;
	const ss_config_server_t *cfg;
	uint8_t index;
	uint8_t cls; /* its codec's state class (struct ss_instance classes) */
	ss_codec_t codec;
	uint16_t port;
	char name[SS_SERVER_TAG_MAX / 2 + SS_ADDR_STRLEN + 8]; /* for logs */
	struct sockaddr_storage addr;
	socklen_t addr_len; /* 0: no address yet */
	bool literal;       /* an IP address: never looked up */
	bool direct;        /* something goes to addr (not all through the plugin) */
	/* Its plugin (the instance's), or NULL; what goes through it, and
	 * whether it is up. */
	ss_plugin_t *plugin;
	bool via_tcp, via_udp;
	bool plugin_up;
	ss_health_t health;
	uint32_t tcp_load; /* connections using it now */
	uint32_t udp_load; /* UDP associations using it now */
	ss_resolve_req_t req;
	bool resolving;
	bool soon;      /* a lookup after a failure is due on the refresh timer */
	uint32_t moves; /* address changes so far */
	uint32_t resolve_fails;
	ev_tstamp looked_up; /* when the last lookup started */
	ev_timer refresh;    /* the next lookup */
} ss_server_t;

typedef struct ss_servers_alive {
	uint64_t hash; /* of a target that answered */
	ev_tstamp at;
	uint8_t server; /* through which server */
} ss_servers_alive_t;

typedef struct ss_servers {
	struct ss_instance *inst;
	ss_server_t s[SS_MAX_SERVERS];
	size_t n;
	unsigned rr_tcp, rr_udp;
	struct ss_conn *waiting; /* connections waiting for a server's address */
	ss_servers_alive_t alive[SS_ALIVE_SLOTS];
	bool running;
} ss_servers_t;

/* Sets up every server's codec and registers its state class with the
 * instance. 0 or -errno with err. */
int ss_servers_init(ss_servers_t *set, struct ss_instance *inst, char *err, size_t errlen);
/* Server i is reached through plugin p (not started yet: down) for what
 * its entry says the plugin carries. Before ss_servers_start. */
void ss_servers_set_plugin(ss_servers_t *set, int i, ss_plugin_t *p);
/* Server i's plugin came up (up) or went down. */
void ss_servers_plugin_up(ss_servers_t *set, int i, bool up);
/* Whether some server can be reached over TCP now, as far as plugins go:
 * one that takes TCP without a plugin, or whose plugin for TCP is up. */
bool ss_servers_tcp_reachable(const ss_servers_t *set);
/* Where server s takes connections (udp false) or datagrams: its address,
 * or its plugin's when the plugin carries that. *len 0: nowhere yet. */
const struct sockaddr *ss_servers_addr(const ss_server_t *s, bool udp, socklen_t *len);
/* Starts the lookups (the instance's resolver must be up). */
void ss_servers_start(ss_servers_t *set);
/* Stops the schedule; lookups in flight end with the resolver. */
void ss_servers_stop(ss_servers_t *set);
void ss_servers_free(ss_servers_t *set);

/* Picks a server (relay/health.h's rule) for a connection (udp false) or
 * an association, leaving out those in exclude; counts it in the server's
 * load. -1 when none has an address. *trial: it is a try after a backoff. */
int ss_servers_pick(ss_servers_t *set, uint32_t exclude, bool udp, bool *trial);
/* The load counted by ss_servers_pick ends. */
void ss_servers_release(ss_servers_t *set, int i, bool udp);
/* Whether a lookup under way (or due soon after a failure), or a plugin
 * being started, could still give a connection that has tried the servers
 * in tried one more to try. */
bool ss_servers_may_change(const ss_servers_t *set, uint32_t tried);
/* A connection waits for that lookup: ss_conn_connect_server runs again
 * for it once a lookup ends. */
void ss_servers_wait(ss_servers_t *set, struct ss_conn *c);
void ss_servers_unwait(ss_servers_t *set, struct ss_conn *c);

/* What happened to a connection's connect (err 0: it connected). true when
 * the failure brought the server a new address (a lookup it started was
 * answered at once, from the hosts file): it may be tried again. */
bool ss_servers_connected(ss_servers_t *set, int i, int err);
/* A connection's server sent its first byte. */
void ss_servers_answered(ss_servers_t *set, struct ss_conn *c);
/* A connection through a server ends: its load goes, and a close without
 * an answer may count against the server (relay/health.h). */
void ss_servers_ended(ss_servers_t *set, struct ss_conn *c);
/* UDP: an ICMP error on an association's socket (err), or an answer. */
void ss_servers_udp_failed(ss_servers_t *set, int i, int err);
void ss_servers_udp_answered(ss_servers_t *set, int i);

#endif
