/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_GCM_VAES_H
#define SS_CRYPTO_GCM_VAES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/cpu.h"

/* AES-GCM (AES-128 and AES-256, 12-byte nonce, no associated data) on x86-64
 * CPUs with VAES and VPCLMULQDQ on 512-bit registers (AVX-512 F, BW and VL):
 * counter mode and GHASH four blocks to a register, 32 blocks a step.
 * Our own code's tables (own.c) serve AES-GCM with it where the CPU has it,
 * and leave the rest (24-byte keys, other CPUs) to the library. */

typedef struct ss_vgcm {
	_Alignas(64) uint8_t rk[15][16]; /* encryption round keys */
	/* H^16 .. H^1, bit-reflected and multiplied by the field's x once
	 * more, ready for the reduction GHASH uses. */
	_Alignas(64) uint8_t hpow[16][16];
	uint8_t rounds; /* 10 or 14; 0 when no key is set */
} ss_vgcm_t;

/* The CPU features it needs (crypto/cpu.h). */
#define SS_VGCM_CPU                                                                                \
	(SS_CPU_AESNI | SS_CPU_PCLMUL | SS_CPU_SSSE3 | SS_CPU_SSE41 | SS_CPU_AVX2 |                \
	 SS_CPU_AVX512F | SS_CPU_AVX512BW | SS_CPU_AVX512VL | SS_CPU_VAES | SS_CPU_VPCLMULQDQ)

/* Whether this CPU (and the OS, for the 512-bit state) runs it. */
bool ss_vgcm_available(void);

/* 0; -ENOTSUP when the CPU lacks the instructions or for a 24-byte key;
 * -EINVAL for another length (g is then unkeyed either way). */
int ss_vgcm_setkey(ss_vgcm_t *g, const uint8_t *key, size_t key_len);

/* len bytes of in to out, then the 16-byte tag at out + len. in == out is
 * allowed; other overlaps are not. 0, or -EINVAL when unkeyed or len is past
 * GCM's limit (out's len + 16 bytes are then zero). */
int ss_vgcm_seal(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len);

/* len bytes (ciphertext then tag, len >= 16) of in to out, writing len - 16
 * bytes. in == out allowed. 0, -EBADMSG when the tag does not match or len
 * is out of range, -EINVAL when unkeyed; out's len - 16 bytes are then
 * zero. The tags are compared in constant time. */
int ss_vgcm_open(const ss_vgcm_t *g, const uint8_t nonce[12], uint8_t *out, const uint8_t *in,
		 size_t len);

/* Forgets the key. */
void ss_vgcm_wipe(ss_vgcm_t *g);

#endif
