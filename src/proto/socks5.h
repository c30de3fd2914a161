/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_SOCKS5_H
#define SS_PROTO_SOCKS5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/addr.h"

/* SOCKS5 (RFC 1928) as the server side speaks it. The parsers read a
 * read-only view and consume nothing: on SS_OK they say how many bytes the
 * message took (*used); SS_AGAIN means the message is incomplete. */

enum {
	SS_SOCKS5_VERSION = 5,
	SS_SOCKS5_AUTH_NONE = 0x00,
	SS_SOCKS5_AUTH_NO_ACCEPTABLE = 0xFF,
	SS_SOCKS5_CMD_CONNECT = 1,
	SS_SOCKS5_CMD_BIND = 2,
	SS_SOCKS5_CMD_UDP_ASSOCIATE = 3,
};

typedef enum {
	SS_SOCKS5_REP_SUCCEEDED = 0x00,
	SS_SOCKS5_REP_GENERAL_FAILURE = 0x01,
	SS_SOCKS5_REP_NOT_ALLOWED = 0x02,
	SS_SOCKS5_REP_NETWORK_UNREACHABLE = 0x03,
	SS_SOCKS5_REP_HOST_UNREACHABLE = 0x04,
	SS_SOCKS5_REP_CONNECTION_REFUSED = 0x05,
	SS_SOCKS5_REP_TTL_EXPIRED = 0x06,
	SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED = 0x07,
	SS_SOCKS5_REP_ATYP_NOT_SUPPORTED = 0x08,
} ss_socks5_rep_t;

/* Greeting: VER NMETHODS METHODS[NMETHODS].
 * SS_OK: *used set, *noauth true if method 0 was offered.
 * SS_ERR: version is not 5. */
int ss_socks5_parse_greeting(const uint8_t *buf, size_t len, size_t *used, bool *noauth);

/* Request: VER CMD RSV ATYP DST.ADDR DST.PORT.
 * SS_OK: *used, *cmd and *dst set (the command is reported, not judged; the
 * caller answers unsupported ones with COMMAND_NOT_SUPPORTED).
 * SS_ERR: *rep says which reply to send (ATYP_NOT_SUPPORTED for an unknown
 * address type, GENERAL_FAILURE for a bad version or malformed address). */
int ss_socks5_parse_request(const uint8_t *buf, size_t len, size_t *used, uint8_t *cmd,
			    ss_addr_t *dst, ss_socks5_rep_t *rep);

/* SOCKS5 UDP request header (RFC 1928 section 7): RSV(2) FRAG(1) ATYP
 * DST.ADDR DST.PORT, then data. SS_OK with *dst and *used (the header's
 * length; FRAG is buf[2], left to the caller); SS_ERR when the datagram is
 * too short or the address is malformed. */
int ss_socks5_parse_udp(const uint8_t *buf, size_t len, ss_addr_t *dst, size_t *used);

/* Method selection reply: 2 bytes. */
size_t ss_socks5_encode_method(uint8_t method, uint8_t out[2]);
/* Reply VER REP RSV ATYP BND.ADDR BND.PORT; bnd may be NULL (0.0.0.0:0).
 * Returns the length (10 or 22), 0 if cap is too small. */
size_t ss_socks5_encode_reply(ss_socks5_rep_t rep, const struct sockaddr *bnd, uint8_t *out,
			      size_t cap);

#endif
