/* SPDX-License-Identifier: MIT */
#include "net/fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#include <psa/crypto.h>
#endif

#include "crypto/primitives.h"
#include "net/sock.h"
#include "proto/addr.h"
#include "proto/httpc.h"
#include "util/result.h"

/* The system's CA bundle where Debian, Ubuntu and their kin put it, then
 * where others do; the first that exists is read. */
static const char *const fetch_ca_files[] = {
    "/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine */
    "/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
    "/etc/ssl/ca-bundle.pem",             /* openSUSE */
    "/etc/ssl/cert.pem",                  /* Alpine, the BSDs */
};

typedef enum {
	FETCH_RESOLVE,
	FETCH_CONNECT,
	FETCH_HANDSHAKE,
	FETCH_SEND,
	FETCH_RECV,
} fetch_state_t;

struct ss_fetch {
	struct ev_loop *loop;
	ss_resolver_t *resolver;
	ss_resolve_req_t req;
	bool resolving; /* the resolver still holds req: free in its callback */
	bool dead;      /* ended (called back or cancelled) */
	fetch_state_t state;
	ss_httpc_url_t url;
	int fd;
	int sys_errno; /* what send or recv last failed with */
	ev_io io;
	ev_timer kick, timer;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca;
	char ca_name[4096]; /* for messages */
	char request[SS_HTTPC_PATH_MAX + SS_HTTPC_HOST_MAX + 256];
	size_t req_len, req_sent;
	uint8_t *buf;
	size_t len, raw_cap, cap;
	ss_httpc_head_t head;
	bool have_head;
	char peer[SS_ADDR_STRLEN];
	ss_fetch_cb cb;
	void *arg;
};

static int fetch_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	ss_random_bytes(out, len);
	return 0;
}

