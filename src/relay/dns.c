/* SPDX-License-Identifier: MIT */
/* The DNS relay (relay/dns.h): its start and end, the queries that come over
 * UDP, where each goes, the cache, and the answers that come back over UDP.
 * TCP, both ways, is dns_tcp.c's. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "codec/secret.h"
#include "net/inherit.h"
#include "relay/dns_internal.h"
#include "relay/doors.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"
#include "util/log.h"
#include "util/result.h"

/* Datagrams one readiness event of a socket takes, so that the other
 * sockets are served between. */
#define DNS_PER_EVENT 64

static const char *const path_names[SS_DNS_PATHS] = {
    [SS_DNS_REMOTE] = "through the server",
    [SS_DNS_LOCAL] = "directly",
};

static const char *dns_peer(const ss_dns_asker_t *who, char *buf, size_t len)
{
	if (who->client >= 0)
		snprintf(buf, len, "tcp client %d", who->client);
	else
		ss_sockaddr_format(&who->peer.sa, buf, len);
	return buf;
}

/* --- where a name goes --- */

/* Whether name is one of the servers' (those the instance has now, an
 * online configuration's included): those are looked up without the
 * tunnel they lead to. */
static bool dns_is_server_name(const ss_dns_t *d, const char *name)
{
	const ss_servers_t *set = &d->inst->servers;

	for (size_t i = 0; i < set->n; i++)
		if (set->s[i].cfg && strcasecmp(set->s[i].cfg->host, name) == 0)
			return true;
	return false;
}

/* The path of q's name as the ACL sends a connection to it; *by_answer
 * when no name rule decides and address rules might (the local answer's
 * addresses decide then). */
static uint8_t dns_route(ss_dns_t *d, const ss_dns_question_t *q, bool *by_answer)
{
	ss_acl_t *acl = d->inst->acl;
	ss_acl_decision_t dec = SS_ACL_UNDECIDED;

	*by_answer = false;
	if (q->text_ok && dns_is_server_name(d, q->text))
		return SS_DNS_LOCAL;
	if (!acl)
		return SS_DNS_REMOTE;
	if (q->text_ok)
		dec = ss_acl_match_host(acl, q->text);
	if (dec == SS_ACL_UNDECIDED && q->text_ok && d->inst->acl_by_addr) {
		*by_answer = true;
		return SS_DNS_LOCAL;
	}
	return ss_acl_resolve(acl, dec) == SS_ACL_BYPASS ? SS_DNS_LOCAL : SS_DNS_REMOTE;
}

/* Whether the ACL bypasses every address of the local answer m (the
 * default, for an answer without one). */
static bool dns_bypassed(ss_dns_t *d, const ss_dns_msg_t *m)
{
	ss_acl_t *acl = d->inst->acl;
	size_t n = m->n_addrs < SS_DNS_ADDRS_MAX ? m->n_addrs : SS_DNS_ADDRS_MAX;

	if (n == 0)
		return ss_acl_resolve(acl, SS_ACL_UNDECIDED) == SS_ACL_BYPASS;
	for (size_t i = 0; i < n; i++) {
		ss_inaddr_t a;
		memset(&a, 0, sizeof(a));
		if (m->addrs[i].len == 4) {
			a.sin.sin_family = AF_INET;
			memcpy(&a.sin.sin_addr, m->addrs[i].addr, 4);
		} else {
			a.sin6.sin6_family = AF_INET6;
			memcpy(&a.sin6.sin6_addr, m->addrs[i].addr, 16);
		}
		if (ss_acl_resolve(acl, ss_acl_match_addr(acl, &a.sa)) != SS_ACL_BYPASS)
			return false;
	}
	return true;
}

/* --- answers to clients --- */

/* Sends msg (n bytes, an answer or a reply of ours) to who, with its id;
 * over UDP, only its header and question with TC when it is larger than
 * who takes (the client asks again over TCP). */
