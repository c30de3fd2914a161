/* SPDX-License-Identifier: MIT */
/* Writes the seed corpora of the fuzz targets: mkseeds DIR writes
 * DIR/fuzz_<target>/<seed> for every target, small valid messages (and a
 * few near misses) in each target's input layout. The raw crypto targets'
 * seeds are sealed with the targets' fixed keys (fz_key) by our encoders,
 * so they authenticate. tests/fuzz/corpus is its output: run it again when
 * a target's input layout changes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "fuzz_2022.h"

static const char *root;

static void put(const char *target, const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	f = fopen(path, "wb");
	FZ_CHECK(f != NULL && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

static void put_text(const char *target, const char *name, const char *text)
{
	put(target, name, text, strlen(text));
}

/* Bytes joined: a selector or two, then a message. */
typedef struct seed {
	uint8_t b[8192];
	size_t n;
} seed_t;

static void add(seed_t *s, const void *p, size_t n)
{
	FZ_CHECK(s->n + n <= sizeof(s->b));
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void add_bytes(seed_t *s, int n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s->b[s->n++] = (uint8_t)va_arg(ap, int);
	va_end(ap);
}

static const uint8_t v4[] = {SS_ATYP_IPV4, 192, 0, 2, 1, 0x01, 0xbb};
static const uint8_t v6[] = {
    SS_ATYP_IPV6, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 53};
static const uint8_t domain[] = {
    SS_ATYP_DOMAIN, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0, 80};
static const char request_text[] = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";

static void parsers(void)
{
	seed_t s;

	put("fuzz_addr", "v4", v4, sizeof(v4));
	put("fuzz_addr", "v6", v6, sizeof(v6));
	put("fuzz_addr", "domain", domain, sizeof(domain));
	put("fuzz_addr", "domain_cut", domain, 9);
	put("fuzz_addr", "host_v6", "[2001:db8::1]", 13);
	put("fuzz_addr", "host_v4", "192.0.2.1", 9);

	s = (seed_t){0};
	add_bytes(&s, 5, 0, 5, 2, 0, 2);
	put("fuzz_socks5", "greeting", s.b, s.n);
	s = (seed_t){0};
	add_bytes(&s, 4, 1, 5, 1, 0);
	add(&s, v4 + 1 - 1, sizeof(v4));
	put("fuzz_socks5", "connect_v4", s.b, s.n);
	s = (seed_t){0};
	add_bytes(&s, 4, 1, 5, 1, 0);
	add(&s, domain, sizeof(domain));
	put("fuzz_socks5", "connect_domain", s.b, s.n);
	s = (seed_t){0};
	add_bytes(&s, 4, 1, 5, 3, 0);
	add(&s, v6, sizeof(v6));
	put("fuzz_socks5", "udp_associate_v6", s.b, s.n);
	s = (seed_t){0};
	add_bytes(&s, 4, 2, 0, 0, 0);
	add(&s, domain, sizeof(domain));
	add(&s, "payload", 7);
	put("fuzz_socks5", "udp_domain", s.b, s.n);
	s = (seed_t){0};
	add_bytes(&s, 3, 0, 1, 5);
	add(&s, "alice", 5);
	add_bytes(&s, 1, 6);
	add(&s, "secret", 6);
	put("fuzz_socks5_auth", "login", s.b, s.n);
	put_text("fuzz_socks5_auth", "users",
		 "\x01# users\nalice:secret\r\nbob:pass:with:colons\n\ncarol:x\n");
	put_text("fuzz_socks5_auth", "odd", "\x03:nameless\nnocolon\nalice:a\nalice:b\n");

	static const uint8_t s4[] = {4, 1, 0, 80, 192, 0, 2, 1, 'u', 's', 'e', 'r', 0};
	static const uint8_t s4a[] = {4,   1,   1,   0xbb, 0,   0,   0,   1,   0, 'e', 'x', 'a',
				      'm', 'p', 'l', 'e',  '.', 'c', 'o', 'm', 0, 'G', 'E', 'T'};
	static const uint8_t s4_bind[] = {4, 2, 0, 21, 198, 51, 100, 7, 0};
	put("fuzz_socks4", "connect", s4, sizeof(s4));
	put("fuzz_socks4", "connect_4a_early", s4a, sizeof(s4a));
	put("fuzz_socks4", "bind", s4_bind, sizeof(s4_bind));
	put("fuzz_socks4", "connect_cut", s4a, 12);

	put_text("fuzz_scrape", "get",
		 "GET /metrics HTTP/1.1\r\nHost: localhost:9100\r\nAccept: text/plain\r\n\r\n");
	put_text("fuzz_scrape", "post_lf", "POST /metrics?x=1 HTTP/1.0\n\n");
	put_text("fuzz_scrape", "root", "GET / HTTP/1.1\r\n\r\n");
	put_text("fuzz_scrape", "cut", "GET /metrics HTTP/1.1\r\nHost: x");

	put_text("fuzz_acl", "bypass",
		 "[proxy_all]\n\n[bypass_list]\n10.0.0.0/8\n"
		 "192.168.0.0/16\nfe80::/10\n^(.*\\.)?example\\.com$\n");
	put_text("fuzz_acl", "proxy",
		 "[bypass_all]\n[proxy_list]\n||example.org\n(^|\\.)test$\n2001:db8::/32\n"
		 "@www.example.org");
	put_text("fuzz_acl", "server",
		 "[accept_all]\n[outbound_block_list]\n127.0.0.0/8\n::1\n"
		 "[black_list]\n198.51.100.7\n");

	put_text("fuzz_url", "aead", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1");
	put_text("fuzz_url", "plugin",
		 "ss://cmM0LW1kNTpwYXNzd2Q@192.168.100.1:8888/?plugin=obfs-local%3Bobfs%3Dhttp"
		 "#Example2");
	put_text("fuzz_url", "2022",
		 "ss://2022-blake3-aes-256-gcm:YctPZ6U7xPPcU%2Bgp3u%2B0tx%2FtRizJN9K8y%2BuKlW2qjlI%"
		 "3D@[2001:db8::1]:8888#Example3");
	put_text("fuzz_url", "old", "ss://YWVzLTI1Ni1nY206c2VjcmV0QDEyNy4wLjAuMTo4Mzg4#old");
	/* A plugin that would be shell text (refused), and shell text in the
	 * options (data for SS_PLUGIN_OPTIONS). */
	put_text("fuzz_url", "plugin_shell",
		 "ss://YWVzLTI1Ni1nY206cA@host:8388/?plugin=touch%20pwned%20%23");
	put_text("fuzz_url", "plugin_opts",
		 "ss://YWVzLTI1Ni1nY206cA@host:8388/?plugin=a.b%2Bc%3Bx%3D%24(id)%3B%60y%60#t");

	put_text("fuzz_hosts", "hosts",
		 "\x10# The hosts file\n127.0.0.1\tlocalhost\n::1 localhost ip6-localhost "
		 "ip6-loopback\n192.0.2.10 Box.Example. box # a comment\n2001:db8::5 v6only\n");
	put_text("fuzz_hosts", "odd", "\x02  10.0.0.1 a b c\r\nnot-an-address x\n\n10.0.0.2\n");
	/* What found the parser taking a NUL-cut (empty) name. */
	put("fuzz_hosts", "regress_nul_name", "#\n\x03::\n\n::\0\r\0#", 13);
	put_text("fuzz_mgrcmd", "add",
		 "add: {\"server_port\": 8388, \"password\": \"pw\", \"method\": "
		 "\"aes-256-gcm\", \"mode\": \"tcp_and_udp\", \"fast_open\": true, "
		 "\"timeout\": 300, \"plugin\": \"obfs-server\", \"plugin_opts\": "
		 "\"obfs=http\", \"acl\": \"/etc/a.acl\"}");
	put_text("fuzz_mgrcmd", "remove", "remove: {\"server_port\": \"8388\"}\n");
	put_text("fuzz_mgrcmd", "add_users",
		 "add: {\"server_port\": 8388, \"method\": \"aes-256-gcm\", \"users\": "
		 "[{\"name\": \"a\", \"password\": \"x\"}, {\"name\": \"b\", \"key\": \"eA==\", "
		 "\"method\": \"aes-128-gcm\"}]}");
	put_text("fuzz_mgrcmd", "add_user",
		 "add_user: {\"server_port\": 8388, \"name\": \"c\", \"password\": \"y\"}");
	put_text("fuzz_mgrcmd", "remove_user",
		 "remove_user: {\"server_port\": 8388, \"name\": \"c\"}");
	put_text("fuzz_mgrcmd", "list", "list");
	put_text("fuzz_mgrcmd", "ping", "ping\n");
	put_text("fuzz_mgrcmd", "stat", "stat: {\"8388\": 11}");
	put_text("fuzz_mgrcmd", "stat_users", "stat_users");
	put_text("fuzz_mgrcmd", "stat_users_port", "stat_users: {\"server_port\": 8388}");
}

/* DNS: a query with EDNS, an answer with compressed names, a negative
 * answer with its SOA. */
static void dns(void)
{
	static const uint8_t query[] = {
	    0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1, 3, 'w', 'w', 'w', 7, 'E', 'x', 'a',
	    'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1, 0, 0, 0x29, 0x04, 0xd0, 0, 0,
	    0, 0, 0, 0};
	static const uint8_t answer[] = {
	    0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0, 3, 'w', 'w', 'w', 7, 'e', 'x', 'a',
	    'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1, 0xc0, 0x0c, 0, 5, 0, 1, 0, 0,
	    1, 0x2c, 0, 6, 3, 'w', 'e', 'b', 0xc0, 0x10, 0xc0, 0x2d, 0, 1, 0, 1, 0, 0, 0, 0x3c,
	    0, 4, 192, 0, 2, 7};
	static const uint8_t negative[] = {
	    0xab, 0xcd, 0x81, 0x83, 0, 1, 0, 0, 0, 1, 0, 0, 4, 'n', 'o', 'p', 'e', 7, 'e', 'x',
	    'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1, 0xc0, 0x11, 0, 6, 0, 1, 0, 0, 3, 0x84, 0,
	    0x20, 2, 'n', 's', 0xc0, 0x11, 4, 'r', 'o', 'o', 't', 0xc0, 0x11, 0, 0, 0, 1, 0, 0,
	    0x0e, 0x10, 0, 0, 3, 0x84, 0, 9, 0x3a, 0x80, 0, 0, 2, 0x58};

	put("fuzz_dns", "query", query, sizeof(query));
	put("fuzz_dns", "answer", answer, sizeof(answer));
	put("fuzz_dns", "negative", negative, sizeof(negative));
}

static void config(void)
{
	static const char local[] =
	    "{\n \"server\": [\"192.0.2.1\", \"[2001:db8::1]:8389\", \"h.example\"],\n"
	    " \"server_port\": 8388, \"local_address\": \"127.0.0.1\", \"local_port\": 1080,\n"
	    " \"password\": \"secret\", \"method\": \"aes-256-gcm\", \"timeout\": 300,\n"
	    " \"mode\": \"tcp_and_udp\", \"fast_open\": true, \"reuse_port\": false,\n"
	    " \"no_delay\": true, \"mptcp\": false, \"ipv6_first\": false, \"nameserver\": "
	    "\"1.1.1.1,8.8.8.8\",\n \"mtu\": 1400, \"udp_timeout\": 60, "
	    "\"udp_max_associations\": 512,\n \"verbose\": 1, \"use_syslog\": false, "
	    "\"nofile\": 4096,\n \"plugin\": \"\", \"plugin_opts\": \"\", \"plugin_mode\": "
	    "\"tcp_only\", \"acl\": \"local.acl\"\n}\n";
	static const char server[] =
	    "{\n \"server\": \"::\", \"server_port\": \"8388\", \"method\": "
	    "\"2022-blake3-aes-128-gcm\",\n \"password\": \"AAECAwQFBgcICQoLDA0ODw==\",\n"
	    " \"users\": [{\"name\": \"alice\", \"password\": \"EBESExQVFhcYGRobHB0eHw==\"},\n"
	    "  {\"name\": \"bob\", \"password\": \"ICEiIyQlJicoKSorLC0uLw==\"}],\n"
	    " \"local_ipv4_address\": \"0.0.0.0\", \"local_ipv6_address\": \"::\", \"user\": "
	    "\"nobody\",\n \"interface\": \"lo\"\n}\n";
	static const char tunnel[] =
	    "{\"server\": \"192.0.2.1\", \"server_port\": 8388, \"local_port\": 5300,\n"
	    " \"key\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\", \"method\": "
	    "\"chacha20-ietf-poly1305\",\n \"tunnel_address\": \"1.1.1.1:53\", \"mode\": "
	    "\"udp_only\"}\n";
	/* Several servers: objects with their own method, key, plugin and
	 * tag, ss:// URLs in "server" and "server_url". */
	static const char servers[] =
	    "{\"local_port\": 1080, \"password\": \"top\", \"server_port\": 8388,\n"
	    " \"server\": [\"h0.example\", \"ss://YWVzLTI1Ni1nY206cGFzcw@192.0.2.7:8388/"
	    "?plugin=obfs-local%3Bobfs%3Dhttp#seven\"],\n"
	    " \"servers\": [{\"server\": \"a.example\", \"server_port\": 9001, \"method\": "
	    "\"aes-128-gcm\",\n   \"password\": \"pa\", \"remarks\": \"a\", \"plugin\": "
	    "\"v2ray-plugin\", \"plugin_opts\": \"tls\", \"plugin_mode\": \"tcp_only\"},\n"
	    "  {\"address\": \"[2001:db8::2]:9002\", \"port\": 9003, \"tag\": \"b\", "
	    "\"method\": \"2022-blake3-aes-128-gcm\",\n   \"key\": "
	    "\"AAECAwQFBgcICQoLDA0ODw==:EBESExQVFhcYGRobHB0eHw==\"},\n"
	    "  {\"server\": \"off.example\", \"disabled\": true}, \"192.0.2.9:9\"],\n"
	    " \"server_url\": [\"ss://2022-blake3-aes-128-gcm:AAECAwQFBgcICQoLDA0ODw%3D%3D@"
	    "[2001:db8::9]:443\"]}\n";
	/* What libev lets pass beyond JSON (a byte order mark, trailing
	 * commas, unknown escapes), an unknown key, and a refused comment. */
	static const char lenient[] =
	    "\xef\xbb\xbf{\"server\": [\"192.0.2.1\",], \"server_port\": 8388,\n"
	    " \"password\": \"a\\q,}\", \"sever_port\": 1, \"port_password\": {\"1\": \"x\",},\n"
	    " \"local_port\": 1080, \"timeout\": 5 ,\n}\n";
	static const char comment[] = "{\"server\": \"192.0.2.1\", // a comment\n \"mtu\": 1}\n";
	seed_t s;

	s = (seed_t){{0}, 1};
	add(&s, lenient, sizeof(lenient) - 1);
	put("fuzz_config", "lenient", s.b, s.n);
	s = (seed_t){{1}, 1};
	add(&s, comment, sizeof(comment) - 1);
	put("fuzz_config", "comment", s.b, s.n);
	s = (seed_t){{0}, 1};
	add(&s, local, sizeof(local) - 1);
	put("fuzz_config", "local", s.b, s.n);
	s = (seed_t){{2}, 1};
	add(&s, servers, sizeof(servers) - 1);
	put("fuzz_config", "servers", s.b, s.n);
	s = (seed_t){{1}, 1};
	add(&s, server, sizeof(server) - 1);
	put("fuzz_config", "server", s.b, s.n);
	s = (seed_t){{2}, 1};
	add(&s, tunnel, sizeof(tunnel) - 1);
	put("fuzz_config", "tunnel", s.b, s.n);
	static const char redir[] =
	    "{\"server\": \"192.0.2.1\", \"server_port\": 8388, \"local_address\": \"::\",\n"
	    " \"local_port\": 1080, \"password\": \"pw\", \"tcp_tproxy\": true, \"mode\": "
	    "\"tcp_and_udp\"}\n";
	s = (seed_t){{3}, 1};
	add(&s, redir, sizeof(redir) - 1);
	put("fuzz_config", "redir", s.b, s.n);

	/* Arguments split by NUL; JSON after a double NUL. */
	static const char cli_local[] =
	    "\0-s\0192.0.2.1\0-p\08388\0-l\01080\0-k\0pw\0-m\0"
	    "aes-128-gcm\0-u\0-v\0--fast-open\0--mtu\01400\0--acl\0x.acl";
	static const char cli_server[] = "\1-c\0c.json\0-s\0[::1]:8388\0--no-delay\0-6\0\0";
	static const char cli_tunnel[] = "\2-s\0h\0-p\01\0-l\02\0-L\0example.com:53\0-U\0"
					 "--key\0AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\0"
					 "-m\0chacha20-ietf-poly1305";
	static const char cli_none[] = "\0\0\0{\"server\": \"h\", \"server_port\": 1, "
				       "\"local_port\": 2, \"method\": \"none\"}";
	put("fuzz_config_cli", "local", cli_local, sizeof(cli_local) - 1);
	s = (seed_t){0};
	add(&s, cli_server, sizeof(cli_server) - 1);
	add(&s, server, sizeof(server) - 1);
	put("fuzz_config_cli", "server_file", s.b, s.n);
	put("fuzz_config_cli", "tunnel", cli_tunnel, sizeof(cli_tunnel) - 1);
	put("fuzz_config_cli", "default_file", cli_none, sizeof(cli_none) - 1);
	put("fuzz_config_cli", "help", "\0-h", 3);
	static const char cli_redir[] =
	    "\3-s\0192.0.2.1\0-p\08388\0-b\0::\0-l\01080\0-k\0pw\0-T\0-u\0"
	    "--udp-timeout\030";
	put("fuzz_config_cli", "redir", cli_redir, sizeof(cli_redir) - 1);
	static const char cli_urls[] =
	    "\0--server-url\0ss://YWVzLTI1Ni1nY206cGFzcw@192.0.2.7:8388/#a\0--server-url\0"
	    "ss://2022-blake3-aes-128-gcm:AAECAwQFBgcICQoLDA0ODw%3D%3D@[::1]:1\0-l\01080";
	static const char cli_print_url[] = "\1-s\0192.0.2.1\0-p\08388\0-k\0pw\0--print-url";
	put("fuzz_config_cli", "server_urls", cli_urls, sizeof(cli_urls) - 1);
	put("fuzz_config_cli", "print_url", cli_print_url, sizeof(cli_print_url) - 1);
	/* What found a message quoting an argument across two lines. */
	put("fuzz_config_cli", "regress_newline", "`\n", 2);
}

/* ---- SIP004 ---- */

static void aead(void)
{
	for (unsigned i = 0; i < 5; i++) {
		const ss_method_t *m = fz_method(fz_aead_names[i]);
		const ss_crypto_backend_t *be = fz_backend(0);
		uint8_t key[SS_MAX_KEY_LEN], salt[SS_MAX_SALT_LEN];
		ss_aead_stream_t s;
		seed_t t = {0};
		char name[64];
		size_t sizes[2] = {sizeof(domain) + sizeof(request_text) - 1, 5};

		fz_key(0, key);
		memset(salt, 0x11 * (int)(i + 1), sizeof(salt));
		FZ_CHECK(ss_aead_stream_init(&s, m, be) == 0);

		/* TCP: [selector][read size][max spans][salt][chunk][chunk] */
		add_bytes(&t, 3, i, i == 0 ? 0 : 7, 8);
		FZ_CHECK(ss_aead_enc_start_salt(&s, key, salt) == 0);
		add(&t, salt, m->salt_len);
		for (size_t c = 0; c < 2; c++) {
			uint8_t *chunk = t.b + t.n;

			t.n += SS_AEAD_CHUNK_HDR;
			if (c == 0) {
				add(&t, domain, sizeof(domain));
				add(&t, request_text, sizeof(request_text) - 1);
			} else {
				add(&t, "hello", 5);
			}
			t.n += SS_AEAD_TAG_LEN;
			FZ_CHECK(ss_aead_enc_chunk(&s, chunk, sizes[c]) == 0);
		}
		snprintf(name, sizeof(name), "tcp_%s", m->name);
		put("fuzz_aead", name, t.b, t.n);

		/* UDP: the same selector with the UDP bit, a packet under the
		 * zero nonce (a fresh stream's). */
		t = (seed_t){0};
		add_bytes(&t, 3, i + 10, 0, 1);
		FZ_CHECK(ss_aead_enc_start_salt(&s, key, salt) == 0);
		add(&t, salt, m->salt_len);
		add(&t, v4, sizeof(v4));
		add(&t, "datagram", 8);
		t.n += SS_AEAD_TAG_LEN;
		FZ_CHECK(be->aead_seal(&s.aead, s.nonce, t.b + 3 + m->salt_len,
				       t.b + 3 + m->salt_len, sizeof(v4) + 8) == 0);
		snprintf(name, sizeof(name), "udp_%s", m->name);
		put("fuzz_aead", name, t.b, t.n);
		ss_aead_stream_free(&s);
	}
}

/* ---- SIP022 ---- */

static void aead2022_tcp(unsigned i, bool users)
{
	const ss_method_t *m = fz_method(fz_2022_names[i]);
	const ss_crypto_backend_t *be = fz_backend(0);
	ss_psk_list_t psks = {.n = users ? 2 : 1};
	ss_2022_request_t req = {domain, sizeof(domain), 16, FZ_NOW};
	uint8_t salt[SS_MAX_SALT_LEN], req_salt[SS_MAX_KEY_LEN];
	uint8_t buf[8192], *payload = buf + SS_2022_REQ_HDR_MAX;
	size_t n = sizeof(request_text) - 1, w;
	ss_2022_stream_t s;
	seed_t t = {0};
	char name[80];
	long h;

	fz_key(0, psks.keys[0]);
	fz_key(1, psks.keys[1]);
	memset(salt, 0x21 * (int)(i + 1), sizeof(salt));
	FZ_CHECK(ss_2022_stream_init(&s, m, be) == 0);

	/* Request: [selector][read size][max spans][wire] */
	add_bytes(&t, 3, i | (users ? 0x80 : 0), users ? 5 : 0, 3);
	memcpy(payload, request_text, n);
	h = ss_2022_enc_request_salt(&s, &psks, &req, payload, n, SS_2022_REQ_HDR_MAX, salt);
	FZ_CHECK(h > 0);
	w = (size_t)h + n + SS_AEAD_TAG_LEN;
	memcpy(payload + n + SS_AEAD_TAG_LEN + SS_2022_CHUNK_HDR, "more", 4);
	FZ_CHECK(ss_2022_enc_chunk(&s, payload + n + SS_AEAD_TAG_LEN, 4) == 0);
	w += 4 + SS_2022_CHUNK_OVERHEAD;
	add(&t, payload - h, w);
	snprintf(name, sizeof(name), "request_%s%s", m->name, users ? "_users" : "");
	put("fuzz_aead2022", name, t.b, t.n);
	if (users)
		goto out;

	/* Response: the same selector with the response bit. */
	t = (seed_t){0};
	add_bytes(&t, 3, i + 6, 0, 8);
	fz_key(9, req_salt);
	FZ_CHECK(ss_2022_enc_start_response_salt(&s, psks.keys[0], req_salt, salt) == 0);
	memcpy(buf + SS_2022_RESP_HDR_LEN(m), "HTTP/1.1 200 OK\r\n", 17);
	FZ_CHECK(ss_2022_enc_response(&s, buf, 17, FZ_NOW) == 0);
	w = SS_2022_RESP_HDR_LEN(m) + 17 + SS_AEAD_TAG_LEN;
	memcpy(buf + w + SS_2022_CHUNK_HDR, "body", 4);
	FZ_CHECK(ss_2022_enc_chunk(&s, buf + w, 4) == 0);
	w += 4 + SS_2022_CHUNK_OVERHEAD;
	add(&t, buf, w);
	snprintf(name, sizeof(name), "response_%s", m->name);
	put("fuzz_aead2022", name, t.b, t.n);
out:
	ss_2022_stream_free(&s);
}

/* A packet from u's session id sid, with user (servers), for selector sel. */
static void aead2022_udp(ss_2022_udp_t *u, ss_2022_user_t *user, uint8_t sel, const char *name)
{
	ss_2022_udp_session_t s;
	ss_2022_udp_msg_t msg = {v6, sizeof(v6), 3, FZ_NOW, 0x0102030405060708};
	uint8_t buf[2048];
	size_t off = 1024, start;
	seed_t t = {0};
	long n;

	FZ_CHECK(ss_2022_udp_session_init(u, &s) == 0);
	FZ_CHECK(ss_2022_udp_session_start(u, &s, 0x1112131415161718, user) == 0);
	memcpy(buf + off, "query", 5);
	n = ss_2022_udp_seal(u, &s, &msg, buf, off, 5, sizeof(buf), &start);
	FZ_CHECK(n > 0);
	add_bytes(&t, 1, sel);
	add(&t, buf + start, (size_t)n);
	put("fuzz_aead2022_udp", name, t.b, t.n);
	ss_2022_udp_session_free(u, &s);
}

static void aead2022(void)
{
	for (unsigned i = 0; i < FZ_N_2022; i++) {
		const ss_method_t *m = fz_method(fz_2022_names[i]);
		const ss_crypto_backend_t *be = fz_backend(0);
		bool aes = ss_method_has_identity(m);
		ss_psk_list_t psks = {.n = 1};
		ss_2022_udp_t u;
		char name[80];

		aead2022_tcp(i, false);
		if (aes)
			aead2022_tcp(i, true);

		/* Client to server: a client whose keys the raw target's
		 * server has; the server's selector has the side bit. */
		fz_key(0, psks.keys[0]);
		fz_key(1, psks.keys[1]);
		FZ_CHECK(ss_2022_udp_init_client(&u, m, be, &psks) == 0);
		snprintf(name, sizeof(name), "to_server_%s", m->name);
		aead2022_udp(&u, NULL, (uint8_t)(i + 6), name);
		ss_2022_udp_free(&u);
		if (aes) {
			psks.n = 2;
			FZ_CHECK(ss_2022_udp_init_client(&u, m, be, &psks) == 0);
			snprintf(name, sizeof(name), "to_server_%s_users", m->name);
			aead2022_udp(&u, NULL, (uint8_t)(i + 6 + 0x80), name);
			ss_2022_udp_free(&u);
		}
		/* Server to client: single-user, and to a user (fz_key(1)). */
		FZ_CHECK(ss_2022_udp_init_server(&u, m, be, psks.keys[0],
						 aes ? &fz_users[i][0] : NULL) == 0);
		snprintf(name, sizeof(name), "to_client_%s", m->name);
		aead2022_udp(&u, NULL, (uint8_t)i, name);
		if (aes) {
			snprintf(name, sizeof(name), "to_client_%s_user", m->name);
			aead2022_udp(&u, &fz_users[i][0].v[0], (uint8_t)(i + 0x80), name);
		}
		ss_2022_udp_free(&u);
	}
}

/* ---- structure-aware and differential targets: choices only ---- */

static void choices(const char *target, unsigned n_sel, unsigned stride)
{
	for (unsigned sel = 0; sel < n_sel; sel += stride) {
		seed_t t = {0};
		char name[32];

		/* The selector, "as sealed", then bytes for every later choice. */
		add_bytes(&t, 2, sel, 0);
		for (unsigned j = 0; j < 96; j++)
			add_bytes(&t, 1, (int)(j * 37 + sel * 11));
		snprintf(name, sizeof(name), "sel_%u", sel);
		put(target, name, t.b, t.n);
	}
}

/* fuzz_http: a selector byte (0 head, 1 chunk size, 2 trailer, 3 Basic
 * login, 4 a chunked body whose next byte picks the read size, 5 answers:
 * a piece size byte and a requests-in-flight byte first), then the text. */
static void http_seed(const char *name, uint8_t sel, const char *text)
{
	seed_t s = {0};

	add_bytes(&s, 1, sel);
	add(&s, text, strlen(text));
	put("fuzz_http", name, s.b, s.n);
}

static void http(void)
{
	http_seed("connect", 0,
		  "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
		  "Proxy-Authorization: Basic dTpw\r\n\r\nearly");
	http_seed("connect_v6", 0, "CONNECT [2001:db8::1]:22 HTTP/1.0\r\n\r\n");
	http_seed("get", 0,
		  "GET http://web.test:8080/a?b HTTP/1.1\r\nHost: web.test:8080\r\n"
		  "Proxy-Connection: Keep-Alive\r\nAccept: */*\r\nKeep-Alive: 5\r\n\r\n");
	http_seed("post_chunked", 0,
		  "POST http://10.0.0.1/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		  "Expect: 100-continue\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
	http_seed(
	    "post_length", 0,
	    "POST http://h HTTP/1.0\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc");
	http_seed("cut", 0, "GET http://h/ HTTP/1.1\r\nHost: h\r");
	http_seed("chunk", 1, "1aF;name=value\r\n");
	http_seed("chunk_last", 1, "0\r\n\r\n");
	http_seed("trailer", 2, "Expires: never\r\nX-Sum: 1\r\n\r\n");
	http_seed("trailer_empty", 2, "\r\n");
	http_seed("body", 4,
		  "\x03"
		  "5;a=b\r\nhello\r\n1A \r\n0123456789abcdef0123456789\r\n"
		  "0\r\nX-T: 1\r\n\r\nGET next");
	http_seed("body_cut", 4,
		  "\x01"
		  "5\r\nhel");
	http_seed("answers", 5,
		  "\x07\x0a"
		  "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
		  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
		  "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"
		  "HTTP/1.1 204 No Content\r\nX: y\r\n\r\n"
		  "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		  "5;e=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n");
	http_seed("answer_close", 5, "\x03\x00HTTP/1.0 200 OK\r\nServer: s\r\n\r\nuntil close");
	http_seed("answer_304", 5,
		  "\x01\x01HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n");
	http_seed("login", 3, "Basic YWxpY2U6czM6Y3JldA==");
	http_seed("login_bad", 3, "Basic YWxpY2U=");
}

/* fuzz_udp_io: control data with a GRO segment size, as recvmsg gives it
 * (its first bytes also read as a buffer length and a segment size), and
 * a run of lengths for the GSO grouping. */
static void udp_io(void)
{
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct cmsghdr *c = &ctl.align;
	int seg = 1200;
	seed_t s = {.n = 0};

	memset(&ctl, 0, sizeof(ctl));
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_GRO;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	put("fuzz_udp_io", "gro_cmsg", ctl.b, sizeof(ctl.b));
	/* seg_max 1473, 17 segments, 65000 bytes; 16 x 1200 and a short one */
	add_bytes(&s, 4, 0x5c, 16, 0xfd, 0xe8);
	for (int i = 0; i < 16; i++)
		add_bytes(&s, 2, 1200 >> 8, 1200 & 0xff);
	add_bytes(&s, 2, 0, 80);
	put("fuzz_udp_io", "gso_run", s.b, s.n);
	/* a 19200-byte buffer of 1200-byte segments */
	put("fuzz_udp_io", "gro_split", (const uint8_t[]){0, 0x4b, 0, 0x04, 0xb0, 1}, 6);
}

/* Online configuration: documents, the one-URL answer, HTTPS answers. */
static void online(void)
{
	put_text("fuzz_sip008", "doc",
		 "{\"version\": 1, \"servers\": [{\"id\": \"27b8a625\", \"remarks\": \"one\", "
		 "\"server\": \"198.51.100.1\", \"server_port\": 8388, \"password\": \"p\", "
		 "\"method\": \"chacha20-ietf-poly1305\", \"plugin\": \"v2ray-plugin\", "
		 "\"plugin_opts\": \"host=example.com\"}, {\"server\": \"2001:db8::2\", "
		 "\"server_port\": 443, \"password\": \"\", \"method\": \"none\"}], "
		 "\"bytes_used\": 1, \"bytes_remaining\": 2}");
	put_text("fuzz_sip008", "url", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1\n");
	put_text("fuzz_sip008", "bad_port",
		 "{\"servers\": [{\"server\": \"h\", \"server_port\": 0, \"password\": \"p\", "
		 "\"method\": \"m\"}]}");
	put_text("fuzz_httpc", "length",
		 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n\x10{}");
	put_text("fuzz_httpc", "chunked",
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\x10"
		 "5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n");
	put_text("fuzz_httpc", "redirect", "HTTP/1.1 302 Found\r\nLocation: https://e/\r\n\r\n");
	put_text("fuzz_httpc", "url", "ssconf://[2001:db8::1]:8443/a/b?c#d");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	root = argv[1];
	if (mkdir(root, 0755) != 0 && errno != EEXIST)
		return 1;
	parsers();
	dns();
	http();
	online();
	config();
	aead();
	aead2022();
	udp_io();
	choices("fuzz_aead_sealed", 20, 1);
	choices("fuzz_aead2022_sealed", 256, 13);
	choices("fuzz_aead2022_udp_sealed", 256, 13);
	choices("fuzz_gcm_vaes", 8, 1);
	choices("fuzz_hkdf_sha1", 8, 1);
	return 0;
}
