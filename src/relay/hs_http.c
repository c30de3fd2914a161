/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec/secret.h"
#include "proto/http.h"
#include "proto/socks5.h"
#include "relay/conn.h"
#include "relay/hs_local.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* ss-local's port as an HTTP proxy: CONNECT host:port opens a tunnel
 * through the same connect as SOCKS (ACL, servers, early data). The head
 * is parsed in the handshake area; a refusal is a whole response with
 * Connection: close, and the connection ends after it.
 *
 * Any other method with an absolute http URI is forwarded to its origin:
 * the head rewritten to origin form, then its body as its framing says
 * (ss_http_body_t, fed every inbound byte by the pump); the origin's
 * answers come back as they are, their framing followed (ss_http_resp_t,
 * fed every outbound byte) so that the proxy knows when the last one in
 * flight has ended. Kept alive, the next requests for the same origin go
 * the same way on the same outbound connection (pipelined ones too). A
 * request that cannot go there is held, unread further, until every
 * answer before it is out: then one for another origin, or a CONNECT,
 * ends the outbound leg and goes through the connect anew (ACL, server,
 * fresh codec state) as a first request would; one that does not parse, or
 * lacks a valid login, is answered 400, 431 or 407 and the connection ends.
 * An answer that runs until the origin closes ends the connection with it:
 * the client then sends what it has left on a new one. */

/* What a held request waits for (c->hs.hold). */
enum {
	HTTP_HOLD_ROOM = 1, /* fewer than SS_HTTP_RESP_MAX requests in flight */
	HTTP_HOLD_SWITCH,   /* no answer in flight: then another outbound leg */
	HTTP_HOLD_400,      /* no answer in flight: then a refusal */
	HTTP_HOLD_431,
	HTTP_HOLD_407,
	HTTP_HOLD_407_NONE,
};

static const char http_established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

static void http_status(ss_conn_t *c, int status)
{
	uint8_t out[160];

	ss_hs_local_send(c, out, ss_http_encode_status(status, out, sizeof(out)));
}

