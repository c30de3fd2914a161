/* SPDX-License-Identifier: MIT */
/* Instances on threads, as include/shadowsocks.h allows: two ss-server +
 * ss-local pairs, each program on a thread of its own with a loop of its
 * own, relay connections at the same time; every byte comes back. The
 * per-thread state (random bytes, allocator arenas) is what makes this
 * safe; the sanitizer builds run it too. */
#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "crypto/primitives.h"
#include "shadowsocks.h"
#include "testutil.h"

#define PAIRS 2
#define CLIENTS 6 /* per pair, at once */
#define ROUNDS 20 /* exchanges per client */
#define MSG 3000

/* One program on its thread: its loop, and an async watcher through which
 * the main thread asks it to stop (only its own thread touches it). */
typedef struct {
	ss_prog_t prog;
	char argv_text[16][64];
	char *argv[17];
	int argc;
	ss_config_t cfg;
	struct ev_loop *loop;
	ev_async stop;
	ss_instance_t *inst;
	pthread_t thread;
	int rc;
	pthread_mutex_t lock;
	pthread_cond_t ready_cv;
	int ready; /* 0 starting, 1 running, -1 failed */
} prog_t;

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	prog_t *p = w->data;
	(void)revents;

	ss_instance_stop(p->inst);
	ev_async_stop(loop, w);
}

static void prog_set_ready(prog_t *p, int v)
{
	pthread_mutex_lock(&p->lock);
	p->ready = v;
	pthread_cond_signal(&p->ready_cv);
	pthread_mutex_unlock(&p->lock);
}

static void *prog_main(void *arg)
{
	prog_t *p = arg;
	char err[256];

	p->loop = ev_loop_new(EVFLAG_AUTO);
	if (!p->loop ||
	    ss_config_parse(&p->cfg, p->prog, p->argc, p->argv, NULL, err, sizeof(err)) !=
		SS_CONFIG_RUN ||
	    ss_instance_create(&p->cfg, p->loop, &p->inst, err, sizeof(err)) < 0) {
		fprintf(stderr, "cannot start: %s\n", err);
		prog_set_ready(p, -1);
		return NULL;
	}
	ev_async_init(&p->stop, stop_cb);
	p->stop.data = p;
	ev_async_start(p->loop, &p->stop);
	prog_set_ready(p, 1);
	ev_run(p->loop, 0);
	ss_instance_destroy(p->inst);
	ss_config_clear(&p->cfg);
	ev_loop_destroy(p->loop);
	return NULL;
}

static void prog_start(prog_t *p, ss_prog_t prog, const char *const *args)
{
	memset(p, 0, sizeof(*p));
	p->prog = prog;
	for (p->argc = 0; args[p->argc]; p->argc++) {
		snprintf(p->argv_text[p->argc], sizeof(p->argv_text[0]), "%s", args[p->argc]);
		p->argv[p->argc] = p->argv_text[p->argc];
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->ready_cv, NULL);
	assert_int_equal(pthread_create(&p->thread, NULL, prog_main, p), 0);
	pthread_mutex_lock(&p->lock);
	while (!p->ready)
		pthread_cond_wait(&p->ready_cv, &p->lock);
	pthread_mutex_unlock(&p->lock);
	assert_int_equal(p->ready, 1);
}

static void prog_stop(prog_t *p)
{
	ev_async_send(p->loop, &p->stop);
	pthread_join(p->thread, NULL);
}

static int connect_to(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 20};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool read_all(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* The target: echoes each connection on a thread of its own. */
static int echo_fd;

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t buf[8192];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (!write_all(fd, buf, (size_t)n))
			break;
	close(fd);
	return NULL;
}

static void *echo_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(echo_fd, NULL, NULL);
		pthread_t t;
		if (fd < 0)
			return NULL;
		if (pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
}

typedef struct {
	int local_port, echo_port;
	int ok; /* rounds that came back whole */
} client_t;

/* SOCKS5 CONNECT to the echo server through ss-local, then ROUNDS
 * exchanges of MSG random bytes. */
static void *client_main(void *arg)
{
	client_t *c = arg;
	uint8_t req[10] = {5, 1, 0, 1, 127, 0, 0, 1}, rep[10], out[MSG], in[MSG];
	int fd = connect_to(c->local_port);

	if (fd < 0)
		return NULL;
	req[8] = (uint8_t)(c->echo_port >> 8);
	req[9] = (uint8_t)c->echo_port;
	if (!write_all(fd, (const uint8_t[]){5, 1, 0}, 3) || !read_all(fd, rep, 2) || rep[1] != 0 ||
	    !write_all(fd, req, sizeof(req)) || !read_all(fd, rep, 10) || rep[1] != 0)
		goto out;
	for (int r = 0; r < ROUNDS; r++) {
		ss_random_bytes(out, sizeof(out));
		if (!write_all(fd, out, sizeof(out)) || !read_all(fd, in, sizeof(in)) ||
		    memcmp(in, out, sizeof(in)) != 0)
			goto out;
		c->ok++;
	}
out:
	close(fd);
	return NULL;
}

static void test_pairs_on_threads(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	prog_t servers[PAIRS], locals[PAIRS];
	client_t clients[PAIRS * CLIENTS];
	pthread_t echo_thread, ct[PAIRS * CLIENTS];
	char sport[PAIRS][8], lport[PAIRS][8];
	static const char *const methods[PAIRS] = {"aes-256-gcm", "chacha20-ietf-poly1305"};
	(void)state;

	echo_fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(echo_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(echo_fd, 64), 0);
	assert_int_equal(getsockname(echo_fd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(pthread_create(&echo_thread, NULL, echo_main, NULL), 0);

	for (int i = 0; i < PAIRS; i++) {
		snprintf(sport[i], sizeof(sport[i]), "%d", free_loopback_port());
		const char *sargs[] = {"ss-server", "-s",     "127.0.0.1", "-p",       sport[i],
				       "-k",        "secret", "-m",        methods[i], NULL};
		prog_start(&servers[i], SS_PROG_SERVER, sargs);
		snprintf(lport[i], sizeof(lport[i]), "%d", free_loopback_port());
		const char *largs[] = {"ss-local", "-s", "127.0.0.1", "-p", sport[i],   "-l",
				       lport[i],   "-k", "secret",    "-m", methods[i], NULL};
		prog_start(&locals[i], SS_PROG_LOCAL, largs);
	}
	for (int i = 0; i < PAIRS * CLIENTS; i++) {
		clients[i] = (client_t){.local_port = atoi(lport[i % PAIRS]),
					.echo_port = ntohs(a.sin_port)};
		assert_int_equal(pthread_create(&ct[i], NULL, client_main, &clients[i]), 0);
	}
	for (int i = 0; i < PAIRS * CLIENTS; i++) {
		pthread_join(ct[i], NULL);
		assert_int_equal(clients[i].ok, ROUNDS);
	}
	for (int i = 0; i < PAIRS; i++) {
		prog_stop(&locals[i]);
		prog_stop(&servers[i]);
	}
	shutdown(echo_fd, SHUT_RDWR);
	close(echo_fd);
	pthread_join(echo_thread, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pairs_on_threads),
	};

	signal(SIGPIPE, SIG_IGN);
	if (ss_crypto_global_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