static int fetch_send(void *ctx, const unsigned char *buf, size_t len)
{
	ss_fetch_t *f = ctx;
	ssize_t n = send(f->fd, buf, len, MSG_NOSIGNAL);

	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	f->sys_errno = errno;
	return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int fetch_recv(void *ctx, unsigned char *buf, size_t len)
{
	ss_fetch_t *f = ctx;
	ssize_t n = recv(f->fd, buf, len, 0);

	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	f->sys_errno = errno;
	return MBEDTLS_ERR_NET_RECV_FAILED;
}

static void fetch_free(ss_fetch_t *f)
{
	if (f->fd >= 0) {
		ev_io_stop(f->loop, &f->io);
		close(f->fd);
	}
	ev_timer_stop(f->loop, &f->kick);
	ev_timer_stop(f->loop, &f->timer);
	mbedtls_ssl_free(&f->ssl);
	mbedtls_ssl_config_free(&f->conf);
	mbedtls_x509_crt_free(&f->ca);
	if (f->buf) {
		ss_wipe(f->buf, f->raw_cap + 1);
		free(f->buf);
	}
	free(f);
}

/* Released now, or by the resolver's callback when it still holds req. */
static void fetch_release(ss_fetch_t *f)
{
	f->dead = true;
	if (f->fd >= 0) {
		ev_io_stop(f->loop, &f->io);
		close(f->fd);
		f->fd = -1;
	}
	ev_timer_stop(f->loop, &f->kick);
	ev_timer_stop(f->loop, &f->timer);
	if (!f->resolving)
		fetch_free(f);
}

static void fetch_fail(ss_fetch_t *f, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fetch_fail(ss_fetch_t *f, int rc, const char *fmt, ...)
{
	char err[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	f->cb(f->arg, rc, NULL, 0, err);
	fetch_release(f);
}

static void fetch_done(ss_fetch_t *f, const uint8_t *body, size_t len)
{
	/* The buffer has room for the NUL past any body it holds. */
	memmove(f->buf, body, len);
	f->buf[len] = '\0';
	f->cb(f->arg, 0, (const char *)f->buf, len, NULL);
	fetch_release(f);
}

/* An Mbed TLS error as one line, the certificate's faults spelt out. */
static void fetch_tls_fail(ss_fetch_t *f, int ret, const char *doing)
{
	char why[512], info[512];
	uint32_t flags;

	if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED &&
	    (flags = mbedtls_ssl_get_verify_result(&f->ssl)) != 0) {
		mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
		/* One fault a line: make them one line. */
		size_t n = strlen(info);
		while (n && info[n - 1] == '\n')
			info[--n] = '\0';
		for (char *c = info; *c; c++)
			if (*c == '\n')
				*c = ';';
		fetch_fail(f, -EPERM, "TLS with %s (%s): the certificate is refused (CA %s): %s",
			   f->url.host, f->peer, f->ca_name, info);
		return;
	}
	if ((ret == MBEDTLS_ERR_NET_SEND_FAILED || ret == MBEDTLS_ERR_NET_RECV_FAILED) &&
	    f->sys_errno) {
		fetch_fail(f, -f->sys_errno, "TLS with %s (%s): %s: %s", f->url.host, f->peer,
			   doing, strerror(f->sys_errno));
		return;
	}
	mbedtls_strerror(ret, why, sizeof(why));
	fetch_fail(f, -EPROTO, "TLS with %s (%s): %s: %s (-0x%04x)", f->url.host, f->peer, doing,
		   why, (unsigned)-ret);
}

/* Mbed TLS 2.28 checks a name against the certificate's DNS names and
 * common name only: an address in the URL is checked here, against the
 * certificate's IP addresses, for every version alike. */
static bool fetch_ip_matches(ss_fetch_t *f)
{
	const mbedtls_x509_crt *crt = mbedtls_ssl_get_peer_cert(&f->ssl);
	uint8_t want[16];
	size_t wl = 4;

	if (inet_pton(AF_INET, f->url.host, want) != 1) {
		if (inet_pton(AF_INET6, f->url.host, want) != 1)
			return false;
		wl = 16;
	}
	for (const mbedtls_x509_sequence *s = crt ? &crt->subject_alt_names : NULL; s;
	     s = s->next)
		if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && s->buf.len == wl &&
		    memcmp(s->buf.p, want, wl) == 0)
			return true;
	return false;
}

static void fetch_wait(ss_fetch_t *f, int events)
{
	if (ev_is_active(&f->io) && (f->io.events & (EV_READ | EV_WRITE)) == events)
		return;
	ev_io_stop(f->loop, &f->io);
	ev_io_set(&f->io, f->fd, events);
	ev_io_start(f->loop, &f->io);
}

/* What came so far: SS_OK when the answer is whole (and handed over),
 * SS_AGAIN, or SS_ERR (failed, released). eof: the server closed;
 * notified: with a TLS close_notify, so that nothing was cut on the way. */
static int fetch_answer(ss_fetch_t *f, bool eof, bool notified)
{
	size_t blen, out;
	uint8_t *body;
	int r;

	if (!f->have_head) {
		r = ss_httpc_parse_head(f->buf, f->len, &f->head);
		if (r == SS_ERR || (r == SS_AGAIN && eof)) {
			fetch_fail(f, -EPROTO, "%s: %s", f->url.host,
				   r == SS_ERR ? "a malformed HTTP answer"
					       : "the connection closed before the answer");
			return SS_ERR;
		}
		if (r == SS_AGAIN)
			return SS_AGAIN;
		f->have_head = true;
		if (f->head.status != 200) {
			size_t n = strcspn((const char *)f->buf, "\r");
			fetch_fail(f, -EPROTO, "%s answered %.*s%s%s%s", f->url.host,
				   (int)(n < 80 ? n : 80), (const char *)f->buf,
				   f->head.location[0] ? " (Location: " : "", f->head.location,
				   f->head.location[0] ? "): redirects are not followed, give the "
							 "URL it names"
						       : "");
			return SS_ERR;
		}
		if (f->head.has_length && f->head.length > f->cap) {
			fetch_fail(f, -EFBIG, "%s: the document is %llu bytes, over %zu",
				   f->url.host, (unsigned long long)f->head.length, f->cap);
			return SS_ERR;
		}
	}
	body = f->buf + f->head.len;
	blen = f->len - f->head.len;
	if (f->head.has_length && blen >= f->head.length) {
		fetch_done(f, body, (size_t)f->head.length);
		return SS_OK;
	}
	if (f->head.chunked) {
		r = ss_httpc_dechunk(body, blen, f->cap, &out);
		if (r == SS_OK) {
			fetch_done(f, body, out);
			return SS_OK;
		}
		if (r == SS_ERR) {
			fetch_fail(f, -EPROTO, "%s: a malformed chunked body, or one over %zu bytes",
				   f->url.host, f->cap);
			return SS_ERR;
		}
	} else if (!f->head.has_length && blen > f->cap) {
		fetch_fail(f, -EFBIG, "%s: the document is over %zu bytes", f->url.host, f->cap);
		return SS_ERR;
	}
	if (!eof)
		return SS_AGAIN;
	if (f->head.has_length || f->head.chunked) {
		fetch_fail(f, -EPROTO, "%s: the connection closed after %zu bytes of the body",
			   f->url.host, blen);
		return SS_ERR;
	}
	/* A body read to the close ends only with the server's close_notify:
	 * a bare end of the connection could be anyone's truncation. */
	if (!notified) {
		fetch_fail(f, -EPROTO,
			   "%s: the connection closed without TLS close_notify after %zu bytes of "
			   "a body with no length: it may be cut",
			   f->url.host, blen);
		return SS_ERR;
	}
	fetch_done(f, body, blen);
	return SS_OK;
}

static void fetch_read(ss_fetch_t *f)
{
	for (;;) {
		int n;

		if (f->len == f->raw_cap) {
			fetch_fail(f, -EFBIG, "%s: the answer is over %zu bytes", f->url.host,
				   f->raw_cap);
			return;
		}
		n = mbedtls_ssl_read(&f->ssl, f->buf + f->len, f->raw_cap - f->len);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE) {
			fetch_wait(f, n == MBEDTLS_ERR_SSL_WANT_READ ? EV_READ : EV_WRITE);
			return;
		}
#ifdef MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET
		/* TLS 1.3 (Mbed TLS 3.x): a ticket we have no use for. */
		if (n == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
			continue;
#endif
		if (n == 0 || n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == MBEDTLS_ERR_SSL_CONN_EOF) {
			fetch_answer(f, true, n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY);
			return;
		}
		if (n < 0) {
			fetch_tls_fail(f, n, "reading the answer");
			return;
		}
		f->len += (size_t)n;
		if (fetch_answer(f, false, false) != SS_AGAIN)
			return;
	}
}

/* Runs the exchange as far as it goes without waiting. */
static void fetch_step(ss_fetch_t *f)
{
	int ret;

	if (f->state == FETCH_HANDSHAKE) {
		ret = mbedtls_ssl_handshake(&f->ssl);
		if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
			fetch_wait(f, ret == MBEDTLS_ERR_SSL_WANT_READ ? EV_READ : EV_WRITE);
			return;
		}
		if (ret != 0) {
			fetch_tls_fail(f, ret, "the handshake");
			return;
		}
		if (f->url.literal && !fetch_ip_matches(f)) {
			fetch_fail(f, -EPERM,
				   "TLS with %s: the certificate is refused (CA %s): it names no "
				   "IP address %s",
				   f->url.host, f->ca_name, f->url.host);
			return;
		}
		f->state = FETCH_SEND;
	}
	while (f->state == FETCH_SEND) {
		ret = mbedtls_ssl_write(&f->ssl, (const unsigned char *)f->request + f->req_sent,
					f->req_len - f->req_sent);
		if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
			fetch_wait(f, ret == MBEDTLS_ERR_SSL_WANT_READ ? EV_READ : EV_WRITE);
			return;
		}
		if (ret < 0) {
			fetch_tls_fail(f, ret, "sending the request");
			return;
		}
		f->req_sent += (size_t)ret;
		if (f->req_sent == f->req_len)
			f->state = FETCH_RECV;
	}
	fetch_read(f);
}

