/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SIP004 decoders, structure-aware. The input chooses
 * a plaintext and its framing, which our encoder seals with the right key,
 * so that the decoder's work past authentication runs on every input:
 * - TCP: the key, the salt, an address header and chunk lengths (1..0x3FFF)
 *   sealed by ss_aead_enc_chunk, then fed to ss_aead_dec in reads of sizes
 *   the input picks, with 1-8 plaintext pieces per call;
 * - UDP: the key, an address header and a payload sealed by
 *   ss_aead_seal_packet, opened by ss_aead_open_packet, its address parsed
 *   as the relay parses it.
 * Sometimes one thing is wrong on purpose: a flipped bit anywhere in the
 * wire, a length block that seals 0 or more than 0x3FFF (TCP), or the wire
 * cut short. Invariants: what decodes is always a prefix of what was sealed;
 * with nothing wrong it is all of it; a flipped bit is refused; a cut wire is
 * not refused; and the TCP result (OK or not) and the plaintext (all of it,
 * or what came before the unit refused) do not depend on how the wire was
 * split into reads. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/aead.h"
#include "fuzz_util.h"

enum { BAD_LENGTH = FZ_OWN };

static ss_aead_stream_t enc[FZ_N_AEAD][FZ_N_BACKENDS], dec[FZ_N_AEAD][FZ_N_BACKENDS];
static ss_aead_t packets[FZ_N_AEAD][FZ_N_BACKENDS];

__attribute__((constructor)) static void setup(void)
{
	for (unsigned i = 0; i < FZ_N_AEAD; i++)
		for (unsigned b = 0; b < FZ_N_BACKENDS; b++) {
			const ss_method_t *m = fz_method(fz_aead_names[i]);

			if (ss_aead_stream_init(&enc[i][b], m, fz_backend(b)) != 0 ||
			    ss_aead_stream_init(&dec[i][b], m, fz_backend(b)) != 0 ||
			    fz_backend(b)->aead_init(&packets[i][b], m->alg) != 0)
				abort();
		}
}

/* Seals n bytes at p in place with the encoder's next nonce, as
 * ss_aead_enc_chunk does for each half of a chunk. */
static void seal_unit(ss_aead_stream_t *s, uint8_t *p, size_t n)
{
	FZ_CHECK(s->be->aead_seal(&s->aead, s->nonce, p, p, n) == 0);
	for (size_t i = 0; i < s->method->nonce_len; i++)
		if (++s->nonce[i] != 0)
			break;
}

static void tcp(fz_t *f, unsigned mi, unsigned bi, int what)
{
	const ss_method_t *m = fz_method(fz_aead_names[mi]);
	ss_aead_stream_t *e = &enc[mi][bi], *d = &dec[mi][bi];
	uint8_t key[SS_MAX_KEY_LEN], salt[SS_MAX_SALT_LEN], addr[SS_ADDR_MAX_ENCODED];
	size_t lens[8], n_chunks = fz_range(f, 1, 8), bad = 8, plain_len = 0, w, wire_len;
	uint16_t bad_len = 0;
	uint8_t *plain, *wire, *scratch, *out, *out2;
	size_t addr_len;
	ss_addr_t a;
	fz_split_t split, whole;
	fz_decoded_t r, r2;

	fz_bytes(f, key, m->key_len);
	fz_bytes(f, salt, m->salt_len);
	addr_len = fz_addr(f, &a, addr);
	for (size_t i = 0; i < n_chunks; i++) {
		lens[i] = fz_range(f, 1, SS_AEAD_MAX_PAYLOAD);
		plain_len += lens[i];
	}
	if (what == BAD_LENGTH) {
		bad = fz_range(f, 0, n_chunks - 1);
		bad_len = fz_bool(f) ? 0 : (uint16_t)fz_range(f, SS_AEAD_MAX_PAYLOAD + 1, 0xFFFF);
	}
	fz_split_read(f, &split);
	fz_split_whole(&whole, split.max_spans);

	plain = malloc(plain_len);
	wire = malloc(m->salt_len + plain_len + n_chunks * SS_AEAD_CHUNK_OVERHEAD);
	fz_fill(f, plain, plain_len);
	memcpy(plain, addr, addr_len < plain_len ? addr_len : plain_len);

	/* The wire: the salt, then the chunks; the sealed plaintext stops
	 * before a bad length. */
	ss_aead_stream_reset(e);
	FZ_CHECK(ss_aead_enc_start_salt(e, key, salt) == 0);
	memcpy(wire, salt, m->salt_len);
	w = m->salt_len;
	plain_len = 0;
	for (size_t i = 0; i < n_chunks; i++) {
		uint8_t *c = wire + w;

		memcpy(c + SS_AEAD_CHUNK_HDR, plain + plain_len, lens[i]);
		if (i == bad) {
			c[0] = (uint8_t)(bad_len >> 8);
			c[1] = (uint8_t)bad_len;
			seal_unit(e, c, 2);
			seal_unit(e, c + SS_AEAD_CHUNK_HDR, lens[i]);
			w += lens[i] + SS_AEAD_CHUNK_OVERHEAD;
			break;
		}
		FZ_CHECK(ss_aead_enc_chunk(e, c, lens[i]) == 0);
		w += lens[i] + SS_AEAD_CHUNK_OVERHEAD;
		plain_len += lens[i];
	}
	wire_len = w;
	wire_len = fz_spoil(f, what, wire, wire_len);

	scratch = malloc(wire_len + 1);
	out = malloc(plain_len + 1);
	out2 = malloc(plain_len + 1);
	ss_aead_stream_reset(d);
	ss_aead_dec_start(d, key);
	r = fz_feed(fz_aead_dec, d, wire, wire_len, &split, scratch, out, plain_len);
	ss_aead_stream_reset(d);
	ss_aead_dec_start(d, key);
	r2 = fz_feed(fz_aead_dec, d, wire, wire_len, &whole, scratch, out2, plain_len);

	FZ_CHECK(memcmp(out, plain, r.out_len) == 0);
	FZ_CHECK(memcmp(out2, plain, r2.out_len) == 0);
	/* Every chunk before the first bad unit comes out, however the wire
	 * was split. */
	FZ_CHECK(r.rc == r2.rc && r.out_len == r2.out_len);
	if (r.rc == SS_OK)
		FZ_CHECK(r.leftover == r2.leftover);
	if (what == FZ_AS_SEALED) {
		FZ_CHECK(r.rc == SS_OK && r.out_len == plain_len && r.leftover == 0);
		if (addr_len <= plain_len) {
			ss_addr_t got;
			size_t used;

			FZ_CHECK(ss_addr_parse(out, r.out_len, &got, &used) == SS_OK);
			FZ_CHECK(used == addr_len && fz_addr_eq(&a, &got));
		}
	} else if (what == FZ_CUT) {
		FZ_CHECK(r.rc == SS_OK);
	} else {
		FZ_CHECK(r.rc == SS_ERR && d->dead);
	}
	free(plain);
	free(wire);
	free(scratch);
	free(out);
	free(out2);
}

