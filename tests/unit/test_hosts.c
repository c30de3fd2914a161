/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/hosts.h"
#include "testutil.h"

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

	/* A line with a NUL byte before its comment is skipped whole: it
	 * would otherwise give a name cut short ("a", or even "") or an
	 * address read only up to it. */
	static const char nul[] = "10.0.0.1 a\0b\n"
				  "10.0.0.2 \0\n"
				  "10.0.0.3\0junk c\n"
				  "10.0.0.4 d # \0\n"
				  "10.0.0.5 e\n";
	assert_int_equal(ss_hosts_parse(&h, nul, sizeof(nul) - 1, 10), 0);
	assert_int_equal(h.n, 2);
	assert_non_null(ss_hosts_find(&h, "d", false));
	assert_non_null(ss_hosts_find(&h, "e", false));
	assert_null(ss_hosts_find(&h, "a", false));
	assert_null(ss_hosts_find(&h, "", false));
	assert_null(ss_hosts_find(&h, "c", false));
	ss_hosts_free(&h);

	assert_int_equal(ss_hosts_load(&h, "/nonexistent/hosts", 10), 0);
	assert_int_equal(h.n, 0);
	ss_hosts_free(&h);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static const char *find_text(const ss_hosts_t *h, const char *name, char *buf, size_t len)
{
	const ss_hosts_entry_t *e = ss_hosts_find(h, name, false);
	return e ? addr_text(e, buf, len) : "-";
}

/* A table follows its file: nothing is reread while the file stays the
 * same; a new size, a new modification time with the same size, a file
 * replaced by rename, removed, or created again, each gives a new table. */
static void test_refresh(void **state)
{
	char dir[256], path[300], tmp[300], buf[64];
	struct timespec times[2];
	ss_hosts_t h;
	(void)state;

	tmp_template(dir, sizeof(dir), "ss_hosts");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/hosts", dir);
	snprintf(tmp, sizeof(tmp), "%s/hosts.new", dir);

	write_file(path, "127.0.0.2 moving.test\n");
	assert_int_equal(ss_hosts_load(&h, path, 100), 0);
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "127.0.0.2");
	assert_false(ss_hosts_refresh(&h, path, 100));

	write_file(path, "127.0.0.30 moving.test\n"); /* longer */
	assert_true(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "127.0.0.30");
	assert_false(ss_hosts_refresh(&h, path, 100));

	write_file(path, "127.0.0.40 moving.test\n"); /* same size: the time tells */
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec += 5;
	times[1] = times[0];
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	assert_true(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "127.0.0.40");

	write_file(tmp, "127.0.0.50 moving.test other.test\n");
	assert_int_equal(rename(tmp, path), 0);
	assert_true(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "other.test", buf, sizeof(buf)), "127.0.0.50");

	assert_int_equal(unlink(path), 0);
	assert_true(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "-");
	assert_false(ss_hosts_refresh(&h, path, 100));

	write_file(path, "::1 moving.test\n");
	assert_true(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "::1");

	/* A file that cannot be read keeps the old table. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_false(ss_hosts_refresh(&h, path, 100));
	assert_false(ss_hosts_refresh(&h, path, 100));
	assert_string_equal(find_text(&h, "moving.test", buf, sizeof(buf)), "::1");

	ss_hosts_free(&h);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_and_find),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
