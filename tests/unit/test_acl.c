/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/acl.h"
#include "testutil.h"

static char err[512];

static ss_acl_t *parse_ok(const char *text)
{
	ss_acl_t *acl = NULL;
	int rc = ss_acl_parse(&acl, text, strlen(text), "acl.txt", err, sizeof(err));

	if (rc != 0)
		fail_msg("unexpected error %d: %s", rc, err);
	assert_non_null(acl);
	return acl;
}

static void parse_err(const char *text, const char *want)
{
	ss_acl_t *acl = (ss_acl_t *)1;

	assert_int_equal(ss_acl_parse(&acl, text, strlen(text), "acl.txt", err, sizeof(err)),
			 -EINVAL);
	assert_null(acl);
	if (strcmp(err, want) != 0)
		fail_msg("error \"%s\", want \"%s\"", err, want);
}

static ss_acl_decision_t addr(const ss_acl_t *acl, const char *ip)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
	return ss_acl_match_addr(acl, (struct sockaddr *)&ss);
}

static bool blocked_addr(const ss_acl_t *acl, const char *ip)
{
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;

	if (strchr(ip, ':')) {
		memset(&s6, 0, sizeof(s6));
		s6.sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, ip, &s6.sin6_addr), 1);
		return ss_acl_outbound_blocked_addr(acl, (struct sockaddr *)&s6);
	}
	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, ip, &s4.sin_addr), 1);
	return ss_acl_outbound_blocked_addr(acl, (struct sockaddr *)&s4);
}

#define BYP SS_ACL_BYPASS
#define PRX SS_ACL_PROXY
#define UND SS_ACL_UNDECIDED

/* ---- parser ---- */

static void test_sections_and_aliases(void **state)
{
	(void)state;
	static const struct {
		const char *header;
		ss_acl_decision_t want;
	} lists[] = {
	    {"[bypass_list]", BYP},
	    {"[black_list]", BYP},
	    {"[proxy_list]", PRX},
	    {"[white_list]", PRX},
	};
	char text[256];

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		snprintf(text, sizeof(text),
			 "%s\n10.0.0.0/8\n|exact.test\n||tree.test\nre\\.test$\n", lists[i].header);
		ss_acl_t *acl = parse_ok(text);
		assert_int_equal(addr(acl, "10.1.2.3"), lists[i].want);
		assert_int_equal(ss_acl_match_host(acl, "exact.test"), lists[i].want);
		assert_int_equal(ss_acl_match_host(acl, "a.tree.test"), lists[i].want);
		assert_int_equal(ss_acl_match_host(acl, "x.re.test"), lists[i].want);
		assert_int_equal(ss_acl_match_host(acl, "other.test"), UND);
		assert_false(ss_acl_outbound_blocked_host(acl, "exact.test"));
		assert_false(blocked_addr(acl, "10.1.2.3"));
		assert_int_equal(ss_acl_default(acl), PRX);
		ss_acl_free(acl);
	}

	static const struct {
		const char *header;
		ss_acl_decision_t mode;
	} modes[] = {
	    {"[proxy_all]", PRX},
	    {"[accept_all]", PRX},
	    {"[bypass_all]", BYP},
	    {"[reject_all]", BYP},
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(text, sizeof(text), "%s\n", modes[i].header);
		ss_acl_t *acl = parse_ok(text);
		assert_int_equal(ss_acl_default(acl), modes[i].mode);
		assert_int_equal(ss_acl_resolve(acl, UND), modes[i].mode);
		assert_int_equal(ss_acl_resolve(acl, BYP), BYP);
		assert_int_equal(ss_acl_resolve(acl, PRX), PRX);
		ss_acl_free(acl);
	}

	ss_acl_t *acl = parse_ok("[outbound_block_list]\n10.0.0.0/8\n||blocked.test\n");
	assert_true(blocked_addr(acl, "10.9.9.9"));
	assert_true(ss_acl_outbound_blocked_host(acl, "x.blocked.test"));
	assert_int_equal(addr(acl, "10.9.9.9"), UND);
	assert_int_equal(ss_acl_match_host(acl, "x.blocked.test"), UND);
	ss_acl_free(acl);
}

