/* SPDX-License-Identifier: MIT */
#include "proto/url.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "crypto/primitives.h"

/* Room for the authority, or the decoded whole-base64 form of it. */
#define URL_WORK (2 * (SS_URL_METHOD_MAX + SS_URL_SECRET_MAX) + SS_URL_HOST_MAX + 16)

static int url_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		int n = snprintf(err, errlen, "ss:// URL: ");
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < errlen)
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
		/* What it quotes of the URL stays on one line. */
		for (char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	}
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes n bytes of in into out (cap bytes, NUL-terminated).
 * -EINVAL for a bad escape, a NUL, or an output that does not fit. */
static int pct_decode(const char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)in[i];

		if (c == '%') {
			int hi, lo;
			if (i + 2 >= n || (hi = hexval(in[i + 1])) < 0 ||
			    (lo = hexval(in[i + 2])) < 0)
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c == 0 || o + 1 >= cap)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* Base64 of any alphabet and padding to text (NUL-terminated), or -EINVAL. */
static int b64_decode(const char *in, size_t n, char *out, size_t cap)
{
	static const int variants[] = {
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING,
	    sodium_base64_VARIANT_URLSAFE,
	    sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
	    sodium_base64_VARIANT_ORIGINAL,
	};

	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		size_t got = 0;
		const char *end = NULL;

		if (cap > 1 &&
		    sodium_base642bin((unsigned char *)out, cap - 1, in, n, NULL, &got, &end,
				      variants[v]) == 0 &&
		    end == in + n && got > 0 && !memchr(out, '\0', got)) {
			out[got] = '\0';
			return 0;
		}
	}
	ss_wipe(out, cap);
	return -EINVAL;
}

/* "method:password" into u. */
static int url_userinfo(char *info, ss_url_t *u, char *err, size_t errlen)
{
	char *colon = strchr(info, ':');

	if (!colon)
		return url_err(err, errlen, "the userinfo is not method:password");
	*colon = '\0';
	if (!info[0] || strlen(info) >= sizeof(u->method))
		return url_err(err, errlen, "the method name is empty or too long");
	strcpy(u->method, info);
	if (strlen(colon + 1) >= sizeof(u->password))
		return url_err(err, errlen, "the password is too long");
	strcpy(u->password, colon + 1);
	return 0;
}

/* host:port, host a name, an IPv4 literal or [IPv6]. */
static int url_hostport(const char *s, size_t n, ss_url_t *u, char *err, size_t errlen)
{
	const char *port;
	size_t hl;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		struct in6_addr a6;
		char lit[64];

		if (!close || close + 1 >= s + n || close[1] != ':')
			return url_err(err, errlen,
				       "the host is an unclosed [IPv6] or has no port");
		hl = (size_t)(close - s - 1);
		if (hl == 0 || hl >= sizeof(lit))
			return url_err(err, errlen, "the [IPv6] host is empty or too long");
		memcpy(lit, s + 1, hl);
		lit[hl] = '\0';
		if (inet_pton(AF_INET6, lit, &a6) != 1)
			return url_err(err, errlen, "'%s' is not an IPv6 address", lit);
		memcpy(u->host, lit, hl + 1);
		port = close + 2;
	} else {
		const char *colon = n ? memrchr(s, ':', n) : NULL;

		if (!colon)
			return url_err(err, errlen, "the server has no port (host:port)");
		hl = (size_t)(colon - s);
		if (hl == 0 || hl >= sizeof(u->host))
			return url_err(err, errlen, "the host is empty or too long");
		for (size_t i = 0; i < hl; i++) {
			char c = s[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
				return url_err(err, errlen,
					       "the host has a character a host name cannot have "
					       "(an IPv6 address goes in brackets)");
		}
		memcpy(u->host, s, hl);
		u->host[hl] = '\0';
		port = colon + 1;
	}
	size_t pl = (size_t)(s + n - port);
	unsigned long v = 0;
	if (pl == 0 || pl > 5)
		return url_err(err, errlen, "the port is missing or too long");
	for (size_t i = 0; i < pl; i++) {
		if (port[i] < '0' || port[i] > '9')
			return url_err(err, errlen, "the port '%.*s' is not a number", (int)pl,
				       port);
		v = v * 10 + (unsigned long)(port[i] - '0');
	}
	if (v == 0 || v > 65535)
		return url_err(err, errlen, "the port %lu is out of range", v);
	u->port = (uint16_t)v;
	return 0;
}

