/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "util/ratelog.h"

/* What the summaries said, one "who=more" per line. */
typedef struct said {
	char text[8192];
	int lines;
} said_t;

static void emit(void *arg, const char *who, uint64_t more)
{
	said_t *s = arg;
	size_t used = strlen(s->text);

	snprintf(s->text + used, sizeof(s->text) - used, "%s=%llu\n", who,
		 (unsigned long long)more);
	s->lines++;
}

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	sin6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	return ss;
}

#define SA(x) ((const struct sockaddr *)&(x))

static void test_first_logged_rest_summed(void **state)
{
	static ss_ratelog_t r;
	said_t s = {0};
	struct sockaddr_storage a = v4("192.0.2.1", 1000), a2 = v4("192.0.2.1", 2000);
	struct sockaddr_storage mapped = v6("::ffff:192.0.2.1");
	(void)state;

	ss_ratelog_init(&r, 60);
	assert_true(ss_ratelog_note(&r, SA(a), 100));
	/* Another port, or the same address as IPv4-mapped IPv6: one source. */
	assert_false(ss_ratelog_note(&r, SA(a2), 110));
	assert_false(ss_ratelog_note(&r, SA(mapped), 120));
	assert_true(ss_ratelog_flush(&r, 159, emit, &s) == 160);
	assert_int_equal(s.lines, 0);
	assert_true(ss_ratelog_flush(&r, 160, emit, &s) == 220);
	assert_string_equal(s.text, "192.0.2.1=2\n");
	/* Nothing in the next interval: forgotten, and a new refusal is
	 * logged at once. */
	assert_true(ss_ratelog_flush(&r, 220, emit, &s) == 0);
	assert_int_equal(s.lines, 1);
	assert_true(ss_ratelog_note(&r, SA(a), 300));
}

static void test_quiet_interval_not_yet_flushed(void **state)
{
	static ss_ratelog_t r;
	struct sockaddr_storage a = v6("2001:db8::1");
	said_t s = {0};
	(void)state;

	ss_ratelog_init(&r, 10);
	assert_true(ss_ratelog_note(&r, SA(a), 0));
	/* The interval ended with nothing counted: a line of its own. */
	assert_true(ss_ratelog_note(&r, SA(a), 15));
	assert_false(ss_ratelog_note(&r, SA(a), 16));
	assert_true(ss_ratelog_flush(&r, 25, emit, &s) == 35);
	assert_string_equal(s.text, "2001:db8::1=1\n");
}

static void test_full_table_shares_one_count(void **state)
{
	static ss_ratelog_t r;
	said_t s = {0};
	char ip[32];
	(void)state;

	ss_ratelog_init(&r, 60);
	for (int i = 0; i < SS_RATELOG_SLOTS; i++) {
		snprintf(ip, sizeof(ip), "10.0.%d.%d", i / 250, i % 250 + 1);
		struct sockaddr_storage a = v4(ip, 1);
		assert_true(ss_ratelog_note(&r, SA(a), 1));
	}
	/* A flood from many more sources: counted together, never a line. */
	for (int i = 0; i < 1000; i++) {
		snprintf(ip, sizeof(ip), "198.51.%d.%d", i / 250, i % 250 + 1);
		struct sockaddr_storage a = v4(ip, 1);
		assert_false(ss_ratelog_note(&r, SA(a), 2));
	}
	assert_false(ss_ratelog_note(&r, NULL, 3));
	assert_true(ss_ratelog_flush(&r, 61, emit, &s) == 62);
	assert_int_equal(s.lines, 0); /* the table's entries had nothing more */
	assert_true(ss_ratelog_flush(&r, 62, emit, &s) == 0);
	assert_string_equal(s.text, "other addresses=1001\n");
	/* Room again. */
	struct sockaddr_storage b = v4("203.0.113.9", 1);
	assert_true(ss_ratelog_note(&r, SA(b), 70));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_logged_rest_summed),
	    cmocka_unit_test(test_quiet_interval_not_yet_flushed),
	    cmocka_unit_test(test_full_table_shares_one_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