static void test_empty_and_default(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("");
	ss_acl_stats_t st;

	assert_int_equal(ss_acl_default(acl), PRX);
	assert_int_equal(ss_acl_match_host(acl, "example.com"), UND);
	assert_int_equal(ss_acl_match_host(acl, ""), UND);
	assert_int_equal(ss_acl_match_host(acl, NULL), UND);
	assert_int_equal(addr(acl, "1.2.3.4"), UND);
	assert_int_equal(addr(acl, "::1"), UND);
	ss_acl_stats(acl, &st);
	assert_int_equal(st.bypass.ipv4 + st.proxy.ipv4 + st.block.ipv4, 0);
	ss_acl_free(acl);
	ss_acl_free(NULL);
}

static void test_before_any_section_is_bypass(void **state)
{
	(void)state;
	/* libev starts with the black (bypass) list as the current list, and a
	 * mode header does not change it. */
	ss_acl_t *acl = parse_ok("192.168.0.0/16\n[bypass_all]\n||lan.test\n[proxy_list]\n"
				 "8.8.8.8\n[proxy_all]\n||after-mode.test\n");
	ss_acl_stats_t st;

	assert_int_equal(addr(acl, "192.168.1.1"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "lan.test"), BYP);
	assert_int_equal(addr(acl, "8.8.8.8"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "after-mode.test"), PRX);
	assert_int_equal(ss_acl_default(acl), PRX); /* the last mode header wins */
	ss_acl_stats(acl, &st);
	assert_int_equal(st.bypass.ipv4, 1);
	assert_int_equal(st.bypass.domains, 1);
	assert_int_equal(st.proxy.ipv4, 1);
	assert_int_equal(st.proxy.domains, 1);
	ss_acl_free(acl);
}

static void test_comments_blank_crlf(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("# comment\r\n\r\n   \t\r\n  # indented comment\r\n"
				 "[proxy_list]\r\n  10.0.0.0/8  \r\n|exact.test\r\n"
				 "||tree.test.\r\n^re\\.test$\r\n\r\n[bypass_all]\r\n1.2.3.4");
	ss_acl_stats_t st;

	assert_int_equal(ss_acl_default(acl), BYP);
	assert_int_equal(addr(acl, "10.255.255.255"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "exact.test"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "a.tree.test"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "re.test"), PRX); /* CR not part of the regex */
	assert_int_equal(addr(acl, "1.2.3.4"), PRX);              /* last line, no newline */
	ss_acl_stats(acl, &st);
	assert_int_equal(st.proxy.ipv4, 2);
	assert_int_equal(st.proxy.domains, 2);
	assert_int_equal(st.proxy.regexes, 1);
	assert_int_equal(st.bypass.regexes, 0);
	ss_acl_free(acl);
}

static void test_rule_kinds_counted(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("[bypass_list]\n1.2.3.4\n1.2.0.0/16\n::1\n2001:db8::/32\n"
				 "::ffff:10.0.0.0/104\n|a.test\n||b.test\n.*\\.c\\.test$\n"
				 "[outbound_block_list]\n9.9.9.9\n(^|\\.)d\\.test$\n");
	ss_acl_stats_t st;

	ss_acl_stats(acl, &st);
	assert_int_equal(st.bypass.ipv4, 2);
	assert_int_equal(st.bypass.ipv6, 3);
	assert_int_equal(st.bypass.domains, 2);
	assert_int_equal(st.bypass.regexes, 1);
	assert_int_equal(st.block.ipv4, 1);
	assert_int_equal(st.block.regexes, 1);
	assert_int_equal(st.proxy.ipv4 + st.proxy.ipv6 + st.proxy.domains + st.proxy.regexes, 0);
	/* The mapped prefix lands in the IPv4 table. */
	assert_int_equal(addr(acl, "10.1.1.1"), BYP);
	assert_int_equal(addr(acl, "::ffff:10.1.1.1"), BYP);
	ss_acl_free(acl);
}

/* The text is a length, not a C string: nothing past it is read (ASan
 * checks this on a heap copy of exactly that size). */
