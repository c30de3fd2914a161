/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "crypto/method.h"
#include "proto/url.h"
#include "testutil.h"

/* Base64 of the 16 bytes 1..16, 17..32 and 33..48. */
#define K16_1 "AQIDBAUGBwgJCgsMDQ4PEA=="
#define K16_2 "ERITFBUWFxgZGhscHR4fIA=="
#define K16_3 "ISIjJCUmJygpKissLS4vMA=="

static char tmpdir[256];
static ss_config_t cfg; /* large: keep it off the stack */
static char err[1024];

/* Runs ss_config_parse on a NULL-terminated list of arguments after argv[0]. */
static ss_config_status_t run_v(ss_prog_t prog, FILE *out, va_list ap)
{
	char *argv[64];
	int argc = 0;
	const char *s;

	argv[argc++] = prog == SS_PROG_SERVER   ? "/usr/bin/ss-server"
		       : prog == SS_PROG_TUNNEL ? "ss-tunnel"
						: "ss-local";
	while ((s = va_arg(ap, const char *)) != NULL) {
		assert_true(argc < 63);
		argv[argc++] = (char *)s;
	}
	argv[argc] = NULL;
	memset(err, 'X', sizeof(err));
	return ss_config_parse(&cfg, prog, argc, argv, out, err, sizeof(err));
}

static ss_config_status_t run(ss_prog_t prog, ...)
{
	va_list ap;
	va_start(ap, prog);
	ss_config_status_t st = run_v(prog, NULL, ap);
	va_end(ap);
	return st;
}

/* Asserts an error whose message contains want. */
static void expect_error(const char *want, ss_prog_t prog, ...)
{
	va_list ap;
	va_start(ap, prog);
	ss_config_status_t st = run_v(prog, NULL, ap);
	va_end(ap);
	if (st != SS_CONFIG_ERROR || strstr(err, want) == NULL)
		fail_msg("want error containing <%s>, got status %d: <%s>", want, st,
			 st == SS_CONFIG_ERROR ? err : "");
	assert_null(strchr(err, '\n'));
}

static void expect_run(ss_prog_t prog, ...)
{
	va_list ap;
	va_start(ap, prog);
	ss_config_status_t st = run_v(prog, NULL, ap);
	va_end(ap);
	if (st != SS_CONFIG_RUN)
		fail_msg("want RUN, got status %d: <%s>", st, st == SS_CONFIG_ERROR ? err : "");
}

/* Writes a file under the temp dir; returns its path. */
static const char *write_file(const char *name, const char *text)
{
	return tmp_write(tmpdir, name, text);
}

static void expect_key_from_password(const char *method, const char *password)
{
	const ss_method_t *m;
	uint8_t want[SS_MAX_KEY_LEN] = {0};
	char e[256];

	assert_int_equal(ss_method_lookup(method, &m, e, sizeof(e)), 0);
	assert_ptr_equal(cfg.method, m);
	ss_key_from_password(m, password, want);
	assert_memory_equal(cfg.key, want, m->key_len);
	/* The text is gone once the key exists. */
	assert_string_equal(cfg.password, "");
	assert_string_equal(cfg.key_b64, "");
}

static int setup(void **state)
{
	(void)state;
	tmp_template(tmpdir, sizeof(tmpdir), "test_config");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Command line */

static void test_local_minimal(void **state)
{
	(void)state;
	expect_run(SS_PROG_LOCAL, "-s", "192.0.2.1", "-p", "8388", "-l", "1080", "-k", "secret",
		   NULL);
	assert_string_equal(cfg.prog_name, "ss-local");
	assert_int_equal(cfg.n_servers, 1);
	assert_string_equal(cfg.servers[0].host, "192.0.2.1");
	assert_int_equal(cfg.servers[0].port, 0);
	assert_int_equal(cfg.server_port, 8388);
	assert_int_equal(cfg.local_port, 1080);
	assert_string_equal(cfg.local_addr, "127.0.0.1");
	assert_string_equal(cfg.method->name, SS_DEFAULT_METHOD);
	assert_int_equal(cfg.timeout, 60);
	assert_int_equal(cfg.mode, SS_MODE_TCP_ONLY);
	assert_int_equal(cfg.verbose, 0);
	assert_false(cfg.fast_open);
	assert_int_equal(cfg.mtu, 0);
	assert_int_equal(cfg.nofile, 0);
	assert_string_equal(cfg.pid_file, "");
	assert_string_equal(cfg.config_file, "");
	expect_key_from_password(SS_DEFAULT_METHOD, "secret");
}

static void test_local_every_flag(void **state)
{
	(void)state;
	expect_run(SS_PROG_LOCAL, "-s", "server.example", "-s", "[2001:db8::1]:9000", "-s",
		   "198.51.100.7:8389", "-p", "8388", "-l", "1080", "-k", "pw", "-m", "aes-256-gcm",
		   "-a", "nobody", "-f", "/run/ss.pid", "-t", "300", "-n", "4096", "-i", "eth0",
		   "-b", "0.0.0.0", "-6", "-d", "8.8.8.8,1.1.1.1", "-u", "-v", "-v", "--fast-open",
		   "--reuse-port", "--no-delay", "--mptcp", "--mtu", "1400", "--acl",
		   "/etc/ss/local.acl", "--plugin", "obfs-local", "--plugin-opts", "obfs=http",
		   "--plugin-mode", "tcp_and_udp", NULL);
	assert_int_equal(cfg.n_servers, 3);
	assert_string_equal(cfg.servers[0].host, "server.example");
	assert_int_equal(cfg.servers[0].port, 0);
	assert_string_equal(cfg.servers[1].host, "2001:db8::1");
	assert_int_equal(cfg.servers[1].port, 9000);
	assert_string_equal(cfg.servers[2].host, "198.51.100.7");
	assert_int_equal(cfg.servers[2].port, 8389);
	assert_int_equal(cfg.server_port, 8388);
	assert_int_equal(cfg.local_port, 1080);
	assert_string_equal(cfg.user, "nobody");
	assert_string_equal(cfg.pid_file, "/run/ss.pid");
	assert_int_equal(cfg.timeout, 300);
	assert_int_equal(cfg.nofile, 4096);
	assert_string_equal(cfg.iface, "eth0");
	assert_string_equal(cfg.local_addr, "0.0.0.0");
	assert_true(cfg.ipv6_first);
	assert_string_equal(cfg.nameserver, "8.8.8.8,1.1.1.1");
	assert_int_equal(cfg.mode, SS_MODE_TCP_AND_UDP);
	assert_int_equal(cfg.verbose, 2);
	assert_true(cfg.fast_open);
	assert_true(cfg.reuse_port);
	assert_true(cfg.no_delay);
	assert_true(cfg.mptcp);
	assert_int_equal(cfg.mtu, 1400);
	assert_string_equal(cfg.acl, "/etc/ss/local.acl");
	assert_string_equal(cfg.plugin, "obfs-local");
	assert_string_equal(cfg.plugin_opts, "obfs=http");
	assert_int_equal(cfg.plugin_mode, SS_MODE_TCP_AND_UDP);
	assert_true(cfg.plugin_tcp);
	assert_true(cfg.plugin_udp);
	expect_key_from_password("aes-256-gcm", "pw");
}

static void test_long_forms(void **state)
{
	(void)state;
	/* --password, -U, clustered short flags, -vvv */
	expect_run(SS_PROG_LOCAL, "-s", "::1", "-p", "1", "-l", "2", "--password", "pw", "-U",
		   "-vvv", "-6u", NULL);
	assert_int_equal(cfg.mode, SS_MODE_TCP_AND_UDP); /* the last of -U and -u wins */
	assert_int_equal(cfg.verbose, 3);
	assert_true(cfg.ipv6_first);
	expect_key_from_password(SS_DEFAULT_METHOD, "pw");

	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-U", NULL);
	assert_int_equal(cfg.mode, SS_MODE_UDP_ONLY);

	/* --name=value works as well as --name value. */
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "--mtu=1492", NULL);
	assert_int_equal(cfg.mtu, 1492);
}

static void test_key_flag(void **state)
{
	(void)state;
	uint8_t want[32];
	for (int i = 0; i < 32; i++)
		want[i] = (uint8_t)(i + 1);

	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "--key",
		   "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", NULL);
	assert_memory_equal(cfg.key, want, 32);
	assert_string_equal(cfg.key_b64, "");

	/* A key wins over a password, as in libev. */
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-m", "aes-128-gcm", "--key",
		   "AQIDBAUGBwgJCgsMDQ4PEA", "-k", "pw", NULL);
	assert_memory_equal(cfg.key, want, 16);
	assert_string_equal(cfg.password, "");

	expect_error("invalid key for --key/\"key\"", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l",
		     "2", "--key", "AQIDBAUGBwgJCgsMDQ4PEA", NULL);
	assert_non_null(strstr(err, "32 bytes"));
	expect_error("invalid key", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "--key",
		     "not base64!", NULL);
}

/* Method none takes no key; one given anyway is flagged for a warning. */
static void test_none_no_key(void **state)
{
	(void)state;
	expect_run(SS_PROG_SERVER, "-p", "1", "-m", "none", NULL);
	assert_int_equal(cfg.method->kind, SS_METHOD_NONE);
	assert_false(cfg.key_ignored);
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-m", "plain", "-k", "pw", NULL);
	assert_true(cfg.key_ignored);
	assert_string_equal(cfg.password, "");
	expect_error("missing password", SS_PROG_SERVER, "-p", "1", "-m", "aes-256-gcm", NULL);
}

/* 2022 methods take the base64 PSK as password, never EVP_BytesToKey. */
static void test_2022_psk(void **state)
{
	(void)state;
	uint8_t want[16];
	for (int i = 0; i < 16; i++)
		want[i] = (uint8_t)(i + 1);

	expect_run(SS_PROG_SERVER, "-p", "1", "-m", "2022-blake3-aes-128-gcm", "-k",
		   "AQIDBAUGBwgJCgsMDQ4PEA==", NULL);
	assert_memory_equal(cfg.key, want, 16);
	assert_string_equal(cfg.password, "");
	expect_run(SS_PROG_SERVER, "-p", "1", "-m", "2022-blake3-aes-128-gcm", "--key",
		   "AQIDBAUGBwgJCgsMDQ4PEA==", NULL);
	assert_memory_equal(cfg.key, want, 16);

	expect_error("-k/\"password\": invalid PSK for 2022-blake3-aes-256-gcm: it must be the "
		     "base64 of exactly 32 bytes (make one with: openssl rand -base64 32)",
		     SS_PROG_SERVER, "-p", "1", "-m", "2022-blake3-aes-256-gcm", "-k", "password",
		     NULL);
	expect_error("invalid PSK", SS_PROG_SERVER, "-p", "1", "-m", "2022-blake3-aes-256-gcm",
		     "-k", "AQIDBAUGBwgJCgsMDQ4PEA==", NULL);
	expect_error("has no identity headers", SS_PROG_SERVER, "-p", "1", "-m",
		     "2022-blake3-chacha20-poly1305", "-k",
		     "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=:"
		     "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		     NULL);
	expect_error("ss-server takes one PSK (its own), not a list of 2", SS_PROG_SERVER, "-p",
		     "1", "-m", "2022-blake3-aes-128-gcm", "-k", K16_1 ":" K16_2, NULL);
	assert_non_null(strstr(err, "\"users\""));
	expect_error("--key/\"key\": ss-server takes one PSK", SS_PROG_SERVER, "-p", "1", "-m",
		     "2022-blake3-aes-128-gcm", "--key", K16_1 ":" K16_2, NULL);
}

/* SIP023 on the client: identity PSKs first, the user PSK last. */
static void test_2022_psk_list(void **state)
{
	(void)state;
	uint8_t k1[16], k2[16], k3[16];
	for (int i = 0; i < 16; i++) {
		k1[i] = (uint8_t)(i + 1);
		k2[i] = (uint8_t)(i + 17);
		k3[i] = (uint8_t)(i + 33);
	}

	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-m", "2022-blake3-aes-128-gcm",
		   "-k", K16_1 ":" K16_2, NULL);
	assert_int_equal(cfg.psks.n, 2);
	assert_memory_equal(cfg.psks.keys[0], k1, 16);
	assert_memory_equal(cfg.psks.keys[1], k2, 16);
	assert_memory_equal(cfg.key, k2, 16);
	assert_string_equal(cfg.password, "");

	/* --key takes the same list; ss-tunnel as well. */
	expect_run(SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "2", "-L", "t:3", "-m",
		   "2022-blake3-aes-128-gcm", "--key", K16_1 ":" K16_2 ":" K16_3, NULL);
	assert_int_equal(cfg.psks.n, 3);
	assert_memory_equal(cfg.psks.keys[0], k1, 16);
	assert_memory_equal(cfg.psks.keys[1], k2, 16);
	assert_memory_equal(cfg.key, k3, 16);
	assert_string_equal(cfg.key_b64, "");

	/* One PSK: a list of one, for the server too. */
	expect_run(SS_PROG_SERVER, "-p", "1", "-m", "2022-blake3-aes-128-gcm", "-k", K16_1, NULL);
	assert_int_equal(cfg.psks.n, 1);
	assert_memory_equal(cfg.key, k1, 16);

	/* Other methods keep no list. */
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", NULL);
	assert_int_equal(cfg.psks.n, 0);

	expect_error("2022-blake3-chacha20-poly1305 has no identity headers, so it takes one PSK, "
		     "not a list",
		     SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-m",
		     "2022-blake3-chacha20-poly1305", "--key",
		     "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=:"
		     "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
		     NULL);
	assert_non_null(strstr(err, "--key/\"key\""));
	expect_error("invalid PSK (part 2 of 2) for 2022-blake3-aes-128-gcm", SS_PROG_LOCAL, "-s",
		     "h", "-p", "1", "-l", "2", "-m", "2022-blake3-aes-128-gcm", "-k", K16_1 ":bad",
		     NULL);
	expect_error("empty PSK (part 2 of 2)", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2",
		     "-m", "2022-blake3-aes-128-gcm", "-k", K16_1 ":", NULL);
}

