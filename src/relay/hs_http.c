#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

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
 * the head rewritten to origin form with "Connection: close", then its
 * body as its framing says (ss_http_body_t, fed every inbound byte by the
 * pump); the origin's answer comes back as it is, and its close ends the
 * connection. One request per connection: what a client pipelines after
 * it is read and dropped, as the origin's close tells the client to send
 * it again. */

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

/* The request head rewritten in place, with the body bytes that came with
 * it after it (and none of what follows the body), then the connect. */
static void http_plain(ss_conn_t *c, uint8_t *hs, const ss_http_req_t *req)
{
	uint8_t head[SS_HS_LEN + SS_HTTP_REWRITE_GROWTH];
	size_t n = ss_http_rewrite_head(hs, req, true, head, sizeof(head));
	size_t body = c->hs.fill - req->head_len, used;

	ss_http_body_init(&c->hs.body, req);
	int r = ss_http_body_feed(&c->hs.body, hs + req->head_len, body, &used);
	if (r == SS_ERR) {
		ss_hs_http_fail(c, 400, "malformed chunked HTTP request body");
		return;
	}
	if (r == SS_OK) {
		body = used;
		c->in_over = true;
	}
	if (n == 0 || n + body > SS_HS_CAP) {
		ss_hs_http_fail(c, 431, "HTTP request head too long once rewritten");
		return;
	}
	memmove(hs + n, hs + req->head_len, body);
	memcpy(hs, head, n);
	/* What is left of the client's head held its credentials. */
	if (c->hs.fill > n + body)
		ss_wipe(hs + n + body, c->hs.fill - n - body);
	c->hs.fill = (uint16_t)(n + body);
	c->hs.stage = SS_STAGE_HTTP_PLAIN;
	c->in_framed = true;
	c->target = req->dst;
	ss_hs_local_connect(c, SS_SOCKS5_CMD_CONNECT, 0);
}

int ss_hs_http_stream(ss_conn_t *c, const uint8_t *p, size_t n, size_t *keep)
{
	return ss_http_body_feed(&c->hs.body, p, n, keep);
}

void ss_hs_http_inbound(ss_conn_t *c, uint8_t *hs)
{
	ss_http_req_t req;
	char why[96];
	int r = ss_http_parse_request(hs, c->hs.fill, &req);

	if (r == SS_AGAIN) {
		if (c->hs.fill == SS_HS_CAP) {
			snprintf(why, sizeof(why), "HTTP request head over %d bytes", SS_HS_CAP);
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

	if (c->hs.stage == SS_STAGE_HTTP)
		ss_hs_local_send(c, (const uint8_t *)http_established,
				 sizeof(http_established) - 1);
	ss_conn_client_stream(c, hs + c->hs.early, c->hs.fill - c->hs.early);
}
