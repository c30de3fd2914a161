/* SPDX-License-Identifier: MIT */
/* Random bytes for salts, nonces and hash keys. */
#include "crypto/primitives.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <errno.h>
#include <sys/random.h>
#endif

/* Random bytes come from the kernel a page at a time: one getrandom(2)
 * serves about a hundred salts, where it took one system call per
 * connection and per UDP datagram. Each byte is wiped as it is handed out.
 * Every thread has a page of its own, so two threads are never handed the
 * same bytes; it is wiped and unmapped when the thread ends. The page is
 * zeroed in a forked child (MADV_WIPEONFORK), whose count then reads zero
 * and refills, so parent and child never share bytes either; where that is
 * not available every call goes to the kernel. */
#define RANDOM_POOL_PAGE 4096
#define RANDOM_POOL_MAX_ASK 64

typedef struct {
	size_t left;
	uint8_t bytes[RANDOM_POOL_PAGE - sizeof(size_t)];
} random_pool_t;

#ifdef MADV_WIPEONFORK
static pthread_key_t random_key;
static pthread_once_t random_key_once = PTHREAD_ONCE_INIT;
static bool random_key_ok;

static atomic_size_t random_pages; /* pages mapped and not yet released */

static void random_pool_release(void *p)
{
	sodium_memzero(p, RANDOM_POOL_PAGE);
	munmap(p, RANDOM_POOL_PAGE);
	atomic_fetch_sub(&random_pages, 1);
}

static void random_key_init(void)
{
	random_key_ok = pthread_key_create(&random_key, random_pool_release) == 0;
}
#endif

static random_pool_t *random_pool_get(void)
{
#ifdef MADV_WIPEONFORK
	static _Thread_local random_pool_t *pool;
	static _Thread_local bool tried;

	if (!tried) {
		tried = true;
		pthread_once(&random_key_once, random_key_init);
		void *p = mmap(NULL, RANDOM_POOL_PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		/* Without the destructor a thread's page would outlive it. */
		if (random_key_ok && madvise(p, RANDOM_POOL_PAGE, MADV_WIPEONFORK) == 0 &&
		    pthread_setspecific(random_key, p) == 0) {
			pool = p;
			atomic_fetch_add(&random_pages, 1);
		} else {
			munmap(p, RANDOM_POOL_PAGE);
		}
	}
	return pool;
#else
	return NULL;
#endif
}

/* The whole page in one getrandom(2) where there is one (libsodium asks
 * for 256 bytes a call); it can come back short when a signal lands. */
static void random_fill(uint8_t *p, size_t len)
{
#ifdef __linux__
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
#endif
	if (len)
		randombytes_buf(p, len);
}

void ss_random_bytes(void *buf, size_t len)
{
	random_pool_t *pool = len <= RANDOM_POOL_MAX_ASK ? random_pool_get() : NULL;

	if (!pool) {
		randombytes_buf(buf, len);
		return;
	}
	if (pool->left < len) {
		random_fill(pool->bytes, sizeof(pool->bytes));
		pool->left = sizeof(pool->bytes);
	}
	uint8_t *p = pool->bytes + sizeof(pool->bytes) - pool->left;
	memcpy(buf, p, len);
	sodium_memzero(p, len);
	pool->left -= len;
}
