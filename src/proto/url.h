/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_URL_H
#define SS_PROTO_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Shadowsocks server URLs (SIP002):
 *
 *   ss://userinfo@host:port[/][?plugin=...][#tag]
 *
 * userinfo is either the URL-safe base64 (padding optional) of
 * "method:password", or "method:password" percent-encoded (the only form a
 * 2022 method may use: its password is a base64 PSK list). host is a name,
 * an IPv4 literal or an IPv6 literal in brackets. The plugin parameter is
 * percent-encoded "name;opt=value;..." (SIP003): the name, then its options.
 * The older whole-base64 form, ss://base64(method:password@host:port)#tag,
 * is read too.
 *
 * A URL is shared text (a link on a web page, a QR code): whoever wrote it
 * is not who runs it. So its plugin is only ever a plain program name
 * (ss_url_plugin_name_ok), never a path or a command line, and its options
 * are data for SS_PLUGIN_OPTIONS, without control characters. */

#define SS_URL_METHOD_MAX 64
#define SS_URL_SECRET_MAX 1024
#define SS_URL_HOST_MAX 256
#define SS_URL_PLUGIN_MAX 4096
#define SS_URL_TAG_MAX 256
/* A plugin name is one file name: no longer than a file name may be. */
#define SS_URL_PLUGIN_NAME_MAX 255

typedef struct ss_url {
	char method[SS_URL_METHOD_MAX];
	char password[SS_URL_SECRET_MAX]; /* as given: a password, or 2022 PSKs */
	char host[SS_URL_HOST_MAX];       /* without brackets */
	uint16_t port;
	char plugin[SS_URL_PLUGIN_MAX];      /* empty: none; else ss_url_plugin_name_ok */
	char plugin_opts[SS_URL_PLUGIN_MAX]; /* no control characters */
	char tag[SS_URL_TAG_MAX];
} ss_url_t;

/* Parses text into out. 0, or -EINVAL with err holding one line that names
 * the part that is wrong (scheme, userinfo, method, host, port, query, tag,
 * plugin) and never the password; out is wiped then. The method name is not
 * checked against the methods we have (the caller does that). A plugin that
 * is not a plain program name, or options with a control character, are
 * refused, quoting what was given. */
int ss_url_parse(const char *text, ss_url_t *out, char *err, size_t errlen);

/* Whether name is a plain program name, the only plugin a URL may give: 1
 * to SS_URL_PLUGIN_NAME_MAX bytes of ASCII letters, digits, '-', '_', '.'
 * and '+', the first neither '-' (it would read as an option) nor '.' (".",
 * "..", a hidden file). Such a name is no path, no option and no shell
 * word: it can only be looked up in PATH and executed as it is. */
bool ss_url_plugin_name_ok(const char *name);

/* The URL for u: base64 userinfo for methods whose name does not start with
 * "2022-", percent-encoded otherwise; plugin and tag when set. Returns the
 * length written (NUL not counted), or 0 when it does not fit in len. */
size_t ss_url_format(const ss_url_t *u, char *out, size_t len);

/* Wipes the password. */
void ss_url_clear(ss_url_t *u);

#endif
