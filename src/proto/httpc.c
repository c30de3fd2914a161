/* SPDX-License-Identifier: MIT */
#include "proto/httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proto/http.h"
#include "util/result.h"

const char *ss_httpc_url_shown(const char *text, char *buf, size_t len)
{
	const char *sep = strstr(text, "://");
	const char *auth, *at;
	size_t al;

	if (sep && (sep - text > 16 || memchr(text, '/', (size_t)(sep - text))))
		sep = NULL;
	auth = sep ? sep + 3 : text;
	al = strcspn(auth, "/?#");
	at = memchr(auth, '@', al);
	if (at) {
		al -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	snprintf(buf, len, "%.*s%s%s%.*s%s", sep ? (int)(sep - text) : 0, text,
		 sep ? "://" : "", at ? "...@" : "", (int)(al > 255 ? 255 : al), auth,
		 auth[al] ? "/..." : "");
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return buf;
}

static int httpc_err(char *err, size_t errlen, const char *what, const char *text)
{
	char shown[SS_HTTPC_SHOWN_MAX];

	snprintf(err, errlen, "URL '%s': %s", ss_httpc_url_shown(text, shown, sizeof(shown)),
		 what);
	return -EINVAL;
}

int ss_httpc_url_parse(const char *text, ss_httpc_url_t *u, char *err, size_t errlen)
{
	const char *p, *auth_end, *host, *host_end, *port = NULL;
	unsigned char tmp[16];
	size_t hl, pl;

	memset(u, 0, sizeof(*u));
	if (strncasecmp(text, "https://", 8) == 0)
		p = text + 8;
	else if (strncasecmp(text, "ssconf://", 9) == 0)
		p = text + 9;
	else
		return httpc_err(err, errlen, "it must start with https:// or ssconf://", text);
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return httpc_err(err, errlen, "a space or control byte in it", text);
	auth_end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(auth_end - p)))
		return httpc_err(err, errlen, "a user name or password in it is not supported",
				 text);
	host = p;
	if (*p == '[') {
		host_end = memchr(p, ']', (size_t)(auth_end - p));
		if (!host_end)
			return httpc_err(err, errlen, "no ']' after the IPv6 address", text);
		host = p + 1;
		if (host_end + 1 < auth_end) {
			if (host_end[1] != ':')
				return httpc_err(err, errlen, "junk after the IPv6 address", text);
			port = host_end + 2;
		}
	} else {
		host_end = memchr(p, ':', (size_t)(auth_end - p));
		if (host_end)
			port = host_end + 1;
		else
			host_end = auth_end;
	}
	hl = (size_t)(host_end - host);
	if (hl == 0 || hl >= sizeof(u->host))
		return httpc_err(err, errlen, "no host, or a host over 255 bytes", text);
	memcpy(u->host, host, hl);
	u->port = 443;
	if (port) {
		unsigned long v = 0;
		if (port == auth_end || auth_end - port > 5)
			return httpc_err(err, errlen, "the port must be 1-65535", text);
		for (const char *c = port; c < auth_end; c++) {
			if (*c < '0' || *c > '9')
				return httpc_err(err, errlen, "the port must be 1-65535", text);
			v = v * 10 + (unsigned long)(*c - '0');
		}
		if (v == 0 || v > 65535)
			return httpc_err(err, errlen, "the port must be 1-65535", text);
		u->port = (uint16_t)v;
	}
	u->literal = inet_pton(AF_INET, u->host, tmp) == 1 || inet_pton(AF_INET6, u->host, tmp) == 1;
	if (host != p && !strchr(u->host, ':'))
		return httpc_err(err, errlen, "brackets around what is no IPv6 address", text);
	if (*auth_end == '/' || *auth_end == '?') {
		pl = strcspn(auth_end, "#");
		if (*auth_end == '?')
			u->path[0] = '/';
		if (pl + 2 > sizeof(u->path))
			return httpc_err(err, errlen, "the path is over 2 KiB", text);
		memcpy(u->path + (*auth_end == '?'), auth_end, pl);
	} else {
		strcpy(u->path, "/");
	}
	return 0;
}

/* ---- The answer ------------------------------------------------------- */