static void test_help(void **state)
{
	(void)state;
	static const char *const common[] = {
	    "-s <",
	    "-p <",
	    "-k <",
	    "--password",
	    "-m <",
	    "-a <",
	    "-f <",
	    "-t <",
	    "-c <",
	    "-n <",
	    "-i <",
	    "-b <",
	    "-u",
	    "-U",
	    "-6",
	    "-d <",
	    "-v",
	    "-h, --help",
	    "--version",
	    "--fast-open",
	    "--reuse-port",
	    "--no-delay",
	    "--mptcp",
	    "--mtu",
	    "--acl",
	    "--key",
	    "--plugin <",
	    "--plugin-opts",
	    "--plugin-mode",
	};
	const ss_prog_t progs[] = {SS_PROG_LOCAL, SS_PROG_SERVER, SS_PROG_TUNNEL};

	for (size_t p = 0; p < 3; p++) {
		for (int form = 0; form < 2; form++) {
			char *text = NULL;
			size_t len = 0;
			FILE *out = open_memstream(&text, &len);
			char *argv[] = {"prog", form ? "--help" : "-h", "--bogus-after-help", NULL};
			assert_non_null(out);
			assert_int_equal(
			    ss_config_parse(&cfg, progs[p], 3, argv, out, err, sizeof(err)),
			    SS_CONFIG_HELP);
			fclose(out);
			for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
				if (strstr(text, common[i]) == NULL)
					fail_msg("usage lacks <%s>:\n%s", common[i], text);
			for (const char *const *m = ss_method_names(); *m != NULL; m++)
				assert_non_null(strstr(text, *m));
			assert_int_equal(strstr(text, "-L <") != NULL, progs[p] == SS_PROG_TUNNEL);
			assert_int_equal(strstr(text, "--server-url <") != NULL,
					 progs[p] != SS_PROG_SERVER);
			assert_int_equal(strstr(text, "--print-url") != NULL,
					 progs[p] == SS_PROG_SERVER);
			assert_non_null(strstr(text, "-l <"));
			free(text);
		}
	}
	/* out may be NULL: nothing is written. */
	assert_int_equal(run(SS_PROG_LOCAL, "-h", NULL), SS_CONFIG_HELP);
}

/* --version: the program and version, our own code's setting, and a line
 * per method naming what encrypts it, as ss_crypto_describe does. */
static void test_version(void **state)
{
	(void)state;
	const ss_prog_t progs[] = {SS_PROG_LOCAL, SS_PROG_SERVER, SS_PROG_TUNNEL};
	const char *const prog_names[] = {"ss-local", "ss-server", "ss-tunnel"};

	for (size_t p = 0; p < 3; p++) {
		char *text = NULL, want[512], what[256];
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);
		char *argv[] = {"prog", "--version", "-m", "no-such-method", NULL};

		assert_non_null(out);
		assert_int_equal(ss_config_parse(&cfg, progs[p], 4, argv, out, err, sizeof(err)),
				 SS_CONFIG_VERSION);
		fclose(out);
		snprintf(want, sizeof(want), "%s (shadowsocks-c) %s\n", prog_names[p], SS_VERSION);
		assert_true(strncmp(text, want, strlen(want)) == 0);
		snprintf(want, sizeof(want), "crypto: %s\n",
			 ss_crypto_own_setting(ss_crypto_default(), what, sizeof(what)));
		assert_non_null(strstr(text, want));
		for (const char *const *m = ss_method_names(); *m != NULL; m++) {
			const ss_method_t *meth;

			assert_int_equal(ss_method_lookup(*m, &meth, NULL, 0), 0);
			snprintf(want, sizeof(want), "  %-30s %s\n", *m,
				 ss_crypto_describe(ss_crypto_default(), meth, what, sizeof(what)));
			if (strstr(text, want) == NULL)
				fail_msg("--version lacks <%s>:\n%s", want, text);
		}
		free(text);
	}
	assert_int_equal(run(SS_PROG_SERVER, "--version", NULL), SS_CONFIG_VERSION);
}

/* ss-redir: REDIRECT unless -T, --tcp-tproxy or "tcp_tproxy" says TPROXY. */
static void test_redir(void **state)
{
	(void)state;

	expect_run(SS_PROG_REDIR, "-s", "h", "-p", "1", "-l", "1080", "-k", "pw", NULL);
	assert_false(cfg.tcp_tproxy);
	assert_int_equal(cfg.mode, SS_MODE_TCP_ONLY);
	expect_run(SS_PROG_REDIR, "-s", "h", "-p", "1", "-l", "1080", "-k", "pw", "-T", "-u", NULL);
	assert_true(cfg.tcp_tproxy);
	assert_int_equal(cfg.mode, SS_MODE_TCP_AND_UDP);
	expect_run(SS_PROG_REDIR, "-s", "h", "-p", "1", "-l", "1080", "-k", "pw", "--tcp-tproxy",
		   NULL);
	assert_true(cfg.tcp_tproxy);
	expect_error("missing local port", SS_PROG_REDIR, "-s", "h", "-p", "1", "-k", "pw", NULL);

	ss_config_clear(&cfg);
	ss_config_init(&cfg, SS_PROG_REDIR);
	assert_int_equal(ss_config_parse_json(&cfg, "{\"tcp_tproxy\": true}", err, sizeof(err)), 0);
	assert_true(cfg.tcp_tproxy);
	assert_int_equal(ss_config_parse_json(&cfg, "{\"tcp_tproxy\": \"yes\"}", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "tcp_tproxy"));
	ss_config_clear(&cfg);
}

static void test_tunnel(void **state)
{
	(void)state;
	uint8_t v6[16];

	expect_run(SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "5353", "-k", "pw", "-L",
		   "8.8.8.8:53", NULL);
	assert_true(cfg.have_tunnel_addr);
	assert_int_equal(cfg.tunnel_addr.atyp, SS_ATYP_IPV4);
	assert_memory_equal(cfg.tunnel_addr.v4, ((uint8_t[]){8, 8, 8, 8}), 4);
	assert_int_equal(cfg.tunnel_addr.port, 53);

	expect_run(SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "5353", "-k", "pw", "-L",
		   "[2001:4860:4860::8888]:853", NULL);
	inet_pton(AF_INET6, "2001:4860:4860::8888", v6);
	assert_int_equal(cfg.tunnel_addr.atyp, SS_ATYP_IPV6);
	assert_memory_equal(cfg.tunnel_addr.v6, v6, 16);
	assert_int_equal(cfg.tunnel_addr.port, 853);

	expect_run(SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "5353", "-k", "pw", "-L",
		   "dns.example:5353", NULL);
	assert_int_equal(cfg.tunnel_addr.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(cfg.tunnel_addr.domain, "dns.example");
	assert_int_equal(cfg.tunnel_addr.port, 5353);

	expect_error("missing tunnel address (-L host:port or \"tunnel_address\")", SS_PROG_TUNNEL,
		     "-s", "h", "-p", "1", "-l", "2", "-k", "pw", NULL);
	expect_error("tunnel address '8.8.8.8' for -L/tunnel_address needs a port", SS_PROG_TUNNEL,
		     "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-L", "8.8.8.8", NULL);
	expect_error("invalid port '0' for -L/tunnel_address", SS_PROG_TUNNEL, "-s", "h", "-p", "1",
		     "-l", "2", "-k", "pw", "-L", "host:0", NULL);
	expect_error("-L is only for ss-tunnel", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2",
		     "-k", "pw", "-L", "8.8.8.8:53", NULL);
	expect_error("-L is only for ss-tunnel", SS_PROG_SERVER, "-p", "1", "-k", "pw", "-L",
		     "8.8.8.8:53", NULL);
}

static void test_server(void **state)
{
	(void)state;
	expect_run(SS_PROG_SERVER, "-p", "8388", "-k", "pw", NULL);
	assert_string_equal(cfg.prog_name, "ss-server");
	assert_int_equal(cfg.n_servers, 1);
	assert_string_equal(cfg.servers[0].host, "::");
	assert_int_equal(cfg.server_port, 8388);
	assert_string_equal(cfg.local_addr, ""); /* no outbound bind */
	assert_int_equal(cfg.local_port, 0);

	expect_run(SS_PROG_SERVER, "-s", "0.0.0.0", "-s", "::", "-p", "8388", "-k", "pw", "-b",
		   "192.0.2.9", "-d", "1.1.1.1", NULL);
	assert_int_equal(cfg.n_servers, 2);
	assert_string_equal(cfg.servers[0].host, "0.0.0.0");
	assert_string_equal(cfg.servers[1].host, "::");
	assert_string_equal(cfg.local_addr, "192.0.2.9");
	assert_string_equal(cfg.nameserver, "1.1.1.1");

	/* Every listen address with its own port: -p is not needed. */
	expect_run(SS_PROG_SERVER, "-s", "127.0.0.1:8388", "-k", "pw", NULL);
	assert_int_equal(cfg.servers[0].port, 8388);

	expect_error("missing server port (-p or \"server_port\")", SS_PROG_SERVER, "-k", "pw",
		     NULL);
	expect_error("missing password (-k or \"password\") or key (--key or \"key\")",
		     SS_PROG_SERVER, "-p", "8388", NULL);
}

/* --workers: ss-server's default is the CPUs online, the clients' 1; the
 * flag and the key take 1 to 256. */
static void test_workers(void **state)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	(void)state;
	expect_run(SS_PROG_SERVER, "-p", "8388", "-k", "pw", NULL);
	assert_int_equal(cfg.workers, cpus > 256 ? 256 : cpus < 1 ? 1 : cpus);
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", NULL);
	assert_int_equal(cfg.workers, 1);
	expect_run(SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-L", "a:1",
		   "--workers", "256", NULL);
	assert_int_equal(cfg.workers, 256);
	expect_run(SS_PROG_SERVER, "-p", "8388", "-k", "pw", "--workers=1", NULL);
	assert_int_equal(cfg.workers, 1);
	expect_run(SS_PROG_SERVER, "-p", "8388", "-k", "pw", "-c",
		   write_file("w.json", "{\"workers\": 7}"), NULL);
	assert_int_equal(cfg.workers, 7);
	/* The flag beats the file. */
	expect_run(SS_PROG_SERVER, "-p", "8388", "-k", "pw", "--workers", "3", "-c",
		   write_file("w.json", "{\"workers\": 7}"), NULL);
	assert_int_equal(cfg.workers, 3);
	expect_error("--workers must be a number from 1 to 256, not '0'", SS_PROG_SERVER, "-p",
		     "8388", "-k", "pw", "--workers", "0", NULL);
	expect_error("--workers must be a number from 1 to 256, not '257'", SS_PROG_SERVER, "-p",
		     "8388", "-k", "pw", "--workers", "257", NULL);
	expect_error("\"workers\" must be a number from 1 to 256, not \"many\"", SS_PROG_SERVER,
		     "-p", "8388", "-k", "pw", "-c",
		     write_file("w.json", "{\"workers\": \"many\"}"), NULL);
	expect_error("ss-local relays UDP (SOCKS5 UDP ASSOCIATE) with one worker", SS_PROG_LOCAL,
		     "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-u", "--workers", "2", NULL);
}