static void dns_reply(ss_dns_t *d, const ss_dns_asker_t *who, uint8_t *msg, size_t n)
{
	ss_dns_msg_t m;

	ss_dns_set_id(msg, who->id);
	if (who->client >= 0) {
		ss_dns_client_answer(d, who->client, who->gen, msg, n);
		return;
	}
	if (n > who->udp_limit) {
		if (ss_dns_parse(msg, n, &m) != SS_OK)
			return;
		n = ss_dns_reply_head(msg, &m, m.flags | SS_DNS_TC, msg, n);
	}
	if (sendto(d->udp_io.fd, msg, n, MSG_NOSIGNAL, &who->peer.sa, who->peer_len) < 0)
		ss_info(
		    "dns %s: cannot answer: %s",
		    ss_sockaddr_format(&who->peer.sa, (char[SS_ADDR_STRLEN]){0}, SS_ADDR_STRLEN),
		    strerror(errno));
}

/* A reply of our own to query msg (which parsed as m): its header and
 * question, with rcode. */
static void dns_reply_error(ss_dns_t *d, const ss_dns_asker_t *who, uint8_t *msg,
			    const ss_dns_msg_t *m, ss_dns_rcode_t rcode)
{
	uint16_t flags =
	    (uint16_t)((m->flags & (SS_DNS_OPCODE_MASK | SS_DNS_RD)) | SS_DNS_RA | rcode);
	size_t n = ss_dns_reply_head(msg, m, flags, msg, m->question_end);

	dns_reply(d, who, msg, n);
}

/* --- queries in flight --- */

static ss_dns_query_t *dns_query_new(ss_dns_t *d)
{
	ss_dns_query_t *q;

	if (d->free_query < 0)
		return NULL;
	q = &d->queries[d->free_query];
	d->free_query = q->next_free;
	q->used = true;
	q->up = -1;
	d->in_flight++;
	return q;
}

static void dns_query_free(ss_dns_t *d, ss_dns_query_t *q)
{
	if (q->up >= 0)
		ss_dns_up_close(d, &d->ups[q->up]);
	ss_dns_up_unwait(d, q);
	ev_timer_stop(d->loop, &q->timer);
	q->used = false;
	q->next_free = d->free_query;
	d->free_query = (int)(q - d->queries);
	d->in_flight--;
}

/* The query in flight on path over UDP with upstream id id. */
static ss_dns_query_t *dns_query_find(ss_dns_t *d, uint8_t path, uint16_t id)
{
	for (size_t i = 0; i < SS_DNS_QUERIES; i++) {
		ss_dns_query_t *q = &d->queries[i];
		if (q->used && !q->tcp && q->path == path && q->up_id == id)
			return q;
	}
	return NULL;
}

/* An id for q upstream that no other query on its path has, unguessable
 * to a host that cannot see the query. */
static void dns_query_id(ss_dns_t *d, ss_dns_query_t *q)
{
	uint16_t id;

	do
		ss_secret_random(&id, sizeof(id));
	while (dns_query_find(d, q->path, id));
	q->up_id = id;
	ss_dns_set_id(q->qbuf, id);
}

/* Asks q's path (again), over UDP or TCP as q->tcp says, with a new id and
 * the time for an answer starting now. */
static void dns_query_send(ss_dns_t *d, ss_dns_query_t *q)
{
	ss_dns_path_t *p = &d->paths[q->path];
	int rc = 0;

	if (q->up >= 0)
		ss_dns_up_close(d, &d->ups[q->up]);
	ss_dns_up_unwait(d, q);
	dns_query_id(d, q);
	ev_timer_stop(d->loop, &q->timer);
	ev_timer_set(&q->timer, SS_DNS_TRY_TIMEOUT, 0.);
	ev_timer_start(d->loop, &q->timer);
	if (q->tcp)
		rc = ss_dns_up_start(d, q);
	else if (sendto(p->io.fd, q->qbuf, q->qlen, MSG_NOSIGNAL, &p->udp.sa, p->udp_len) < 0)
		rc = -errno;
	/* No TCP connection free: it waits for one, its timer running. */
	if (rc == -EAGAIN && q->tcp)
		ss_dns_up_wait(d, q);
	else if (rc < 0)
		ss_dns_query_failed(d, q, strerror(-rc));
}

