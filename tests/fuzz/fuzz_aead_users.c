/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a SIP004 port of several users (codec_aead_users.c)
 * on raw wire bytes, through the codec as the relay calls it: which user's
 * key opens a stream's salt and first length block, then the stream; or
 * which opens a datagram. Five users, one per SIP004 method, all keyed
 * with fz_key(0) as fuzz_aead's are, so that its seeds open here too.
 * Input: [selector][read size][max spans][wire...], as fuzz_aead's (whose
 * seeds start this target's corpus). The selector picks the backend, and
 * TCP or UDP. A codec is made per input: its replay pools start empty, so
 * an input gives the same result however often it runs.
 */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "fuzz_util.h"

static ss_config_user_t users[FZ_N_AEAD];

__attribute__((constructor)) static void setup(void)
{
	if (ss_crypto_global_init() != 0)
		abort();
	for (unsigned i = 0; i < FZ_N_AEAD; i++) {
		snprintf(users[i].name, sizeof(users[i].name), "user%u", i);
		users[i].method = fz_method(fz_aead_names[i]);
		fz_key(0, users[i].key);
	}
}

typedef struct tcp_ctx {
	ss_codec_t *k;
	void *dec;
	const char *user;
} tcp_ctx_t;

static int users_dec(void *ctx, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
		     size_t max_spans, size_t *nspans)
{
	tcp_ctx_t *t = ctx;
	ss_codec_hdr_t hdr;
	int rc =
	    t->k->ops->decode(t->k, t->dec, buf, len, 0, consumed, spans, max_spans, nspans, &hdr);

	/* The user, once named, is one of the port's and stays the same. */
	if (hdr.user) {
		FZ_CHECK(hdr.user >= users[0].name && hdr.user <= users[FZ_N_AEAD - 1].name);
		FZ_CHECK(!t->user || t->user == hdr.user);
		t->user = hdr.user;
	}
	FZ_CHECK(*nspans == 0 || t->user);
	return rc;
}

static void run_tcp(ss_codec_t *k, const struct sockaddr *from, fz_t *f, const fz_split_t *split)
{
	void *enc = aligned_alloc(64, ss_codec_state_size(k));
	void *dec = aligned_alloc(64, ss_codec_state_size(k));
	uint8_t *wire = malloc(f->n ? f->n : 1), *scratch = malloc(f->n ? f->n : 1);
	uint8_t *out = malloc(f->n ? f->n : 1);
	tcp_ctx_t t = {k, dec, NULL};

	if (ss_codec_init(k, enc) != 0 || ss_codec_init(k, dec) != 0)
		abort();
	memcpy(wire, f->p, f->n);
	ss_codec_start(k, enc, dec);
	ss_codec_peer(k, dec, from);
	fz_decoded_t d = fz_feed(users_dec, &t, wire, f->n, split, scratch, out, f->n);
	FZ_CHECK(d.out_len <= f->n);
	if (d.rc == SS_ERR)
		FZ_CHECK(k->ops->why(k, dec) != NULL);
	/* Named a user: the answer is sealed for it. */
	if (t.user)
		FZ_CHECK(ss_codec_bind(k, dec, enc) == 0);
	ss_codec_reset(k, enc);
	ss_codec_reset(k, dec);
	ss_codec_release(k, enc);
	ss_codec_release(k, dec);
	free(enc);
	free(dec);
	free(wire);
	free(scratch);
	free(out);
}

static void run_udp(ss_codec_t *k, const struct sockaddr *from, fz_t *f)
{
	void *rst = aligned_alloc(64, (k->ops->udp_relay_size + 63) & ~(size_t)63);
	uint8_t *wire = malloc(f->n ? f->n : 1);
	ss_codec_dgram_t d;
	ss_codec_pkt_t p;
	const char *why;

	if (ss_codec_udp_init(k, rst) != 0)
		abort();
	memcpy(wire, f->p, f->n);
	why = k->ops->udp_open_request(k, rst, wire, f->n, 0, from, sizeof(struct sockaddr_in), &d);
	if (!why)
		why = k->ops->udp_accept(k, rst, NULL, &d, 0, &p);
	if (!why) {
		FZ_CHECK(ss_codec_udp_user(k, &d) != NULL);
		FZ_CHECK(p.addr_raw >= wire && p.payload + p.payload_len <= wire + f->n);
	}
	ss_codec_udp_free(k, rst);
	free(rst);
	free(wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f);
	const ss_crypto_backend_t *be = fz_backend(sel % FZ_N_BACKENDS);
	bool udp = sel / FZ_N_BACKENDS % 2;
	struct sockaddr_in from = {.sin_family = AF_INET};
	ss_config_t cfg;
	ss_codec_t k;
	fz_split_t split;
	char err[128];

	fz_split_fixed(&f, &split);
	from.sin_addr.s_addr = htonl(0x7f000001u);
	memset(&cfg, 0, sizeof(cfg));
	cfg.prog = SS_PROG_SERVER;
	cfg.method = users[2].method;
	cfg.users = users;
	cfg.n_users = FZ_N_AEAD;
	cfg.replay_capacity = 16;
	cfg.mode = SS_MODE_TCP_AND_UDP;
	if (ss_codec_setup(&k, &cfg, be, true, err, sizeof(err)) != 0)
		abort();
	FZ_CHECK(k.ops == &ss_codec_aead_users);
	if (udp)
		run_udp(&k, (const struct sockaddr *)&from, &f);
	else
		run_tcp(&k, (const struct sockaddr *)&from, &f, &split);
	ss_codec_free(&k);
	return 0;
}
