/* SPDX-License-Identifier: MIT */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "crypto/primitives.h"

/* libev reads files under 128 KiB; allow more, but not without bound. */
#define SS_CONFIG_FILE_MAX (1024 * 1024)

static const char *const prog_default_name[] = {
    [SS_PROG_LOCAL] = "ss-local", [SS_PROG_SERVER] = "ss-server",   [SS_PROG_TUNNEL] = "ss-tunnel",
    [SS_PROG_REDIR] = "ss-redir", [SS_PROG_MANAGER] = "ss-manager",
};

int ss_cfg_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void ss_cfg_warn(ss_config_t *cfg, const char *fmt, ...)
{
	va_list ap;

	if (cfg->n_warnings < SS_CONFIG_WARN_MAX) {
		char *w = cfg->warnings[cfg->n_warnings];
		va_start(ap, fmt);
		vsnprintf(w, sizeof(cfg->warnings[0]), fmt, ap);
		va_end(ap);
		ss_cfg_one_line(w, sizeof(cfg->warnings[0]));
	}
	cfg->n_warnings++;
}

void ss_cfg_one_line(char *err, size_t errlen)
{
	/* Messages quote the values they reject, which may hold any byte
	 * (an argument or a JSON string with a newline in it). */
	for (size_t i = 0; err != NULL && i < errlen && err[i] != '\0'; i++)
		if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
			err[i] = '?';
}