/* q, asked of the local name server first, goes through the server. */
static void dns_query_remote(ss_dns_t *d, ss_dns_query_t *q)
{
	q->path = SS_DNS_REMOTE;
	q->by_answer = false;
	q->tcp = !d->paths[SS_DNS_REMOTE].has_udp;
	q->tries = 0;
	dns_query_send(d, q);
}

void ss_dns_query_failed(ss_dns_t *d, ss_dns_query_t *q, const char *why)
{
	ss_dns_asker_t who = q->who;
	ss_dns_msg_t m;
	char peer[SS_ADDR_STRLEN];

	ss_info("dns %s: %s: no answer %s (%s)", dns_peer(&who, peer, sizeof(peer)), q->q.text,
		path_names[q->path], why);
	if (++q->tries < SS_DNS_TRIES) {
		dns_query_send(d, q);
		return;
	}
	if (q->by_answer) {
		dns_query_remote(d, q);
		return;
	}
	/* The client hears it now rather than at its own timeout. */
	size_t len = q->qlen;
	memcpy(d->msg, q->qbuf, len);
	dns_query_free(d, q);
	if (ss_dns_parse(d->msg, len, &m) == SS_OK)
		dns_reply_error(d, &who, d->msg, &m, SS_DNS_SERVFAIL);
}

static void dns_query_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_dns_query_t *q = w->data;
	(void)loop;
	(void)revents;

	ss_dns_query_failed(q->dns, q, "timed out");
}

void ss_dns_answer_in(ss_dns_t *d, ss_dns_query_t *q, uint8_t *msg, size_t n, const ss_dns_msg_t *m)
{
	ss_dns_asker_t who = q->who;
	char peer[SS_ADDR_STRLEN];

	if (q->by_answer && q->path == SS_DNS_LOCAL && !dns_bypassed(d, m)) {
		ss_info("dns %s: %s: the ACL proxies its addresses",
			dns_peer(&who, peer, sizeof(peer)), q->q.text);
		dns_query_remote(d, q);
		return;
	}
	ss_dns_cache_put(&d->cache, &q->q, q->path, msg, n, ss_dns_cache_ttl(m), ev_now(d->loop));
	d->answered++;
	dns_query_free(d, q);
	dns_reply(d, &who, msg, n);
}

int ss_dns_query_in(ss_dns_t *d, const ss_dns_asker_t *who, uint8_t *msg, size_t n)
{
	ss_dns_asker_t w = *who;
	ss_dns_msg_t m;
	ss_dns_query_t *q;
	bool by_answer;
	uint8_t path;
	size_t len;
	char peer[SS_ADDR_STRLEN];

	d->asked++;
	if (ss_dns_parse(msg, n, &m) != SS_OK || (m.flags & SS_DNS_QR) || n > SS_DNS_QUERY_MAX) {
		d->dropped++;
		ss_info("dns %s: a query that does not parse (%zu bytes) dropped",
			dns_peer(who, peer, sizeof(peer)), n);
		return SS_ERR;
	}
	w.id = m.id;
	w.udp_limit = ss_dns_udp_limit(&m);
	if (m.flags & SS_DNS_OPCODE_MASK) {
		dns_reply_error(d, &w, msg, &m, SS_DNS_NOTIMP);
		return SS_OK;
	}
	path = dns_route(d, &m.q, &by_answer);
	double now = ev_now(d->loop);
	len = by_answer ? ss_dns_cache_get(&d->cache, &m.q, SS_DNS_LOCAL, now, msg, SS_DNS_MSG_MAX)
			: 0;
	if (!len)
		len = ss_dns_cache_get(&d->cache, &m.q, by_answer ? SS_DNS_REMOTE : path, now, msg,
				       SS_DNS_MSG_MAX);
	if (len) {
		d->cached++;
		ss_info("dns %s: %s: from the cache", dns_peer(who, peer, sizeof(peer)), m.q.text);
		dns_reply(d, &w, msg, len);
		return SS_OK;
	}
	if (!(q = dns_query_new(d))) {
		d->dropped++;
		ss_info("dns %s: %s: dropped, %d queries in flight already",
			dns_peer(who, peer, sizeof(peer)), m.q.text, SS_DNS_QUERIES);
		return SS_ERR;
	}
	q->who = w;
	q->q = m.q;
	q->path = path;
	q->by_answer = by_answer;
	q->tcp = !d->paths[path].has_udp;
	q->tries = 0;
	q->qlen = (uint16_t)n;
	memcpy(q->qbuf, msg, n);
	ss_info("dns %s: %s: %s%s", dns_peer(who, peer, sizeof(peer)), m.q.text, path_names[path],
		by_answer ? " first (its addresses decide)" : "");
	dns_query_send(d, q);
	return SS_OK;
}

