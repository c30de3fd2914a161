/* SPDX-License-Identifier: MIT */
/* Known-answer and differential tests for every crypto backend table. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "crypto/cpu.h"
#include "crypto/mbedtls_hash.h"
#include "crypto/primitives.h"
#include "util/result.h"

typedef struct {
	const char *name;
	ss_aead_alg_t alg;
	const char *key, *nonce, *pt, *ct_tag;
} aead_kat_t;

#define GCM_P64                                                                                    \
	"d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"                         \
	"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
#define GCM_K1 "feffe9928665731c6d6a8f9467308308"
#define RFC8439_PT                                                                                 \
	"4c616469657320616e642047656e746c656d656e206f662074686520636c6173"                         \
	"73206f66202739393a204966204920636f756c64206f6666657220796f75206f"                         \
	"6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73"                         \
	"637265656e20776f756c642062652069742e"
#define KEY_80_9F "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"

static const aead_kat_t aead_kats[] = {
    /* AES-GCM: McGrew and Viega, "The Galois/Counter Mode of Operation
     * (GCM)", appendix B, the test cases without AAD (1-3 AES-128, 7-9
     * AES-192, 13-15 AES-256). */
    {"gcm tc1", SS_AEAD_AES_GCM, "00000000000000000000000000000000", "000000000000000000000000", "",
     "58e2fccefa7e3061367f1d57a4e7455a"},
    {"gcm tc2", SS_AEAD_AES_GCM, "00000000000000000000000000000000", "000000000000000000000000",
     "00000000000000000000000000000000",
     "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"},
    {"gcm tc3", SS_AEAD_AES_GCM, GCM_K1, "cafebabefacedbaddecaf888", GCM_P64,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {"gcm tc7", SS_AEAD_AES_GCM, "000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "cd33b28ac773f74ba00ed1f312572435"},
    {"gcm tc8", SS_AEAD_AES_GCM, "000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "00000000000000000000000000000000",
     "98e7247c07f0fe411c267e4384b0f6002ff58d80033927ab8ef4d4587514f0fb"},
    {"gcm tc9", SS_AEAD_AES_GCM, GCM_K1 "feffe9928665731c", "cafebabefacedbaddecaf888", GCM_P64,
     "3980ca0b3c00e841eb06fac4872a2757859e1ceaa6efd984628593b40ca1e19c"
     "7d773d00c144c525ac619d18c84a3f4718e2448b2fe324d9ccda2710acade256"
     "9924a7c8587336bfb118024db8674a14"},
    {"gcm tc13", SS_AEAD_AES_GCM,
     "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"gcm tc14", SS_AEAD_AES_GCM,
     "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "00000000000000000000000000000000",
     "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"},
    {"gcm tc15", SS_AEAD_AES_GCM, GCM_K1 GCM_K1, "cafebabefacedbaddecaf888", GCM_P64,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"
     "b094dac5d93471bdec1a502270e3cc6c"},
    /* ChaCha20-Poly1305: the key, nonce and plaintext of RFC 8439 section
     * 2.8.2 without its AAD. Computed with python3-cryptography 38
     * (ChaCha20Poly1305), which reproduces that section's published
     * ciphertext and tag when the AAD is given. The ciphertext is the
     * RFC's (AAD only changes the tag). */
    {"chacha rfc8439 no aad", SS_AEAD_CHACHA20_POLY1305, KEY_80_9F, "070000004041424344454647",
     RFC8439_PT,
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
     "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
     "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
     "3ff4def08e4b7a9de576d26586cec64b6116"
     "6a23a4681fd59456aea1d29f82477216"},
    {"chacha empty", SS_AEAD_CHACHA20_POLY1305, KEY_80_9F, "070000004041424344454647", "",
     "a0784d7a4716f3feb4f64e7f4b39bf04"},
    /* XChaCha20-Poly1305: key, nonce and plaintext of
     * draft-irtf-cfrg-xchacha-03 appendix A.3.1 without its AAD. Computed
     * with a Python HChaCha20 (checked against the draft's section 2.2.1
     * vector) feeding python3-cryptography's ChaCha20Poly1305; the same
     * script reproduces the draft's published tag when given the AAD. */
    {"xchacha draft no aad", SS_AEAD_XCHACHA20_POLY1305, KEY_80_9F,
     "404142434445464748494a4b4c4d4e4f5051525354555657", RFC8439_PT,
     "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
     "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
     "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
     "21f9664c97637da9768812f615c68b13b52e"
     "f7e62efbf45089db18f9c8a3f0e41e5f"},
    {"xchacha empty", SS_AEAD_XCHACHA20_POLY1305, KEY_80_9F,
     "404142434445464748494a4b4c4d4e4f5051525354555657", "", "1dac8f73146d1e9da796cb7f7221a5df"},
};

static int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

static void check_kat(const ss_crypto_backend_t *be, const aead_kat_t *k)
{
	uint8_t key[32], nonce[24], pt[256], want[256 + 16], out[256 + 16], buf[256 + 16];
	size_t key_len = unhex(k->key, key), pt_len, ct_len;
	ss_aead_t a;

	unhex(k->nonce, nonce);
	pt_len = unhex(k->pt, pt);
	ct_len = unhex(k->ct_tag, want);
	assert_int_equal(ct_len, pt_len + SS_AEAD_TAG_LEN);

	memset(&a, 0, sizeof(a));
	assert_int_equal(be->aead_init(&a, k->alg), 0);
	assert_int_equal(be->aead_setkey(&a, key, key_len), 0);

	/* Separate buffers. */
	assert_int_equal(be->aead_seal(&a, nonce, out, pt, pt_len), 0);
	assert_memory_equal(out, want, ct_len);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(be->aead_open(&a, nonce, buf, want, ct_len), 0);
	if (pt_len > 0)
		assert_memory_equal(buf, pt, pt_len);

	/* In place. */
	memcpy(buf, pt, pt_len);
	assert_int_equal(be->aead_seal(&a, nonce, buf, buf, pt_len), 0);
	assert_memory_equal(buf, want, ct_len);
	assert_int_equal(be->aead_open(&a, nonce, buf, buf, ct_len), 0);
	if (pt_len > 0)
		assert_memory_equal(buf, pt, pt_len);

	/* Every flipped bit of ciphertext and tag fails authentication, and
	 * no unauthenticated text is left behind, in place or out of it
	 * (libcrypto's EVP writes the text before it checks the tag). */
	for (size_t bit = 0; bit < ct_len * 8; bit++) {
		memcpy(buf, want, ct_len);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		memset(out, 0x55, sizeof(out));
		assert_int_equal(be->aead_open(&a, nonce, out, buf, ct_len), -EBADMSG);
		if (!all_zero(out, pt_len))
			fail_msg("%s, %s, bit %zu: text left in out", be->name, k->name, bit);
		assert_int_equal(be->aead_open(&a, nonce, buf, buf, ct_len), -EBADMSG);
		if (!all_zero(buf, pt_len))
			fail_msg("%s, %s, bit %zu: text left in place", be->name, k->name, bit);
	}
	/* A wrong nonce too. */
	nonce[0] ^= 1;
	memcpy(buf, want, ct_len);
	assert_int_equal(be->aead_open(&a, nonce, buf, buf, ct_len), -EBADMSG);
	assert_true(all_zero(buf, pt_len));
	/* Shorter than a tag. */
	assert_int_equal(be->aead_open(&a, nonce, buf, want, SS_AEAD_TAG_LEN - 1), -EBADMSG);
	/* Nothing comes out of a wiped state either. */
	be->aead_wipe(&a);
	memset(out, 0x55, sizeof(out));
	assert_int_not_equal(be->aead_seal(&a, nonce, out, pt, pt_len), 0);
	assert_true(all_zero(out, ct_len));
	memset(out, 0x55, sizeof(out));
	assert_int_not_equal(be->aead_open(&a, nonce, out, want, ct_len), 0);
	assert_true(all_zero(out, pt_len));

	be->aead_free(&a);
}

static void test_aead_kats(void **state)
{
	(void)state;
	for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++)
		for (size_t i = 0; i < SS_ARRAY_LEN(aead_kats); i++)
			check_kat(backends[b], &aead_kats[i]);
}

