/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec/secret.h"
#include "proto/http.h"
#include "proto/socks5_auth.h"
#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* ss-local's HTTP proxy front end: CONNECT host:port opens a tunnel
 * through the shared connect (hs_local.c: ACL, servers, early data). The head
 * is parsed in the handshake area; a refusal is a whole response with
 * Connection: close, and the connection ends after it.
 *
 * Any other method with an absolute http URI is forwarded to its origin:
 * the head rewritten to origin form, then its body as its framing says
 * (ss_http_body_t, fed every inbound byte by the pump's filter); the
 * origin's answers come back as they are, their framing followed
 * (ss_http_resp_t, fed every outbound byte by the other direction's
 * filter) so that the proxy knows when the last one in flight has ended.
 * Kept alive, the next requests for the same origin go the same way on the
 * same outbound connection (pipelined ones too). A request that cannot go
 * there is held, unread further, until every answer before it is out: then
 * one for another origin, or a CONNECT, ends the outbound leg and goes
 * through the connect anew (ACL, server, fresh codec state) as a first
 * request would; one that does not parse, or lacks a valid login, is
 * answered 400, 431 or 407 and the connection ends. An answer that runs
 * until the origin closes ends the connection with it: the client then
 * sends what it has left on a new one. */

/* The most one read of a forwarded request's stream takes: what follows
 * the end of a request waits in the handshake area, with room left there
 * for a head rewritten in place. */
#define HTTP_READ_MAX (SS_HS_LEN - 64)
_Static_assert(HTTP_READ_MAX <= SS_HS_READ_CAP, "a read's rest fits a first read");

/* What a held request waits for (http_hs_t.hold). */
enum {
	HTTP_HOLD_ROOM = 1, /* fewer than SS_HTTP_RESP_MAX requests in flight */
	HTTP_HOLD_SWITCH,   /* no answer in flight: then another outbound leg */
	HTTP_HOLD_400,      /* no answer in flight: then a refusal */
	HTTP_HOLD_431,
	HTTP_HOLD_407,
	HTTP_HOLD_407_NONE,
};

typedef struct http_hs {
	ss_local_hs_t local;
	bool plain;     /* a request forwarded to its origin, not a tunnel */
	uint8_t hold;   /* held: what the next request waits for */
	bool req_close; /* the request asked to close after it */
	/* next: a request ended, and the next one's head collects in the
	 * handshake area (local.fill bytes); over: the stream has ended, and
	 * what the client still sends is read and dropped; held: the next
	 * request waits, unread further, until the answers in flight are
	 * out. */
	bool next;
	bool over;
	bool held;
	ss_http_body_t body; /* the request body's framing */
	ss_http_resp_t resp; /* the answers to the requests in flight */
} http_hs_t;

_Static_assert(sizeof(http_hs_t) <= SS_HS_STATE_LEN, "the handshake area holds its state");

static const ss_pump_filter_t http_filters[2];

static const char http_established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

static http_hs_t *http_hs(ss_conn_t *c)
{
	return (http_hs_t *)(void *)c->hs;
}

/* An HTTP request starts with its method, in letters. */
static bool http_sniff(uint8_t b)
{
	return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
}

static void http_status(ss_conn_t *c, int status)
{
	uint8_t out[160];

	ss_hs_local_send(c, out, ss_http_encode_status(status, out, sizeof(out)));
}

static void http_refuse(ss_conn_t *c, int status, const char *why)
{
	http_status(c, status);
	ss_hs_local_end(c, why);
}

/* The status nearest to f. */
static int http_status_for(ss_local_fail_t f)
{
	switch (f) {
	case SS_LOCAL_NOT_ALLOWED:
		return 403;
	case SS_LOCAL_UNSUPPORTED:
		return 501;
	case SS_LOCAL_TIMED_OUT:
		return 504;
	default:
		return 502;
	}
}

static void http_fail(ss_conn_t *c, ss_local_fail_t f, const char *why)
{
	http_refuse(c, http_status_for(f), why);
}

/* Whether the request carries the login of a configured user. Every user
 * is compared in full (ss_socks5_login_check), and the decoded password is
 * wiped whatever the outcome. */
static bool http_authorized(const ss_conn_t *c, const uint8_t *hs, const ss_http_req_t *req)
{
	const ss_config_t *cfg = c->inst->cfg;
	uint8_t scratch[2 * SS_SOCKS5_FIELD_MAX + 2];
	ss_socks5_login_t login;
	bool ok = false;

	if (req->has_auth &&
	    ss_http_basic_login(hs + req->auth.off, req->auth.len, scratch, &login) == SS_OK)
		ok = ss_socks5_login_check(cfg->socks_creds, cfg->n_socks_creds, &login);
	ss_secret_wipe(scratch, sizeof(scratch));
	return ok;
}

/* The request's body after its head: how many of the n bytes at p belong
 * to it, and what comes after (next, over). SS_ERR: malformed. */
static int http_body_start(ss_conn_t *c, const ss_http_req_t *req, const uint8_t *p, size_t n,
			   size_t *body)
{
	http_hs_t *h = http_hs(c);
	size_t used;

	ss_http_body_init(&h->body, req);
	h->req_close = req->close;
	h->next = h->over = false;
	int r = ss_http_body_feed(&h->body, p, n, &used);
	if (r == SS_ERR)
		return SS_ERR;
	*body = n;
	if (r == SS_OK) {
		*body = used;
		h->next = !req->close;
		h->over = req->close;
	}
	return SS_OK;
}

/* The first request: its head rewritten in place, then the body bytes that
 * came with it, then (from local.early) whatever followed, kept for later;
 * then the connect. */
static void http_plain(ss_conn_t *c, uint8_t *hs, const ss_http_req_t *req)
{
	http_hs_t *h = http_hs(c);
	uint8_t head[SS_HS_LEN + SS_HTTP_REWRITE_GROWTH];
	size_t n = ss_http_rewrite_head(hs, req, req->close, head, sizeof(head));
	size_t rest = h->local.fill - req->head_len, body;

	if (http_body_start(c, req, hs + req->head_len, rest, &body) != SS_OK) {
		http_refuse(c, 400, "malformed chunked HTTP request body");
		return;
	}
	if (n == 0 || n + rest > SS_HS_CAP) {
		http_refuse(c, 431, "HTTP request head too long once rewritten");
		return;
	}
	memmove(hs + n, hs + req->head_len, rest);
	memcpy(hs, head, n);
	/* What is left of the client's head held its credentials. */
	if (h->local.fill > n + rest)
		ss_secret_wipe(hs + n + rest, h->local.fill - n - rest);
	h->local.fill = (uint16_t)(n + rest);
	h->plain = true;
	c->filter = http_filters;
	ss_http_resp_init(&h->resp);
	ss_http_resp_expect(&h->resp, req->head);
	c->target = req->dst;
	ss_hs_local_connect(c, SS_LOCAL_CMD_CONNECT, n + body);
	/* local.early, set by the connect, is where the next request starts. */
}

static bool http_same_origin(const ss_addr_t *a, const ss_addr_t *b)
{
	if (a->atyp != b->atyp || a->port != b->port)
		return false;
	if (a->atyp == SS_ATYP_DOMAIN)
		return a->domain_len == b->domain_len && strcasecmp(a->domain, b->domain) == 0;
	return memcmp(a->v6, b->v6, a->atyp == SS_ATYP_IPV4 ? 4 : 16) == 0;
}

/* The request in the handshake area waits for the answers in flight
 * (http_answered). */
static int http_hold(ss_conn_t *c, uint8_t what)
{
	http_hs_t *h = http_hs(c);

	h->held = true;
	h->hold = what;
	return SS_AGAIN;
}

/* Reads more of the next request's head into the handshake area. SS_OK:
 * new bytes (or the client's eof, with the area given up); SS_AGAIN: none
 * yet; SS_ERR: the read failed. */
static int http_next_read(ss_conn_t *c, uint8_t *hs)
{
	ss_local_hs_t *l = &http_hs(c)->local;
	ssize_t got;

	do
		got = read(c->side[SS_IN].fd, hs + l->fill, SS_HS_READ_CAP - l->fill);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return SS_ERR;
		/* A kept-alive client between requests holds no buffer. */
		if (!l->fill)
			ss_conn_buf_release(c, SS_IN);
		return SS_AGAIN;
	}
	if (got == 0) {
		c->dir[SS_IN].eof = true;
		l->fill = 0;
		ss_conn_buf_release(c, SS_IN);
		return SS_OK;
	}
	l->fill += (uint16_t)got;
	ss_conn_touch(c);
	return SS_OK;
}