/* --- UDP --- */

static void dns_udp_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_t *d = w->data;
	(void)loop;
	(void)revents;

	for (int i = 0; i < DNS_PER_EVENT; i++) {
		ss_dns_asker_t who = {.client = -1};
		socklen_t len = sizeof(who.peer);
		ssize_t n = recvfrom(w->fd, d->msg, sizeof(d->msg), MSG_TRUNC, &who.peer.sa, &len);
		if (n < 0)
			break;
		if ((size_t)n > SS_DNS_MSG_MAX)
			continue;
		who.peer_len = len;
		ss_dns_query_in(d, &who, d->msg, (size_t)n);
	}
}

/* An answer on path p's socket: taken by the query it answers, by source,
 * id and question; one truncated goes again over TCP where the path has it. */
static void dns_path_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_dns_path_t *p = w->data;
	ss_dns_t *d = p->dns;
	uint8_t path = (uint8_t)(p - d->paths);
	(void)loop;
	(void)revents;

	for (int i = 0; i < DNS_PER_EVENT && w->fd >= 0; i++) {
		ss_inaddr_t from;
		socklen_t len = sizeof(from);
		ss_dns_msg_t m;
		ss_dns_query_t *q;
		char who[SS_ADDR_STRLEN];
		ssize_t n = recvfrom(w->fd, d->msg, sizeof(d->msg), MSG_TRUNC, &from.sa, &len);
		if (n < 0)
			break;
		if ((size_t)n > SS_DNS_MSG_MAX || !ss_udp_addr_equal(&from.sa, &p->udp.sa) ||
		    ss_dns_parse(d->msg, (size_t)n, &m) != SS_OK || !(m.flags & SS_DNS_QR) ||
		    !(q = dns_query_find(d, path, m.id)) || !ss_dns_same_question(&q->q, &m.q)) {
			d->dropped++;
			ss_info("dns: an answer from %s that matches no query dropped",
				ss_sockaddr_format(&from.sa, who, sizeof(who)));
			continue;
		}
		if ((m.flags & SS_DNS_TC) && p->has_tcp) {
			ss_info("dns: %s: truncated answer %s, asking again over TCP", q->q.text,
				path_names[path]);
			q->tcp = true;
			dns_query_send(d, q);
			continue;
		}
		ss_dns_answer_in(d, q, d->msg, (size_t)n, &m);
	}
}

/* --- start and end --- */

/* The first name server of /etc/resolv.conf ($SS_RESOLV_CONF for tests). */
static int dns_system_server(ss_addr_t *a, char *err, size_t errlen)
{
	const char *path = getenv("SS_RESOLV_CONF");
	char line[512];
	FILE *f;
	int rc = -ENOENT;

	if (!path || !*path)
		path = "/etc/resolv.conf";
	if (!(f = fopen(path, "re"))) {
		snprintf(err, errlen, "no --local-dns given, and %s: %s", path, strerror(errno));
		return -errno;
	}
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		char *s = line, *v;
		while (isspace((unsigned char)*s))
			s++;
		if (strncmp(s, "nameserver", 10) != 0 || !isspace((unsigned char)s[10]))
			continue;
		v = s + 11;
		while (isspace((unsigned char)*v))
			v++;
		v[strcspn(v, " \t\r\n%")] = '\0';
		if (ss_addr_from_host(a, v, 53) == 0 && a->atyp != SS_ATYP_DOMAIN)
			rc = 0;
	}
	fclose(f);
	if (rc < 0)
		snprintf(err, errlen, "no --local-dns given, and %s names no name server", path);
	return rc;
}