bool ss_url_plugin_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > SS_URL_PLUGIN_NAME_MAX || name[0] == '-' || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.' || c == '+'))
			return false;
	}
	return true;
}

/* Up to URL_QUOTE_MAX bytes of s for a message, each byte that is not
 * printable ASCII as '?' (no terminal control sequence gets through), and
 * "..." when it goes on. */
#define URL_QUOTE_MAX 64
static const char *url_quote(const char *s, char out[static URL_QUOTE_MAX + 4])
{
	size_t i = 0;

	for (; s[i] && i < URL_QUOTE_MAX; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	strcpy(out + i, s[i] ? "..." : "");
	return out;
}

/* The plugin parameter, decoded: "name;options". The name must be a plain
 * program name, and the options plain text: both come from whoever wrote
 * the URL, and they are run and handed over by whoever uses it. */
static int url_plugin(char *value, ss_url_t *u, char *err, size_t errlen)
{
	char shown[URL_QUOTE_MAX + 4];
	char *semi = strchr(value, ';');
	const char *opts = semi ? semi + 1 : "";

	if (semi)
		*semi = '\0';
	if (!ss_url_plugin_name_ok(value))
		return url_err(
		    err, errlen,
		    "the plugin in the URL's \"plugin\" parameter is not a plain program "
		    "name: `%s' (a URL may only name a program to look for in PATH)",
		    url_quote(value, shown));
	if (strlen(opts) >= sizeof(u->plugin_opts))
		return url_err(err, errlen,
			       "the plugin options in the URL's \"plugin\" parameter are too long");
	for (const char *o = opts; *o; o++)
		if ((unsigned char)*o < 0x20 || *o == 0x7f)
			return url_err(err, errlen,
				       "the plugin options in the URL's \"plugin\" parameter have "
				       "a control character (0x%02x at byte %zu): `%s'",
				       (unsigned)(unsigned char)*o, (size_t)(o - opts),
				       url_quote(opts, shown));
	strcpy(u->plugin, value);
	strcpy(u->plugin_opts, opts);
	return 0;
}

/* The query: plugin=name;opts (percent-encoded); other parameters are
 * ignored, and so is an empty plugin= (no plugin, as an empty "plugin" in
 * the configuration). */
static int url_query(const char *q, size_t n, ss_url_t *u, char *err, size_t errlen)
{
	bool seen = false;

	while (n) {
		const char *amp = memchr(q, '&', n);
		size_t len = amp ? (size_t)(amp - q) : n;

		if (len > 7 && strncmp(q, "plugin=", 7) == 0) {
			char value[2 * SS_URL_PLUGIN_MAX];
			int rc;

			if (seen)
				return url_err(err, errlen, "the plugin is given twice");
			seen = true;
			if (pct_decode(q + 7, len - 7, value, sizeof(value)) < 0)
				return url_err(err, errlen,
					       "the plugin parameter is badly encoded");
			if ((rc = url_plugin(value, u, err, errlen)) < 0)
				return rc;
		}
		if (!amp)
			break;
		n -= len + 1;
		q = amp + 1;
	}
	return 0;
}

/* The authority, userinfo@host:port; encoded: the userinfo is still
 * percent-encoded or base64 (it is not in the older whole-base64 form). */
static int url_authority(char *s, size_t n, ss_url_t *u, bool encoded, char *err, size_t errlen)
{
	char *at = NULL, info[SS_URL_METHOD_MAX + SS_URL_SECRET_MAX + 2];
	int rc;

	for (size_t i = n; i-- > 0;)
		if (s[i] == '@') {
			at = s + i;
			break;
		}
	if (!at)
		return url_err(err, errlen, "no userinfo@ before the host");
	size_t il = (size_t)(at - s);
	if (!encoded) {
		if (il >= sizeof(info))
			return url_err(err, errlen, "the userinfo is too long");
		memcpy(info, s, il);
		info[il] = '\0';
	} else if (memchr(s, ':', il)) {
		if (pct_decode(s, il, info, sizeof(info)) < 0)
			return url_err(err, errlen, "the userinfo is badly percent-encoded");
	} else if (b64_decode(s, il, info, sizeof(info)) < 0) {
		return url_err(err, errlen,
			       "the userinfo is neither method:password nor its base64");
	}
	rc = url_userinfo(info, u, err, errlen);
	ss_wipe(info, sizeof(info));
	if (rc < 0)
		return rc;
	return url_hostport(at + 1, n - il - 1, u, err, errlen);
}

int ss_url_parse(const char *text, ss_url_t *u, char *err, size_t errlen)
{
	char work[URL_WORK];
	const char *p, *hash, *q, *end;
	int rc;

	memset(u, 0, sizeof(*u));
	if (err && errlen)
		err[0] = '\0';
	if (strncasecmp(text, "ss://", 5) != 0) {
		rc = url_err(err, errlen, "it does not start with ss://");
		goto out;
	}
	p = text + 5;
	hash = strchr(p, '#');
	end = hash ? hash : p + strlen(p);
	if (hash && pct_decode(hash + 1, strlen(hash + 1), u->tag, sizeof(u->tag)) < 0) {
		rc = url_err(err, errlen, "the #tag is badly encoded or too long");
		goto out;
	}
	q = memchr(p, '?', (size_t)(end - p));
	if (q && (rc = url_query(q + 1, (size_t)(end - q - 1), u, err, errlen)) < 0)
		goto out;
	if (q)
		end = q;
	if (end > p && end[-1] == '/')
		end--;
	size_t n = (size_t)(end - p);
	if (memchr(p, '/', n)) {
		rc = url_err(err, errlen, "there is a path after the port");
		goto out;
	}
	if (n >= sizeof(work)) {
		rc = url_err(err, errlen, "it is too long");
		goto out;
	}
	if (memchr(p, '@', n)) {
		memcpy(work, p, n);
		work[n] = '\0';
		rc = url_authority(work, n, u, true, err, errlen);
	} else if (b64_decode(p, n, work, sizeof(work)) == 0) {
		/* The older form: the whole authority in base64. */
		rc = url_authority(work, strlen(work), u, false, err, errlen);
	} else {
		rc = url_err(err, errlen, "no userinfo@ before the host");
	}
out:
	ss_wipe(work, sizeof(work));
	if (rc < 0)
		ss_url_clear(u);
	return rc;
}

/* Percent-encodes s into out at *o (cap bytes); false when it does not fit. */
static bool pct_encode(const char *s, char *out, size_t cap, size_t *o)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
		size_t need = keep ? 1 : 3;

		if (*o + need >= cap)
			return false;
		if (keep) {
			out[(*o)++] = (char)c;
		} else {
			out[(*o)++] = '%';
			out[(*o)++] = hex[c >> 4];
			out[(*o)++] = hex[c & 15];
		}
	}
	return true;
}