static void fetch_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ss_fetch_t *f = w->data;
	int e;
	(void)loop;
	(void)revents;

	if (f->state == FETCH_CONNECT) {
		e = ss_sock_error(f->fd);
		if (e != 0) {
			fetch_fail(f, -e, "cannot connect to %s (%s): %s", f->url.host, f->peer,
				   strerror(e));
			return;
		}
		f->state = FETCH_HANDSHAKE;
	}
	fetch_step(f);
}

static void fetch_resolved(void *arg, int status, const struct sockaddr *sa, socklen_t len)
{
	ss_fetch_t *f = arg;
	bool done;
	int fd;

	f->resolving = false;
	if (f->dead) {
		fetch_free(f);
		return;
	}
	if (status < 0) {
		fetch_fail(f, status, "cannot resolve %s: %s", f->url.host,
			   status == -EHOSTUNREACH ? "no address for that name"
						   : strerror(-status));
		return;
	}
	ss_sockaddr_format(sa, f->peer, sizeof(f->peer));
	fd = ss_sock_connect_tcp(sa, len, NULL, &done);
	if (fd < 0) {
		fetch_fail(f, fd, "cannot connect to %s (%s): %s", f->url.host, f->peer,
			   strerror(-fd));
		return;
	}
	f->fd = fd;
	ev_io_init(&f->io, fetch_io_cb, fd, EV_WRITE);
	f->io.data = f;
	f->state = done ? FETCH_HANDSHAKE : FETCH_CONNECT;
	if (done)
		fetch_step(f);
	else
		ev_io_start(f->loop, &f->io);
}

