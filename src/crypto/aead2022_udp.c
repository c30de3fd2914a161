/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 UDP packets (SIP022 3.2 and 4.1, SIP023 UDP). */
#include "crypto/aead2022.h"

#include <errno.h>
#include <string.h>

#include "crypto/aead2022_internal.h"
#include "util/result.h"

static bool is_aes(const ss_2022_udp_t *u)
{
	return u->method->alg == SS_AEAD_AES_GCM;
}

static size_t n_identities(const ss_2022_udp_t *u)
{
	return !u->server && is_aes(u) ? u->psks.n - 1u : 0;
}

/* The PSK that keys the sessions of this side: the client's user PSK, or on
 * a server the user's PSK (its own PSK when single-user). */
static const uint8_t *session_key(const ss_2022_udp_t *u, const ss_2022_user_t *user)
{
	if (u->server)
		return user ? user->key : u->psks.keys[0];
	return u->psks.keys[u->psks.n - 1];
}

static int udp_keys(ss_2022_udp_t *u)
{
	const ss_crypto_backend_t *be = u->be;
	int rc = 0;

	if (!is_aes(u)) {
		rc = be->aead_init(&u->xaead, SS_AEAD_XCHACHA20_POLY1305);
		if (rc == 0)
			rc = be->aead_setkey(&u->xaead, u->psks.keys[0], u->method->key_len);
		return rc;
	}
	for (size_t i = 0; i < u->psks.n && rc == 0; i++) {
		rc = be->aes_init(&u->aes[i]);
		if (rc == 0)
			rc = be->aes_setkey(&u->aes[i], u->psks.keys[i], u->method->key_len);
		ss_2022_psk_hash(u->method, u->psks.keys[i], u->hash[i]);
	}
	return rc;
}

int ss_2022_udp_init_client(ss_2022_udp_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
			    const ss_psk_list_t *psks)
{
	int rc;

	memset(u, 0, sizeof(*u));
	if (m->kind != SS_METHOD_2022 || psks->n == 0 || psks->n > SS_PSK_MAX ||
	    (psks->n > 1 && !ss_method_has_identity(m)))
		return -EINVAL;
	u->method = m;
	u->be = be;
	u->psks = *psks;
	rc = udp_keys(u);
	if (rc != 0)
		ss_2022_udp_free(u);
	return rc;
}

int ss_2022_udp_init_server(ss_2022_udp_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
			    const uint8_t *psk, ss_2022_users_t *users)
{
	int rc;

	memset(u, 0, sizeof(*u));
	/* The users' AES states belong to their backend: it must be ours. */
	if (m->kind != SS_METHOD_2022 || (users && (users->method != m || users->be != be)))
		return -EINVAL;
	u->method = m;
	u->be = be;
	u->server = true;
	u->users = users;
	u->psks.n = 1;
	memcpy(u->psks.keys[0], psk, m->key_len);
	rc = udp_keys(u);
	if (rc != 0)
		ss_2022_udp_free(u);
	return rc;
}

void ss_2022_udp_free(ss_2022_udp_t *u)
{
	if (!u->be)
		return;
	for (size_t i = 0; i < SS_PSK_MAX; i++)
		u->be->aes_free(&u->aes[i]);
	u->be->aead_free(&u->xaead);
	ss_wipe(&u->psks, sizeof(u->psks));
	ss_wipe(u->hash, sizeof(u->hash));
	u->be = NULL;
}

int ss_2022_udp_session_init(const ss_2022_udp_t *u, ss_2022_udp_session_t *s)
{
	static const uint8_t zero[SS_MAX_KEY_LEN];
	int rc;

	memset(s, 0, sizeof(*s));
	if (!is_aes(u))
		return 0;
	/* Keyed once now, so that no later key (a session start, which may
	 * come with any packet) makes the backend set its cipher up. */
	rc = u->be->aead_init(&s->aead, u->method->alg);
	if (rc == 0 && (rc = u->be->aead_setkey(&s->aead, zero, u->method->key_len)) == 0)
		u->be->aead_wipe(&s->aead);
	return rc;
}

int ss_2022_udp_session_start(const ss_2022_udp_t *u, ss_2022_udp_session_t *s, uint64_t id,
			      ss_2022_user_t *user)
{
	uint8_t sid[8];

	s->id = id;
	s->next_packet_id = 0;
	s->user = user;
	if (!is_aes(u))
		return 0;
	ss_2022_put_u64(sid, id);
	return ss_2022_load_subkey(u->method, u->be, &s->aead, session_key(u, user), sid,
				   sizeof(sid));
}

