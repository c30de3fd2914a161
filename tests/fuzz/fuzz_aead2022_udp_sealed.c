/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SIP022 UDP packets, structure-aware. The input chooses
 * the direction (client to a server, single-user or with users; server to
 * a client, whose key list has identity PSKs or not), the session and
 * packet ids, user, timestamp, padding, address and payload. The packet is
 * sealed by hand as SIP022 and SIP023 lay it out (separate header, identity
 * header, AEAD under the session subkey; or XChaCha20-Poly1305 under the
 * PSK), so also packets our encoder refuses to make reach
 * udp_open_whole; for the AES methods, our encoder must make the same
 * bytes when it can.
 * Sometimes one thing is wrong on purpose, each with the reason it must be
 * refused for: a flipped bit, a cut packet, the header type, the
 * timestamp, a main header too short for its fixed fields, a padding
 * length past the end, a malformed or cut address, an unknown user.
 * Invariants: a packet as sealed opens to what was sealed, and anything
 * wrong is refused for its reason. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_2022.h"

enum {
	TYPE = FZ_OWN,
	TIME,
	SHORT,
	PADDING,
	ADDR,
	NOADDR,
	USER,
	N_WHAT,
};

/* [method][backend][with users]; clients are made per input, their keys
 * depending on the user. */
static ss_2022_udp_t servers[FZ_N_2022][FZ_N_BACKENDS][2];
static ss_2022_udp_session_t sessions[FZ_N_2022][FZ_N_BACKENDS];
static ss_aead_t sealers[FZ_N_2022][FZ_N_BACKENDS], xsealers[FZ_N_BACKENDS];
static ss_aes_block_t aes[FZ_N_BACKENDS];

__attribute__((constructor)) static void setup(void)
{
	for (unsigned b = 0; b < FZ_N_BACKENDS; b++) {
		const ss_crypto_backend_t *be = fz_backend(b);

		FZ_CHECK(be->aes_init(&aes[b]) == 0);
		FZ_CHECK(be->aead_init(&xsealers[b], SS_AEAD_XCHACHA20_POLY1305) == 0);
		for (unsigned i = 0; i < FZ_N_2022; i++) {
			const ss_method_t *m = fz_method(fz_2022_names[i]);

			FZ_CHECK(be->aead_init(&sealers[i][b], m->alg) == 0);
			for (unsigned k = 0; k < 2; k++) {
				bool multi = k && ss_method_has_identity(m);
				uint8_t psk[SS_MAX_KEY_LEN];

				fz_key(0, psk);
				FZ_CHECK(ss_2022_udp_init_server(&servers[i][b][k], m, be, psk,
								 multi ? &fz_users[i][b] : NULL) ==
					 0);
			}
			FZ_CHECK(ss_2022_udp_session_init(&servers[i][b][0], &sessions[i][b]) == 0);
		}
	}
}

typedef struct pkt {
	unsigned mi, bi;
	bool to_server, multi;
	int what;
	size_t user;
	uint8_t key[SS_MAX_KEY_LEN];  /* the PSK of the session */
	uint8_t ikey[SS_MAX_KEY_LEN]; /* identity PSK (multi) */
	uint64_t sid, pid, csid, ts;
	ss_addr_t addr;
	uint8_t addr_enc[SS_ADDR_MAX_ENCODED];
	size_t addr_len, pad, n;
	bool pad_zero;
	uint8_t xnonce[SS_2022_UDP_XNONCE_LEN];
	uint8_t *payload;
} pkt_t;

/* The main header and payload, possibly spoiled; returns its length. */
static size_t main_header(fz_t *f, const pkt_t *g, uint8_t *out)
{
	size_t o = 0, pad_field = g->pad;

	out[o++] = (uint8_t)!g->to_server ^ (g->what == TYPE ? fz_range(f, 1, 255) : 0);
	fz_put_u64(out + o, g->ts);
	o += 8;
	if (!g->to_server) {
		fz_put_u64(out + o, g->csid);
		o += 8;
	}
	if (g->what == SHORT)
		return fz_range(f, 0, o + 1);
	if (g->what == PADDING)
		pad_field = g->pad + g->addr_len + g->n + fz_range(f, 1, 1000);
	fz_put_u16(out + o, (uint16_t)pad_field);
	o += 2;
	fz_padding(f, out + o, g->pad, g->pad_zero);
	o += g->pad;
	memcpy(out + o, g->addr_enc, g->addr_len);
	if (g->what == ADDR)
		fz_spoil_addr(f, out + o);
	if (g->what == NOADDR)
		return o + fz_range(f, 0, g->addr_len - 1);
	o += g->addr_len;
	memcpy(out + o, g->payload, g->n);
	return o + g->n;
}

