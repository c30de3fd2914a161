/* SPDX-License-Identifier: MIT */
/* SIP004 stream codec and UDP packet form. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "crypto/aead.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "util/result.h"

static const char *const method_names[] = {
    "aes-128-gcm",
    "aes-192-gcm",
    "aes-256-gcm",
    "chacha20-ietf-poly1305",
    "xchacha20-ietf-poly1305",
};

static const ss_method_t *method(const char *name)
{
	const ss_method_t *m = NULL;

	assert_int_equal(ss_method_lookup(name, &m, NULL, 0), 0);
	return m;
}

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

/* Encodes chunks of the given sizes (random plaintext) into wire, returning
 * its length; the plaintext goes to plain. */
static size_t encode(const ss_method_t *m, const ss_crypto_backend_t *be, const uint8_t *key,
		     const size_t *sizes, size_t nsizes, uint8_t *wire, uint8_t *plain,
		     size_t *plain_len)
{
	ss_aead_stream_t s;
	size_t w = m->salt_len, p = 0;

	assert_int_equal(ss_aead_stream_init(&s, m, be), 0);
	assert_int_equal(ss_aead_enc_start(&s, key, wire), 0);
	assert_true(s.have_salt);
	assert_memory_equal(s.salt, wire, m->salt_len);
	for (size_t i = 0; i < nsizes; i++) {
		ss_random_bytes(plain + p, sizes[i]);
		memcpy(wire + w + SS_AEAD_CHUNK_HDR, plain + p, sizes[i]);
		assert_int_equal(ss_aead_enc_chunk(&s, wire + w, sizes[i]), 0);
		w += sizes[i] + SS_AEAD_CHUNK_OVERHEAD;
		p += sizes[i];
	}
	ss_aead_stream_free(&s);
	*plain_len = p;
	return w;
}

/* Seals len bytes of in (any length, split into maximal chunks) to out,
 * which has room for enc_bound(len) bytes and does not overlap in. Returns
 * the bytes written, or -errno. */
static long enc_copy(ss_aead_stream_t *s, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t written = 0;

	while (len > 0) {
		size_t n = len < SS_AEAD_MAX_PAYLOAD ? len : SS_AEAD_MAX_PAYLOAD;
		int rc;

		memcpy(out + written + SS_AEAD_CHUNK_HDR, in, n);
		rc = ss_aead_enc_chunk(s, out + written, n);
		if (rc < 0)
			return rc;
		written += n + SS_AEAD_CHUNK_OVERHEAD;
		in += n;
		len -= n;
	}
	return (long)written;
}

/* What enc_copy writes for len plaintext bytes. */
static size_t enc_bound(size_t len)
{
	return len + (len + SS_AEAD_MAX_PAYLOAD - 1) / SS_AEAD_MAX_PAYLOAD * SS_AEAD_CHUNK_OVERHEAD;
}

/* A reader as the relay will be: bytes arrive, the decoder takes whole
 * units, the unconsumed tail is kept and presented again. */
typedef struct {
	ss_aead_stream_t s;
	uint8_t *buf, *out;
	size_t len, out_len, max_spans;
} reader_t;

static void reader_init(reader_t *r, const ss_method_t *m, const ss_crypto_backend_t *be,
			const uint8_t *key, size_t cap, size_t max_spans)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(ss_aead_stream_init(&r->s, m, be), 0);
	ss_aead_dec_start(&r->s, key);
	r->buf = malloc(cap);
	r->out = malloc(cap);
	assert_non_null(r->buf);
	assert_non_null(r->out);
	r->max_spans = max_spans;
}

static void reader_free(reader_t *r)
{
	ss_aead_stream_free(&r->s);
	free(r->buf);
	free(r->out);
}

