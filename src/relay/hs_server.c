#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "relay/conn.h"
#include "relay/instance.h"
#include "util/log.h"
#include "util/result.h"

/* ss-server: decode the client's stream until the address header is whole,
 * then connect to the target. Decoded plaintext is gathered at the front of
 * the inbound buffer (dir->keep bytes); the undecoded rest follows it. */

/* SIP004: STAGE_FIRST until the first chunk has authenticated, when its
 * salt is checked against the replay pool and recorded. */
enum { STAGE_FIRST, STAGE_HEADER };

static void server_accepted(ss_conn_t *c)
{
	c->hs_stage = STAGE_FIRST;
	c->action = "server";
}

/* Reads what the client sent into the inbound buffer. true when there are
 * new bytes; false when the connection waits or has been closed. */
static bool server_read(ss_conn_t *c)
{
	ss_dir_t *dir = &c->dir[SS_IN];
	uint8_t *buf = ss_conn_buf(c, SS_IN);
	size_t want = SS_RELAY_BUF_SIZE - dir->rend;
	ssize_t n;

	do
		n = read(c->side[SS_IN].fd, buf + dir->rend, want);
	while (n < 0 && errno == EINTR);
	/* A short read emptied the socket: once the first flight is written,
	 * the pump waits for the watcher rather than read EAGAIN. */
	dir->drained = n > 0 && (size_t)n < want;
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			ss_conn_close(c, "reading from the client failed");
		else if (!dir->rend)
			ss_conn_buf_release(c, SS_IN);
		return false;
	}
	if (n == 0) {
		ss_conn_close(c, dir->rend ? "client closed before a whole request" : NULL);
		return false;
	}
	dir->rend += n;
	ss_conn_touch(c);
	return true;
}

/* Keeps the undecoded bytes for the next read, after the kept plaintext. */
static void server_wait_more(ss_dir_t *dir)
{
	size_t left = dir->rend - dir->rpos;

	memmove(dir->buf + dir->keep, dir->buf + dir->rpos, left);
	dir->rpos = dir->keep;
	dir->rend = dir->keep + left;
}

static void server_log_connect(ss_conn_t *c, const ss_2022_user_t *user)
{
	char peer[SS_ADDR_STRLEN], target[SS_ADDR_STRLEN];

	if (!ss_log_enabled(SS_LOG_INFO))
		return;
	ss_conn_peer(c, peer, sizeof(peer));
	ss_addr_format(&c->target, target, sizeof(target));
	if (user)
		ss_info("server %s: user %s: connect %s", peer, (const char *)user->data, target);
	else
		ss_info("server %s: connect %s", peer, target);
}

/* SIP004: the address header is the start of the decoded plaintext, which
 * may come in several chunks. */
static void server_inbound_aead(ss_conn_t *c)
{
	struct ss_instance *inst = c->inst;
	ss_dir_t *dir = &c->dir[SS_IN];
	ss_aead_stream_t *s = dir->v1;
	uint8_t *buf = dir->buf;
	ss_span_t spans[SS_DIR_MAX_IOV];
	size_t consumed, ns, used = 0;
	int r;

	do {
		r = ss_aead_dec(s, buf + dir->rpos, dir->rend - dir->rpos, &consumed, spans,
				SS_ARRAY_LEN(spans), &ns);
		/* Only a salt whose first chunk authenticated is recorded:
		 * junk from peers without the key never displaces one. */
		if (c->hs_stage == STAGE_FIRST && ns) {
			c->hs_stage = STAGE_HEADER;
			if (ss_saltpool_check_add(&inst->saltpool, s->salt, s->method->salt_len,
						  (uint64_t)ev_now(inst->loop)) != 0) {
				ss_conn_drain(c, "repeated salt, possible replay attack");
				return;
			}
		}
		/* A failure ends the stream, but what authenticated before it
		 * (in an earlier read or call) stands, as it would have with
		 * the bytes split otherwise: the pump meets the failure next. */
		if (r != SS_OK)
			break;
		dir->rpos += consumed;
		for (size_t i = 0; i < ns; i++) {
			memmove(buf + dir->keep, spans[i].ptr, spans[i].len);
			dir->keep += spans[i].len;
		}
	} while (ns == SS_ARRAY_LEN(spans));

	int h = ss_addr_parse(buf, dir->keep, &c->target, &used);
	if (h == SS_ERR) {
		ss_conn_drain(c, "invalid address header");
		return;
	}
	if (h == SS_AGAIN) {
		if (r != SS_OK)
			ss_conn_drain(c,
				      "decryption failed (wrong key or not a Shadowsocks client)");
		else
			server_wait_more(dir);
		return;
	}
	server_log_connect(c, NULL);
	/* The payload that came with the header is written first. */
	dir->bytes = dir->keep - used;
	if (dir->keep == used)
		dir->keep = 0;
	else {
		dir->iov[0] = (struct iovec){buf + used, dir->keep - used};
		dir->iov_i = 0;
		dir->iov_n = 1;
	}
	ss_conn_connect_addr(c, &c->target);
}