static void fetch_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_fetch_t *f = w->data;
	(void)loop;
	(void)revents;

	f->resolving = true;
	ss_resolver_lookup(f->resolver, &f->req, f->url.host, f->url.port, fetch_resolved, f);
}

static void fetch_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ss_fetch_t *f = w->data;
	static const char *const doing[] = {
	    [FETCH_RESOLVE] = "resolving its name",    [FETCH_CONNECT] = "connecting",
	    [FETCH_HANDSHAKE] = "in the TLS handshake", [FETCH_SEND] = "sending the request",
	    [FETCH_RECV] = "waiting for the answer",
	};
	(void)loop;
	(void)revents;

	fetch_fail(f, -ETIMEDOUT, "%s: no answer in %.0f s (%s)", f->url.host, w->repeat,
		   doing[f->state]);
}

/* The CA certificates: the file given, else the system's bundle. */
static int fetch_load_ca(ss_fetch_t *f, const char *ca_file, char *err, size_t errlen)
{
	char why[256];
	int ret = MBEDTLS_ERR_X509_FILE_IO_ERROR;

	if (ca_file && ca_file[0]) {
		snprintf(f->ca_name, sizeof(f->ca_name), "%s", ca_file);
		ret = mbedtls_x509_crt_parse_file(&f->ca, ca_file);
	} else {
		for (size_t i = 0; i < SS_ARRAY_LEN(fetch_ca_files) && ret < 0; i++)
			if (access(fetch_ca_files[i], R_OK) == 0) {
				snprintf(f->ca_name, sizeof(f->ca_name), "%s", fetch_ca_files[i]);
				ret = mbedtls_x509_crt_parse_file(&f->ca, fetch_ca_files[i]);
			}
		if (!f->ca_name[0]) {
			snprintf(err, errlen,
				 "no CA certificates: none of the system's bundles (%s, ...) can "
				 "be read; give one with --ca-file",
				 fetch_ca_files[0]);
			return -ENOENT;
		}
	}
	/* > 0: some certificates of a bundle did not parse; the rest serve. */
	if (ret < 0 || f->ca.raw.p == NULL) {
		mbedtls_strerror(ret, why, sizeof(why));
		snprintf(err, errlen, "CA file %s: %s", f->ca_name,
			 ret < 0 ? why : "no certificate in it");
		return -EINVAL;
	}
	return 0;
}