/* Kept alive: the next request, for the same origin, goes on through the
 * lead area, or is held until the answers in flight are out. SS_OK: done
 * (or over, or the client's eof); SS_AGAIN: wait for the client, or held;
 * SS_ERR: the connection closes. */
static int http_next_request(ss_conn_t *c)
{
	http_hs_t *h = http_hs(c);
	uint8_t *hs = ss_conn_buf(c, SS_IN) + SS_HS_OFF;
	ss_http_req_t req;
	size_t body;
	int r = ss_http_parse_request(hs, h->local.fill, &req);

	/* As for a first request: a held one goes through http_inbound. */
	if (r == SS_AGAIN) {
		if (h->local.fill >= SS_HS_READ_CAP)
			return http_hold(c, HTTP_HOLD_431);
		r = http_next_read(c, hs);
		if (r != SS_OK || c->dir[SS_IN].eof)
			return r;
		r = ss_http_parse_request(hs, h->local.fill, &req);
		if (r == SS_AGAIN)
			return h->local.fill >= SS_HS_READ_CAP ? http_hold(c, HTTP_HOLD_431)
							       : SS_AGAIN;
	}
	if (r == SS_ERR)
		return http_hold(c, HTTP_HOLD_400);
	if (c->inst->cfg->n_socks_creds > 0 && !http_authorized(c, hs, &req))
		return http_hold(c, req.has_auth ? HTTP_HOLD_407 : HTTP_HOLD_407_NONE);
	if (req.connect || !http_same_origin(&req.dst, &c->target))
		return http_hold(c, HTTP_HOLD_SWITCH);
	if (!ss_http_resp_expect(&h->resp, req.head))
		return http_hold(c, HTTP_HOLD_ROOM);

	uint8_t *lead = ss_pump_lead_area(c, SS_IN);
	size_t rest = h->local.fill - req.head_len;
	size_t n =
	    ss_http_rewrite_head(hs, &req, req.close, lead, SS_HS_LEN + SS_HTTP_REWRITE_GROWTH);
	if (n == 0 || http_body_start(c, &req, hs + req.head_len, rest, &body) != SS_OK)
		return SS_ERR;
	memcpy(lead + n, hs + req.head_len, body);
	c->dir[SS_IN].lead = (uint16_t)(n + body);
	/* What follows is the start of the request after it. */
	size_t left = rest - body;
	memmove(hs, hs + req.head_len + body, left);
	ss_secret_wipe(hs + left, h->local.fill - left);
	h->local.fill = (uint16_t)left;
	return SS_OK;
}

