/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_HS_LOCAL_H
#define SS_RELAY_HS_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/http.h"
#include "relay/conn.h"

/* ss-local's port: front ends (SOCKS5, SOCKS4/4a, HTTP, one file each)
 * behind one handshake (hs_local.c), which reads the client's first bytes,
 * lets the first byte choose the front end, and gives them all the same
 * connect. Each front end has its own operations and its own state in the
 * connection's handshake area, starting with ss_local_hs_t. */

/* Where handshake bytes are read: the tail of the inbound buffer, clear of
 * where the first chunk is built. */
#define SS_HS_CAP (SS_RELAY_BUF_SIZE - SS_HS_OFF)
/* How much of it a client's first bytes may fill: a forwarded HTTP request's
 * head is rewritten in place, up to SS_HTTP_REWRITE_GROWTH bytes longer,
 * with whatever came after it (its body, the next requests) still behind. */
#define SS_HS_READ_CAP (SS_HS_CAP - SS_HTTP_REWRITE_GROWTH)

/* CONNECT, as SOCKS4, SOCKS5 and the shared connect number it. */
#define SS_LOCAL_CMD_CONNECT 1

/* What every front end's state starts with (c->hs). */
typedef struct ss_local_hs {
	uint16_t fill;  /* handshake bytes read, at SS_HS_OFF */
	uint16_t early; /* where the payload after the request starts */
	uint8_t front;  /* the front end the first byte chose; 0: none yet */
} ss_local_hs_t;

static inline ss_local_hs_t *ss_local_hs(ss_conn_t *c)
{
	return (ss_local_hs_t *)(void *)c->hs;
}

/* Why a request failed, in terms each front end answers in its own way. */
typedef enum {
	SS_LOCAL_FAILED,           /* anything else */
	SS_LOCAL_NOT_ALLOWED,      /* refused here */
	SS_LOCAL_UNSUPPORTED,      /* a command other than CONNECT */
	SS_LOCAL_REFUSED,          /* the connect was refused */
	SS_LOCAL_NET_UNREACHABLE,  /* ... or found no route */
	SS_LOCAL_HOST_UNREACHABLE, /* ... or no host */
	SS_LOCAL_TIMED_OUT,        /* ... or timed out */
} ss_local_fail_t;

/* A front end. */
typedef struct ss_local_front {
	const char *name; /* what its connections are doing, for log lines */
	/* Whether a handshake that starts with byte b is this front end's. */
	bool (*sniff)(uint8_t b);
	/* The handshake bytes at hs grew (ss_local_hs(c)->fill of them). */
	void (*inbound)(ss_conn_t *c, uint8_t *hs);
	/* The request failed (why, for the log): the client hears it in the
	 * front end's terms, then the connection ends (ss_hs_local_end). */
	void (*fail)(ss_conn_t *c, ss_local_fail_t f, const char *why);
	/* The outbound side is connected: the stream starts. */
	void (*connected)(ss_conn_t *c);
} ss_local_front_t;

extern const ss_local_front_t ss_local_socks5; /* hs_socks5.c */
extern const ss_local_front_t ss_local_socks4; /* hs_socks4.c */
extern const ss_local_front_t ss_local_http;   /* hs_http.c */

/* A few bytes toward the client on a fresh socket. */
void ss_hs_local_send(ss_conn_t *c, const uint8_t *p, size_t n);
/* Ends the connection after a refusal: the FIN follows the reply, and the
 * client's unread bytes are read away until it closes. */
void ss_hs_local_end(ss_conn_t *c, const char *why);
/* Drops the first used handshake bytes. */
void ss_hs_local_consume(ss_conn_t *c, size_t used);
/* The request, used bytes long, parsed into c->target with its command:
 * the checks every front end shares (a refusal goes to its fail), then the
 * connect through the ACL and the servers. What follows the request is
 * early payload, which stays in the handshake area until the stream
 * starts. */
void ss_hs_local_connect(ss_conn_t *c, uint8_t cmd, size_t used);
/* Starts the stream, with the early payload behind the target. */
void ss_hs_local_stream(ss_conn_t *c);

#endif
