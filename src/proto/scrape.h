/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_SCRAPE_H
#define SS_PROTO_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

/* The request of a Prometheus scrape, as ss-server's --metrics endpoint
 * reads it: an HTTP/1.x request head (RFC 9112), of which only the request
 * line counts; header fields are skipped up to the blank line. Read-only,
 * no I/O. */

typedef enum {
	SS_SCRAPE_METRICS,     /* GET /metrics (a query string is ignored): 200 */
	SS_SCRAPE_NOT_FOUND,   /* another path: 404 */
	SS_SCRAPE_BAD_METHOD,  /* /metrics with a method other than GET: 405 */
	SS_SCRAPE_BAD_REQUEST, /* not an HTTP/1.x request head: 400 */
} ss_scrape_t;

/* Parses the n bytes at buf. SS_AGAIN until the head's blank line has
 * come (CRLF CRLF, or LF LF); SS_OK with *what set; SS_ERR (with *what
 * SS_SCRAPE_BAD_REQUEST) as soon as the bytes cannot begin a request head
 * (a control byte, a malformed request line), so that the caller answers
 * without waiting for more. */
int ss_scrape_parse(const uint8_t *buf, size_t n, ss_scrape_t *what);

#endif