/* ss-local's DNS relay: the three addresses, their defaults, the command
 * line over the file for each (their bits lie past the first 32), and the
 * refusals. */
static void test_dns_relay(void **state)
{
	(void)state;
	const char *file;

	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "--dns",
		   "127.0.0.1:5353", "--local-dns", "[::1]", NULL);
	assert_true(cfg.have_dns && cfg.have_local_dns && !cfg.have_remote_dns);
	assert_int_equal(cfg.dns_addr.atyp, SS_ATYP_IPV4);
	assert_int_equal(cfg.dns_addr.port, 5353);
	assert_int_equal(cfg.local_dns.atyp, SS_ATYP_IPV6);
	assert_int_equal(cfg.local_dns.port, 53);
	assert_int_equal(cfg.remote_dns.atyp, SS_ATYP_IPV4);
	assert_memory_equal(cfg.remote_dns.v4, ((const uint8_t[]){8, 8, 8, 8}), 4);
	assert_int_equal(cfg.remote_dns.port, 53);
	ss_config_clear(&cfg);

	file = write_file("dns.json", "{\"server\": \"h\", \"server_port\": 1, \"local_port\": 2,"
				      " \"password\": \"pw\", \"dns\": \"127.0.0.1\","
				      " \"remote_dns\": \"dns.example:5300\","
				      " \"local_dns\": \"192.0.2.1:54\"}");
	expect_run(SS_PROG_LOCAL, "-c", file, NULL);
	assert_int_equal(cfg.dns_addr.port, 53);
	assert_int_equal(cfg.remote_dns.atyp, SS_ATYP_DOMAIN);
	assert_string_equal(cfg.remote_dns.domain, "dns.example");
	assert_int_equal(cfg.remote_dns.port, 5300);
	assert_int_equal(cfg.local_dns.port, 54);
	ss_config_clear(&cfg);
	expect_run(SS_PROG_LOCAL, "-c", file, "--local-dns", "192.0.2.9", "--dns", "[::1]:9", NULL);
	assert_int_equal(cfg.local_dns.v4[3], 9);
	assert_int_equal(cfg.local_dns.port, 53);
	assert_int_equal(cfg.dns_addr.atyp, SS_ATYP_IPV6);
	assert_int_equal(cfg.remote_dns.port, 5300);
	ss_config_clear(&cfg);

	expect_error("--local-dns must be an IP address", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l",
		     "2", "-k", "pw", "--dns", "127.0.0.1", "--local-dns", "ns.example", NULL);
	expect_error("--dns must be an IP address", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2",
		     "-k", "pw", "--dns", "localhost:53", NULL);
	expect_error("--remote-dns is for the DNS relay", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l",
		     "2", "-k", "pw", "--remote-dns", "1.1.1.1", NULL);
	expect_error("--dns is for ss-local", SS_PROG_TUNNEL, "-s", "h", "-p", "1", "-l", "2", "-k",
		     "pw", "-L", "1.1.1.1:53", "--dns", "127.0.0.1", NULL);
	/* Another program's file may hold the keys: skipped. */
	expect_run(SS_PROG_SERVER, "-c", file, NULL);
	assert_false(cfg.have_dns);
	ss_config_clear(&cfg);
}

static void test_local_defaults(void **state)
{
	(void)state;
	/* libev listens on ::1 when every server is IPv6. */
	expect_run(SS_PROG_LOCAL, "-s", "::1", "-s", "[2001:db8::2]:1", "-p", "1", "-l", "2", "-k",
		   "pw", NULL);
	assert_string_equal(cfg.local_addr, "::1");
	expect_run(SS_PROG_LOCAL, "-s", "::1", "-s", "example.com", "-p", "1", "-l", "2", "-k",
		   "pw", NULL);
	assert_string_equal(cfg.local_addr, "127.0.0.1");
	expect_run(SS_PROG_TUNNEL, "-s", "::1", "-p", "1", "-l", "2", "-k", "pw", "-L", "a:1",
		   NULL);
	assert_string_equal(cfg.local_addr, "::1");
	/* The per-server port makes -p unnecessary. */
	expect_run(SS_PROG_LOCAL, "-s", "a:1", "-s", "[::2]:3", "-l", "2", "-k", "pw", NULL);
	assert_int_equal(cfg.server_port, 0);
}

