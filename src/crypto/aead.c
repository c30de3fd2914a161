/* SPDX-License-Identifier: MIT */
#include "crypto/aead.h"

#include <errno.h>
#include <string.h>

#include "util/result.h"

static const uint8_t subkey_info[] = {'s', 's', '-', 's', 'u', 'b', 'k', 'e', 'y'};

/* Little-endian increment over the whole nonce, as libsodium's
 * sodium_increment and shadowsocks-libev. */
static inline void nonce_next(uint8_t *nonce, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (++nonce[i] != 0)
			break;
}

/* subkey = HKDF-SHA1(key, salt, "ss-subkey"), loaded into a. */
static int load_subkey(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
		       const uint8_t *key, const uint8_t *salt)
{
	uint8_t subkey[SS_MAX_KEY_LEN];
	int rc;

	rc = be->hkdf_sha1(salt, m->salt_len, key, m->key_len, subkey_info, sizeof(subkey_info),
			   subkey, m->key_len);
	if (rc == 0)
		rc = be->aead_setkey(a, subkey, m->key_len);
	ss_wipe(subkey, sizeof(subkey));
	return rc;
}

int ss_aead_stream_init(ss_aead_stream_t *s, const ss_method_t *m, const ss_crypto_backend_t *be)
{
	memset(s, 0, sizeof(*s));
	s->method = m;
	s->be = be;
	return be->aead_init(&s->aead, m->alg);
}

void ss_aead_stream_reset(ss_aead_stream_t *s)
{
	if (s->be)
		s->be->aead_wipe(&s->aead);
	ss_wipe(s->nonce, sizeof(s->nonce));
	ss_wipe(s->salt, sizeof(s->salt));
	ss_wipe(s->key, sizeof(s->key));
	s->have_salt = false;
	s->dead = false;
	s->replayed = false;
	s->pending_len = 0;
	s->pool = NULL;
}

void ss_aead_stream_free(ss_aead_stream_t *s)
{
	if (!s->be)
		return;
	ss_aead_stream_reset(s);
	s->be->aead_free(&s->aead);
	s->be = NULL;
}

int ss_aead_enc_start_salt(ss_aead_stream_t *s, const uint8_t *key, const uint8_t *salt)
{
	const ss_method_t *m = s->method;

	memcpy(s->salt, salt, m->salt_len);
	memset(s->nonce, 0, sizeof(s->nonce));
	s->pending_len = 0;
	s->dead = false;
	s->have_salt = true;
	return load_subkey(m, s->be, &s->aead, key, salt);
}

int ss_aead_enc_start(ss_aead_stream_t *s, const uint8_t *key, uint8_t *salt_out)
{
	ss_random_bytes(salt_out, s->method->salt_len);
	return ss_aead_enc_start_salt(s, key, salt_out);
}

int ss_aead_enc_chunk(ss_aead_stream_t *s, uint8_t *chunk, size_t n)
{
	size_t nlen = s->method->nonce_len;
	uint8_t *payload = chunk + SS_AEAD_CHUNK_HDR;
	int rc;

	if (n == 0 || n > SS_AEAD_MAX_PAYLOAD)
		return -EINVAL;
	chunk[0] = (uint8_t)(n >> 8);
	chunk[1] = (uint8_t)n;
	rc = s->be->aead_seal(&s->aead, s->nonce, chunk, chunk, 2);
	if (rc < 0)
		return rc;
	nonce_next(s->nonce, nlen);
	rc = s->be->aead_seal(&s->aead, s->nonce, payload, payload, n);
	if (rc < 0)
		return rc;
	nonce_next(s->nonce, nlen);
	return 0;
}

void ss_aead_dec_start(ss_aead_stream_t *s, const uint8_t *key)
{
	memcpy(s->key, key, s->method->key_len);
	memset(s->nonce, 0, sizeof(s->nonce));
	s->have_salt = false;
	s->dead = false;
	s->replayed = false;
	s->pending_len = 0;
	s->pool = NULL;
}

void ss_aead_dec_start_server(ss_aead_stream_t *s, const uint8_t *key, ss_saltpool_t *pool)
{
	ss_aead_dec_start(s, key);
	s->pool = pool;
}

int ss_aead_dec_try(ss_aead_stream_t *s, const uint8_t *key, const uint8_t *buf,
		    ss_saltpool_t *pool)
{
	const ss_method_t *m = s->method;
	uint8_t block[SS_AEAD_CHUNK_HDR];
	int rc;

	ss_aead_dec_start_server(s, key, pool);
	ss_wipe(s->key, sizeof(s->key));
	rc = load_subkey(m, s->be, &s->aead, key, buf);
	if (rc < 0)
		return rc;
	/* Opening in place would spoil the bytes for the next key. */
	memcpy(block, buf + m->salt_len, sizeof(block));
	rc = s->be->aead_open(&s->aead, s->nonce, block, block, sizeof(block));
	ss_wipe(block, sizeof(block));
	/* A failed try leaves a subkey of no use in s (the next try, or the
	 * stream's reset, replaces it): wiping it here would cost a key
	 * schedule per user tried. */
	if (rc < 0)
		return -EBADMSG;
	memcpy(s->salt, buf, m->salt_len);
	s->have_salt = true;
	return 0;
}

