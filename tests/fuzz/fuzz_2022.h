/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_FUZZ_2022_H
#define SS_TESTS_FUZZ_2022_H

/* Shared by the SIP022 targets: the methods, fixed keys and users, and a
 * builder that seals frames the way the specification lays them out, so
 * the structure-aware targets can make any frame, also those our encoders
 * refuse to make. */

#include "blake3/blake3.h"
#include "crypto/aead2022.h"
#include "fuzz_util.h"
#include "../unit/open2022.h"

#define FZ_N_2022 3
static const char *const fz_2022_names[FZ_N_2022] = {
    "2022-blake3-aes-128-gcm",
    "2022-blake3-aes-256-gcm",
    "2022-blake3-chacha20-poly1305",
};

/* The clock the targets start at. */
#define FZ_NOW 1700000000u
/* The users a multi-user server knows: keys fz_key(1..FZ_N_USERS); its own
 * (identity) PSK is fz_key(0). */
#define FZ_N_USERS 3

/* users[method][backend] for the AES methods, made once. */
static ss_2022_users_t fz_users[FZ_N_2022][FZ_N_BACKENDS];

/* Runs before the targets' own set-up (fuzz_util.h's first). */
__attribute__((constructor(102))) static void fz_2022_init(void)
{
	for (unsigned i = 0; i < FZ_N_2022; i++) {
		const ss_method_t *m = fz_method(fz_2022_names[i]);

		for (unsigned b = 0; b < FZ_N_BACKENDS && ss_method_has_identity(m); b++) {
			FZ_CHECK(
			    ss_2022_users_init(&fz_users[i][b], m, fz_backend(b), FZ_N_USERS) == 0);
			for (unsigned u = 1; u <= FZ_N_USERS; u++) {
				uint8_t key[SS_MAX_KEY_LEN];

				fz_key(u, key);
				FZ_CHECK(ss_2022_users_add(&fz_users[i][b], key, NULL) == 0);
			}
		}
	}
}

static inline void fz_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void fz_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A timestamp the input picks: within 30 s of now, or (late) outside it. */
static inline uint64_t fz_2022_time(fz_t *f, uint64_t now, bool late)
{
	uint64_t off = late ? 31 + fz_u16(f) : fz_range(f, 0, 30);

	return fz_bool(f) ? now + off : now - off;
}

/* The padding of a SIP022 header: zeros, as our encoders write it, or
 * bytes from the input. */
static inline void fz_padding(fz_t *f, uint8_t *out, size_t n, bool zero)
{
	if (zero)
		memset(out, 0, n);
	else
		fz_bytes(f, out, n);
}

/* An address header spoiled so ss_addr_parse refuses it. */
static inline void fz_spoil_addr(fz_t *f, uint8_t *addr)
{
	static const uint8_t bad_atyp[] = {0, 2, 5, 0xff};

	if (fz_bool(f)) {
		addr[0] = bad_atyp[fz_u8(f) % sizeof(bad_atyp)];
	} else {
		addr[0] = SS_ATYP_DOMAIN;
		addr[1] = 0;
	}
}

/* Frames sealed by hand: an AEAD keyed once, a 12-byte little-endian
 * counter nonce from zero, and a wire that grows. */
typedef struct fz_sealer {
	const ss_crypto_backend_t *be;
	ss_aead_t *aead;
	uint8_t nonce[12];
	uint8_t *wire;
	size_t len;
} fz_sealer_t;

/* Appends p[0..n) raw. */
static inline uint8_t *fz_put(fz_sealer_t *s, const void *p, size_t n)
{
	uint8_t *at = s->wire + s->len;

	memcpy(at, p, n);
	s->len += n;
	return at;
}

/* Appends p[0..n) sealed with the next nonce, n + 16 bytes. */
static inline void fz_seal(fz_sealer_t *s, const void *p, size_t n)
{
	uint8_t *at = fz_put(s, p, n);

	FZ_CHECK(s->be->aead_seal(s->aead, s->nonce, at, at, n) == 0);
	s->len += SS_AEAD_TAG_LEN;
	for (size_t i = 0; i < sizeof(s->nonce); i++)
		if (++s->nonce[i] != 0)
			break;
}

/* The SIP023 identity subkey of key and salt. */
static inline void fz_identity_subkey(const ss_method_t *m, const uint8_t *key, const uint8_t *salt,
				      size_t salt_len, uint8_t *out)
{
	uint8_t material[SS_MAX_KEY_LEN + SS_MAX_SALT_LEN];

	memcpy(material, key, m->key_len);
	memcpy(material + m->key_len, salt, salt_len);
	ss_blake3_derive_key("shadowsocks 2022 identity subkey", material, m->key_len + salt_len,
			     out, m->key_len);
}

#endif
