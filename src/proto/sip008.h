/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_SIP008_H
#define SS_PROTO_SIP008_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/url.h"

/* An online configuration document (SIP008): a JSON object with "version"
 * 1 and "servers", each server an object with "server", "server_port",
 * "password" and "method", and optionally "id", "remarks", "plugin" and
 * "plugin_opts" (other keys, such as the provider's traffic figures, are
 * passed over). Outline's dynamic access keys may answer with one ss://
 * URL (SIP002) instead, which reads as a document of one server.
 *
 * The document is text from the network: each server's plugin must be a
 * plain program name (ss_url_plugin_name_ok) and its options free of
 * control bytes, as a URL's. The method name is kept as given: whether we
 * run it is the caller's to say. */

/* Servers kept from one document; those after are counted, not kept. */
#define SS_SIP008_KEEP 16
#define SS_SIP008_ID_MAX 128

typedef struct ss_sip008_server {
	ss_url_t u; /* tag: "remarks", else "id" */
	char id[SS_SIP008_ID_MAX];
} ss_sip008_server_t;

typedef struct ss_sip008 {
	ss_sip008_server_t s[SS_SIP008_KEEP];
	size_t n;        /* kept */
	size_t n_more;   /* listed after the kept ones, left out */
	bool from_url;   /* the answer was one ss:// URL */
} ss_sip008_t;

/* Parses text[0..len) (no NUL needed) into doc. 0, or -EINVAL with err
 * holding one line that names the server and the field at fault and never
 * a password; doc is wiped then. A document with no server is refused. */
int ss_sip008_parse(const char *text, size_t len, ss_sip008_t *doc, char *err, size_t errlen);

/* Whether a and b list the same servers, in the same order. */
bool ss_sip008_same(const ss_sip008_t *a, const ss_sip008_t *b);

/* Wipes the passwords and everything else. */
void ss_sip008_clear(ss_sip008_t *doc);

#endif