static int dns_sockaddr(const ss_addr_t *a, ss_inaddr_t *out, socklen_t *len)
{
	struct sockaddr_storage ss;

	if (ss_addr_to_sockaddr(a, &ss, len) < 0)
		return -EINVAL;
	*len = ss_inaddr_set(out, (struct sockaddr *)&ss, *len);
	return 0;
}

/* Whether sa reaches the relay itself: its address, or, when it listens on
 * a wildcard, loopback or one of the host's addresses at its port. */
static bool dns_is_self(const struct sockaddr *sa, const ss_inaddr_t *self)
{
	ss_doors_t own;
	bool is;

	if (ss_udp_addr_equal(sa, &self->sa))
		return true;
	ss_doors_one(&own, &self->sa,
		     self->sa.sa_family == AF_INET ? sizeof(self->sin) : sizeof(self->sin6));
	is = ss_doors_match(&own, sa);
	ss_doors_free(&own);
	return is;
}

/* The local path: the name server asked directly, through the outbound
 * options (-i); never the relay's own address. */
static int dns_local_path(ss_dns_t *d, const ss_inaddr_t *self, char *err, size_t errlen)
{
	const ss_config_t *cfg = d->inst->cfg;
	ss_dns_path_t *p = &d->paths[SS_DNS_LOCAL];
	ss_addr_t a = cfg->local_dns;
	int rc;

	if (!cfg->have_local_dns && (rc = dns_system_server(&a, err, errlen)) < 0)
		return rc;
	if (dns_sockaddr(&a, &p->udp, &p->udp_len) < 0) {
		snprintf(err, errlen, "--local-dns must be an IP address");
		return -EINVAL;
	}
	if (dns_is_self(&p->udp.sa, self)) {
		snprintf(err, errlen, "--local-dns is the DNS relay's own address");
		return -ELOOP;
	}
	p->tcp = p->udp;
	p->tcp_len = p->udp_len;
	p->has_udp = p->has_tcp = true;
	p->opts = &d->inst->outopts;
	return 0;
}

/* The remote path: the instance's door, by UDP when the mode relays UDP
 * and by TCP when it relays TCP. */
static int dns_remote_path(ss_dns_t *d, char *err, size_t errlen)
{
	ss_instance_t *inst = d->inst;
	ss_dns_path_t *p = &d->paths[SS_DNS_REMOTE];
	struct sockaddr_storage tcp, udp;
	int rc;

	p->has_tcp = inst->shared->tcp;
	p->has_udp = inst->shared->udp;
	rc =
	    ss_instance_listen_door(inst, p->has_tcp ? &ss_hs_dns : NULL,
				    p->has_udp ? &ss_udp_dns_front : NULL, &tcp, &udp, err, errlen);
	if (rc < 0)
		return rc;
	if (p->has_tcp)
		p->tcp_len = ss_inaddr_set(&p->tcp, (struct sockaddr *)&tcp, sizeof(tcp));
	if (p->has_udp)
		p->udp_len = ss_inaddr_set(&p->udp, (struct sockaddr *)&udp, sizeof(udp));
	p->opts = &d->door_opts;
	return 0;
}

/* Each path's UDP socket, for its answers. */
static int dns_path_socket(ss_dns_t *d, ss_dns_path_t *p, char *err, size_t errlen)
{
	int fd;

	p->dns = d;
	ev_io_init(&p->io, dns_path_cb, -1, EV_READ);
	p->io.data = p;
	if (!p->has_udp)
		return 0;
	fd = ss_sock_udp_open(p->udp.sa.sa_family, p->opts);
	if (fd < 0) {
		snprintf(err, errlen, "DNS relay: cannot open a UDP socket: %s", strerror(-fd));
		return fd;
	}
	ev_io_set(&p->io, fd, EV_READ);
	ev_io_start(d->loop, &p->io);
	return 0;
}

