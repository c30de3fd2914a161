/* SPDX-License-Identifier: MIT */
/* sealbench: how fast the relay's SIP004 codec seals and opens on this
 * machine, in the relay's own layout (sixteen chunks of the relay's payload
 * size sealed in place per buffer), with the bytes fresh from a copy out of
 * a large ring the way a socket read leaves them (the copy is not timed), or
 * sealed over and over in cache (--hot, sealing only). --payload sets the
 * chunk payload (1..16383; the relay's by default). The floor under the
 * relays' user time in docs/performance.md.
 *
 * --message N times single N-byte messages through the backend's seal and
 * open instead (batches of 1024, each with its own nonce, every one opened
 * and compared): the cost per message where messages are short, as SIP004's
 * sealed lengths (2 bytes) and SIP022's headers.
 *
 *   sealbench [--method NAME] [--backend NAME] [--mbytes N] [--payload N] [--hot]
 *   sealbench [--method NAME] [--backend NAME] --message N [--count N]
 *
 * NAME of a backend: openssl, sodium, sodium-portable, and with our own
 * code over them openssl+own, sodium+own; the programs' by default.
 * Prints one JSON line. Without --hot every buffer it seals is opened again
 * by a decoder and compared with what was sealed, so a wrong result fails
 * (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/aead.h"
#include "crypto/backends.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "util/result.h"

#define CHUNKS 16
#define RING (64u << 20)
#define BATCH 1024

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: sealbench [--method NAME] [--backend NAME] [--mbytes N] "
		"[--payload N] [--hot]\n"
		"       sealbench [--method NAME] [--backend NAME] --message N [--count N]\n");
	return 2;
}

/* Seals and opens count messages of len bytes, BATCH at a time, each
 * batch sealed whole and then opened whole and compared. */
static int bench_messages(const ss_method_t *m, const ss_crypto_backend_t *be, size_t len,
			  size_t count)
{
	size_t stride = len + SS_AEAD_TAG_LEN, done = 0;
	uint8_t *pt = malloc(BATCH * stride), *buf = malloc(BATCH * stride), key[32];
	uint8_t nonce[SS_AEAD_MAX_NONCE_LEN] = {0};
	double sealing = 0, opening = 0;
	ss_aead_t a;

	if (!pt || !buf)
		return 1;
	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(pt, BATCH * stride);
	if (be->aead_init(&a, m->alg) < 0 || be->aead_setkey(&a, key, m->key_len) < 0) {
		fprintf(stderr, "sealbench: cannot set up\n");
		return 1;
	}
	while (done < count) {
		double t0;

		memcpy(buf, pt, BATCH * stride);
		t0 = now();
		for (size_t i = 0; i < BATCH; i++) {
			memcpy(nonce, &i, sizeof(i));
			if (be->aead_seal(&a, nonce, buf + i * stride, buf + i * stride, len) < 0)
				return 1;
		}
		sealing += now() - t0;
		t0 = now();
		for (size_t i = 0; i < BATCH; i++) {
			memcpy(nonce, &i, sizeof(i));
			if (be->aead_open(&a, nonce, buf + i * stride, buf + i * stride, stride) <
			    0)
				goto bad;
		}
		opening += now() - t0;
		for (size_t i = 0; i < BATCH; i++)
			if (memcmp(buf + i * stride, pt + i * stride, len) != 0)
				goto bad;
		done += BATCH;
	}
	printf("{\"method\":\"%s\",\"backend\":\"%s\",\"message\":%zu,\"count\":%zu,"
	       "\"seal_ns\":%.1f,\"open_ns\":%.1f}\n",
	       m->name, be->name, len, done, sealing / (double)done * 1e9,
	       opening / (double)done * 1e9);
	be->aead_free(&a);
	free(pt);
	free(buf);
	return 0;
bad:
	fprintf(stderr, "sealbench: a sealed message did not open to what was sealed\n");
	return 1;
}

int main(int argc, char **argv)
{
	const char *name = "aes-256-gcm", *backend = NULL;
	size_t mbytes = 2000, payload = 0; /* 0: what the relay fills */
	size_t message = 0, count = 1000000;
	int hot = 0, messages = 0;

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
		else if (!strcmp(argv[i], "--message") && i + 1 < argc)
			message = strtoul(argv[++i], NULL, 10), messages = 1;
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 10);
		else
			return usage();
	}
	if (ss_crypto_global_init() < 0 || mbytes == 0 || payload > SS_AEAD_MAX_PAYLOAD)
		return usage();

	const ss_crypto_backend_t *be = ss_crypto_default();
	if (backend) {
		be = NULL;
		for (size_t i = 0; i < SS_ARRAY_LEN(ss_crypto_backends); i++)
			if (!strcmp(backend, ss_crypto_backends[i]->name))
				be = ss_crypto_backends[i];
		if (!be)
			return usage();
	}

	const ss_method_t *m = NULL;
	char err[160];
	if (ss_method_lookup(name, &m, err, sizeof(err)) < 0 || m->kind == SS_METHOD_NONE ||
	    (!messages && m->kind != SS_METHOD_AEAD)) {
		fprintf(stderr, "sealbench: %s\n", m ? "a SIP004 method, please" : err);
		return 2;
	}
	if (messages)
		return count && message <= 65536 ? bench_messages(m, be, message, count) : usage();

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
