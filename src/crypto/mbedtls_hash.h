/* SPDX-License-Identifier: MIT */
/* Mbed TLS's MD5 and SHA-1 under one set of names for 2.28 and 3.x: 2.x
 * names them *_ret (its plain names are deprecated and return void), 3.0
 * dropped the suffix. The functions themselves, not md.h: an md.h context
 * holds a pointer to state it allocates, which would cost an allocation per
 * HKDF (two per datagram) and could not be copied with memcpy. All of them
 * fail only on bad arguments. */
#ifndef SS_CRYPTO_MBEDTLS_HASH_H
#define SS_CRYPTO_MBEDTLS_HASH_H

#include <mbedtls/md5.h>
#include <mbedtls/sha1.h>
#include <mbedtls/version.h>

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#define SS_MBEDTLS_MD5 mbedtls_md5
#define SS_MBEDTLS_MD5_STARTS mbedtls_md5_starts
#define SS_MBEDTLS_MD5_UPDATE mbedtls_md5_update
#define SS_MBEDTLS_MD5_FINISH mbedtls_md5_finish
#define SS_MBEDTLS_SHA1_STARTS mbedtls_sha1_starts
#define SS_MBEDTLS_SHA1_UPDATE mbedtls_sha1_update
#define SS_MBEDTLS_SHA1_FINISH mbedtls_sha1_finish
#else
#define SS_MBEDTLS_MD5 mbedtls_md5_ret
#define SS_MBEDTLS_MD5_STARTS mbedtls_md5_starts_ret
#define SS_MBEDTLS_MD5_UPDATE mbedtls_md5_update_ret
#define SS_MBEDTLS_MD5_FINISH mbedtls_md5_finish_ret
#define SS_MBEDTLS_SHA1_STARTS mbedtls_sha1_starts_ret
#define SS_MBEDTLS_SHA1_UPDATE mbedtls_sha1_update_ret
#define SS_MBEDTLS_SHA1_FINISH mbedtls_sha1_finish_ret
#endif

#endif
