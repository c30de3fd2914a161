/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_TESTUTIL_H
#define SS_TESTS_TESTUTIL_H

/* Helpers shared by the cmocka tests; include after <cmocka.h>. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto/backends.h"
#include "crypto/cpu.h"
#include "crypto/primitives.h"
#include "util/result.h"

/* The exit status ctest counts as a skip (SKIP_RETURN_CODE in
 * tests/CMakeLists.txt): for a test that cannot run here. */
#define SS_TEST_SKIPPED 77

/* Whether this CPU has every feature of want (SS_CPU_* bits) for what; if
 * not, says which it lacks. SS_TEST_HIDE_CPU, space-separated feature names
 * as ss_cpu_names gives them, makes the tests (only) take those as missing,
 * to check that a test then reports itself skipped. */
static inline bool cpu_runs(unsigned want, const char *what)
{
	const char *hide = getenv("SS_TEST_HIDE_CPU");
	unsigned lack = want & ~ss_cpu_features();
	char names[256];

	for (unsigned bit = 1; bit != 0 && hide != NULL; bit <<= 1) {
		size_t n;

		if (!(want & bit))
			continue;
		ss_cpu_names(bit, names, sizeof(names));
		n = strlen(names);
		for (const char *p = strstr(hide, names); n && p; p = strstr(p + 1, names))
			if ((p == hide || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
				lack |= bit;
	}
	if (!lack)
		return true;
	printf("skipped %s: the CPU lacks %s%s\n", what, ss_cpu_names(lack, names, sizeof(names)),
	       lack & ss_cpu_features() ? " (some hidden by SS_TEST_HIDE_CPU)" : "");
	return false;
}

/* A template for mkstemp(3)/mkdtemp(3) naming name in $TMPDIR (else /tmp):
 * the trailing XXXXXX is what those calls replace with a unique suffix. */
static inline void tmp_template(char *out, size_t len, const char *name)
{
	const char *dir = getenv("TMPDIR");

	snprintf(out, len, "%s/%s.XXXXXX", dir && dir[0] ? dir : "/tmp", name);
}

/* Writes text to dir/name; returns the path, in one of 8 static slots
 * used in turn (so a few stay valid at once). */
static inline const char *tmp_write(const char *dir, const char *name, const char *text)
{
	static char paths[8][512];
	static int slot;
	char *p = paths[slot++ % 8];

	snprintf(p, 512, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	return p;
}

/* Every crypto backend table this build has, under the name the tests use
 * (crypto/backends.h), and how many there are. */
#define backends ss_crypto_backends
#define NB SS_ARRAY_LEN(backends)

/* Whether the n bytes at p are all zero. */
static inline bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Hex text to bytes; returns the byte count. Fails the test on bad hex. */
static inline size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = strlen(hex) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

/* Whether /proc/cpuinfo's first "flags" line lists every one of need. */
static inline bool cpu_has_flags(const char *const *need, size_t n)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		char *nl = strchr(line, '\n');

		found = true;
		if (nl) /* so that every flag is followed by a space */
			*nl = ' ';
		for (size_t i = 0; i < n; i++) {
			char word[40];

			snprintf(word, sizeof(word), " %s ", need[i]);
			if (!strstr(line, word)) {
				fclose(f);
				return false;
			}
		}
		break;
	}
	fclose(f);
	return found;
}

/* A port free on 127.0.0.1 a moment ago. */
static inline int free_loopback_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

#endif
