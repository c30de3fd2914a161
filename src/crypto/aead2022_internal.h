/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_AEAD2022_INTERNAL_H
#define SS_CRYPTO_AEAD2022_INTERNAL_H

/* Shared by aead2022.c (TCP) and aead2022_udp.c; not part of the API. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/aead2022.h"

enum {
	SS_2022_TYPE_CLIENT = 0, /* request stream, client-to-server packet */
	SS_2022_TYPE_SERVER = 1, /* response stream, server-to-client packet */
};

/* The shortest SOCKS address: a one-character domain. */
#define SS_2022_MIN_ADDR (1 + 1 + 1 + 2)

static inline void ss_2022_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t ss_2022_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void ss_2022_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t ss_2022_get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Little-endian increment over the whole nonce (SIP022 3.1.1). */
static inline void ss_2022_nonce_next(uint8_t *nonce, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (++nonce[i] != 0)
			break;
}

/* |ts - now| <= 30 s: "over 30 seconds of time difference" is a replay. */
bool ss_2022_time_ok(uint64_t ts, uint64_t now);

/* Keys a with the session subkey of key and salt. 0 or -errno. */
int ss_2022_load_subkey(const ss_method_t *m, const ss_crypto_backend_t *be, ss_aead_t *a,
			const uint8_t *key, const uint8_t *salt, size_t salt_len);

#endif
