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
 * Connection: close, and the connection ends after it. */

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
		ss_hs_http_fail(c, 501, "HTTP request other than CONNECT");
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

	ss_hs_local_send(c, (const uint8_t *)http_established, sizeof(http_established) - 1);
	ss_conn_client_stream(c, hs + c->hs.early, c->hs.fill - c->hs.early);
}