static int reader_feed(reader_t *r, const uint8_t *p, size_t n)
{
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	for (;;) {
		ss_span_t spans[8];
		size_t consumed = 99, nspans = 99;
		int rc =
		    ss_aead_dec(&r->s, r->buf, r->len, &consumed, spans, r->max_spans, &nspans);

		if (rc != SS_OK)
			return rc;
		assert_true(consumed <= r->len);
		assert_true(nspans <= r->max_spans);
		for (size_t i = 0; i < nspans; i++) {
			assert_true(spans[i].len >= 1 && spans[i].len <= SS_AEAD_MAX_PAYLOAD);
			assert_true(spans[i].ptr >= r->buf &&
				    spans[i].ptr + spans[i].len <= r->buf + consumed);
			memcpy(r->out + r->out_len, spans[i].ptr, spans[i].len);
			r->out_len += spans[i].len;
		}
		memmove(r->buf, r->buf + consumed, r->len - consumed);
		r->len -= consumed;
		if (consumed == 0)
			return SS_OK;
	}
}

static void check_done(reader_t *r, const uint8_t *plain, size_t plain_len)
{
	assert_int_equal(r->out_len, plain_len);
	assert_memory_equal(r->out, plain, plain_len);
	assert_int_equal(r->len, 0);
	assert_int_equal(r->s.pending_len, 0);
	assert_true(r->s.have_salt);
}

/* Every two-way split and byte-at-a-time feeding, every method, every
 * backend on both ends, one and several spans per call. */
static void test_stream_splits(void **state)
{
	static const size_t sizes[] = {1, 7, 200, 16, 3};
	uint8_t key[32], wire[1024], plain[1024];
	(void)state;

	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);

		for (size_t ei = 0; ei < SS_ARRAY_LEN(backends); ei++) {
			size_t plain_len, wire_len;
			const ss_crypto_backend_t *dbe =
			    backends[(ei + 1) % SS_ARRAY_LEN(backends)];

			ss_random_bytes(key, sizeof(key));
			wire_len = encode(m, backends[ei], key, sizes, SS_ARRAY_LEN(sizes), wire,
					  plain, &plain_len);
			assert_int_equal(wire_len,
					 m->salt_len + plain_len +
					     SS_ARRAY_LEN(sizes) * SS_AEAD_CHUNK_OVERHEAD);

			for (size_t split = 0; split <= wire_len; split++) {
				reader_t r;

				reader_init(&r, m, dbe, key, sizeof(wire), split % 2 ? 1 : 8);
				assert_int_equal(reader_feed(&r, wire, split), SS_OK);
				assert_int_equal(r.s.have_salt, split >= m->salt_len);
				assert_int_equal(reader_feed(&r, wire + split, wire_len - split),
						 SS_OK);
				check_done(&r, plain, plain_len);
				reader_free(&r);
			}

			for (size_t spans = 1; spans <= 2; spans++) {
				reader_t r;

				reader_init(&r, m, dbe, key, sizeof(wire), spans);
				for (size_t i = 0; i < wire_len; i++) {
					assert_int_equal(reader_feed(&r, wire + i, 1), SS_OK);
					assert_int_equal(r.s.have_salt, i + 1 >= m->salt_len);
				}
				check_done(&r, plain, plain_len);
				reader_free(&r);
			}
		}
	}
}

/* A bad unit after good chunks: every chunk before it is delivered and the
 * stream then fails, whatever the reads were (split anywhere, one span a
 * call or several), for a spoiled payload and a spoiled length alike. */
static void test_stream_good_then_bad(void **state)
{
	static const size_t sizes[] = {200, 300, 400};
	uint8_t key[32], wire[2048], plain[2048];
	(void)state;

	ss_random_bytes(key, sizeof(key));
	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);
		size_t plain_len, wire_len = encode(m, &ss_crypto_sodium, key, sizes,
						    SS_ARRAY_LEN(sizes), wire, plain, &plain_len);
		/* The last chunk's payload, then its length block. */
		size_t spoil[] = {wire_len - 20, wire_len - 400 - SS_AEAD_CHUNK_OVERHEAD + 1};

		for (size_t k = 0; k < SS_ARRAY_LEN(spoil); k++) {
			wire[spoil[k]] ^= 0x10;
			for (size_t split = 0; split <= wire_len; split += 5) {
				for (size_t spans = 1; spans <= 8; spans += 7) {
					reader_t r;
					int rc;

					reader_init(&r, m, &ss_crypto_sodium, key, sizeof(wire),
						    spans);
					rc = reader_feed(&r, wire, split);
					if (rc == SS_OK)
						rc =
						    reader_feed(&r, wire + split, wire_len - split);
					assert_int_equal(rc, SS_ERR);
					assert_true(r.s.dead);
					assert_int_equal(r.out_len, plain_len - 400);
					assert_memory_equal(r.out, plain, r.out_len);
					reader_free(&r);
				}
			}
			wire[spoil[k]] ^= 0x10;
		}
	}
}