static void test_cli_errors(void **state)
{
	(void)state;
	char expect[600];
	const ss_method_t *m;

	expect_error("invalid port '70000' for -p/server_port (expected 1-65535)", SS_PROG_LOCAL,
		     "-s", "h", "-p", "70000", "-l", "1", "-k", "pw", NULL);
	expect_error("invalid port '0' for -p/server_port", SS_PROG_LOCAL, "-p", "0", NULL);
	expect_error("invalid port '-1' for -p/server_port", SS_PROG_LOCAL, "-p", "-1", NULL);
	expect_error("invalid port '80x' for -p/server_port", SS_PROG_LOCAL, "-p", "80x", NULL);
	expect_error("invalid port '' for -l/local_port", SS_PROG_LOCAL, "-l", "", NULL);
	expect_error("invalid port '99999' for -s/server", SS_PROG_LOCAL, "-s", "h:99999", NULL);
	expect_error("invalid port 'x' for -s/server", SS_PROG_LOCAL, "-s", "[::1]:x", NULL);
	expect_error("invalid IPv6 address '[nope]' for -s/server", SS_PROG_LOCAL, "-s", "[nope]",
		     NULL);
	expect_error("invalid address 'a:b:c' for -s/server", SS_PROG_LOCAL, "-s", "a:b:c", NULL);
	expect_error("empty address for -s/server", SS_PROG_LOCAL, "-s", "", NULL);
	expect_error("missing server address (-s or \"server\")", SS_PROG_LOCAL, "-p", "1", "-l",
		     "2", "-k", "pw", NULL);
	expect_error("missing server port (-p or \"server_port\")", SS_PROG_LOCAL, "-s", "h", "-l",
		     "2", "-k", "pw", NULL);
	expect_error("missing server port", SS_PROG_LOCAL, "-s", "a:1", "-s", "b", "-l", "2", "-k",
		     "pw", NULL);
	expect_error("missing local port (-l or \"local_port\")", SS_PROG_LOCAL, "-s", "h", "-p",
		     "1", "-k", "pw", NULL);
	expect_error("missing password (-k or \"password\") or key (--key or \"key\")",
		     SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", NULL);
	expect_error("empty password for -k", SS_PROG_LOCAL, "-k", "", NULL);
	expect_error("-t must be a positive number, not 'abc'", SS_PROG_LOCAL, "-t", "abc", NULL);
	expect_error("-t must be a positive number, not '0'", SS_PROG_LOCAL, "-t", "0", NULL);
	expect_error("-n must be a positive number, not '-5'", SS_PROG_LOCAL, "-n", "-5", NULL);
	expect_error("--mtu must be a number from 0 to 65535, not '70000'", SS_PROG_LOCAL, "--mtu",
		     "70000", NULL);
	expect_error("invalid interface name 'averyveryverylongname' for -i", SS_PROG_LOCAL, "-i",
		     "averyveryverylongname", NULL);
	expect_error("--plugin-mode must be tcp_only, tcp_and_udp or udp_only, not 'tcp'",
		     SS_PROG_LOCAL, "--plugin-mode", "tcp", NULL);
	/* ss-local's TCP in udp_only mode is SOCKS5 alone: nothing for the plugin */
	expect_error("plugin_mode tcp_only with mode udp_only leaves the plugin 'p' nothing to "
		     "carry",
		     SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-U", "--plugin",
		     "p", NULL);
	expect_error("plugin_mode udp_only with mode tcp_only leaves the plugin 'p' nothing to "
		     "carry",
		     SS_PROG_SERVER, "-p", "1", "-k", "pw", "--plugin", "p", "--plugin-mode",
		     "udp_only", NULL);
	expect_error("unknown option '--bogus'", SS_PROG_LOCAL, "--bogus", NULL);
	expect_error("unknown option -x", SS_PROG_LOCAL, "-x", NULL);
	expect_error("option -p needs a value", SS_PROG_LOCAL, "-p", NULL);
	expect_error("option --acl needs a value", SS_PROG_LOCAL, "--acl", NULL);
	expect_error("option --fast-open takes no value", SS_PROG_LOCAL, "--fast-open=yes", NULL);
	expect_error("unexpected argument 'stray'", SS_PROG_LOCAL, "-s", "h", "stray", NULL);
	/* A message quoting a value stays one line whatever the value holds. */
	expect_error("unexpected argument 'a?b?'", SS_PROG_LOCAL, "-s", "h", "a\nb\r", NULL);
	expect_error("invalid port '1?2' for -p", SS_PROG_LOCAL, "-p", "1\n2", NULL);
	expect_error("one-time auth was removed", SS_PROG_LOCAL, "-A", NULL);
	expect_error("-T/--tcp-tproxy is only for ss-redir", SS_PROG_LOCAL, "-T", NULL);
	expect_error("-T/--tcp-tproxy is only for ss-redir", SS_PROG_TUNNEL, "--tcp-tproxy", NULL);
	expect_error("-L is only for ss-tunnel", SS_PROG_REDIR, "-L", "1.2.3.4:5", NULL);
	expect_error("--manager-address is for ss-server", SS_PROG_LOCAL, "--manager-address",
		     "/tmp/m.sock", NULL);
	expect_error("--metrics is for ss-server", SS_PROG_TUNNEL, "--metrics", "127.0.0.1:9",
		     NULL);
	expect_error("--executable is an ss-manager flag", SS_PROG_SERVER, "--executable", "x",
		     NULL);
	char many[20][16];
	char *argv[64] = {"ss-local"};
	int argc = 1;
	for (int i = 0; i < 17; i++) {
		snprintf(many[i], sizeof(many[i]), "10.0.0.%d", i);
		argv[argc++] = "-s";
		argv[argc++] = many[i];
	}
	assert_int_equal(ss_config_parse(&cfg, SS_PROG_LOCAL, argc, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_ERROR);
	assert_non_null(strstr(err, "too many servers (at most 16) at -s/server"));

	/* Method errors are the lookup's own line. */
	ss_method_lookup("rc4-md5", &m, expect, sizeof(expect));
	expect_error(expect, SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", "-m",
		     "rc4-md5", NULL);
	assert_non_null(strstr(err, "rc4-md5"));
	ss_method_lookup("aes-256-cfb", &m, expect, sizeof(expect));
	expect_error(expect, SS_PROG_SERVER, "-m", "aes-256-cfb", NULL);
	ss_method_lookup("rot13", &m, expect, sizeof(expect));
	expect_error(expect, SS_PROG_LOCAL, "-m", "rot13", NULL);
	assert_non_null(strstr(err, "rot13"));
}

/* JSON */

static void test_json_forms(void **state)
{
	(void)state;
	const char *path =
	    write_file("forms.json", "{\n"
				     "  \"server\": \"192.0.2.1\",\n"
				     "  \"server_port\": 8388,\n"
				     "  \"local_address\": \"0.0.0.0\",\n"
				     "  \"local_port\": \"1080\",\n"
				     "  \"password\": \"from-file\",\n"
				     "  \"method\": \"aes-128-gcm\",\n"
				     "  \"timeout\": \"120\",\n"
				     "  \"user\": \"nobody\",\n"
				     "  \"fast_open\": true,\n"
				     "  \"reuse_port\": true,\n"
				     "  \"no_delay\": true,\n"
				     "  \"mptcp\": true,\n"
				     "  \"ipv6_first\": true,\n"
				     "  \"use_syslog\": true,\n"
				     "  \"nofile\": 65536,\n"
				     "  \"nameserver\": \"9.9.9.9\",\n"
				     "  \"mode\": \"udp_only\",\n"
				     "  \"mtu\": 1500,\n"
				     "  \"verbose\": true,\n"
				     "  \"interface\": \"wlan0\",\n"
				     "  \"acl\": \"/etc/a.acl\",\n"
				     "  \"plugin\": \"v2ray-plugin\",\n"
				     "  \"plugin_opts\": \"server\",\n"
				     "  \"plugin_mode\": \"tcp_and_udp\",\n"
				     "  \"local_ipv4_address\": \"192.0.2.50\",\n"
				     "  \"local_ipv6_address\": \"2001:db8::50\",\n"
				     "  \"tunnel_address\": \"example.com:443\",\n"
				     "  \"port_password\": {\"1\": \"x\"},\n"
				     "  \"workdir\": \"/tmp\",\n"
				     "  \"dscp\": {},\n"
				     "  \"some_future_key\": [1, 2, {\"a\": null}],\n"
				     "  \"auth\": false\n"
				     "}\n");
	expect_run(SS_PROG_TUNNEL, "-c", path, NULL);
	assert_string_equal(cfg.config_file, path);
	assert_int_equal(cfg.n_servers, 1);
	assert_string_equal(cfg.servers[0].host, "192.0.2.1");
	assert_int_equal(cfg.server_port, 8388);
	assert_string_equal(cfg.local_addr, "0.0.0.0");
	assert_int_equal(cfg.local_port, 1080);
	assert_int_equal(cfg.timeout, 120);
	assert_string_equal(cfg.user, "nobody");
	assert_true(cfg.fast_open);
	assert_true(cfg.reuse_port);
	assert_true(cfg.no_delay);
	assert_true(cfg.mptcp);
	assert_true(cfg.ipv6_first);
	assert_true(cfg.use_syslog);
	assert_int_equal(cfg.nofile, 65536);
	assert_string_equal(cfg.nameserver, "9.9.9.9");
	assert_int_equal(cfg.mode, SS_MODE_UDP_ONLY);
	assert_int_equal(cfg.mtu, 1500);
	assert_int_equal(cfg.verbose, 1);
	assert_string_equal(cfg.iface, "wlan0");
	assert_string_equal(cfg.acl, "/etc/a.acl");
	assert_string_equal(cfg.plugin, "v2ray-plugin");
	assert_string_equal(cfg.plugin_opts, "server");
	assert_int_equal(cfg.plugin_mode, SS_MODE_TCP_AND_UDP);
	/* mode udp_only: of tcp_and_udp, the plugin carries UDP alone */
	assert_false(cfg.plugin_tcp);
	assert_true(cfg.plugin_udp);
	assert_string_equal(cfg.local_ipv4_addr, "192.0.2.50");
	assert_string_equal(cfg.local_ipv6_addr, "2001:db8::50");
	assert_true(cfg.have_tunnel_addr);
	assert_string_equal(cfg.tunnel_addr.domain, "example.com");
	assert_int_equal(cfg.tunnel_addr.port, 443);
	expect_key_from_password("aes-128-gcm", "from-file");

	/* ss-local ignores tunnel_address, as libev does. */
	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_false(cfg.have_tunnel_addr);
}

static void test_json_servers(void **state)
{
	(void)state;
	const char *path;

	path = write_file("s1.json", "{\"server\": \"host.example:8389\", \"local_port\": 1080,"
				     " \"password\": \"pw\", \"timeout\": 5}");
	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_int_equal(cfg.n_servers, 1);
	assert_string_equal(cfg.servers[0].host, "host.example");
	assert_int_equal(cfg.servers[0].port, 8389);
	assert_int_equal(cfg.timeout, 5);

	path = write_file("s2.json", "{\"server\": [\"a.example\", \"[2001:db8::7]:443\", \"::1\","
				     " \"10.0.0.1:1\"], \"server_port\": \"8388\","
				     " \"local_port\": 1080, \"password\": \"pw\"}");
	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_int_equal(cfg.n_servers, 4);
	assert_string_equal(cfg.servers[0].host, "a.example");
	assert_int_equal(cfg.servers[0].port, 0);
	assert_string_equal(cfg.servers[1].host, "2001:db8::7");
	assert_int_equal(cfg.servers[1].port, 443);
	assert_string_equal(cfg.servers[2].host, "::1");
	assert_int_equal(cfg.servers[2].port, 0);
	assert_string_equal(cfg.servers[3].host, "10.0.0.1");
	assert_int_equal(cfg.servers[3].port, 1);
	assert_int_equal(cfg.server_port, 8388);

	/* The documented ss-server form for both families. */
	path =
	    write_file("s3.json", "{\"server\": [\"::0\", \"0.0.0.0\"], \"server_port\": 8388,"
				  " \"password\": \"pw\", \"method\": \"chacha20-ietf-poly1305\"}");
	expect_run(SS_PROG_SERVER, "-c", path, NULL);
	assert_int_equal(cfg.n_servers, 2);
	assert_string_equal(cfg.servers[0].host, "::0");
	assert_string_equal(cfg.servers[1].host, "0.0.0.0");

	path = write_file("s4.json", "{\"server\": [], \"server_port\": 8388, \"password\": \"pw\","
				     " \"local_port\": null, \"plugin\": \"\"}");
	expect_run(SS_PROG_SERVER, "-c", path, NULL);
	assert_string_equal(cfg.servers[0].host, "::");
	assert_string_equal(cfg.plugin, "");
}

static void test_json_key(void **state)
{
	(void)state;
	uint8_t want[32];
	for (int i = 0; i < 32; i++)
		want[i] = (uint8_t)(i + 1);
	const char *path =
	    write_file("key.json", "{\"server\": \"h\", \"server_port\": 1,"
				   " \"local_port\": 2, \"password\": \"ignored\","
				   " \"key\": \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA\"}");
	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_memory_equal(cfg.key, want, 32);

	/* A password on the command line beats the file's key and password. */
	expect_run(SS_PROG_LOCAL, "-c", path, "-k", "cli", NULL);
	expect_key_from_password(SS_DEFAULT_METHOD, "cli");
}

static void test_cli_overrides_json(void **state)
{
	(void)state;
	const char *path =
	    write_file("over.json", "{\"server\": [\"file1\", \"file2\"],"
				    " \"server_port\": 1111, \"local_port\": 2222,"
				    " \"local_address\": \"10.9.9.9\","
				    " \"password\": \"file-pw\", \"method\": \"aes-128-gcm\","
				    " \"timeout\": 30, \"mode\": \"tcp_and_udp\","
				    " \"fast_open\": false, \"verbose\": 0, \"mtu\": 1000,"
				    " \"nofile\": 100, \"user\": \"fileuser\","
				    " \"plugin\": \"file-plugin\", \"acl\": \"/file.acl\","
				    " \"nameserver\": \"1.2.3.4\", \"ipv6_first\": false,"
				    " \"tunnel_address\": \"file:1\"}");

	/* -c first, then flags; and flags first, then -c: the same result. */
	for (int order = 0; order < 2; order++) {
		if (order == 0)
			expect_run(SS_PROG_TUNNEL, "-c", path, "-s", "cli", "-p", "3333", "-l",
				   "4444", "-b", "127.0.0.2", "-k", "cli-pw", "-m", "aes-256-gcm",
				   "-t", "99", "-U", "--fast-open", "-v", "--mtu", "1300", "-n",
				   "5000", "-a", "cliuser", "--plugin", "", "--acl", "/cli.acl",
				   "-d", "5.6.7.8", "-6", "-L", "cli:2", NULL);
		else
			expect_run(SS_PROG_TUNNEL, "-s", "cli", "-p", "3333", "-l", "4444", "-b",
				   "127.0.0.2", "-k", "cli-pw", "-m", "aes-256-gcm", "-t", "99",
				   "-U", "--fast-open", "-v", "--mtu", "1300", "-n", "5000", "-a",
				   "cliuser", "--plugin", "", "--acl", "/cli.acl", "-d", "5.6.7.8",
				   "-6", "-L", "cli:2", "-c", path, NULL);
		assert_int_equal(cfg.n_servers, 1);
		assert_string_equal(cfg.servers[0].host, "cli");
		assert_int_equal(cfg.server_port, 3333);
		assert_int_equal(cfg.local_port, 4444);
		assert_string_equal(cfg.local_addr, "127.0.0.2");
		assert_int_equal(cfg.timeout, 99);
		assert_int_equal(cfg.mode, SS_MODE_UDP_ONLY);
		assert_true(cfg.fast_open);
		assert_int_equal(cfg.verbose, 1);
		assert_int_equal(cfg.mtu, 1300);
		assert_int_equal(cfg.nofile, 5000);
		assert_string_equal(cfg.user, "cliuser");
		assert_string_equal(cfg.plugin, ""); /* --plugin "" turns the file's off */
		assert_string_equal(cfg.acl, "/cli.acl");
		assert_string_equal(cfg.nameserver, "5.6.7.8");
		assert_true(cfg.ipv6_first);
		assert_string_equal(cfg.tunnel_addr.domain, "cli");
		assert_int_equal(cfg.tunnel_addr.port, 2);
		expect_key_from_password("aes-256-gcm", "cli-pw");
	}

	/* What the command line leaves alone still comes from the file. */
	expect_run(SS_PROG_TUNNEL, "-c", path, "-s", "cli", NULL);
	assert_string_equal(cfg.servers[0].host, "cli");
	assert_int_equal(cfg.server_port, 1111);
	assert_int_equal(cfg.mode, SS_MODE_TCP_AND_UDP);
	assert_string_equal(cfg.plugin, "file-plugin");
	expect_key_from_password("aes-128-gcm", "file-pw");
}

static void test_parse_json_alone(void **state)
{
	(void)state;
	ss_config_init(&cfg, SS_PROG_LOCAL);
	assert_int_equal(
	    ss_config_parse_json(&cfg, "{\"server_port\": 1, \"timeout\": 7}", err, sizeof(err)),
	    0);
	assert_int_equal(cfg.server_port, 1);
	assert_int_equal(cfg.timeout, 7);
	ss_config_clear(&cfg);
}

static void expect_json_error(ss_prog_t prog, const char *json, const char *want)
{
	const char *path = write_file("bad.json", json);
	char prefix[600];

	snprintf(prefix, sizeof(prefix), "config file '%s': ", path);
	expect_error(want, prog, "-c", path, NULL);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fail_msg("want prefix <%s>, got <%s>", prefix, err);
}

static void test_json_errors(void **state)
{
	(void)state;
	char expect[600];
	const ss_method_t *m;

	expect_json_error(SS_PROG_LOCAL,
			  "{\n  \"server\": \"a\",\n  \"server_port\": ,\n  \"password\": \"x\"\n}",
			  "invalid JSON at line 3, column 18: a value is missing after the ':'");
	expect_json_error(SS_PROG_LOCAL, "{\"server\": \"a\"} trailing",
			  "invalid JSON at line 1, column 17: text after the end");
	/* Control characters in a quoted value do not break the line. */
	expect_json_error(SS_PROG_LOCAL, "{\"method\": \"rot\\n13\"}", "unknown method 'rot?13'");
	ss_config_init(&cfg, SS_PROG_LOCAL);
	assert_int_equal(
	    ss_config_parse_json(&cfg, "{\"timeout\": \"a\\u0007b\"}", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not \"a?b\""));
	ss_config_clear(&cfg);
	expect_json_error(SS_PROG_LOCAL, "", "invalid JSON");
	expect_json_error(SS_PROG_LOCAL, "[1, 2]", "the top level must be a JSON object");
	expect_json_error(SS_PROG_LOCAL, "{\"timeout\": \"abc\"}",
			  "\"timeout\" must be a positive number, not \"abc\"");
	expect_json_error(SS_PROG_LOCAL, "{\"timeout\": -3}",
			  "\"timeout\" must be a positive number, not -3");
	expect_json_error(SS_PROG_LOCAL, "{\"timeout\": 1.5}",
			  "\"timeout\" must be a positive number, not 1.5");
	expect_json_error(SS_PROG_LOCAL, "{\"server_port\": 70000}",
			  "invalid port '70000' for -p/server_port (expected 1-65535)");
	expect_json_error(SS_PROG_LOCAL, "{\"server_port\": \"70000\"}",
			  "invalid port '70000' for -p/server_port (expected 1-65535)");
	expect_json_error(SS_PROG_LOCAL, "{\"local_port\": true}",
			  "invalid port 'true' for -l/local_port");
	expect_json_error(SS_PROG_LOCAL, "{\"server\": 42}",
			  "\"server\" must be a string or an array of strings, not 42");
	expect_json_error(SS_PROG_LOCAL, "{\"server\": [\"a\", 1]}",
			  "\"server\" entries must be strings, not 1");
	expect_json_error(SS_PROG_LOCAL, "{\"server\": \"h:0\"}", "invalid port '0' for -s/server");
	expect_json_error(SS_PROG_LOCAL,
			  "{\"server\": [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\","
			  "\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]}",
			  "too many servers (at most 16) at -s/server");
	expect_json_error(SS_PROG_LOCAL, "{\"fast_open\": \"yes\"}",
			  "\"fast_open\" must be true or false, not \"yes\"");
	expect_json_error(SS_PROG_LOCAL, "{\"mode\": \"tcp\"}",
			  "\"mode\" must be \"tcp_only\", \"tcp_and_udp\" or \"udp_only\", not "
			  "\"tcp\"");
	expect_json_error(SS_PROG_LOCAL, "{\"mtu\": \"big\"}",
			  "\"mtu\" must be a number from 0 to 65535, not \"big\"");
	expect_json_error(SS_PROG_LOCAL, "{\"nofile\": 0}",
			  "\"nofile\" must be a positive number, not 0");
	expect_json_error(SS_PROG_LOCAL, "{\"user\": true}", "\"user\" must be a string, not true");
	expect_json_error(SS_PROG_LOCAL, "{\"password\": [\"x\"]}",
			  "\"password\" must be a string, not an array");
	expect_json_error(SS_PROG_LOCAL, "{\"key\": 5}", "\"key\" must be a base64 string, not 5");
	expect_json_error(SS_PROG_LOCAL, "{\"local_ipv4_address\": \"::1\"}",
			  "\"local_ipv4_address\" must be an IPv4 address, not \"::1\"");
	expect_json_error(SS_PROG_LOCAL, "{\"local_ipv6_address\": \"1.2.3.4\"}",
			  "\"local_ipv6_address\" must be an IPv6 address, not \"1.2.3.4\"");
	expect_json_error(SS_PROG_TUNNEL, "{\"tunnel_address\": \"nowhere\"}",
			  "tunnel address 'nowhere' for -L/tunnel_address needs a port");
	expect_json_error(SS_PROG_LOCAL, "{\"auth\": true}", "one-time auth was removed");
	expect_json_error(SS_PROG_LOCAL, "{\"verbose\": \"loud\"}",
			  "\"verbose\" must be true, false or a level 0-10, not \"loud\"");

	ss_method_lookup("aes-256-cfb", &m, expect, sizeof(expect));
	expect_json_error(SS_PROG_SERVER, "{\"method\": \"aes-256-cfb\"}", expect);
	assert_non_null(strstr(err, "aes-256-cfb"));
	ss_method_lookup("salsa20", &m, expect, sizeof(expect));
	expect_json_error(SS_PROG_LOCAL, "{\"method\": \"salsa20\"}", expect);

	/* A bad value the command line overrides is never looked at. */
	const char *path = write_file("shadowed.json", "{\"server_port\": \"bad\","
						       " \"method\": \"rc4-md5\"}");
	expect_run(SS_PROG_SERVER, "-c", path, "-p", "1", "-m", "aes-128-gcm", "-k", "pw", NULL);

	/* Messages never carry the secret. */
	path = write_file("secret.json", "{\"server_port\": 1, \"key\": \"c2VjcmV0LWtleQ==\"}");
	expect_error("invalid key", SS_PROG_SERVER, "-c", path, NULL);
	assert_null(strstr(err, "c2VjcmV0"));
}

/* ss-server's "users" (SIP023 multi-user), as shadowsocks-rust reads it. */
static void test_json_users(void **state)
{
	(void)state;
	uint8_t k1[16], k2[16], k3[16];
	for (int i = 0; i < 16; i++) {
		k1[i] = (uint8_t)(i + 1);
		k2[i] = (uint8_t)(i + 17);
		k3[i] = (uint8_t)(i + 33);
	}
	const char *path =
	    write_file("users.json", "{\"server_port\": 1, \"method\": \"2022-blake3-aes-128-gcm\","
				     " \"password\": \"" K16_1 "\", \"users\": ["
				     " {\"name\": \"alice\", \"password\": \"" K16_2 "\"},"
				     " {\"name\": \"bob\", \"password\": \"" K16_3 "\"}]}");

	expect_run(SS_PROG_SERVER, "-c", path, NULL);
	assert_memory_equal(cfg.key, k1, 16);
	assert_int_equal(cfg.n_users, 2);
	assert_non_null(cfg.users);
	assert_string_equal(cfg.users[0].name, "alice");
	assert_memory_equal(cfg.users[0].key, k2, 16);
	assert_string_equal(cfg.users[0].password, "");
	assert_string_equal(cfg.users[1].name, "bob");
	assert_memory_equal(cfg.users[1].key, k3, 16);
	ss_config_clear(&cfg);
	assert_null(cfg.users);
	assert_int_equal(cfg.n_users, 0);
	ss_config_clear(&cfg); /* twice is harmless */

	/* The command line's PSK is the server's own; the file's users stay. */
	expect_run(SS_PROG_SERVER, "-c", path, "-k", K16_3, NULL);
	assert_memory_equal(cfg.key, k3, 16);
	assert_int_equal(cfg.n_users, 2);
	ss_config_clear(&cfg);

	/* An empty list is no users. */
	path = write_file("users0.json", "{\"server_port\": 1, \"method\": "
					 "\"2022-blake3-aes-128-gcm\", \"password\": \"" K16_1
					 "\", \"users\": []}");
	expect_run(SS_PROG_SERVER, "-c", path, NULL);
	assert_int_equal(cfg.n_users, 0);
	assert_null(cfg.users);
	ss_config_clear(&cfg);

	/* Through ss_config_parse_json alone, clear frees what it allocated. */
	ss_config_init(&cfg, SS_PROG_SERVER);
	assert_int_equal(ss_config_parse_json(&cfg,
					      "{\"users\": [{\"name\": \"a\", \"password\": "
					      "\"x\"}], \"users\": [{\"name\": \"b\", "
					      "\"password\": \"y\"}]}",
					      err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_users, 1);
	assert_string_equal(cfg.users[0].name, "b");
	ss_config_clear(&cfg);
}

#define USERS_HEAD "{\"server_port\": 1, \"method\": \"2022-blake3-aes-128-gcm\", "
#define USERS_PSK "\"password\": \"" K16_1 "\", "
#define USER(n, k) "{\"name\": \"" n "\", \"password\": \"" k "\"}"

/* For the checks made once the method is known: no file prefix. */
static void expect_server_error(const char *json, const char *want)
{
	expect_error(want, SS_PROG_SERVER, "-c", write_file("users-bad.json", json), NULL);
}

static void test_json_users_errors(void **state)
{
	(void)state;

	expect_server_error(USERS_HEAD USERS_PSK "\"users\": [" USER("alice", K16_2) ", " USER(
				"bob", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=") "]}",
			    "\"users\"[1] (\"bob\"): invalid PSK for 2022-blake3-aes-128-gcm: it "
			    "must be the base64 of exactly 16 bytes");
	expect_server_error(USERS_HEAD USERS_PSK "\"users\": [" USER("alice", "not base64!") "]}",
			    "\"users\"[0] (\"alice\"): invalid PSK");
	assert_null(strstr(err, "not base64!"));
	expect_server_error(USERS_HEAD USERS_PSK "\"users\": [" USER("alice", K16_2 ":" K16_3) "]}",
			    "\"users\"[0] (\"alice\"): a user has one PSK, not a list");
	expect_server_error(USERS_HEAD USERS_PSK
			    "\"users\": [" USER("alice", K16_2) ", " USER("bob", K16_2) "]}",
			    "\"users\"[1] (\"bob\"): same PSK as \"users\"[0] (\"alice\")");
	expect_json_error(SS_PROG_SERVER,
			  USERS_HEAD USERS_PSK
			  "\"users\": [" USER("alice", K16_2) ", " USER("alice", K16_3) "]}",
			  "\"users\"[1]: name \"alice\" is already used by \"users\"[0]");
	expect_json_error(SS_PROG_SERVER, USERS_HEAD USERS_PSK "\"users\": [" USER("", K16_2) "]}",
			  "\"users\"[0]: \"name\" must be a non-empty string, not \"\"");
	expect_json_error(SS_PROG_SERVER,
			  USERS_HEAD USERS_PSK "\"users\": [{\"password\": \"" K16_2 "\"}]}",
			  "\"users\"[0]: \"name\" must be a non-empty string, not missing");
	expect_json_error(SS_PROG_SERVER,
			  USERS_HEAD USERS_PSK "\"users\": [{\"name\": 7, \"password\": "
					       "\"" K16_2 "\"}]}",
			  "\"users\"[0]: \"name\" must be a non-empty string, not 7");
	expect_json_error(SS_PROG_SERVER,
			  USERS_HEAD USERS_PSK "\"users\": [{\"name\": \"alice\"}]}",
			  "\"users\"[0] (\"alice\"): \"password\" must be the user's PSK");
	expect_json_error(SS_PROG_SERVER, USERS_HEAD USERS_PSK "\"users\": [\"alice\"]}",
			  "\"users\"[0] must be an object with \"name\" and \"password\"");
	expect_json_error(SS_PROG_SERVER, USERS_HEAD USERS_PSK "\"users\": {}}",
			  "\"users\" must be an array of objects, not an object");
	expect_server_error("{\"server_port\": 1, \"method\": \"aes-128-gcm\", \"password\": "
			    "\"pw\", \"users\": [" USER("alice", "a") "]}",
			    "with \"users\", a aes-128-gcm port serves its users alone");
	expect_server_error(
	    "{\"server_port\": 1, \"method\": \"none\", \"users\": [" USER("alice", "a") "]}",
	    "\"users\" needs a SIP004 AEAD method");
	expect_server_error(
	    "{\"server_port\": 1, \"method\": \"2022-blake3-chacha20-poly1305\", "
	    "\"password\": \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\", "
	    "\"users\": [" USER("alice", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=") "]}",
	    "\"users\": 2022-blake3-chacha20-poly1305 has no identity headers");
	/* The server's own PSK is the identity PSK its users sit behind. */
	expect_server_error(USERS_HEAD "\"users\": [" USER("alice", K16_2) "]}",
			    "missing password (-k or \"password\") or key (--key or \"key\")");
	expect_json_error(SS_PROG_LOCAL,
			  "{\"server\": \"h\", \"server_port\": 1, \"local_port\": 2, "
			  "\"users\": [" USER("alice", K16_2) "]}",
			  "\"users\" is for ss-server; ss-local takes the identity and user PSKs");
	expect_json_error(SS_PROG_TUNNEL, "{\"users\": [" USER("alice", K16_2) "]}",
			  "\"users\" is for ss-server; ss-tunnel");
	/* Each error path freed what it had allocated: LeakSanitizer checks. */
}

/* ss-server's "users" on a SIP004 port: a password (or key) each, maybe a
 * method of its own; the port has no password of its own. */
static void test_json_aead_users(void **state)
{
	(void)state;
	uint8_t want[32], k1[16];
	const ss_method_t *m256, *m128, *chacha;

	for (int i = 0; i < 16; i++)
		k1[i] = (uint8_t)(i + 1);
	assert_int_equal(ss_method_lookup("aes-256-gcm", &m256, err, sizeof(err)), 0);
	assert_int_equal(ss_method_lookup("aes-128-gcm", &m128, err, sizeof(err)), 0);
	assert_int_equal(ss_method_lookup("chacha20-ietf-poly1305", &chacha, err, sizeof(err)), 0);
	const char *path = write_file(
	    "aead-users.json",
	    "{\"server_port\": 1, \"method\": \"aes-256-gcm\", \"users\": ["
	    " {\"name\": \"alice\", \"password\": \"pw-a\"},"
	    " {\"name\": \"bob\", \"password\": \"pw-b\", \"method\": \"chacha20-ietf-poly1305\"},"
	    " {\"name\": \"carol\", \"key\": \"" K16_1 "\", \"method\": \"aes-128-gcm\"}]}");

	expect_run(SS_PROG_SERVER, "-c", path, NULL);
	assert_int_equal(cfg.n_users, 3);
	assert_ptr_equal(cfg.users[0].method, m256);
	ss_key_from_password(m256, "pw-a", want);
	assert_memory_equal(cfg.users[0].key, want, 32);
	assert_ptr_equal(cfg.users[1].method, chacha);
	ss_key_from_password(chacha, "pw-b", want);
	assert_memory_equal(cfg.users[1].key, want, 32);
	assert_ptr_equal(cfg.users[2].method, m128);
	assert_memory_equal(cfg.users[2].key, k1, 16);
	assert_string_equal(cfg.users[2].key_b64, "");
	/* Kept, as the top-level password is, for --print-url. */
	assert_string_equal(cfg.users[1].password, "pw-b");
	ss_config_clear(&cfg);
}

#define AUSERS "{\"server_port\": 1, \"method\": \"aes-256-gcm\", \"users\": ["

static void test_json_aead_users_errors(void **state)
{
	(void)state;

	expect_server_error(AUSERS "{\"name\": \"a\", \"password\": \"x\", \"method\": "
				   "\"2022-blake3-aes-128-gcm\"}]}",
			    "\"users\"[0] (\"a\"): \"method\" 2022-blake3-aes-128-gcm is not a "
			    "SIP004 AEAD method");
	expect_json_error(SS_PROG_SERVER,
			  AUSERS "{\"name\": \"a\", \"password\": \"x\", \"method\": \"rot13\"}]}",
			  "\"users\"[0] (\"a\"): unknown method");
	expect_json_error(SS_PROG_SERVER,
			  AUSERS "{\"name\": \"a\", \"password\": \"x\", \"method\": 3}]}",
			  "\"users\"[0] (\"a\"): \"method\" must be a method's name, not 3");
	expect_server_error(AUSERS "{\"name\": \"a\", \"password\": \"x\", \"key\": \"" K16_1
				   "\"}]}",
			    "\"users\"[0] (\"a\"): give \"password\" or \"key\", not both");
	expect_json_error(SS_PROG_SERVER, AUSERS "{\"name\": \"a\", \"password\": \"\"}]}",
			  "\"users\"[0] (\"a\"): \"password\" must be the user's PSK");
	expect_server_error(AUSERS "{\"name\": \"a\", \"key\": \"" K16_1 "\"}]}",
			    "\"users\"[0] (\"a\"): invalid \"key\": aes-256-gcm needs the base64 "
			    "of exactly 32 bytes");
	assert_null(strstr(err, K16_1));
	expect_server_error(AUSERS "{\"name\": \"a\", \"password\": \"same\"}, {\"name\": \"b\", "
				   "\"password\": \"same\"}]}",
			    "\"users\"[1] (\"b\"): same method and key as \"users\"[0] (\"a\")");
	assert_null(strstr(err, "same\""));
	/* The same password under two algorithms is two users. */
	expect_run(SS_PROG_SERVER, "-c",
		   write_file("users-two.json",
			      AUSERS "{\"name\": \"a\", \"password\": \"same\"}, {\"name\": \"b\", "
				     "\"password\": \"same\", \"method\": "
				     "\"chacha20-ietf-poly1305\"}]}"),
		   NULL);
	ss_config_clear(&cfg);
	expect_server_error(AUSERS "{\"name\": \"a\", \"password\": \"x\"}], \"key\": \"" K16_1
				   "\"}",
			    "with \"users\", a aes-256-gcm port serves its users alone");
	/* A 2022 user takes the port's method and a PSK alone. */
	expect_server_error(USERS_HEAD USERS_PSK "\"users\": [{\"name\": \"a\", \"password\": "
						 "\"" K16_2 "\", \"method\": \"aes-128-gcm\"}]}",
			    "\"users\"[0] (\"a\"): a 2022 user has its PSK in \"password\" alone");
}

static void test_file_errors(void **state)
{
	(void)state;
	char want[600];

	expect_error("cannot read config file '/nonexistent/ss.json': No such file or directory",
		     SS_PROG_LOCAL, "-c", "/nonexistent/ss.json", NULL);
	snprintf(want, sizeof(want), "cannot read config file '%s': Is a directory", tmpdir);
	expect_error(want, SS_PROG_LOCAL, "-c", tmpdir, NULL);
	expect_error("empty config file path for -c", SS_PROG_LOCAL, "-c", "", NULL);
}

/* Makes dir (and any parents missing) and writes a client's file in it
 * naming host; returns the file's path in path[cap]. */
static void default_file(const char *dir, const char *host, char *path, size_t cap)
{
	char cmd[800];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, cap, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"server\": \"%s\", \"server_port\": 1, \"local_port\": 2,"
		" \"password\": \"pw\"}",
		host);
	fclose(f);
}