/* Seals g by hand into wire; returns the packet's length. */
static size_t build(fz_t *f, const pkt_t *g, uint8_t *wire)
{
	const ss_method_t *m = fz_method(fz_2022_names[g->mi]);
	const ss_crypto_backend_t *be = fz_backend(g->bi);
	uint8_t body[8 + 8 + 1 + 8 + 8 + 2 + SS_2022_MAX_PADDING + SS_ADDR_MAX_ENCODED + 2048];
	uint8_t sep[SS_2022_UDP_SEP_LEN], subkey[SS_MAX_KEY_LEN];
	fz_sealer_t s = {be, NULL, {0}, wire, 0};
	size_t n;

	fz_put_u64(sep, g->sid);
	fz_put_u64(sep + 8, g->pid);
	if (!ss_method_has_identity(m)) {
		memcpy(body, sep, sizeof(sep));
		n = sizeof(sep) + main_header(f, g, body + sizeof(sep));
		s.aead = &xsealers[g->bi];
		FZ_CHECK(be->aead_setkey(s.aead, g->key, m->key_len) == 0);
		memcpy(s.nonce, g->xnonce, sizeof(s.nonce));
		fz_put(&s, g->xnonce, sizeof(g->xnonce));
		/* XChaCha20's 24-byte nonce: the builder's counter holds 12. */
		FZ_CHECK(be->aead_seal(s.aead, g->xnonce, wire + s.len, body, n) == 0);
		return s.len + n + SS_AEAD_TAG_LEN;
	}
	n = main_header(f, g, body);
	ss_2022_session_subkey(m, g->key, sep, 8, subkey);
	s.aead = &sealers[g->mi][g->bi];
	FZ_CHECK(be->aead_setkey(s.aead, subkey, m->key_len) == 0);
	ss_wipe(subkey, sizeof(subkey));
	/* The separate header under the first PSK of the sender's list. */
	FZ_CHECK(be->aes_setkey(&aes[g->bi], g->multi && g->to_server ? g->ikey : g->key,
				m->key_len) == 0);
	FZ_CHECK(be->aes_encrypt(&aes[g->bi], sep, fz_put(&s, sep, sizeof(sep))) == 0);
	if (g->multi && g->to_server) {
		uint8_t block[SS_2022_IDENTITY_LEN];

		ss_2022_psk_hash(m, g->key, block);
		for (size_t i = 0; i < sizeof(block); i++)
			block[i] ^= sep[i];
		FZ_CHECK(be->aes_setkey(&aes[g->bi], g->ikey, m->key_len) == 0);
		FZ_CHECK(be->aes_encrypt(&aes[g->bi], block, block) == 0);
		fz_put(&s, block, sizeof(block));
	}
	memcpy(s.nonce, sep + 4, sizeof(s.nonce));
	fz_seal(&s, body, n);
	return s.len;
}

/* Our encoder, for the AES methods, makes the same packet from the same
 * session and message. */
static void same_as_encoder(const pkt_t *g, const uint8_t *wire, size_t len)
{
	const ss_method_t *m = fz_method(fz_2022_names[g->mi]);
	ss_2022_udp_session_t *s = &sessions[g->mi][g->bi];
	ss_2022_udp_msg_t msg = {g->addr_enc, g->addr_len, g->pad, g->ts, g->csid};
	ss_2022_udp_t client, *u = &client;
	ss_2022_user_t *user = NULL;
	ss_psk_list_t psks = {.n = 1};
	size_t h, start;
	uint8_t *mine;

	if (!ss_method_has_identity(m) || !g->pad_zero)
		return;
	if (g->to_server) {
		memcpy(psks.keys[0], g->key, m->key_len);
		if (g->multi) {
			psks.n = 2;
			memcpy(psks.keys[0], g->ikey, m->key_len);
			memcpy(psks.keys[1], g->key, m->key_len);
		}
		FZ_CHECK(ss_2022_udp_init_client(&client, m, fz_backend(g->bi), &psks) == 0);
	} else {
		u = &servers[g->mi][g->bi][g->multi];
		user = g->multi ? &fz_users[g->mi][g->bi].v[g->user] : NULL;
	}
	h = ss_2022_udp_hdr_len(u, g->addr_len, g->pad);
	mine = malloc(h + g->n + SS_AEAD_TAG_LEN);
	memcpy(mine + h, g->payload, g->n);
	FZ_CHECK(ss_2022_udp_session_start(u, s, g->sid, user) == 0);
	s->next_packet_id = g->pid;
	FZ_CHECK(ss_2022_udp_seal(u, s, &msg, mine, h, g->n, h + g->n + SS_AEAD_TAG_LEN, &start) ==
		 (long)len);
	FZ_CHECK(start == 0 && memcmp(mine, wire, len) == 0);
	ss_2022_udp_session_reset(u, s);
	free(mine);
	if (u == &client)
		ss_2022_udp_free(&client);
}