static void http_inbound(ss_conn_t *c, uint8_t *hs)
{
	http_hs_t *h = http_hs(c);
	ss_http_req_t req;
	char why[96];
	int r = ss_http_parse_request(hs, h->local.fill, &req);

	if (r == SS_AGAIN) {
		if (h->local.fill == SS_HS_READ_CAP) {
			snprintf(why, sizeof(why), "HTTP request head over %d bytes",
				 SS_HS_READ_CAP);
			http_refuse(c, 431, why);
		}
		return;
	}
	if (r == SS_ERR) {
		http_refuse(c, 400, "malformed HTTP proxy request");
		return;
	}
	if (c->inst->cfg->n_socks_creds > 0 && !http_authorized(c, hs, &req)) {
		/* As any failed proxy login: the refusal log, never the name. */
		ss_secret_wipe(hs, h->local.fill);
		http_status(c, 407);
		shutdown(c->side[SS_IN].fd, SHUT_WR);
		ss_conn_refuse(c, req.has_auth ? "HTTP proxy login failed"
					       : "HTTP client sent no proxy login");
		return;
	}
	if (!req.connect) {
		http_plain(c, hs, &req);
		return;
	}
	c->target = req.dst;
	/* The head goes no further; its credentials need not stay. */
	ss_secret_wipe(hs, req.head_len);
	ss_hs_local_connect(c, SS_LOCAL_CMD_CONNECT, req.head_len);
}