static void test_unterminated_text(void **state)
{
	(void)state;
	static const char *const texts[] = {"10.0.0.0/8",   "2001:db8::/32", "||a.test",    "a",
					    "[proxy_list]", "10.0.0.0/",     "10.0.0.0/333"};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t n = strlen(texts[i]);
		char *copy = malloc(n);
		ss_acl_t *acl = NULL;
		assert_non_null(copy);
		memcpy(copy, texts[i], n);
		int rc = ss_acl_parse(&acl, copy, n, "acl.txt", err, sizeof(err));
		assert_int_equal(rc, i < 5 ? 0 : -EINVAL);
		ss_acl_free(acl);
		free(copy);
	}
}

static void test_errors(void **state)
{
	(void)state;
	parse_err("# ok\n\n[proxy_list]\n10.0.0.0/33\n",
		  "acl.txt:4: invalid CIDR '10.0.0.0/33' (prefix length over 32)");
	parse_err("2001:db8::/129",
		  "acl.txt:1: invalid CIDR '2001:db8::/129' (prefix length over 128)");
	parse_err("a\nb\n(\n", "acl.txt:3: invalid regular expression '(': missing closing "
			       "parenthesis at offset 1");
	parse_err("ok\n[foo]\n", "acl.txt:2: unknown section '[foo]'");
	parse_err("[Proxy_List]\n", "acl.txt:1: unknown section '[Proxy_List]'");
	parse_err("10.0.0.0/\n",
		  "acl.txt:1: invalid CIDR '10.0.0.0/' (prefix length is not a number)");
	parse_err("10.0.0.0/x\n",
		  "acl.txt:1: invalid CIDR '10.0.0.0/x' (prefix length is not a number)");
	parse_err("10.0.0.0/-1\n",
		  "acl.txt:1: invalid CIDR '10.0.0.0/-1' (prefix length is not a number)");
	parse_err("10.0.0.0/0008\n",
		  "acl.txt:1: invalid CIDR '10.0.0.0/0008' (prefix length is not a number)");
	parse_err("10.0.0.256/8\n", "acl.txt:1: invalid CIDR '10.0.0.256/8' (bad address)");
	parse_err("10.0.0.256\n", "acl.txt:1: invalid IPv4 address '10.0.0.256' (bad address)");
	parse_err("2001:db8:::1/64\n", "acl.txt:1: invalid CIDR '2001:db8:::1/64' (bad address)");
	parse_err("\r\n\r\n||\r\n", "acl.txt:3: invalid domain rule '||' (empty name)");
	parse_err("|.\n", "acl.txt:1: invalid domain rule '|.' (empty name)");
	parse_err("||a..b\n", "acl.txt:1: invalid domain rule '||a..b' (empty label)");
	parse_err("||.a\n", "acl.txt:1: invalid domain rule '||.a' (empty label)");
	parse_err(
	    "|a b.test\n",
	    "acl.txt:1: invalid domain rule '|a b.test' (character not allowed in a host name)");
	parse_err(
	    "|||a.test\n",
	    "acl.txt:1: invalid domain rule '|||a.test' (character not allowed in a host name)");

	char line[400];
	memset(line, 'a', 66);
	memcpy(line, "||", 2);
	strcpy(line + 66, ".test");
	char want[512];
	snprintf(want, sizeof(want),
		 "acl.txt:1: invalid domain rule '%s' (label longer than 63 characters)", line);
	parse_err(line, want);

	memcpy(line, "||", 2);
	for (int i = 0; i < 64; i++)
		memcpy(line + 2 + i * 4, "abc.", 4);
	strcpy(line + 2 + 64 * 4, "x");
	snprintf(want, sizeof(want),
		 "acl.txt:1: invalid domain rule '%s' (name longer than 253 characters)", line);
	parse_err(line, want);

	static const char nul[] = "ok\nbad\0line\n";
	ss_acl_t *acl = (ss_acl_t *)1;
	assert_int_equal(ss_acl_parse(&acl, nul, sizeof(nul) - 1, "x.acl", err, sizeof(err)),
			 -EINVAL);
	assert_null(acl);
	assert_string_equal(err, "x.acl:2: line contains a NUL byte");

	/* A short buffer truncates, never overflows; a zero-length one is untouched. */
	char small[12];
	assert_int_equal(ss_acl_parse(&acl, "[foo]", 5, "acl.txt", small, sizeof(small)), -EINVAL);
	assert_string_equal(small, "acl.txt:1: ");
	assert_int_equal(ss_acl_parse(&acl, "[foo]", 5, "acl.txt", NULL, 0), -EINVAL);
}