/* Full-size chunks, fed in odd pieces, across backends; an opened length
 * is remembered. */
static void test_stream_large(void **state)
{
	static const size_t sizes[] = {SS_AEAD_MAX_PAYLOAD, 1, SS_AEAD_MAX_PAYLOAD, 5000};
	const size_t cap = 4 * (SS_AEAD_MAX_PAYLOAD + SS_AEAD_CHUNK_OVERHEAD) + 64;
	uint8_t key[32], *wire = malloc(cap), *plain = malloc(cap);
	(void)state;

	assert_non_null(wire);
	assert_non_null(plain);
	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);

		for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
			/* Decoded by the next backend. */
			const ss_crypto_backend_t *dbe = backends[(b + 1) % SS_ARRAY_LEN(backends)];
			size_t plain_len, wire_len, head;
			reader_t r;

			ss_random_bytes(key, sizeof(key));
			wire_len = encode(m, backends[b], key, sizes, SS_ARRAY_LEN(sizes), wire,
					  plain, &plain_len);

			for (size_t step = 1000; step < wire_len; step += 3331) {
				reader_init(&r, m, dbe, key, cap, 4);
				for (size_t off = 0; off < wire_len; off += step) {
					size_t n = wire_len - off < step ? wire_len - off : step;

					assert_int_equal(reader_feed(&r, wire + off, n), SS_OK);
				}
				check_done(&r, plain, plain_len);
				reader_free(&r);
			}

			/* Salt, length block and half a payload: the length
			 * block is consumed and remembered, not opened again. */
			reader_init(&r, m, dbe, key, cap, 4);
			head = m->salt_len + SS_AEAD_CHUNK_HDR + 100;
			assert_int_equal(reader_feed(&r, wire, head), SS_OK);
			assert_int_equal(r.len, 100);
			assert_int_equal(r.s.pending_len, SS_AEAD_MAX_PAYLOAD);
			assert_int_equal(r.out_len, 0);
			assert_int_equal(reader_feed(&r, wire + head, wire_len - head), SS_OK);
			check_done(&r, plain, plain_len);
			reader_free(&r);
		}
	}
	free(wire);
	free(plain);
}

/* Streams and packets from an independent implementation: python3 with
 * python3-cryptography 38 (HKDF with SHA1, AESGCM, ChaCha20Poly1305; for
 * XChaCha20 a Python HChaCha20 checked against draft-irtf-cfrg-xchacha-03
 * section 2.2.1). Key = EVP_BytesToKey("foobar"), stream salt 00 01 02 ...,
 * chunks "GET / HTTP/1.1\r\n" and "abc"; packet salt 40 41 42 ..., payload
 * 01 7f000001 0035 "hello". */
static const struct {
	const char *method, *stream, *packet;
} kats[] = {
    {"aes-128-gcm",
     "000102030405060708090a0b0c0d0e0ff85e123146d5a66fed8fb9788b8c4c69"
     "641b7841f9fa639771cd77541400f455fd4bafc168e5755c4f05c7f53d772dd8"
     "292548637a2862585a99608d1728286cea5865bcd4b2713888a591c90c5b7a20"
     "172880e116f4d1",
     "404142434445464748494a4b4c4d4e4f9f802853316fc577052499b557825db9"
     "179cbd6a547677cb161ea9e3"},
    {"aes-256-gcm",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "26ec617ac707dbba631ede2ab58b89db110b605624e80260e12a609cce861ba8"
     "7445a558edff1a5676342965b85ecb95a2789ffa8b92cda27e2e3142ae1090e4"
     "8f486909b8c7b833f6dd96e7764f52440323afb42686d2",
     "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
     "00cbc7048705b5a12e73a4a4a762b127bea70a5a22066fad44d422bb"},
    {"chacha20-ietf-poly1305",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "5d87790c8a19cd2ae99463720727f057abe4e8c7e57c5fd9a7c71c96e9bc2091"
     "3fabef9cc4208a2977cd91bb4cf94b954216f82561f0f042719fcf37c48217bc"
     "d7641f3c59d45edb79a88438540e7bc4bfac582cc3361b",
     "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
     "9bafc194db76dd1a59d52a1e2b13120696868b33606a5b0a00871f3c"},
    {"xchacha20-ietf-poly1305",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "2c0e445accded44b75b1f9ccd6263421c1c9d52805aa000673206cc2d268493c"
     "f01b34d9dc33b1624deefe4ac85bf8cd81d0a4cc43aa641de4f40a4dcea324e3"
     "f29f09bbb0358a9a6aefc516f11f115b1ee84861e48623",
     "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
     "7ca94b7a345c3d5a15a76f8a5cfd17bfe26edd45f9628b222529a6c3"},
};

