/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the request head of a scrape of --metrics
 * (ss_scrape_parse), raw, and every prefix of it, as the endpoint sees the
 * request grow: a prefix that completes completes as the whole does, with
 * the same answer, and a refusal stays a refusal. A request that parses as
 * a scrape starts with "GET /metrics". */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/scrape.h"
#include "util/result.h"

typedef struct parsed {
	int rc;
	ss_scrape_t what;
} parsed_t;

static parsed_t parse(const uint8_t *buf, size_t len)
{
	parsed_t p;

	p.rc = ss_scrape_parse(buf, len, &p.what);
	FZ_CHECK(p.rc == SS_OK || p.rc == SS_AGAIN || p.rc == SS_ERR);
	FZ_CHECK(p.rc == SS_OK || p.what == SS_SCRAPE_BAD_REQUEST);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parsed_t full = parse(data, size);

	if (full.rc == SS_OK && full.what == SS_SCRAPE_METRICS)
		FZ_CHECK(size >= 12 && memcmp(data, "GET /metrics", 12) == 0);
	if (full.rc == SS_OK)
		FZ_CHECK(full.what <= SS_SCRAPE_BAD_REQUEST && full.what != SS_SCRAPE_BAD_REQUEST);
	for (size_t k = 0; k < size && k <= 4096; k++) {
		parsed_t p = parse(data, k);

		if (p.rc == SS_OK)
			FZ_CHECK(full.rc == SS_OK && p.what == full.what);
		else if (p.rc == SS_ERR)
			FZ_CHECK(full.rc == SS_ERR);
	}
	return 0;
}
