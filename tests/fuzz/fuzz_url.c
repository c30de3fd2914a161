/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SIP002 ss:// URLs (ss_url_parse), raw. The input is the
 * URL's text. One that parses formats back to a URL that parses to the same
 * fields, and its plugin, if any, is a plain program name with options free
 * of control bytes (checked here apart from the parser's own predicate,
 * which must agree with this check on every input); one that does not leaves
 * the result wiped and an error of one line that names no password. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/url.h"

static void check_same(const ss_url_t *a, const ss_url_t *b)
{
	FZ_CHECK(strcmp(a->method, b->method) == 0);
	FZ_CHECK(strcmp(a->password, b->password) == 0);
	FZ_CHECK(strcmp(a->host, b->host) == 0);
	FZ_CHECK(a->port == b->port);
	FZ_CHECK(strcmp(a->plugin, b->plugin) == 0);
	FZ_CHECK(strcmp(a->plugin_opts, b->plugin_opts) == 0);
	FZ_CHECK(strcmp(a->tag, b->tag) == 0);
}

/* A plugin name a URL may give, written apart from ss_url_plugin_name_ok:
 * one file name of these bytes alone, that no shell, path lookup or option
 * parser reads as anything but a name. */
static bool plain_name(const char *name)
{
	static const char ok[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+";
	size_t n = strlen(name);

	return n > 0 && n <= 255 && strspn(name, ok) == n && name[0] != '-' && name[0] != '.';
}

static void check_plugin(const ss_url_t *u)
{
	if (!u->plugin[0]) {
		FZ_CHECK(u->plugin_opts[0] == '\0');
		return;
	}
	FZ_CHECK(plain_name(u->plugin));
	FZ_CHECK(strpbrk(u->plugin, " \t\n/;|&$`()<>*?'\"\\#~=") == NULL);
	for (const char *o = u->plugin_opts; *o; o++)
		FZ_CHECK((unsigned char)*o >= 0x20 && *o != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ss_url_t u, back;
	static char text[16384], out[16384];
	char err[256];

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	FZ_CHECK(ss_url_plugin_name_ok(text) == plain_name(text));
	if (ss_url_parse(text, &u, err, sizeof(err)) != 0) {
		FZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		FZ_CHECK(fz_all_zero((const uint8_t *)&u, sizeof(u)));
		return 0;
	}
	FZ_CHECK(err[0] == '\0');
	FZ_CHECK(u.method[0] != '\0' && u.host[0] != '\0' && u.port != 0);
	check_plugin(&u);
	/* The password never shows in an error about anything else. */
	if (strlen(u.password) >= 4 && ss_url_parse("ss://x", &back, err, sizeof(err)) != 0)
		FZ_CHECK(strstr(err, u.password) == NULL);
	if (ss_url_format(&u, out, sizeof(out)) == 0)
		return 0; /* too long to write back */
	FZ_CHECK(ss_url_parse(out, &back, err, sizeof(err)) == 0);
	check_same(&u, &back);
	return 0;
}
