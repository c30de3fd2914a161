/* SPDX-License-Identifier: MIT */
/* ss-local's front ends, their static functions included; before cmocka,
 * whose fail() macro would take their hook's name. */
#include "relay/hs_http.c"
#include "relay/hs_local.c"
#include "relay/hs_socks4.c"
#include "relay/hs_socks5.c"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

/* A connection as far as the front ends' state and the inbound buffer go. */
static ss_conn_t *conn_new(void)
{
	ss_conn_t *c = aligned_alloc(64, sizeof(ss_conn_t));

	assert_non_null(c);
	memset(c, 0, sizeof(*c));
	c->dir[SS_IN].buf = calloc(1, SS_LEASE_SIZE);
	assert_non_null(c->dir[SS_IN].buf);
	return c;
}

static void conn_free(ss_conn_t *c)
{
	free(c->dir[SS_IN].buf);
	free(c);
}

static void test_first_byte_chooses(void **state)
{
	ss_conn_t *c = conn_new();
	(void)state;

	for (unsigned b = 0; b < 256; b++) {
		const char *want = "socks5";
		if (b == 4)
			want = "socks4";
		if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'))
			want = "http";
		memset(c->hs, 0, sizeof(c->hs));
		local_choose(c, (uint8_t)b);
		assert_string_equal(local_front(c)->name, want);
		assert_string_equal(c->action, want);
	}
	conn_free(c);
}

static void test_connect_errors(void **state)
{
	(void)state;
	assert_int_equal(local_fail_for(ECONNREFUSED), SS_LOCAL_REFUSED);
	assert_int_equal(local_fail_for(ENETUNREACH), SS_LOCAL_NET_UNREACHABLE);
	assert_int_equal(local_fail_for(EHOSTUNREACH), SS_LOCAL_HOST_UNREACHABLE);
	assert_int_equal(local_fail_for(EHOSTDOWN), SS_LOCAL_HOST_UNREACHABLE);
	assert_int_equal(local_fail_for(ETIMEDOUT), SS_LOCAL_TIMED_OUT);
	assert_int_equal(local_fail_for(EACCES), SS_LOCAL_FAILED);

	assert_int_equal(socks5_rep_for(SS_LOCAL_FAILED), SS_SOCKS5_REP_GENERAL_FAILURE);
	assert_int_equal(socks5_rep_for(SS_LOCAL_NOT_ALLOWED), SS_SOCKS5_REP_NOT_ALLOWED);
	assert_int_equal(socks5_rep_for(SS_LOCAL_UNSUPPORTED), SS_SOCKS5_REP_COMMAND_NOT_SUPPORTED);
	assert_int_equal(socks5_rep_for(SS_LOCAL_REFUSED), SS_SOCKS5_REP_CONNECTION_REFUSED);
	assert_int_equal(socks5_rep_for(SS_LOCAL_NET_UNREACHABLE),
			 SS_SOCKS5_REP_NETWORK_UNREACHABLE);
	assert_int_equal(socks5_rep_for(SS_LOCAL_HOST_UNREACHABLE), SS_SOCKS5_REP_HOST_UNREACHABLE);
	assert_int_equal(socks5_rep_for(SS_LOCAL_TIMED_OUT), SS_SOCKS5_REP_TTL_EXPIRED);

	assert_int_equal(http_status_for(SS_LOCAL_FAILED), 502);
	assert_int_equal(http_status_for(SS_LOCAL_NOT_ALLOWED), 403);
	assert_int_equal(http_status_for(SS_LOCAL_UNSUPPORTED), 501);
	assert_int_equal(http_status_for(SS_LOCAL_REFUSED), 502);
	assert_int_equal(http_status_for(SS_LOCAL_NET_UNREACHABLE), 502);
	assert_int_equal(http_status_for(SS_LOCAL_HOST_UNREACHABLE), 502);
	assert_int_equal(http_status_for(SS_LOCAL_TIMED_OUT), 504);
}

/* The request at msg starts the stream: its body's framing is followed. */
static void start_request(ss_conn_t *c, const uint8_t *msg, size_t len)
{
	ss_http_req_t req;
	size_t body = 99;

	assert_int_equal(ss_http_parse_request(msg, len, &req), SS_OK);
	assert_int_equal(http_body_start(c, &req, msg + req.head_len, 0, &body), SS_OK);
	assert_int_equal(body, 0);
	c->filter = http_filters;
}

