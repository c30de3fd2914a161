/* libFuzzer target: our ChaCha20-Poly1305 for short messages
 * (src/crypto/chacha_short.c) against libsodium's ChaCha20-Poly1305 IETF,
 * byte for byte. The input picks the key, the nonce, the message (0 to 64
 * bytes; sometimes longer, which ours must refuse), where input and output
 * sit (odd offsets, in place or not) and a bit to flip. Sealing must give
 * libsodium's ciphertext and tag, opening the message back, and a flipped
 * bit must be refused (-EBADMSG, by libsodium too) with the output all
 * zeros. Our Poly1305 alone is checked against libsodium's as well.
 * Neither SIP004 nor SIP022 uses associated data, so ours takes none and
 * libsodium is called without any. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "crypto/chacha_short.h"
#include "fuzz_util.h"

#define ROOM (64 + SS_CHACHA_SHORT_MAX + 32 + 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t key[32], nonce[12], msg[SS_CHACHA_SHORT_MAX + 32], want[sizeof(msg) + 16];
	size_t len = fz_range(&f, 0, fz_u8(&f) % 8 ? SS_CHACHA_SHORT_MAX : sizeof(msg));
	size_t in_off = fz_range(&f, 0, 63), out_off = fz_range(&f, 0, 63);
	bool in_place = fz_bool(&f);
	size_t flip = fz_u32(&f) % (len + 16);
	uint8_t bit = (uint8_t)(1u << fz_u8(&f) % 8);
	uint8_t tag[16], want_tag[16];
	unsigned long long wl = 0;
	uint8_t *in = malloc(ROOM), *out = in_place ? in : malloc(ROOM);

	if (in_place)
		out_off = in_off;
	fz_bytes(&f, key, sizeof(key));
	fz_bytes(&f, nonce, sizeof(nonce));
	fz_bytes(&f, msg, len);
	FZ_CHECK(crypto_aead_chacha20poly1305_ietf_encrypt(want, &wl, msg, len, NULL, 0, NULL,
							   nonce, key) == 0);
	FZ_CHECK(wl == len + 16);

	memcpy(in + in_off, msg, len);
	if (len > SS_CHACHA_SHORT_MAX) {
		FZ_CHECK(ss_chacha_short_seal(key, nonce, out + out_off, in + in_off, len) ==
			 -EINVAL);
		memcpy(in + in_off, want, len + 16);
		FZ_CHECK(ss_chacha_short_open(key, nonce, out + out_off, in + in_off, len + 16) ==
			 -EBADMSG);
		goto out;
	}
	FZ_CHECK(ss_chacha_short_seal(key, nonce, out + out_off, in + in_off, len) == 0);
	FZ_CHECK(memcmp(out + out_off, want, len + 16) == 0);

	memcpy(in + in_off, want, len + 16);
	FZ_CHECK(ss_chacha_short_open(key, nonce, out + out_off, in + in_off, len + 16) == 0);
	FZ_CHECK(memcmp(out + out_off, msg, len) == 0);

	memcpy(in + in_off, want, len + 16);
	in[in_off + flip] ^= bit;
	if (!in_place)
		memset(out + out_off, 0xa5, len);
	FZ_CHECK(ss_chacha_short_open(key, nonce, out + out_off, in + in_off, len + 16) ==
		 -EBADMSG);
	FZ_CHECK(fz_all_zero(out + out_off, len));
	want[flip] ^= bit;
	FZ_CHECK(crypto_aead_chacha20poly1305_ietf_decrypt(msg, NULL, NULL, want, len + 16, NULL, 0,
							   nonce, key) != 0);
	FZ_CHECK(ss_chacha_short_open(key, nonce, out + out_off, in + in_off, len % 16) ==
		 -EBADMSG);

	/* Poly1305 on its own, over whole blocks of the message. */
	ss_chacha_short_poly1305(key, msg, len & ~(size_t)15, tag);
	crypto_onetimeauth_poly1305(want_tag, msg, len & ~(size_t)15, key);
	FZ_CHECK(memcmp(tag, want_tag, 16) == 0);
out:
	free(in);
	if (!in_place)
		free(out);
	return 0;
}
