/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SIP022 TCP decoders, structure-aware. The input
 * chooses a request (to ss_2022_dec_start_server, single-user or with
 * users) or a response (to ss_2022_dec_start_client) and everything in it:
 * salt, user, timestamp, address, padding, initial payload, chunk lengths
 * (0 included), and how the wire is split into reads. The frames are sealed
 * by hand as SIP022 lays them out, so that also what our encoder refuses to
 * make reaches the decoder; when the encoder can make the same wire, it must
 * make it byte for byte.
 * Sometimes one thing is wrong on purpose, each with the reason the decoder
 * must give: a flipped bit, a cut wire, the header type, the timestamp, the
 * request salt a response names, an unknown user, a variable header too
 * short for an address, a bad address, a padding length past the header, a
 * header with neither padding nor payload, a replayed salt.
 * Invariants: decoded plaintext is a prefix of what was sealed, all of it
 * when nothing is wrong; the header is reported once with what was sealed;
 * the result, the reason, the header and the plaintext (all of it, or what
 * came before the unit refused) do not depend on how the wire was split. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/saltpool.h"
#include "fuzz_2022.h"

enum {
	TYPE = FZ_OWN,
	TIME,
	SALT,  /* response: another request salt */
	USER,  /* request with users: a user the server does not know */
	SHORT, /* request: variable header length under 7 */
	ADDR,  /* request: a malformed address */
	NOPAD, /* request: the address, then one byte where the padding length goes */
	PADDING,
	EMPTY,
	REPLAY,
	N_WHAT,
};

static ss_2022_stream_t encs[FZ_N_2022][FZ_N_BACKENDS], decs[FZ_N_2022][FZ_N_BACKENDS];
static ss_aead_t sealers[FZ_N_2022][FZ_N_BACKENDS];
static ss_aes_block_t aes[FZ_N_BACKENDS];
static ss_saltpool_t pool;
/* The clock, advanced by more than the salt TTL per input, so that each
 * finds the pool empty of every other input's salt. */
static uint64_t now = FZ_NOW;

__attribute__((constructor)) static void setup(void)
{
	FZ_CHECK(ss_saltpool_init(&pool, 64, SS_2022_SALT_TTL) == 0);
	for (unsigned b = 0; b < FZ_N_BACKENDS; b++) {
		FZ_CHECK(fz_backend(b)->aes_init(&aes[b]) == 0);
		for (unsigned i = 0; i < FZ_N_2022; i++) {
			const ss_method_t *m = fz_method(fz_2022_names[i]);

			FZ_CHECK(ss_2022_stream_init(&encs[i][b], m, fz_backend(b)) == 0);
			FZ_CHECK(ss_2022_stream_init(&decs[i][b], m, fz_backend(b)) == 0);
			FZ_CHECK(fz_backend(b)->aead_init(&sealers[i][b], m->alg) == 0);
		}
	}
}

typedef struct reader {
	ss_2022_stream_t *s;
	uint64_t now;
	ss_2022_err_t err; /* the stream's, once fed */
	int headers;
	ss_2022_header_t hdr;
} reader_t;

static int dec_call(void *ctx, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
		    size_t max_spans, size_t *nspans)
{
	reader_t *r = ctx;
	ss_2022_header_t hdr;
	int rc = ss_2022_dec(r->s, buf, len, r->now, consumed, spans, max_spans, nspans, &hdr);

	/* A refusal sets the reason; a call that also delivered what came
	 * before the refused unit says OK, and the next one says no. */
	FZ_CHECK(rc == SS_OK || r->s->err != SS_2022_E_NONE);
	if (rc == SS_OK && r->s->err != SS_2022_E_NONE)
		FZ_CHECK(*nspans > 0 || hdr.done);
	FZ_CHECK(rc == SS_OK || !hdr.done);
	if (hdr.done) {
		r->headers++;
		r->hdr = hdr;
	}
	return rc;
}

/* What one input builds. */
typedef struct msg {
	unsigned mi, bi;
	bool response, users;
	int what;
	uint8_t key[SS_MAX_KEY_LEN];  /* the PSK that keys the session */
	uint8_t ikey[SS_MAX_KEY_LEN]; /* the server's identity PSK (users) */
	uint8_t salt[SS_MAX_SALT_LEN], req_salt[SS_MAX_SALT_LEN];
	uint64_t ts;
	ss_addr_t addr;
	uint8_t addr_enc[SS_ADDR_MAX_ENCODED];
	size_t addr_len, pad, first; /* first: initial payload bytes */
	bool pad_zero;               /* padding bytes all zero, as ours */
	size_t chunks[6], n_chunks;
	size_t user; /* index among the users */
	uint8_t *plain;
	size_t plain_len;
} msg_t;