static void test_request_filter_keeps_the_next_start(void **state)
{
	ss_conn_t *c = conn_new();
	const ss_pump_filter_t *f = &http_filters[SS_IN];
	uint8_t data[] = "hel";
	uint8_t more[] = "loGET /";
	size_t keep = 99;
	(void)state;

	start_request(c, S("POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"));
	assert_int_equal(f->next(c, SS_IN), SS_FILTER_KEEP);
	assert_int_equal(f->data(c, SS_IN, data, 3, &keep), SS_FILTER_KEEP);
	assert_false(f->keeps(c, SS_IN));
	assert_int_equal(f->data(c, SS_IN, more, 7, &keep), SS_FILTER_END);
	assert_int_equal(keep, 2);
	/* The next request's start waits in the handshake area. */
	assert_true(f->keeps(c, SS_IN));
	assert_int_equal(ss_local_hs(c)->fill, 5);
	assert_memory_equal(c->dir[SS_IN].buf + SS_HS_OFF, "GET /", 5);
	/* ... and goes on through the lead area once what waits there is out. */
	c->dir[SS_IN].lead = 1;
	assert_int_equal(f->next(c, SS_IN), SS_FILTER_END);
	assert_false(f->idle(c, SS_IN));
	conn_free(c);
}

static void test_request_filter_drops_after_close(void **state)
{
	ss_conn_t *c = conn_new();
	const ss_pump_filter_t *f = &http_filters[SS_IN];
	uint8_t data[] = "abcmore";
	size_t keep = 99;
	(void)state;

	start_request(c, S("PUT http://h/ HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"
			   "Content-Length: 3\r\n\r\n"));
	assert_int_equal(f->data(c, SS_IN, data, 7, &keep), SS_FILTER_END);
	assert_int_equal(keep, 3);
	assert_false(f->keeps(c, SS_IN));
	/* The stream is over: whatever comes is dropped. */
	keep = 99;
	assert_int_equal(f->data(c, SS_IN, data, 7, &keep), SS_FILTER_END);
	assert_int_equal(keep, 0);
	assert_int_equal(f->next(c, SS_IN), SS_FILTER_KEEP);
	conn_free(c);
}

static void test_request_filter_refuses_bad_chunks(void **state)
{
	ss_conn_t *c = conn_new();
	const ss_pump_filter_t *f = &http_filters[SS_IN];
	uint8_t data[] = "zz\r\n";
	size_t keep = 99;
	(void)state;

	start_request(c, S("POST http://h/ HTTP/1.1\r\nHost: h\r\n"
			   "Transfer-Encoding: chunked\r\n\r\n"));
	assert_int_equal(f->data(c, SS_IN, data, 4, &keep), SS_FILTER_ERR);
	conn_free(c);
}

static void test_answer_filter_ends_with_the_answers(void **state)
{
	ss_conn_t *c = conn_new();
	const ss_pump_filter_t *f = &http_filters[SS_OUT];
	http_hs_t *h = http_hs(c);
	uint8_t answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA";
	size_t n = sizeof(answer) - 1, keep = 99;
	(void)state;

	c->filter = http_filters;
	ss_http_resp_init(&h->resp);
	assert_true(ss_http_resp_expect(&h->resp, false));
	assert_int_equal(f->next(c, SS_OUT), SS_FILTER_KEEP);
	assert_int_equal(f->data(c, SS_OUT, answer, 10, &keep), SS_FILTER_KEEP);
	assert_int_equal(f->data(c, SS_OUT, answer + 10, n - 10, &keep), SS_FILTER_END);
	assert_int_equal(keep, n - 10 - 5);
	assert_false(f->keeps(c, SS_OUT));
	/* Nothing is held: the answers' direction only pumps. */
	assert_false(f->idle(c, SS_OUT));
	conn_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_byte_chooses),
	    cmocka_unit_test(test_connect_errors),
	    cmocka_unit_test(test_request_filter_keeps_the_next_start),
	    cmocka_unit_test(test_request_filter_drops_after_close),
	    cmocka_unit_test(test_request_filter_refuses_bad_chunks),
	    cmocka_unit_test(test_answer_filter_ends_with_the_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
