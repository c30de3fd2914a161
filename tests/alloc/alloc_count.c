/* SPDX-License-Identifier: MIT */
/* An allocation counter to preload (LD_PRELOAD) into a program under test.
 *
 * It forwards malloc, calloc, realloc, free and the aligned allocators to
 * glibc's own entry points and counts every call that allocates. On
 * SIGUSR2 it appends one line to the file named by SS_ALLOC_REPORT:
 * "<allocations so far>\n". A test takes one sample after warm-up and one
 * after the measured traffic; the difference is what that traffic
 * allocated. The handler only calls write(2), so it is safe at any point.
 * Set SS_ALLOC_TRACE=1 to also print a backtrace of every allocation made
 * after the first sample (for finding them; not used by the tests). */

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong allocs;
static atomic_bool sampled;
static int report_fd = -1;
static bool trace;
static __thread bool in_trace;

static void alloc_note(void)
{
	atomic_fetch_add(&allocs, 1);
	if (trace && atomic_load(&sampled) && !in_trace) {
		void *frames[16];
		in_trace = true;
		int n = backtrace(frames, 16);
		backtrace_symbols_fd(frames, n, 2);
		(void)!write(2, "--\n", 3);
		in_trace = false;
	}
}

static void alloc_report(int sig)
{
	char line[32];
	unsigned long v = atomic_load(&allocs);
	int i = (int)sizeof(line);
	(void)sig;

	line[--i] = '\n';
	do
		line[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (report_fd >= 0)
		(void)!write(report_fd, line + i, sizeof(line) - (size_t)i);
	atomic_store(&sampled, true);
}

__attribute__((constructor)) static void alloc_init(void)
{
	const char *path = getenv("SS_ALLOC_REPORT");
	const char *t = getenv("SS_ALLOC_TRACE");
	struct sigaction sa;

	trace = t && strcmp(t, "1") == 0;
	if (path)
		report_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alloc_report;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
}

void *malloc(size_t n)
{
	alloc_note();
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	alloc_note();
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	alloc_note();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

void *memalign(size_t align, size_t n)
{
	alloc_note();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	alloc_note();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	alloc_note();
	p = __libc_memalign(align, n);
	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	alloc_note();
	return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}
