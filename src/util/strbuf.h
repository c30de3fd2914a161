/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_STRBUF_H
#define SS_UTIL_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Text that grows on the heap as it is written: the manager's replies,
 * the metrics page. Zeroed, it is empty; once a write fails (out of
 * memory), failed stays set and later writes do nothing. p is the caller's
 * to free. */
typedef struct ss_strbuf {
	char *p; /* NUL-terminated when len > 0; NULL until written */
	size_t len, cap;
	bool failed;
} ss_strbuf_t;

void ss_strbuf_printf(ss_strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
