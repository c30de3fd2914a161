/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "proto/scrape.h"
#include "util/result.h"

/* RFC 9110 tchar. */
static bool scrape_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Visible ASCII, what a request target is made of. */
static bool scrape_vchar(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

/* The request line in buf[0, len) (without its line end). */
static int scrape_line(const uint8_t *buf, size_t len, ss_scrape_t *what)
{
	size_t i = 0, m, t, tlen, plen;
	static const char path[] = "/metrics";

	while (i < len && scrape_tchar(buf[i]))
		i++;
	m = i;
	if (m == 0 || i == len || buf[i] != ' ')
		return SS_ERR;
	t = ++i;
	while (i < len && scrape_vchar(buf[i]))
		i++;
	tlen = i - t;
	if (tlen == 0 || i == len || buf[i] != ' ' || buf[t] != '/')
		return SS_ERR;
	i++;
	/* HTTP/1.0 or HTTP/1.1 (any one-digit minor version). */
	if (len - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 || buf[i + 7] < '0' ||
	    buf[i + 7] > '9')
		return SS_ERR;
	for (plen = 0; plen < tlen && buf[t + plen] != '?'; plen++)
		;
	if (plen != sizeof(path) - 1 || memcmp(buf + t, path, plen) != 0)
		*what = SS_SCRAPE_NOT_FOUND;
	else if (m == 3 && memcmp(buf, "GET", 3) == 0)
		*what = SS_SCRAPE_METRICS;
	else
		*what = SS_SCRAPE_BAD_METHOD;
	return SS_OK;
}

int ss_scrape_parse(const uint8_t *buf, size_t n, ss_scrape_t *what)
{
	size_t line_end = 0, i;
	bool have_line = false;
	ss_scrape_t got = SS_SCRAPE_BAD_REQUEST;

	*what = SS_SCRAPE_BAD_REQUEST;
	for (i = 0; i < n; i++) {
		uint8_t c = buf[i];
		if (c == '\n') {
			size_t end = i && buf[i - 1] == '\r' ? i - 1 : i;
			if (!have_line) {
				if (scrape_line(buf, end, &got) != SS_OK)
					return SS_ERR;
				have_line = true;
			} else if (end == line_end) {
				/* An empty line: the head is whole. */
				*what = got;
				return SS_OK;
			}
			line_end = i + 1;
			continue;
		}
		/* A control byte other than CR before LF, or HTAB in a field. */
		if ((c < 0x20 && c != '\t' && !(c == '\r' && i + 1 < n && buf[i + 1] == '\n') &&
		     !(c == '\r' && i + 1 == n)) ||
		    c == 0x7f)
			return SS_ERR;
	}
	/* A request line that cannot become one is refused without waiting. */
	if (!have_line && n) {
		for (i = 0; i < n && scrape_tchar(buf[i]); i++)
			;
		if (i < n && buf[i] != ' ')
			return SS_ERR;
	}
	return SS_AGAIN;
}