static void test_known_answer(void **state)
{
	static const char c1[] = "GET / HTTP/1.1\r\n", c2[] = "abc";
	static const uint8_t pkt_plain[] = {1, 0x7f, 0, 0, 1, 0, 0x35, 'h', 'e', 'l', 'l', 'o'};
	(void)state;

	for (size_t k = 0; k < SS_ARRAY_LEN(kats); k++) {
		const ss_method_t *m = method(kats[k].method);
		uint8_t want[256], pkt[256], key[32], salt[32], wire[256];
		size_t want_len = unhex(kats[k].stream, want), pkt_len = unhex(kats[k].packet, pkt);

		ss_key_from_password(m, "foobar", key);
		for (size_t i = 0; i < m->salt_len; i++)
			salt[i] = (uint8_t)i;

		for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
			const ss_crypto_backend_t *be = backends[b];
			ss_aead_stream_t s;
			size_t w = m->salt_len;
			uint8_t buf[256], *plain = NULL;
			ss_aead_t a;
			reader_t r;

			/* Encoder reproduces the stream. */
			assert_int_equal(ss_aead_stream_init(&s, m, be), 0);
			assert_int_equal(ss_aead_enc_start_salt(&s, key, salt), 0);
			memcpy(wire, salt, m->salt_len);
			memcpy(wire + w + SS_AEAD_CHUNK_HDR, c1, strlen(c1));
			assert_int_equal(ss_aead_enc_chunk(&s, wire + w, strlen(c1)), 0);
			w += strlen(c1) + SS_AEAD_CHUNK_OVERHEAD;
			assert_int_equal(enc_copy(&s, (const uint8_t *)c2, strlen(c2), wire + w),
					 strlen(c2) + SS_AEAD_CHUNK_OVERHEAD);
			w += strlen(c2) + SS_AEAD_CHUNK_OVERHEAD;
			assert_int_equal(w, want_len);
			assert_memory_equal(wire, want, want_len);
			ss_aead_stream_free(&s);

			/* Decoder reads it. */
			reader_init(&r, m, be, key, sizeof(wire), 8);
			assert_int_equal(reader_feed(&r, want, want_len), SS_OK);
			assert_int_equal(r.out_len, strlen(c1) + strlen(c2));
			assert_memory_equal(r.out, c1, strlen(c1));
			assert_memory_equal(r.out + strlen(c1), c2, strlen(c2));
			reader_free(&r);

			/* The packet opens in place. */
			assert_int_equal(be->aead_init(&a, m->alg), 0);
			memcpy(buf, pkt, pkt_len);
			assert_int_equal(ss_aead_open_packet(m, be, &a, key, buf, pkt_len, &plain),
					 sizeof(pkt_plain));
			assert_ptr_equal(plain, buf + m->salt_len);
			assert_memory_equal(plain, pkt_plain, sizeof(pkt_plain));
			be->aead_free(&a);
		}
	}
}

/* Seals a raw length block (any value, even invalid) as the first unit of a
 * stream, so the decoder's checks can be hit. */
