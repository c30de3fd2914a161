/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "relay/health.h"

#define HOLD 10.0

static void test_backoff_doubles_to_a_cap_with_jitter(void **state)
{
	double nominal = SS_HEALTH_BACKOFF_BASE;
	(void)state;

	for (unsigned fails = 1; fails < 40; fails++) {
		double lo = ss_health_backoff(fails, 0.0), hi = ss_health_backoff(fails, 0.999999);
		assert_true(lo >= 0.75 * nominal - 1e-9 && lo <= 0.75 * nominal + 1e-9);
		assert_true(hi > 1.2499 * nominal && hi < 1.25 * nominal + 1e-9);
		assert_true(ss_health_backoff(fails, 0.5) > lo &&
			    ss_health_backoff(fails, 0.5) < hi);
		nominal = nominal * 2 > SS_HEALTH_BACKOFF_MAX ? SS_HEALTH_BACKOFF_MAX : nominal * 2;
	}
	assert_true(ss_health_backoff(1000, 0.999999) <= 1.25 * SS_HEALTH_BACKOFF_MAX);
}

static void test_connect_failures(void **state)
{
	ss_health_t h = {0};
	(void)state;

	/* One failed connect is enough. */
	assert_int_equal(ss_health_failed(&h, 100.0, 0.0), SS_HEALTH_WENT_DOWN);
	assert_true(h.down);
	assert_int_equal(h.why, SS_DOWN_CONNECT);
	assert_true(h.retry_at == 100.75);
	/* Connections under way when it went down change nothing... */
	assert_int_equal(ss_health_failed(&h, 100.5, 0.0), SS_HEALTH_SAME);
	assert_true(h.retry_at == 100.75);
	/* ...a failed try once the wait is over doubles it. */
	assert_int_equal(ss_health_failed(&h, 101.0, 0.0), SS_HEALTH_STILL_DOWN);
	assert_int_equal(h.fails, 2);
	assert_true(h.retry_at == 101.0 + 1.5);
	assert_int_equal(ss_health_failed(&h, 103.0, 0.0), SS_HEALTH_STILL_DOWN);
	assert_true(h.retry_at == 103.0 + 3.0);
	/* A connect that succeeds brings it back, with nothing remembered. */
	assert_int_equal(ss_health_connected(&h, 107.0), SS_HEALTH_CAME_UP);
	assert_false(h.down);
	assert_int_equal(h.fails, 0);
	assert_int_equal(ss_health_connected(&h, 108.0), SS_HEALTH_SAME);
	assert_int_equal(ss_health_failed(&h, 109.0, 0.0), SS_HEALTH_WENT_DOWN);
	assert_true(h.retry_at == 109.75);
}

static void test_silent_closes(void **state)
{
	ss_health_t h = {0};
	(void)state;

	/* Strikes in a row; an answer between them starts the count again. */
	for (int i = 1; i < SS_HEALTH_STRIKES; i++)
		assert_int_equal(ss_health_silent(&h, 10.0, 0.0), SS_HEALTH_SAME);
	assert_int_equal(ss_health_answered(&h, 10.0), SS_HEALTH_SAME);
	for (int i = 1; i < SS_HEALTH_STRIKES; i++)
		assert_int_equal(ss_health_silent(&h, 11.0, 0.0), SS_HEALTH_SAME);
	assert_false(h.down);
	assert_int_equal(ss_health_silent(&h, 11.0, 0.0), SS_HEALTH_WENT_DOWN);
	assert_int_equal(h.why, SS_DOWN_SILENT);
	/* A connect is not enough to bring it back: it must answer. */
	assert_int_equal(ss_health_connected(&h, 13.0), SS_HEALTH_SAME);
	assert_true(h.down);
	assert_int_equal(ss_health_silent(&h, 13.0, 0.0), SS_HEALTH_STILL_DOWN);
	assert_int_equal(ss_health_answered(&h, 20.0), SS_HEALTH_CAME_UP);
	assert_false(h.down);
	assert_int_equal(h.strikes, 0);
}

