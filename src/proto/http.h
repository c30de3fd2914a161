/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_HTTP_H
#define SS_PROTO_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/addr.h"
#include "proto/socks5_auth.h"

/* HTTP/1.x proxy requests, as the proxy side reads them (RFC 9112): the
 * request head (request line and header fields), the chunk-size lines of
 * a chunked body, and Basic proxy credentials. The parsers read a
 * read-only view and consume nothing: on SS_OK they say how many bytes the
 * part took, and SS_AGAIN means only that more bytes are needed. Lines end
 * in CRLF; a bare CR or LF, obsolete line folding, a control byte in a
 * field, and any framing that two readers could take two ways (both
 * Content-Length and Transfer-Encoding, differing lengths, a coding other
 * than chunked) are SS_ERR, so what we forward is framed as we read it. */

/* A part of the parsed buffer. */
typedef struct ss_http_span {
	uint32_t off, len;
} ss_http_span_t;

typedef enum {
	SS_HTTP_FORM_AUTHORITY, /* CONNECT host:port */
	SS_HTTP_FORM_ABSOLUTE,  /* GET http://host[:port]/path */
} ss_http_form_t;

/* Headers a proxy acts on, or must not pass on. */
typedef struct ss_http_req {
	size_t head_len; /* through the blank line that ends the head */
	ss_http_span_t method;
	ss_http_span_t target; /* the request target as sent */
	ss_http_span_t path;   /* ABSOLUTE: path and query (empty: "/") */
	ss_http_span_t host;   /* the Host field's value (len 0: none) */
	ss_http_span_t auth;   /* the Proxy-Authorization field's value */
	ss_http_form_t form;
	ss_addr_t dst;        /* where the request goes */
	uint8_t minor;        /* HTTP/1.minor */
	bool connect;         /* the method is CONNECT */
	bool head;            /* the method is HEAD: the answer has no body */
	bool has_host;        /* a Host field was sent */
	bool has_auth;        /* a Proxy-Authorization field was sent */
	bool chunked;         /* Transfer-Encoding: chunked */
	bool has_length;      /* Content-Length was sent */
	bool close;           /* Connection: close, or HTTP/1.0 without keep-alive */
	bool upgrade;         /* Connection: upgrade (the origin may switch protocols) */
	bool expect_continue; /* Expect: 100-continue */
	uint64_t length;      /* Content-Length */
} ss_http_req_t;

/* A request head at buf[0..len). SS_OK: *req filled (req->head_len bytes);
 * SS_AGAIN: the head is incomplete (and what there is of it is well
 * formed); SS_ERR: not a request an HTTP proxy can serve: malformed, not
 * HTTP/1.x, an origin-form target, a scheme other than http, a CONNECT
 * target without a port, a host over 255 bytes. */
int ss_http_parse_request(const uint8_t *buf, size_t len, ss_http_req_t *req);

/* Whether name[0..n) is one of the fields a proxy takes for itself and
 * does not pass on (Proxy-Connection, Proxy-Authorization, Keep-Alive),
 * case-insensitive. */
bool ss_http_field_is_proxy(const uint8_t *name, size_t n);

/* Writes the head req (ABSOLUTE form) parsed from buf toward the origin:
 * the request line in origin form, a Host field naming the URI's authority
 * (the client's Host field goes), every other field but the proxy's own
 * (ss_http_field_is_proxy) and, with close, the client's Connection fields
 * replaced by "Connection: close". Returns its length (at most
 * req->head_len + SS_HTTP_REWRITE_GROWTH), or 0 when cap is too small. */
#define SS_HTTP_REWRITE_GROWTH 21
size_t ss_http_rewrite_head(const uint8_t *buf, const ss_http_req_t *req, bool close, uint8_t *out,
			    size_t cap);

/* The next line of buf[0..len) from pos: SS_OK with its length (without
 * CRLF) in *n; SS_AGAIN while it may still end well; SS_ERR for a CR not
 * followed by LF, or an LF without CR. */
int ss_http_line(const uint8_t *buf, size_t len, size_t pos, size_t *n);
/* A field line[0..n): name ":" OWS value OWS, with the name's length and
 * the value's span (relative to line); SS_ERR when the name is no token
 * or the value holds a control byte. */
int ss_http_field(const uint8_t *line, size_t n, size_t *name_len, size_t *voff, size_t *vlen);

/* A chunk-size line (hex size, optional extensions, CRLF) at buf[0..len).
 * SS_OK with *used and *size; SS_AGAIN; SS_ERR when it is not hex, too
 * large (over 2^60), or the line is malformed or over 1024 bytes. */