static void test_load_file(void **state)
{
	(void)state;
	char path[128];
	tmp_template(path, sizeof(path), "ss_acl_test");
	int fd = mkstemp(path);
	ss_acl_t *acl = NULL;
	const char *text = "[bypass_all]\n[proxy_list]\n||example.com\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(ss_acl_load(&acl, path, err, sizeof(err)), 0);
	assert_int_equal(ss_acl_default(acl), BYP);
	assert_int_equal(ss_acl_match_host(acl, "www.example.com"), PRX);
	ss_acl_free(acl);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ok\n(\n", 5), 5);
	close(fd);
	assert_int_equal(ss_acl_load(&acl, path, err, sizeof(err)), -EINVAL);
	assert_null(acl);
	char want[256];
	snprintf(want, sizeof(want),
		 "%s:2: invalid regular expression '(': missing closing parenthesis at offset 1",
		 path);
	assert_string_equal(err, want);
	unlink(path);

	assert_int_equal(ss_acl_load(&acl, path, err, sizeof(err)), -ENOENT);
	assert_null(acl);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);

	/* An empty file is a valid, empty ACL. */
	assert_int_equal(ss_acl_load(&acl, "/dev/null", err, sizeof(err)), 0);
	assert_int_equal(ss_acl_default(acl), PRX);
	ss_acl_free(acl);
}

/* ---- matching ---- */

static void test_cidr_edges_v4(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("10.0.0.0/8\n192.0.2.7\n198.51.100.77/24\n"
				 "[proxy_list]\n172.16.0.0/12\n");

	assert_int_equal(addr(acl, "10.0.0.0"), BYP);
	assert_int_equal(addr(acl, "10.255.255.255"), BYP);
	assert_int_equal(addr(acl, "9.255.255.255"), UND);
	assert_int_equal(addr(acl, "11.0.0.0"), UND);
	assert_int_equal(addr(acl, "192.0.2.7"), BYP); /* bare address = /32 */
	assert_int_equal(addr(acl, "192.0.2.6"), UND);
	assert_int_equal(addr(acl, "192.0.2.8"), UND);
	/* Host bits in the rule are ignored. */
	assert_int_equal(addr(acl, "198.51.100.0"), BYP);
	assert_int_equal(addr(acl, "198.51.100.255"), BYP);
	assert_int_equal(addr(acl, "198.51.101.0"), UND);
	assert_int_equal(addr(acl, "172.16.0.0"), PRX);
	assert_int_equal(addr(acl, "172.31.255.255"), PRX);
	assert_int_equal(addr(acl, "172.32.0.0"), UND);
	assert_int_equal(addr(acl, "172.15.255.255"), UND);
	/* IPv4-mapped IPv6 is looked up as IPv4, as text and as sockaddr. */
	assert_int_equal(addr(acl, "::ffff:10.1.2.3"), BYP);
	assert_int_equal(addr(acl, "::ffff:172.20.0.1"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "::ffff:10.1.2.3"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "10.1.2.3"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "[::ffff:172.20.0.1]"), PRX);
	/* Not mapped: ::10.1.2.3 is a plain IPv6 address. */
	assert_int_equal(addr(acl, "::10.1.2.3"), UND);
	ss_acl_free(acl);

	acl = parse_ok("0.0.0.0/0\n");
	assert_int_equal(addr(acl, "0.0.0.0"), BYP);
	assert_int_equal(addr(acl, "255.255.255.255"), BYP);
	assert_int_equal(addr(acl, "::1"), UND); /* IPv4 /0 says nothing of IPv6 */
	ss_acl_free(acl);

	acl = parse_ok("255.255.255.255/32\n0.0.0.0/32\n");
	assert_int_equal(addr(acl, "255.255.255.255"), BYP);
	assert_int_equal(addr(acl, "255.255.255.254"), UND);
	assert_int_equal(addr(acl, "0.0.0.0"), BYP);
	assert_int_equal(addr(acl, "0.0.0.1"), UND);
	ss_acl_free(acl);
}