static void http_connected(ss_conn_t *c)
{
	http_hs_t *h = http_hs(c);
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	if (!h->plain) {
		ss_hs_local_send(c, (const uint8_t *)http_established,
				 sizeof(http_established) - 1);
		ss_hs_local_stream(c);
		return;
	}
	/* The first request goes on; what followed it stays in the handshake
	 * area for the next one. */
	uint8_t first[SS_HS_LEN];
	size_t n = h->local.early, left = h->local.fill - n;

	memcpy(first, hs, n);
	memmove(hs, hs + n, left);
	h->local.fill = (uint16_t)(h->next ? left : 0);
	ss_conn_client_stream(c, first, n);
}

/* The held request ends the connection: a refusal (status 0: none, the
 * client cannot be answered), then the client's bytes read away. */
static void http_held_end(ss_conn_t *c, int status, bool refused, const char *why)
{
	http_hs_t *h = http_hs(c);

	if (c->dir[SS_IN].buf)
		ss_secret_wipe(c->dir[SS_IN].buf + SS_HS_OFF, h->local.fill);
	h->local.fill = 0;
	if (status)
		http_status(c, status);
	shutdown(c->side[SS_IN].fd, SHUT_WR);
	if (refused)
		ss_conn_refuse(c, why);
	else
		ss_conn_drain(c, why);
}

/* A held request for another origin, or a CONNECT: the outbound leg ends,
 * and the request goes through the connect as a first one would. */
static void http_switch(ss_conn_t *c)
{
	http_hs_t *h = http_hs(c);
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	ss_conn_outbound_end(c);
	h->plain = h->next = h->over = h->held = false;
	http_inbound(c, hs);
}

/* The answers in flight are out, or the origin has closed: a held request
 * is sent to its origin, or answered. true when that took the connection
 * over. */
static bool http_answered(ss_conn_t *c)
{
	http_hs_t *h = http_hs(c);
	const ss_dir_t *out = &c->dir[SS_OUT];
	unsigned pending = ss_http_resp_pending(&h->resp);

	if (h->hold == HTTP_HOLD_ROOM && !out->eof) {
		if (pending >= SS_HTTP_RESP_MAX)
			return false;
		/* The pump takes it up again, after this wake-up. */
		h->held = false;
		ss_pump_resume(c, SS_IN);
		return false;
	}
	if (pending && !out->eof)
		return false;
	if (pending || out->shut) {
		/* The last answer ran until the origin closed, or the client
		 * already has our FIN: only the end of the connection can
		 * follow. */
		http_held_end(c, 0, false, "the origin closed; the next request goes unanswered");
		return true;
	}
	switch (h->hold) {
	case HTTP_HOLD_SWITCH:
		http_switch(c);
		return true;
	case HTTP_HOLD_431:
		http_held_end(c, 431, false,
			      "HTTP request head too long on a kept-alive connection");
		return true;
	case HTTP_HOLD_407:
		http_held_end(c, 407, true, "HTTP proxy login failed");
		return true;
	case HTTP_HOLD_407_NONE:
		http_held_end(c, 407, true, "HTTP client sent no proxy login");
		return true;
	default:
		http_held_end(c, 400, false, "malformed HTTP request on a kept-alive connection");
		return true;
	}
}

