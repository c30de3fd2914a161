/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_INTERNAL_H
#define SS_RELAY_UDP_INTERNAL_H

#include "relay/udp.h"

/* Between the files of the UDP relay. udp.c knows no role: sockets,
 * batches, associations, the watchers and the relay's life, calling the
 * relay's role (ss_udp_role_t) for what differs. The roles: ss-server's
 * (udp_server.c: datagrams from clients opened and sent to their targets,
 * the answers sealed back, SIP022 sessions across workers) and a client's
 * (udp_client.c: datagrams from applications sealed and sent to a server,
 * its answers opened, failover between servers), which takes datagrams from
 * applications, and gives them their answers, through its front
 * (ss_udp_front_t): SOCKS5 UDP ASSOCIATE (udp_socks5.c, ss-local), a fixed
 * target (udp_tunnel.c, ss-tunnel) or the firewall's original destination
 * (udp_redir.c, ss-redir). */

/* Where a datagram's payload (or its address) starts in the relay buffer:
 * room before it for the largest header a codec puts in front (with
 * identity headers, the longest) and, on the way back to an ss-local
 * client, a SOCKS5 UDP header. */
#define SS_UDP_HEAD 256

/* Where a read puts each datagram in its slot: at offset `at`, at most cap
 * bytes; with want_dst, where it was going is read with it
 * (ss_udp_rxmsg_t.dst). */
typedef struct ss_udp_landing {
	size_t at;
	size_t cap;
	bool want_dst;
} ss_udp_landing_t;

/* Takes a datagram read from the socket of w (a listener, or an
 * association), n bytes at buf + its landing. Whether w still stands. */
typedef bool (*ss_udp_handler_t)(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
				 const ss_udp_rxmsg_t *r);

/* What the relay does as ss-server or as a client, picked once at
 * ss_udp_init from the program. Optional entries may be NULL. */
typedef struct ss_udp_role {
	/* At start-up, before the table is made: the codecs the relay seals
	 * and opens with (ss_udp_codec_add) and the role's own state; *max,
	 * the descriptors for associations, may shrink to leave some to it.
	 * 0 or -errno with err set. */
	int (*init)(ss_udp_relay_t *u, size_t *max, char *err, size_t errlen);
	/* Releases what init made, in any state a failed init leaves
	 * (optional). */
	void (*release)(ss_udp_relay_t *u);
	/* The relay ends, before its associations do (optional). */
	void (*closing)(ss_udp_relay_t *u);
	/* Once every worker has ended: what the workers shared (optional). */
	void (*destroy)(ss_udp_relay_t *u);
	/* A listening socket on addr: its fd, or -errno with *hint set to
	 * what more to say (optional: a plain UDP socket). */
	int (*listen)(ss_udp_relay_t *u, const struct ss_udp_front *front,
		      const struct sockaddr *addr, socklen_t len, const char **hint);

	/* Datagrams read from a listening socket (the inbound leg) and from an
	 * association's socket (the outbound leg): where each lands in its
	 * slot, and what takes it. */
	ss_udp_landing_t (*inbound_landing)(ss_udp_relay_t *u, const ss_udp_listener_t *l);
	ss_udp_handler_t inbound;
	ss_udp_landing_t (*outbound_landing)(ss_udp_relay_t *u, const ss_udp_assoc_t *a);
	ss_udp_handler_t outbound;

	/* A new association, its peer and listener set: picks what it talks
	 * to, opens its socket and sets up its codec state
	 * (ss_udp_assoc_setup). The socket, or -1 with why logged and what
	 * it took given back. */
	int (*assoc_open)(ss_udp_relay_t *u, ss_udp_assoc_t *a);
	/* Starts the association's codec state, just set up (optional: it
	 * starts later, as a server's takes its client's session). 0 or
	 * -errno. */
	int (*assoc_start)(ss_udp_relay_t *u, ss_udp_assoc_t *a);
	/* The association ends, its socket closed: gives back what the role
	 * holds for it. */
	void (*assoc_ended)(ss_udp_relay_t *u, ss_udp_assoc_t *a);
	/* The association's socket had an ICMP error back: nothing listens at
	 * the other end, or it cannot be reached (optional: the other end's
	 * side of the story). */
	void (*assoc_unreachable)(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err);
} ss_udp_role_t;

extern const ss_udp_role_t ss_udp_server_role; /* udp_server.c */
extern const ss_udp_role_t ss_udp_client_role; /* udp_client.c */

/* A datagram from an application, ready to seal: its target's address
 * (encoded as in the Shadowsocks header), addr_len bytes at addr, then its
 * payload, len bytes. */
typedef struct ss_udp_app_dgram {
	uint8_t *addr;
	size_t addr_len;
	size_t len;
} ss_udp_app_dgram_t;

/* How a client's applications send it datagrams and take their answers:
 * one table per front, the program's picked with the role (ss_udp_relay_t
 * front, whose init and release run), another for a door's listener
 * (relay/instance.h). Optional entries may be NULL. */
