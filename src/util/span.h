/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_SPAN_H
#define SS_UTIL_SPAN_H

#include <stddef.h>
#include <stdint.h>

/* Bytes inside a buffer someone else owns: what a decoder hands back of the
 * plaintext it opened in place. */
typedef struct ss_span {
	uint8_t *ptr;
	size_t len;
} ss_span_t;

#endif
