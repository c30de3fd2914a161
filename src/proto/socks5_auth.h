/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_SOCKS5_AUTH_H
#define SS_PROTO_SOCKS5_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SOCKS5 username/password authentication (RFC 1929), the server side:
 * the sub-negotiation parser, the credential check and the users file. */

enum {
	SS_SOCKS5_AUTH_USERPASS = 0x02, /* the method number (RFC 1928) */
	SS_SOCKS5_AUTH_VERSION = 0x01,  /* the sub-negotiation's version byte */
	SS_SOCKS5_FIELD_MAX = 255,      /* ULEN and PLEN are one byte, 1..255 */
	SS_SOCKS5_USERS_MAX = 1024,     /* every check walks them all */
};

/* One user. Both fields are zero-padded to their full size, so a check
 * always reads the same number of bytes whatever the lengths. */
typedef struct ss_socks5_cred {
	uint8_t name[SS_SOCKS5_FIELD_MAX];
	uint8_t pass[SS_SOCKS5_FIELD_MAX];
	uint8_t name_len, pass_len; /* 1..255 */
} ss_socks5_cred_t;

/* A request as parsed: pointers into the caller's buffer. */
typedef struct ss_socks5_login {
	const uint8_t *name, *pass;
	size_t name_len, pass_len;
} ss_socks5_login_t;

/* VER(1) ULEN UNAME PLEN PASSWD on a read-only view. SS_OK: *used and *out
 * set; SS_AGAIN: incomplete; SS_ERR: the version is not 1 or a field is
 * empty (judged as soon as the byte arrives). */
int ss_socks5_parse_login(const uint8_t *buf, size_t len, size_t *used, ss_socks5_login_t *out);

/* Whether the greeting buf[0..used) (parsed by ss_socks5_parse_greeting)
 * offers method. */
bool ss_socks5_greeting_offers(const uint8_t *buf, size_t used, uint8_t method);

/* The reply VER STATUS: 2 bytes, status 0 for success. */
size_t ss_socks5_encode_login_reply(bool ok, uint8_t out[2]);

/* Whether login matches one of creds[0..n). Every user's name and password
 * is compared in full, with no early exit, so the time taken tells nothing
 * about which bytes (or which user) matched. */
bool ss_socks5_login_check(const ss_socks5_cred_t *creds, size_t n, const ss_socks5_login_t *login);

/* Fills c from name and pass (NUL-terminated). 0, or -EINVAL when either is
 * empty or longer than 255 bytes. */
int ss_socks5_cred_set(ss_socks5_cred_t *c, const char *name, const char *pass);

/* The users file: one "name:password" per line. The name ends at the first
 * ':', the password is the rest of the line (it may hold ':'); a trailing
 * CR is dropped; empty lines and lines whose first byte is '#' are skipped.
 * Names are unique; both fields 1..255 bytes; no NUL bytes; at most
 * SS_SOCKS5_USERS_MAX users. Returns 0 with *out (calloc'ed; the caller
 * wipes and frees it) and *n (at least 1), or -EINVAL with a line in err
 * naming the line number (never the password). */
int ss_socks5_users_parse(const char *text, size_t len, ss_socks5_cred_t **out, size_t *n,
			  char *err, size_t errlen);

#endif