int ss_http_parse_chunk_size(const uint8_t *buf, size_t len, size_t *used, uint64_t *size);

/* The trailer section after the last chunk: fields then an empty line.
 * SS_OK with *used through the empty line; SS_AGAIN; SS_ERR. */
int ss_http_parse_trailer(const uint8_t *buf, size_t len, size_t *used);

/* A request body's framing, followed as its bytes stream past in pieces of
 * any size (nothing is kept): Content-Length counts down; chunked walks
 * the chunk-size lines, data, last chunk and trailer byte by byte, with
 * the same rules as ss_http_parse_chunk_size and ss_http_parse_trailer. */
typedef struct ss_http_body {
	uint64_t left;  /* bytes left in the body (LENGTH) or the chunk's data */
	uint16_t line;  /* bytes of the chunk-size line so far */
	uint8_t state;  /* internal */
	uint8_t digits; /* hex digits of the chunk size so far */
} ss_http_body_t;

/* The framing req declares; a request with neither Content-Length nor
 * chunked has no body. After one that asks to upgrade, nothing on the
 * connection is HTTP for sure: every byte after it belongs to it. */
void ss_http_body_init(ss_http_body_t *b, const ss_http_req_t *req);

/* n more bytes of the stream at p: SS_AGAIN when all of them belong to the
 * body and more is to come; SS_OK when the body ended, after *used of
 * them (0 when it had already ended); SS_ERR when the chunked framing is
 * malformed. */
int ss_http_body_feed(ss_http_body_t *b, const uint8_t *p, size_t n, size_t *used);

/* The answers to forwarded requests, followed as their bytes stream back
 * in pieces of any size (nothing is kept), so a proxy knows where the last
 * answer in flight ends (RFC 9112 section 6.3): the status line, the
 * framing fields (Content-Length, Transfer-Encoding), then the body:
 * none for HEAD, 1xx, 204 and 304; chunked, or Content-Length bytes; and
 * otherwise, or when the head is malformed or the answer is 101 Switching
 * Protocols, every byte until the origin closes (the tracker is then
 * opaque for good). An interim 1xx answer is followed by the final one. */
#define SS_HTTP_RESP_MAX 32 /* requests in flight at most */

typedef struct ss_http_resp {
	ss_http_body_t body; /* the current answer's body */
	uint64_t length;     /* its Content-Length */
	uint32_t heads;      /* bit i: the i-th request in flight is a HEAD */
	uint16_t status;
	uint8_t pending; /* requests in flight: their final answers are to come */
	uint8_t state;   /* internal */
	uint8_t field;   /* the field the current line holds */
	uint8_t flags;   /* what the head said so far */
	uint8_t tlen;    /* bytes in tok */
	uint8_t tok[21]; /* the status line's start, a field name, a coding */
} ss_http_resp_t;

/* No request in flight. */
void ss_http_resp_init(ss_http_resp_t *r);
/* A request (head: its method is HEAD) went to the origin: its answer is
 * expected after those in flight. false, recording nothing, when
 * SS_HTTP_RESP_MAX are in flight already. */
bool ss_http_resp_expect(ss_http_resp_t *r, bool head);
/* n more bytes from the origin at p. SS_AGAIN: all of them belong to the
 * answers in flight (or the tracker is opaque), more to come; SS_OK: the
 * last answer in flight ended after *used of them (0 when none was in
 * flight): the rest answers nothing. */
int ss_http_resp_feed(ss_http_resp_t *r, const uint8_t *p, size_t n, size_t *used);
/* The number of requests whose final answers are still to come. */
unsigned ss_http_resp_pending(const ss_http_resp_t *r);
/* Whether the answers are past knowing where they end: only the origin's
 * close ends the last one. */
bool ss_http_resp_opaque(const ss_http_resp_t *r);

/* "Basic base64(name:password)" (the scheme case-insensitive) into *login,
 * whose pointers then point into scratch. SS_OK, or SS_ERR for another
 * scheme, bad base64, no ':' or a field empty or over 255 bytes. */
int ss_http_basic_login(const uint8_t *value, size_t len,
			uint8_t scratch[2 * SS_SOCKS5_FIELD_MAX + 2], ss_socks5_login_t *login);

/* A whole response with no body for status: "HTTP/1.1 <status> <reason>",
 * Connection: close, the Basic challenge for 407, Content-Length: 0.
 * Returns its length, or 0 when cap is too small. */
size_t ss_http_encode_status(int status, uint8_t *out, size_t cap);

#endif