/* RFC 5869 appendix A, test cases 4-7 (the SHA-1 ones). */
static void test_hkdf_sha1(void **state)
{
	static const struct {
		const char *ikm, *salt, *info, *okm;
	} tc[] = {
	    {"0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9",
	     "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2c22e422478d3"
	     "05f3f896"},
	    {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	     "404142434445464748494a4b4c4d4e4f",
	     "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	     "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
	     "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
	     "d0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
	     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
	     "0bd770a74d1160f7c9f12cd5912a06ebff6adcae899d92191fe4305673ba2ffe8fa3f1a4e5ad"
	     "79f3f334b3b202b2173c486ea37ce3d397ed034c7f9dfeb15c5e927336d0441f4c4300e2cff0"
	     "d0900b52d3b4"},
	    {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "",
	     "0ac1af7002b3d761d1e55298da9d0506b9ae52057220a306e07b6b87e8df21d0ea00033de039"
	     "84d34918"},
	    /* Test case 7: salt not provided. */
	    {"0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c", NULL, "",
	     "2c91117204d745f3500d636a62f64f0ab3bae548aa53d423b0d1f27ebba6f5e5673a081d70cc"
	     "e7acfc48"},
	};
	(void)state;

	for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
		const ss_crypto_backend_t *be = backends[b];

		for (size_t i = 0; i < SS_ARRAY_LEN(tc); i++) {
			uint8_t ikm[80], salt[80], info[80], want[82], okm[82];
			size_t ikm_len = unhex(tc[i].ikm, ikm);
			size_t salt_len = tc[i].salt ? unhex(tc[i].salt, salt) : 0;
			size_t info_len = unhex(tc[i].info, info);
			size_t okm_len = unhex(tc[i].okm, want);

			assert_int_equal(be->hkdf_sha1(tc[i].salt ? salt : NULL, salt_len, ikm,
						       ikm_len, info, info_len, okm, okm_len),
					 0);
			assert_memory_equal(okm, want, okm_len);
		}
		{
			uint8_t okm[255 * 20 + 1];

			assert_int_equal(be->hkdf_sha1(NULL, 0, okm, 1, NULL, 0, okm, sizeof(okm)),
					 -EINVAL);
			assert_int_equal(be->hkdf_sha1(NULL, 0, okm, 1, NULL, 0, okm, 255 * 20), 0);
		}
	}
}

