/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_AEAD_H
#define SS_CRYPTO_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/method.h"
#include "crypto/primitives.h"
#include "crypto/saltpool.h"
#include "util/span.h"

/* SIP004 AEAD stream codec, one per direction.
 *
 * Wire: [salt][chunk][chunk]... where a chunk is
 *   [encrypted 2-byte big-endian payload length][tag][encrypted payload][tag]
 * with payload length 1..SS_AEAD_MAX_PAYLOAD, subkey = HKDF-SHA1(key, salt,
 * "ss-subkey"), and a nonce that starts at zero and is incremented
 * (little-endian) after every seal/open. Everything works in place inside the
 * caller's buffer. */

#define SS_AEAD_MAX_PAYLOAD 0x3FFF
#define SS_AEAD_CHUNK_OVERHEAD (2 + 2 * SS_AEAD_TAG_LEN)
/* Offset of the payload inside a chunk. */
#define SS_AEAD_CHUNK_HDR (2 + SS_AEAD_TAG_LEN)

typedef struct ss_aead_stream {
	const ss_method_t *method;
	const ss_crypto_backend_t *be;
	ss_aead_t aead;
	uint8_t nonce[SS_AEAD_MAX_NONCE_LEN];
	uint8_t salt[SS_MAX_SALT_LEN]; /* this direction's salt, once known */
	uint8_t key[SS_MAX_KEY_LEN];   /* master key until the salt arrives */
	bool have_salt;
	bool dead;     /* decoder: failed once, refuses everything after */
	bool replayed; /* decoder: died on a salt seen before */
	/* decoder: length of a chunk whose length block is already opened,
	 * 0 if none */
	uint16_t pending_len;
	/* server decoder: where the salt is checked and recorded once the
	 * first chunk has authenticated; NULL once done, and for others */
	ss_saltpool_t *pool;
} ss_aead_stream_t;

/* The chunk payload an encoder fills: the libraries' ChaCha20-Poly1305 runs
 * faster on a multiple of 128 bytes than on 0x3FFF (AES-GCM runs the same
 * on either; docs/performance.md has the figures). */
#define SS_AEAD_FILL_PAYLOAD (SS_AEAD_MAX_PAYLOAD & ~127)

/* Once per slot. 0 or -errno from the backend. */
int ss_aead_stream_init(ss_aead_stream_t *s, const ss_method_t *m, const ss_crypto_backend_t *be);
/* Per connection end: wipes key, subkey, salt and nonce; keeps the backend
 * state allocated for reuse. */
void ss_aead_stream_reset(ss_aead_stream_t *s);
/* When the slot is destroyed. Safe on a zeroed stream, and twice. */
void ss_aead_stream_free(ss_aead_stream_t *s);

/* Encoder: picks a random salt, derives the subkey, copies the salt to
 * salt_out (method->salt_len bytes). 0 or -errno. */
int ss_aead_enc_start(ss_aead_stream_t *s, const uint8_t *key, uint8_t *salt_out);
/* Same with a given salt (tests, known-answer vectors). */
int ss_aead_enc_start_salt(ss_aead_stream_t *s, const uint8_t *key, const uint8_t *salt);
/* Seals one chunk in place. chunk points at SS_AEAD_CHUNK_HDR bytes of room,
 * then n payload bytes already in place, then SS_AEAD_TAG_LEN bytes of room.
 * 1 <= n <= SS_AEAD_MAX_PAYLOAD. Writes n + SS_AEAD_CHUNK_OVERHEAD bytes at
 * chunk. 0 or -errno. */
int ss_aead_enc_chunk(ss_aead_stream_t *s, uint8_t *chunk, size_t n);

/* Decoder: remembers the master key; the salt is read from the stream. */
void ss_aead_dec_start(ss_aead_stream_t *s, const uint8_t *key);
/* A server's decoder of a client's stream: also checks the salt against
 * pool (the last salts seen, ss_saltpool_init_fifo) once the first chunk
 * (length and payload) has authenticated, so unauthenticated bytes never
 * take a place in it, and records it there; a salt seen before kills the
 * stream (s->replayed) before any plaintext is delivered. */
void ss_aead_dec_start_server(ss_aead_stream_t *s, const uint8_t *key, ss_saltpool_t *pool);
/* A server with several keys (SIP004 users) tells which one a client's
 * stream is sealed with by its first length block: buf holds the stream's
 * first s->method->salt_len + SS_AEAD_CHUNK_HDR bytes, [salt][length+tag],
 * and is left as it is. Derives the subkey of key and the salt into s and
 * opens a copy of the block. 0: key opens it, and s is a server's decoder
 * (ss_aead_dec_start_server with pool) that has taken the salt: decode
 * the stream from buf + salt_len on. -EBADMSG: key does not open it, or -errno. */
int ss_aead_dec_try(ss_aead_stream_t *s, const uint8_t *key, const uint8_t *buf,
		    ss_saltpool_t *pool);
/* Decodes, in place, as much of buf[0..len) as forms whole units (the salt,
 * a length block, a payload block). Plaintext pieces are reported in spans
 * (pointing into buf) up to max_spans; *consumed is how many leading bytes of
 * buf were used and may be dropped by the caller (bytes after it must be kept
 * and presented again, followed by new ones).
 * Returns SS_OK (possibly with nothing consumed when more bytes are needed),
 * or SS_ERR when authentication fails or a length is 0 or over the maximum;
 * after SS_ERR the stream is dead. A unit that fails after chunks
 * authenticated in the same call ends the stream the same way, but that call
 * still returns SS_OK with those chunks and the next call returns SS_ERR:
 * what is delivered is every chunk before the first bad unit, however the
 * bytes were split into reads. s->salt holds the salt once it has been
 * consumed. */
int ss_aead_dec(ss_aead_stream_t *s, uint8_t *buf, size_t len, size_t *consumed, ss_span_t *spans,
		size_t max_spans, size_t *nspans);

/* Whole-datagram form (UDP): [salt][sealed payload][tag], zero nonce, a
 * fresh random salt and subkey per packet. a is a backend state set up with
 * aead_init for m->alg; it keeps the last packet's subkey until the next call,
 * so its owner wipes or frees it when the association ends.
 * seal: in may be out + m->salt_len (in place) and must not otherwise overlap
 * out; returns the bytes written (salt_len + len + 16), -ENOSPC when cap is
 * too small, or -errno.
 * open: works in place in buf; returns the plaintext length with *plain
 * pointing inside buf, -EINVAL when len is shorter than salt + tag, or
 * -EBADMSG when authentication fails. */
long ss_aead_seal_packet(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			 const uint8_t *key, const uint8_t *in, size_t len, uint8_t *out,
			 size_t cap);
long ss_aead_open_packet(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			 const uint8_t *key, uint8_t *buf, size_t len, uint8_t **plain);
/* As ss_aead_open_packet, but the plaintext goes to out (len - salt_len -
 * 16 bytes, not overlapping buf) and buf is left as it is: a server tries
 * one datagram with several keys. Returns the plaintext length, -EINVAL or
 * -EBADMSG. */
long ss_aead_open_packet_to(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			    const uint8_t *key, const uint8_t *buf, size_t len, uint8_t *out);

#endif