static bool all_digits(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int ss_cfg_long(const char *text, long min, long max, long *out)
{
	const char *digits = text;

	if (min < 0 && *digits == '-')
		digits++;
	if (!all_digits(digits))
		return -EINVAL;

	errno = 0;
	long v = strtol(text, NULL, 10);
	if (errno != 0 || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int ss_cfg_port(const char *text, uint16_t *port)
{
	long v;

	if (strlen(text) > 5 || ss_cfg_long(text, 1, 65535, &v) != 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int ss_cfg_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

static bool is_ip_literal(const char *s)
{
	unsigned char tmp[16];

	return inet_pton(AF_INET, s, tmp) == 1 || inet_pton(AF_INET6, s, tmp) == 1;
}

static int set_host(ss_host_port_t *hp, const char *host, size_t n, const char *text,
		    const char *name, char *err, size_t errlen)
{
	if (n == 0)
		return ss_cfg_err(err, errlen, "invalid address '%s' for %s (no host)", text, name);
	/* 255 is also the most a Shadowsocks address header can carry. */
	if (n >= SS_HOST_MAX)
		return ss_cfg_err(err, errlen,
				  "host name in '%.64s...' for %s is too long (max %d)", text, name,
				  SS_HOST_MAX - 1);
	memcpy(hp->host, host, n);
	hp->host[n] = '\0';
	return 0;
}

static int set_port(ss_host_port_t *hp, const char *port, const char *name, char *err,
		    size_t errlen)
{
	if (ss_cfg_port(port, &hp->port) != 0)
		return ss_cfg_err(err, errlen, "invalid port '%s' for %s (expected 1-65535)", port,
				  name);
	return 0;
}

int ss_cfg_host_port(const char *text, ss_host_port_t *hp, const char *name, char *err,
		     size_t errlen)
{
	memset(hp, 0, sizeof(*hp));

	if (*text == '\0')
		return ss_cfg_err(err, errlen, "empty address for %s", name);

	/* An IP literal is never split: "::1:8388" is one IPv6 address. */
	if (is_ip_literal(text))
		return set_host(hp, text, strlen(text), text, name, err, errlen);

	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		char v6[SS_HOST_MAX];
		size_t n = close != NULL ? (size_t)(close - text - 1) : 0;
		unsigned char tmp[16];

		if (close == NULL || n >= sizeof(v6))
			return ss_cfg_err(err, errlen, "invalid address '%s' for %s", text, name);
		memcpy(v6, text + 1, n);
		v6[n] = '\0';
		if (inet_pton(AF_INET6, v6, tmp) != 1)
			return ss_cfg_err(err, errlen, "invalid IPv6 address '%s' for %s", text,
					  name);
		if (close[1] != '\0' && close[1] != ':')
			return ss_cfg_err(err, errlen, "invalid address '%s' for %s", text, name);
		if (set_host(hp, v6, n, text, name, err, errlen) != 0)
			return -EINVAL;
		return close[1] == ':' ? set_port(hp, close + 2, name, err, errlen) : 0;
	}

	const char *colon = strchr(text, ':');
	if (colon == NULL)
		return set_host(hp, text, strlen(text), text, name, err, errlen);
	if (strchr(colon + 1, ':') != NULL)
		return ss_cfg_err(err, errlen,
				  "invalid address '%s' for %s (write an IPv6 address with a port "
				  "as [addr]:port)",
				  text, name);
	if (set_host(hp, text, (size_t)(colon - text), text, name, err, errlen) != 0)
		return -EINVAL;
	return set_port(hp, colon + 1, name, err, errlen);
}

int ss_cfg_tunnel(const char *text, ss_addr_t *a, const char *name, char *err, size_t errlen)
{
	ss_host_port_t hp;

	if (ss_cfg_host_port(text, &hp, name, err, errlen) != 0)
		return -EINVAL;
	if (hp.port == 0)
		return ss_cfg_err(
		    err, errlen, "tunnel address '%s' for %s needs a port (host:port)", text, name);
	if (ss_addr_from_host(a, hp.host, hp.port) != 0)
		return ss_cfg_err(err, errlen, "invalid tunnel address '%s' for %s", text, name);
	return 0;
}

int ss_cfg_dns_addr(const char *text, bool name_ok, ss_addr_t *a, const char *name, char *err,
		    size_t errlen)
{
	ss_host_port_t hp;

	if (ss_cfg_host_port(text, &hp, name, err, errlen) != 0)
		return -EINVAL;
	if (ss_addr_from_host(a, hp.host, hp.port ? hp.port : 53) != 0 ||
	    (!name_ok && a->atyp == SS_ATYP_DOMAIN))
		return ss_cfg_err(err, errlen, "%s must be an IP address (and port), not '%s'",
				  name, text);
	return 0;
}

int ss_cfg_method(ss_config_t *cfg, const char *name, char *err, size_t errlen)
{
	const ss_method_t *m;

	if (ss_method_lookup(name, &m, err, errlen) != 0)
		return -EINVAL;
	cfg->method = m;
	return 0;
}

void ss_config_init(ss_config_t *cfg, ss_prog_t prog)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->prog = prog;
	cfg->prog_name = prog_default_name[prog];
	/* The ports of a manager, whose users anyone may be, keep away from
	 * the server's own network unless told otherwise. */
	cfg->block_private = prog == SS_PROG_MANAGER;
}

void ss_config_clear(ss_config_t *cfg)
{
	if (cfg->users != NULL) {
		ss_wipe(cfg->users, cfg->n_users * sizeof(*cfg->users));
		free(cfg->users);
	}
	cfg->users = NULL;
	cfg->n_users = 0;
	ss_wipe(cfg->key, sizeof(cfg->key));
	ss_wipe(&cfg->psks, sizeof(cfg->psks));
	ss_wipe(cfg->password, sizeof(cfg->password));
	ss_wipe(cfg->key_b64, sizeof(cfg->key_b64));
	ss_cfg_wipe_servers(cfg);
	ss_cfg_clear_socks(cfg);
	if (cfg->port_password != NULL) {
		ss_wipe(cfg->port_password, strlen(cfg->port_password));
		free(cfg->port_password);
	}
	cfg->port_password = NULL;
}

/* The directory the default files are looked for in: /etc, or another one
 * SS_SYSCONFDIR names (tests, systems that keep configuration elsewhere). */
static const char *sysconf_dir(void)
{
	const char *dir = getenv("SS_SYSCONFDIR");

	return dir != NULL && dir[0] != '\0' ? dir : "/etc";
}

/* The file read when the command line gives no settings at all: first the
 * user file libev 3.3.5 reads (get_default_conf() in its src/utils.c),
 * $XDG_CONFIG_HOME/shadowsocks-libev/config.json when XDG_CONFIG_HOME is set,
 * else $HOME/.config/shadowsocks-libev/config.json, if that file exists
 * (only one user path is tried, never both); then our package's
 * /etc/shadowsocks-c/config.json if it exists; else libev's system file
 * /etc/shadowsocks-libev/config.json, which a drop-in replacement reads
 * where libev's package left it. */
void ss_cfg_default_path(char *out, size_t cap)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int n = -1;

	if (xdg != NULL)
		n = snprintf(out, cap, "%s/shadowsocks-libev/config.json", xdg);
	else if (home != NULL)
		n = snprintf(out, cap, "%s/.config/shadowsocks-libev/config.json", home);
	if (n > 0 && (size_t)n < cap && access(out, F_OK) == 0)
		return;
	n = snprintf(out, cap, "%s/shadowsocks-c/config.json", sysconf_dir());
	if (n > 0 && (size_t)n < cap && access(out, F_OK) == 0)
		return;
	snprintf(out, cap, "%s/shadowsocks-libev/config.json", sysconf_dir());
}

int ss_cfg_load_file(ss_config_t *cfg, const char *path, char *err, size_t errlen)
{
	char why[512];
	int rc = -EINVAL;
	size_t len = 0;
	char *buf = NULL;
	FILE *f = fopen(path, "rb");

	if (f == NULL)
		return ss_cfg_err(err, errlen, "cannot read config file '%s': %s", path,
				  strerror(errno));

	buf = malloc(SS_CONFIG_FILE_MAX + 1);
	if (buf == NULL) {
		ss_cfg_err(err, errlen, "cannot read config file '%s': %s", path, strerror(ENOMEM));
		goto out;
	}
	len = fread(buf, 1, SS_CONFIG_FILE_MAX + 1, f);
	if (ferror(f)) {
		ss_cfg_err(err, errlen, "cannot read config file '%s': %s", path,
			   strerror(errno != 0 ? errno : EIO));
		goto out;
	}
	if (len > SS_CONFIG_FILE_MAX) {
		ss_cfg_err(err, errlen, "config file '%s' is too large (over %d bytes)", path,
			   SS_CONFIG_FILE_MAX);
		goto out;
	}
	/* A NUL byte ends the text, as libev reads the file. */
	buf[len] = '\0';
	rc = ss_config_parse_json(cfg, buf, why, sizeof(why));
	if (rc != 0)
		ss_cfg_err(err, errlen, "config file '%s': %s", path, why);
out:
	if (buf != NULL) {
		/* It holds the password. */
		ss_wipe(buf, len < SS_CONFIG_FILE_MAX + 1 ? len + 1 : len);
		free(buf);
	}
	fclose(f);
	return rc;
}

int ss_cfg_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > SS_WORKERS_MAX ? SS_WORKERS_MAX : (int)n;
}

static bool all_servers_ipv6(const ss_config_t *cfg)
{
	unsigned char tmp[16];

	for (size_t i = 0; i < cfg->n_servers; i++)
		if (inet_pton(AF_INET6, cfg->servers[i].host, tmp) != 1)
			return false;
	return cfg->n_servers > 0;
}

/* SIP022: a 2022 password or key is the base64 PSK list itself, never
 * hashed; a key wins over a password, as in libev. */
static int set_psks(ss_prog_t prog, const ss_method_t *m, const char *password, const char *key_b64,
		    uint8_t *key, ss_psk_list_t *psks, char *err, size_t errlen)
{
	bool by_key = key_b64[0] != '\0';
	char why[256];

	if (ss_psk_parse(m, by_key ? key_b64 : password, psks, why, sizeof(why)) != 0)
		return ss_cfg_err(err, errlen, "%s: %s",
				  by_key ? "--key/\"key\"" : "-k/\"password\"", why);
	/* The server has one identity PSK; its users' PSKs go in "users". */
	if (prog == SS_PROG_SERVER && psks->n > 1)
		return ss_cfg_err(err, errlen,
				  "%s: ss-server takes one PSK (its own), not a list of %u; give "
				  "the users' PSKs in \"users\" in the config file",
				  by_key ? "--key/\"key\"" : "-k/\"password\"", psks->n);
	memcpy(key, psks->keys[psks->n - 1], m->key_len);
	return 0;
}

int ss_cfg_derive_key(ss_prog_t prog, const ss_method_t *m, const char *password,
		      const char *key_b64, uint8_t *key, ss_psk_list_t *psks, bool *ignored,
		      char *err, size_t errlen)
{
	if (m->kind == SS_METHOD_NONE) {
		*ignored = key_b64[0] != '\0' || password[0] != '\0';
		return 0;
	}
	if (key_b64[0] == '\0' && password[0] == '\0')
		return ss_cfg_err(
		    err, errlen, "missing password (-k or \"password\") or key (--key or \"key\")");
	if (m->kind == SS_METHOD_2022)
		return set_psks(prog, m, password, key_b64, key, psks, err, errlen);
	if (key_b64[0] == '\0') {
		ss_key_from_password(m, password, key);
		return 0;
	}
	if (ss_key_from_base64(m, key_b64, key) != 0)
		return ss_cfg_err(err, errlen,
				  "invalid key for --key/\"key\": %s needs the base64 of exactly "
				  "%u bytes",
				  m->name, m->key_len);
	return 0;
}

/* A 2022 port's users: one PSK each, behind the server's identity PSK. */
static int finish_users_2022(ss_config_t *cfg, char *err, size_t errlen)
{
	const ss_method_t *m = cfg->method;
	ss_psk_list_t one;
	char why[256];
	int rc = 0;

	if (!ss_method_has_identity(m))
		return ss_cfg_err(err, errlen,
				  "\"users\": %s has no identity headers, so it serves one PSK "
				  "only; use 2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm",
				  m->name);
	for (size_t i = 0; i < cfg->n_users && rc == 0; i++) {
		ss_config_user_t *u = &cfg->users[i];

		if (u->method || u->key_b64[0] || !u->password[0])
			rc = ss_cfg_err(err, errlen,
					"\"users\"[%zu] (\"%s\"): a 2022 user has its PSK in "
					"\"password\" alone (no \"key\", no \"method\": the port's "
					"method serves every user)",
					i, u->name);
		else if (ss_psk_parse(m, u->password, &one, why, sizeof(why)) != 0)
			rc =
			    ss_cfg_err(err, errlen, "\"users\"[%zu] (\"%s\"): %s", i, u->name, why);
		else if (one.n != 1)
			rc = ss_cfg_err(err, errlen,
					"\"users\"[%zu] (\"%s\"): a user has one PSK, not a list",
					i, u->name);
		else
			memcpy(u->key, one.keys[0], m->key_len);
		ss_wipe(&one, sizeof(one));
		ss_wipe(u->password, sizeof(u->password));
		ss_wipe(u->key_b64, sizeof(u->key_b64));
		u->method = m;
		/* The server tells users apart by their PSK's hash alone. */
		for (size_t j = 0; j < i && rc == 0; j++)
			if (memcmp(cfg->users[j].key, u->key, m->key_len) == 0)
				rc = ss_cfg_err(
				    err, errlen,
				    "\"users\"[%zu] (\"%s\"): same PSK as \"users\"[%zu] "
				    "(\"%s\"); each user needs its own",
				    i, u->name, j, cfg->users[j].name);
	}
	return rc;
}

/* One SIP004 user's method and key: its own method or the port's, its
 * "key" in base64 or its password through EVP_BytesToKey. */
static int finish_user_aead(ss_config_t *cfg, size_t i, char *err, size_t errlen)
{
	ss_config_user_t *u = &cfg->users[i];
	const ss_method_t *m = u->method ? u->method : cfg->method;
	int rc;

	if (m->kind != SS_METHOD_AEAD)
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): \"method\" %s is not a SIP004 AEAD "
				  "method; the users of a %s port take aes-128-gcm, aes-192-gcm, "
				  "aes-256-gcm, chacha20-ietf-poly1305 or xchacha20-ietf-poly1305",
				  i, u->name, m->name, cfg->method->name);
	u->method = m;
	if (u->key_b64[0] && u->password[0])
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): give \"password\" or \"key\", not both",
				  i, u->name);
	if (!u->key_b64[0]) {
		ss_key_from_password(m, u->password, u->key);
		return 0;
	}
	rc = ss_key_from_base64(m, u->key_b64, u->key);
	ss_wipe(u->key_b64, sizeof(u->key_b64));
	if (rc != 0)
		return ss_cfg_err(err, errlen,
				  "\"users\"[%zu] (\"%s\"): invalid \"key\": %s needs the base64 "
				  "of exactly %u bytes",
				  i, u->name, m->name, m->key_len);
	return 0;
}

