/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/inherit.h"
#include "net/sock.h"
#include "proto/scrape.h"
#include "relay/metrics.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/result.h"

/* ---- the text ---- */

/* A label value as the exposition format wants it: \, " and newline
 * escaped. User names are the configuration's, of any bytes. */
static void mb_label(ss_strbuf_t *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			ss_strbuf_printf(b, "\\\\");
		else if (*s == '"')
			ss_strbuf_printf(b, "\\\"");
		else if (*s == '\n')
			ss_strbuf_printf(b, "\\n");
		else
			ss_strbuf_printf(b, "%c", *s);
	}
}

static void mb_head(ss_strbuf_t *b, const char *name, const char *type, const char *help)
{
	ss_strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The start of a line of name for row r: its name and labels, the user's
 * when per_user, without the closing brace. */
static void mb_labels(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r, bool per_user)
{
	ss_strbuf_printf(b, "%s{port=\"%u\"", name, (unsigned)r->port);
	if (per_user) {
		ss_strbuf_printf(b, ",user=\"");
		mb_label(b, r->user);
		ss_strbuf_printf(b, "\"");
	}
}

/* A family's lines for one row (called for every row of a per-user family,
 * for the first row of each port for the others). */
typedef void (*family_line_fn)(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r);

/* One line of row r's labels, and v. */
static void mb_value(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r, bool per_user,
		     uint64_t v)
{
	mb_labels(b, name, r, per_user);
	ss_strbuf_printf(b, "} %llu\n", (unsigned long long)v);
}

/* Two lines of row r's labels, direction "up" with v[0] and "down" with v[1]. */
static void mb_directions(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r,
			  bool per_user, const uint64_t v[2])
{
	for (int d = 0; d < 2; d++) {
		mb_labels(b, name, r, per_user);
		ss_strbuf_printf(b, ",direction=\"%s\"} %llu\n", d ? "down" : "up",
				 (unsigned long long)v[d]);
	}
}

static void line_bytes(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	mb_directions(b, name, r, true, r->s->bytes);
}

static void line_active(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	mb_value(b, name, r, true, r->s->opened - r->s->closed);
}

static void line_total(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	mb_value(b, name, r, true, r->s->opened);
}

static void line_assoc(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	mb_value(b, name, r, false, r->s->assoc_opened - r->s->assoc_closed);
}

static void line_dgrams(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	mb_directions(b, name, r, false, r->s->dgrams);
}

static void line_refused(ss_strbuf_t *b, const char *name, const ss_metrics_row_t *r)
{
	static const char *const reasons[SS_REFUSED_N] = {"auth", "replay", "acl", "blocked"};

	for (int k = 0; k < SS_REFUSED_N; k++) {
		mb_labels(b, name, r, false);
		ss_strbuf_printf(b, ",reason=\"%s\"} %llu\n", reasons[k],
				 (unsigned long long)r->s->refused[k]);
	}
}

typedef struct {
	const char *name, *type, *help;
	bool per_user;
	family_line_fn line;
} family_t;

static const family_t families[] = {
    {"ss_bytes_total", "counter",
     "Plaintext bytes relayed over TCP, client to target (up) and back (down).", true, line_bytes},
    {"ss_connections_active", "gauge", "TCP connections relaying now.", true, line_active},
    {"ss_connections_total", "counter", "TCP connections whose request was accepted.", true,
     line_total},
    {"ss_udp_associations", "gauge", "UDP associations open now.", false, line_assoc},
    {"ss_udp_datagrams_total", "counter", "UDP datagrams from clients (up) and to clients (down).",
     false, line_dgrams},
    {"ss_refused_total", "counter",
     "Clients refused: failed authentication or a bad request (auth), a replay, "
     "the ACL, a target never relayed to (blocked).",
     false, line_refused},
};

typedef struct {
	ss_strbuf_t *b;
	const family_t *f;
} family_ctx_t;

static void family_row(void *ctx, const ss_metrics_row_t *r)
{
	const family_ctx_t *c = ctx;

	if (c->f->per_user || r->first)
		c->f->line(c->b, c->f->name, r);
}

char *ss_metrics_render(const ss_metrics_source_t *src, size_t *len)
{
	ss_strbuf_t b = {0};

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		family_ctx_t c = {&b, &families[i]};
		mb_head(&b, families[i].name, families[i].type, families[i].help);
		src->each(src->arg, family_row, &c);
	}
	mb_head(&b, "ss_build_info", "gauge", "The version of shadowsocks-c that runs.");
	ss_strbuf_printf(&b, "ss_build_info{version=\"");
	mb_label(&b, SS_VERSION);
	ss_strbuf_printf(&b, "\"} 1\n");
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

/* ---- ss-server's rows: the shared object's ---- */

static void shared_each(const void *arg, ss_metrics_row_fn fn, void *ctx)
{
	ss_shared_lines(arg, fn, ctx);
}

ss_metrics_source_t ss_metrics_shared_source(const ss_shared_t *sh)
{
	return (ss_metrics_source_t){.each = shared_each, .arg = sh};
}

/* ---- the server ---- */

/* The watchers do not keep the loop running: it ends with the workers. */
static void m_io_start(ss_metrics_t *m, ev_io *w)
{
	if (!ev_is_active(w)) {
		ev_io_start(m->loop, w);
		ev_unref(m->loop);
	}
}

static void m_io_stop(ss_metrics_t *m, ev_io *w)
{
	if (ev_is_active(w)) {
		ev_ref(m->loop);
		ev_io_stop(m->loop, w);
	}
}

static void m_timer_stop(ss_metrics_t *m, ev_timer *w)
{
	if (ev_is_active(w)) {
		ev_ref(m->loop);
		ev_timer_stop(m->loop, w);
	}
}

static void client_end(ss_metrics_client_t *c)
{
	ss_metrics_t *m = c->m;

	m_io_stop(m, &c->io);
	m_timer_stop(m, &c->timer);
	close(c->io.fd);
	free(c->out);
	c->out = NULL;
	c->io.fd = -1;
	if (m->busy-- == SS_METRICS_CLIENTS)
		m_io_start(m, &m->lis);
}

/* The answer is out: the client reads it to the end before it sees our
 * FIN, where a close with its unread bytes still queued would reset the
 * connection and could lose the answer. What it still sends is read and
 * dropped until it closes or its time runs out. */
static void client_linger(ss_metrics_client_t *c)
{
	ssize_t n;

	if (!c->lingering) {
		c->lingering = true;
		shutdown(c->io.fd, SHUT_WR);
		m_io_stop(c->m, &c->io);
		ev_io_set(&c->io, c->io.fd, EV_READ);
		m_io_start(c->m, &c->io);
	}
	do
		n = recv(c->io.fd, c->req, sizeof(c->req), 0);
	while (n > 0 || (n < 0 && errno == EINTR));
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		client_end(c);
}

static void client_write(ss_metrics_client_t *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w =
		    send(c->io.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			client_end(c);
			return;
		}
		c->out_off += (size_t)w;
	}
	client_linger(c);
}