static void choose(fz_t *f, msg_t *g)
{
	const ss_method_t *m = fz_method(fz_2022_names[g->mi]);
	size_t total;

	fz_bytes(f, g->salt, m->salt_len);
	fz_bytes(f, g->req_salt, m->salt_len);
	g->user = fz_range(f, 0, FZ_N_USERS - 1);
	fz_key(0, g->ikey);
	fz_key(g->users ? 1 + (unsigned)g->user : 0, g->key);
	if (g->what == USER)
		fz_key(FZ_N_USERS + 1, g->key);
	g->ts = fz_2022_time(f, now, g->what == TIME);
	g->addr_len = fz_addr(f, &g->addr, g->addr_enc);
	g->pad = g->response ? 0 : fz_range(f, 0, SS_2022_MAX_PADDING);
	g->pad_zero = fz_bool(f);
	g->first = fz_bool(f) ? fz_range(f, 0, 64) : fz_range(f, 0, 4000);
	if (!g->response && g->pad == 0 && g->first == 0)
		g->first = 1;
	if (g->what == EMPTY)
		g->pad = g->first = 0;
	g->n_chunks = fz_range(f, 0, 6);
	total = g->first;
	for (size_t i = 0; i < g->n_chunks; i++) {
		g->chunks[i] = fz_bool(f) ? fz_range(f, 0, 64) : fz_range(f, 0, 0xFFFF);
		total += g->chunks[i];
	}
	g->plain = malloc(total + 1);
	g->plain_len = total;
}

/* Seals what g describes into wire; returns its length. */
static size_t build(fz_t *f, msg_t *g, uint8_t *wire)
{
	const ss_method_t *m = fz_method(fz_2022_names[g->mi]);
	const ss_crypto_backend_t *be = fz_backend(g->bi);
	uint8_t subkey[SS_MAX_KEY_LEN], fixed[1 + 8 + SS_MAX_SALT_LEN + 2], len16[2];
	fz_sealer_t s = {be, &sealers[g->mi][g->bi], {0}, wire, 0};
	size_t p = g->first;

	ss_2022_session_subkey(m, g->key, g->salt, m->salt_len, subkey);
	FZ_CHECK(be->aead_setkey(s.aead, subkey, m->key_len) == 0);
	fz_put(&s, g->salt, m->salt_len);
	fixed[0] = g->response ^ (g->what == TYPE ? fz_range(f, 1, 255) : 0);
	fz_put_u64(fixed + 1, g->ts);
	if (g->response) {
		memcpy(fixed + 9, g->req_salt, m->salt_len);
		if (g->what == SALT)
			fixed[9 + fz_range(f, 0, m->salt_len - 1)] ^= 1;
		fz_put_u16(fixed + 9 + m->salt_len, (uint16_t)g->first);
		fz_seal(&s, fixed, 1 + 8 + m->salt_len + 2);
		fz_seal(&s, g->plain, g->first);
	} else {
		/* The variable header: address, padding length, padding, and the
		 * initial payload, one of them possibly spoiled. */
		uint8_t *var = malloc(SS_ADDR_MAX_ENCODED + 2 + SS_2022_MAX_PADDING + g->first);
		size_t v = g->addr_len, pad_field = g->pad;

		if (g->users) {
			uint8_t ikey[SS_MAX_KEY_LEN], block[SS_2022_IDENTITY_LEN];

			fz_identity_subkey(m, g->ikey, g->salt, m->salt_len, ikey);
			ss_2022_psk_hash(m, g->key, block);
			FZ_CHECK(be->aes_setkey(&aes[g->bi], ikey, m->key_len) == 0);
			FZ_CHECK(be->aes_encrypt(&aes[g->bi], block, block) == 0);
			fz_put(&s, block, sizeof(block));
		}
		memcpy(var, g->addr_enc, g->addr_len);
		if (g->what == ADDR)
			fz_spoil_addr(f, var);
		if (g->what == PADDING)
			pad_field = g->pad + g->first + fz_range(f, 1, 1000);
		fz_put_u16(var + v, (uint16_t)pad_field);
		v += 2;
		fz_padding(f, var + v, g->pad, g->pad_zero);
		v += g->pad;
		memcpy(var + v, g->plain, g->first);
		v += g->first;
		if (g->what == SHORT)
			v = fz_range(f, 0, 6); /* under a 1-byte domain and the padding length */
		else if (g->what == NOPAD)
			v = g->addr_len + 1;
		fz_put_u16(fixed + 9, (uint16_t)v);
		fz_seal(&s, fixed, SS_2022_REQ_FIXED_LEN);
		fz_seal(&s, var, v);
		free(var);
	}
	for (size_t i = 0; i < g->n_chunks; i++) {
		fz_put_u16(len16, (uint16_t)g->chunks[i]);
		fz_seal(&s, len16, 2);
		fz_seal(&s, g->plain + p, g->chunks[i]);
		p += g->chunks[i];
	}
	ss_wipe(subkey, sizeof(subkey));
	return s.len;
}

