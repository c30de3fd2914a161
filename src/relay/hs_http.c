#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto/primitives.h"
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
 * answers come back as they are. Kept alive, the next requests for the
 * same origin go the same way on the same outbound connection (pipelined
 * ones too). A request for another origin, a CONNECT, or one that does not
 * parse ends the stream instead: the origin gets a FIN after the requests
 * it has, its close after its answers ends the connection, and the client,
 * with no answer to that request, sends it again on a new connection. What
 * the client sends after the end is read and dropped. */

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
	ss_wipe(scratch, sizeof(scratch));
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
		ss_wipe(hs + n + rest, c->hs.fill - n - rest);
	c->hs.fill = (uint16_t)(n + rest);
	c->hs.stage = SS_STAGE_HTTP_PLAIN;
	c->in_framed = true;
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

/* Ends the stream toward the origin after the requests it has: a FIN, so
 * that it closes after its answers; the client's bytes are dropped. */
static int http_stop(ss_conn_t *c, const char *why)
{
	char peer[SS_ADDR_STRLEN];

	ss_debug("%s %s: %s: no more requests on this connection", c->action,
		 ss_conn_peer(c, peer, sizeof(peer)), why);
	if (c->dir[SS_IN].buf)
		ss_wipe(c->dir[SS_IN].buf + SS_HS_OFF, c->hs.fill);
	c->hs.fill = 0;
	c->in_next = false;
	c->in_over = true;
	shutdown(c->side[SS_OUT].fd, SHUT_WR);
	return SS_OK;
}

int ss_hs_http_next(ss_conn_t *c)
{
	uint8_t *hs = ss_conn_buf(c, SS_IN) + SS_HS_OFF;
	ss_http_req_t req;
	ssize_t got;
	size_t body;
	int r = ss_http_parse_request(hs, c->hs.fill, &req);

	if (r == SS_AGAIN) {
		if (c->hs.fill == SS_HS_CAP)
			return http_stop(c, "request head too long");
		do
			got = read(c->side[SS_IN].fd, hs + c->hs.fill, SS_HS_CAP - c->hs.fill);
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
			return c->hs.fill == SS_HS_CAP ? http_stop(c, "request head too long")
						       : SS_AGAIN;
	}
	if (r == SS_ERR)
		return http_stop(c, "malformed request");
	if (c->inst->cfg->n_socks_creds > 0 && !http_authorized(c, hs, &req))
		return http_stop(c, "request without a valid login");
	if (req.connect || !http_same_origin(&req.dst, &c->target))
		return http_stop(c, "request for another origin");

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
	ss_wipe(hs + left, c->hs.fill - left);
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
		ss_wipe(hs, c->hs.fill);
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
	ss_wipe(hs, req.head_len);
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