/* The requests' direction: each request's body is followed to its end;
 * then the next request's head is read and parsed here (it goes on
 * through the lead area), or held. */
static ss_filter_result_t http_requests_next(ss_conn_t *c, int d)
{
	http_hs_t *h = http_hs(c);
	const ss_dir_t *dir = &c->dir[d];

	if (!h->next)
		return SS_FILTER_KEEP;
	/* The lead still waiting goes out before the next request's head
	 * takes the lead area. */
	if (dir->lead || dir->hdr_pending)
		return SS_FILTER_END;
	if (h->held)
		return SS_FILTER_HOLD;
	int r = http_next_request(c);
	if (r == SS_OK)
		return SS_FILTER_END;
	if (r == SS_AGAIN)
		return h->held ? SS_FILTER_HOLD : SS_FILTER_WAIT;
	return SS_FILTER_ERR;
}

/* Where the request's body ends: what follows is the next request's start,
 * kept in the handshake area, or dropped once the stream is over. */
static ss_filter_result_t http_requests_data(ss_conn_t *c, int d, uint8_t *p, size_t n,
					     size_t *keep)
{
	http_hs_t *h = http_hs(c);

	if (h->over) {
		*keep = 0;
		return SS_FILTER_END;
	}
	int r = ss_http_body_feed(&h->body, p, n, keep);
	if (r == SS_ERR)
		return SS_FILTER_ERR;
	if (r == SS_AGAIN)
		return SS_FILTER_KEEP;
	h->next = !h->req_close;
	h->over = h->req_close;
	if (h->next && n > *keep) {
		memcpy(c->dir[d].buf + SS_HS_OFF, p + *keep, n - *keep);
		h->local.fill = (uint16_t)(n - *keep);
	}
	return SS_FILTER_END;
}

static bool http_requests_idle(ss_conn_t *c, int d)
{
	(void)c;
	(void)d;
	return false;
}

static bool http_requests_keep(const ss_conn_t *c, int d)
{
	const http_hs_t *h = (const http_hs_t *)(const void *)c->hs;

	(void)d;
	return h->next && h->local.fill;
}

static ss_filter_result_t http_answers_next(ss_conn_t *c, int d)
{
	(void)c;
	(void)d;
	return SS_FILTER_KEEP;
}

/* Where the answers in flight end: what follows is dropped. */
static ss_filter_result_t http_answers_data(ss_conn_t *c, int d, uint8_t *p, size_t n, size_t *keep)
{
	int r = ss_http_resp_feed(&http_hs(c)->resp, p, n, keep);

	(void)d;
	return r == SS_AGAIN ? SS_FILTER_KEEP : SS_FILTER_END;
}

/* A held request may go once every answer before it is out. */
static bool http_answers_idle(ss_conn_t *c, int d)
{
	(void)d;
	return http_hs(c)->held && http_answered(c);
}

static bool http_answers_keep(const ss_conn_t *c, int d)
{
	(void)c;
	(void)d;
	return false;
}

static const ss_pump_filter_t http_filters[2] = {
    [SS_IN] =
	{
	    .read_max = HTTP_READ_MAX,
	    .next = http_requests_next,
	    .data = http_requests_data,
	    .idle = http_requests_idle,
	    .keeps = http_requests_keep,
	},
    [SS_OUT] =
	{
	    .read_max = SS_RELAY_BUF_SIZE,
	    .next = http_answers_next,
	    .data = http_answers_data,
	    .idle = http_answers_idle,
	    .keeps = http_answers_keep,
	},
};

const ss_local_front_t ss_local_http = {
    .name = "http",
    .sniff = http_sniff,
    .inbound = http_inbound,
    .fail = http_fail,
    .connected = http_connected,
};