/* Our encoder, where it can make this wire, makes the same bytes. */
static void same_as_encoder(const msg_t *g, const uint8_t *wire, size_t len)
{
	const ss_method_t *m = fz_method(fz_2022_names[g->mi]);
	ss_2022_stream_t *e = &encs[g->mi][g->bi];
	uint8_t *mine = malloc(len);
	size_t w, p = g->first;

	if (!g->response && !g->pad_zero && g->pad > 0)
		goto out;
	for (size_t i = 0; i < g->n_chunks; i++)
		if (g->chunks[i] == 0)
			goto out;
	ss_2022_stream_reset(e);
	if (g->response) {
		if (g->first == 0)
			goto out;
		w = SS_2022_RESP_HDR_LEN(m);
		memcpy(mine + w, g->plain, g->first);
		FZ_CHECK(ss_2022_enc_start_response_salt(e, g->key, g->req_salt, g->salt) == 0);
		FZ_CHECK(ss_2022_enc_response(e, mine, g->first, g->ts) == 0);
	} else {
		ss_psk_list_t psks = {.n = 1};
		ss_2022_request_t req = {g->addr_enc, g->addr_len, (int)g->pad, g->ts};

		memcpy(psks.keys[0], g->key, m->key_len);
		if (g->users) {
			psks.n = 2;
			memcpy(psks.keys[0], g->ikey, m->key_len);
			memcpy(psks.keys[1], g->key, m->key_len);
		}
		w = ss_2022_request_hdr_len(m, psks.n - 1u, g->addr_len, g->pad);
		memcpy(mine + w, g->plain, g->first);
		FZ_CHECK(ss_2022_enc_request_salt(e, &psks, &req, mine + w, g->first, w, g->salt) ==
			 (long)w);
	}
	w += g->first + SS_AEAD_TAG_LEN;
	for (size_t i = 0; i < g->n_chunks; i++) {
		memcpy(mine + w + SS_2022_CHUNK_HDR, g->plain + p, g->chunks[i]);
		FZ_CHECK(ss_2022_enc_chunk(e, mine + w, g->chunks[i]) == 0);
		w += g->chunks[i] + SS_2022_CHUNK_OVERHEAD;
		p += g->chunks[i];
	}
	FZ_CHECK(w == len && memcmp(mine, wire, len) == 0);
out:
	free(mine);
}

static fz_decoded_t decode(const msg_t *g, reader_t *r, ss_saltpool_t *pl, const uint8_t *wire,
			   size_t len, const fz_split_t *split, uint8_t *scratch, uint8_t *out)
{
	fz_decoded_t d;

	memset(r, 0, sizeof(*r));
	r->s = &decs[g->mi][g->bi];
	r->now = now;
	ss_2022_stream_reset(r->s);
	if (g->response)
		ss_2022_dec_start_client(r->s, g->key, g->req_salt);
	else
		ss_2022_dec_start_server(r->s, g->ikey, g->users ? &fz_users[g->mi][g->bi] : NULL,
					 pl);
	d = fz_feed(dec_call, r, wire, len, split, scratch, out, g->plain_len);
	r->err = r->s->err;
	return d;
}

