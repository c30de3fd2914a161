/* SPDX-License-Identifier: MIT */
/* SIP002 ss:// URLs: the specification's examples, IPv6, the older
 * whole-base64 form, round trips through ss_url_format, and refusals that
 * name the part that is wrong and never the password. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/primitives.h"
#include "proto/url.h"

static ss_url_t u;
static char err[256];

static void parse_ok(const char *text)
{
	if (ss_url_parse(text, &u, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	assert_string_equal(err, "");
}

/* The examples of SIP002. */
static void test_spec_examples(void **state)
{
	(void)state;
	parse_ok("ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1");
	assert_string_equal(u.method, "aes-128-gcm");
	assert_string_equal(u.password, "test");
	assert_string_equal(u.host, "192.168.100.1");
	assert_int_equal(u.port, 8888);
	assert_string_equal(u.tag, "Example1");
	assert_string_equal(u.plugin, "");

	parse_ok("ss://cmM0LW1kNTpwYXNzd2Q@192.168.100.1:8888/?plugin=obfs-local%3Bobfs%3Dhttp"
		 "#Example2");
	assert_string_equal(u.method, "rc4-md5");
	assert_string_equal(u.password, "passwd");
	assert_string_equal(u.plugin, "obfs-local");
	assert_string_equal(u.plugin_opts, "obfs=http");
	assert_string_equal(u.tag, "Example2");

	parse_ok("ss://2022-blake3-aes-256-gcm:YctPZ6U7xPPcU%2Bgp3u%2B0tx%2FtRizJN9K8y%2BuKlW2qjlI%"
		 "3D@192.168.100.1:8888#Example3");
	assert_string_equal(u.method, "2022-blake3-aes-256-gcm");
	assert_string_equal(u.password, "YctPZ6U7xPPcU+gp3u+0tx/tRizJN9K8y+uKlW2qjlI=");
	assert_int_equal(u.port, 8888);
}

static void test_forms(void **state)
{
	(void)state;
	/* IPv6 in brackets; a name; padding on the base64; no tag, no slash. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA==@[2001:db8::1]:443");
	assert_string_equal(u.host, "2001:db8::1");
	assert_int_equal(u.port, 443);
	assert_string_equal(u.password, "p");
	parse_ok("SS://YWVzLTI1Ni1nY206cA@server.example:8388/");
	assert_string_equal(u.host, "server.example");
	/* Plain userinfo for an AEAD method, with an escaped colon in the
	 * password (only the first colon splits). */
	parse_ok("ss://aes-256-gcm:a%3Ab%40c@h:1");
	assert_string_equal(u.password, "a:b@c");
	/* The older form: all of method:password@host:port in base64. */
	parse_ok("ss://YWVzLTI1Ni1nY206c2VjcmV0QDEyNy4wLjAuMTo4Mzg4#old");
	assert_string_equal(u.method, "aes-256-gcm");
	assert_string_equal(u.password, "secret");
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 8388);
	assert_string_equal(u.tag, "old");
	/* Other query parameters are ignored; the plugin without options. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1?x=1&plugin=v2ray-plugin&y");
	assert_string_equal(u.plugin, "v2ray-plugin");
	assert_string_equal(u.plugin_opts, "");
	/* A tag with escapes. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1#My%20Server%20%231");
	assert_string_equal(u.tag, "My Server #1");
}

static void refused(const char *text, const char *part)
{
	memset(&u, 0x55, sizeof(u));
	if (ss_url_parse(text, &u, err, sizeof(err)) == 0)
		fail_msg("accepted: %s", text);
	if (!strstr(err, part))
		fail_msg("%s: '%s' does not name %s", text, err, part);
	assert_non_null(strstr(err, "ss:// URL: "));
	/* Nothing of a secret stays behind, nor reaches the message. */
	assert_null(strstr(err, "hunter2"));
	for (size_t i = 0; i < sizeof(u.password); i++)
		assert_int_equal(u.password[i], 0);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("http://YWVzLTI1Ni1nY206aHVudGVyMg@h:1", "ss://");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h", "port");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h:0", "port");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h:65536", "port");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h:8x", "port");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@:8388", "host");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@2001:db8::1:8388", "host");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@[2001:db8::1:8388", "IPv6");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@[nope]:8388", "IPv6");
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h:1/path", "path");
	refused("ss://%%%@h:1", "userinfo");
	refused("ss://aes-256-gcm:hunter2%2@h:1", "userinfo");
	refused("ss://bm8tY29sb24taGVyZQ@h:1", "method:password"); /* "no-colon-here" */
	refused("ss://Omh1bnRlcjI@h:1", "method");                 /* ":hunter2" */
	refused("ss://aes-256-gcm:hunter2@h:1?plugin=a&plugin=b", "plugin");
	refused("ss://aes-256-gcm:hunter2@h:1?plugin=%3Bx", "\"plugin\" parameter");
	refused("ss://aes-256-gcm:hunter2@h:1#bad%zz", "tag");
	refused("ss://aes-256-gcm:hunter2%00@h:1", "userinfo");
	refused("ss://nothing-at-all", "userinfo@");
	/* What an error quotes stays on one line. */
	refused("ss://YWVzLTI1Ni1nY206aHVudGVyMg@h:1\n2", "port");
	assert_null(strchr(err, '\n'));
}

