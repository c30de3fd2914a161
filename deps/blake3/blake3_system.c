/* SPDX-License-Identifier: MIT */
/* The ss_blake3 API over the system's libblake3 (built when pkg-config finds
 * it; see blake3.h). Each call maps onto one of the library's. */
#include "blake3.h"

#include <string.h>

void ss_blake3_init(ss_blake3_t *h)
{
	blake3_hasher_init(&h->sys);
}

void ss_blake3_init_keyed(ss_blake3_t *h, const uint8_t key[static SS_BLAKE3_KEY_LEN])
{
	blake3_hasher_init_keyed(&h->sys, key);
}

void ss_blake3_init_derive_key(ss_blake3_t *h, const char *context)
{
	blake3_hasher_init_derive_key(&h->sys, context);
}

void ss_blake3_update(ss_blake3_t *h, const void *data, size_t len)
{
	if (len > 0)
		blake3_hasher_update(&h->sys, data, len);
}

void ss_blake3_final(const ss_blake3_t *h, uint8_t *out, size_t out_len)
{
	blake3_hasher_finalize(&h->sys, out, out_len);
}

/* Through a volatile pointer so the compiler cannot drop a store to memory
 * that is not read afterwards. */
static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

void ss_blake3_wipe(ss_blake3_t *h)
{
	wipe_memset(h, 0, sizeof(*h));
}

void ss_blake3_derive_key(const char *context, const uint8_t *material, size_t len, uint8_t *out,
			  size_t out_len)
{
	ss_blake3_t h;

	ss_blake3_init_derive_key(&h, context);
	ss_blake3_update(&h, material, len);
	ss_blake3_final(&h, out, out_len);
	ss_blake3_wipe(&h);
}
