/* SPDX-License-Identifier: MIT */
/* TCP socket set-up: loopback detection, connects that finish inside the
 * call, and refusals reported at once. Everything runs over loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"

static struct sockaddr_storage sa_of(const char *text, uint16_t port)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
	}
	return ss;
}

static socklen_t len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void test_is_loopback(void **state)
{
	static const char *yes[] = {"127.0.0.1", "127.255.254.1",    "127.0.0.0",
				    "::1",       "::ffff:127.0.0.1", "::ffff:127.9.8.7"};
	static const char *no[] = {"10.0.0.1",        "128.0.0.1", "126.255.255.255",
				   "0.0.0.0",         "::",        "::2",
				   "::ffff:10.0.0.1", "fe80::1",   "::127.0.0.1"};
	(void)state;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		struct sockaddr_storage ss = sa_of(yes[i], 80);
		if (!ss_sockaddr_is_loopback((struct sockaddr *)&ss))
			fail_msg("%s is loopback", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		struct sockaddr_storage ss = sa_of(no[i], 80);
		if (ss_sockaddr_is_loopback((struct sockaddr *)&ss))
			fail_msg("%s is not loopback", no[i]);
	}
	struct sockaddr_storage un = {.ss_family = AF_UNIX};
	assert_false(ss_sockaddr_is_loopback((struct sockaddr *)&un));
}

/* A listener on an ephemeral loopback port; *addr gets its address. */
static int listener(const char *host, const ss_sockopts_t *o, struct sockaddr_storage *addr)
{
	struct sockaddr_storage ss = sa_of(host, 0);
	socklen_t len = sizeof(*addr);
	int fd = ss_sock_listen_tcp((struct sockaddr *)&ss, len_of(&ss), o);

	assert_true(fd >= 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	return fd;
}

static void test_loopback_connect_done(void **state)
{
	static const char *hosts[] = {"127.0.0.1", "::1"};
	(void)state;

	for (size_t h = 0; h < 2; h++) {
		struct sockaddr_storage a;
		int l = listener(hosts[h], NULL, &a);
		for (int i = 0; i < 50; i++) {
			bool done = false;
			int fd =
			    ss_sock_connect_tcp((struct sockaddr *)&a, len_of(&a), NULL, &done);
			assert_true(fd >= 0);
			assert_true(done);
			/* Established: writable with no error, and the peer
			 * gets the bytes. */
			assert_int_equal(send(fd, "x", 1, MSG_NOSIGNAL), 1);
			int c = accept(l, NULL, NULL);
			assert_true(c >= 0);
			char b = 0;
			assert_int_equal(recv(c, &b, 1, 0), 1);
			assert_int_equal(b, 'x');
			close(c);
			close(fd);
		}
		close(l);
	}
}

static void test_loopback_refusal_at_once(void **state)
{
	struct sockaddr_storage a;
	int l = listener("127.0.0.1", NULL, &a);
	bool done = true;
	(void)state;

	close(l); /* nobody listens there now */
	int fd = ss_sock_connect_tcp((struct sockaddr *)&a, len_of(&a), NULL, &done);
	assert_int_equal(fd, -ECONNREFUSED);
	assert_false(done);
}

static void test_fast_open_waits(void **state)
{
	/* Fast open sends the SYN with the first write, so the connect has
	 * not happened yet: the caller must wait for writability. */
	ss_sockopts_t o = {.fast_open = true};
	struct sockaddr_storage a;
	int l = listener("127.0.0.1", NULL, &a);
	bool done = true;
	(void)state;

	int fd = ss_sock_connect_tcp((struct sockaddr *)&a, len_of(&a), &o, &done);
	assert_true(fd >= 0);
	assert_false(done);
	close(fd);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_is_loopback),
	    cmocka_unit_test(test_loopback_connect_done),
	    cmocka_unit_test(test_loopback_refusal_at_once),
	    cmocka_unit_test(test_fast_open_waits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