/* The listeners on cfg->dns_addr: a reload's, or new. */
static int dns_listen(ss_dns_t *d, const ss_inaddr_t *self, socklen_t len, char *err, size_t errlen)
{
	char where[SS_ADDR_STRLEN];
	int ufd, tfd;

	ss_sockaddr_format(&self->sa, where, sizeof(where));
	ufd = ss_inherit_take(&self->sa, len, SOCK_DGRAM);
	if (ufd < 0)
		ufd = ss_sock_udp_bind(&self->sa, len, &d->listen_opts);
	if (ufd < 0) {
		snprintf(err, errlen, "DNS relay: cannot listen on UDP %s: %s", where,
			 strerror(-ufd));
		return ufd;
	}
	ev_io_init(&d->udp_io, dns_udp_cb, ufd, EV_READ);
	d->udp_io.data = d;
	ev_io_start(d->loop, &d->udp_io);
	tfd = ss_inherit_take(&self->sa, len, SOCK_STREAM);
	if (tfd < 0)
		tfd = ss_sock_listen_tcp(&self->sa, len, &d->listen_opts);
	if (tfd < 0) {
		snprintf(err, errlen, "DNS relay: cannot listen on %s: %s", where, strerror(-tfd));
		return tfd;
	}
	ev_io_init(&d->tcp_io, ss_dns_tcp_accept_cb, tfd, EV_READ);
	d->tcp_io.data = d;
	ev_io_start(d->loop, &d->tcp_io);
	return 0;
}

/* The tables, made once. */
static int dns_tables(ss_dns_t *d)
{
	size_t buf = 2 + SS_DNS_MSG_MAX;

	d->queries = calloc(SS_DNS_QUERIES, sizeof(*d->queries));
	d->clients = calloc(SS_DNS_CLIENTS, sizeof(*d->clients));
	d->bufs = calloc(SS_DNS_UPS + SS_DNS_CLIENTS, buf);
	if (!d->queries || !d->clients || !d->bufs ||
	    ss_dns_cache_init(&d->cache, SS_DNS_CACHE_ENTRIES, SS_DNS_CACHE_SLOT) < 0)
		return -ENOMEM;
	d->free_query = -1;
	d->wait_head = d->wait_tail = -1;
	ev_prepare_init(&d->up_kick, ss_dns_up_kick_cb);
	d->up_kick.data = d;
	for (int i = SS_DNS_QUERIES - 1; i >= 0; i--) {
		ss_dns_query_t *q = &d->queries[i];
		q->dns = d;
		q->up = -1;
		q->wait_prev = q->wait_next = -1;
		q->next_free = d->free_query;
		d->free_query = i;
		ev_timer_init(&q->timer, dns_query_timer_cb, 0., 0.);
		q->timer.data = q;
	}
	for (size_t i = 0; i < SS_DNS_UPS; i++) {
		d->ups[i].dns = d;
		d->ups[i].fd = -1;
		d->ups[i].query = -1;
		d->ups[i].buf = d->bufs + i * buf;
	}
	for (size_t i = 0; i < SS_DNS_CLIENTS; i++) {
		d->clients[i].dns = d;
		d->clients[i].fd = -1;
		d->clients[i].out = d->bufs + (SS_DNS_UPS + i) * buf;
	}
	return 0;
}