static const char *answer_status(ss_scrape_t what)
{
	switch (what) {
	case SS_SCRAPE_METRICS:
		return "200 OK";
	case SS_SCRAPE_NOT_FOUND:
		return "404 Not Found";
	case SS_SCRAPE_BAD_METHOD:
		return "405 Method Not Allowed\r\nAllow: GET";
	default:
		return "400 Bad Request";
	}
}

/* The answer, then the connection closes. */
static void client_answer(ss_metrics_client_t *c, ss_scrape_t what)
{
	size_t blen = 0, hlen;
	char *body = what == SS_SCRAPE_METRICS ? ss_metrics_render(&c->m->src, &blen) : NULL;
	char head[256];

	if (what == SS_SCRAPE_METRICS && !body) {
		client_end(c);
		return;
	}
	hlen = (size_t)snprintf(
	    head, sizeof(head), "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
	    answer_status(what),
	    body ? "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n" : "", blen);
	c->out = malloc(hlen + blen);
	if (!c->out) {
		free(body);
		client_end(c);
		return;
	}
	memcpy(c->out, head, hlen);
	if (blen)
		memcpy(c->out + hlen, body, blen);
	free(body);
	c->out_len = hlen + blen;
	c->out_off = 0;
	m_io_stop(c->m, &c->io);
	ev_io_set(&c->io, c->io.fd, EV_WRITE);
	m_io_start(c->m, &c->io);
	client_write(c);
}

static void client_read(ss_metrics_client_t *c)
{
	ss_scrape_t what;
	ssize_t n;
	int r;

	do
		n = recv(c->io.fd, c->req + c->n, sizeof(c->req) - c->n, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		client_end(c);
		return;
	}
	c->n += (size_t)n;
	r = ss_scrape_parse(c->req, c->n, &what);
	if (r == SS_AGAIN && c->n < sizeof(c->req))
		return;
	client_answer(c, r == SS_AGAIN ? SS_SCRAPE_BAD_REQUEST : what);
}