static size_t forge_length(const ss_method_t *m, const ss_crypto_backend_t *be, const uint8_t *key,
			   unsigned value, uint8_t *wire)
{
	static const uint8_t info[] = "ss-subkey";
	uint8_t subkey[32], nonce[24] = {0};
	ss_aead_t a;

	ss_random_bytes(wire, m->salt_len);
	assert_int_equal(
	    be->hkdf_sha1(wire, m->salt_len, key, m->key_len, info, 9, subkey, m->key_len), 0);
	assert_int_equal(be->aead_init(&a, m->alg), 0);
	assert_int_equal(be->aead_setkey(&a, subkey, m->key_len), 0);
	wire[m->salt_len] = (uint8_t)(value >> 8);
	wire[m->salt_len + 1] = (uint8_t)value;
	assert_int_equal(be->aead_seal(&a, nonce, wire + m->salt_len, wire + m->salt_len, 2), 0);
	be->aead_free(&a);
	/* Room for a payload, so only the length decides. */
	memset(wire + m->salt_len + SS_AEAD_CHUNK_HDR, 0, 0x4000 + 16);
	return m->salt_len + SS_AEAD_CHUNK_HDR + 0x4000 + 16;
}

static void test_stream_errors(void **state)
{
	static const size_t sizes[] = {10, 20};
	uint8_t key[32], wire[0x4000 + 256], plain[256], chunk[64];
	(void)state;

	ss_random_bytes(key, sizeof(key));
	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);

		for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
			const ss_crypto_backend_t *be = backends[b];
			size_t plain_len, wire_len, len;
			ss_aead_stream_t s;

			wire_len =
			    encode(m, be, key, sizes, SS_ARRAY_LEN(sizes), wire, plain, &plain_len);

			/* Every bit flipped after the salt is caught; the dead
			 * stream then refuses even good input. A flipped salt
			 * bit gives another subkey, caught the same way. */
			for (size_t bit = 0; bit < wire_len * 8; bit += 5) {
				uint8_t copy[256];
				reader_t r;

				memcpy(copy, wire, wire_len);
				copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				reader_init(&r, m, be, key, 1024, 8);
				assert_int_equal(reader_feed(&r, copy, wire_len), SS_ERR);
				assert_true(r.s.dead);
				assert_int_equal(reader_feed(&r, copy, 0), SS_ERR);
				reader_free(&r);
			}

			/* A wrong key. */
			{
				uint8_t other[32];
				reader_t r;

				memcpy(other, key, sizeof(other));
				other[0] ^= 1;
				reader_init(&r, m, be, other, 1024, 8);
				assert_int_equal(reader_feed(&r, wire, wire_len), SS_ERR);
				reader_free(&r);
			}

			/* Lengths 0 and over the maximum are refused even when
			 * authentic. The forged payload is zeros, never
			 * authentic, so valid lengths fail too, but only after
			 * the length was taken (pending_len set). */
			static const struct {
				unsigned value;
				bool valid;
			} lens[] = {{0, false},      {0x4000, false}, {0xffff, false},
				    {0x8001, false}, {0x3fff, true},  {1, true}};
			for (size_t i = 0; i < SS_ARRAY_LEN(lens); i++) {
				size_t consumed, nspans;
				ss_span_t span;

				len = forge_length(m, be, key, lens[i].value, wire);
				assert_int_equal(ss_aead_stream_init(&s, m, be), 0);
				ss_aead_dec_start(&s, key);
				assert_int_equal(
				    ss_aead_dec(&s, wire, len, &consumed, &span, 1, &nspans),
				    SS_ERR);
				assert_int_equal(nspans, 0);
				assert_int_equal(s.pending_len, lens[i].valid ? lens[i].value : 0);
				ss_aead_stream_free(&s);
			}

			/* The encoder refuses empty and oversized chunks. */
			assert_int_equal(ss_aead_stream_init(&s, m, be), 0);
			assert_int_equal(ss_aead_enc_start(&s, key, wire), 0);
			assert_int_equal(ss_aead_enc_chunk(&s, chunk, 0), -EINVAL);
			assert_int_equal(ss_aead_enc_chunk(&s, wire, SS_AEAD_MAX_PAYLOAD + 1),
					 -EINVAL);
			ss_aead_stream_free(&s);
		}
	}
}

