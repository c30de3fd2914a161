#ifndef SS_CRYPTO_CHACHA_AVX512_H
#define SS_CRYPTO_CHACHA_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* len bytes of in to out, then the 16-byte tag at out + len. in == out is
 * allowed; other overlaps are not. 0, or -ENOTSUP without the CPU support. */
int ss_chacha512_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len);

/* len bytes (ciphertext then tag, len >= 16) of in to out, writing len - 16
 * bytes. in == out allowed. 0, -EBADMSG when the tag does not match or len
 * is short (out is then zeroed), -ENOTSUP without the CPU support. */
int ss_chacha512_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
		      const uint8_t *in, size_t len);

#endif
