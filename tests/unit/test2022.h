/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_TEST2022_H
#define SS_TESTS_TEST2022_H

/* Shared by the SIP022 codec tests (TCP and UDP); include after <cmocka.h>. */

#include <string.h>

#include "crypto/aead2022.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "proto/addr.h"
#include "util/result.h"

static const char *const methods[] = {
    "2022-blake3-aes-128-gcm",
    "2022-blake3-aes-256-gcm",
    "2022-blake3-chacha20-poly1305",
};

static inline const ss_method_t *method(const char *name)
{
	const ss_method_t *m = NULL;

	assert_int_equal(ss_method_lookup(name, &m, NULL, 0), 0);
	assert_int_equal(m->kind, SS_METHOD_2022);
	return m;
}

static inline int setup(void **state)
{
	(void)state;
	return ss_crypto_global_init();
}

static inline void psks_random(const ss_method_t *m, ss_psk_list_t *l, size_t n)
{
	memset(l, 0, sizeof(*l));
	l->n = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		ss_random_bytes(l->keys[i], m->key_len);
}

/* "example.com:443" */
static inline size_t addr_domain(uint8_t *out)
{
	ss_addr_t a;

	assert_int_equal(ss_addr_set_domain(&a, "example.com", 443), 0);
	return ss_addr_encode(&a, out, SS_ADDR_MAX_ENCODED);
}

/* "1.2.3.4:53" */
static inline size_t addr_v4(uint8_t *out)
{
	static const uint8_t a[] = {SS_ATYP_IPV4, 1, 2, 3, 4, 0, 53};

	memcpy(out, a, sizeof(a));
	return sizeof(a);
}

#endif