static void test_enc_copy(void **state)
{
	const size_t len = 3 * SS_AEAD_MAX_PAYLOAD + 777;
	const ss_method_t *m = method("chacha20-ietf-poly1305");
	uint8_t key[32], *in = malloc(len), *wire = malloc(enc_bound(len) + 32);
	ss_aead_stream_t s;
	reader_t r;
	long n;
	(void)state;

	assert_int_equal(enc_bound(0), 0);
	assert_int_equal(enc_bound(1), 1 + SS_AEAD_CHUNK_OVERHEAD);
	assert_int_equal(enc_bound(SS_AEAD_MAX_PAYLOAD),
			 SS_AEAD_MAX_PAYLOAD + SS_AEAD_CHUNK_OVERHEAD);
	assert_int_equal(enc_bound(SS_AEAD_MAX_PAYLOAD + 1),
			 SS_AEAD_MAX_PAYLOAD + 1 + 2 * SS_AEAD_CHUNK_OVERHEAD);

	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(in, len);
	assert_int_equal(ss_aead_stream_init(&s, m, ss_crypto_default()), 0);
	assert_int_equal(ss_aead_enc_start(&s, key, wire), 0);
	assert_int_equal(enc_copy(&s, in, 0, wire + m->salt_len), 0);
	n = enc_copy(&s, in, len, wire + m->salt_len);
	assert_int_equal(n, enc_bound(len));
	ss_aead_stream_free(&s);

	reader_init(&r, m, ss_crypto_default(), key, len + 4096 * 4, 2);
	assert_int_equal(reader_feed(&r, wire, m->salt_len + (size_t)n), SS_OK);
	check_done(&r, in, len);
	reader_free(&r);
	free(in);
	free(wire);
}

static void test_reset(void **state)
{
	static const uint8_t zero[64];
	static const size_t sizes[] = {33};
	const ss_method_t *m = method("aes-256-gcm");
	uint8_t key[32], wire[256], plain[64];
	size_t plain_len, wire_len;
	reader_t r;
	(void)state;

	for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
		ss_random_bytes(key, sizeof(key));
		wire_len = encode(m, backends[b], key, sizes, 1, wire, plain, &plain_len);
		reader_init(&r, m, backends[b], key, sizeof(wire), 4);
		/* Half the salt: the master key is still needed and kept. */
		assert_int_equal(reader_feed(&r, wire, 5), SS_OK);
		assert_memory_equal(r.s.key, key, 32);
		assert_int_equal(reader_feed(&r, wire + 5, wire_len - 5), SS_OK);
		check_done(&r, plain, plain_len);
		/* Once the subkey is made, the master key is gone. */
		assert_memory_equal(r.s.key, zero, sizeof(r.s.key));

		ss_aead_stream_reset(&r.s);
		assert_false(r.s.have_salt);
		assert_false(r.s.aead.keyed);
		assert_memory_equal(r.s.salt, zero, sizeof(r.s.salt));
		assert_memory_equal(r.s.nonce, zero, sizeof(r.s.nonce));

		/* The slot serves the next connection. */
		r.out_len = 0;
		ss_aead_dec_start(&r.s, key);
		assert_int_equal(reader_feed(&r, wire, wire_len), SS_OK);
		check_done(&r, plain, plain_len);
		reader_free(&r);
	}
}