int ss_dns_start(struct ss_instance *inst, ss_dns_t **out, char *err, size_t errlen)
{
	const ss_config_t *cfg = inst->cfg;
	ss_dns_t *d = calloc(1, sizeof(*d));
	ss_inaddr_t self;
	socklen_t len;
	char where[SS_ADDR_STRLEN], local[SS_ADDR_STRLEN], remote[SS_ADDR_STRLEN];
	int rc;

	*out = NULL;
	if (!d) {
		snprintf(err, errlen, "out of memory for the DNS relay");
		return -ENOMEM;
	}
	d->inst = inst;
	d->loop = inst->loop;
	ev_io_init(&d->udp_io, dns_udp_cb, -1, EV_READ);
	ev_io_init(&d->tcp_io, ss_dns_tcp_accept_cb, -1, EV_READ);
	d->listen_opts = (ss_sockopts_t){.reuse_port = cfg->reuse_port};
	if ((rc = dns_tables(d)) < 0) {
		snprintf(err, errlen, "out of memory for the DNS relay");
		goto fail;
	}
	if (dns_sockaddr(&cfg->dns_addr, &self, &len) < 0) {
		snprintf(err, errlen, "--dns must be an IP address");
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = dns_local_path(d, &self, err, errlen)) < 0 ||
	    (rc = dns_remote_path(d, err, errlen)) < 0 ||
	    (rc = dns_path_socket(d, &d->paths[SS_DNS_LOCAL], err, errlen)) < 0 ||
	    (rc = dns_path_socket(d, &d->paths[SS_DNS_REMOTE], err, errlen)) < 0 ||
	    (rc = dns_listen(d, &self, len, err, errlen)) < 0)
		goto fail;
	ss_notice("DNS relay on %s (UDP and TCP): proxied names to %s through the server (%s), "
		  "the others to %s",
		  ss_sockaddr_format(&self.sa, where, sizeof(where)),
		  ss_addr_format(&cfg->remote_dns, remote, sizeof(remote)),
		  d->paths[SS_DNS_REMOTE].has_udp ? "UDP, TCP when truncated"
						  : (d->paths[SS_DNS_REMOTE].has_tcp ? "TCP" : ""),
		  ss_sockaddr_format(&d->paths[SS_DNS_LOCAL].udp.sa, local, sizeof(local)));
	*out = d;
	return 0;
fail:
	ss_dns_stop(d);
	ss_dns_free(d);
	return rc;
}

void ss_dns_offer(ss_dns_t *d)
{
	if (!d)
		return;
	if (d->udp_io.fd >= 0)
		ss_inherit_offer(d->udp_io.fd);
	if (d->tcp_io.fd >= 0)
		ss_inherit_offer(d->tcp_io.fd);
}

void ss_dns_mark_handed(ss_dns_t *d)
{
	if (!d)
		return;
	d->udp_handed = d->udp_io.fd >= 0 && ss_inherit_taken(d->udp_io.fd);
	d->tcp_handed = d->tcp_io.fd >= 0 && ss_inherit_taken(d->tcp_io.fd);
}

/* Stops and closes the socket of w, unless a reload took it. */
static void dns_close_io(ss_dns_t *d, ev_io *w, bool handed)
{
	ev_io_stop(d->loop, w);
	if (w->fd >= 0 && !handed && !ss_inherit_give_back(w->fd))
		close(w->fd);
	ev_io_set(w, -1, EV_READ);
}

void ss_dns_stop(ss_dns_t *d)
{
	if (!d || d->stopped)
		return;
	d->stopped = true;
	ev_prepare_stop(d->loop, &d->up_kick);
	dns_close_io(d, &d->udp_io, d->udp_handed);
	dns_close_io(d, &d->tcp_io, d->tcp_handed);
	for (int i = 0; i < SS_DNS_PATHS; i++)
		dns_close_io(d, &d->paths[i].io, false);
	for (size_t i = 0; d->queries && i < SS_DNS_QUERIES; i++)
		if (d->queries[i].used)
			dns_query_free(d, &d->queries[i]);
	for (size_t i = 0; d->clients && i < SS_DNS_CLIENTS; i++)
		if (d->clients[i].fd >= 0)
			ss_dns_client_close(d, &d->clients[i]);
	for (size_t i = 0; i < SS_DNS_UPS; i++)
		if (d->ups[i].fd >= 0)
			ss_dns_up_close(d, &d->ups[i]);
}

void ss_dns_free(ss_dns_t *d)
{
	if (!d)
		return;
	ss_dns_cache_free(&d->cache);
	free(d->queries);
	free(d->clients);
	free(d->bufs);
	free(d);
}