/* SIP022: the codec checks the whole request header (and the salt pool)
 * and hands over the target; the initial payload and any chunks after it
 * are written first. */
static void server_inbound_2022(ss_conn_t *c)
{
	ss_dir_t *dir = &c->dir[SS_IN];
	ss_2022_stream_t *s = dir->v2;
	ss_span_t spans[SS_DIR_MAX_IOV];
	ss_2022_header_t hdr;
	size_t consumed, ns;
	char why[64];

	if (ss_2022_dec(s, dir->buf + dir->rpos, dir->rend - dir->rpos,
			(uint64_t)ev_now(c->inst->loop), &consumed, spans, SS_ARRAY_LEN(spans), &ns,
			&hdr) != SS_OK) {
		snprintf(why, sizeof(why), "request refused: %s", ss_2022_strerror(s->err));
		ss_conn_drain(c, why);
		return;
	}
	dir->rpos += consumed;
	if (!hdr.done) {
		server_wait_more(dir);
		return;
	}
	c->target = hdr.target;
	server_log_connect(c, hdr.user);
	dir->iov_i = dir->iov_n = 0;
	for (size_t i = 0; i < ns; i++) {
		dir->iov[dir->iov_n++] = (struct iovec){spans[i].ptr, spans[i].len};
		dir->bytes += spans[i].len;
	}
	ss_conn_connect_addr(c, &c->target);
}

/* Method none: the address header in the clear, then the payload. */
static void server_inbound_plain(ss_conn_t *c)
{
	ss_dir_t *dir = &c->dir[SS_IN];
	size_t used;
	int r = ss_addr_parse(dir->buf, dir->rend, &c->target, &used);

	if (r == SS_AGAIN) {
		if (dir->rend == SS_RELAY_BUF_SIZE)
			ss_conn_close(c, "address header too long");
		return;
	}
	if (r == SS_ERR) {
		ss_conn_close(c, "invalid address header");
		return;
	}
	server_log_connect(c, NULL);
	dir->iov_i = dir->iov_n = 0;
	if (dir->rend > used) {
		dir->iov[dir->iov_n++] = (struct iovec){dir->buf + used, dir->rend - used};
		dir->bytes = dir->rend - used;
	}
	dir->rpos = dir->rend = 0;
	ss_conn_connect_addr(c, &c->target);
}

static void server_inbound(ss_conn_t *c)
{
	if (!server_read(c))
		return;
	if (c->inst->sip022)
		server_inbound_2022(c);
	else if (c->inst->plain)
		server_inbound_plain(c);
	else
		server_inbound_aead(c);
}

static void server_connected(ss_conn_t *c, int err)
{
	if (err) {
		char target[SS_ADDR_STRLEN], why[SS_ADDR_STRLEN + 64];
		snprintf(why, sizeof(why), "cannot connect to %s: %s",
			 ss_addr_format(&c->target, target, sizeof(target)), strerror(err));
		ss_conn_close(c, why);
		return;
	}
	ss_conn_stream(c);
}

const ss_handshake_ops_t ss_hs_server = {
    .name = "server",
    .client = false,
    .client_first = true,
    .accepted = server_accepted,
    .inbound = server_inbound,
    .connected = server_connected,
};
