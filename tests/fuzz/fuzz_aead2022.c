/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SIP022 TCP decoders on raw wire bytes, with fixed
 * keys so that the seeds (sealed with them, timestamps at FZ_NOW) pass
 * authentication and their mutations reach the header checks and chunks.
 * Input: [selector][read size][max spans][wire...]. The selector's low 7
 * bits pick the method (modulo 3), then the backend, then the decoder: a
 * server's request decoder (PSK fz_key(0); with bit 7, for the AES methods,
 * a multi-user server whose users have fz_key(1..3)) or a client's
 * response decoder (user PSK fz_key(0), request salt fz_key(9)). The wire
 * is fed in reads of the given size (0: all at once). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_2022.h"

static ss_2022_stream_t decs[FZ_N_2022][FZ_N_BACKENDS];

__attribute__((constructor)) static void setup(void)
{
	for (unsigned i = 0; i < FZ_N_2022; i++)
		for (unsigned b = 0; b < FZ_N_BACKENDS; b++)
			FZ_CHECK(ss_2022_stream_init(&decs[i][b], fz_method(fz_2022_names[i]),
						     fz_backend(b)) == 0);
}

static int dec_call(void *ctx, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
		    size_t max_spans, size_t *nspans)
{
	ss_2022_stream_t *s = ctx;
	ss_2022_header_t hdr;
	int rc = ss_2022_dec(s, buf, len, FZ_NOW, consumed, spans, max_spans, nspans, &hdr);

	/* A refusal sets the reason; a call that also delivered what came
	 * before the refused unit says OK, and the next one says no. */
	FZ_CHECK(rc == SS_OK || s->err != SS_2022_E_NONE);
	if (rc == SS_OK && s->err != SS_2022_E_NONE)
		FZ_CHECK(*nspans > 0 || hdr.done);
	FZ_CHECK(!hdr.done || (rc == SS_OK && s->have_header));
	for (size_t i = 0; i < *nspans; i++)
		FZ_CHECK(spans[i].len > 0 && spans[i].len <= SS_2022_MAX_PAYLOAD);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f);
	unsigned v = sel & 0x7f, mi = v % FZ_N_2022, bi = v / FZ_N_2022 % FZ_N_BACKENDS;
	bool response = v / (FZ_N_2022 * FZ_N_BACKENDS) % 2;
	const ss_method_t *m = fz_method(fz_2022_names[mi]);
	ss_2022_stream_t *s = &decs[mi][bi];
	ss_2022_users_t *users =
	    (sel & 0x80) && ss_method_has_identity(m) ? &fz_users[mi][bi] : NULL;
	uint8_t key[SS_MAX_KEY_LEN], req_salt[SS_MAX_KEY_LEN];
	uint8_t *wire, *scratch, *out;
	fz_split_t split;
	fz_decoded_t d;

	fz_split_fixed(&f, &split);
	fz_key(0, key);
	fz_key(9, req_salt);
	ss_2022_stream_reset(s);
	if (response)
		ss_2022_dec_start_client(s, key, req_salt);
	else
		ss_2022_dec_start_server(s, key, users, NULL);

	wire = malloc(f.n + 1);
	scratch = malloc(f.n + 1);
	out = malloc(f.n + 1);
	memcpy(wire, f.p, f.n);
	d = fz_feed(dec_call, s, wire, f.n, &split, scratch, out, f.n);
	if (d.rc == SS_OK && !s->have_header)
		FZ_CHECK(d.out_len == 0);
	if (d.rc == SS_OK && s->have_header && s->pending_len == 0)
		FZ_CHECK(d.leftover < SS_2022_CHUNK_HDR);
	free(wire);
	free(scratch);
	free(out);
	return 0;
}
