/* SPDX-License-Identifier: MIT */
#include "proto/http.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "util/result.h"

#define CHUNK_LINE_MAX 1024
#define LENGTH_MAX (1ull << 60)

/* RFC 9110 tchar: what a method or a field name may hold. */
static bool http_tchar(uint8_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static uint8_t http_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

static bool http_ieq(const uint8_t *p, size_t n, const char *word)
{
	size_t w = strlen(word);

	if (n != w)
		return false;
	for (size_t i = 0; i < n; i++)
		if (http_lower(p[i]) != (uint8_t)word[i])
			return false;
	return true;
}

/* The next line of buf[0..len) from pos: SS_OK with its length (without
 * CRLF) in *n; SS_AGAIN while it may still end well; SS_ERR for a CR not
 * followed by LF, or an LF without CR. */
int ss_http_line(const uint8_t *buf, size_t len, size_t pos, size_t *n)
{
	for (size_t i = pos; i < len; i++) {
		if (buf[i] == '\n')
			return SS_ERR;
		if (buf[i] != '\r')
			continue;
		if (i + 1 == len)
			return SS_AGAIN;
		if (buf[i + 1] != '\n')
			return SS_ERR;
		*n = i - pos;
		return SS_OK;
	}
	return SS_AGAIN;
}

/* A field value byte: visible ASCII, obs-text, SP or HTAB. */
static bool http_vchar(uint8_t c)
{
	return c == '\t' || (c >= ' ' && c != 0x7f);
}

/* name ":" OWS value OWS, with the value's span (relative to line). */
int ss_http_field(const uint8_t *line, size_t n, size_t *name_len, size_t *voff, size_t *vlen)
{
	size_t i = 0;

	while (i < n && http_tchar(line[i]))
		i++;
	if (i == 0 || i == n || line[i] != ':')
		return SS_ERR;
	*name_len = i++;
	for (size_t k = i; k < n; k++)
		if (!http_vchar(line[k]))
			return SS_ERR;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t end = n;
	while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t'))
		end--;
	*voff = i;
	*vlen = end - i;
	return SS_OK;
}

/* Calls back for each token of a comma-separated list. */
static void http_tokens(const uint8_t *v, size_t n, ss_http_req_t *req, bool *keep)
{
	size_t i = 0;

	while (i < n) {
		while (i < n && (v[i] == ',' || v[i] == ' ' || v[i] == '\t'))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
			i++;
		if (http_ieq(v + s, i - s, "close"))
			req->close = true;
		else if (http_ieq(v + s, i - s, "keep-alive"))
			*keep = true;
		else if (http_ieq(v + s, i - s, "upgrade"))
			req->upgrade = true;
	}
}

/* 1*DIGIT up to LENGTH_MAX. */
static int http_number(const uint8_t *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (n == 0 || n > 19)
		return SS_ERR;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return SS_ERR;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (x > LENGTH_MAX)
		return SS_ERR;
	*out = x;
	return SS_OK;
}

/* host [":" port] from p[0..n) into dst; *port_seen says whether a port
 * was given (an empty one counts as none). */
static int http_authority(const uint8_t *p, size_t n, uint16_t dflt, ss_addr_t *dst,
			  bool *port_seen)
{
	char host[SS_ADDR_STRLEN];
	size_t hl;

	if (n == 0)
		return SS_ERR;
	if (p[0] == '[') {
		const uint8_t *close = memchr(p, ']', n);
		if (!close)
			return SS_ERR;
		hl = (size_t)(close - p) + 1;
		for (size_t i = 1; i + 1 < hl; i++)
			if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') ||
			      (p[i] >= 'A' && p[i] <= 'F') || p[i] == ':' || p[i] == '.'))
				return SS_ERR;
	} else {
		hl = 0;
		while (hl < n && p[hl] != ':') {
			uint8_t c = p[hl];
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			      (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_' ||
			      c == '~'))
				return SS_ERR;
			hl++;
		}
	}
	if (hl == 0 || hl > 255)
		return SS_ERR;
	uint32_t port = dflt;
	*port_seen = false;
	if (hl < n) {
		if (p[hl] != ':')
			return SS_ERR;
		size_t ps = hl + 1;
		if (n - ps > 5)
			return SS_ERR;
		if (n > ps) {
			port = 0;
			for (size_t i = ps; i < n; i++) {
				if (p[i] < '0' || p[i] > '9')
					return SS_ERR;
				port = port * 10 + (uint32_t)(p[i] - '0');
			}
			*port_seen = true;
		}
	}
	if (port == 0 || port > 65535)
		return SS_ERR;
	memcpy(host, p, hl);
	host[hl] = '\0';
	return ss_addr_from_host(dst, host, (uint16_t)port) == 0 ? SS_OK : SS_ERR;
}