static bool put(const char *s, char *out, size_t cap, size_t *o)
{
	size_t n = strlen(s);

	if (*o + n >= cap)
		return false;
	memcpy(out + *o, s, n);
	*o += n;
	return true;
}

size_t ss_url_format(const ss_url_t *u, char *out, size_t len)
{
	char info[SS_URL_METHOD_MAX + SS_URL_SECRET_MAX + 2];
	char b64[2 * sizeof(info)], plugin[2 * SS_URL_PLUGIN_MAX + 2];
	size_t o = 0;
	bool ok;

	if (!len)
		return 0;
	ok = put("ss://", out, len, &o);
	if (strncmp(u->method, "2022-", 5) == 0) {
		ok = ok && pct_encode(u->method, out, len, &o) && put(":", out, len, &o) &&
		     pct_encode(u->password, out, len, &o);
	} else {
		snprintf(info, sizeof(info), "%s:%s", u->method, u->password);
		sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)info, strlen(info),
				  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		ok = ok && put(b64, out, len, &o);
		ss_wipe(info, sizeof(info));
		ss_wipe(b64, sizeof(b64));
	}
	ok = ok && put("@", out, len, &o);
	if (ok && strchr(u->host, ':'))
		ok = put("[", out, len, &o) && put(u->host, out, len, &o) && put("]", out, len, &o);
	else if (ok)
		ok = put(u->host, out, len, &o);
	if (ok) {
		char port[8];
		snprintf(port, sizeof(port), ":%u/", (unsigned)u->port);
		ok = put(port, out, len, &o);
	}
	if (ok && u->plugin[0]) {
		snprintf(plugin, sizeof(plugin), "%s%s%s", u->plugin, u->plugin_opts[0] ? ";" : "",
			 u->plugin_opts);
		ok = put("?plugin=", out, len, &o) && pct_encode(plugin, out, len, &o);
	}
	if (ok && u->tag[0])
		ok = put("#", out, len, &o) && pct_encode(u->tag, out, len, &o);
	if (!ok) {
		ss_wipe(out, len);
		return 0;
	}
	out[o] = '\0';
	return o;
}

void ss_url_clear(ss_url_t *u)
{
	ss_wipe(u, sizeof(*u));
}
