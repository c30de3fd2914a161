/* SPDX-License-Identifier: MIT */
#include "crypto/cpu.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* XCR0: the state components the OS saves on a context switch. */
static uint64_t cpu_xcr0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static unsigned cpu_probe(void)
{
	unsigned a, b, c, d, max, f = 0;
	bool ymm = false, zmm = false;

	if (!__get_cpuid(0, &max, &b, &c, &d) || !__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	if (c & bit_AES)
		f |= SS_CPU_AESNI;
	if (c & bit_PCLMUL)
		f |= SS_CPU_PCLMUL;
	if (c & bit_SSSE3)
		f |= SS_CPU_SSSE3;
	if (c & bit_SSE4_1)
		f |= SS_CPU_SSE41;
	if (c & bit_OSXSAVE) {
		uint64_t x = cpu_xcr0();
		/* SSE and AVX state; then opmask, upper ZMM0-15 and ZMM16-31. */
		ymm = (x & 0x6) == 0x6;
		zmm = ymm && (x & 0xe0) == 0xe0;
	}
	if (ymm && (c & bit_AVX))
		f |= SS_CPU_AVX;
	if (max < 7 || !ymm)
		return f;
	__cpuid_count(7, 0, a, b, c, d);
	if (b & bit_AVX2)
		f |= SS_CPU_AVX2;
	/* VAES and VPCLMULQDQ on 256-bit registers need only the AVX state;
	 * every user here takes them with AVX-512, which checks zmm. */
	if (c & bit_VAES)
		f |= SS_CPU_VAES;
	if (c & bit_VPCLMULQDQ)
		f |= SS_CPU_VPCLMULQDQ;
	if (!zmm)
		return f;
	if (b & bit_AVX512F)
		f |= SS_CPU_AVX512F;
	if (b & bit_AVX512BW)
		f |= SS_CPU_AVX512BW;
	if (b & bit_AVX512VL)
		f |= SS_CPU_AVX512VL;
	if (b & bit_AVX512IFMA)
		f |= SS_CPU_AVX512IFMA;
	return f;
}
#else
static unsigned cpu_probe(void)
{
	return 0;
}
#endif

/* The probe always gives the same answer, so threads racing on the first
 * call store the same value; the top bit marks it known. */
#define CPU_KNOWN (1u << 31)

unsigned ss_cpu_features(void)
{
	static _Atomic unsigned cached;
	unsigned f = atomic_load_explicit(&cached, memory_order_relaxed);

	if (!(f & CPU_KNOWN)) {
		f = cpu_probe() | CPU_KNOWN;
		atomic_store_explicit(&cached, f, memory_order_relaxed);
	}
	return f & ~CPU_KNOWN;
}

const char *ss_cpu_names(unsigned bits, char *buf, size_t len)
{
	static const char *const names[] = {"aes",        "pclmul",  "ssse3",      "sse4.1",
					    "avx2",       "avx512f", "avx512bw",   "avx512vl",
					    "avx512ifma", "vaes",    "vpclmulqdq", "avx"};
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(bits & (1u << i)))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", names[i]);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}
