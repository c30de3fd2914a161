/* SPDX-License-Identifier: MIT */
/* The pure parts of UDP in batches (relay/udp_io.h): how many queued
 * datagrams go as one GSO send, how a GRO buffer splits into its
 * datagrams, and reading the GRO segment size from control data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <netinet/udp.h>

#include "relay/udp_io.h"

static size_t run(const size_t *len, size_t n)
{
	return ss_udp_gso_run(len, n, SS_UDP_GSO_SEG_MAX, SS_UDP_GSO_SEGS, SS_UDP_GSO_TOTAL);
}

static void test_gso_equal_run(void **state)
{
	size_t len[20];
	(void)state;

	for (size_t i = 0; i < 20; i++)
		len[i] = 1200;
	assert_int_equal(run(len, 0), 0);
	assert_int_equal(run(len, 1), 1);
	assert_int_equal(run(len, 16), 16);
	/* a different size after the run starts a new one */
	len[5] = 1300;
	assert_int_equal(run(len, 16), 5);
	assert_int_equal(run(len + 5, 11), 2); /* 1300 then a shorter last */
	assert_int_equal(run(len + 6, 10), 10);
}

static void test_gso_shorter_last(void **state)
{
	size_t len[] = {1200, 1200, 1200, 80, 1200, 1200};
	(void)state;

	/* the shorter one ends the run, inside it */
	assert_int_equal(run(len, 6), 4);
	assert_int_equal(run(len + 3, 3), 1); /* 80 then larger: alone */
	assert_int_equal(run(len + 4, 2), 2);
}

static void test_gso_limits(void **state)
{
	size_t len[100];
	(void)state;

	/* too large a segment: a plain send */
	len[0] = len[1] = SS_UDP_GSO_SEG_MAX + 1;
	assert_int_equal(run(len, 2), 1);
	len[0] = len[1] = SS_UDP_GSO_SEG_MAX;
	assert_int_equal(run(len, 2), 2);
	/* empty datagrams never join */
	len[0] = len[1] = 0;
	assert_int_equal(run(len, 2), 1);
	len[0] = 10;
	len[1] = 0;
	assert_int_equal(run(len, 2), 1);
	/* at most SS_UDP_GSO_SEGS segments */
	for (size_t i = 0; i < 100; i++)
		len[i] = 100;
	assert_int_equal(run(len, 100), SS_UDP_GSO_SEGS);
	/* at most SS_UDP_GSO_TOTAL bytes */
	for (size_t i = 0; i < 100; i++)
		len[i] = 1400;
	assert_int_equal(run(len, 100), SS_UDP_GSO_TOTAL / 1400);
	assert_int_equal(ss_udp_gso_run(len, 100, 1472, 64, 1399), 1);
}

static void test_gro_split(void **state)
{
	size_t off, total = 0;
	(void)state;

	/* 16 x 1200 */
	for (size_t i = 0; i < 16; i++) {
		assert_int_equal(ss_udp_gro_segment(19200, 1200, i, &off), 1200);
		assert_int_equal(off, i * 1200);
	}
	assert_int_equal(ss_udp_gro_segment(19200, 1200, 16, &off), 0);
	assert_int_equal(ss_udp_gro_segment(19200, 1200, (size_t)-1, &off), 0);
	/* a shorter last segment */
	for (size_t i = 0, n; (n = ss_udp_gro_segment(3000, 1200, i, &off)) > 0; i++) {
		assert_int_equal(off, total);
		total += n;
	}
	assert_int_equal(total, 3000);
	assert_int_equal(ss_udp_gro_segment(3000, 1200, 2, &off), 600);
	/* no segment size, or one not below the length: one datagram */
	assert_int_equal(ss_udp_gro_segment(500, 0, 0, &off), 500);
	assert_int_equal(off, 0);
	assert_int_equal(ss_udp_gro_segment(500, 0, 1, &off), 0);
	assert_int_equal(ss_udp_gro_segment(500, 500, 0, &off), 500);
	assert_int_equal(ss_udp_gro_segment(500, 9000, 0, &off), 500);
	assert_int_equal(ss_udp_gro_segment(0, 0, 0, &off), 0);
}

static void test_cmsg_gro(void **state)
{
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(int)) * 2];
	} ctl;
	struct msghdr m;
	struct cmsghdr *c;
	int v = 1200;
	(void)state;

	memset(&ctl, 0, sizeof(ctl));
	memset(&m, 0, sizeof(m));
	m.msg_control = ctl.b;
	m.msg_controllen = sizeof(ctl.b);
	/* something else first, then the GRO size */
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	c = CMSG_NXTHDR(&m, c);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_GRO;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	assert_int_equal(ss_udp_cmsg_gro(&m), 1200);
	/* out of range sizes count as none */
	v = 0x10000;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	assert_int_equal(ss_udp_cmsg_gro(&m), 0);
	v = -5;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	assert_int_equal(ss_udp_cmsg_gro(&m), 0);
	/* a header too short for its value is skipped */
	v = 1200;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	c->cmsg_len = CMSG_LEN(2);
	assert_int_equal(ss_udp_cmsg_gro(&m), 0);
	/* none at all */
	m.msg_controllen = 0;
	assert_int_equal(ss_udp_cmsg_gro(&m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gso_equal_run), cmocka_unit_test(test_gso_shorter_last),
	    cmocka_unit_test(test_gso_limits),    cmocka_unit_test(test_gro_split),
	    cmocka_unit_test(test_cmsg_gro),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
