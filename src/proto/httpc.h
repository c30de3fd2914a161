/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_HTTPC_H
#define SS_PROTO_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The client side of one HTTPS GET (the online configuration's): the URL
 * it is given, and the answer's head and body as they come back. Pure
 * parsers over bytes already read, no I/O. */

#define SS_HTTPC_HOST_MAX 256
#define SS_HTTPC_PATH_MAX 2048

/* https://host[:port][/path[?query]][#fragment], or ssconf:// (Outline's
 * dynamic access keys: the same request over HTTPS). host is a name, an
 * IPv4 literal or an IPv6 literal in brackets (kept without them). */
typedef struct ss_httpc_url {
	char host[SS_HTTPC_HOST_MAX];
	uint16_t port;                /* 443 when not given */
	char path[SS_HTTPC_PATH_MAX]; /* "/" when not given; no fragment */
	bool literal;                 /* host is an IP address */
} ss_httpc_url_t;

/* 0, or -EINVAL with err naming what is wrong (another scheme, a user
 * name in it, no host, a bad port, a space or control byte). */
int ss_httpc_url_parse(const char *text, ss_httpc_url_t *u, char *err, size_t errlen);

/* text as it may be logged: the scheme and the host (with its port), and
 * "/..." for whatever follows, since an ssconf:// path is the access key
 * itself; a user name or password is left out too. Control bytes become
 * '?'. Returns buf. */
#define SS_HTTPC_SHOWN_MAX (SS_HTTPC_HOST_MAX + 32)
const char *ss_httpc_url_shown(const char *text, char *buf, size_t len);

/* The answer's head (RFC 9112): the status line and the fields that frame
 * the body. Transfer-Encoding other than chunked, Content-Length with
 * Transfer-Encoding, or two lengths that differ are errors, as are bare
 * CR or LF and obsolete folding. */
#define SS_HTTPC_HEAD_MAX 16384
typedef struct ss_httpc_head {
	size_t len;      /* through the blank line */
	int status;      /* 100-599 */
	bool chunked;    /* Transfer-Encoding: chunked */
	bool has_length; /* Content-Length given */
	uint64_t length;
	char location[256]; /* the Location field, cut (for a message) */
} ss_httpc_head_t;

/* buf[0..len): SS_OK with *h; SS_AGAIN (incomplete, and under
 * SS_HTTPC_HEAD_MAX); SS_ERR. */
int ss_httpc_parse_head(const uint8_t *buf, size_t len, ss_httpc_head_t *h);

/* A chunked body at buf[0..len) (what follows the head): SS_AGAIN while
 * the last chunk and the trailer have not all come; SS_ERR when malformed
 * or when the data would exceed cap; SS_OK when whole, with the data
 * moved together at buf[0..*out) in place. */
int ss_httpc_dechunk(uint8_t *buf, size_t len, size_t cap, size_t *out);

#endif