static void test_packet(void **state)
{
	uint8_t key[32], in[2048], out[2048 + 64], buf[2048 + 64], *plain;
	(void)state;

	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(in, sizeof(in));
	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);
		const size_t over = m->salt_len + SS_AEAD_TAG_LEN;

		for (size_t x = 0; x < SS_ARRAY_LEN(backends); x++) {
			const ss_crypto_backend_t *A = backends[x];
			const ss_crypto_backend_t *B = backends[(x + 1) % SS_ARRAY_LEN(backends)];
			ss_aead_t a, b;

			assert_int_equal(A->aead_init(&a, m->alg), 0);
			assert_int_equal(B->aead_init(&b, m->alg), 0);
			for (size_t len = 0; len <= 1500; len += len < 40 ? 1 : 97) {
				long n =
				    ss_aead_seal_packet(m, A, &a, key, in, len, out, len + over);

				assert_int_equal(n, len + over);
				memcpy(buf, out, (size_t)n);
				assert_int_equal(
				    ss_aead_open_packet(m, B, &b, key, buf, (size_t)n, &plain),
				    len);
				assert_ptr_equal(plain, buf + m->salt_len);
				if (len > 0)
					assert_memory_equal(plain, in, len);
				assert_int_equal(ss_aead_seal_packet(m, A, &a, key, in, len, out,
								     len + over - 1),
						 -ENOSPC);
			}

			/* In place: plaintext already after room for the salt. */
			memcpy(buf + m->salt_len, in, 1000);
			assert_int_equal(ss_aead_seal_packet(m, A, &a, key, buf + m->salt_len, 1000,
							     buf, sizeof(buf)),
					 1000 + over);
			assert_int_equal(
			    ss_aead_open_packet(m, B, &b, key, buf, 1000 + over, &plain), 1000);
			assert_memory_equal(plain, in, 1000);

			/* Every truncation of a sealed packet fails. */
			long n = ss_aead_seal_packet(m, A, &a, key, in, 100, out, sizeof(out));
			for (size_t cut = 0; cut < (size_t)n; cut++) {
				long rc;

				memcpy(buf, out, cut);
				rc = ss_aead_open_packet(m, B, &b, key, buf, cut, &plain);
				assert_int_equal(rc, cut < over ? -EINVAL : -EBADMSG);
			}
			/* And every flipped byte. */
			for (size_t i = 0; i < (size_t)n; i++) {
				memcpy(buf, out, (size_t)n);
				buf[i] ^= 0x40;
				assert_int_equal(
				    ss_aead_open_packet(m, B, &b, key, buf, (size_t)n, &plain),
				    -EBADMSG);
			}
			/* Salts are fresh per packet. */
			uint8_t out2[256];
			assert_int_equal(
			    ss_aead_seal_packet(m, A, &a, key, in, 100, out2, sizeof(out2)), n);
			assert_memory_not_equal(out, out2, m->salt_len);

			A->aead_free(&a);
			B->aead_free(&b);
		}
	}
}

/* Packets under the wrong key, the wrong method or the wrong state never
 * open; sizes up to the largest UDP datagram round trip; a packet with a
 * byte added or removed fails. */
