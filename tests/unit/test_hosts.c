#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "net/hosts.h"

static const char *addr_text(const ss_hosts_entry_t *e, char *buf, size_t len)
{
	if (e->addr.ss_family == AF_INET)
		return inet_ntop(AF_INET, &((const struct sockaddr_in *)&e->addr)->sin_addr, buf,
				 (socklen_t)len);
	return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&e->addr)->sin6_addr, buf,
			 (socklen_t)len);
}

static void test_parse_and_find(void **state)
{
	static const char text[] = "# comment line\n"
				   "127.0.0.1\tlocalhost  box.example box\n"
				   "::1 localhost ip6-localhost # trailing comment\n"
				   "\n"
				   "   10.1.2.3 Internal.Example.\r\n"
				   "not-an-address ignored\n"
				   "192.0.2.7\n"
				   "2001:db8::5 v6only";
	ss_hosts_t h;
	char buf[64];
	(void)state;

	assert_int_equal(ss_hosts_parse(&h, text, sizeof(text) - 1, 100), 0);
	assert_int_equal(h.n, 7);
	assert_string_equal(addr_text(ss_hosts_find(&h, "localhost", false), buf, sizeof(buf)),
			    "127.0.0.1");
	assert_string_equal(addr_text(ss_hosts_find(&h, "localhost", true), buf, sizeof(buf)),
			    "::1");
	assert_string_equal(addr_text(ss_hosts_find(&h, "BOX", false), buf, sizeof(buf)),
			    "127.0.0.1");
	/* Case and one trailing dot on either side do not matter. */
	assert_string_equal(
	    addr_text(ss_hosts_find(&h, "internal.example", false), buf, sizeof(buf)), "10.1.2.3");
	assert_non_null(ss_hosts_find(&h, "Internal.Example.", false));
	/* Only an IPv6 address: it is the answer either way. */
	assert_string_equal(addr_text(ss_hosts_find(&h, "v6only", false), buf, sizeof(buf)),
			    "2001:db8::5");
	assert_null(ss_hosts_find(&h, "ignored", false));
	assert_null(ss_hosts_find(&h, "box.example.com", false));
	assert_null(ss_hosts_find(&h, "", false));
	ss_hosts_free(&h);
}

static void test_limits(void **state)
{
	char name[300];
	char text[400];
	ss_hosts_t h;
	(void)state;

	/* Names over 255 bytes are skipped; entries past max are dropped. */
	memset(name, 'a', 256);
	name[256] = '\0';
	snprintf(text, sizeof(text), "10.0.0.1 %s short\n10.0.0.2 other\n", name);
	assert_int_equal(ss_hosts_parse(&h, text, strlen(text), 1), 0);
	assert_int_equal(h.n, 1);
	assert_non_null(ss_hosts_find(&h, "short", false));
	assert_null(ss_hosts_find(&h, "other", false));
	ss_hosts_free(&h);

	assert_int_equal(ss_hosts_load(&h, "/nonexistent/hosts", 10), 0);
	assert_int_equal(h.n, 0);
	ss_hosts_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_and_find),
	    cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
