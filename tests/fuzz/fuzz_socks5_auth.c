/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SOCKS5 username/password (RFC 1929). The first byte
 * picks (by parity) the login message or the users file; the rest is the
 * message or the file's text. A login is parsed at every prefix, as the
 * handshake sees it grow; one that parses is checked against users made
 * from it, which it must match, and against the same with the password's
 * last byte changed, which it must not. Every user a file yields must log
 * in with its own name and password, and no user with a changed password. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/socks5_auth.h"

static void check_login_against(const ss_socks5_login_t *l)
{
	ss_socks5_cred_t c[2];

	memset(c, 0, sizeof(c));
	memcpy(c[0].name, l->name, l->name_len);
	memcpy(c[0].pass, l->pass, l->pass_len);
	c[0].name_len = (uint8_t)l->name_len;
	c[0].pass_len = (uint8_t)l->pass_len;
	c[1] = c[0];
	c[1].pass[l->pass_len - 1] ^= 1;
	FZ_CHECK(ss_socks5_login_check(c, 2, l));
	FZ_CHECK(ss_socks5_login_check(c + 1, 1, l) == false);
	FZ_CHECK(ss_socks5_login_check(c, 0, l) == false);
}

static void fuzz_login(const uint8_t *buf, size_t len)
{
	ss_socks5_login_t full, p;
	size_t used = 0, pused;
	int rc = ss_socks5_parse_login(buf, len, &used, &full);

	if (rc == SS_OK) {
		FZ_CHECK(used == 3 + full.name_len + full.pass_len && used <= len);
		FZ_CHECK(full.name_len >= 1 && full.name_len <= 255);
		FZ_CHECK(full.pass_len >= 1 && full.pass_len <= 255);
		FZ_CHECK(full.name == buf + 2 && full.pass == buf + 3 + full.name_len);
		check_login_against(&full);
	}
	/* A prefix that completes completes the same way; a refusal stays. */
	for (size_t k = 0; k < len && k <= 3 + 255 + 255; k++) {
		int r = ss_socks5_parse_login(buf, k, &pused, &p);
		if (r == SS_OK)
			FZ_CHECK(rc == SS_OK && pused == used);
		else if (r == SS_ERR)
			FZ_CHECK(rc == SS_ERR);
		else
			FZ_CHECK(r == SS_AGAIN && (rc != SS_OK || k < used));
	}
}

static void fuzz_users(const uint8_t *buf, size_t len)
{
	ss_socks5_cred_t *v = NULL;
	size_t n = 0;
	char err[128];

	if (ss_socks5_users_parse((const char *)buf, len, &v, &n, err, sizeof(err)) != 0) {
		FZ_CHECK(v == NULL && err[0] != '\0');
		return;
	}
	FZ_CHECK(v != NULL && n >= 1 && n <= SS_SOCKS5_USERS_MAX);
	for (size_t i = 0; i < n; i++) {
		ss_socks5_login_t l = {v[i].name, v[i].pass, v[i].name_len, v[i].pass_len};
		uint8_t other[SS_SOCKS5_FIELD_MAX];

		FZ_CHECK(l.name_len >= 1 && l.pass_len >= 1);
		FZ_CHECK(memchr(l.name, ':', l.name_len) == NULL);
		FZ_CHECK(ss_socks5_login_check(v, n, &l));
		/* Names are unique, so a wrong password matches nobody. */
		memcpy(other, l.pass, l.pass_len);
		other[0] ^= 0x80;
		l.pass = other;
		FZ_CHECK(ss_socks5_login_check(v, n, &l) == false);
	}
	ss_wipe(v, n * sizeof(*v));
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_login(data + 1, size - 1);
	else
		fuzz_users(data + 1, size - 1);
	return 0;
}