static int http_target(const uint8_t *buf, ss_http_req_t *req)
{
	const uint8_t *t = buf + req->target.off;
	size_t n = req->target.len;
	bool port_seen;

	if (req->connect) {
		req->form = SS_HTTP_FORM_AUTHORITY;
		if (http_authority(t, n, 0, &req->dst, &port_seen) != SS_OK || !port_seen)
			return SS_ERR;
		return SS_OK;
	}
	if (n < 7 || !http_ieq(t, 7, "http://"))
		return SS_ERR;
	size_t a = 7, e = 7;
	while (e < n && t[e] != '/' && t[e] != '?')
		e++;
	if (memchr(t, '#', n))
		return SS_ERR;
	req->form = SS_HTTP_FORM_ABSOLUTE;
	req->path = (ss_http_span_t){req->target.off + (uint32_t)e, (uint32_t)(n - e)};
	return http_authority(t + a, e - a, 80, &req->dst, &port_seen);
}

/* METHOD SP target SP HTTP/1.d */
static int http_request_line(const uint8_t *buf, size_t n, ss_http_req_t *req)
{
	size_t i = 0;

	while (i < n && http_tchar(buf[i]))
		i++;
	if (i == 0 || i == n || buf[i] != ' ')
		return SS_ERR;
	req->method = (ss_http_span_t){0, (uint32_t)i};
	size_t s = ++i;
	while (i < n && buf[i] > ' ' && buf[i] < 0x7f)
		i++;
	if (i == s || i == n || buf[i] != ' ')
		return SS_ERR;
	req->target = (ss_http_span_t){(uint32_t)s, (uint32_t)(i - s)};
	i++;
	if (n - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 || buf[i + 7] < '0' ||
	    buf[i + 7] > '9')
		return SS_ERR;
	req->minor = (uint8_t)(buf[i + 7] - '0');
	/* Methods are case-sensitive. */
	req->connect = req->method.len == 7 && memcmp(buf, "CONNECT", 7) == 0;
	req->head = req->method.len == 4 && memcmp(buf, "HEAD", 4) == 0;
	return SS_OK;
}

/* One header field line (at buf + pos, n bytes) into req. */
static int http_header(const uint8_t *buf, size_t pos, size_t n, ss_http_req_t *req, bool *keep)
{
	const uint8_t *line = buf + pos;
	size_t nl, vo, vl;

	if (ss_http_field(line, n, &nl, &vo, &vl) != SS_OK)
		return SS_ERR;
	const uint8_t *v = line + vo;
	ss_http_span_t span = {(uint32_t)(pos + vo), (uint32_t)vl};
	uint64_t len;

	if (http_ieq(line, nl, "host")) {
		if (req->has_host)
			return SS_ERR;
		req->has_host = true;
		req->host = span;
	} else if (http_ieq(line, nl, "content-length")) {
		if (http_number(v, vl, &len) != SS_OK || (req->has_length && len != req->length))
			return SS_ERR;
		req->has_length = true;
		req->length = len;
	} else if (http_ieq(line, nl, "transfer-encoding")) {
		if (req->chunked || !http_ieq(v, vl, "chunked"))
			return SS_ERR;
		req->chunked = true;
	} else if (http_ieq(line, nl, "connection") || http_ieq(line, nl, "proxy-connection")) {
		http_tokens(v, vl, req, keep);
	} else if (http_ieq(line, nl, "expect")) {
		if (http_ieq(v, vl, "100-continue"))
			req->expect_continue = true;
	} else if (http_ieq(line, nl, "proxy-authorization")) {
		if (req->has_auth)
			return SS_ERR;
		req->has_auth = true;
		req->auth = span;
	}
	return SS_OK;
}