static void udp(fz_t *f, unsigned mi, unsigned bi, int what)
{
	const ss_method_t *m = fz_method(fz_aead_names[mi]);
	const ss_crypto_backend_t *be = fz_backend(bi);
	uint8_t key[SS_MAX_KEY_LEN], *plain, *wire, *opened = NULL;
	size_t addr_len, plain_len, wire_len;
	ss_addr_t a, got;
	long n;

	fz_bytes(f, key, m->key_len);
	plain = malloc(SS_ADDR_MAX_ENCODED + 2048);
	addr_len = fz_addr(f, &a, plain);
	plain_len = addr_len + fz_range(f, 0, 2048);
	fz_fill(f, plain + addr_len, plain_len - addr_len);
	wire_len = m->salt_len + plain_len + SS_AEAD_TAG_LEN;
	wire = malloc(wire_len);
	/* One byte short of room is refused. */
	FZ_CHECK(ss_aead_seal_packet(m, be, &packets[mi][bi], key, plain, plain_len, wire,
				     wire_len - 1) == -ENOSPC);
	n = ss_aead_seal_packet(m, be, &packets[mi][bi], key, plain, plain_len, wire, wire_len);
	FZ_CHECK(n == (long)wire_len);
	if (what == BAD_LENGTH)
		what = FZ_FLIP;
	wire_len = fz_spoil(f, what, wire, wire_len);

	n = ss_aead_open_packet(m, be, &packets[mi][bi], key, wire, wire_len, &opened);
	if (what == FZ_AS_SEALED) {
		size_t used;

		FZ_CHECK(n == (long)plain_len && opened == wire + m->salt_len);
		FZ_CHECK(memcmp(opened, plain, plain_len) == 0);
		FZ_CHECK(ss_addr_parse(opened, (size_t)n, &got, &used) == SS_OK);
		FZ_CHECK(used == addr_len && fz_addr_eq(&a, &got));
	} else if (wire_len < (size_t)m->salt_len + SS_AEAD_TAG_LEN) {
		FZ_CHECK(n == -EINVAL);
	} else {
		/* A cut datagram loses its tag: as refused as a flipped one. */
		FZ_CHECK(n == -EBADMSG);
	}
	free(plain);
	free(wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f), w = fz_u8(&f);
	unsigned mi = sel % FZ_N_AEAD, bi = sel / FZ_N_AEAD % FZ_N_BACKENDS;
	/* Mostly as sealed: that is where the decoders have the most to do. */
	int what = w % 8 < 5 ? FZ_AS_SEALED : w % 8 - 4;

	if (sel / (FZ_N_AEAD * FZ_N_BACKENDS) % 2)
		udp(&f, mi, bi, what);
	else
		tcp(&f, mi, bi, what);
	return 0;
}