typedef struct ss_udp_front {
	/* Where its datagrams were going is read with them. */
	bool want_dst;
	/* At start-up, before the table is made: its own state, taking
	 * descriptors from *max (optional). 0 or -errno with err set. */
	int (*init)(ss_udp_relay_t *u, size_t *max, char *err, size_t errlen);
	/* Releases what init made and what it holds (optional). */
	void (*release)(ss_udp_relay_t *u);
	/* As the role's listen (optional: a plain UDP socket). */
	int (*listen)(ss_udp_relay_t *u, const struct sockaddr *addr, socklen_t len,
		      const char **hint);
	/* Where a read puts a datagram from an application in its slot (the
	 * offset of what the application sent): the room before it holds what
	 * take puts there. */
	size_t (*read_off)(const ss_udp_relay_t *u);
	/* A datagram from an application, n bytes at buf + read_off, read on
	 * listener l: its target's address, encoded, put right before its
	 * payload (*d), and its association (found and touched, or made). NULL
	 * when it goes no further (dropped, counted and logged). */
	ss_udp_assoc_t *(*take)(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d);
	/* The association ends: what the front holds for it (optional). */
	void (*assoc_ended)(ss_udp_relay_t *u, ss_udp_assoc_t *a);
	/* An answer of a's server, opened (p): wrapped as the application
	 * expects it and queued, or sent, to it. */
	void (*answer)(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p);
} ss_udp_front_t;

extern const ss_udp_front_t ss_udp_socks5_front; /* udp_socks5.c */
extern const ss_udp_front_t ss_udp_tunnel_front; /* udp_tunnel.c */
extern const ss_udp_front_t ss_udp_redir_front;  /* udp_redir.c */
extern const ss_udp_front_t ss_udp_dns_front;    /* udp_tunnel.c: the DNS relay's door */

/* The address as text, for log lines. */
const char *ss_udp_peer(const struct sockaddr *sa, char *buf, size_t len);
/* A datagram dropped (counted, logged at -v) from from (may be NULL). */
void ss_udp_drop(ss_udp_relay_t *u, const struct sockaddr *from, const char *why);
/* Dropped as a refusal: logged at the default level, rate-limited per
 * source (relay/refused.h): the client's address on a server, the
 * server's (key, NULL when unknown) on a client. */
void ss_udp_refuse(ss_udp_relay_t *u, const struct sockaddr *key, const struct sockaddr *from,
		   const char *what, const char *why);
/* Sends what the batch queued. Before an association's socket closes or
 * changes, what is queued on it goes (failover false: the association is
 * changing already); at the end of a batch, failover true. */
void ss_udp_flush(ss_udp_relay_t *u, bool failover);
/* Queues p[0..len) to send from fd (flags: the socket's) to `to` (NULL: the
 * socket's peer), owner hearing of an ICMP error. p stays the caller's
 * until the next flush. */
void ss_udp_queue(ss_udp_relay_t *u, int fd, uint8_t *flags, const uint8_t *p, size_t len,
		  const struct sockaddr *to, socklen_t tolen, ss_udp_assoc_t *owner);

/* The role's, at start-up: a codec the relay seals and opens with (its
 * index is the next), of class cls, with the relay's state for it. 0 or
 * -errno with err set. */
int ss_udp_codec_add(ss_udp_relay_t *u, ss_codec_t *k, uint8_t cls, char *err, size_t errlen);
/* The association's codec, and its state for it. */
ss_udp_codec_t *ss_udp_codec(ss_udp_relay_t *u, const ss_udp_assoc_t *a);
void *ss_udp_ast(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* Sets up (on the class's first use in the slot) the state of the
 * association's codec, and starts it as the role does. 0 or -errno. */
int ss_udp_assoc_codec(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* For the roles' assoc_open: the association's socket, fd (or -errno
 * from opening it), and its codec state (ss_udp_assoc_codec). fd, or -1
 * with why logged and fd closed. */
int ss_udp_assoc_setup(ss_udp_relay_t *u, ss_udp_assoc_t *a, int fd);
/* The association of key (touched), or a new one for client (evicting the
 * oldest when the table is full); NULL when it cannot be made. */
ss_udp_assoc_t *ss_udp_assoc_find_or_add(ss_udp_relay_t *u, const struct sockaddr *key,
					 socklen_t klen, const struct sockaddr *client,
					 socklen_t clen, uint8_t listener);
/* Ends it: its socket, its codec state, what its role holds for it. */
void ss_udp_assoc_destroy(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* Where a datagram from the other relay lands, so that it opens in place
 * with its plaintext at SS_UDP_HEAD. */
size_t ss_udp_wire(const ss_udp_codec_t *x);
/* The time for the codecs (seconds). */
uint64_t ss_udp_now(ss_udp_relay_t *u);

/* Clients (udp_client.c), for the fronts' take: whether a payload of len
 * bytes from app may go (--mtu; dropped when not). */
bool ss_udp_client_fits(ss_udp_relay_t *u, const struct sockaddr *app, size_t len);
/* The association of the datagram r, d ready to seal, keyed by its
 * application's address: found (touched), or made. NULL when the datagram
 * goes no further (dropped). */
ss_udp_assoc_t *ss_udp_client_assoc(ss_udp_relay_t *u, const ss_udp_listener_t *l,
				    const ss_udp_rxmsg_t *r, const ss_udp_app_dgram_t *d);
/* Clients: the listener's socket queues p[0..len) to the application of
 * a. */
void ss_udp_client_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const uint8_t *p, size_t len);

/* The figures (relay/figures.h) of the port listener i is on. */
struct ss_fig_port *ss_udp_fig(ss_udp_relay_t *u, uint8_t listener);

#endif