/* Long keys (over one SHA-1 block) are hashed first: cross-check the
 * backends against each other there, and on many output lengths. */
static void test_hkdf_cross(void **state)
{
	uint8_t salt[100], ikm[100], info[100];
	(void)state;

	ss_random_bytes(salt, sizeof(salt));
	ss_random_bytes(ikm, sizeof(ikm));
	ss_random_bytes(info, sizeof(info));
	for (size_t len = 0; len <= 100; len += 7) {
		uint8_t ref[100], out[100];

		assert_int_equal(
		    ss_crypto_sodium.hkdf_sha1(salt, len, ikm, len, info, len, ref, len), 0);
		for (size_t b = 1; b < SS_ARRAY_LEN(backends); b++) {
			assert_int_equal(
			    backends[b]->hkdf_sha1(salt, len, ikm, len, info, len, out, len), 0);
			if (len > 0)
				assert_memory_equal(out, ref, len);
		}
	}
}

static const struct {
	ss_aead_alg_t alg;
	size_t key_len, nonce_len;
	const char *name;
} algs[] = {
    {SS_AEAD_AES_GCM, 16, 12, "aes-128-gcm"},
    {SS_AEAD_AES_GCM, 24, 12, "aes-192-gcm"},
    {SS_AEAD_AES_GCM, 32, 12, "aes-256-gcm"},
    {SS_AEAD_CHACHA20_POLY1305, 32, 12, "chacha20-poly1305"},
    {SS_AEAD_XCHACHA20_POLY1305, 32, 24, "xchacha20-poly1305"},
};

static size_t next_len(size_t len)
{
	if (len < 300)
		return len + 1;
	switch (len) {
	case 16000:
		return 16383;
	case 16383:
		return 16384;
	case 16384:
		return 16385;
	case 65000:
		return 65535;
	case 65535:
		return 65536;
	case 65536:
		return 70000;
	default:
		break;
	}
	len += 1 + len / 16;
	if (len > 16000 && len < 16383)
		return 16000;
	if (len > 65000 && len < 65535)
		return 65000;
	return len > 70000 ? 70001 : len;
}

/* Every pair of backends agrees byte for byte: A seals, B seals the same
 * input with the same key and nonce, B opens A's output. */
