/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SIP004 decoders on raw wire bytes, with a fixed key
 * per method (fz_key(0)), so that the seeds, sealed with it, authenticate
 * and mutations of them reach every later unit.
 * Input: [selector][read size][max spans][wire...]. The selector picks the
 * method (modulo 5), the backend, and TCP (ss_aead_dec, the wire fed in
 * reads of the given size, 0 meaning all at once) or UDP
 * (ss_aead_open_packet on the wire as one datagram). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/aead.h"
#include "fuzz_util.h"

/* Made once per method and backend and reused, as a connection slot is. */
static ss_aead_stream_t streams[FZ_N_AEAD][FZ_N_BACKENDS];
static ss_aead_t packets[FZ_N_AEAD][FZ_N_BACKENDS];

__attribute__((constructor)) static void setup(void)
{
	for (unsigned i = 0; i < FZ_N_AEAD; i++)
		for (unsigned b = 0; b < FZ_N_BACKENDS; b++) {
			const ss_method_t *m = fz_method(fz_aead_names[i]);

			if (ss_aead_stream_init(&streams[i][b], m, fz_backend(b)) != 0 ||
			    fz_backend(b)->aead_init(&packets[i][b], m->alg) != 0)
				abort();
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f);
	unsigned mi = sel % FZ_N_AEAD, bi = sel / FZ_N_AEAD % FZ_N_BACKENDS;
	bool udp = sel / (FZ_N_AEAD * FZ_N_BACKENDS) % 2;
	const ss_method_t *m = fz_method(fz_aead_names[mi]);
	const ss_crypto_backend_t *be = fz_backend(bi);
	uint8_t key[SS_MAX_KEY_LEN];
	fz_split_t split;
	uint8_t *wire, *scratch, *out;

	fz_key(0, key);
	fz_split_fixed(&f, &split);
	/* Exactly the input's bytes, so ASan sees any read past them. */
	wire = malloc(f.n ? f.n : 1);
	memcpy(wire, f.p, f.n);

	if (udp) {
		uint8_t *plain = NULL;
		long n = ss_aead_open_packet(m, be, &packets[mi][bi], key, wire, f.n, &plain);

		if (f.n < (size_t)m->salt_len + SS_AEAD_TAG_LEN)
			FZ_CHECK(n == -EINVAL);
		else if (n >= 0)
			FZ_CHECK(plain == wire + m->salt_len &&
				 (size_t)n == f.n - m->salt_len - SS_AEAD_TAG_LEN);
		else
			FZ_CHECK(n == -EBADMSG);
		free(wire);
		return 0;
	}

	ss_aead_stream_t *s = &streams[mi][bi];
	fz_decoded_t d;

	scratch = malloc(f.n ? f.n : 1);
	out = malloc(f.n ? f.n : 1);
	ss_aead_stream_reset(s);
	ss_aead_dec_start(s, key);
	d = fz_feed(fz_aead_dec, s, wire, f.n, &split, scratch, out, f.n);
	/* Less plaintext than wire: every chunk costs 34 bytes more. */
	FZ_CHECK(d.out_len + (f.n >= m->salt_len ? m->salt_len : 0) <= f.n);
	FZ_CHECK((d.rc == SS_ERR) == s->dead);
	/* Fed everything and stopped: only an incomplete unit is left. */
	if (d.rc == SS_OK && !s->have_salt)
		FZ_CHECK(d.leftover < m->salt_len);
	else if (d.rc == SS_OK && s->pending_len == 0)
		FZ_CHECK(d.leftover < SS_AEAD_CHUNK_HDR);
	else if (d.rc == SS_OK)
		FZ_CHECK(d.leftover < (size_t)s->pending_len + SS_AEAD_TAG_LEN);
	free(wire);
	free(scratch);
	free(out);
	return 0;
}