void ss_2022_udp_session_reset(const ss_2022_udp_t *u, ss_2022_udp_session_t *s)
{
	if (u->be && is_aes(u))
		u->be->aead_wipe(&s->aead);
	s->id = 0;
	s->next_packet_id = 0;
	s->user = NULL;
}

void ss_2022_udp_session_free(const ss_2022_udp_t *u, ss_2022_udp_session_t *s)
{
	if (u->be && is_aes(u))
		u->be->aead_free(&s->aead);
	memset(s, 0, sizeof(*s));
}

/* Main header bytes: type, timestamp, [client session id], padding length,
 * padding, address. */
static size_t main_len(bool from_server, size_t addr_len, size_t padding)
{
	return 1 + 8 + (from_server ? 8u : 0u) + 2 + padding + addr_len;
}

size_t ss_2022_udp_hdr_len(const ss_2022_udp_t *u, size_t addr_len, size_t padding)
{
	size_t outer = is_aes(u) ? SS_2022_UDP_SEP_LEN + n_identities(u) * SS_2022_IDENTITY_LEN
				 : SS_2022_UDP_XNONCE_LEN + 16;

	return outer + main_len(u->server, addr_len, padding);
}

long ss_2022_udp_seal(ss_2022_udp_t *u, ss_2022_udp_session_t *s, const ss_2022_udp_msg_t *msg,
		      uint8_t *buf, size_t off, size_t n, size_t cap, size_t *start)
{
	const ss_crypto_backend_t *be = u->be;
	size_t h, ml, nid = n_identities(u);
	uint8_t *p, *q;
	uint64_t pid;
	int rc;

	if (msg->addr_len == 0 || msg->addr_len > SS_ADDR_MAX_ENCODED ||
	    msg->padding > SS_2022_MAX_PADDING)
		return -EINVAL;
	h = ss_2022_udp_hdr_len(u, msg->addr_len, msg->padding);
	if (off < h || off > cap || cap - off < n || cap - off - n < SS_AEAD_TAG_LEN)
		return -ENOSPC;
	ml = main_len(u->server, msg->addr_len, msg->padding);
	p = buf + off - h;

	/* The address first: it may already sit just before the payload. */
	memmove(buf + off - msg->addr_len, msg->addr, msg->addr_len);
	q = buf + off - ml;
	q[0] = u->server ? SS_2022_TYPE_SERVER : SS_2022_TYPE_CLIENT;
	ss_2022_put_u64(q + 1, msg->now);
	q += 9;
	if (u->server) {
		ss_2022_put_u64(q, msg->client_session_id);
		q += 8;
	}
	ss_2022_put_u16(q, (uint16_t)msg->padding);
	memset(q + 2, 0, msg->padding);

	pid = s->next_packet_id++;
	if (!is_aes(u)) {
		uint8_t *body = p + SS_2022_UDP_XNONCE_LEN;

		ss_random_bytes(p, SS_2022_UDP_XNONCE_LEN);
		ss_2022_put_u64(body, s->id);
		ss_2022_put_u64(body + 8, pid);
		rc = be->aead_seal(&u->xaead, p, body, body, 16 + ml + n);
	} else {
		ss_aes_block_t *hdr_key;
		uint8_t *body = p + SS_2022_UDP_SEP_LEN + nid * SS_2022_IDENTITY_LEN;

		ss_2022_put_u64(p, s->id);
		ss_2022_put_u64(p + 8, pid);
		rc = be->aead_seal(&s->aead, p + 4, body, body, ml + n);
		/* Identity header i: hash of the next PSK masked with the plain
		 * separate header, under identity PSK i. */
		for (size_t i = 0; i < nid && rc == 0; i++) {
			uint8_t *blk = p + SS_2022_UDP_SEP_LEN + i * SS_2022_IDENTITY_LEN;

			for (size_t j = 0; j < SS_2022_IDENTITY_LEN; j++)
				blk[j] = u->hash[i + 1][j] ^ p[j];
			rc = be->aes_encrypt(&u->aes[i], blk, blk);
		}
		if (u->server)
			hdr_key = s->user ? &s->user->aes : &u->aes[0];
		else
			hdr_key = &u->aes[0];
		if (rc == 0)
			rc = be->aes_encrypt(hdr_key, p, p);
	}
	if (rc != 0)
		return rc;
	*start = off - h;
	return (long)(h + n + SS_AEAD_TAG_LEN);
}