static void test_differential(void **state)
{
	const size_t max = 70000;
	uint8_t *pt = malloc(max), *ca = malloc(max + 16), *cb = malloc(max + 16);
	uint8_t *back = malloc(max + 16);
	(void)state;

	assert_non_null(pt);
	assert_non_null(ca);
	assert_non_null(cb);
	assert_non_null(back);
	ss_random_bytes(pt, max);

	for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++) {
		for (size_t x = 0; x < SS_ARRAY_LEN(backends); x++) {
			for (size_t y = 0; y < SS_ARRAY_LEN(backends); y++) {
				const ss_crypto_backend_t *A = backends[x], *B = backends[y];
				ss_aead_t a, b;
				size_t count = 0;

				if (x == y)
					continue;
				assert_int_equal(A->aead_init(&a, algs[g].alg), 0);
				assert_int_equal(B->aead_init(&b, algs[g].alg), 0);
				for (size_t len = 0; len <= max; len = next_len(len), count++) {
					uint8_t key[32], nonce[24];

					/* A fresh key every few lengths exercises re-keying. */
					if (count % 8 == 0) {
						ss_random_bytes(key, sizeof(key));
						assert_int_equal(
						    A->aead_setkey(&a, key, algs[g].key_len), 0);
						assert_int_equal(
						    B->aead_setkey(&b, key, algs[g].key_len), 0);
					}
					ss_random_bytes(nonce, sizeof(nonce));
					assert_int_equal(A->aead_seal(&a, nonce, ca, pt, len), 0);
					assert_int_equal(B->aead_seal(&b, nonce, cb, pt, len), 0);
					if (memcmp(ca, cb, len + 16) != 0)
						fail_msg("%s: %s and %s differ at length %zu",
							 algs[g].name, A->name, B->name, len);
					assert_int_equal(
					    B->aead_open(&b, nonce, back, ca, len + 16), 0);
					if (len > 0 && memcmp(back, pt, len) != 0)
						fail_msg("%s: %s cannot open %s at length %zu",
							 algs[g].name, B->name, A->name, len);
				}
				A->aead_free(&a);
				B->aead_free(&b);
			}
		}
	}
	free(pt);
	free(ca);
	free(cb);
	free(back);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* XINUSE (XGETBV with ECX=1): which state components are not in their
 * initial state. Bit 2 is the upper halves of YMM0-15, bit 6 those of
 * ZMM0-15; vzeroupper clears both. */
static bool xinuse(uint64_t *bits)
{
	unsigned a, b, c, d;
	uint32_t lo, hi;

	if (!ss_cpu_has(SS_CPU_AVX) || !__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4))
		return false;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	*bits = (uint64_t)hi << 32 | lo;
	return true;
}
#else
static bool xinuse(uint64_t *bits)
{
	(void)bits;
	return false;
}
#endif

/* Every backend returns from seal and open with the upper halves of the
 * vector registers clean: a library's AVX-512 code that leaves them dirty
 * makes every legacy-SSE instruction after it (the next datagram's SHA-1,
 * the kernel's state saves) pay a transition penalty. */
static void test_vector_state_clean(void **state)
{
	static uint8_t buf[1200 + 16], back[1200];
	uint8_t key[32] = {7}, nonce[24] = {0};
	uint64_t bits = 0;
	(void)state;

	if (!xinuse(&bits))
		skip(); /* no AVX, or no XGETBV with ECX=1 to read it */
	for (size_t g = 0; g < SS_ARRAY_LEN(algs); g++) {
		for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
			const ss_crypto_backend_t *be = backends[b];
			ss_aead_t a;

			assert_int_equal(be->aead_init(&a, algs[g].alg), 0);
			assert_int_equal(be->aead_setkey(&a, key, algs[g].key_len), 0);
			assert_int_equal(be->aead_seal(&a, nonce, buf, buf, 1200), 0);
			assert_true(xinuse(&bits));
			if (bits & 0x44)
				fail_msg(
				    "%s, %s: seal left the upper vector state dirty (XINUSE %#llx)",
				    algs[g].name, be->name, (unsigned long long)bits);
			assert_int_equal(be->aead_open(&a, nonce, back, buf, sizeof(buf)), 0);
			assert_true(xinuse(&bits));
			if (bits & 0x44)
				fail_msg(
				    "%s, %s: open left the upper vector state dirty (XINUSE %#llx)",
				    algs[g].name, be->name, (unsigned long long)bits);
			be->aead_free(&a);
		}
	}
}

