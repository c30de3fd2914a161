/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_HS_LOCAL_H
#define SS_RELAY_HS_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/http.h"
#include "relay/conn.h"

/* ss-local's port: SOCKS5, SOCKS4/4a and HTTP share one handshake
 * (hs_socks5.c), its handshake area and its connect; the HTTP proxy's own
 * part is in hs_http.c. */

/* Where handshake bytes are read: the tail of the inbound buffer, clear of
 * where the first chunk is built. */
#define SS_HS_CAP (SS_RELAY_BUF_SIZE - SS_HS_OFF)
/* How much of it a client's first bytes may fill: a forwarded HTTP request's
 * head is rewritten in place, up to SS_HTTP_REWRITE_GROWTH bytes longer,
 * with whatever came after it (its body, the next requests) still behind. */
#define SS_HS_READ_CAP (SS_HS_CAP - SS_HTTP_REWRITE_GROWTH)

/* CONNECT, as SOCKS4, SOCKS5 and the shared connect number it. */
#define SS_LOCAL_CMD_CONNECT 1

/* What the handshake's state starts with (c->hs); the HTTP proxy's goes
 * on with its own (hs_http.c). */
typedef struct ss_local_hs {
	uint16_t fill;  /* handshake bytes read, at SS_HS_OFF */
	uint16_t early; /* where the payload after the request starts */
	uint8_t stage;  /* the handshake's sub-state */
} ss_local_hs_t;

static inline ss_local_hs_t *ss_local_hs(ss_conn_t *c)
{
	return (ss_local_hs_t *)(void *)c->hs;
}

/* Sub-states (ss_local_hs_t.stage). STAGE_LOGIN only when users are configured
 * (RFC 1929); a request is read only after a successful login then. */
enum {
	SS_STAGE_GREETING,
	SS_STAGE_LOGIN,
	SS_STAGE_REQUEST,
	SS_STAGE_SOCKS4,
	SS_STAGE_HTTP,       /* an HTTP request head, then CONNECT's tunnel */
	SS_STAGE_HTTP_PLAIN, /* a request forwarded to its origin */
};

/* A few bytes toward the client on a fresh socket. */
void ss_hs_local_send(ss_conn_t *c, const uint8_t *p, size_t n);
/* Ends the connection after a refusal: the FIN follows the reply, and the
 * client's unread bytes are read away until it closes. */
void ss_hs_local_end(ss_conn_t *c, const char *why);
/* The request, used bytes long, parsed into c->target with its command
 * (CONNECT is 1 in SOCKS4, SOCKS5, and for HTTP): the checks every front
 * end shares, then the connect through the ACL and the servers. */
void ss_hs_local_connect(ss_conn_t *c, uint8_t cmd, size_t used);

/* HTTP: the handshake bytes at hs grew (SS_STAGE_HTTP). */
void ss_hs_http_inbound(ss_conn_t *c, uint8_t *hs);
/* HTTP: the refusal for a failed connect or a refused command: status
 * (403, 502, 504, ...) toward the client, then the end. */
void ss_hs_http_fail(ss_conn_t *c, int status, const char *why);
/* HTTP: the outbound side is connected; the stream starts (a forwarded
 * request's through the pump's filters). */
void ss_hs_http_connected(ss_conn_t *c);

#endif