/* A SIP004 port's users: each its own key, and maybe method. Two users
 * whose keys open the same streams could not be told apart. */
static int finish_users_aead(ss_config_t *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < cfg->n_users; i++) {
		const ss_config_user_t *u = &cfg->users[i];

		if (finish_user_aead(cfg, i, err, errlen) != 0)
			return -EINVAL;
		for (size_t j = 0; j < i; j++) {
			const ss_config_user_t *o = &cfg->users[j];

			if (o->method->alg == u->method->alg &&
			    o->method->key_len == u->method->key_len &&
			    memcmp(o->key, u->key, u->method->key_len) == 0)
				return ss_cfg_err(
				    err, errlen,
				    "\"users\"[%zu] (\"%s\"): same method and key as "
				    "\"users\"[%zu] (\"%s\"); each user needs its own",
				    i, u->name, j, o->name);
		}
	}
	return 0;
}

/* The users' keys can only be read once the method is known. */
static int finish_users(ss_config_t *cfg, char *err, size_t errlen)
{
	const ss_method_t *m = cfg->method;

	if (cfg->n_users == 0)
		return 0;
	if (m->kind == SS_METHOD_2022)
		return finish_users_2022(cfg, err, errlen);
	if (m->kind == SS_METHOD_AEAD)
		return finish_users_aead(cfg, err, errlen);
	return ss_cfg_err(err, errlen,
			  "\"users\" needs a SIP004 AEAD method (aes-256-gcm, "
			  "chacha20-ietf-poly1305, ...) or a 2022 one with identity headers "
			  "(2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm), not %s",
			  m->name);
}

