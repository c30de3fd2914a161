/* SPDX-License-Identifier: MIT */
#include "proto/socks5_auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/primitives.h"
#include "util/result.h"

int ss_socks5_parse_login(const uint8_t *buf, size_t len, size_t *used, ss_socks5_login_t *out)
{
	if (len < 1)
		return SS_AGAIN;
	if (buf[0] != SS_SOCKS5_AUTH_VERSION)
		return SS_ERR;
	if (len < 2)
		return SS_AGAIN;
	size_t nlen = buf[1];
	if (nlen == 0)
		return SS_ERR;
	if (len < 3 + nlen)
		return SS_AGAIN;
	size_t plen = buf[2 + nlen];
	if (plen == 0)
		return SS_ERR;
	if (len < 3 + nlen + plen)
		return SS_AGAIN;

	out->name = buf + 2;
	out->name_len = nlen;
	out->pass = buf + 3 + nlen;
	out->pass_len = plen;
	*used = 3 + nlen + plen;
	return SS_OK;
}

bool ss_socks5_greeting_offers(const uint8_t *buf, size_t used, uint8_t method)
{
	if (used < 2 || used < 2 + (size_t)buf[1])
		return false;
	return memchr(buf + 2, method, buf[1]) != NULL;
}

size_t ss_socks5_encode_login_reply(bool ok, uint8_t out[2])
{
	out[0] = SS_SOCKS5_AUTH_VERSION;
	out[1] = ok ? 0x00 : 0x01;
	return 2;
}

/* Nonzero unless got[0..got_len) equals the stored field. It reads all 255
 * stored bytes every time; the only branch is on got_len, which the client
 * chose and so already knows. */
static unsigned field_diff(const uint8_t *stored, size_t stored_len, const uint8_t *got,
			   size_t got_len)
{
	unsigned d = (unsigned)(stored_len ^ got_len);

	for (size_t i = 0; i < SS_SOCKS5_FIELD_MAX; i++)
		d |= (unsigned)(stored[i] ^ (i < got_len ? got[i] : 0));
	return d;
}

bool ss_socks5_login_check(const ss_socks5_cred_t *creds, size_t n, const ss_socks5_login_t *login)
{
	/* volatile: the compiler must not stop at the first match. */
	volatile unsigned ok = 0;

	if (login->name_len > SS_SOCKS5_FIELD_MAX || login->pass_len > SS_SOCKS5_FIELD_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d =
		    field_diff(creds[i].name, creds[i].name_len, login->name, login->name_len) |
		    field_diff(creds[i].pass, creds[i].pass_len, login->pass, login->pass_len);
		/* 1 exactly when d is 0, without a branch. */
		ok |= 1u & ((d - 1u) >> (sizeof(d) * 8 - 1));
	}
	return ok != 0;
}

static int cred_fill(ss_socks5_cred_t *c, const char *name, size_t nlen, const char *pass,
		     size_t plen)
{
	if (nlen == 0 || nlen > SS_SOCKS5_FIELD_MAX || plen == 0 || plen > SS_SOCKS5_FIELD_MAX)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	memcpy(c->name, name, nlen);
	memcpy(c->pass, pass, plen);
	c->name_len = (uint8_t)nlen;
	c->pass_len = (uint8_t)plen;
	return 0;
}

int ss_socks5_cred_set(ss_socks5_cred_t *c, const char *name, const char *pass)
{
	return cred_fill(c, name, strlen(name), pass, strlen(pass));
}

static int users_err(char *err, size_t errlen, size_t line, const char *why)
{
	snprintf(err, errlen, "line %zu: %s", line, why);
	return -EINVAL;
}

/* One line (without its newline) into *c; 1 when it is blank or a comment. */
static int users_line(const char *p, size_t n, size_t line, ss_socks5_cred_t *c, char *err,
		      size_t errlen)
{
	if (n > 0 && p[n - 1] == '\r')
		n--;
	if (n == 0 || p[0] == '#')
		return 1;
	if (memchr(p, '\0', n) != NULL)
		return users_err(err, errlen, line, "holds a NUL byte");
	const char *colon = memchr(p, ':', n);
	if (colon == NULL)
		return users_err(err, errlen, line, "expected name:password");
	size_t nlen = (size_t)(colon - p), plen = n - nlen - 1;
	if (nlen == 0 || nlen > SS_SOCKS5_FIELD_MAX)
		return users_err(err, errlen, line, "the name must be 1 to 255 bytes");
	if (plen == 0 || plen > SS_SOCKS5_FIELD_MAX)
		return users_err(err, errlen, line, "the password must be 1 to 255 bytes");
	return cred_fill(c, p, nlen, colon + 1, plen);
}

int ss_socks5_users_parse(const char *text, size_t len, ss_socks5_cred_t **out, size_t *n,
			  char *err, size_t errlen)
{
	ss_socks5_cred_t *v = calloc(SS_SOCKS5_USERS_MAX, sizeof(*v));
	size_t count = 0, line = 0, pos = 0;
	int rc = 0;

	if (v == NULL) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -EINVAL;
	}
	while (pos < len && rc == 0) {
		const char *p = text + pos, *nl = memchr(p, '\n', len - pos);
		size_t ln = nl ? (size_t)(nl - p) : len - pos;
		pos += ln + (nl != NULL);
		line++;
		if (count == SS_SOCKS5_USERS_MAX) {
			ss_socks5_cred_t spare;
			if (users_line(p, ln, line, &spare, err, errlen) == 0)
				rc = users_err(err, errlen, line, "more than 1024 users");
			ss_wipe(&spare, sizeof(spare));
			continue;
		}
		int r = users_line(p, ln, line, &v[count], err, errlen);
		if (r < 0)
			rc = r;
		else if (r == 0) {
			for (size_t j = 0; j < count && rc == 0; j++)
				if (v[j].name_len == v[count].name_len &&
				    memcmp(v[j].name, v[count].name, v[j].name_len) == 0)
					rc =
					    users_err(err, errlen, line, "the name is taken twice");
			count++;
		}
	}
	if (rc == 0 && count == 0)
		rc = users_err(err, errlen, line, "no users in the file");
	/* Kept at its size, not the room for the most: a copy, so that the
	 * larger block is wiped before it goes (realloc would not). */
	ss_socks5_cred_t *fit = rc == 0 ? calloc(count, sizeof(*fit)) : NULL;
	if (rc == 0 && fit == NULL)
		rc = users_err(err, errlen, line, strerror(ENOMEM));
	if (fit != NULL)
		memcpy(fit, v, count * sizeof(*fit));
	ss_wipe(v, SS_SOCKS5_USERS_MAX * sizeof(*v));
	free(v);
	if (rc != 0)
		return rc;
	*out = fit;
	*n = count;
	return 0;
}
