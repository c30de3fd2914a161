/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_H
#define SS_RELAY_UDP_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "codec/codec.h"
#include "config/config.h"
#include "net/resolver.h"
#include "relay/udp_from.h"
#include "relay/udp_io.h"
#include "relay/udp_sessions.h"
#include "relay/udp_table.h"

/* The UDP relay of one instance. Clients (ss-local, ss-tunnel, ss-redir) take the
 * datagrams on their listening socket and send each, sealed, to the server
 * from a socket of their own per client address; the server opens them and
 * sends the payload to its target from one socket per client association
 * (full cone), wrapping answers with the address they came from. What one
 * readiness event finds on a socket is read, handled and sent as a batch
 * (relay/udp_io.h), each datagram whole in a buffer of the relay's. */

struct ss_instance;
struct ss_conn;
struct ss_udp_role;
struct ss_udp_front;

#define SS_UDP_BUF_SIZE (65536 + 1024)
#define SS_UDP_DNS_SLOTS 64

/* One association: a client address, or what the codec keys it by (a
 * client session), with the socket that talks to the other
 * side. */
typedef struct ss_udp_assoc {
	ss_udp_entry_t entry;      /* first: key = the client's address, or its session */
	ev_io io;                  /* the outbound socket; data: the relay */
	uint8_t listener;          /* which listening socket the client talks to */
	uint8_t server;            /* its codec in the relay: clients, the server it uses */
	uint8_t family;            /* of the outbound socket */
	uint8_t sflags;            /* the outbound socket's SS_UDP_SOCK_* */
	struct ss_conn *control;   /* ss-local: the SOCKS5 connection it belongs to */
	ss_udp_session_t *session; /* server, codecs with sessions: its record */
	/* Where answers go: the address the last valid datagram came from. */
	ss_inaddr_t peer;
	socklen_t peer_len;
	/* Kept with the table slot across associations (keep_from): the codec
	 * classes (struct ss_instance classes) whose state the slot has set
	 * up, and those states, one per class (ops->udp_assoc_size bytes). */
	uint16_t classes;
	_Alignas(64) unsigned char codec[];
} ss_udp_assoc_t;

/* A codec the relay seals and opens with: ss-server's, or each server's of
 * a client, with the relay's state for it. */
typedef struct ss_udp_codec {
	ss_codec_t *k;
	void *rst;   /* ops->udp_relay_size bytes, set up at start-up */
	uint8_t cls; /* the class of k's states */
} ss_udp_codec_t;

typedef struct ss_udp_listener {
	ev_io io;
	struct ss_udp_relay *relay;
	/* Clients: how applications send on it (the relay's front, or the
	 * core's own for a door, relay/instance.h). */
	const struct ss_udp_front *front;
	bool door; /* never offered to a reload */
	uint8_t index;
	uint8_t sflags;   /* SS_UDP_SOCK_* */
	uint8_t fig_port; /* its port in the figures (relay/figures.h) */
	/* A reload: the new workers took this socket (net/inherit.h); set by
	 * the main thread before the instance retires. */
	bool handed;
} ss_udp_listener_t;

/* Server: names of targets, resolved on the loop and kept for a short time;
 * the first datagram to a name waits here for the answer. */
typedef struct ss_udp_dns {
	char name[256];
	struct sockaddr_storage addr;
	socklen_t addr_len;
	ev_tstamp expires;
	bool resolving;
	bool failed;
	ss_resolve_req_t req;
	struct ss_udp_relay *relay;
	uint8_t *pending; /* one datagram's payload, or NULL */
	size_t pending_len;
	uint16_t pending_port;
	struct sockaddr_storage pending_key; /* its association's */
	socklen_t pending_key_len;
} ss_udp_dns_t;