static void test_pick_spreads_by_load(void **state)
{
	ss_health_t h[3] = {0};
	ss_pick_t s[3] = {{&h[0], true, 0}, {&h[1], true, 0}, {&h[2], true, 0}};
	unsigned rr = 0;
	bool trial;
	int seen[3] = {0};
	(void)state;

	/* Equal loads: round-robin. */
	for (int i = 0; i < 30; i++)
		seen[ss_health_pick(s, 3, 0, &rr, 0.0, HOLD, &trial)]++;
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 10);
	assert_int_equal(seen[2], 10);
	assert_false(trial);
	/* The least loaded wins. */
	s[0].load = 5;
	s[1].load = 2;
	s[2].load = 7;
	assert_int_equal(ss_health_pick(s, 3, 0, &rr, 0.0, HOLD, &trial), 1);
	/* Excluded and unusable ones are left out. */
	assert_int_equal(ss_health_pick(s, 3, 1u << 1, &rr, 0.0, HOLD, &trial), 0);
	s[0].usable = false;
	assert_int_equal(ss_health_pick(s, 3, 1u << 1, &rr, 0.0, HOLD, &trial), 2);
	assert_int_equal(ss_health_pick(s, 3, 1u << 1 | 1u << 2, &rr, 0.0, HOLD, &trial), -1);
}

static void test_pick_tries_a_down_server_once_due(void **state)
{
	ss_health_t h[2] = {0};
	ss_pick_t s[2] = {{&h[0], true, 0}, {&h[1], true, 0}};
	unsigned rr = 0;
	bool trial;
	(void)state;

	ss_health_failed(&h[0], 0.0, 0.0); /* down until 0.75 */
	for (int i = 0; i < 5; i++)
		assert_int_equal(ss_health_pick(s, 2, 0, &rr, 0.5, HOLD, &trial), 1);
	/* Due: the next connection tries it, and only that one... */
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 1.0, HOLD, &trial), 0);
	assert_true(trial);
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 1.1, HOLD, &trial), 1);
	assert_false(trial);
	/* ...until the try ends (here: fails, so the wait doubles)... */
	assert_int_equal(ss_health_failed(&h[0], 1.2, 0.0), SS_HEALTH_STILL_DOWN);
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 1.3, HOLD, &trial), 1);
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 2.8, HOLD, &trial), 0);
	assert_true(trial);
	/* ...or is held too long with no outcome. */
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 2.8 + HOLD - 0.1, HOLD, &trial), 1);
	assert_int_equal(ss_health_pick(s, 2, 0, &rr, 2.8 + HOLD + 0.1, HOLD, &trial), 0);
	assert_true(trial);
	/* The connection that tried it fails over to the other one. */
	assert_int_equal(ss_health_pick(s, 2, 1u << 0, &rr, 2.8 + HOLD + 0.1, HOLD, &trial), 1);
}

static void test_pick_with_none_up(void **state)
{
	ss_health_t h[3] = {0};
	ss_pick_t s[3] = {{&h[0], true, 0}, {&h[1], true, 0}, {&h[2], true, 0}};
	unsigned rr = 0;
	bool trial;
	(void)state;

	ss_health_failed(&h[0], 10.0, 0.9);
	ss_health_failed(&h[1], 10.0, 0.1);
	ss_health_failed(&h[2], 10.0, 0.5);
	/* None due: the one due first is tried anyway. */
	assert_int_equal(ss_health_pick(s, 3, 0, &rr, 10.1, HOLD, &trial), 1);
	assert_false(trial);
	assert_int_equal(ss_health_pick(s, 3, 1u << 1, &rr, 10.1, HOLD, &trial), 2);
	assert_int_equal(ss_health_pick(s, 3, 1u << 1 | 1u << 2, &rr, 10.1, HOLD, &trial), 0);
	/* An address change forgets what was learned. */
	ss_health_reset(&h[2]);
	assert_int_equal(ss_health_pick(s, 3, 0, &rr, 10.1, HOLD, &trial), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_backoff_doubles_to_a_cap_with_jitter),
	    cmocka_unit_test(test_connect_failures),
	    cmocka_unit_test(test_silent_closes),
	    cmocka_unit_test(test_pick_spreads_by_load),
	    cmocka_unit_test(test_pick_tries_a_down_server_once_due),
	    cmocka_unit_test(test_pick_with_none_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
