#include "crypto/primitives.h"

#include <mbedtls/md5.h>
#include <sodium.h>

int ss_crypto_global_init(void)
{
	/* 1 means it was already initialised, which is fine. */
	return sodium_init() < 0 ? -1 : 0;
}

const ss_crypto_backend_t *ss_crypto_default(void)
{
#ifdef SS_CRYPTO_DEFAULT_OPENSSL
	return &ss_crypto_openssl;
#else
	return &ss_crypto_sodium;
#endif
}

bool ss_ct_equal(const void *a, const void *b, size_t len)
{
	return sodium_memcmp(a, b, len) == 0;
}

void ss_wipe(void *buf, size_t len)
{
	sodium_memzero(buf, len);
}

void ss_md5(const uint8_t *in, size_t len, uint8_t out[16])
{
	/* Fails only on bad arguments. */
	(void)mbedtls_md5_ret(in, len, out);
}
