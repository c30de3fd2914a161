/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_CPU_H
#define SS_CRYPTO_CPU_H

#include <stdbool.h>
#include <stddef.h>

/* What the CPU and the operating system let our own code run: a feature
 * counts only when CPUID reports it and, for the wide registers, XCR0 shows
 * the OS saves their state. Read from CPUID directly (GCC and clang name
 * features differently in __builtin_cpu_supports, and clang 14 knows
 * neither VAES nor VPCLMULQDQ there). Computed on first use; safe to call
 * from any thread. */
enum {
	SS_CPU_AESNI = 1u << 0,
	SS_CPU_PCLMUL = 1u << 1,
	SS_CPU_SSSE3 = 1u << 2,
	SS_CPU_SSE41 = 1u << 3,
	SS_CPU_AVX2 = 1u << 4,
	SS_CPU_AVX512F = 1u << 5,
	SS_CPU_AVX512BW = 1u << 6,
	SS_CPU_AVX512VL = 1u << 7,
	SS_CPU_AVX512IFMA = 1u << 8,
	SS_CPU_VAES = 1u << 9,
	SS_CPU_VPCLMULQDQ = 1u << 10,
	SS_CPU_AVX = 1u << 11,
};

/* The SS_CPU_* bits this machine has (0 off x86-64). */
unsigned ss_cpu_features(void);

/* Whether every bit of want is present. */
static inline bool ss_cpu_has(unsigned want)
{
	return (ss_cpu_features() & want) == want;
}

/* The names of bits ("aes", "avx512f", "vaes"...), space-separated, into
 * buf (empty when none). Returns buf. */
const char *ss_cpu_names(unsigned bits, char *buf, size_t len);

#endif