static void client_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_metrics_client_t *c = w->data;
	(void)loop;
	(void)revents;

	if (c->lingering)
		client_linger(c);
	else if (c->out)
		client_write(c);
	else
		client_read(c);
}

static void client_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	/* A timer that has fired is no longer active: its reference comes
	 * back here. */
	ev_ref(loop);
	client_end(w->data);
}

static void metrics_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_metrics_t *m = w->data;
	(void)loop;
	(void)revents;

	while (m->busy < SS_METRICS_CLIENTS) {
		int fd = accept4(m->lis.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		ss_metrics_client_t *c = NULL;
		if (fd < 0)
			return;
		for (size_t i = 0; i < SS_METRICS_CLIENTS && !c; i++)
			if (m->c[i].io.fd < 0)
				c = &m->c[i];
		c->n = 0;
		c->out = NULL;
		c->lingering = false;
		ev_io_init(&c->io, client_io_cb, fd, EV_READ);
		c->io.data = c;
		ev_timer_init(&c->timer, client_timer_cb, SS_METRICS_TIMEOUT, 0);
		c->timer.data = c;
		m_io_start(m, &c->io);
		ev_timer_start(m->loop, &c->timer);
		ev_unref(m->loop);
		m->busy++;
	}
	/* Full: the others wait in the listen queue. */
	m_io_stop(m, &m->lis);
}

int ss_metrics_parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len, char *err,
		     size_t errlen)
{
	const char *colon = strrchr(addr, ':'), *ptext = colon ? colon + 1 : addr;
	char host[SS_HOST_MAX] = "127.0.0.1";
	size_t hlen = colon ? (size_t)(colon - addr) : 0;
	char *end;
	long port = strtol(ptext, &end, 10);

	if (!*ptext || *end || port <= 0 || port > 65535)
		goto bad;
	if (colon) {
		if (addr[0] == '[' && hlen >= 2 && addr[hlen - 1] == ']')
			addr++, hlen -= 2;
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, addr, hlen);
		host[hlen] = '\0';
	}
	if (ss_sock_resolve_startup(host, (unsigned)port, false, true, ss, len, err, errlen) < 0)
		return -EINVAL;
	return 0;
bad:
	snprintf(err, errlen, "bad metrics address (ADDR:PORT or PORT): %s", addr);
	return -EINVAL;
}

int ss_metrics_start(ss_metrics_t *m, const ss_metrics_source_t *src, struct ev_loop *loop,
		     const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	ss_sockopts_t o = {0};
	char where[SS_ADDR_STRLEN];
	int fd;

	memset(m, 0, sizeof(*m));
	if (ss_metrics_parse(addr, &ss, &len, err, errlen) < 0)
		return -EINVAL;
	/* A reload takes the running set's listener: the port never closes. */
	fd = ss_inherit_take((struct sockaddr *)&ss, len, SOCK_STREAM);
	if (fd < 0)
		fd = ss_sock_listen_tcp((struct sockaddr *)&ss, len, &o);
	ss_sockaddr_format((struct sockaddr *)&ss, where, sizeof(where));
	if (fd < 0) {
		snprintf(err, errlen, "cannot serve metrics on %s: %s", where, strerror(-fd));
		return fd;
	}
	m->src = *src;
	m->on = true;
	m->loop = loop;
	for (size_t i = 0; i < SS_METRICS_CLIENTS; i++) {
		m->c[i].m = m;
		m->c[i].io.fd = -1;
	}
	ev_io_init(&m->lis, metrics_accept_cb, fd, EV_READ);
	m->lis.data = m;
	m_io_start(m, &m->lis);
	if (!ss_sockaddr_is_loopback((struct sockaddr *)&ss))
		ss_warn("metrics on %s, not a loopback address: anyone who reaches it sees the "
			"figures",
			where);
	else
		ss_notice("metrics on http://%s/metrics", where);
	return 0;
}

void ss_metrics_stop(ss_metrics_t *m)
{
	if (!m->on)
		return;
	for (size_t i = 0; i < SS_METRICS_CLIENTS; i++)
		if (m->c[i].io.fd >= 0)
			client_end(&m->c[i]);
	m_io_stop(m, &m->lis);
	if (!m->handed && !ss_inherit_give_back(m->lis.fd))
		close(m->lis.fd);
	m->on = false;
}
