#ifndef SS_CRYPTO_CHACHA_AVX512_H
#define SS_CRYPTO_CHACHA_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/primitives.h"

/* ChaCha20-Poly1305 (RFC 8439, IETF nonce, no associated data) on x86-64
 * CPUs with AVX-512 F and BW and the 52-bit multiply-add of AVX-512 IFMA:
 * ChaCha20 sixteen blocks at a time, one block to a 32-bit lane, with the
 * one-time Poly1305 key taken from the first batch; Poly1305 on eight
 * 64-bit lanes, two interleaved chains of eight blocks each stepping by
 * r^16. Both backends use it above SS_CHACHA_SHORT_MAX where the CPU has
 * it: on SIP004's 16 KiB chunks it saves the libraries' per-message set-up,
 * about a tenth of the cost. */

/* Whether this CPU (and the OS, for the 512-bit state) runs it. */
bool ss_chacha512_available(void);

/* The backends' aead_chunk_ok: ChaCha20-Poly1305 where the CPU runs it. */
bool ss_chacha512_chunk_ok(ss_aead_alg_t alg);

/* len bytes of in to out, then the 16-byte tag at out + len. in == out is
 * allowed; other overlaps are not. 0, or -ENOTSUP without the CPU support. */
int ss_chacha512_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len);

/* len bytes (ciphertext then tag, len >= 16) of in to out, writing len - 16
 * bytes. in == out allowed. 0, -EBADMSG when the tag does not match or len
 * is short (out is then zeroed), -ENOTSUP without the CPU support. */
int ss_chacha512_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len);

/* A SIP004 chunk in one pass: the 2-byte length at chunk sealed with nonce
 * n1 (its tag at chunk + 2), the n payload bytes at chunk + 18 with nonce
 * n2, both in place; the length's two ChaCha20 blocks ride in the
 * payload's first batch. 0, or -ENOTSUP without the CPU support. */
int ss_chacha512_seal_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t n);

/* Its inverse on the avail bytes at chunk (at least 18): opens the length
 * in place into *plen, and when the whole payload is there (avail >= 18 +
 * *plen + 16) the payload in place too. 1: both opened; 0: the length
 * only, its 18 bytes now taken (decrypted in place: not to be passed in
 * again; the payload opens later with ss_chacha512_open and n2);
 * -EBADMSG: a tag does not match, or the length is 0 or above max (the
 * payload is then left as it was); -EINVAL: avail < 18; -ENOTSUP without
 * the CPU support. */
int ss_chacha512_open_chunk(const uint8_t key[32], const uint8_t n1[12], const uint8_t n2[12],
			    uint8_t *chunk, size_t avail, size_t max, size_t *plen);

#endif