/* A URL is text anyone may have written: its plugin must be a program's
 * name, nothing a shell or a path lookup would read otherwise. Each of
 * these is refused, quoting the name as given (control bytes as '?'). */
static void test_plugin_not_a_name(void **state)
{
	static const struct {
		const char *param; /* the plugin parameter, percent-encoded */
		const char *shown; /* how the message quotes the name */
	} bad[] = {
	    {"touch%20pwned%20%23", "touch pwned #"},
	    {"touch%20pwned%20%23%3Bobfs%3Dhttp", "touch pwned #"},
	    /* ';' ends the name (SIP003): "a;b" is the plugin a with the option
	     * b, and b goes nowhere but SS_PLUGIN_OPTIONS. */
	    {"a%3Bb", NULL},
	    {"a;b", NULL},
	    {"%24(touch%20x)", "$(touch x)"},
	    {"$(touch x)", "$(touch x)"},
	    {"%60touch%20x%60", "`touch x`"},
	    {"a%7Cb", "a|b"},
	    {"a%26b", "a&b"},
	    {"a%3Eb", "a>b"},
	    {"a%3Cb", "a<b"},
	    {"a%0Ab", "a?b"},
	    {"a%0Db", "a?b"},
	    {"a%09b", "a?b"},
	    {"a%20b", "a b"},
	    {"a%2Ab", "a*b"},
	    {"a%3Fb", "a?b"},
	    {"a%27b", "a'b"},
	    {"a%22b", "a\"b"},
	    {"a%5Cb", "a\\b"},
	    {"a%7Eb", "a~b"},
	    {"a%3Db", "a=b"},
	    {"FOO%3D1%20obfs-local", "FOO=1 obfs-local"},
	    {"..%2Fbin%2Fsh", "../bin/sh"},
	    {"../bin/sh", "../bin/sh"},
	    {"%2Fbin%2Fsh", "/bin/sh"},
	    {"%2Ftmp%2Fx%3Bopt", "/tmp/x"},
	    {".%2Fx", "./x"},
	    {"obfs-local%2F", "obfs-local/"},
	    {"-x", "-x"},
	    {"--help", "--help"},
	    {".", "."},
	    {"..", ".."},
	    {".hidden", ".hidden"},
	    {"%3Bobfs%3Dhttp", ""}, /* an empty name, with options */
	    {"%3B", ""},
	    {"%C3%A9", "??"}, /* not ASCII */
	    {"%1B%5B31m", "?[31m"},
	};
	char text[512], want[256];

	(void)state;
	refused("ss://YWVzLTI1Ni1nY206cA@host:8388/?plugin=touch%20pwned%20%23",
		"the plugin in the URL's \"plugin\" parameter is not a plain program name: "
		"`touch pwned #'");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "ss://aes-256-gcm:hunter2@h:1/?plugin=%s#t",
			 bad[i].param);
		if (!bad[i].shown) {
			parse_ok(text);
			assert_string_equal(u.plugin, "a");
			assert_string_equal(u.plugin_opts, "b");
			continue;
		}
		snprintf(want, sizeof(want), "not a plain program name: `%s'", bad[i].shown);
		refused(text, want);
		assert_null(strchr(err, '\n'));
		assert_null(strchr(err, '\033'));
	}
	/* Longer than a file name can be; the message quotes the start. */
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(text, sizeof(text), "ss://aes-256-gcm:hunter2@h:1/?plugin=%s", name);
	refused(text, "`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
	name[SS_URL_PLUGIN_NAME_MAX] = '\0';
	snprintf(text, sizeof(text), "ss://aes-256-gcm:hunter2@h:1/?plugin=%s", name);
	parse_ok(text);
	assert_int_equal(strlen(u.plugin), SS_URL_PLUGIN_NAME_MAX);
}

/* Plain names are taken as they are; the options are data for
 * SS_PLUGIN_OPTIONS, shell syntax included, but never a control byte. */
