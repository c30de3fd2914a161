/* sealbench: how fast the relay's SIP004 codec seals and opens on this
 * machine, in the relay's own layout (sixteen chunks of the relay's payload
 * size sealed in place per buffer), with the bytes fresh from a copy out of
 * a large ring the way a socket read leaves them (the copy is not timed), or
 * sealed over and over in cache (--hot, sealing only). --payload sets the
 * chunk payload (1..16383; the relay's by default). The floor under the
 * relays' user time in docs/performance.md.
 *
 *   sealbench [--method NAME] [--backend openssl|sodium] [--mbytes N]
 *             [--payload N] [--hot]
 *
 * Prints one JSON line. Without --hot every buffer it seals is opened again
 * by a decoder and compared with what was sealed, so a wrong result fails
 * (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/aead.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "util/result.h"

#define CHUNKS 16
#define RING (64u << 20)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: sealbench [--method NAME] [--backend openssl|sodium] "
			"[--mbytes N] [--payload N] [--hot]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *name = "aes-256-gcm", *backend = NULL;
	size_t mbytes = 2000, payload = 0; /* 0: what the relay fills */
	int hot = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--method") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--mbytes") && i + 1 < argc)
			mbytes = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--payload") && i + 1 < argc)
			payload = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--hot"))
			hot = 1;
		else
			return usage();
	}
	if (ss_crypto_global_init() < 0 || mbytes == 0 || payload > SS_AEAD_MAX_PAYLOAD)
		return usage();

	const ss_crypto_backend_t *be = ss_crypto_default();
	if (backend && !strcmp(backend, "sodium"))
		be = &ss_crypto_sodium;
#ifdef SS_HAVE_OPENSSL
	else if (backend && !strcmp(backend, "openssl"))
		be = &ss_crypto_openssl;
#endif
	else if (backend)
		return usage();

	const ss_method_t *m;
	char err[160];
	if (ss_method_lookup(name, &m, err, sizeof(err)) < 0 || m->kind != SS_METHOD_AEAD) {
		fprintf(stderr, "sealbench: %s\n", m ? "a SIP004 method, please" : err);
		return 2;
	}

	static ss_aead_stream_t enc, dec;
	uint8_t key[32];
	ss_random_bytes(key, sizeof(key));
	if (ss_aead_stream_init(&enc, m, be) < 0 || ss_aead_stream_init(&dec, m, be) < 0) {
		fprintf(stderr, "sealbench: cannot set up\n");
		return 1;
	}
	if (!payload)
		payload = SS_AEAD_FILL_PAYLOAD;
	size_t stride = payload + SS_AEAD_CHUNK_OVERHEAD;
	size_t salt_len = m->salt_len, per = (size_t)CHUNKS * payload;
	size_t wire = (size_t)CHUNKS * stride;
	uint8_t *buf = aligned_alloc(64, (wire + 63) & ~(size_t)63);
	uint8_t *ring = malloc(RING), *check = malloc(wire + 64);
	if (!buf || !ring || !check) {
		fprintf(stderr, "sealbench: cannot set up\n");
		return 1;
	}
	ss_random_bytes(ring, 4096);
	for (size_t i = 4096; i < RING; i += 4096)
		memcpy(ring + i, ring, 4096);
	if (ss_aead_enc_start(&enc, key, check) < 0)
		return 1;
	ss_aead_dec_start(&dec, key);

	/* The decoder is fed the salt first, then every sealed buffer. */
	size_t consumed, nspans;
	ss_span_t spans[2 * CHUNKS];
	if (ss_aead_dec(&dec, check, salt_len, &consumed, spans, 2 * CHUNKS, &nspans) != SS_OK ||
	    consumed != salt_len)
		return 1;

	size_t total = 0, off = 0, limit = mbytes << 20;
	double sealing = 0, opening = 0;
	while (total < limit) {
		const uint8_t *src = ring + off;
		if (!hot || total == 0)
			for (int k = 0; k < CHUNKS; k++)
				memcpy(buf + (size_t)k * stride + SS_AEAD_CHUNK_HDR,
				       src + (size_t)k * payload, payload);
		double t0 = now();
		for (int k = 0; k < CHUNKS; k++)
			if (ss_aead_enc_chunk(&enc, buf + (size_t)k * stride, payload) < 0)
				return 1;
		sealing += now() - t0;
		if (hot) {
			/* The same buffer sealed over and over: speed only. */
			total += per;
			continue;
		}
		memcpy(check, buf, wire);
		t0 = now();
		if (ss_aead_dec(&dec, check, wire, &consumed, spans, 2 * CHUNKS, &nspans) !=
			SS_OK ||
		    consumed != wire || nspans != CHUNKS)
			goto bad;
		opening += now() - t0;
		for (size_t k = 0; k < nspans; k++)
			if (spans[k].len != payload ||
			    memcmp(spans[k].ptr, src + k * payload, spans[k].len))
				goto bad;
		total += per;
		off = (off + per) % (RING - per);
	}
	printf("{\"method\":\"%s\",\"backend\":\"%s\",\"payload\":%zu,\"bytes\":%zu,\"hot\":%s,"
	       "\"seal_gb_per_s\":%.3f,\"open_gb_per_s\":%.3f}\n",
	       name, be->name, payload, total, hot ? "true" : "false",
	       (double)total / sealing / 1e9, hot ? 0.0 : (double)total / opening / 1e9);
	ss_aead_stream_free(&enc);
	ss_aead_stream_free(&dec);
	free(buf);
	free(ring);
	free(check);
	return 0;
bad:
	fprintf(stderr, "sealbench: a sealed buffer did not open to what was sealed\n");
	return 1;
}