void ss_hs_http_fail(ss_conn_t *c, int status, const char *why)
{
	http_status(c, status);
	ss_hs_local_end(c, why);
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
 * to it, and what comes after (in_next, in_over). SS_ERR: malformed. */
static int http_body_start(ss_conn_t *c, const ss_http_req_t *req, const uint8_t *p, size_t n,
			   size_t *body)
{
	size_t used;

	ss_http_body_init(&c->hs.body, req);
	c->hs.req_close = req->close;
	c->in_next = c->in_over = false;
	int r = ss_http_body_feed(&c->hs.body, p, n, &used);
	if (r == SS_ERR)
		return SS_ERR;
	*body = n;
	if (r == SS_OK) {
		*body = used;
		c->in_next = !req->close;
		c->in_over = req->close;
	}
	return SS_OK;
}

/* The first request: its head rewritten in place, then the body bytes that
 * came with it, then (from hs.early) whatever followed, kept for later;
 * then the connect. */
static void http_plain(ss_conn_t *c, uint8_t *hs, const ss_http_req_t *req)
{
	uint8_t head[SS_HS_LEN + SS_HTTP_REWRITE_GROWTH];
	size_t n = ss_http_rewrite_head(hs, req, req->close, head, sizeof(head));
	size_t rest = c->hs.fill - req->head_len, body;

	if (http_body_start(c, req, hs + req->head_len, rest, &body) != SS_OK) {
		ss_hs_http_fail(c, 400, "malformed chunked HTTP request body");
		return;
	}
	if (n == 0 || n + rest > SS_HS_CAP) {
		ss_hs_http_fail(c, 431, "HTTP request head too long once rewritten");
		return;
	}
	memmove(hs + n, hs + req->head_len, rest);
	memcpy(hs, head, n);
	/* What is left of the client's head held its credentials. */
	if (c->hs.fill > n + rest)
		ss_secret_wipe(hs + n + rest, c->hs.fill - n - rest);
	c->hs.fill = (uint16_t)(n + rest);
	c->hs.stage = SS_STAGE_HTTP_PLAIN;
	c->in_framed = true;
	c->out_framed = true;
	ss_http_resp_init(&c->hs.resp);
	ss_http_resp_expect(&c->hs.resp, req->head);
	c->target = req->dst;
	ss_hs_local_connect(c, SS_SOCKS5_CMD_CONNECT, n + body);
	/* hs.early, set by the connect, is where the next request starts. */
}

int ss_hs_http_stream(ss_conn_t *c, const uint8_t *p, size_t n, size_t *keep)
{
	int r = ss_http_body_feed(&c->hs.body, p, n, keep);

	if (r == SS_OK) {
		c->in_next = !c->hs.req_close;
		c->in_over = c->hs.req_close;
	}
	return r;
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
 * (ss_hs_http_idle). */
static int http_hold(ss_conn_t *c, uint16_t what)
{
	c->in_hold = true;
	c->hs.hold = what;
	return SS_AGAIN;
}

int ss_hs_http_next(ss_conn_t *c)
{
	uint8_t *hs = ss_conn_buf(c, SS_IN) + SS_HS_OFF;
	ss_http_req_t req;
	ssize_t got;
	size_t body;
	int r = ss_http_parse_request(hs, c->hs.fill, &req);

	/* As for a first request: a held one goes through ss_hs_http_inbound. */
	if (r == SS_AGAIN) {
		if (c->hs.fill >= SS_HS_READ_CAP)
			return http_hold(c, HTTP_HOLD_431);
		do
			got = read(c->side[SS_IN].fd, hs + c->hs.fill, SS_HS_READ_CAP - c->hs.fill);
		while (got < 0 && errno == EINTR);
		if (got < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return SS_ERR;
			/* A kept-alive client between requests holds no buffer. */
			if (!c->hs.fill)
				ss_conn_buf_release(c, SS_IN);
			return SS_AGAIN;
		}
		if (got == 0) {
			c->dir[SS_IN].eof = true;
			c->hs.fill = 0;
			ss_conn_buf_release(c, SS_IN);
			return SS_OK;
		}
		c->hs.fill += (uint16_t)got;
		ss_conn_touch(c);
		r = ss_http_parse_request(hs, c->hs.fill, &req);
		if (r == SS_AGAIN)
			return c->hs.fill >= SS_HS_READ_CAP ? http_hold(c, HTTP_HOLD_431)
							    : SS_AGAIN;
	}
	if (r == SS_ERR)
		return http_hold(c, HTTP_HOLD_400);
	if (c->inst->cfg->n_socks_creds > 0 && !http_authorized(c, hs, &req))
		return http_hold(c, req.has_auth ? HTTP_HOLD_407 : HTTP_HOLD_407_NONE);
	if (req.connect || !http_same_origin(&req.dst, &c->target))
		return http_hold(c, HTTP_HOLD_SWITCH);
	if (!ss_http_resp_expect(&c->hs.resp, req.head))
		return http_hold(c, HTTP_HOLD_ROOM);

	uint8_t *lead = ss_pump_lead_area(c, SS_IN);
	size_t rest = c->hs.fill - req.head_len;
	size_t n =
	    ss_http_rewrite_head(hs, &req, req.close, lead, SS_HS_LEN + SS_HTTP_REWRITE_GROWTH);
	if (n == 0 || http_body_start(c, &req, hs + req.head_len, rest, &body) != SS_OK)
		return SS_ERR;
	memcpy(lead + n, hs + req.head_len, body);
	c->dir[SS_IN].lead = (uint16_t)(n + body);
	/* What follows is the start of the request after it. */
	size_t left = rest - body;
	memmove(hs, hs + req.head_len + body, left);
	ss_secret_wipe(hs + left, c->hs.fill - left);
	c->hs.fill = (uint16_t)left;
	return SS_OK;
}

void ss_hs_http_inbound(ss_conn_t *c, uint8_t *hs)
{
	ss_http_req_t req;
	char why[96];
	int r = ss_http_parse_request(hs, c->hs.fill, &req);

	if (r == SS_AGAIN) {
		if (c->hs.fill == SS_HS_READ_CAP) {
			snprintf(why, sizeof(why), "HTTP request head over %d bytes",
				 SS_HS_READ_CAP);
			ss_hs_http_fail(c, 431, why);
		}
		return;
	}
	if (r == SS_ERR) {
		ss_hs_http_fail(c, 400, "malformed HTTP proxy request");
		return;
	}
	if (c->inst->cfg->n_socks_creds > 0 && !http_authorized(c, hs, &req)) {
		/* As a failed SOCKS5 login: the refusal log, never the name. */
		ss_secret_wipe(hs, c->hs.fill);
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
	ss_hs_local_connect(c, SS_SOCKS5_CMD_CONNECT, req.head_len);
}

void ss_hs_http_connected(ss_conn_t *c)
{
	uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;

	if (c->hs.stage == SS_STAGE_HTTP) {
		ss_hs_local_send(c, (const uint8_t *)http_established,
				 sizeof(http_established) - 1);
		ss_conn_client_stream(c, hs + c->hs.early, c->hs.fill - c->hs.early);
		return;
	}
	/* The first request goes on; what followed it stays in the handshake
	 * area for the next one. */
	uint8_t first[SS_HS_LEN];
	size_t n = c->hs.early, left = c->hs.fill - n;

	memcpy(first, hs, n);
	memmove(hs, hs + n, left);
	c->hs.fill = (uint16_t)(c->in_next ? left : 0);
	ss_conn_client_stream(c, first, n);
}

int ss_hs_http_answers(ss_conn_t *c, const uint8_t *p, size_t n, size_t *keep)
{
	return ss_http_resp_feed(&c->hs.resp, p, n, keep);
}

/* The held request ends the connection: a refusal (status 0: none, the
 * client cannot be answered), then the client's bytes read away. */
static void http_held_end(ss_conn_t *c, int status, bool refused, const char *why)
{
	if (c->dir[SS_IN].buf)
		ss_secret_wipe(c->dir[SS_IN].buf + SS_HS_OFF, c->hs.fill);
	c->hs.fill = 0;
	if (status)
		http_status(c, status);
	shutdown(c->side[SS_IN].fd, SHUT_WR);
	if (refused)
		ss_conn_refuse(c, why);
	else
		ss_conn_drain(c, why);
}

bool ss_hs_http_idle(ss_conn_t *c)
{
	const ss_http_resp_t *r = &c->hs.resp;
	const ss_dir_t *out = &c->dir[SS_OUT];
	unsigned pending = ss_http_resp_pending(r);

	if (c->hs.hold == HTTP_HOLD_ROOM && !out->eof) {
		if (pending >= SS_HTTP_RESP_MAX)
			return false;
		/* The pump takes it up again, after this wake-up. */
		c->in_hold = false;
		ev_feed_event(c->inst->loop, &c->side[SS_IN].rio, EV_READ);
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
	switch (c->hs.hold) {
	case HTTP_HOLD_SWITCH: {
		uint8_t *hs = c->dir[SS_IN].buf + SS_HS_OFF;
		ss_conn_outbound_end(c);
		c->hs.stage = SS_STAGE_HTTP;
		ss_hs_http_inbound(c, hs);
		return true;
	}
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