/* ss-server: a SIP004 port with users serves them alone (as an
 * outline-ss-server port serves its access keys): it has no password of
 * its own, and one given besides them is refused rather than ignored. */
static bool aead_users_only(const ss_config_t *cfg)
{
	return cfg->prog == SS_PROG_SERVER && cfg->n_users && cfg->method->kind == SS_METHOD_AEAD;
}

/* What goes through a plugin: what plugin_mode names of what the program
 * relays to or from the server. ss-local keeps TCP in udp_only mode for
 * SOCKS5 alone, which never reaches the server. */
int ss_cfg_plugin_carries(const ss_config_t *cfg, const char *plugin, ss_relay_mode_t plugin_mode,
			  bool *tcp, bool *udp, const char *who, char *err, size_t errlen)
{
	static const char *const names[] = {
	    [SS_MODE_TCP_ONLY] = "tcp_only",
	    [SS_MODE_TCP_AND_UDP] = "tcp_and_udp",
	    [SS_MODE_UDP_ONLY] = "udp_only",
	};

	*tcp = cfg->mode != SS_MODE_UDP_ONLY && plugin_mode != SS_MODE_UDP_ONLY;
	*udp = cfg->mode != SS_MODE_TCP_ONLY && plugin_mode != SS_MODE_TCP_ONLY;
	if (!*tcp && !*udp)
		return ss_cfg_err(err, errlen,
				  "%s%splugin_mode %s with mode %s leaves the plugin '%s' nothing "
				  "to carry",
				  who ? who : "", who ? ": " : "", names[plugin_mode],
				  names[cfg->mode], plugin);
	return 0;
}