int ss_http_parse_request(const uint8_t *buf, size_t len, ss_http_req_t *req)
{
	size_t pos = 0, n;
	bool keep = false;
	int r;

	memset(req, 0, sizeof(*req));
	r = ss_http_line(buf, len, 0, &n);
	if (r != SS_OK)
		return r;
	if (http_request_line(buf, n, req) != SS_OK)
		return SS_ERR;
	pos = n + 2;
	for (;;) {
		r = ss_http_line(buf, len, pos, &n);
		if (r != SS_OK)
			return r;
		if (n == 0)
			break;
		if (http_header(buf, pos, n, req, &keep) != SS_OK)
			return SS_ERR;
		pos += n + 2;
	}
	req->head_len = pos + 2;
	/* A body framed two ways is read differently by different readers. */
	if (req->chunked && req->has_length)
		return SS_ERR;
	if (req->minor == 0 && !keep)
		req->close = true;
	return http_target(buf, req);
}

bool ss_http_field_is_proxy(const uint8_t *name, size_t n)
{
	return http_ieq(name, n, "proxy-connection") || http_ieq(name, n, "proxy-authorization") ||
	       http_ieq(name, n, "keep-alive");
}

/* Appends n bytes at *o when they fit. */
static bool http_put(uint8_t *out, size_t cap, size_t *o, const void *p, size_t n)
{
	if (cap - *o < n)
		return false;
	memcpy(out + *o, p, n);
	*o += n;
	return true;
}

size_t ss_http_rewrite_head(const uint8_t *buf, const ss_http_req_t *req, bool close, uint8_t *out,
			    size_t cap)
{
	const uint8_t *path = buf + req->path.off;
	const uint8_t *auth = buf + req->target.off + 7;
	size_t auth_len = req->path.off - (req->target.off + 7);
	size_t o = 0, pos, n = 0, nl, vo, vl;
	bool ok;

	ok = http_put(out, cap, &o, buf, req->method.len) && http_put(out, cap, &o, " ", 1);
	if (req->path.len == 0 || path[0] != '/')
		ok = ok && http_put(out, cap, &o, "/", 1);
	ok = ok && http_put(out, cap, &o, path, req->path.len) &&
	     http_put(out, cap, &o, " HTTP/1.", 8) &&
	     http_put(out, cap, &o, &(char){(char)('0' + req->minor)}, 1) &&
	     http_put(out, cap, &o, "\r\nHost: ", 8) && http_put(out, cap, &o, auth, auth_len) &&
	     http_put(out, cap, &o, "\r\n", 2);
	/* The absolute URI names the host: the client's Host field goes. */
	pos = req->target.off + req->target.len + sizeof(" HTTP/1.x\r\n") - 1;
	while (ok && pos + 2 < req->head_len) {
		ss_http_line(buf, req->head_len, pos, &n);
		ss_http_field(buf + pos, n, &nl, &vo, &vl);
		if (!ss_http_field_is_proxy(buf + pos, nl) && !http_ieq(buf + pos, nl, "host") &&
		    !(close && http_ieq(buf + pos, nl, "connection")))
			ok = http_put(out, cap, &o, buf + pos, n + 2);
		pos += n + 2;
	}
	if (close)
		ok = ok && http_put(out, cap, &o, "Connection: close\r\n", 19);
	ok = ok && http_put(out, cap, &o, "\r\n", 2);
	return ok ? o : 0;
}