int ss_aead_dec(ss_aead_stream_t *s, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
		size_t max_spans, size_t *nspans)
{
	const ss_method_t *m = s->method;
	const ss_crypto_backend_t *be = s->be;
	size_t pos = 0, n = 0;

	*consumed = 0;
	*nspans = 0;
	if (s->dead)
		return SS_ERR;

	if (!s->have_salt) {
		if (len < m->salt_len)
			return SS_OK;
		memcpy(s->salt, buf, m->salt_len);
		if (load_subkey(m, be, &s->aead, s->key, s->salt) < 0)
			goto fail;
		/* The master key is not needed again in this direction. */
		ss_wipe(s->key, sizeof(s->key));
		s->have_salt = true;
		pos = m->salt_len;
	}

	while (n < max_spans) {
		size_t need;

		if (s->pending_len == 0) {
			uint8_t *lb = buf + pos;
			size_t plen;

			if (len - pos < SS_AEAD_CHUNK_HDR)
				break;
			if (be->aead_open(&s->aead, s->nonce, lb, lb, SS_AEAD_CHUNK_HDR) < 0)
				goto fail;
			nonce_next(s->nonce, m->nonce_len);
			plen = (size_t)lb[0] << 8 | lb[1];
			if (plen == 0 || plen > SS_AEAD_MAX_PAYLOAD)
				goto fail;
			s->pending_len = (uint16_t)plen;
			pos += SS_AEAD_CHUNK_HDR;
		}
		need = (size_t)s->pending_len + SS_AEAD_TAG_LEN;
		if (len - pos < need)
			break;
		if (be->aead_open(&s->aead, s->nonce, buf + pos, buf + pos, need) < 0)
			goto fail;
		nonce_next(s->nonce, m->nonce_len);
		spans[n].ptr = buf + pos;
		spans[n].len = s->pending_len;
		n++;
		pos += need;
		s->pending_len = 0;
	}

out:
	/* The salt is known to be a real one now: check and record it. */
	if (n && s->pool) {
		int rc = ss_saltpool_check_add(s->pool, s->salt, m->salt_len, 0);
		s->pool = NULL;
		if (rc != 0) {
			s->dead = s->replayed = true;
			*consumed = 0;
			*nspans = 0;
			return SS_ERR;
		}
	}
	*consumed = pos;
	*nspans = n;
	return SS_OK;
fail:
	s->dead = true;
	/* What authenticated before the failing unit is delivered; the next
	 * call reports the failure. */
	if (n)
		goto out;
	*consumed = pos;
	*nspans = 0;
	return SS_ERR;
}

long ss_aead_seal_packet(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			 const uint8_t *key, const uint8_t *in, size_t len, uint8_t *out,
			 size_t cap)
{
	static const uint8_t zero_nonce[SS_AEAD_MAX_NONCE_LEN];
	size_t total = (size_t)m->salt_len + len + SS_AEAD_TAG_LEN;
	int rc;

	if (a->alg != m->alg)
		return -EINVAL;
	if (len > cap || cap - len < (size_t)m->salt_len + SS_AEAD_TAG_LEN)
		return -ENOSPC;
	ss_random_bytes(out, m->salt_len);
	rc = load_subkey(m, be, a, key, out);
	if (rc == 0)
		rc = be->aead_seal(a, zero_nonce, out + m->salt_len, in, len);
	return rc < 0 ? rc : (long)total;
}

long ss_aead_open_packet_to(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			    const uint8_t *key, const uint8_t *buf, size_t len, uint8_t *out)
{
	static const uint8_t zero_nonce[SS_AEAD_MAX_NONCE_LEN];
	int rc;

	if (a->alg != m->alg || len < (size_t)m->salt_len + SS_AEAD_TAG_LEN)
		return -EINVAL;
	rc = load_subkey(m, be, a, key, buf);
	if (rc == 0)
		rc = be->aead_open(a, zero_nonce, out, buf + m->salt_len, len - m->salt_len);
	if (rc < 0)
		return rc;
	return (long)(len - m->salt_len - SS_AEAD_TAG_LEN);
}

long ss_aead_open_packet(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			 const uint8_t *key, uint8_t *buf, size_t len, uint8_t **plain)
{
	static const uint8_t zero_nonce[SS_AEAD_MAX_NONCE_LEN];
	uint8_t *body = buf + m->salt_len;
	int rc;

	if (a->alg != m->alg || len < (size_t)m->salt_len + SS_AEAD_TAG_LEN)
		return -EINVAL;
	rc = load_subkey(m, be, a, key, buf);
	if (rc == 0)
		rc = be->aead_open(a, zero_nonce, body, body, len - m->salt_len);
	if (rc < 0)
		return rc;
	*plain = body;
	return (long)(len - m->salt_len - SS_AEAD_TAG_LEN);
}