static bool httpc_is(const uint8_t *name, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp((const char *)name, want, n) == 0;
}

static int httpc_length(const uint8_t *v, size_t vl, ss_httpc_head_t *h)
{
	uint64_t x = 0;

	if (vl == 0 || vl > 15)
		return SS_ERR;
	for (size_t k = 0; k < vl; k++) {
		if (v[k] < '0' || v[k] > '9')
			return SS_ERR;
		x = x * 10 + (uint64_t)(v[k] - '0');
	}
	if (h->has_length && h->length != x)
		return SS_ERR;
	h->has_length = true;
	h->length = x;
	return SS_OK;
}

static int httpc_status_line(const uint8_t *l, size_t n, ss_httpc_head_t *h)
{
	/* HTTP/1.x SSS[ reason] */
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' || l[8] != ' ')
		return SS_ERR;
	for (int k = 9; k < 12; k++)
		if (l[k] < '0' || l[k] > '9')
			return SS_ERR;
	if (n > 12 && l[12] != ' ')
		return SS_ERR;
	h->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return h->status >= 100 ? SS_OK : SS_ERR;
}

int ss_httpc_parse_head(const uint8_t *buf, size_t len, ss_httpc_head_t *h)
{
	size_t look = len < SS_HTTPC_HEAD_MAX ? len : SS_HTTPC_HEAD_MAX, pos = 0, n;
	bool te = false;
	int r;

	memset(h, 0, sizeof(*h));
	r = ss_http_line(buf, look, 0, &n);
	if (r != SS_OK)
		return r == SS_AGAIN && look == SS_HTTPC_HEAD_MAX ? SS_ERR : r;
	if (httpc_status_line(buf, n, h) != SS_OK)
		return SS_ERR;
	pos = n + 2;
	for (;;) {
		size_t nl, vo, vl;
		const uint8_t *v;

		r = ss_http_line(buf, look, pos, &n);
		if (r != SS_OK)
			return r == SS_AGAIN && look == SS_HTTPC_HEAD_MAX ? SS_ERR : r;
		if (n == 0)
			break;
		if (buf[pos] == ' ' || buf[pos] == '\t' ||
		    ss_http_field(buf + pos, n, &nl, &vo, &vl) != SS_OK)
			return SS_ERR;
		v = buf + pos + vo;
		if (httpc_is(buf + pos, nl, "content-length") && httpc_length(v, vl, h) != SS_OK)
			return SS_ERR;
		if (httpc_is(buf + pos, nl, "transfer-encoding")) {
			if (te || !httpc_is(v, vl, "chunked"))
				return SS_ERR;
			te = h->chunked = true;
		}
		if (httpc_is(buf + pos, nl, "location"))
			snprintf(h->location, sizeof(h->location), "%.*s",
				 (int)(vl < 255 ? vl : 255), (const char *)v);
		pos += n + 2;
	}
	if (h->chunked && h->has_length)
		return SS_ERR;
	h->len = pos + 2;
	return SS_OK;
}

int ss_httpc_dechunk(uint8_t *buf, size_t len, size_t cap, size_t *out)
{
	size_t pos = 0, total = 0, used;
	uint64_t size;
	int r;

	/* First walk the framing on a read-only view; move the data only once
	 * the body is whole, so that a call with more bytes starts over. */
	for (;;) {
		r = ss_http_parse_chunk_size(buf + pos, len - pos, &used, &size);
		if (r != SS_OK)
			return r;
		pos += used;
		if (size == 0)
			break;
		if (size > cap - total)
			return SS_ERR;
		if (len - pos < size + 2)
			return SS_AGAIN;
		if (buf[pos + size] != '\r' || buf[pos + size + 1] != '\n')
			return SS_ERR;
		total += size;
		pos += size + 2;
	}
	r = ss_http_parse_trailer(buf + pos, len - pos, &used);
	if (r != SS_OK)
		return r;
	pos = 0;
	total = 0;
	for (;;) {
		ss_http_parse_chunk_size(buf + pos, len - pos, &used, &size);
		pos += used;
		if (size == 0)
			break;
		memmove(buf + total, buf + pos, size);
		total += size;
		pos += size + 2;
	}
	*out = total;
	return SS_OK;
}
