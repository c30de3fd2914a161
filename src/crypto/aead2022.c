/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022: keys, users and the TCP stream codec. The UDP packet
 * codec is in aead2022_udp.c. */
#include "crypto/aead2022.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blake3/blake3.h"
#include "crypto/aead2022_internal.h"
#include "util/result.h"

static const char session_ctx[] = "shadowsocks 2022 session subkey";
static const char identity_ctx[] = "shadowsocks 2022 identity subkey";

enum {
	/* decoder */
	ST_HEADER = 0, /* salt, identity header, fixed header */
	ST_VARHDR,     /* request: the variable header */
	ST_LENGTH,     /* a length block */
	ST_PAYLOAD,    /* a payload block of pending_len bytes */
};

const char *ss_2022_strerror(ss_2022_err_t e)
{
	switch (e) {
	case SS_2022_E_NONE:
		return "no error";
	case SS_2022_E_AUTH:
		return "authentication failed";
	case SS_2022_E_USER:
		return "unknown user";
	case SS_2022_E_TYPE:
		return "wrong header type";
	case SS_2022_E_TIME:
		return "timestamp more than 30 s off";
	case SS_2022_E_REPLAY:
		return "replayed salt";
	case SS_2022_E_FULL:
		return "salt pool full";
	case SS_2022_E_SALT:
		return "response to another request";
	case SS_2022_E_LENGTH:
		return "header too short";
	case SS_2022_E_ADDR:
		return "bad address";
	case SS_2022_E_PADDING:
		return "padding past the header";
	case SS_2022_E_EMPTY:
		return "neither padding nor payload";
	}
	return "unknown error";
}

static void derive(const char *ctx, const ss_method_t *m, const uint8_t *key, const uint8_t *salt,
		   size_t salt_len, uint8_t *out)
{
	uint8_t material[SS_MAX_KEY_LEN + SS_MAX_SALT_LEN];

	memcpy(material, key, m->key_len);
	memcpy(material + m->key_len, salt, salt_len);
	ss_blake3_derive_key(ctx, material, m->key_len + salt_len, out, m->key_len);
	ss_wipe(material, sizeof(material));
}

void ss_2022_session_subkey(const ss_method_t *m, const uint8_t *key, const uint8_t *salt,
			    size_t salt_len, uint8_t *out)
{
	derive(session_ctx, m, key, salt, salt_len, out);
}

void ss_2022_psk_hash(const ss_method_t *m, const uint8_t *key,
		      uint8_t out[static SS_2022_IDENTITY_LEN])
{
	ss_blake3_t h;

	ss_blake3_init(&h);
	ss_blake3_update(&h, key, m->key_len);
	ss_blake3_final(&h, out, SS_2022_IDENTITY_LEN);
	ss_blake3_wipe(&h);
}

int ss_2022_load_subkey(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			const uint8_t *key, const uint8_t *salt, size_t salt_len)
{
	uint8_t subkey[SS_MAX_KEY_LEN];
	int rc;

	ss_2022_session_subkey(m, key, salt, salt_len, subkey);
	rc = be->aead_setkey(a, subkey, m->key_len);
	ss_wipe(subkey, sizeof(subkey));
	return rc;
}

bool ss_2022_time_ok(uint64_t ts, uint64_t now)
{
	return (ts > now ? ts - now : now - ts) <= SS_2022_MAX_TIME_DIFF;
}

/* ---- users ---- */

int ss_2022_users_init(ss_2022_users_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
		       size_t cap)
{
	memset(u, 0, sizeof(*u));
	if (!ss_method_has_identity(m) || cap == 0 || cap > UINT32_MAX)
		return -EINVAL;
	u->v = calloc(cap, sizeof(*u->v));
	u->order = calloc(cap, sizeof(*u->order));
	if (!u->v || !u->order) {
		ss_2022_users_free(u);
		return -ENOMEM;
	}
	u->method = m;
	u->be = be;
	u->cap = cap;
	return 0;
}