static ss_2022_err_t expected_err(const msg_t *g)
{
	switch (g->what) {
	case TYPE:
		return SS_2022_E_TYPE;
	case TIME:
		return SS_2022_E_TIME;
	case SALT:
		return SS_2022_E_SALT;
	case USER:
		return SS_2022_E_USER;
	case SHORT:
	case NOPAD:
		return SS_2022_E_LENGTH;
	case ADDR:
		return SS_2022_E_ADDR;
	case PADDING:
		return SS_2022_E_PADDING;
	case EMPTY:
		return SS_2022_E_EMPTY;
	case REPLAY:
		return SS_2022_E_REPLAY;
	default:
		return SS_2022_E_NONE;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f), w = fz_u8(&f);
	msg_t g = {.mi = (sel & 0x7f) % FZ_N_2022, .bi = (sel & 0x7f) / FZ_N_2022 % FZ_N_BACKENDS};
	const ss_method_t *m = fz_method(fz_2022_names[g.mi]);
	fz_split_t split, whole;
	reader_t r, r2;
	fz_decoded_t d, d2;
	uint8_t *wire, *scratch, *out, *out2;
	size_t len, cap;

	now += SS_2022_SALT_TTL + 1;
	g.response = (sel & 0x7f) / (FZ_N_2022 * FZ_N_BACKENDS) % 2;
	g.users = !g.response && ss_method_has_identity(m) && (sel & 0x80);
	g.what = w % 16 < 4 ? FZ_AS_SEALED : w % 16 - 3;
	if (g.what >= N_WHAT || (g.what == SALT && !g.response) || (g.what == USER && !g.users) ||
	    (g.what >= SHORT && g.what <= REPLAY && g.response))
		g.what = FZ_AS_SEALED;
	choose(&f, &g);
	fz_split_read(&f, &split);
	fz_split_whole(&whole, split.max_spans);

	cap = m->salt_len + SS_2022_IDENTITY_LEN + 1 + 8 + m->salt_len + 2 + SS_AEAD_TAG_LEN +
	      SS_ADDR_MAX_ENCODED + 2 + SS_2022_MAX_PADDING + SS_AEAD_TAG_LEN + g.plain_len +
	      g.n_chunks * SS_2022_CHUNK_OVERHEAD;
	wire = malloc(cap);
	fz_fill(&f, g.plain, g.plain_len);
	len = build(&f, &g, wire);
	FZ_CHECK(len <= cap);
	if (g.what == FZ_AS_SEALED)
		same_as_encoder(&g, wire, len);
	len = fz_spoil(&f, g.what, wire, len);

	scratch = malloc(len + 1);
	out = malloc(g.plain_len + 1);
	out2 = malloc(g.plain_len + 1);
	if (g.what == REPLAY)
		FZ_CHECK(ss_saltpool_check_add(&pool, g.salt, m->salt_len, now) == 0);
	d = decode(&g, &r, &pool, wire, len, &split, scratch, out);
	d2 = decode(&g, &r2, NULL, wire, len, &whole, scratch, out2);

	FZ_CHECK(memcmp(out, g.plain, d.out_len) == 0);
	FZ_CHECK(memcmp(out2, g.plain, d2.out_len) == 0);
	FZ_CHECK(r.headers <= 1 && r2.headers <= 1);
	/* Without the pool, the replay is one more request as sealed. */
	if (g.what == REPLAY)
		FZ_CHECK(d2.rc == SS_OK && d2.out_len == g.plain_len && r2.headers == 1);
	else
		FZ_CHECK(d.rc == d2.rc && r.err == r2.err);
	/* The header and every chunk before the first bad unit come out,
	 * however the wire was split. */
	if (g.what != REPLAY)
		FZ_CHECK(r.headers == r2.headers && d.out_len == d2.out_len);
	if (d.rc == SS_OK && d2.rc == SS_OK)
		FZ_CHECK(d.leftover == d2.leftover);
	if (r.headers) {
		FZ_CHECK(r.hdr.timestamp == g.ts);
		if (!g.response)
			FZ_CHECK(fz_addr_eq(&r.hdr.target, &g.addr));
		FZ_CHECK(r.hdr.user == (g.users ? &fz_users[g.mi][g.bi].v[g.user] : NULL));
	}
	switch (g.what) {
	case FZ_AS_SEALED:
		FZ_CHECK(d.rc == SS_OK && r.headers == 1);
		FZ_CHECK(d.out_len == g.plain_len && d.leftover == 0);
		break;
	case FZ_CUT:
		FZ_CHECK(d.rc == SS_OK);
		break;
	case FZ_FLIP:
		FZ_CHECK(d.rc == SS_ERR);
		FZ_CHECK(r.err == SS_2022_E_AUTH || (g.users && r.err == SS_2022_E_USER));
		break;
	default:
		FZ_CHECK(d.rc == SS_ERR && d.out_len == 0 && r.err == expected_err(&g));
	}
	free(g.plain);
	free(wire);
	free(scratch);
	free(out);
	free(out2);
	return 0;
}