typedef struct ss_udp_stats {
	uint64_t datagrams_in;  /* from clients */
	uint64_t datagrams_out; /* answers back to clients */
	uint64_t dropped;
	uint64_t assoc_created;
	uint64_t assoc_expired;
	uint64_t assoc_evicted;
	uint64_t handed; /* datagrams of sessions another worker holds, handed there */
	uint64_t taken;  /* datagrams handed here by the other workers */
} ss_udp_stats_t;

typedef struct ss_udp_relay {
	struct ss_instance *inst;
	struct ev_loop *loop;
	/* What it does (relay/udp_internal.h): ss-server's role, or a
	 * client's, with the front its applications use, picked from the
	 * program at ss_udp_init. */
	const struct ss_udp_role *role;
	const struct ss_udp_front *front; /* clients */
	/* ss-redir: answers go back from where the datagrams were going */
	ss_udp_from_t from;
	ss_udp_table_t table;
	ss_udp_listener_t listeners[SS_MAX_SERVERS];
	size_t n_listeners;
	ev_timer expiry;
	ev_tstamp timeout;
	uint8_t *buf;          /* SS_UDP_SLOTS buffers (io), then pending_area */
	uint8_t *pending_area; /* SS_UDP_DNS_SLOTS datagrams, touched only when used */
	ss_udp_codec_t codecs[SS_MAX_SERVERS];
	size_t n_codecs;
	ss_udp_dns_t dns[SS_UDP_DNS_SLOTS];
	struct ss_conn *controls; /* ss-local: UDP ASSOCIATE connections not yet matched */
	ss_udp_stats_t stats;
	ss_udp_io_t io;
	/* Server, a codec with sessions (udp_memo_size): every worker's
	 * sessions, and with workers the datagrams the others hand to this
	 * one (NULL: none); both in the workers' shared object. */
	ss_udp_sessions_t *sessions;
	ss_udp_inbox_t *inbox;
	/* Clients: associations whose server sent an ICMP error back to a
	 * batch's send, failed over once the batch is sent. */
	ss_udp_assoc_t *failed[SS_UDP_SLOTS];
	int failed_err[SS_UDP_SLOTS];
	size_t n_failed;
	bool ready;
} ss_udp_relay_t;

/* Reserves the table (max_assoc associations at once, each holding one
 * descriptor) and buffers. 0 or -errno with err set. */
int ss_udp_init(ss_udp_relay_t *u, struct ss_instance *inst, size_t max_assoc, char *err,
		size_t errlen);
/* A reload: the associations end (the client's next datagram makes one in
 * the new workers, which read the sockets from now on); the listening
 * sockets the new workers took are forgotten, the others closed. */
void ss_udp_retire(ss_udp_relay_t *u);
/* The associations open now. */
size_t ss_udp_assocs(const ss_udp_relay_t *u);
/* Opens a listening UDP socket on addr, for front (clients; NULL: the
 * relay's own); a door is never taken from a reload. 0 or -errno with err
 * set. */
int ss_udp_listen(ss_udp_relay_t *u, const struct ss_udp_front *front, bool door,
		  const struct sockaddr *addr, socklen_t len, char *err, size_t errlen);
/* Closes every association and socket, on the relay's own loop. */
void ss_udp_free(ss_udp_relay_t *u);
/* Once every worker has ended: what the workers shared (worker 0's session
 * table) and what they handed to this one. Safe on a zeroed relay. */
void ss_udp_destroy(ss_udp_relay_t *u);

/* ss-local: a SOCKS5 connection asked for UDP ASSOCIATE; the association of
 * the first datagram from its client's address is tied to it, and ends with
 * it. */
void ss_udp_control_add(ss_udp_relay_t *u, struct ss_conn *c);
void ss_udp_control_closed(ss_udp_relay_t *u, struct ss_conn *c);
/* Clients: server i has a new address; its associations send there from
 * now on. */
void ss_udp_server_moved(ss_udp_relay_t *u, int i);
/* The address the relay listens on, as the client of c can reach it. */
int ss_udp_bound_addr(ss_udp_relay_t *u, struct ss_conn *c, struct sockaddr_storage *out);

#endif
