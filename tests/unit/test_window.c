/* SPDX-License-Identifier: MIT */
/* Sliding window replay filter for 2022 UDP packet ids. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/window.h"

static void test_basic(void **state)
{
	ss_window_t w;
	(void)state;

	ss_window_reset(&w);
	/* Packet ids start at 0. */
	assert_true(ss_window_check(&w, 0));
	/* Checking alone changes nothing. */
	assert_true(ss_window_check(&w, 0));
	ss_window_commit(&w, 0);
	assert_false(ss_window_check(&w, 0));
	assert_true(ss_window_check(&w, 1));
	/* Out of order, each once. */
	ss_window_commit(&w, 5);
	assert_true(ss_window_check(&w, 3));
	ss_window_commit(&w, 3);
	assert_false(ss_window_check(&w, 3));
	assert_false(ss_window_check(&w, 5));
	assert_true(ss_window_check(&w, 1));
	assert_true(ss_window_check(&w, 2));
	assert_true(ss_window_check(&w, 4));
	assert_true(ss_window_check(&w, 6));
}

static void test_edges(void **state)
{
	ss_window_t w;
	const uint64_t top = 5000;
	(void)state;

	ss_window_reset(&w);
	ss_window_commit(&w, top);
	/* The oldest acceptable id is SS_WINDOW_SIZE - 1 below the newest. */
	assert_true(ss_window_check(&w, top - (SS_WINDOW_SIZE - 1)));
	assert_false(ss_window_check(&w, top - SS_WINDOW_SIZE));
	assert_false(ss_window_check(&w, 0));
	/* Every id of the window once, then none again. */
	for (uint64_t id = top - (SS_WINDOW_SIZE - 1); id < top; id++) {
		assert_true(ss_window_check(&w, id));
		ss_window_commit(&w, id);
	}
	for (uint64_t id = top - (SS_WINDOW_SIZE + 100); id <= top; id++)
		assert_false(ss_window_check(&w, id));
	/* Committing a too-old id changes nothing: its bit would be the one of
	 * an id 2048 newer, inside the window and not received yet. */
	ss_window_reset(&w);
	ss_window_commit(&w, top);
	ss_window_commit(&w, top - 2048 - 10);
	assert_true(ss_window_check(&w, top - 10));
	ss_window_commit(&w, top - 10);
	assert_false(ss_window_check(&w, top - 10));

	/* A jump past the whole window: nothing older but inside the new window
	 * may look seen. */
	ss_window_commit(&w, top + 100000);
	for (uint64_t id = top + 100000 - (SS_WINDOW_SIZE - 1); id < top + 100000; id++)
		assert_true(ss_window_check(&w, id));
	assert_false(ss_window_check(&w, top + 100000));

	/* Near the top of the id space. */
	ss_window_reset(&w);
	ss_window_commit(&w, UINT64_MAX - 1);
	assert_true(ss_window_check(&w, UINT64_MAX));
	ss_window_commit(&w, UINT64_MAX);
	assert_false(ss_window_check(&w, UINT64_MAX));
	assert_false(ss_window_check(&w, UINT64_MAX - 1));
	assert_true(ss_window_check(&w, UINT64_MAX - 2));
	assert_false(ss_window_check(&w, UINT64_MAX - SS_WINDOW_SIZE));
}

/* Against a model that remembers every committed id. */
static void test_model(void **state)
{
	enum { SPAN = 1 << 16, OPS = 300000 };
	uint8_t *seen = calloc(SPAN, 1);
	uint64_t last = 0;
	bool any = false;
	unsigned seed = 7;
	ss_window_t w;
	(void)state;

	assert_non_null(seen);
	ss_window_reset(&w);
	for (int op = 0; op < OPS; op++) {
		uint64_t id;
		bool want, got;

		seed = seed * 1103515245u + 12345u;
		/* Mostly near the newest id, sometimes ahead, rarely far ahead. */
		switch ((seed >> 16) % 16) {
		case 0:
			id = last + 1 + (seed >> 4) % 3000;
			break;
		case 1:
			id = last + (seed >> 4) % 4;
			break;
		default:
			id = last - (last < 2500 ? last : (seed >> 4) % 2500);
			break;
		}
		if (id >= SPAN)
			break;
		want = !(any && id <= last && (last - id >= SS_WINDOW_SIZE || seen[id]));
		if (!any)
			want = true;
		got = ss_window_check(&w, id);
		if (got != want)
			fail_msg("op %d id %llu last %llu: got %d want %d", op,
				 (unsigned long long)id, (unsigned long long)last, got, want);
		if (got && (seed >> 3) % 8 != 0) {
			/* Most accepted packets validate and are committed. */
			ss_window_commit(&w, id);
			seen[id] = 1;
			if (!any || id > last)
				last = id;
			any = true;
		}
	}
	free(seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
