/* SPDX-License-Identifier: MIT */
#ifndef SS_CODEC_SECRET_H
#define SS_CODEC_SECRET_H

#include <stddef.h>

/* What code beside the codecs takes from the crypto library, without its
 * types: bytes a peer cannot predict (hash seeds, jitter) and wiping what
 * must not outlive its use (credentials). */

/* Fills buf with len random bytes from the library's generator. */
void ss_secret_random(void *buf, size_t len);
/* Zeroes buf's len bytes in a way the compiler does not drop. */
void ss_secret_wipe(void *buf, size_t len);

#endif