/* A client's plugin is one process its servers' health follows on one
 * loop: a client with plugins runs one worker. */
int ss_cfg_check_worker_plugins(const ss_config_t *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; cfg->workers > 1 && i < cfg->n_servers; i++)
		if (cfg->servers[i].plugin[0])
			return ss_cfg_err(err, errlen,
					  "--workers %d: a client with a plugin (server %zu) runs "
					  "one worker",
					  cfg->workers, i + 1);
	return 0;
}

/* Defaults for what neither source set, then the checks that need the
 * whole picture, then the key. */
static int finish(ss_config_t *cfg, char *err, size_t errlen)
{
	bool client = cfg->prog != SS_PROG_SERVER;

	if (cfg->prog == SS_PROG_MANAGER)
		return ss_cfg_finish_manager(cfg, err, errlen);
	/* libev 3.3.5 ss-server listens on 0.0.0.0 only when no -s is given.
	 * We listen on "::", which on Linux (bindv6only=0, the default) takes
	 * IPv4 too, so the old behaviour is kept and IPv6 clients work as well. */
	if (!client && cfg->n_servers == 0) {
		strcpy(cfg->servers[0].host, "::");
		cfg->n_servers = 1;
	}
	if (ss_cfg_finish_online(cfg, err, errlen) != 0)
		return -EINVAL;
	if (cfg->n_servers == 0 && !cfg->online_url[0])
		return ss_cfg_err(err, errlen, "missing server address (-s or \"server\")");

	if (client && cfg->local_port == 0)
		return ss_cfg_err(err, errlen, "missing local port (-l or \"local_port\")");

	/* As libev: listen on ::1 when every server is IPv6, else 127.0.0.1.
	 * libev resolves host names for this; we only look at literals, so a
	 * server given by name counts as IPv4. */
	if (client && cfg->local_addr[0] == '\0')
		strcpy(cfg->local_addr, all_servers_ipv6(cfg) ? "::1" : "127.0.0.1");

	if (cfg->prog == SS_PROG_TUNNEL && !cfg->have_tunnel_addr)
		return ss_cfg_err(err, errlen,
				  "missing tunnel address (-L host:port or \"tunnel_address\")");

	if (cfg->have_dns && !cfg->have_remote_dns)
		ss_addr_from_host(&cfg->remote_dns, "8.8.8.8", 53);
	if (!cfg->have_dns && (cfg->have_remote_dns || cfg->have_local_dns))
		return ss_cfg_err(err, errlen,
				  "%s is for the DNS relay, which --dns (\"dns\") turns on",
				  cfg->have_remote_dns ? "--remote-dns" : "--local-dns");

	if (cfg->plugin[0] &&
	    ss_cfg_plugin_carries(cfg, cfg->plugin, cfg->plugin_mode, &cfg->plugin_tcp,
				  &cfg->plugin_udp, NULL, err, errlen) != 0)
		return -EINVAL;

	if (cfg->timeout == 0)
		cfg->timeout = 60;
	if (cfg->udp_timeout == 0)
		cfg->udp_timeout = 60;
	if (cfg->udp_max_assoc == 0)
		cfg->udp_max_assoc = SS_UDP_MAX_ASSOC_DEFAULT;
	if (cfg->replay_capacity == 0)
		cfg->replay_capacity = SS_REPLAY_CAPACITY_DEFAULT;
	if (cfg->workers == 0)
		cfg->workers = cfg->prog == SS_PROG_SERVER ? ss_cfg_online_cpus() : 1;

	if (cfg->method == NULL && ss_cfg_method(cfg, SS_DEFAULT_METHOD, err, errlen) != 0)
		return -EINVAL;

	/* A client's servers take the password each (finish_servers says which
	 * lacks one); one given at the top must still be good. */
	if (aead_users_only(cfg) && (cfg->password[0] || cfg->key_b64[0]))
		return ss_cfg_err(err, errlen,
				  "with \"users\", a %s port serves its users alone: remove the "
				  "top-level password or key (-k, --key, \"password\", \"key\") or "
				  "make it a user",
				  cfg->method->name);
	if ((!client || cfg->password[0] || cfg->key_b64[0]) && !aead_users_only(cfg) &&
	    ss_cfg_derive_key(cfg->prog, cfg->method, cfg->password, cfg->key_b64, cfg->key,
			      &cfg->psks, &cfg->key_ignored, err, errlen) != 0)
		return -EINVAL;
	if (finish_users(cfg, err, errlen) != 0 || ss_cfg_finish_servers(cfg, err, errlen) != 0 ||
	    ss_cfg_finish_socks(cfg, err, errlen) != 0)
		return -EINVAL;
	/* SOCKS5 UDP ASSOCIATE ties a client's datagrams to its connection,
	 * which one worker holds while the kernel may hand the datagrams to
	 * another. */
	if (cfg->prog == SS_PROG_LOCAL && cfg->workers > 1 && cfg->mode != SS_MODE_TCP_ONLY)
		return ss_cfg_err(err, errlen,
				  "--workers %d: ss-local relays UDP (SOCKS5 UDP ASSOCIATE) with "
				  "one worker",
				  cfg->workers);
	if (client && ss_cfg_check_worker_plugins(cfg, err, errlen) != 0)
		return -EINVAL;
	cfg->n_static_servers = cfg->n_servers;
	/* --print-url writes the password into the URLs; the program exits
	 * right after, and ss_config_clear wipes it. */
	if (!cfg->print_url) {
		ss_wipe(cfg->password, sizeof(cfg->password));
		ss_wipe(cfg->key_b64, sizeof(cfg->key_b64));
	}
	cfg->validated = true;
	return 0;
}

