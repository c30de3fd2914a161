#ifndef SS_CRYPTO_CHACHA_SHORT_H
#define SS_CRYPTO_CHACHA_SHORT_H

#include <stddef.h>
#include <stdint.h>

/* ChaCha20-Poly1305 (RFC 8439, IETF nonce, no associated data) for messages
 * of at most SS_CHACHA_SHORT_MAX bytes: SIP004's sealed lengths and SIP022's
 * headers. The libraries' general paths cost several times more on so few
 * bytes (set-up, dispatch, wide vector code for one block), and SIP004 seals
 * one such length per chunk. Our own code's tables (own.c) use it below
 * the limit for ChaCha20-Poly1305. */
#define SS_CHACHA_SHORT_MAX 64

/* len <= SS_CHACHA_SHORT_MAX bytes of in to out, then the 16-byte tag at
 * out + len. in == out allowed. 0, or -EINVAL for a longer message (out's
 * len + 16 bytes are then zero). */
int ss_chacha_short_seal(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			 const uint8_t *in, size_t len);

/* len bytes (ciphertext then tag; 16 <= len <= SS_CHACHA_SHORT_MAX + 16) of
 * in to out, writing len - 16 bytes. in == out allowed. 0, or -EBADMSG when
 * the tag does not match or len is out of range (out's len - 16 bytes are
 * then zero). The tags are compared in constant time. */
int ss_chacha_short_open(const uint8_t key[32], const uint8_t nonce[12], uint8_t *out,
			 const uint8_t *in, size_t len);

/* Poly1305 of len bytes (a multiple of 16) with a 32-byte one-time key:
 * the code above on its own, for tests. */
void ss_chacha_short_poly1305(const uint8_t key[32], const uint8_t *msg, size_t len,
			      uint8_t tag[16]);

#endif
