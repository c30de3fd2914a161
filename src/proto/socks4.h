/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_SOCKS4_H
#define SS_PROTO_SOCKS4_H

#include <stddef.h>
#include <stdint.h>

#include "proto/addr.h"

/* SOCKS4 and its 4a extension, as the server side speaks them. The request
 * is VN CD DSTPORT(2) DSTIP(4) USERID NUL, and for 4a (DSTIP 0.0.0.x, x
 * not 0) a host name and NUL follow. The parser reads a read-only view and
 * consumes nothing: on SS_OK it says how many bytes the request took. */

enum {
	SS_SOCKS4_VERSION = 4,
	SS_SOCKS4_CMD_CONNECT = 1,
	SS_SOCKS4_CMD_BIND = 2,
	/* The user id is only skipped; a longer one is not a client we know. */
	SS_SOCKS4_USERID_MAX = 255,
	SS_SOCKS4_HOST_MAX = 255,
	SS_SOCKS4_REPLY_LEN = 8,
};

typedef enum {
	SS_SOCKS4_REP_GRANTED = 90,
	SS_SOCKS4_REP_REJECTED = 91,
} ss_socks4_rep_t;

/* SS_OK: *used, *cmd and *dst set (an IPv4 address, or a domain for 4a;
 * the command is reported, not judged). SS_AGAIN: incomplete. SS_ERR: the
 * version is not 4, the user id or host name is over its bound, or the
 * host name is empty. */
int ss_socks4_parse_request(const uint8_t *buf, size_t len, size_t *used, uint8_t *cmd,
			    ss_addr_t *dst);

/* Reply VN=0 CD DSTPORT DSTIP, all zero but CD: clients ignore the rest.
 * Returns SS_SOCKS4_REPLY_LEN. */
size_t ss_socks4_encode_reply(ss_socks4_rep_t rep, uint8_t out[SS_SOCKS4_REPLY_LEN]);

#endif
