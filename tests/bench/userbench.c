/* SPDX-License-Identifier: MIT */
/* userbench: what telling a SIP004 connection's user costs ss-server, per
 * new connection, through the codec as the relay calls it (start, the
 * client's address, the decode of a first flight of one chunk carrying
 * the target and 100 bytes, reset). A port of N users (methods in turn
 * aes-256-gcm, chacha20-ietf-poly1305, aes-128-gcm), each connection from
 * its own address with the last user's key (the worst case: every user
 * is tried), or every connection from one address whose user the table
 * of last matches knows (warm); N = 0 is a port of one password without
 * users, today's codec. The flights are sealed beforehand, each with its
 * own salt, and are not timed.
 *
 *   userbench [--users N] [--warm] [--count N]
 *
 * Prints one JSON line: ns per connection (process CPU time). Exit 1 if
 * a flight does not open. docs/performance.md has the figures. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "config/config.h"
#include "crypto/method.h"
#include "util/result.h"

#define FLIGHT_MAX 256
static const char *const methods[] = {"aes-256-gcm", "chacha20-ietf-poly1305", "aes-128-gcm"};

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *states(const ss_codec_t *k)
{
	void *p = aligned_alloc(64, ss_codec_state_size(k));

	memset(p, 0, ss_codec_state_size(k));
	return p;
}

/* count first flights of the user with method m and key, each its own salt. */
static uint8_t *seal_flights(const ss_method_t *m, const uint8_t *key, size_t count, size_t *len)
{
	ss_codec_t kc;
	uint8_t *buf = malloc(SS_RELAY_BUF_SIZE), *out = malloc(count * FLIGHT_MAX);
	ss_addr_t target = {0};
	struct iovec iov[2];
	size_t niov;

	ss_codec_setup_client(&kc, m, key, NULL, ss_codec_backend());
	void *enc = states(&kc), *dec = states(&kc);
	ss_codec_init(&kc, enc);
	ss_codec_init(&kc, dec);
	target.atyp = SS_ATYP_IPV4;
	target.port = 80;
	for (size_t i = 0; i < count; i++) {
		uint8_t *p = buf + kc.layout.first;
		size_t n = kc.ops->put_target(&kc, &target, p, 64);

		ss_codec_start(&kc, enc, dec);
		memset(p + n, 'x', 100);
		if (kc.ops->seal(&kc, enc, buf, n + 100, 0, NULL, iov, &niov) != SS_OK ||
		    niov != 1 || iov[0].iov_len > FLIGHT_MAX)
			exit(1);
		memcpy(out + i * FLIGHT_MAX, iov[0].iov_base, iov[0].iov_len);
		*len = iov[0].iov_len;
		ss_codec_reset(&kc, enc);
	}
	ss_codec_release(&kc, enc);
	ss_codec_release(&kc, dec);
	ss_codec_free(&kc);
	free(enc);
	free(dec);
	free(buf);
	return out;
}

int main(int argc, char **argv)
{
	size_t users = 1, count = 20000, len = 0;
	bool warm = false;
	ss_config_t cfg;
	ss_codec_t k;
	char err[256];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--users") == 0 && i + 1 < argc)
			users = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--warm") == 0)
			warm = true;
		else {
			fprintf(stderr, "usage: userbench [--users N] [--warm] [--count N]\n");
			return 2;
		}
	}
	if (ss_codec_global_init() != 0)
		return 1;
	ss_config_init(&cfg, SS_PROG_SERVER);
	cfg.mode = SS_MODE_TCP_ONLY;
	cfg.replay_capacity = (long)count * 2 + 16;
	ss_method_lookup(methods[0], &cfg.method, err, sizeof(err));
	ss_key_from_password(cfg.method, "the port's password", cfg.key);
	cfg.n_users = users;
	cfg.users = users ? calloc(users, sizeof(*cfg.users)) : NULL;
	for (size_t i = 0; i < users; i++) {
		ss_config_user_t *u = &cfg.users[i];
		snprintf(u->name, sizeof(u->name), "user%zu", i);
		snprintf(u->password, sizeof(u->password), "password of user %zu", i);
		ss_method_lookup(methods[i % 3], &u->method, err, sizeof(err));
		ss_key_from_password(u->method, u->password, u->key);
	}
	if (ss_codec_setup(&k, &cfg, ss_codec_backend(), true, err, sizeof(err)) != 0) {
		fprintf(stderr, "userbench: %s\n", err);
		return 1;
	}
	const ss_method_t *m = users ? cfg.users[users - 1].method : cfg.method;
	const uint8_t *key = users ? cfg.users[users - 1].key : cfg.key;
	uint8_t *flights = seal_flights(m, key, count + 1, &len);
	uint8_t *buf = malloc(SS_RELAY_BUF_SIZE);
	void *enc = states(&k), *dec = states(&k);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	ss_span_t spans[4];
	size_t consumed, ns;

	ss_codec_init(&k, enc);
	ss_codec_init(&k, dec);
	double t0 = 0;
	for (size_t i = 0; i <= count; i++) {
		if (i == 1)
			t0 = cpu_now(); /* the first connection primes the table */
		sa.sin_addr.s_addr = htonl(warm ? 0x0a000001u : 0x0a000000u + (uint32_t)i);
		ss_codec_start(&k, enc, dec);
		ss_codec_peer(&k, dec, (const struct sockaddr *)&sa);
		memcpy(buf, flights + i * FLIGHT_MAX, len);
		if (k.ops->decode(&k, dec, buf, len, 0, &consumed, spans, 4, &ns, NULL) != SS_OK ||
		    ns != 1 || consumed != len) {
			fprintf(stderr, "userbench: flight %zu did not open\n", i);
			return 1;
		}
		ss_codec_reset(&k, enc);
		ss_codec_reset(&k, dec);
	}
	double t = cpu_now() - t0;
	printf("{\"users\": %zu, \"warm\": %s, \"count\": %zu, \"ns_per_connection\": %.0f}\n",
	       users, warm ? "true" : "false", count, t / (double)count * 1e9);
	ss_codec_release(&k, enc);
	ss_codec_release(&k, dec);
	ss_codec_free(&k);
	free(enc);
	free(dec);
	ss_config_clear(&cfg);
	free(flights);
	free(buf);
	return 0;
}