int ss_cfg_finish(ss_config_t *cfg, char *err, size_t errlen)
{
	if (finish(cfg, err, errlen) == 0)
		return 0;
	/* Most of what is found missing here is a key the file misspelt. */
	ss_cfg_typo_hint(cfg, err, errlen);
	return -EINVAL;
}

ss_config_status_t ss_config_parse(ss_config_t *cfg, ss_prog_t prog, int argc, char **argv,
				   void *out, char *err, size_t errlen)
{
	ss_config_status_t st;

	ss_config_init(cfg, prog);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (argc > 0 && argv[0] != NULL && argv[0][0] != '\0') {
		const char *slash = strrchr(argv[0], '/');
		cfg->prog_name = slash != NULL ? slash + 1 : argv[0];
	}

	st = ss_config_parse_cli(cfg, argc, argv, err, errlen);
	if (st == SS_CONFIG_HELP || st == SS_CONFIG_VERSION) {
		if (st == SS_CONFIG_HELP)
			ss_config_usage(prog, out);
		else
			ss_config_version(prog, out);
		ss_config_clear(cfg);
		return st;
	}
	if (st != SS_CONFIG_RUN)
		goto fail;

	/* With no settings on the command line (nothing at all, as in libev,
	 * or only --check or --print-url, which ask about what would run),
	 * the default file. */
	if (!cfg->cli_settings && cfg->config_file[0] == '\0') {
		ss_cfg_default_path(cfg->config_file, sizeof(cfg->config_file));
		cfg->config_default = true;
		if (access(cfg->config_file, F_OK) != 0 && errno == ENOENT) {
			ss_cfg_err(
			    err, errlen,
			    "no settings given, and no config file at %s/shadowsocks-c/"
			    "config.json or %s: give -c FILE, or the settings (-h lists them)",
			    sysconf_dir(), cfg->config_file);
			goto fail;
		}
	}
	if (cfg->config_file[0] != '\0' &&
	    ss_cfg_load_file(cfg, cfg->config_file, err, errlen) != 0)
		goto fail;
	if (ss_cfg_finish(cfg, err, errlen) != 0)
		goto fail;
	return SS_CONFIG_RUN;
fail:
	ss_cfg_one_line(err, errlen);
	ss_config_clear(cfg);
	return SS_CONFIG_ERROR;
}