static int http_hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = http_lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int ss_http_parse_chunk_size(const uint8_t *buf, size_t len, size_t *used, uint64_t *size)
{
	size_t look = len < CHUNK_LINE_MAX ? len : CHUNK_LINE_MAX, i = 0, n = 0;
	uint64_t x = 0;
	int r = ss_http_line(buf, look, 0, &n);

	if (r == SS_AGAIN && look == CHUNK_LINE_MAX)
		return SS_ERR;
	/* What there is must already look like a size. */
	while (i < look && http_hex(buf[i]) >= 0) {
		if (i == 15)
			return SS_ERR;
		x = x << 4 | (uint64_t)http_hex(buf[i]);
		i++;
	}
	if (i < look &&
	    (i == 0 || (buf[i] != ';' && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r')))
		return SS_ERR;
	if (r != SS_OK)
		return r;
	for (size_t k = i; k < n; k++)
		if (!http_vchar(buf[k]))
			return SS_ERR;
	/* Only whitespace before the extensions. */
	size_t k = i;
	while (k < n && (buf[k] == ' ' || buf[k] == '\t'))
		k++;
	if (k < n && buf[k] != ';')
		return SS_ERR;
	*used = n + 2;
	*size = x;
	return SS_OK;
}

int ss_http_parse_trailer(const uint8_t *buf, size_t len, size_t *used)
{
	size_t pos = 0, n, nl, vo, vl;

	for (;;) {
		int r = ss_http_line(buf, len, pos, &n);
		if (r != SS_OK)
			return r;
		if (n == 0)
			break;
		if (ss_http_field(buf + pos, n, &nl, &vo, &vl) != SS_OK)
			return SS_ERR;
		pos += n + 2;
	}
	*used = pos + 2;
	return SS_OK;
}

enum {
	BODY_DONE,
	BODY_LENGTH,
	BODY_SIZE,    /* hex digits */
	BODY_SIZE_WS, /* whitespace after them */
	BODY_EXT,     /* extensions, to the CR */
	BODY_SIZE_LF, /* the size line's LF */
	BODY_DATA,    /* chunk data */
	BODY_DATA_CR, /* the CRLF after it */
	BODY_DATA_LF,
	BODY_TRAILER,  /* the start of a trailer line, or the final CR */
	BODY_TR_NAME,  /* a field name */
	BODY_TR_VALUE, /* to the CR */
	BODY_TR_LF,    /* a field line's LF */
	BODY_END_LF,   /* the final LF */
	BODY_ALL,      /* after an upgrade: everything */
};

void ss_http_body_init(ss_http_body_t *b, const ss_http_req_t *req)
{
	memset(b, 0, sizeof(*b));
	if (req->upgrade)
		b->state = BODY_ALL;
	else if (req->chunked)
		b->state = BODY_SIZE;
	else if (req->has_length && req->length > 0) {
		b->state = BODY_LENGTH;
		b->left = req->length;
	} else
		b->state = BODY_DONE;
}

/* One byte of the chunked framing: the next state, or -1. */
static int body_step(ss_http_body_t *b, uint8_t c)
{
	switch (b->state) {
	case BODY_SIZE:
		if (http_hex(c) >= 0) {
			if (b->digits == 15)
				return -1;
			b->left = b->left << 4 | (uint64_t)http_hex(c);
			b->digits++;
			return BODY_SIZE;
		}
		if (b->digits == 0)
			return -1;
		if (c == ' ' || c == '\t')
			return BODY_SIZE_WS;
		return c == ';' ? BODY_EXT : c == '\r' ? BODY_SIZE_LF : -1;
	case BODY_SIZE_WS:
		if (c == ' ' || c == '\t')
			return BODY_SIZE_WS;
		return c == ';' ? BODY_EXT : c == '\r' ? BODY_SIZE_LF : -1;
	case BODY_EXT:
		if (c == '\r')
			return BODY_SIZE_LF;
		return http_vchar(c) ? BODY_EXT : -1;
	case BODY_SIZE_LF:
		if (c != '\n')
			return -1;
		b->line = 0;
		b->digits = 0;
		return b->left ? BODY_DATA : BODY_TRAILER;
	case BODY_DATA_CR:
		return c == '\r' ? BODY_DATA_LF : -1;
	case BODY_DATA_LF:
		return c == '\n' ? BODY_SIZE : -1;
	case BODY_TRAILER:
		if (c == '\r')
			return BODY_END_LF;
		return http_tchar(c) ? BODY_TR_NAME : -1;
	case BODY_TR_NAME:
		if (c == ':')
			return BODY_TR_VALUE;
		return http_tchar(c) ? BODY_TR_NAME : -1;
	case BODY_TR_VALUE:
		if (c == '\r')
			return BODY_TR_LF;
		return http_vchar(c) ? BODY_TR_VALUE : -1;
	case BODY_TR_LF:
		return c == '\n' ? BODY_TRAILER : -1;
	case BODY_END_LF:
		return c == '\n' ? BODY_DONE : -1;
	default:
		return -1;
	}
}

int ss_http_body_feed(ss_http_body_t *b, const uint8_t *p, size_t n, size_t *used)
{
	size_t i = 0;

	if (b->state == BODY_ALL) {
		*used = n;
		return SS_AGAIN;
	}
	while (i < n && b->state != BODY_DONE) {
		if (b->state == BODY_LENGTH || b->state == BODY_DATA) {
			size_t take = b->left < n - i ? (size_t)b->left : n - i;
			b->left -= take;
			i += take;
			if (b->left == 0)
				b->state = b->state == BODY_LENGTH ? BODY_DONE : BODY_DATA_CR;
			continue;
		}
		/* A chunk-size line is bounded as ss_http_parse_chunk_size
		 * bounds it: its CR within the first 1023 bytes. */
		if (b->state == BODY_SIZE || b->state == BODY_SIZE_WS || b->state == BODY_EXT) {
			if (++b->line > CHUNK_LINE_MAX - 1)
				return SS_ERR;
		}
		int next = body_step(b, p[i]);
		if (next < 0)
			return SS_ERR;
		b->state = (uint8_t)next;
		i++;
	}
	*used = i;
	return b->state == BODY_DONE ? SS_OK : SS_AGAIN;
}

/* --- answers, on their way back --- */

enum {
	RESP_IDLE,   /* no request in flight */
	RESP_STATUS, /* the status line's first 13 bytes */
	RESP_REST,   /* the rest of a line nobody reads */
	RESP_NAME,   /* a field name, or the blank line that ends the head */
	RESP_VALUE,  /* a framing field's value */
	RESP_LF,     /* the LF after a CR */
	RESP_BODY,
	RESP_OPAQUE, /* until the origin closes */
};

enum { FIELD_STATUS, FIELD_OTHER, FIELD_LENGTH, FIELD_CODING, FIELD_NAME };

#define RESP_LENGTH 0x01  /* Content-Length seen */
#define RESP_CODING 0x02  /* Transfer-Encoding seen */
#define RESP_CHUNKED 0x04 /* ... and its last coding is chunked */
#define RESP_VALEND 0x08  /* the value's token ended (only space may follow) */
#define RESP_TOKLONG 0xff /* tlen: more than tok holds */

void ss_http_resp_init(ss_http_resp_t *r)
{
	memset(r, 0, sizeof(*r));
}

unsigned ss_http_resp_pending(const ss_http_resp_t *r)
{
	return r->pending;
}

bool ss_http_resp_opaque(const ss_http_resp_t *r)
{
	return r->state == RESP_OPAQUE;
}

/* A new head: its status line first. */
static void resp_head(ss_http_resp_t *r)
{
	r->state = RESP_STATUS;
	r->field = FIELD_STATUS;
	r->flags = 0;
	r->tlen = 0;
	r->status = 0;
	r->length = 0;
}

bool ss_http_resp_expect(ss_http_resp_t *r, bool head)
{
	if (r->pending >= SS_HTTP_RESP_MAX)
		return false;
	if (head)
		r->heads |= 1u << r->pending;
	r->pending++;
	if (r->state == RESP_IDLE)
		resp_head(r);
	return true;
}

/* The last answer's final bytes went by. */
static void resp_done(ss_http_resp_t *r)
{
	r->pending--;
	r->heads >>= 1;
	if (r->pending)
		resp_head(r);
	else
		r->state = RESP_IDLE;
}

/* "HTTP/1.x NNN" in tok. */
static bool resp_status(ss_http_resp_t *r)
{
	const uint8_t *t = r->tok;

	if (r->tlen < 12 || memcmp(t, "HTTP/1.", 7) != 0 || t[7] < '0' || t[7] > '9' ||
	    t[8] != ' ' || (r->tlen > 12 && t[12] != ' '))
		return false;
	r->status = 0;
	for (int i = 9; i < 12; i++) {
		if (t[i] < '0' || t[i] > '9')
			return false;
		r->status = (uint16_t)(r->status * 10 + (t[i] - '0'));
	}
	return r->status >= 100;
}

/* The head ended: what follows it. */
static void resp_head_end(ss_http_resp_t *r)
{
	if (r->status < 200) {
		/* An interim answer; the final one follows. 101: the rest is
		 * the protocol it switched to. */
		if (r->status == 101)
			r->state = RESP_OPAQUE;
		else
			resp_head(r);
		return;
	}
	if ((r->heads & 1) || r->status == 204 || r->status == 304) {
		resp_done(r);
		return;
	}
	memset(&r->body, 0, sizeof(r->body));
	if (r->flags & RESP_CODING) {
		/* A final coding other than chunked: the body runs to the close. */
		r->body.state = BODY_SIZE;
		r->state = r->flags & RESP_CHUNKED ? RESP_BODY : RESP_OPAQUE;
	} else if (r->flags & RESP_LENGTH) {
		if (r->length == 0) {
			resp_done(r);
			return;
		}
		r->body.state = BODY_LENGTH;
		r->body.left = r->length;
		r->state = RESP_BODY;
	} else {
		r->state = RESP_OPAQUE;
	}
}

/* A line of the head ended (at its CR or LF). false: malformed. */
static bool resp_line_end(ss_http_resp_t *r)
{
	uint64_t x;

	switch (r->field) {
	case FIELD_STATUS:
		if (r->status == 0 && !resp_status(r))
			return false;
		break;
	case FIELD_LENGTH:
		if (r->tlen == RESP_TOKLONG || http_number(r->tok, r->tlen, &x) != SS_OK)
			return false;
		if ((r->flags & RESP_LENGTH) && x != r->length)
			return false;
		r->length = x;
		r->flags |= RESP_LENGTH;
		break;
	case FIELD_CODING:
		r->flags |= RESP_CODING;
		if (r->tlen == 7 && memcmp(r->tok, "chunked", 7) == 0)
			r->flags |= RESP_CHUNKED;
		else
			r->flags &= (uint8_t)~RESP_CHUNKED;
		break;
	case FIELD_NAME:
		/* A blank line ends the head; a name without a colon is no field. */
		if (r->tlen)
			return false;
		resp_head_end(r);
		return true;
	default:
		break;
	}
	r->field = FIELD_NAME;
	r->flags &= (uint8_t)~RESP_VALEND;
	r->tlen = 0;
	r->state = RESP_NAME;
	return true;
}

/* One byte of a framing field's value. false: malformed. */
static bool resp_value(ss_http_resp_t *r, uint8_t c)
{
	if (c == ' ' || c == '\t') {
		if (r->tlen)
			r->flags |= RESP_VALEND;
		return true;
	}
	if (r->field == FIELD_CODING && c == ',') {
		r->tlen = 0;
		r->flags &= (uint8_t)~RESP_VALEND;
		return true;
	}
	bool ok = r->field == FIELD_LENGTH ? c >= '0' && c <= '9'
					   : http_tchar(c) || c == ';' || c == '=' || c == '"';
	if (!ok || (r->field == FIELD_LENGTH && (r->flags & RESP_VALEND)))
		return false;
	/* A coding's parameters or a space inside it: not chunked. */
	if (r->flags & RESP_VALEND || r->tlen >= sizeof(r->tok) || c == ';') {
		r->tlen = RESP_TOKLONG;
		return r->field == FIELD_CODING;
	}
	if (r->tlen != RESP_TOKLONG)
		r->tok[r->tlen++] = http_lower(c);
	return true;
}

/* One byte of a head. false: malformed. */
static bool resp_byte(ss_http_resp_t *r, uint8_t c)
{
	if (r->state == RESP_LF)
		return c == '\n' && resp_line_end(r);
	if (c == '\r' || c == '\n') {
		if (c == '\n')
			return resp_line_end(r);
		r->state = RESP_LF;
		return true;
	}
	switch (r->state) {
	case RESP_STATUS:
		/* "HTTP/1.x NNN", then a space before any reason phrase. */
		r->tok[r->tlen++] = c;
		if (r->tlen == 13) {
			if (!resp_status(r))
				return false;
			r->state = RESP_REST;
		}
		return true;
	case RESP_NAME:
		if (c == ':') {
			if (!r->tlen)
				return false;
			r->field = FIELD_OTHER;
			if (r->tlen == 14 && memcmp(r->tok, "content-length", 14) == 0)
				r->field = FIELD_LENGTH;
			else if (r->tlen == 17 && memcmp(r->tok, "transfer-encoding", 17) == 0)
				r->field = FIELD_CODING;
			r->tlen = 0;
			r->state = r->field == FIELD_OTHER ? RESP_REST : RESP_VALUE;
			return true;
		}
		/* A line that starts with white space folds onto the one
		 * before: obsolete, and not followed. */
		if (!http_tchar(c))
			return false;
		if (r->tlen < sizeof(r->tok))
			r->tok[r->tlen] = http_lower(c);
		if (r->tlen < 0xfe)
			r->tlen++;
		return true;
	case RESP_VALUE:
		return resp_value(r, c);
	default:
		return true; /* RESP_REST */
	}
}

int ss_http_resp_feed(ss_http_resp_t *r, const uint8_t *p, size_t n, size_t *used)
{
	size_t i = 0, u;

	while (i < n) {
		switch (r->state) {
		case RESP_IDLE:
			*used = i;
			return SS_OK;
		case RESP_OPAQUE:
			*used = n;
			return SS_AGAIN;
		case RESP_BODY: {
			int b = ss_http_body_feed(&r->body, p + i, n - i, &u);
			if (b == SS_ERR) {
				r->state = RESP_OPAQUE;
				continue;
			}
			i += u;
			if (b == SS_OK)
				resp_done(r);
			continue;
		}
		default:
			if (!resp_byte(r, p[i]))
				r->state = RESP_OPAQUE;
			i++;
		}
	}
	*used = n;
	return r->state == RESP_IDLE ? SS_OK : SS_AGAIN;
}

int ss_http_basic_login(const uint8_t *value, size_t len,
			uint8_t scratch[2 * SS_SOCKS5_FIELD_MAX + 2], ss_socks5_login_t *login)
{
	size_t i = 5, got = 0;
	const char *end = NULL;

	if (len < 6 || !http_ieq(value, 5, "basic") || value[5] != ' ')
		return SS_ERR;
	while (i < len && value[i] == ' ')
		i++;
	if (i == len ||
	    sodium_base642bin(scratch, 2 * SS_SOCKS5_FIELD_MAX + 1, (const char *)value + i,
			      len - i, NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != (const char *)value + len)
		return SS_ERR;
	const uint8_t *colon = memchr(scratch, ':', got);
	if (!colon)
		return SS_ERR;
	login->name = scratch;
	login->name_len = (size_t)(colon - scratch);
	login->pass = colon + 1;
	login->pass_len = got - login->name_len - 1;
	if (login->name_len == 0 || login->name_len > SS_SOCKS5_FIELD_MAX || login->pass_len == 0 ||
	    login->pass_len > SS_SOCKS5_FIELD_MAX)
		return SS_ERR;
	return SS_OK;
}

size_t ss_http_encode_status(int status, uint8_t *out, size_t cap)
{
	const char *reason;
	const char *extra = "";

	switch (status) {
	case 400:
		reason = "Bad Request";
		break;
	case 403:
		reason = "Forbidden";
		break;
	case 407:
		reason = "Proxy Authentication Required";
		extra = "Proxy-Authenticate: Basic realm=\"shadowsocks\"\r\n";
		break;
	case 431:
		reason = "Request Header Fields Too Large";
		break;
	case 501:
		reason = "Not Implemented";
		break;
	case 502:
		reason = "Bad Gateway";
		break;
	case 504:
		reason = "Gateway Timeout";
		break;
	default:
		status = 500;
		reason = "Internal Server Error";
		break;
	}
	int n = snprintf((char *)out, cap,
			 "HTTP/1.1 %d %s\r\n%sConnection: close\r\nContent-Length: 0\r\n\r\n",
			 status, reason, extra);
	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}
