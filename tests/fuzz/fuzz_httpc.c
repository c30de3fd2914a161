/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what the online configuration's HTTPS client reads
 * (proto/httpc.h), raw. The input is an answer: its head
 * (ss_httpc_parse_head), then what follows as a chunked body
 * (ss_httpc_dechunk), and the whole as a URL (ss_httpc_url_parse). A head
 * that parses ends in a blank line within the input and is found the same
 * with any bytes after it; every shorter prefix of it is incomplete. A
 * body that decodes fits the cap, and decodes the same after a copy;
 * until whole it leaves its bytes untouched. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/httpc.h"

static void check_url(const uint8_t *data, size_t size)
{
	static char text[4096];
	ss_httpc_url_t u;
	char err[512], shown[SS_HTTPC_SHOWN_MAX];

	if (size >= sizeof(text))
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	/* What logs may name: no control byte, and no more than scheme and host. */
	ss_httpc_url_shown(text, shown, sizeof(shown));
	for (const char *c = shown; *c; c++)
		FZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
	if (ss_httpc_url_parse(text, &u, err, sizeof(err)) != 0) {
		FZ_CHECK(err[0] && strchr(err, '\n') == NULL);
		return;
	}
	FZ_CHECK(strlen(shown) <= strlen("ssconf://...@[]:65535/...") + strlen(u.host));
	FZ_CHECK(u.host[0] && u.port && u.path[0] == '/');
	FZ_CHECK(strchr(u.path, '#') == NULL && strchr(u.path, ' ') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[1 << 16], copy[1 << 16];
	ss_httpc_head_t h, h2;
	size_t cap, out, start = 0;
	int r;

	check_url(data, size);
	r = ss_httpc_parse_head(data, size, &h);
	if (r == SS_OK) {
		FZ_CHECK(h.len >= 4 && h.len <= size && h.len <= SS_HTTPC_HEAD_MAX);
		FZ_CHECK(memcmp(data + h.len - 4, "\r\n\r\n", 4) == 0);
		FZ_CHECK(h.status >= 100 && h.status <= 999);
		FZ_CHECK(!(h.chunked && h.has_length));
		FZ_CHECK(ss_httpc_parse_head(data, h.len, &h2) == SS_OK && h2.len == h.len);
		FZ_CHECK(ss_httpc_parse_head(data, h.len - 1, &h2) == SS_AGAIN);
		start = h.len;
	} else if (r == SS_AGAIN) {
		FZ_CHECK(size < SS_HTTPC_HEAD_MAX);
	}
	/* The body, with a cap taken from its first byte. */
	if (size - start < 1 || size - start - 1 > sizeof(buf))
		return 0;
	cap = (size_t)data[start] * 64;
	size -= start + 1;
	memcpy(buf, data + start + 1, size);
	memcpy(copy, buf, size);
	r = ss_httpc_dechunk(buf, size, cap, &out);
	if (r == SS_OK) {
		FZ_CHECK(out <= cap && out <= size);
		memcpy(buf, copy, size);
		FZ_CHECK(ss_httpc_dechunk(buf, size, SIZE_MAX, &out) == SS_OK);
	} else {
		FZ_CHECK(memcmp(buf, copy, size) == 0);
	}
	return 0;
}
