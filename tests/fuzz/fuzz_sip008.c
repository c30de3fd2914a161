/* SPDX-License-Identifier: MIT */
/* libFuzzer target: online configuration documents (SIP008) and the
 * one-URL answer (ss_sip008_parse), raw. The input is the document. One
 * that parses has at least one server, each with a host, a port, a
 * method and a plugin a URL could name, is the same as itself, and
 * parses the same again; one that does not leaves the document wiped and
 * an error of one line. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/sip008.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ss_sip008_t doc, again;
	char err[512];

	if (ss_sip008_parse((const char *)data, size, &doc, err, sizeof(err)) != 0) {
		FZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		FZ_CHECK(fz_all_zero((const uint8_t *)&doc, sizeof(doc)));
		return 0;
	}
	FZ_CHECK(doc.n >= 1 && doc.n <= SS_SIP008_KEEP);
	FZ_CHECK(doc.n_more == 0 || doc.n == SS_SIP008_KEEP);
	FZ_CHECK(!doc.from_url || doc.n == 1);
	for (size_t i = 0; i < doc.n; i++) {
		const ss_url_t *u = &doc.s[i].u;
		FZ_CHECK(u->host[0] && u->port && u->method[0]);
		FZ_CHECK(!u->plugin[0] || ss_url_plugin_name_ok(u->plugin));
		FZ_CHECK(u->plugin[0] || !u->plugin_opts[0]);
		for (const char *o = u->plugin_opts; *o; o++)
			FZ_CHECK((unsigned char)*o >= 0x20 && *o != 0x7f);
	}
	FZ_CHECK(ss_sip008_same(&doc, &doc));
	FZ_CHECK(ss_sip008_parse((const char *)data, size, &again, err, sizeof(err)) == 0);
	FZ_CHECK(ss_sip008_same(&doc, &again));
	ss_sip008_clear(&doc);
	ss_sip008_clear(&again);
	return 0;
}