static int fail(ss_2022_udp_pkt_t *p, ss_2022_err_t e)
{
	p->err = e;
	return SS_ERR;
}

int ss_2022_udp_open_head(ss_2022_udp_t *u, uint8_t *buf, size_t len, ss_2022_udp_pkt_t *p)
{
	const ss_crypto_backend_t *be = u->be;
	size_t eih = u->server && u->users ? SS_2022_IDENTITY_LEN : 0;

	memset(p, 0, sizeof(*p));
	if (!is_aes(u)) {
		uint8_t *body = buf + SS_2022_UDP_XNONCE_LEN;

		if (len < SS_2022_UDP_XNONCE_LEN + 16 + SS_AEAD_TAG_LEN)
			return fail(p, SS_2022_E_LENGTH);
		if (be->aead_open(&u->xaead, buf, body, body, len - SS_2022_UDP_XNONCE_LEN) != 0)
			return fail(p, SS_2022_E_AUTH);
		p->session_id = ss_2022_get_u64(body);
		p->packet_id = ss_2022_get_u64(body + 8);
		p->body = body + 16;
		p->body_len = len - SS_2022_UDP_XNONCE_LEN - 16 - SS_AEAD_TAG_LEN;
		p->opened = true;
		return SS_OK;
	}

	if (len < SS_2022_UDP_SEP_LEN + eih + SS_AEAD_TAG_LEN)
		return fail(p, SS_2022_E_LENGTH);
	/* A client reads server packets, which are under its user PSK. */
	if (be->aes_decrypt(&u->aes[u->server ? 0 : u->psks.n - 1], buf, buf) != 0)
		return fail(p, SS_2022_E_AUTH);
	p->session_id = ss_2022_get_u64(buf);
	p->packet_id = ss_2022_get_u64(buf + 8);
	memcpy(p->nonce, buf + 4, sizeof(p->nonce));
	if (eih) {
		uint8_t *blk = buf + SS_2022_UDP_SEP_LEN;

		if (be->aes_decrypt(&u->aes[0], blk, blk) != 0)
			return fail(p, SS_2022_E_AUTH);
		for (size_t j = 0; j < SS_2022_IDENTITY_LEN; j++)
			blk[j] ^= buf[j];
		p->user = ss_2022_users_find(u->users, blk);
		if (!p->user)
			return fail(p, SS_2022_E_USER);
	}
	p->body = buf + SS_2022_UDP_SEP_LEN + eih;
	p->body_len = len - SS_2022_UDP_SEP_LEN - eih;
	return SS_OK;
}

int ss_2022_udp_open_body(ss_2022_udp_t *u, ss_2022_udp_session_t *s, ss_2022_udp_pkt_t *p,
			  uint64_t now)
{
	bool from_server = !u->server;
	uint8_t *q = p->body;
	size_t len, pad, used = 0;
	int rc;

	if (!p->body)
		return fail(p, SS_2022_E_AUTH);
	if (!p->opened) {
		if (!s || s->id != p->session_id ||
		    u->be->aead_open(&s->aead, p->nonce, q, q, p->body_len) != 0)
			return fail(p, SS_2022_E_AUTH);
		p->body_len -= SS_AEAD_TAG_LEN;
		p->opened = true;
	}
	len = p->body_len;
	if (len < main_len(from_server, 0, 0))
		return fail(p, SS_2022_E_LENGTH);
	if (q[0] != (from_server ? SS_2022_TYPE_SERVER : SS_2022_TYPE_CLIENT))
		return fail(p, SS_2022_E_TYPE);
	p->timestamp = ss_2022_get_u64(q + 1);
	if (!ss_2022_time_ok(p->timestamp, now))
		return fail(p, SS_2022_E_TIME);
	q += 9;
	len -= 9;
	if (from_server) {
		p->client_session_id = ss_2022_get_u64(q);
		q += 8;
		len -= 8;
	}
	pad = ss_2022_get_u16(q);
	q += 2;
	len -= 2;
	if (pad > len)
		return fail(p, SS_2022_E_PADDING);
	q += pad;
	len -= pad;
	rc = ss_addr_parse(q, len, &p->addr, &used);
	if (rc == SS_AGAIN)
		return fail(p, SS_2022_E_LENGTH);
	if (rc != SS_OK)
		return fail(p, SS_2022_E_ADDR);
	p->addr_raw = q;
	p->addr_len = used;
	p->payload = q + used;
	p->payload_len = len - used;
	return SS_OK;
}