static void test_plugin_names_and_options(void **state)
{
	static const char *const good[] = {
	    "obfs-local", "v2ray-plugin", "ss-v2ray-plugin", "kcptun_client", "a.b+c", "x",
	    "0",          "A-Z_0.9+",     "xray-plugin",     "gost-plugin",
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=%s", good[i]);
		parse_ok(text);
		assert_string_equal(u.plugin, good[i]);
		assert_true(ss_url_plugin_name_ok(good[i]));
	}
	/* Percent-encoded letters of a plain name are that name. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=obfs%2Dlocal%2Bx");
	assert_string_equal(u.plugin, "obfs-local+x");
	/* Options with shell syntax stay text, byte for byte. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=obfs-local%3Bobfs%3Dhttp%3B%24(touch%20x)%3B"
		 "%60id%60%7Ca%26b%3Ec%20'q'%22d%22%5C");
	assert_string_equal(u.plugin, "obfs-local");
	assert_string_equal(u.plugin_opts, "obfs=http;$(touch x);`id`|a&b>c 'q'\"d\"\\");
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=v2ray-plugin%3B");
	assert_string_equal(u.plugin_opts, "");
	/* An empty plugin= is no plugin, as before. */
	parse_ok("ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=");
	assert_string_equal(u.plugin, "");
	refused("ss://aes-256-gcm:hunter2@h:1/?plugin=obfs-local%3Bobfs%3Dhttp%0Ax",
		"the plugin options in the URL's \"plugin\" parameter have a control character "
		"(0x0a at byte 9): `obfs=http?x'");
	refused("ss://aes-256-gcm:hunter2@h:1/?plugin=obfs-local%3Ba%0Db", "(0x0d at byte 1)");
	refused("ss://aes-256-gcm:hunter2@h:1/?plugin=obfs-local%3Ba%09b", "(0x09 at byte 1)");
	refused("ss://aes-256-gcm:hunter2@h:1/?plugin=obfs-local%3Ba%7F", "(0x7f at byte 1)");
	refused("ss://aes-256-gcm:hunter2@h:1/?plugin=obfs-local%3Ba%00b", "badly encoded");
	/* The predicate alone, as the plugin launcher uses it. */
	assert_false(ss_url_plugin_name_ok(""));
	assert_false(ss_url_plugin_name_ok("/bin/sh"));
	assert_false(ss_url_plugin_name_ok("sh -c x"));
	assert_false(ss_url_plugin_name_ok("-"));
	assert_false(ss_url_plugin_name_ok("a\nb"));
	assert_false(ss_url_plugin_name_ok("a;b"));
	assert_false(ss_url_plugin_name_ok("a\tb"));
	assert_false(ss_url_plugin_name_ok("$(x)"));
	assert_false(ss_url_plugin_name_ok("../x"));
}

static void roundtrip(const char *method, const char *password, const char *host,
		      const char *plugin, const char *opts, const char *tag)
{
	ss_url_t a = {0};
	char text[8192];

	snprintf(a.method, sizeof(a.method), "%s", method);
	snprintf(a.password, sizeof(a.password), "%s", password);
	snprintf(a.host, sizeof(a.host), "%s", host);
	a.port = 8388;
	snprintf(a.plugin, sizeof(a.plugin), "%s", plugin);
	snprintf(a.plugin_opts, sizeof(a.plugin_opts), "%s", opts);
	snprintf(a.tag, sizeof(a.tag), "%s", tag);
	assert_true(ss_url_format(&a, text, sizeof(text)) > 0);
	parse_ok(text);
	assert_string_equal(u.method, a.method);
	assert_string_equal(u.password, a.password);
	assert_string_equal(u.host, a.host);
	assert_int_equal(u.port, a.port);
	assert_string_equal(u.plugin, a.plugin);
	assert_string_equal(u.plugin_opts, a.plugin_opts);
	assert_string_equal(u.tag, a.tag);
	/* 2022 methods keep the userinfo readable; others use base64. */
	if (strncmp(method, "2022-", 5) == 0)
		assert_non_null(strstr(text, method));
	else
		assert_null(strstr(text, method));
	/* Too small a buffer: nothing, and nothing of the secret left. */
	assert_int_equal(ss_url_format(&a, text, 20), 0);
	for (size_t i = 0; i < 20; i++)
		assert_int_equal(text[i], 0);
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip("aes-256-gcm", "p@ss:w/rd?#", "example.com", "", "", "");
	roundtrip("chacha20-ietf-poly1305", "x", "::1", "obfs-local", "obfs=tls;obfs-host=a.b",
		  "home server");
	roundtrip("2022-blake3-aes-128-gcm",
		  "AQIDBAUGBwgJCgsMDQ4PEA==:ERITFBUWFxgZGhscHR4fIA==", "192.0.2.1",
		  "ss-v2ray-plugin", "", "#1");
	roundtrip("none", "", "h", "", "", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spec_examples),
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_plugin_not_a_name),
	    cmocka_unit_test(test_plugin_names_and_options),
	    cmocka_unit_test(test_roundtrip),
	};

	if (ss_crypto_global_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
