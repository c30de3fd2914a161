/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_FETCH_H
#define SS_NET_FETCH_H

#include <stddef.h>

#include "net/resolver.h"

struct ev_loop;

/* One HTTPS GET on the loop, never blocking it: the name through the
 * resolver, a non-blocking connect, TLS by Mbed TLS with the server's
 * certificate checked against the CA file given, else the system's
 * bundle, and against the URL's host; then HTTP/1.1 with Connection:
 * close. Only 200 is an answer: a redirect is refused, naming where it
 * points. The body (Content-Length, chunked, or up to the close) must fit
 * in cap bytes. */

/* The end, once: rc 0 with the body (NUL-terminated, len bytes, valid
 * for the call), or -errno with err saying why in one line. The fetch is
 * freed when the callback returns. */
typedef void (*ss_fetch_cb)(void *arg, int rc, const char *body, size_t len, const char *err);

typedef struct ss_fetch ss_fetch_t;

/* Starts a GET of url (https:// or ssconf://). The callback never runs
 * before this returns. NULL with err when it cannot start (a bad URL, no
 * CA certificate, out of memory). */
ss_fetch_t *ss_fetch_start(struct ev_loop *loop, ss_resolver_t *resolver, const char *url,
			   const char *ca_file, double timeout, size_t cap, ss_fetch_cb cb,
			   void *arg, char *err, size_t errlen);

/* Stops it without calling back, and frees it. */
void ss_fetch_cancel(ss_fetch_t *f);

#endif
