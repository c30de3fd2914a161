#ifndef SS_RELAY_UDP_INTERNAL_H
#define SS_RELAY_UDP_INTERNAL_H

#include <sys/types.h>

#include "proto/addr.h"
#include "relay/udp.h"

/* Shared by the SIP004 paths (udp.c) and the SIP022 ones (udp2022.c). */

/* Where a datagram's payload (or its address) starts in the relay buffer:
 * room before it for the largest header a packet can need (SIP022: the
 * separate header or XChaCha20 nonce, identity headers, main header) and, on
 * the way back to an ss-local client, a SOCKS5 UDP header. */
#define UDP_HEAD 256

/* Counts a dropped datagram and says why at -v. from may be NULL. */
void ss_udp_drop(ss_udp_relay_t *u, const struct sockaddr *from, const char *why);
/* Receives one datagram into buf (at most cap bytes). Returns its length,
 * -EMSGSIZE when it was larger than cap (and is gone), -EAGAIN when there
 * is none, or another -errno. */
ssize_t ss_udp_recv(int fd, uint8_t *buf, size_t cap, struct sockaddr_storage *from,
		    socklen_t *fromlen);
/* Sends one datagram; a failure is counted as a drop. */
void ss_udp_send(ss_udp_relay_t *u, int fd, const uint8_t *p, size_t len, const struct sockaddr *to,
		 socklen_t tolen);
/* The association under key, made (with its socket, answering client) when
 * there is none; NULL when it cannot be made. */
ss_udp_assoc_t *ss_udp_assoc_get(ss_udp_relay_t *u, const struct sockaddr *key, socklen_t klen,
				 const struct sockaddr *client, socklen_t clen, uint8_t listener);
/* Server: sends data to target from a's socket, resolving a name first. */
void ss_udp_to_target(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_addr_t *target,
		      const uint8_t *data, size_t len);

/* An opened packet: the address it names (target or source), with its
 * encoding right before the payload, both inside the relay buffer. */
typedef struct ss_udp_pkt {
	ss_addr_t addr;
	uint8_t *addr_raw;
	uint8_t *payload;
	size_t payload_len;
} ss_udp_pkt_t;

/* SIP022 (udp2022.c). Packets from the other relay are received at
 * UDP_HEAD. */
int ss_udp2022_init(ss_udp_relay_t *u, char *err, size_t errlen);
/* A random session id. */
uint64_t ss_udp2022_new_id(void);
/* Seals, in place, the address at addr (addr_len bytes) and the n payload
 * bytes right after it, from a's own session. Returns the packet's length
 * with *out at its start, or -errno. */
long ss_udp2022_seal(ss_udp_relay_t *u, ss_udp_assoc_t *a, uint8_t *addr, size_t addr_len, size_t n,
		     uint8_t **out);
/* Client: opens an answer from the server. NULL, or why it was refused. */
const char *ss_udp2022_open_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, uint8_t *wire, size_t len,
				   ss_udp_pkt_t *p);
/* Server: opens a client's packet and finds or makes the association of
 * its session (*a). NULL, or why it was refused. */
const char *ss_udp2022_open_request(ss_udp_relay_t *u, ss_udp_listener_t *l,
				    const struct sockaddr_storage *from, socklen_t fromlen,
				    uint8_t *wire, size_t len, ss_udp_pkt_t *p, ss_udp_assoc_t **a);

#endif