static void test_cidr_edges_v6(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("2001:db8::/32\n2001:db8:1::5\nfe80::/10\n"
				 "[proxy_list]\n2001:db9:8000::/33\n::/128\n");

	assert_int_equal(addr(acl, "2001:db8::"), BYP);
	assert_int_equal(addr(acl, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"), BYP);
	assert_int_equal(addr(acl, "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff"), UND);
	assert_int_equal(addr(acl, "2001:db9::"), UND);
	assert_int_equal(addr(acl, "fe80::1"), BYP);
	assert_int_equal(addr(acl, "febf:ffff::1"), BYP);
	assert_int_equal(addr(acl, "fec0::"), UND);
	assert_int_equal(addr(acl, "2001:db9:8000::"), PRX);
	assert_int_equal(addr(acl, "2001:db9:ffff:ffff:ffff:ffff:ffff:ffff"), PRX);
	assert_int_equal(addr(acl, "2001:db9:7fff:ffff:ffff:ffff:ffff:ffff"), UND);
	assert_int_equal(addr(acl, "::"), PRX);
	assert_int_equal(addr(acl, "::1"), UND);
	assert_int_equal(ss_acl_match_host(acl, "[2001:db8::1]"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "2001:db8::1"), BYP);
	ss_acl_free(acl);

	/* /128 at both ends of the space, a prefix crossing the 64-bit halves,
	 * and /0. */
	acl = parse_ok("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128\n"
		       "2001:db8:0:0:8000::/65\n[proxy_list]\n::/0\n");
	assert_int_equal(addr(acl, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), BYP);
	assert_int_equal(addr(acl, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), PRX);
	assert_int_equal(addr(acl, "2001:db8::8000:0:0:0"), BYP);
	assert_int_equal(addr(acl, "2001:db8::ffff:ffff:ffff:ffff"), BYP);
	assert_int_equal(addr(acl, "2001:db8::7fff:ffff:ffff:ffff"), PRX);
	assert_int_equal(addr(acl, "::"), PRX);
	assert_int_equal(addr(acl, "1.2.3.4"), UND); /* IPv6 /0 says nothing of IPv4 */
	ss_acl_free(acl);
}

static void test_overlapping_ranges_merge(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("10.0.0.0/24\n10.0.1.0/24\n10.0.0.128/25\n10.0.0.0/16\n"
				 "10.2.0.0/16\n10.1.255.255\n255.255.255.0/24\n255.0.0.0/8\n"
				 "2001:db8::/64\n2001:db8:0:1::/64\n2001:db8::/48\n");

	assert_int_equal(addr(acl, "10.0.200.1"), BYP);
	assert_int_equal(addr(acl, "10.1.0.0"), UND);
	assert_int_equal(addr(acl, "10.1.255.254"), UND);
	assert_int_equal(addr(acl, "10.1.255.255"), BYP);
	assert_int_equal(addr(acl, "10.2.255.255"), BYP);
	assert_int_equal(addr(acl, "10.3.0.0"), UND);
	assert_int_equal(addr(acl, "255.1.2.3"), BYP);
	assert_int_equal(addr(acl, "254.255.255.255"), UND);
	assert_int_equal(addr(acl, "2001:db8:0:ffff::1"), BYP);
	assert_int_equal(addr(acl, "2001:db8:1::"), UND);
	ss_acl_free(acl);
}

static void test_sockaddr_other_family(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("0.0.0.0/0\n::/0\n[outbound_block_list]\n0.0.0.0/0\n");
	struct sockaddr sa = {.sa_family = AF_UNIX};

	assert_int_equal(ss_acl_match_addr(acl, &sa), UND);
	assert_int_equal(ss_acl_match_addr(acl, NULL), UND);
	assert_false(ss_acl_outbound_blocked_addr(acl, &sa));
	assert_false(ss_acl_outbound_blocked_addr(acl, NULL));
	ss_acl_free(acl);
}

static void test_regex_rules(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("[proxy_list]\n(^|\\.)google\\.com$\ntwitter\n"
				 "[bypass_list]\n^(.*\\.)?cn$\n");

	assert_int_equal(ss_acl_match_host(acl, "google.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "www.google.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "notgoogle.com"), UND);
	assert_int_equal(ss_acl_match_host(acl, "google.com.evil"), UND);
	/* Unanchored, as libev matches: "twitter" anywhere in the name. */
	assert_int_equal(ss_acl_match_host(acl, "api.twitter.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "mytwitterclone.net"), PRX);
	/* Case-sensitive, as libev. */
	assert_int_equal(ss_acl_match_host(acl, "WWW.GOOGLE.COM"), UND);
	assert_int_equal(ss_acl_match_host(acl, "baidu.cn"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "cn"), BYP);
	/* Bypass wins when both lists match. */
	assert_int_equal(ss_acl_match_host(acl, "twitter.cn"), BYP);
	/* Regexes never see IP literals: those go to the address tables. */
	ss_acl_free(acl);

	acl = parse_ok("[proxy_list]\n\\d+\n");
	assert_int_equal(ss_acl_match_host(acl, "1.2.3.4"), UND);
	assert_int_equal(ss_acl_match_host(acl, "host1.test"), PRX);
	ss_acl_free(acl);
}

/* A view answers as the ACL it shows, with a match block of its own, and
 * goes without taking the rules with it. */
static void test_view(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("[bypass_all]\n[proxy_list]\n(^|\\.)google\\.com$\n"
				 "||example.com\n10.0.0.0/8\n[outbound_block_list]\n"
				 "192.0.2.1\n");
	ss_acl_t *v = ss_acl_view(acl);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a010203)};

	assert_non_null(v);
	assert_int_equal(ss_acl_default(v), BYP);
	assert_int_equal(ss_acl_match_host(v, "www.google.com"), PRX);
	assert_int_equal(ss_acl_match_host(v, "a.example.com"), PRX);
	assert_int_equal(ss_acl_match_host(v, "example.org"), UND);
	assert_int_equal(ss_acl_match_addr(v, (struct sockaddr *)&a), PRX);
	assert_true(ss_acl_outbound_blocked_host(v, "192.0.2.1"));
	ss_acl_free(v);
	/* The rules stay, for the ACL and another view. */
	assert_int_equal(ss_acl_match_host(acl, "www.google.com"), PRX);
	v = ss_acl_view(acl);
	assert_int_equal(ss_acl_match_host(v, "google.com"), PRX);
	ss_acl_free(v);
	ss_acl_free(acl);
}

static void test_domain_rules(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("[proxy_list]\n||Example.COM\n|exact.test.\n"
				 "[bypass_list]\n||cn\n|www.example.com\n");

	assert_int_equal(ss_acl_match_host(acl, "example.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "a.example.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "a.b.example.com"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "A.B.EXAMPLE.COM"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "example.com."), PRX);
	assert_int_equal(ss_acl_match_host(acl, "a.example.com."), PRX);
	assert_int_equal(ss_acl_match_host(acl, "badexample.com"), UND);
	assert_int_equal(ss_acl_match_host(acl, "example.com.evil"), UND);
	assert_int_equal(ss_acl_match_host(acl, "xample.com"), UND);
	assert_int_equal(ss_acl_match_host(acl, "com"), UND);
	/* The exact bypass entry wins over the proxied parent. */
	assert_int_equal(ss_acl_match_host(acl, "www.example.com"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "WWW.Example.Com."), BYP);
	assert_int_equal(ss_acl_match_host(acl, "a.www.example.com"), PRX);

	assert_int_equal(ss_acl_match_host(acl, "exact.test"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "EXACT.TEST."), PRX);
	assert_int_equal(ss_acl_match_host(acl, "a.exact.test"), UND);
	assert_int_equal(ss_acl_match_host(acl, "exact.tes"), UND);
	assert_int_equal(ss_acl_match_host(acl, "xexact.test"), UND);

	assert_int_equal(ss_acl_match_host(acl, "cn"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "baidu.cn"), BYP);
	assert_int_equal(ss_acl_match_host(acl, "baidu.cnn"), UND);
	assert_int_equal(ss_acl_match_host(acl, "."), UND);
	assert_int_equal(ss_acl_match_host(acl, ".."), UND);

	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(ss_acl_match_host(acl, longname), UND);
	ss_acl_free(acl);
}

static void test_host_rules_before_address(void **state)
{
	(void)state;
	/* A host rule decides; an address rule is asked only when none matched,
	 * so the caller resolves, asks by address, then takes the default. */
	ss_acl_t *acl = parse_ok("[bypass_all]\n[bypass_list]\n10.0.0.0/8\n"
				 "[proxy_list]\n||proxied.test\n10.1.0.0/16\n");

	assert_int_equal(ss_acl_match_host(acl, "proxied.test"), PRX);
	assert_int_equal(ss_acl_match_host(acl, "other.test"), UND);
	/* 10.1.x.x is in both lists: bypass wins, as in libev. */
	assert_int_equal(addr(acl, "10.1.2.3"), BYP);
	assert_int_equal(addr(acl, "11.0.0.1"), UND);
	assert_int_equal(ss_acl_resolve(acl, addr(acl, "11.0.0.1")), BYP);
	ss_acl_free(acl);
}

static void test_match_target(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("10.0.0.0/8\n2001:db8::/32\n[proxy_list]\n||example.com\n");
	ss_addr_t a;

	assert_int_equal(ss_addr_from_host(&a, "10.2.3.4", 80), 0);
	assert_int_equal(ss_acl_match_target(acl, &a), BYP);
	assert_int_equal(ss_addr_from_host(&a, "2001:db8::5", 80), 0);
	assert_int_equal(ss_acl_match_target(acl, &a), BYP);
	assert_int_equal(ss_addr_from_host(&a, "www.example.com", 443), 0);
	assert_int_equal(ss_acl_match_target(acl, &a), PRX);
	assert_int_equal(ss_addr_from_host(&a, "other.test", 443), 0);
	assert_int_equal(ss_acl_match_target(acl, &a), UND);
	/* An IPv4-mapped IPv6 target is IPv4. */
	memset(&a, 0, sizeof(a));
	a.atyp = SS_ATYP_IPV6;
	inet_pton(AF_INET6, "::ffff:10.9.8.7", a.v6);
	assert_int_equal(ss_acl_match_target(acl, &a), BYP);
	a.atyp = 99;
	assert_int_equal(ss_acl_match_target(acl, &a), UND);
	ss_acl_free(acl);
}

static void test_outbound_block(void **state)
{
	(void)state;
	ss_acl_t *acl = parse_ok("[reject_all]\n[white_list]\n127.0.0.1\n"
				 "[outbound_block_list]\n127.0.0.0/8\n::1\n169.254.0.0/16\n"
				 "|metadata.internal\n||corp.test\n^admin\\.\n");

	assert_int_equal(ss_acl_default(acl), BYP);
	assert_int_equal(addr(acl, "127.0.0.1"), PRX); /* accepted client */
	assert_true(blocked_addr(acl, "127.0.0.1"));
	assert_true(blocked_addr(acl, "127.255.255.255"));
	assert_true(blocked_addr(acl, "::ffff:127.0.0.2"));
	assert_true(blocked_addr(acl, "::1"));
	assert_true(blocked_addr(acl, "169.254.169.254"));
	assert_false(blocked_addr(acl, "128.0.0.0"));
	assert_false(blocked_addr(acl, "::2"));
	assert_true(ss_acl_outbound_blocked_host(acl, "metadata.internal"));
	assert_true(ss_acl_outbound_blocked_host(acl, "METADATA.internal."));
	assert_false(ss_acl_outbound_blocked_host(acl, "x.metadata.internal"));
	assert_true(ss_acl_outbound_blocked_host(acl, "a.corp.test"));
	assert_false(ss_acl_outbound_blocked_host(acl, "acorp.test"));
	assert_true(ss_acl_outbound_blocked_host(acl, "admin.example"));
	assert_false(ss_acl_outbound_blocked_host(acl, "myadmin.example"));
	assert_true(ss_acl_outbound_blocked_host(acl, "127.0.0.1"));
	assert_true(ss_acl_outbound_blocked_host(acl, "[::1]"));
	assert_false(ss_acl_outbound_blocked_host(acl, "8.8.8.8"));
	assert_false(ss_acl_outbound_blocked_host(acl, ""));
	assert_false(ss_acl_outbound_blocked_host(acl, NULL));
	/* The block list does not feed proxy/bypass decisions. */
	assert_int_equal(ss_acl_match_host(acl, "a.corp.test"), UND);
	assert_int_equal(addr(acl, "169.254.1.1"), UND);
	ss_acl_free(acl);
}

static void test_large_lists(void **state)
{
	(void)state;
	const int n = 10000;
	size_t cap = (size_t)n * 2 * 48 + 128, len = 0;
	char *text = malloc(cap);
	ss_acl_t *acl;
	ss_acl_stats_t st;

	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "[bypass_list]\n");
	/* 10,000 disjoint /24s spread over the space, every other one skipped. */
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%d.%d.%d.0/24\n", 1 + i / 128,
					(i % 128) * 2, 7);
	len += (size_t)snprintf(text + len, cap - len, "[proxy_list]\n");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%sdomain%05d.test\n",
					i % 2 ? "|" : "||", i);
	assert_true(len < cap);

	assert_int_equal(ss_acl_parse(&acl, text, len, "big.acl", err, sizeof(err)), 0);
	ss_acl_stats(acl, &st);
	assert_int_equal(st.bypass.ipv4, n);
	assert_int_equal(st.proxy.domains, n);
	for (int i = 0; i < n; i++) {
		char ip[32], host[64];
		snprintf(ip, sizeof(ip), "%d.%d.%d.%d", 1 + i / 128, (i % 128) * 2, 7, i % 256);
		assert_int_equal(addr(acl, ip), BYP);
		snprintf(ip, sizeof(ip), "%d.%d.%d.%d", 1 + i / 128, (i % 128) * 2 + 1, 7, i % 256);
		assert_int_equal(addr(acl, ip), UND);
		snprintf(ip, sizeof(ip), "%d.%d.%d.%d", 1 + i / 128, (i % 128) * 2, 8, 0);
		assert_int_equal(addr(acl, ip), UND);

		snprintf(host, sizeof(host), "domain%05d.test", i);
		assert_int_equal(ss_acl_match_host(acl, host), PRX);
		snprintf(host, sizeof(host), "sub.DOMAIN%05d.test", i);
		assert_int_equal(ss_acl_match_host(acl, host), i % 2 ? UND : PRX);
		snprintf(host, sizeof(host), "xdomain%05d.test", i);
		assert_int_equal(ss_acl_match_host(acl, host), UND);
	}
	assert_int_equal(ss_acl_match_host(acl, "domain10000.test"), UND);
	ss_acl_free(acl);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sections_and_aliases),
	    cmocka_unit_test(test_empty_and_default),
	    cmocka_unit_test(test_before_any_section_is_bypass),
	    cmocka_unit_test(test_comments_blank_crlf),
	    cmocka_unit_test(test_rule_kinds_counted),
	    cmocka_unit_test(test_unterminated_text),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_cidr_edges_v4),
	    cmocka_unit_test(test_cidr_edges_v6),
	    cmocka_unit_test(test_overlapping_ranges_merge),
	    cmocka_unit_test(test_sockaddr_other_family),
	    cmocka_unit_test(test_regex_rules),
	    cmocka_unit_test(test_view),
	    cmocka_unit_test(test_domain_rules),
	    cmocka_unit_test(test_host_rules_before_address),
	    cmocka_unit_test(test_match_target),
	    cmocka_unit_test(test_outbound_block),
	    cmocka_unit_test(test_large_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