static ss_2022_err_t expected_err(int what)
{
	static const ss_2022_err_t errs[N_WHAT] = {
	    [TYPE] = SS_2022_E_TYPE,       [TIME] = SS_2022_E_TIME, [SHORT] = SS_2022_E_LENGTH,
	    [PADDING] = SS_2022_E_PADDING, [ADDR] = SS_2022_E_ADDR, [NOADDR] = SS_2022_E_LENGTH,
	    [USER] = SS_2022_E_USER,
	};

	return errs[what];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f), w = fz_u8(&f);
	pkt_t g = {.mi = (sel & 0x7f) % FZ_N_2022, .bi = (sel & 0x7f) / FZ_N_2022 % FZ_N_BACKENDS};
	const ss_method_t *m = fz_method(fz_2022_names[g.mi]);
	ss_2022_udp_t *u, client;
	ss_2022_udp_pkt_t p;
	uint8_t *wire;
	size_t len;
	int rc;

	g.to_server = (sel & 0x7f) / (FZ_N_2022 * FZ_N_BACKENDS) % 2;
	g.multi = ss_method_has_identity(m) && (sel & 0x80);
	g.what = w % 16 < 4 ? FZ_AS_SEALED : w % 16 - 3;
	if (g.what >= N_WHAT || (g.what == USER && !(g.multi && g.to_server)))
		g.what = FZ_AS_SEALED;
	g.user = fz_range(&f, 0, FZ_N_USERS - 1);
	fz_key(0, g.ikey);
	fz_key(g.multi ? 1 + (unsigned)g.user : 0, g.key);
	if (g.what == USER)
		fz_key(FZ_N_USERS + 1, g.key);
	g.sid = fz_u64(&f);
	g.pid = fz_u64(&f);
	g.csid = fz_u64(&f);
	g.ts = fz_2022_time(&f, FZ_NOW, g.what == TIME);
	g.addr_len = fz_addr(&f, &g.addr, g.addr_enc);
	g.pad = fz_range(&f, 0, SS_2022_MAX_PADDING);
	g.pad_zero = fz_bool(&f);
	g.n = fz_range(&f, 0, 2048);
	if (g.what == NOADDR)
		g.n = 0;
	fz_bytes(&f, g.xnonce, sizeof(g.xnonce));
	g.payload = malloc(g.n + 1);
	fz_fill(&f, g.payload, g.n);

	wire = malloc(40 + 8 + 8 + 1 + 8 + 8 + 2 + SS_2022_MAX_PADDING + SS_ADDR_MAX_ENCODED + g.n +
		      SS_AEAD_TAG_LEN);
	len = build(&f, &g, wire);
	if (g.what == FZ_AS_SEALED)
		same_as_encoder(&g, wire, len);
	len = fz_spoil(&f, g.what, wire, len);

	/* The receiver: a server, or a client whose last PSK keys the
	 * session (after an identity PSK when multi). */
	if (g.to_server) {
		u = &servers[g.mi][g.bi][g.multi];
	} else {
		ss_psk_list_t psks = {.n = g.multi ? 2 : 1};

		memcpy(psks.keys[0], g.multi ? g.ikey : g.key, m->key_len);
		memcpy(psks.keys[1], g.key, m->key_len);
		FZ_CHECK(ss_2022_udp_init_client(&client, m, fz_backend(g.bi), &psks) == 0);
		u = &client;
	}
	rc = udp_open_whole(u, &sessions[g.mi][g.bi], wire, len, FZ_NOW, &p);
	FZ_CHECK((rc == SS_OK) == (p.err == SS_2022_E_NONE));
	switch (g.what) {
	case FZ_AS_SEALED:
		FZ_CHECK(rc == SS_OK && p.session_id == g.sid && p.packet_id == g.pid);
		FZ_CHECK(p.timestamp == g.ts && fz_addr_eq(&p.addr, &g.addr));
		FZ_CHECK(p.addr_len == g.addr_len &&
			 memcmp(p.addr_raw, g.addr_enc, g.addr_len) == 0);
		FZ_CHECK(p.payload_len == g.n && memcmp(p.payload, g.payload, g.n) == 0);
		if (!g.to_server)
			FZ_CHECK(p.client_session_id == g.csid);
		FZ_CHECK(p.user ==
			 (g.multi && g.to_server ? &fz_users[g.mi][g.bi].v[g.user] : NULL));
		break;
	case FZ_FLIP:
		FZ_CHECK(rc == SS_ERR);
		FZ_CHECK(p.err == SS_2022_E_AUTH || (g.multi && p.err == SS_2022_E_USER));
		break;
	case FZ_CUT:
		FZ_CHECK(rc == SS_ERR);
		FZ_CHECK(p.err == SS_2022_E_AUTH || p.err == SS_2022_E_LENGTH);
		break;
	default:
		FZ_CHECK(rc == SS_ERR && p.err == expected_err(g.what));
	}
	ss_2022_udp_session_reset(u, &sessions[g.mi][g.bi]);
	if (u == &client)
		ss_2022_udp_free(&client);
	free(g.payload);
	free(wire);
	return 0;
}