/* One state re-keyed across key sizes, wiped, refused while unkeyed. */
static void test_rekey_and_wipe(void **state)
{
	static const size_t sizes[] = {16, 32, 24, 16, 16, 32};
	uint8_t key[32], nonce[12] = {0}, msg[64 + 16], out[64 + 16];
	(void)state;

	ss_random_bytes(key, sizeof(key));
	memset(msg, 0x5a, sizeof(msg));
	for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
		const ss_crypto_backend_t *be = backends[b];
		ss_aead_t a, ref;

		assert_int_equal(be->aead_init(&a, SS_AEAD_AES_GCM), 0);
		assert_int_equal(ss_crypto_sodium_portable.aead_init(&ref, SS_AEAD_AES_GCM), 0);
		for (size_t i = 0; i < SS_ARRAY_LEN(sizes); i++) {
			uint8_t want[64 + 16];

			key[0] = (uint8_t)i;
			assert_int_equal(be->aead_setkey(&a, key, sizes[i]), 0);
			assert_int_equal(ss_crypto_sodium_portable.aead_setkey(&ref, key, sizes[i]),
					 0);
			assert_int_equal(be->aead_seal(&a, nonce, out, msg, 64), 0);
			assert_int_equal(
			    ss_crypto_sodium_portable.aead_seal(&ref, nonce, want, msg, 64), 0);
			assert_memory_equal(out, want, sizeof(want));
		}
		/* Bad key sizes are refused and leave nothing usable behind. */
		assert_int_equal(be->aead_setkey(&a, key, 20), -EINVAL);
		assert_false(a.keyed);
		assert_int_not_equal(be->aead_seal(&a, nonce, out, msg, 64), 0);

		assert_int_equal(be->aead_setkey(&a, key, 16), 0);
		be->aead_wipe(&a);
		assert_false(a.keyed);
		assert_int_not_equal(be->aead_seal(&a, nonce, out, msg, 64), 0);
		assert_int_equal(be->aead_setkey(&a, key, 16), 0);
		assert_int_equal(be->aead_seal(&a, nonce, out, msg, 64), 0);
		be->aead_free(&a);
		ss_crypto_sodium_portable.aead_free(&ref);

		/* ChaCha keys are 32 bytes only. */
		assert_int_equal(be->aead_init(&a, SS_AEAD_CHACHA20_POLY1305), 0);
		assert_int_equal(be->aead_setkey(&a, key, 16), -EINVAL);
		be->aead_free(&a);
		assert_int_equal(be->aead_init(&a, SS_AEAD_XCHACHA20_POLY1305), 0);
		assert_int_equal(be->aead_setkey(&a, key, 24), -EINVAL);
		be->aead_free(&a);

		/* Free is safe on a zeroed state, and twice. */
		memset(&a, 0, sizeof(a));
		be->aead_free(&a);
		be->aead_free(&a);
		assert_int_equal(be->aead_init(&a, (ss_aead_alg_t)99), -ENOTSUP);
	}
}

/* FIPS-197 appendix C.1 (AES-128) and C.3 (AES-256); then the backends
 * against each other on random keys and blocks. */