static void test_packet_keys_and_sizes(void **state)
{
	enum { BIG = 65507 };
	uint8_t key[32], key2[32], *in = malloc(BIG), *out = malloc(BIG + 64),
				   *buf = malloc(BIG + 64), *plain;
	(void)state;

	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(buf);
	ss_random_bytes(key, sizeof(key));
	ss_random_bytes(in, BIG);
	for (size_t mi = 0; mi < SS_ARRAY_LEN(method_names); mi++) {
		const ss_method_t *m = method(method_names[mi]);
		const size_t over = m->salt_len + SS_AEAD_TAG_LEN;

		for (size_t x = 0; x < SS_ARRAY_LEN(backends); x++) {
			const ss_crypto_backend_t *A = backends[x];
			const ss_crypto_backend_t *B = backends[(x + 1) % SS_ARRAY_LEN(backends)];
			ss_aead_t a, b;

			assert_int_equal(A->aead_init(&a, m->alg), 0);
			assert_int_equal(B->aead_init(&b, m->alg), 0);

			/* The largest datagrams, and sizes around the stream
			 * codec's chunk limit (a packet has no chunks). */
			const size_t sizes[] = {SS_AEAD_MAX_PAYLOAD, SS_AEAD_MAX_PAYLOAD + 1, 65000,
						BIG - over};
			for (size_t si = 0; si < SS_ARRAY_LEN(sizes); si++) {
				size_t len = sizes[si];
				long n = ss_aead_seal_packet(m, A, &a, key, in, len, out, BIG + 64);
				assert_int_equal(n, len + over);
				memcpy(buf, out, (size_t)n);
				assert_int_equal(
				    ss_aead_open_packet(m, B, &b, key, buf, (size_t)n, &plain),
				    len);
				assert_memory_equal(plain, in, len);
			}

			long n = ss_aead_seal_packet(m, A, &a, key, in, 300, out, BIG + 64);
			assert_int_equal(n, 300 + over);

			/* Every single-bit difference in the key. */
			for (size_t bit = 0; bit < m->key_len * 8; bit += 7) {
				memcpy(key2, key, sizeof(key2));
				key2[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				memcpy(buf, out, (size_t)n);
				assert_int_equal(
				    ss_aead_open_packet(m, B, &b, key2, buf, (size_t)n, &plain),
				    -EBADMSG);
			}
			/* Bytes of the key beyond the method's length are not used. */
			memcpy(key2, key, sizeof(key2));
			if (m->key_len < sizeof(key2))
				key2[m->key_len] ^= 1;
			memcpy(buf, out, (size_t)n);
			assert_int_equal(
			    ss_aead_open_packet(m, B, &b, key2, buf, (size_t)n, &plain), 300);
			assert_memory_equal(plain, in, 300);

			/* A byte more or less at the end. */
			memcpy(buf, out, (size_t)n);
			buf[n] = 0;
			assert_int_equal(
			    ss_aead_open_packet(m, B, &b, key, buf, (size_t)n + 1, &plain),
			    -EBADMSG);
			memcpy(buf, out, (size_t)n);
			assert_int_equal(
			    ss_aead_open_packet(m, B, &b, key, buf, (size_t)n - 1, &plain),
			    -EBADMSG);
			/* An empty payload is a valid packet; zeros are not. */
			n = ss_aead_seal_packet(m, A, &a, key, in, 0, out, over);
			assert_int_equal(n, over);
			memcpy(buf, out, (size_t)n);
			assert_int_equal(ss_aead_open_packet(m, B, &b, key, buf, (size_t)n, &plain),
					 0);
			memset(buf, 0, over + 50);
			assert_int_equal(ss_aead_open_packet(m, B, &b, key, buf, over + 50, &plain),
					 -EBADMSG);
			assert_int_equal(ss_aead_seal_packet(m, A, &a, key, in, 0, out, over - 1),
					 -ENOSPC);

			/* Under every other method the packet does not open. */
			n = ss_aead_seal_packet(m, A, &a, key, in, 300, out, BIG + 64);
			for (size_t oi = 0; oi < SS_ARRAY_LEN(method_names); oi++) {
				const ss_method_t *o = method(method_names[oi]);
				ss_aead_t ob;
				if (o == m)
					continue;
				assert_int_equal(B->aead_init(&ob, o->alg), 0);
				memcpy(buf, out, (size_t)n);
				assert_int_equal(
				    ss_aead_open_packet(o, B, &ob, key, buf, (size_t)n, &plain),
				    -EBADMSG);
				/* A state set up for another algorithm is refused. */
				if (o->alg != m->alg) {
					memcpy(buf, out, (size_t)n);
					assert_int_equal(ss_aead_open_packet(m, B, &ob, key, buf,
									     (size_t)n, &plain),
							 -EINVAL);
					assert_int_equal(
					    ss_aead_seal_packet(m, B, &ob, key, in, 10, buf, BIG),
					    -EINVAL);
				}
				B->aead_free(&ob);
			}
			A->aead_free(&a);
			B->aead_free(&b);
		}
	}
	free(in);
	free(out);
	free(buf);
}

/* Encoders fill chunks with a multiple of 128 bytes, as large as SIP004
 * allows. */
static void test_fill_payload(void **state)
{
	(void)state;
	assert_int_equal(SS_AEAD_FILL_PAYLOAD % 128, 0);
	assert_true(SS_AEAD_FILL_PAYLOAD <= SS_AEAD_MAX_PAYLOAD);
	assert_true(SS_AEAD_FILL_PAYLOAD + 128 > SS_AEAD_MAX_PAYLOAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_splits),
	    cmocka_unit_test(test_stream_good_then_bad),
	    cmocka_unit_test(test_stream_large),
	    cmocka_unit_test(test_known_answer),
	    cmocka_unit_test(test_stream_errors),
	    cmocka_unit_test(test_enc_copy),
	    cmocka_unit_test(test_reset),
	    cmocka_unit_test(test_packet),
	    cmocka_unit_test(test_packet_keys_and_sizes),
	    cmocka_unit_test(test_fill_payload),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