static int fetch_tls_setup(ss_fetch_t *f, char *err, size_t errlen)
{
	char why[256];
	int ret;

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
	/* TLS 1.3 and the PSA key exchange need it; once is enough, again is
	 * harmless. */
	if (psa_crypto_init() != PSA_SUCCESS) {
		snprintf(err, errlen, "cannot initialise PSA crypto for TLS");
		return -EIO;
	}
#endif
	ret = mbedtls_ssl_config_defaults(&f->conf, MBEDTLS_SSL_IS_CLIENT,
					  MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret == 0) {
		mbedtls_ssl_conf_authmode(&f->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&f->conf, &f->ca, NULL);
		mbedtls_ssl_conf_rng(&f->conf, fetch_rng, NULL);
#if MBEDTLS_VERSION_NUMBER < 0x03000000
		/* 2.x still offers TLS 1.0 and 1.1 by default; 3.x starts at 1.2. */
		mbedtls_ssl_conf_min_version(&f->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
					     MBEDTLS_SSL_MINOR_VERSION_3);
#endif
		ret = mbedtls_ssl_setup(&f->ssl, &f->conf);
	}
	/* The name goes out as SNI and is checked against the certificate; an
	 * address is checked by fetch_ip_matches, and NULL says so to 3.x. */
	if (ret == 0)
		ret = mbedtls_ssl_set_hostname(&f->ssl, f->url.literal ? NULL : f->url.host);
	if (ret != 0) {
		mbedtls_strerror(ret, why, sizeof(why));
		snprintf(err, errlen, "TLS set-up: %s", why);
		return -EIO;
	}
	mbedtls_ssl_set_bio(&f->ssl, f, fetch_send, fetch_recv, NULL);
	return 0;
}

ss_fetch_t *ss_fetch_start(struct ev_loop *loop, ss_resolver_t *resolver, const char *url,
			   const char *ca_file, double timeout, size_t cap, ss_fetch_cb cb,
			   void *arg, char *err, size_t errlen)
{
	ss_fetch_t *f = calloc(1, sizeof(*f));
	bool v6;
	int n;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->loop = loop;
	f->resolver = resolver;
	f->fd = -1;
	f->cb = cb;
	f->arg = arg;
	f->cap = cap;
	mbedtls_ssl_init(&f->ssl);
	mbedtls_ssl_config_init(&f->conf);
	mbedtls_x509_crt_init(&f->ca);
	ev_timer_init(&f->kick, fetch_kick_cb, 0, 0);
	ev_timer_init(&f->timer, fetch_timeout_cb, timeout, timeout);
	f->kick.data = f->timer.data = f;
	if (ss_httpc_url_parse(url, &f->url, err, errlen) < 0 ||
	    fetch_load_ca(f, ca_file, err, errlen) < 0 || fetch_tls_setup(f, err, errlen) < 0)
		goto fail;
	/* Room for the head, the chunks' framing and the NUL. */
	f->raw_cap = cap + cap / 8 + SS_HTTPC_HEAD_MAX;
	f->buf = malloc(f->raw_cap + 1);
	v6 = strchr(f->url.host, ':') != NULL;
	n = snprintf(f->request, sizeof(f->request),
		     "GET %s HTTP/1.1\r\nHost: %s%s%s%s%.0u\r\nUser-Agent: shadowsocks-c/%s\r\n"
		     "Accept: application/json, text/plain, */*\r\nConnection: close\r\n\r\n",
		     f->url.path, v6 ? "[" : "", f->url.host, v6 ? "]" : "",
		     f->url.port != 443 ? ":" : "", f->url.port != 443 ? f->url.port : 0u,
		     SS_VERSION);
	if (!f->buf || n < 0 || (size_t)n >= sizeof(f->request)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	f->req_len = (size_t)n;
	ev_timer_start(loop, &f->kick);
	ev_timer_start(loop, &f->timer);
	return f;
fail:
	fetch_free(f);
	return NULL;
}

void ss_fetch_cancel(ss_fetch_t *f)
{
	if (f && !f->dead)
		fetch_release(f);
}