static void saved_env(const char *name, char **saved)
{
	const char *v = getenv(name);

	*saved = v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char *saved)
{
	if (saved)
		setenv(name, saved, 1);
	else
		unsetenv(name);
	free(saved);
}

/* With no settings on the command line: the user file libev 3.3.5 would
 * read, then our package's system file, then libev's; SS_SYSCONFDIR in
 * place of /etc, so that the real /etc plays no part. */
static void test_default_config(void **state)
{
	(void)state;
	char xdg[300], home[300], etc[300], dir[400], path[1024], ours[500], libev[500];
	char *argv[] = {"ss-local", NULL};
	char *old_xdg, *old_home, *old_etc;

	saved_env("XDG_CONFIG_HOME", &old_xdg);
	saved_env("HOME", &old_home);
	saved_env("SS_SYSCONFDIR", &old_etc);
	snprintf(etc, sizeof(etc), "%s/etc", tmpdir);
	setenv("SS_SYSCONFDIR", etc, 1);

	snprintf(xdg, sizeof(xdg), "%s/xdg", tmpdir);
	snprintf(dir, sizeof(dir), "%s/shadowsocks-libev", xdg);
	default_file(dir, "xdg.example", path, sizeof(path));
	snprintf(dir, sizeof(dir), "%s/shadowsocks-c", etc);
	default_file(dir, "ours.example", ours, sizeof(ours));
	snprintf(dir, sizeof(dir), "%s/shadowsocks-libev", etc);
	default_file(dir, "libev.example", libev, sizeof(libev));

	/* The user's file first, as libev: it is the user's own choice. */
	setenv("XDG_CONFIG_HOME", xdg, 1);
	assert_int_equal(ss_config_parse(&cfg, SS_PROG_LOCAL, 1, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_RUN);
	assert_string_equal(cfg.config_file, path);
	assert_true(cfg.config_default);
	assert_string_equal(cfg.servers[0].host, "xdg.example");

	/* Any setting at all turns the default file off, as in libev. */
	assert_int_equal(run(SS_PROG_LOCAL, "-v", NULL), SS_CONFIG_ERROR);
	assert_string_equal(cfg.config_file, "");
	assert_false(cfg.config_default);
	/* --check and --print-url ask about what would run: the same file. */
	expect_run(SS_PROG_LOCAL, "--check", NULL);
	assert_true(cfg.check && cfg.config_default);
	assert_string_equal(cfg.config_file, path);
	expect_run(SS_PROG_SERVER, "--print-url", NULL);
	assert_true(cfg.print_url && cfg.config_default);
	assert_string_equal(cfg.config_file, path);
	expect_error("empty address for -b", SS_PROG_LOCAL, "--check", "-b", "", NULL);
	assert_string_equal(cfg.config_file, "");
	assert_int_equal(run(SS_PROG_LOCAL, "--check", "-v", NULL), SS_CONFIG_ERROR);
	assert_string_equal(cfg.config_file, "");
	/* -c names the file itself. */
	expect_run(SS_PROG_LOCAL, "--check", "-c", libev, NULL);
	assert_false(cfg.config_default);
	assert_string_equal(cfg.servers[0].host, "libev.example");

	/* Without XDG_CONFIG_HOME: $HOME/.config/shadowsocks-libev/config.json */
	unsetenv("XDG_CONFIG_HOME");
	snprintf(home, sizeof(home), "%s/home", tmpdir);
	snprintf(dir, sizeof(dir), "%s/.config/shadowsocks-libev", home);
	default_file(dir, "home.example", path, sizeof(path));
	setenv("HOME", home, 1);
	assert_int_equal(ss_config_parse(&cfg, SS_PROG_LOCAL, 1, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_RUN);
	assert_string_equal(cfg.config_file, path);
	assert_string_equal(cfg.servers[0].host, "home.example");

	/* XDG_CONFIG_HOME set but without the file: the system files, never
	 * $HOME's (libev tries one user path only); ours before libev's. */
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	expect_run(SS_PROG_LOCAL, "--check", NULL);
	assert_string_equal(cfg.config_file, ours);
	assert_string_equal(cfg.servers[0].host, "ours.example");

	/* Without ours, libev's. */
	assert_int_equal(unlink(ours), 0);
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	assert_int_equal(ss_config_parse(&cfg, SS_PROG_LOCAL, 1, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_RUN);
	assert_string_equal(cfg.config_file, libev);
	assert_string_equal(cfg.servers[0].host, "libev.example");

	/* Neither: the message names both, and how to go on. */
	assert_int_equal(unlink(libev), 0);
	assert_int_equal(ss_config_parse(&cfg, SS_PROG_LOCAL, 1, argv, NULL, err, sizeof(err)),
			 SS_CONFIG_ERROR);
	snprintf(path, sizeof(path),
		 "no settings given, and no config file at %s/shadowsocks-c/config.json or "
		 "%s/shadowsocks-libev/config.json: give -c FILE, or the settings (-h lists them)",
		 etc, etc);
	assert_string_equal(err, path);

	/* Without SS_SYSCONFDIR, /etc. */
	unsetenv("SS_SYSCONFDIR");
	ss_config_parse(&cfg, SS_PROG_LOCAL, 1, argv, NULL, err, sizeof(err));
	assert_true(strcmp(cfg.config_file, "/etc/shadowsocks-c/config.json") == 0 ||
		    strcmp(cfg.config_file, "/etc/shadowsocks-libev/config.json") == 0);

	restore_env("XDG_CONFIG_HOME", old_xdg);
	restore_env("HOME", old_home);
	restore_env("SS_SYSCONFDIR", old_etc);
}

static void test_clear(void **state)
{
	(void)state;
	uint8_t zero[SS_MAX_KEY_LEN] = {0};

	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-l", "2", "-k", "pw", NULL);
	assert_memory_not_equal(cfg.key, zero, sizeof(zero));
	ss_config_clear(&cfg);
	assert_memory_equal(cfg.key, zero, sizeof(zero));

	/* An error leaves no secret behind either. */
	expect_error("missing local port", SS_PROG_LOCAL, "-s", "h", "-p", "1", "-k", "pw", NULL);
	assert_string_equal(cfg.password, "");
}

/* Server entries: "servers" objects, ss:// URLs, each with its own method,
 * key and plugin or the top-level ones. */

static void expect_entry_key(size_t i, const char *method, const char *password)
{
	const ss_method_t *m;
	uint8_t want[SS_MAX_KEY_LEN] = {0};
	char e[256];

	assert_int_equal(ss_method_lookup(method, &m, e, sizeof(e)), 0);
	assert_ptr_equal(cfg.servers[i].method, m);
	ss_key_from_password(m, password, want);
	assert_memory_equal(cfg.servers[i].key, want, m->key_len);
	assert_string_equal(cfg.servers[i].password, "");
	assert_string_equal(cfg.servers[i].key_b64, "");
}

static void test_servers_objects(void **state)
{
	(void)state;
	const char *path = write_file(
	    "objs.json",
	    "{\"local_port\": 1080, \"server_port\": 8388, \"method\": \"aes-128-gcm\","
	    " \"password\": \"top\", \"plugin\": \"obfs-local\", \"plugin_opts\": \"obfs=http\","
	    " \"servers\": ["
	    "  {\"server\": \"a.example\", \"server_port\": 9001, \"method\": \"aes-256-gcm\","
	    "   \"password\": \"pa\", \"remarks\": \"first\", \"plugin\": \"v2ray-plugin\","
	    "   \"plugin_opts\": \"tls;host=a.example\", \"plugin_mode\": \"tcp_and_udp\"},"
	    "  {\"address\": \"192.0.2.2\", \"port\": \"9002\", \"tag\": \"second\"},"
	    "  {\"server\": \"off.example\", \"disabled\": true},"
	    "  {\"server\": \"[2001:db8::3]:9003\", \"method\": \"2022-blake3-aes-128-gcm\","
	    "   \"key\": \"" K16_1 ":" K16_2 "\", \"plugin\": \"\"},"
	    "  \"192.0.2.4:9004\""
	    " ]}");

	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_int_equal(cfg.n_servers, 4);
	assert_string_equal(cfg.servers[0].host, "a.example");
	assert_int_equal(cfg.servers[0].port, 9001);
	assert_string_equal(cfg.servers[0].tag, "first");
	assert_string_equal(cfg.servers[0].plugin, "v2ray-plugin");
	assert_string_equal(cfg.servers[0].plugin_opts, "tls;host=a.example");
	assert_int_equal(cfg.servers[0].plugin_mode, SS_MODE_TCP_AND_UDP);
	assert_true(cfg.servers[0].plugin_tcp);
	assert_false(cfg.servers[0].plugin_udp); /* mode tcp_only: no UDP to carry */
	expect_entry_key(0, "aes-256-gcm", "pa");
	/* The older names, and the top-level method, password and plugin. */
	assert_string_equal(cfg.servers[1].host, "192.0.2.2");
	assert_int_equal(cfg.servers[1].port, 9002);
	assert_string_equal(cfg.servers[1].tag, "second");
	assert_string_equal(cfg.servers[1].plugin, "obfs-local");
	assert_string_equal(cfg.servers[1].plugin_opts, "obfs=http");
	expect_entry_key(1, "aes-128-gcm", "top");
	/* A disabled entry is left out; an empty plugin is none. */
	assert_string_equal(cfg.servers[2].host, "2001:db8::3");
	assert_int_equal(cfg.servers[2].port, 9003);
	assert_string_equal(cfg.servers[2].method->name, "2022-blake3-aes-128-gcm");
	assert_int_equal(cfg.servers[2].psks.n, 2);
	assert_string_equal(cfg.servers[2].plugin, "");
	/* A string entry reads as a "server" one. */
	assert_string_equal(cfg.servers[3].host, "192.0.2.4");
	assert_int_equal(cfg.servers[3].port, 9004);
	expect_entry_key(3, "aes-128-gcm", "top");
	expect_key_from_password("aes-128-gcm", "top");

	/* Every server with its own password: none needed at the top. */
	path = write_file("own.json",
			  "{\"local_port\": 1080, \"servers\": ["
			  " {\"server\": \"h1\", \"server_port\": 1, \"password\": \"p1\"},"
			  " {\"server\": \"h2:2\", \"password\": \"p2\"}]}");
	expect_run(SS_PROG_TUNNEL, "-c", path, "-L", "192.0.2.9:53", NULL);
	expect_entry_key(0, SS_DEFAULT_METHOD, "p1");
	expect_entry_key(1, SS_DEFAULT_METHOD, "p2");
	/* The command line's password is for the servers without their own. */
	expect_run(SS_PROG_LOCAL, "-c", path, "-k", "cli", NULL);
	expect_entry_key(0, SS_DEFAULT_METHOD, "p1");
}

/* Each entry's plugin, options and mode: its own or the top-level ones,
 * options never taken from the top for a plugin of the entry's own, and
 * what that leaves the plugin to carry checked per entry. */
static void test_server_plugins(void **state)
{
	(void)state;
	const char *path = write_file(
	    "plug.json",
	    "{\"local_port\": 1, \"server_port\": 9, \"password\": \"p\","
	    " \"mode\": \"tcp_and_udp\", \"plugin\": \"top\", \"plugin_opts\": \"topopts\","
	    " \"plugin_mode\": \"udp_only\", \"servers\": ["
	    "  {\"server\": \"h1\"},"
	    "  {\"server\": \"h2\", \"plugin\": \"own\"},"
	    "  {\"server\": \"h3\", \"plugin_opts\": \"o3\"},"
	    "  {\"server\": \"h4\", \"plugin\": \"own\", \"plugin_mode\": \"tcp_and_udp\"},"
	    "  {\"server\": \"h5\", \"plugin\": \"\"}]}");

	expect_run(SS_PROG_LOCAL, "-c", path, NULL);
	assert_int_equal(cfg.n_servers, 5);
	assert_string_equal(cfg.servers[0].plugin, "top");
	assert_string_equal(cfg.servers[0].plugin_opts, "topopts");
	assert_int_equal(cfg.servers[0].plugin_mode, SS_MODE_UDP_ONLY);
	assert_false(cfg.servers[0].plugin_tcp);
	assert_true(cfg.servers[0].plugin_udp);
	assert_string_equal(cfg.servers[1].plugin, "own");
	assert_string_equal(cfg.servers[1].plugin_opts, "");
	assert_int_equal(cfg.servers[1].plugin_mode, SS_MODE_UDP_ONLY);
	assert_string_equal(cfg.servers[2].plugin, "top");
	assert_string_equal(cfg.servers[2].plugin_opts, "o3");
	assert_string_equal(cfg.servers[3].plugin, "own");
	assert_int_equal(cfg.servers[3].plugin_mode, SS_MODE_TCP_AND_UDP);
	assert_true(cfg.servers[3].plugin_tcp);
	assert_true(cfg.servers[3].plugin_udp);
	assert_string_equal(cfg.servers[4].plugin, "");
	assert_false(cfg.servers[4].plugin_tcp || cfg.servers[4].plugin_udp);

	/* Nothing to carry, for one entry: the message names it. */
	expect_error(
	    "server 2 (\"servers\"[1]): plugin_mode udp_only with mode tcp_only leaves the "
	    "plugin 'p2' nothing to carry",
	    SS_PROG_LOCAL, "-c",
	    write_file("plug2.json", "{\"local_port\": 1, \"server_port\": 9, \"password\": \"p\","
				     " \"servers\": [{\"server\": \"h1\"},"
				     " {\"server\": \"h2\", \"plugin\": \"p2\","
				     " \"plugin_mode\": \"udp_only\"}]}"),
	    NULL);
}

static void test_server_urls(void **state)
{
	(void)state;
	char url1[1024], url2[1024], url3[1024], text[4096];
	ss_url_t u = {.method = "aes-256-gcm",
		      .password = "p@ss:word",
		      .host = "192.0.2.1",
		      .port = 8388,
		      .tag = "one",
		      .plugin = "obfs-local",
		      .plugin_opts = "obfs=tls"};

	assert_true(ss_url_format(&u, url1, sizeof(url1)) > 0);
	u = (ss_url_t){.method = "2022-blake3-aes-128-gcm",
		       .password = K16_1 ":" K16_2,
		       .host = "2001:db8::2",
		       .port = 8389};
	assert_true(ss_url_format(&u, url2, sizeof(url2)) > 0);
	u = (ss_url_t){
	    .method = "chacha20-ietf-poly1305", .password = "p3", .host = "h3.example", .port = 3};
	assert_true(ss_url_format(&u, url3, sizeof(url3)) > 0);

	snprintf(text, sizeof(text), "{\"plugin\": \"top-plugin\"}");
	expect_run(SS_PROG_LOCAL, "--server-url", url1, "--server-url", url2, "-l", "1080", "-c",
		   write_file("u0.json", text), NULL);
	assert_int_equal(cfg.n_servers, 2);
	assert_string_equal(cfg.servers[0].host, "192.0.2.1");
	assert_int_equal(cfg.servers[0].port, 8388);
	assert_string_equal(cfg.servers[0].tag, "one");
	assert_string_equal(cfg.servers[0].plugin, "obfs-local");
	assert_string_equal(cfg.servers[0].plugin_opts, "obfs=tls");
	expect_entry_key(0, "aes-256-gcm", "p@ss:word");
	assert_string_equal(cfg.servers[1].host, "2001:db8::2");
	assert_string_equal(cfg.servers[1].method->name, "2022-blake3-aes-128-gcm");
	assert_int_equal(cfg.servers[1].psks.n, 2);
	/* A URL says everything: no plugin is no plugin. */
	assert_string_equal(cfg.servers[1].plugin, "");
	/* The URL's plugin is marked as the URL's: it runs as a name only. */
	assert_true(cfg.servers[0].plugin_from_url);
	assert_true(cfg.servers[1].plugin_from_url);

	/* In a file: "server_url" alone or a list, and URLs among "server". */
	snprintf(text, sizeof(text), "{\"local_port\": 1, \"server_url\": \"%s\"}", url3);
	expect_run(SS_PROG_LOCAL, "-c", write_file("u1.json", text), NULL);
	assert_int_equal(cfg.n_servers, 1);
	expect_entry_key(0, "chacha20-ietf-poly1305", "p3");
	snprintf(text, sizeof(text),
		 "{\"local_port\": 1, \"server\": [\"%s\", \"h0:5\"], \"password\": \"top\","
		 " \"servers\": [{\"server\": \"h9:9\"}], \"server_url\": [\"%s\", \"%s\"]}",
		 url1, url2, url3);
	expect_run(SS_PROG_LOCAL, "-c", write_file("u2.json", text), NULL);
	assert_int_equal(cfg.n_servers, 5);
	expect_entry_key(0, "aes-256-gcm", "p@ss:word");
	expect_entry_key(1, SS_DEFAULT_METHOD, "top");
	assert_true(cfg.servers[0].plugin_from_url);
	assert_false(cfg.servers[1].plugin_from_url);
	assert_false(cfg.servers[2].plugin_from_url);
	assert_string_equal(cfg.servers[2].host, "h9");
	assert_string_equal(cfg.servers[3].host, "2001:db8::2");
	expect_entry_key(4, "chacha20-ietf-poly1305", "p3");
	/* The command line's servers replace the file's. */
	expect_run(SS_PROG_LOCAL, "-c", write_file("u3.json", text), "--server-url", url3, NULL);
	assert_int_equal(cfg.n_servers, 1);
	assert_string_equal(cfg.servers[0].host, "h3.example");
}

/* A plugin that is not a plain program name is refused from a URL wherever
 * the URL is given, naming where; the configuration's own plugin may still
 * be a command line, and is not marked as a URL's. */
static void test_server_url_plugins(void **state)
{
	(void)state;
	static const char bad[] = "ss://YWVzLTI1Ni1nY206cA@h:1/?plugin=touch%20pwned%20%23";
	static const char want[] = "ss:// URL: the plugin in the URL's \"plugin\" parameter is "
				   "not a plain program name: `touch pwned #'";
	char text[512], msg[512];

	snprintf(msg, sizeof(msg), "--server-url: %s", want);
	expect_error(msg, SS_PROG_LOCAL, "--server-url", bad, "-l", "1", NULL);
	expect_error(msg, SS_PROG_TUNNEL, "--server-url", bad, "-l", "1", "-L", "h:1", NULL);
	snprintf(msg, sizeof(msg), "-s/server: %s", want);
	expect_error(msg, SS_PROG_LOCAL, "-s", bad, "-l", "1", NULL);
	snprintf(text, sizeof(text), "{\"local_port\": 1, \"server_url\": \"%s\"}", bad);
	snprintf(msg, sizeof(msg), "\"server_url\": %s", want);
	expect_error(msg, SS_PROG_LOCAL, "-c", write_file("pu1.json", text), NULL);
	snprintf(text, sizeof(text),
		 "{\"local_port\": 1, \"server_url\": [\"ss://YWVzLTI1Ni1nY206cA@h:1\", \"%s\"]}",
		 bad);
	snprintf(msg, sizeof(msg), "\"server_url\"[1]: %s", want);
	expect_error(msg, SS_PROG_LOCAL, "-c", write_file("pu2.json", text), NULL);
	snprintf(text, sizeof(text), "{\"local_port\": 1, \"server\": [\"%s\"]}", bad);
	expect_error(want, SS_PROG_LOCAL, "-c", write_file("pu3.json", text), NULL);
	snprintf(text, sizeof(text), "{\"local_port\": 1, \"servers\": [\"%s\"]}", bad);
	snprintf(msg, sizeof(msg), "\"servers\"[0]: %s", want);
	expect_error(msg, SS_PROG_LOCAL, "-c", write_file("pu4.json", text), NULL);

	/* The file's plugin, for the servers without their own. */
	snprintf(text, sizeof(text),
		 "{\"plugin\": \"obfs-local --fast-open\", \"plugin_opts\": \"obfs=http\"}");
	expect_run(SS_PROG_LOCAL, "-s", "h", "-p", "1", "-k", "p", "-l", "1", "--server-url",
		   "ss://YWVzLTI1Ni1nY206cA@h:2/?plugin=v2ray-plugin%3Btls", "-c",
		   write_file("pu5.json", text), NULL);
	assert_string_equal(cfg.servers[0].plugin, "obfs-local --fast-open");
	assert_string_equal(cfg.servers[0].plugin_opts, "obfs=http");
	assert_false(cfg.servers[0].plugin_from_url);
	assert_string_equal(cfg.servers[1].plugin, "v2ray-plugin");
	assert_string_equal(cfg.servers[1].plugin_opts, "tls");
	assert_true(cfg.servers[1].plugin_from_url);
}

/* --plugin, --plugin-opts and --plugin-mode on the command line replace
 * what every server entry says, a URL's plugin included, as the command
 * line overrides the configuration; the plugin is then the user's own
 * text (a path or a command line), no longer the URL's. A program named
 * alone keeps the entry's options, which describe the server's end. */
static void test_command_line_plugin_overrides_entries(void **state)
{
	(void)state;
	static const char url[] = "ss://YWVzLTI1Ni1nY206cA@h:2/?plugin=v2ray-plugin%3Bpath%3D%2Fws";
	char text[512];

	expect_run(SS_PROG_LOCAL, "--server-url", url, "-l", "1", "--plugin",
		   "/opt/bin/ss-v2ray-plugin -loglevel none", NULL);
	assert_string_equal(cfg.servers[0].plugin, "/opt/bin/ss-v2ray-plugin -loglevel none");
	assert_string_equal(cfg.servers[0].plugin_opts, "path=/ws");
	assert_false(cfg.servers[0].plugin_from_url);

	expect_run(SS_PROG_TUNNEL, "--server-url", url, "-l", "1", "-L", "h:1", "--plugin-opts",
		   "path=/other;tls", NULL);
	assert_string_equal(cfg.servers[0].plugin, "v2ray-plugin");
	assert_string_equal(cfg.servers[0].plugin_opts, "path=/other;tls");
	assert_true(cfg.servers[0].plugin_from_url);

	expect_run(SS_PROG_LOCAL, "--server-url", url, "-l", "1", "--plugin", "obfs-local",
		   "--plugin-opts", "obfs=http", "--plugin-mode", "tcp_and_udp", NULL);
	assert_string_equal(cfg.servers[0].plugin, "obfs-local");
	assert_string_equal(cfg.servers[0].plugin_opts, "obfs=http");
	assert_int_equal(cfg.servers[0].plugin_mode, SS_MODE_TCP_AND_UDP);
	assert_false(cfg.servers[0].plugin_from_url);

	/* An empty --plugin: no plugin, whatever the URL names. */
	expect_run(SS_PROG_LOCAL, "--server-url", url, "-l", "1", "--plugin", "", NULL);
	assert_string_equal(cfg.servers[0].plugin, "");

	/* A URL without a plugin gets the command line's. */
	expect_run(SS_PROG_LOCAL, "--server-url", "ss://YWVzLTI1Ni1nY206cA@h:2", "-l", "1",
		   "--plugin", "obfs-local", "--plugin-opts", "obfs=tls", NULL);
	assert_string_equal(cfg.servers[0].plugin, "obfs-local");
	assert_string_equal(cfg.servers[0].plugin_opts, "obfs=tls");

	/* The file's URLs and "servers" entries alike; the file's own top-level
	 * "plugin" does not replace them. */
	snprintf(text, sizeof(text),
		 "{\"local_port\": 1, \"plugin\": \"file-plugin\", \"server_url\": \"%s\", "
		 "\"servers\": [{\"server\": \"h3:3\", \"password\": \"p\", "
		 "\"plugin\": \"obfs-local\", \"plugin_opts\": \"obfs=http\", "
		 "\"plugin_mode\": \"tcp_and_udp\"}]}",
		 url);
	expect_run(SS_PROG_LOCAL, "-c", write_file("po1.json", text), NULL);
	assert_string_equal(cfg.servers[0].plugin, "v2ray-plugin");
	assert_string_equal(cfg.servers[1].plugin, "obfs-local");
	expect_run(SS_PROG_LOCAL, "-c", write_file("po1.json", text), "--plugin", "my-plugin",
		   "--plugin-mode", "tcp_only", NULL);
	assert_string_equal(cfg.servers[0].plugin, "my-plugin");
	assert_string_equal(cfg.servers[0].plugin_opts, "path=/ws");
	assert_false(cfg.servers[0].plugin_from_url);
	assert_string_equal(cfg.servers[1].plugin, "my-plugin");
	assert_string_equal(cfg.servers[1].plugin_opts, "obfs=http");
	assert_int_equal(cfg.servers[1].plugin_mode, SS_MODE_TCP_ONLY);
}

static void test_server_entry_errors(void **state)
{
	(void)state;
	char url[1024];
	ss_url_t u = {.method = "aes-256-gcm", .password = "SeCrEt", .host = "h", .port = 1};

	/* A bad URL is named with the part that is wrong, never the password. */
	expect_error("--server-url: ss:// URL: the port 'x' is not a number", SS_PROG_LOCAL,
		     "--server-url", "ss://YWVzLTI1Ni1nY206U2VDckV0@h:x", "-l", "1", NULL);
	expect_error("--server-url: ss:// URL: it does not start with ss://", SS_PROG_LOCAL,
		     "--server-url", "h:1", "-l", "1", NULL);
	expect_error("-s/server: ss:// URL: no userinfo@ before the host", SS_PROG_LOCAL, "-s",
		     "ss://h:1", "-l", "1", NULL);
	u.method[0] = 'x';
	assert_true(ss_url_format(&u, url, sizeof(url)) > 0);
	expect_error("--server-url: ss:// URL: the method: unknown method 'xes-256-gcm'",
		     SS_PROG_LOCAL, "--server-url", url, "-l", "1", NULL);
	assert_null(strstr(err, "SeCrEt"));
	expect_error("\"server_url\"[1]: ss:// URL: the host", SS_PROG_LOCAL, "-c",
		     write_file("bu.json", "{\"local_port\": 1, \"server_url\": [\"ss://"
					   "YWVzLTI1Ni1nY206U2VDckV0@h:1\", \"ss://"
					   "YWVzLTI1Ni1nY206U2VDckV0@:1\"]}"),
		     NULL);
	assert_null(strstr(err, "SeCrEt"));

	/* ss-server listens with one method. */
	expect_error("--server-url is for ss-local, ss-tunnel and ss-redir", SS_PROG_SERVER,
		     "--server-url", "ss://x", NULL);
	expect_error("\"servers\" is for ss-local, ss-tunnel and ss-redir", SS_PROG_SERVER, "-c",
		     write_file("bs.json", "{\"servers\": [], \"password\": \"p\"}"), NULL);
	expect_error("-s/server: ss-server listens on addresses", SS_PROG_SERVER, "-s",
		     "ss://YWVzLTI1Ni1nY206cA@h:1", "-k", "p", "-p", "1", NULL);
	expect_error("--print-url is for ss-server", SS_PROG_LOCAL, "--print-url", NULL);

	/* An entry without what it needs is named. */
	expect_error("server 2 (\"servers\"[1], \"b\"): missing password (-k or \"password\") or "
		     "key (--key or \"key\")",
		     SS_PROG_LOCAL, "-c",
		     write_file("np.json", "{\"local_port\": 1, \"servers\": ["
					   "{\"server\": \"a:1\", \"password\": \"p\"},"
					   "{\"server\": \"b:1\", \"remarks\": \"b\"}]}"),
		     NULL);
	expect_error("server 2 (\"servers\"[1]): missing server port", SS_PROG_LOCAL, "-c",
		     write_file("nport.json",
				"{\"local_port\": 1, \"password\": \"p\", \"servers\": ["
				"{\"server\": \"a:1\"}, {\"server\": \"b\"}]}"),
		     NULL);
	expect_error("\"servers\"[0]: missing \"server\"", SS_PROG_LOCAL, "-c",
		     write_file("nh.json", "{\"servers\": [{\"port\": 1}]}"), NULL);
	expect_error(
	    "\"servers\"[0]: \"password\" must be a string", SS_PROG_LOCAL, "-c",
	    write_file("npw.json", "{\"servers\": [{\"server\": \"h\", \"password\": 5}]}"), NULL);
	expect_error(
	    "unknown method", SS_PROG_LOCAL, "-c",
	    write_file("nm.json", "{\"servers\": [{\"server\": \"h\", \"method\": \"m\"}]}"), NULL);
	expect_error(
	    "\"plugin_mode\" must be", SS_PROG_LOCAL, "-c",
	    write_file("pm.json", "{\"servers\": [{\"server\": \"h\", \"plugin_mode\": \"tcp\"}]}"),
	    NULL);
	expect_error("server 1 (\"servers\"[0]): -k/\"password\": ", SS_PROG_LOCAL, "-c",
		     write_file("n22.json",
				"{\"local_port\": 1, \"servers\": [{\"server\": \"h:1\","
				" \"method\": \"2022-blake3-aes-128-gcm\","
				" \"password\": \"short\"}]}"),
		     NULL);
	expect_error("\"servers\"[0] must be an object", SS_PROG_LOCAL, "-c",
		     write_file("no.json", "{\"servers\": [1]}"), NULL);
	expect_error("\"server_url\" must be an ss:// URL or an array", SS_PROG_LOCAL, "-c",
		     write_file("nu.json", "{\"server_url\": 1}"), NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_local_minimal),
	    cmocka_unit_test(test_local_every_flag),
	    cmocka_unit_test(test_long_forms),
	    cmocka_unit_test(test_key_flag),
	    cmocka_unit_test(test_none_no_key),
	    cmocka_unit_test(test_2022_psk),
	    cmocka_unit_test(test_2022_psk_list),
	    cmocka_unit_test(test_help),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_tunnel),
	    cmocka_unit_test(test_redir),
	    cmocka_unit_test(test_server),
	    cmocka_unit_test(test_workers),
	    cmocka_unit_test(test_dns_relay),
	    cmocka_unit_test(test_local_defaults),
	    cmocka_unit_test(test_cli_errors),
	    cmocka_unit_test(test_json_forms),
	    cmocka_unit_test(test_json_servers),
	    cmocka_unit_test(test_json_key),
	    cmocka_unit_test(test_cli_overrides_json),
	    cmocka_unit_test(test_parse_json_alone),
	    cmocka_unit_test(test_json_errors),
	    cmocka_unit_test(test_json_users),
	    cmocka_unit_test(test_json_aead_users),
	    cmocka_unit_test(test_json_aead_users_errors),
	    cmocka_unit_test(test_json_users_errors),
	    cmocka_unit_test(test_file_errors),
	    cmocka_unit_test(test_default_config),
	    cmocka_unit_test(test_clear),
	    cmocka_unit_test(test_servers_objects),
	    cmocka_unit_test(test_server_urls),
	    cmocka_unit_test(test_server_url_plugins),
	    cmocka_unit_test(test_command_line_plugin_overrides_entries),
	    cmocka_unit_test(test_server_plugins),
	    cmocka_unit_test(test_server_entry_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