/* The first position in order whose hash is not below hash. */
static size_t users_lower_bound(ss_2022_users_t *u, const uint8_t *hash)
{
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (memcmp(u->v[u->order[mid]].hash, hash, SS_2022_IDENTITY_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ss_2022_users_add(ss_2022_users_t *u, const uint8_t *key, void *data)
{
	ss_2022_user_t *e;
	size_t pos;
	int rc;

	if (u->n == u->cap)
		return -ENOSPC;
	e = &u->v[u->n];
	ss_2022_psk_hash(u->method, key, e->hash);
	pos = users_lower_bound(u, e->hash);
	if (pos < u->n && memcmp(u->v[u->order[pos]].hash, e->hash, SS_2022_IDENTITY_LEN) == 0) {
		ss_wipe(e, sizeof(*e));
		return -EEXIST;
	}
	memcpy(e->key, key, u->method->key_len);
	rc = u->be->aes_init(&e->aes);
	if (rc == 0)
		rc = u->be->aes_setkey(&e->aes, key, u->method->key_len);
	if (rc != 0) {
		u->be->aes_free(&e->aes);
		ss_wipe(e, sizeof(*e));
		return rc;
	}
	e->data = data;
	memmove(&u->order[pos + 1], &u->order[pos], (u->n - pos) * sizeof(*u->order));
	u->order[pos] = (uint32_t)u->n;
	u->n++;
	return 0;
}

ss_2022_user_t *ss_2022_users_find(ss_2022_users_t *u,
				   const uint8_t hash[static SS_2022_IDENTITY_LEN])
{
	size_t pos = users_lower_bound(u, hash);

	if (pos < u->n && memcmp(u->v[u->order[pos]].hash, hash, SS_2022_IDENTITY_LEN) == 0)
		return &u->v[u->order[pos]];
	return NULL;
}

void ss_2022_users_free(ss_2022_users_t *u)
{
	for (size_t i = 0; i < u->n; i++)
		u->be->aes_free(&u->v[i].aes);
	if (u->v)
		ss_wipe(u->v, u->cap * sizeof(*u->v));
	free(u->v);
	free(u->order);
	memset(u, 0, sizeof(*u));
}

/* ---- TCP ---- */

int ss_2022_stream_init(ss_2022_stream_t *s, const ss_method_t *m, const ss_crypto_backend_t *be)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (m->kind != SS_METHOD_2022)
		return -EINVAL;
	s->method = m;
	s->be = be;
	/* The AES state for identity headers waits for a stream that carries
	 * them: most do not (responses, single-user servers and clients). */
	rc = be->aead_init(&s->aead, m->alg);
	if (rc != 0)
		ss_2022_stream_free(s);
	return rc;
}

static int stream_aes(ss_2022_stream_t *s)
{
	int rc;

	if (s->aes)
		return 0;
	s->aes = malloc(sizeof(*s->aes));
	if (!s->aes)
		return -ENOMEM;
	rc = s->be->aes_init(s->aes);
	if (rc != 0) {
		free(s->aes);
		s->aes = NULL;
	}
	return rc;
}

void ss_2022_stream_reset(ss_2022_stream_t *s)
{
	if (s->be) {
		s->be->aead_wipe(&s->aead);
		if (s->aes)
			s->be->aes_wipe(s->aes);
	}
	ss_wipe(s->nonce, sizeof(s->nonce));
	ss_wipe(s->salt, sizeof(s->salt));
	ss_wipe(s->req_salt, sizeof(s->req_salt));
	ss_wipe(s->key, sizeof(s->key));
	s->users = NULL;
	s->pool = NULL;
	s->user = NULL;
	s->timestamp = 0;
	s->state = ST_HEADER;
	s->response = false;
	s->have_header = false;
	s->err = SS_2022_E_NONE;
	s->pending_len = 0;
}

void ss_2022_stream_free(ss_2022_stream_t *s)
{
	if (!s->be)
		return;
	ss_2022_stream_reset(s);
	s->be->aead_free(&s->aead);
	if (s->aes) {
		s->be->aes_free(s->aes);
		free(s->aes);
		s->aes = NULL;
	}
	s->be = NULL;
}

static int seal(ss_2022_stream_t *s, uint8_t *p, size_t n)
{
	int rc = s->be->aead_seal(&s->aead, s->nonce, p, p, n);

	if (rc == 0)
		ss_2022_nonce_next(s->nonce, s->method->nonce_len);
	return rc;
}

static bool open_(ss_2022_stream_t *s, uint8_t *p, size_t n_with_tag)
{
	if (s->be->aead_open(&s->aead, s->nonce, p, p, n_with_tag) != 0)
		return false;
	ss_2022_nonce_next(s->nonce, s->method->nonce_len);
	return true;
}

/* Resets the per-connection state of s for a new direction. */
static void stream_begin(ss_2022_stream_t *s)
{
	memset(s->nonce, 0, sizeof(s->nonce));
	s->state = ST_HEADER;
	s->have_header = false;
	s->err = SS_2022_E_NONE;
	s->pending_len = 0;
	s->user = NULL;
	s->timestamp = 0;
	s->response = false;
}

size_t ss_2022_request_hdr_len(const ss_method_t *m, size_t n_identities, size_t addr_len,
			       size_t padding)
{
	return m->salt_len + n_identities * SS_2022_IDENTITY_LEN + SS_2022_REQ_FIXED_LEN +
	       SS_AEAD_TAG_LEN + addr_len + 2 + padding;
}

/* Identity header i: AES(identity subkey of keys[i] and salt) over the hash
 * of keys[i + 1]. */
static int write_identities(ss_2022_stream_t *s, const ss_psk_list_t *psks, uint8_t *out)
{
	const ss_method_t *m = s->method;
	uint8_t subkey[SS_MAX_KEY_LEN];
	int rc = psks->n > 1 ? stream_aes(s) : 0;

	for (size_t i = 0; i + 1 < psks->n && rc == 0; i++) {
		uint8_t *block = out + i * SS_2022_IDENTITY_LEN;

		derive(identity_ctx, m, psks->keys[i], s->salt, m->salt_len, subkey);
		ss_2022_psk_hash(m, psks->keys[i + 1], block);
		rc = s->be->aes_setkey(s->aes, subkey, m->key_len);
		if (rc == 0)
			rc = s->be->aes_encrypt(s->aes, block, block);
	}
	ss_wipe(subkey, sizeof(subkey));
	if (s->aes)
		s->be->aes_wipe(s->aes);
	return rc;
}

long ss_2022_enc_request_salt(ss_2022_stream_t *s, const ss_psk_list_t *psks,
			      const ss_2022_request_t *req, uint8_t *payload, size_t n, size_t room,
			      const uint8_t *salt)
{
	const ss_method_t *m = s->method;
	size_t nid, pad, var_len, h;
	uint8_t *start, *fixed, *var;
	int rc;

	if (psks->n == 0 || psks->n > SS_PSK_MAX || req->addr_len == 0 ||
	    req->addr_len > SS_ADDR_MAX_ENCODED)
		return -EINVAL;
	nid = psks->n - 1u;
	if (nid > 0 && !ss_method_has_identity(m))
		return -EINVAL;
	if (req->padding == SS_2022_PAD_AUTO) {
		uint16_t r;

		ss_random_bytes(&r, sizeof(r));
		pad = n > 0 ? 0 : 1 + r % SS_2022_MAX_PADDING;
	} else if (req->padding < 0 || req->padding > SS_2022_MAX_PADDING ||
		   (req->padding == 0 && n == 0)) {
		return -EINVAL;
	} else {
		pad = (size_t)req->padding;
	}
	var_len = req->addr_len + 2 + pad + n;
	if (var_len > SS_2022_MAX_PAYLOAD)
		return -EMSGSIZE;
	h = ss_2022_request_hdr_len(m, nid, req->addr_len, pad);
	if (room < h)
		return -ENOSPC;

	stream_begin(s);
	start = payload - h;
	fixed = start + m->salt_len + nid * SS_2022_IDENTITY_LEN;
	var = fixed + SS_2022_REQ_FIXED_LEN + SS_AEAD_TAG_LEN;
	/* The address first: it may sit anywhere in the room being filled. */
	memmove(var, req->addr, req->addr_len);
	ss_2022_put_u16(var + req->addr_len, (uint16_t)pad);
	memset(var + req->addr_len + 2, 0, pad);

	memcpy(s->salt, salt, m->salt_len);
	memcpy(start, salt, m->salt_len);
	rc = write_identities(s, psks, start + m->salt_len);
	if (rc == 0)
		rc = ss_2022_load_subkey(m, s->be, &s->aead, psks->keys[nid], salt, m->salt_len);
	if (rc != 0)
		return rc;

	fixed[0] = SS_2022_TYPE_CLIENT;
	ss_2022_put_u64(fixed + 1, req->now);
	ss_2022_put_u16(fixed + 9, (uint16_t)var_len);
	rc = seal(s, fixed, SS_2022_REQ_FIXED_LEN);
	if (rc == 0)
		rc = seal(s, var, var_len);
	if (rc != 0)
		return rc;
	s->have_header = true;
	return (long)h;
}

long ss_2022_enc_request(ss_2022_stream_t *s, const ss_psk_list_t *psks,
			 const ss_2022_request_t *req, uint8_t *payload, size_t n, size_t room)
{
	uint8_t salt[SS_MAX_SALT_LEN];

	ss_random_bytes(salt, s->method->salt_len);
	return ss_2022_enc_request_salt(s, psks, req, payload, n, room, salt);
}

int ss_2022_enc_start_response_salt(ss_2022_stream_t *s, const uint8_t *key,
				    const uint8_t *req_salt, const uint8_t *salt)
{
	const ss_method_t *m = s->method;

	stream_begin(s);
	s->response = true;
	memcpy(s->req_salt, req_salt, m->salt_len);
	memcpy(s->salt, salt, m->salt_len);
	return ss_2022_load_subkey(m, s->be, &s->aead, key, salt, m->salt_len);
}

int ss_2022_enc_start_response(ss_2022_stream_t *s, const uint8_t *key, const uint8_t *req_salt)
{
	uint8_t salt[SS_MAX_SALT_LEN];

	ss_random_bytes(salt, s->method->salt_len);
	return ss_2022_enc_start_response_salt(s, key, req_salt, salt);
}

int ss_2022_enc_response(ss_2022_stream_t *s, uint8_t *unit, size_t n, uint64_t now)
{
	const ss_method_t *m = s->method;
	uint8_t *fixed = unit + m->salt_len;
	size_t fixed_len = 1 + 8 + m->salt_len + 2;
	int rc;

	if (s->have_header || !s->aead.keyed || n == 0 || n > SS_2022_MAX_PAYLOAD)
		return -EINVAL;
	memcpy(unit, s->salt, m->salt_len);
	fixed[0] = SS_2022_TYPE_SERVER;
	ss_2022_put_u64(fixed + 1, now);
	memcpy(fixed + 9, s->req_salt, m->salt_len);
	ss_2022_put_u16(fixed + 9 + m->salt_len, (uint16_t)n);
	rc = seal(s, fixed, fixed_len);
	if (rc == 0)
		rc = seal(s, unit + SS_2022_RESP_HDR_LEN(m), n);
	if (rc == 0)
		s->have_header = true;
	return rc;
}

int ss_2022_enc_chunk(ss_2022_stream_t *s, uint8_t *chunk, size_t n)
{
	int rc;

	if (!s->have_header || n == 0 || n > SS_2022_MAX_PAYLOAD)
		return -EINVAL;
	ss_2022_put_u16(chunk, (uint16_t)n);
	rc = seal(s, chunk, 2);
	if (rc == 0)
		rc = seal(s, chunk + SS_2022_CHUNK_HDR, n);
	return rc;
}

void ss_2022_dec_start_server(ss_2022_stream_t *s, const uint8_t *psk, ss_2022_users_t *users,
			      ss_saltpool_t *pool)
{
	stream_begin(s);
	memcpy(s->key, psk, s->method->key_len);
	s->users = ss_method_has_identity(s->method) ? users : NULL;
	s->pool = pool;
	ss_wipe(s->req_salt, sizeof(s->req_salt));
}

void ss_2022_dec_start_client(ss_2022_stream_t *s, const uint8_t *key, const uint8_t *req_salt)
{
	stream_begin(s);
	s->response = true;
	memcpy(s->key, key, s->method->key_len);
	memcpy(s->req_salt, req_salt, s->method->salt_len);
	s->users = NULL;
	s->pool = NULL;
}

/* The first unit: salt, identity header, fixed header. Returns its length,
 * 0 when more bytes are needed, or -1 with s->err set. */
static long dec_first(ss_2022_stream_t *s, uint8_t *buf, size_t len, uint64_t now)
{
	const ss_method_t *m = s->method;
	bool response = s->response;
	size_t id_len = s->users ? SS_2022_IDENTITY_LEN : 0;
	size_t fixed_len = response ? 1u + 8 + m->salt_len + 2 : SS_2022_REQ_FIXED_LEN;
	size_t need = m->salt_len + id_len + fixed_len + SS_AEAD_TAG_LEN;
	const uint8_t *key = s->key;
	uint8_t *fixed = buf + m->salt_len + id_len;
	uint16_t next_len;

	if (len < need)
		return 0;
	memcpy(s->salt, buf, m->salt_len);
	if (s->users) {
		uint8_t subkey[SS_MAX_KEY_LEN], hash[SS_2022_IDENTITY_LEN];
		int rc;

		derive(identity_ctx, m, s->key, s->salt, m->salt_len, subkey);
		rc = stream_aes(s);
		if (rc == 0)
			rc = s->be->aes_setkey(s->aes, subkey, m->key_len);
		if (rc == 0)
			rc = s->be->aes_decrypt(s->aes, buf + m->salt_len, hash);
		if (s->aes)
			s->be->aes_wipe(s->aes);
		ss_wipe(subkey, sizeof(subkey));
		s->user = rc == 0 ? ss_2022_users_find(s->users, hash) : NULL;
		if (!s->user) {
			s->err = SS_2022_E_USER;
			return -1;
		}
		key = s->user->key;
	}
	if (ss_2022_load_subkey(m, s->be, &s->aead, key, s->salt, m->salt_len) != 0 ||
	    !open_(s, fixed, fixed_len + SS_AEAD_TAG_LEN)) {
		s->err = SS_2022_E_AUTH;
		return -1;
	}
	/* The PSK is not needed again in this direction. */
	ss_wipe(s->key, sizeof(s->key));
	if (fixed[0] != (response ? SS_2022_TYPE_SERVER : SS_2022_TYPE_CLIENT)) {
		s->err = SS_2022_E_TYPE;
		return -1;
	}
	s->timestamp = ss_2022_get_u64(fixed + 1);
	if (!ss_2022_time_ok(s->timestamp, now)) {
		s->err = SS_2022_E_TIME;
		return -1;
	}
	if (response) {
		if (!ss_ct_equal(fixed + 9, s->req_salt, m->salt_len)) {
			s->err = SS_2022_E_SALT;
			return -1;
		}
		next_len = ss_2022_get_u16(fixed + 9 + m->salt_len);
		s->state = ST_PAYLOAD;
	} else {
		if (s->pool) {
			int rc = ss_saltpool_check_add(s->pool, s->salt, m->salt_len, now);

			if (rc != 0) {
				s->err = rc == -EEXIST ? SS_2022_E_REPLAY : SS_2022_E_FULL;
				return -1;
			}
		}
		next_len = ss_2022_get_u16(fixed + 9);
		/* Not even a one-character domain and the padding length. */
		if (next_len < SS_2022_MIN_ADDR + 2) {
			s->err = SS_2022_E_LENGTH;
			return -1;
		}
		s->state = ST_VARHDR;
	}
	s->pending_len = next_len;
	return (long)need;
}

/* The request's variable header, opened in place at v (pending_len bytes).
 * Reports the initial payload, if any, as *payload. */
static bool dec_varhdr(ss_2022_stream_t *s, uint8_t *v, ss_span_t *payload, ss_addr_t *target)
{
	size_t len = s->pending_len, used = 0, pad;
	int rc = ss_addr_parse(v, len, target, &used);

	if (rc == SS_AGAIN || (rc == SS_OK && len - used < 2)) {
		s->err = SS_2022_E_LENGTH;
		return false;
	}
	if (rc != SS_OK) {
		s->err = SS_2022_E_ADDR;
		return false;
	}
	pad = ss_2022_get_u16(v + used);
	used += 2;
	if (pad > len - used) {
		s->err = SS_2022_E_PADDING;
		return false;
	}
	used += pad;
	if (pad == 0 && used == len) {
		s->err = SS_2022_E_EMPTY;
		return false;
	}
	payload->ptr = v + used;
	payload->len = len - used;
	return true;
}

int ss_2022_dec(ss_2022_stream_t *s, uint8_t *buf, size_t len, uint64_t now, size_t *consumed,
		ss_span_t *spans, size_t max_spans, size_t *nspans, ss_2022_header_t *hdr)
{
	ss_addr_t scratch;
	ss_addr_t *target = hdr ? &hdr->target : &scratch;
	size_t pos = 0, n = 0;

	*consumed = 0;
	*nspans = 0;
	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	if (s->err != SS_2022_E_NONE)
		return SS_ERR;

	for (;;) {
		uint8_t *p = buf + pos;
		size_t avail = len - pos, need;

		switch (s->state) {
		case ST_HEADER: {
			long used = dec_first(s, p, avail, now);

			if (used < 0)
				goto fail;
			if (used == 0)
				goto out;
			pos += (size_t)used;
			if (s->state == ST_PAYLOAD) {
				/* A response: its header is all there is. */
				s->have_header = true;
				if (hdr) {
					hdr->done = true;
					hdr->timestamp = s->timestamp;
				}
			}
			continue;
		}
		case ST_VARHDR: {
			ss_span_t payload;

			need = (size_t)s->pending_len + SS_AEAD_TAG_LEN;
			if (avail < need || n == max_spans)
				goto out;
			if (!open_(s, p, need)) {
				s->err = SS_2022_E_AUTH;
				goto fail;
			}
			if (!dec_varhdr(s, p, &payload, target))
				goto fail;
			pos += need;
			if (payload.len > 0)
				spans[n++] = payload;
			s->pending_len = 0;
			s->have_header = true;
			if (hdr) {
				hdr->done = true;
				hdr->timestamp = s->timestamp;
				hdr->user = s->user;
			}
			s->state = ST_LENGTH;
			continue;
		}
		case ST_LENGTH:
			if (avail < SS_2022_CHUNK_HDR)
				goto out;
			if (!open_(s, p, SS_2022_CHUNK_HDR)) {
				s->err = SS_2022_E_AUTH;
				goto fail;
			}
			/* Zero is allowed: an empty payload block, nothing to report. */
			s->pending_len = ss_2022_get_u16(p);
			pos += SS_2022_CHUNK_HDR;
			s->state = ST_PAYLOAD;
			continue;
		case ST_PAYLOAD:
			need = (size_t)s->pending_len + SS_AEAD_TAG_LEN;
			if (avail < need || (s->pending_len > 0 && n == max_spans))
				goto out;
			if (!open_(s, p, need)) {
				s->err = SS_2022_E_AUTH;
				goto fail;
			}
			if (s->pending_len > 0) {
				spans[n].ptr = p;
				spans[n].len = s->pending_len;
				n++;
			}
			pos += need;
			s->pending_len = 0;
			s->state = ST_LENGTH;
			continue;
		default:
			s->err = SS_2022_E_AUTH;
			goto fail;
		}
	}
out:
	*consumed = pos;
	*nspans = n;
	return SS_OK;
fail:
	/* What authenticated before the failing unit is delivered; the stream
	 * is dead (s->err is set) and the next call says so. */
	if (n || (hdr && hdr->done))
		goto out;
	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	*consumed = pos;
	*nspans = 0;
	return SS_ERR;
}