static void test_aes_block(void **state)
{
	static const struct {
		const char *key, *pt, *ct;
	} kat[] = {
	    {"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff",
	     "69c4e0d86a7b0430d8cdb78070b4c55a"},
	    {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	     "00112233445566778899aabbccddeeff", "8ea2b7ca516745bfeafc49904b496089"},
	};
	(void)state;

	for (size_t b = 0; b < SS_ARRAY_LEN(backends); b++) {
		const ss_crypto_backend_t *be = backends[b];
		ss_aes_block_t a;

		assert_int_equal(be->aes_init(&a), 0);
		assert_false(a.keyed);
		/* Twice over, so the second pass re-keys a used state, across key
		 * sizes and back. */
		for (int pass = 0; pass < 2; pass++) {
			for (size_t i = 0; i < SS_ARRAY_LEN(kat); i++) {
				uint8_t key[32], pt[16], ct[16], out[16], buf[16];
				size_t key_len = unhex(kat[i].key, key);

				unhex(kat[i].pt, pt);
				unhex(kat[i].ct, ct);
				assert_int_equal(be->aes_setkey(&a, key, key_len), 0);
				assert_true(a.keyed);
				assert_int_equal(a.key_len, key_len);
				assert_int_equal(be->aes_encrypt(&a, pt, out), 0);
				assert_memory_equal(out, ct, 16);
				assert_int_equal(be->aes_decrypt(&a, ct, out), 0);
				assert_memory_equal(out, pt, 16);
				/* In place, both ways. */
				memcpy(buf, pt, 16);
				assert_int_equal(be->aes_encrypt(&a, buf, buf), 0);
				assert_memory_equal(buf, ct, 16);
				assert_int_equal(be->aes_decrypt(&a, buf, buf), 0);
				assert_memory_equal(buf, pt, 16);
			}
		}
		{
			uint8_t key[32] = {0}, blk[16] = {0};

			/* Only AES-128 and AES-256 keys; a refused key leaves none. */
			assert_int_equal(be->aes_setkey(&a, key, 24), -EINVAL);
			assert_false(a.keyed);
			assert_int_equal(be->aes_encrypt(&a, blk, blk), -EINVAL);
			assert_int_equal(be->aes_decrypt(&a, blk, blk), -EINVAL);
			assert_int_equal(be->aes_setkey(&a, key, 0), -EINVAL);
			assert_int_equal(be->aes_setkey(&a, key, 17), -EINVAL);
			/* Wiped: refused until the next key, which works again. */
			assert_int_equal(be->aes_setkey(&a, key, 16), 0);
			be->aes_wipe(&a);
			assert_false(a.keyed);
			assert_int_equal(be->aes_encrypt(&a, blk, blk), -EINVAL);
			assert_int_equal(be->aes_setkey(&a, key, 32), 0);
			assert_int_equal(be->aes_encrypt(&a, blk, blk), 0);
		}
		be->aes_free(&a);
		be->aes_free(&a);
		memset(&a, 0, sizeof(a));
		be->aes_wipe(&a);
		be->aes_free(&a);
	}

	for (size_t b = 1; b < SS_ARRAY_LEN(backends); b++) {
		ss_aes_block_t ref, got;

		assert_int_equal(ss_crypto_sodium.aes_init(&ref), 0);
		assert_int_equal(backends[b]->aes_init(&got), 0);
		for (int i = 0; i < 200; i++) {
			uint8_t key[32], blk[16], want[16], out[16];
			size_t key_len = i % 2 ? 32 : 16;

			ss_random_bytes(key, sizeof(key));
			ss_random_bytes(blk, sizeof(blk));
			assert_int_equal(ss_crypto_sodium.aes_setkey(&ref, key, key_len), 0);
			assert_int_equal(backends[b]->aes_setkey(&got, key, key_len), 0);
			assert_int_equal(ss_crypto_sodium.aes_encrypt(&ref, blk, want), 0);
			assert_int_equal(backends[b]->aes_encrypt(&got, blk, out), 0);
			assert_memory_equal(out, want, 16);
			assert_int_equal(backends[b]->aes_decrypt(&got, want, out), 0);
			assert_memory_equal(out, blk, 16);
		}
		ss_crypto_sodium.aes_free(&ref);
		backends[b]->aes_free(&got);
	}
}

