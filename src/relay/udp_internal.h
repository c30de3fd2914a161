/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_INTERNAL_H
#define SS_RELAY_UDP_INTERNAL_H

#include "relay/udp.h"

/* Between the files of the UDP relay: udp.c (sockets, batches,
 * associations, the watchers and the relay's life), udp_client.c (ss-local,
 * ss-tunnel and ss-redir: datagrams from applications, sealed to a server,
 * and its answers) and udp_server.c (ss-server: datagrams from clients,
 * opened to their targets, the answers sealed back, and SIP022 sessions
 * across workers). */

/* Where a datagram's payload (or its address) starts in the relay buffer:
 * room before it for the largest header a codec puts in front (with
 * identity headers, the longest) and, on the way back to an ss-local
 * client, a SOCKS5 UDP header. */
#define SS_UDP_HEAD 256

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

/* The association's codec, and its state for it. */
ss_udp_codec_t *ss_udp_codec(ss_udp_relay_t *u, const ss_udp_assoc_t *a);
void *ss_udp_ast(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* Sets up (on the class's first use in the slot) and starts the state of
 * the association's codec. 0 or -errno. */
int ss_udp_assoc_codec(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* The socket an association sends from (a fd, or -errno). */
int ss_udp_assoc_socket(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* The association of key (touched), or a new one for client (evicting the
 * oldest when the table is full); NULL when it cannot be made. */
ss_udp_assoc_t *ss_udp_assoc_get(ss_udp_relay_t *u, const struct sockaddr *key, socklen_t klen,
				 const struct sockaddr *client, socklen_t clen, uint8_t listener);
/* Ends it: its socket, its codec state, its session's record. */
void ss_udp_assoc_destroy(ss_udp_relay_t *u, ss_udp_assoc_t *a);
/* Where a datagram from the other relay lands, so that it opens in place
 * with its plaintext at SS_UDP_HEAD. */
size_t ss_udp_wire(const ss_udp_codec_t *x);
/* The time for the codecs (seconds). */
uint64_t ss_udp_now(ss_udp_relay_t *u);

/* Handlers of the watchers (udp.c) for datagrams read into buf, n bytes:
 * clients' from applications (at ss_udp_client_in_off) and from their
 * server (at ss_udp_wire), the server's from clients (at ss_udp_wire) and
 * from targets (at SS_UDP_HEAD). Whether the socket's owner still stands. */
size_t ss_udp_client_in_off(ss_udp_relay_t *u);
bool ss_udp_client_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			   const ss_udp_rxmsg_t *r);
bool ss_udp_client_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			    const ss_udp_rxmsg_t *r);
bool ss_udp_server_inbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			   const ss_udp_rxmsg_t *r);
bool ss_udp_server_outbound(ss_udp_relay_t *u, void *w, uint8_t *buf, size_t n,
			    const ss_udp_rxmsg_t *r);
/* Clients: the association's server sent back an ICMP error. */
void ss_udp_assoc_failover(ss_udp_relay_t *u, ss_udp_assoc_t *a, int err);
/* ss-server at start-up: the shared SIP022 session table and, with
 * workers, its inbox. 0 or -errno with err. */
int ss_udp_server_setup(ss_udp_relay_t *u, char *err, size_t errlen);

#endif