static void test_helpers(void **state)
{
	uint8_t out[16], want[16], a[32], b[32];
	(void)state;

	/* RFC 1321 appendix A.5, through the Mbed TLS call of either major
	 * version that EVP_BytesToKey's MD5 rests on. */
	(void)SS_MBEDTLS_MD5((const uint8_t *)"", 0, out);
	unhex("d41d8cd98f00b204e9800998ecf8427e", want);
	assert_memory_equal(out, want, 16);
	(void)SS_MBEDTLS_MD5((const uint8_t *)"abc", 3, out);
	unhex("900150983cd24fb0d6963f7d28e17f72", want);
	assert_memory_equal(out, want, 16);
	(void)SS_MBEDTLS_MD5((const uint8_t *)"message digest", 14, out);
	unhex("f96b697d7cb7938d525a2f31aaf161d0", want);
	assert_memory_equal(out, want, 16);

	ss_random_bytes(a, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(ss_ct_equal(a, b, sizeof(a)));
	assert_true(ss_ct_equal(a, b, 0));
	b[31] ^= 0x80;
	assert_false(ss_ct_equal(a, b, sizeof(a)));
	ss_wipe(a, sizeof(a));
	memset(b, 0, sizeof(b));
	assert_memory_equal(a, b, sizeof(a));
}

/* The programs' backend: the build's library, with our own code over it
 * where built, unless SS_OWN_CRYPTO says 0, off or no. */
static void test_default_backend(void **state)
{
	static const char *const off[] = {"0", "off", "OFF", "no", "No"};
	static const char *const on[] = {"1", "on", "yes", "", "false"};
	const char *env = getenv("SS_OWN_CRYPTO");
	char *saved = env ? strdup(env) : NULL, line[256];
#ifdef SS_CRYPTO_DEFAULT_OPENSSL
	const ss_crypto_backend_t *lib = &ss_crypto_openssl;
#else
	const ss_crypto_backend_t *lib = &ss_crypto_sodium;
#endif
#ifdef SS_OWN_CRYPTO
	const ss_crypto_backend_t *own = lib == &ss_crypto_sodium ? &ss_crypto_sodium_own : NULL;
#ifdef SS_HAVE_OPENSSL
	if (lib == &ss_crypto_openssl)
		own = &ss_crypto_openssl_own;
#endif
	assert_ptr_equal(own->lib, lib);
#else
	const ss_crypto_backend_t *own = lib;
#endif
	(void)state;

	assert_null(lib->lib);
	assert_int_equal(unsetenv("SS_OWN_CRYPTO"), 0);
	assert_ptr_equal(ss_crypto_default(), own);
	for (size_t i = 0; i < SS_ARRAY_LEN(on); i++) {
		assert_int_equal(setenv("SS_OWN_CRYPTO", on[i], 1), 0);
		assert_ptr_equal(ss_crypto_default(), own);
	}
	for (size_t i = 0; i < SS_ARRAY_LEN(off); i++) {
		assert_int_equal(setenv("SS_OWN_CRYPTO", off[i], 1), 0);
		assert_ptr_equal(ss_crypto_default(), lib);
	}
#ifdef SS_OWN_CRYPTO
	assert_non_null(strstr(ss_crypto_own_setting(lib, line, sizeof(line)),
			       "turned off by SS_OWN_CRYPTO=No"));
	assert_int_equal(unsetenv("SS_OWN_CRYPTO"), 0);
	assert_non_null(strstr(ss_crypto_own_setting(own, line, sizeof(line)), "in use"));
	assert_non_null(strstr(ss_crypto_own_setting(lib, line, sizeof(line)), "not used by"));
#else
	assert_non_null(strstr(ss_crypto_own_setting(lib, line, sizeof(line)), "not built"));
#endif
	if (saved)
		assert_int_equal(setenv("SS_OWN_CRYPTO", saved, 1), 0);
	else
		assert_int_equal(unsetenv("SS_OWN_CRYPTO"), 0);
	free(saved);
}

/* Salts come from a pooled page of kernel randomness: draws never repeat,
 * across refills too, and a forked child never hands out its parent's
 * bytes (the page is wiped in the child). */
static void test_random_pool(void **state)
{
	enum { N = 400, L = 32 };
	static uint8_t seen[N][L];
	uint8_t big[1000], zero[sizeof(big)] = {0};
	int fds[2];
	(void)state;

	for (int i = 0; i < N; i++) { /* about three pages' worth */
		ss_random_bytes(seen[i], L);
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(seen[i], seen[j], L);
	}
	ss_random_bytes(big, sizeof(big)); /* larger than a pooled draw */
	assert_memory_not_equal(big, zero, sizeof(big));

	for (int round = 0; round < 2; round++) {
		uint8_t mine[L], child[L];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			ss_random_bytes(child, L);
			_exit(write(fds[1], child, L) == L ? 0 : 1);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(read(fds[0], child, L), L);
		close(fds[0]);
		close(fds[1]);
		ss_random_bytes(mine, L);
		assert_memory_not_equal(mine, child, L);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_aead_kats),       cmocka_unit_test(test_hkdf_sha1),
	    cmocka_unit_test(test_hkdf_cross),      cmocka_unit_test(test_differential),
	    cmocka_unit_test(test_rekey_and_wipe),  cmocka_unit_test(test_aes_block),
	    cmocka_unit_test(test_helpers),         cmocka_unit_test(test_random_pool),
	    cmocka_unit_test(test_default_backend), cmocka_unit_test(test_vector_state_clean),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
