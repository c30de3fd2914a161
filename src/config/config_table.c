/* SPDX-License-Identifier: MIT */
/* Every setting of shadowsocks-libev 3.3.5's ss-local, ss-server, ss-tunnel
 * and ss-redir, once: the JSON keys of its jconf.c and the flags of its
 * getopt strings and long options, with what we add (--check, --workers,
 * --server-url, ...), and ss-manager's own. The rows are in the order -h
 * lists them. -A (one-time auth) is a row too, taken only to be refused with
 * a reason, and so are the keys libev reads that we leave alone. */

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "config/config_table.h"
#include "util/result.h"

#define STR2(x) #x
#define STR(x) STR2(x)

/* ---- The setters of the odd settings ----------------------------------- */

static int set_method(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	if (v->json != NULL && !cJSON_IsString(v->json))
		return ss_cfg_value_refuse(v, "must be a string", err, errlen);
	return ss_cfg_method(cfg, v->json ? v->json->valuestring : v->arg, err, errlen);
}

/* A key, unlike a password, is text in a file, never a number. */
static int set_key(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	if (v->json != NULL && !cJSON_IsString(v->json))
		return ss_cfg_value_refuse(v, "must be a base64 string", err, errlen);
	return ss_cfg_value_set_string(cfg, v, err, errlen);
}

/* A file's "interface" is taken as libev takes it. */
static int set_iface(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	if (v->json == NULL && (v->arg[0] == '\0' || strlen(v->arg) >= IFNAMSIZ))
		return ss_cfg_err(err, errlen, "invalid interface name '%s' for %s (1-%d bytes)",
				  v->arg, v->name, IFNAMSIZ - 1);
	return ss_cfg_value_set_string(cfg, v, err, errlen);
}

static int set_tunnel(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	char buf[32];
	const char *text = ss_cfg_value_text(v, buf, sizeof(buf));
	int rc;

	if (text == NULL)
		return ss_cfg_value_refuse(v, "must be a string", err, errlen);
	rc = ss_cfg_tunnel(text, &cfg->tunnel_addr, v->set->label, err, errlen);
	if (rc == 0 || v->json == NULL)
		cfg->have_tunnel_addr = rc == 0;
	return rc;
}

static int set_local_ip(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	int af = v->set->off == offsetof(ss_config_t, local_ipv4_addr) ? AF_INET : AF_INET6;
	const char *dst = (const char *)cfg + v->set->off;
	unsigned char tmp[16];

	if (ss_cfg_value_set_string(cfg, v, err, errlen) != 0)
		return -EINVAL;
	if (inet_pton(af, dst, tmp) != 1)
		return ss_cfg_err(err, errlen, "%s must be an %s address, not \"%s\"", v->name,
				  af == AF_INET ? "IPv4" : "IPv6", dst);
	return 0;
}

/* --dns, --remote-dns, --local-dns: an address and port (53 when not
 * given); the remote name server may be a name, which the server looks
 * up. */
static int set_dns(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	size_t off = v->set->off;
	ss_addr_t *a = (ss_addr_t *)(void *)((char *)cfg + off);
	bool *have = off == offsetof(ss_config_t, dns_addr)     ? &cfg->have_dns
		     : off == offsetof(ss_config_t, remote_dns) ? &cfg->have_remote_dns
								: &cfg->have_local_dns;
	char buf[32];
	const char *text = ss_cfg_value_text(v, buf, sizeof(buf));

	if (text == NULL || text[0] == '\0')
		return ss_cfg_value_refuse(v, "must be an address (and port)", err, errlen);
	if (ss_cfg_dns_addr(text, off == offsetof(ss_config_t, remote_dns), a, v->name, err,
			    errlen) != 0)
		return -EINVAL;
	*have = true;
	return 0;
}

/* -v counts; the file gives a level, or true or false. */
static int set_verbose(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	char buf[32];
	const char *text;
	long n;

	if (v->json == NULL) {
		if (cfg->verbose < 10)
			cfg->verbose++;
		return 0;
	}
	if (cJSON_IsBool(v->json)) {
		cfg->verbose = cJSON_IsTrue(v->json);
		return 0;
	}
	text = ss_cfg_value_text(v, buf, sizeof(buf));
	if (text == NULL || ss_cfg_long(text, 0, 10, &n) != 0)
		return ss_cfg_value_refuse(v, "must be true, false or a level 0-10", err, errlen);
	cfg->verbose = (int)n;
	return 0;
}

/* A SOCKS5 login field (RFC 1929) from the command line; the pair is
 * judged once all are in (config_socks.c), and a file's value is kept as
 * given for that. Never echo the password into a message. */
static int set_socks_field(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	if (v->json != NULL)
		return ss_cfg_value_set_string(cfg, v, err, errlen);
	if (v->arg[0] == '\0' ||
	    ss_cfg_copy((char *)cfg + v->set->off, SS_SOCKS5_FIELD_MAX + 1, v->arg) != 0)
		return ss_cfg_err(err, errlen, "%s must be 1 to %d bytes", v->name,
				  SS_SOCKS5_FIELD_MAX);
	return 0;
}

/* -A, and "auth": true. */
static int set_auth(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen)
{
	(void)cfg;
	if (v->json == NULL || cJSON_IsTrue(v->json))
		return ss_cfg_err(err, errlen,
				  "%s: one-time auth was removed from Shadowsocks; use an AEAD "
				  "method",
				  v->name);
	return 0;
}

/* ---- The table ---------------------------------------------------------- */

#define FIELD(m) .off = offsetof(ss_config_t, m), .size = sizeof(((ss_config_t *)0)->m)
#define ALL SS_PROGS_ALL
#define CLIENTS SS_PROGS_CLIENTS
#define MGR SS_PROGS(SS_PROG_MANAGER)
#define ONLY(p) SS_PROGS(SS_PROG_##p)
#define SOCKS_SCOPE "--socks-user, --socks-pass and --socks-users are for ss-local"

static const char *const mode_names[] = {
    [SS_MODE_TCP_ONLY] = "tcp_only",
    [SS_MODE_TCP_AND_UDP] = "tcp_and_udp",
    [SS_MODE_UDP_ONLY] = "udp_only",
    NULL,
};
_Static_assert(sizeof(ss_relay_mode_t) == sizeof(int), "ENUM rows store an int");

#define CONFIG_FILE_HELP(query)                                                                    \
	"JSON config file; flags override it.\n"                                                   \
	"Given no settings (none, or only --check\n" query ", the first that exists of\n"          \
	"~/.config/shadowsocks-libev/config.json,\n"                                               \
	"/etc/shadowsocks-c/config.json and\n"                                                     \
	"/etc/shadowsocks-libev/config.json; now:"

const ss_setting_t ss_cfg_settings[] = {
    {.key = "server",
     .opt = 's',
     .arg = "<server_host>",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_server,
     .field = SS_CF_SERVERS,
     .label = "-s/server",
     .progs = ALL | MGR,
     .required = ALL,
     .help = "Server host name or IP address, or an\nss:// URL; repeat for more (\"host:port\"\n"
	     "and \"[v6]:port\" work).",
     .help_server = "Address to listen on; repeat for more.\n"
		    "Default: \"::\" (IPv6 and IPv4 on Linux)."},
    {.key = "servers",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_servers,
     .field = SS_CF_SERVERS,
     .progs = CLIENTS,
     .flags = SS_SET_JSON_TEXT,
     .scope = "%s is for ss-local, ss-tunnel and ss-redir; ss-server listens on the addresses "
	      "in \"server\" with one method"},
    {.key = "server_port",
     .opt = 'p',
     .arg = "<server_port>",
     .type = SS_SET_PORT,
     FIELD(server_port),
     .field = SS_CF_SERVER_PORT,
     .label = "-p/server_port",
     .progs = ALL,
     .required = ALL,
     .help = "Server port.",
     .help_server = "Port to listen on."},
    {.key = "server_url",
     .lopt = "server-url",
     .arg = "<ss://...>",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_server_url,
     .field = SS_CF_SERVERS,
     .progs = CLIENTS,
     .scope = "%s is for ss-local, ss-tunnel and ss-redir; ss-server prints its URL with "
	      "--print-url",
     .help = "A server as a SIP002 URL, with its own\nmethod, password, plugin and tag; repeat\n"
	     "for more. Several servers: failover."},
    {.key = "local_port",
     .opt = 'l',
     .arg = "<local_port>",
     .type = SS_SET_PORT,
     FIELD(local_port),
     .field = SS_CF_LOCAL_PORT,
     .label = "-l/local_port",
     .progs = ALL,
     .required = CLIENTS,
     .help = "Port to listen on locally.",
     .help_server = "Accepted and ignored, as by libev."},
    {.key = "password",
     .opt = 'k',
     .lopt = "password",
     .arg = "<password>",
     .type = SS_SET_STRING,
     FIELD(password),
     .field = SS_CF_SECRET,
     .label = "-k/--password",
     .noun = "password",
     .progs = ALL,
     .flags = SS_SET_SECRET | SS_SET_ARG_NONEMPTY | SS_SET_HELP_SHORT,
     .required = ALL,
     .help = "Password shared with the other side\n(also --password <password>)."},
    {.key = "method",
     .opt = 'm',
     .arg = "<encrypt_method>",
     .type = SS_SET_FN,
     .fn = set_method,
     .field = SS_CF_METHOD,
     .progs = ALL | MGR,
     .required = ALL,
     .help = "Encryption method, one of:",
     .help_more = ss_cfg_usage_methods},

    {.key = "user",
     .opt = 'a',
     .arg = "<user>",
     .type = SS_SET_STRING,
     FIELD(user),
     .field = SS_CF_USER,
     .progs = ALL | MGR,
     .flags = SS_SET_GAP,
     .help = "Switch to this user after start-up."},
    {.opt = 'f',
     .arg = "<pid_file>",
     .type = SS_SET_STRING,
     FIELD(pid_file),
     .field = -1,
     .label = "-f",
     .noun = "pid file path",
     .progs = ALL | MGR,
     .flags = SS_SET_ARG_NONEMPTY,
     .help = "Run in the background, pid written here."},
    {.key = "timeout",
     .opt = 't',
     .arg = "<timeout>",
     .type = SS_SET_INT,
     FIELD(timeout),
     .min = 1,
     .max = SS_TIMEOUT_MAX,
     .expect = "a positive number",
     .unit = "seconds",
     .field = SS_CF_TIMEOUT,
     .progs = ALL | MGR,
     .help = "Idle timeout in seconds (default 60)."},
    {.opt = 'c',
     .arg = "<config_file>",
     .type = SS_SET_STRING,
     FIELD(config_file),
     .field = -1,
     .label = "-c",
     .noun = "config file path",
     .progs = ALL | MGR,
     .flags = SS_SET_ARG_NONEMPTY,
     .help = CONFIG_FILE_HELP(")"),
     .help_server = CONFIG_FILE_HELP("or --print-url)"),
     .help_manager = "JSON config file; flags override it.\n"
		     "Given no settings, the first that exists of\n"
		     "~/.config/shadowsocks-libev/config.json,\n"
		     "/etc/shadowsocks-c/config.json and\n"
		     "/etc/shadowsocks-libev/config.json; now:",
     .help_more = ss_cfg_usage_default_file},
    {.key = "nofile",
     .opt = 'n',
     .arg = "<number>",
     .type = SS_SET_INT,
     FIELD(nofile),
     .min = 1,
     .max = INT_MAX,
     .expect = "a positive number",
     .field = SS_CF_NOFILE,
     .progs = ALL | MGR,
     .help = "Raise the open files limit to this."},
    {.key = "interface",
     .opt = 'i',
     .arg = "<interface>",
     .type = SS_SET_FN,
     FIELD(iface),
     .fn = set_iface,
     .field = SS_CF_IFACE,
     .progs = ALL | MGR,
     .help = "Network interface to send traffic through."},
    {.key = "local_address",
     .opt = 'b',
     .arg = "<local_address>",
     .type = SS_SET_STRING,
     FIELD(local_addr),
     .field = SS_CF_LOCAL_ADDR,
     .label = "-b/local_address",
     .noun = "address",
     .progs = ALL | MGR,
     .flags = SS_SET_ARG_NONEMPTY | SS_SET_FILE_NONEMPTY,
     .help = "Address to listen on (default 127.0.0.1).",
     .help_server = "Local address for outbound connections."},
    {.key = "local_ipv4_address",
     .type = SS_SET_FN,
     FIELD(local_ipv4_addr),
     .fn = set_local_ip,
     .field = SS_CF_LOCAL_V4,
     .progs = ALL},
    {.key = "local_ipv6_address",
     .type = SS_SET_FN,
     FIELD(local_ipv6_addr),
     .fn = set_local_ip,
     .field = SS_CF_LOCAL_V6,
     .progs = ALL},

    {.key = "mode",
     .type = SS_SET_ENUM,
     FIELD(mode),
     .names = mode_names,
     .field = SS_CF_MODE,
     .progs = ALL | MGR},
    {.opt = 'u',
     .type = SS_SET_ENUM,
     FIELD(mode),
     .names = mode_names,
     .flag_value = SS_MODE_TCP_AND_UDP,
     .field = SS_CF_MODE,
     .progs = ALL | MGR,
     .flags = SS_SET_GAP,
     .help = "Relay UDP as well as TCP."},
    {.opt = 'U',
     .type = SS_SET_ENUM,
     FIELD(mode),
     .names = mode_names,
     .flag_value = SS_MODE_UDP_ONLY,
     .field = SS_CF_MODE,
     .progs = ALL | MGR,
     .help = "Relay UDP only, no TCP."},
    {.key = "ipv6_first",
     .opt = '6',
     .type = SS_SET_BOOL,
     FIELD(ipv6_first),
     .field = SS_CF_IPV6_FIRST,
     .progs = ALL | MGR,
     .help = "Prefer IPv6 when resolving host names."},
    {.key = "nameserver",
     .opt = 'd',
     .arg = "<addr>",
     .type = SS_SET_STRING,
     FIELD(nameserver),
     .field = SS_CF_NAMESERVER,
     .progs = ALL | MGR,
     .help = "Name servers to use, comma-separated."},
    {.key = "tunnel_address",
     .opt = 'L',
     .arg = "<addr>:<port>",
     .type = SS_SET_FN,
     .fn = set_tunnel,
     .field = SS_CF_TUNNEL,
     .label = "-L/tunnel_address",
     .progs = ONLY(TUNNEL),
     .scope = "%s is only for ss-tunnel",
     .flags = SS_SET_FILE_SKIPS | SS_SET_GAP,
     .help = "Where the tunnel leads: the destination\nevery connection is forwarded to."},
    {.key = "tcp_tproxy",
     .opt = 'T',
     .lopt = "tcp-tproxy",
     .type = SS_SET_BOOL,
     FIELD(tcp_tproxy),
     .field = SS_CF_TCP_TPROXY,
     .progs = ONLY(REDIR),
     .scope = "-T/--tcp-tproxy is only for ss-redir",
     .flags = SS_SET_FILE_KEEPS | SS_SET_GAP,
     .help = "TCP arrives by TPROXY, not REDIRECT\n(UDP always does: -u, -U)."},

    {.key = "reuse_port",
     .lopt = "reuse-port",
     .type = SS_SET_BOOL,
     FIELD(reuse_port),
     .field = SS_CF_REUSE_PORT,
     .progs = ALL | MGR,
     .flags = SS_SET_GAP,
     .help = "Set SO_REUSEPORT on listening sockets."},
    {.key = "workers",
     .lopt = "workers",
     .arg = "<n>",
     .type = SS_SET_INT,
     FIELD(workers),
     .min = 1,
     .max = SS_WORKERS_MAX,
     .field = SS_CF_WORKERS,
     .progs = ALL | MGR,
     .help = "Loops, each on a thread of its own (1).",
     .help_server = "Loops, each on a thread of its own (default:\n"
		    "one per online CPU); 1 to " STR(SS_WORKERS_MAX) "."},
    {.key = "fast_open",
     .lopt = "fast-open",
     .type = SS_SET_BOOL,
     FIELD(fast_open),
     .field = SS_CF_FAST_OPEN,
     .progs = ALL | MGR,
     .help = "Use TCP Fast Open."},
    {.key = "acl",
     .lopt = "acl",
     .arg = "<acl_file>",
     .type = SS_SET_STRING,
     FIELD(acl),
     .field = SS_CF_ACL,
     .progs = ALL | MGR,
     .help = "Access control list file."},
    {.key = "mtu",
     .lopt = "mtu",
     .arg = "<MTU>",
     .type = SS_SET_INT,
     FIELD(mtu),
     .min = 0,
     .max = 65535,
     .field = SS_CF_MTU,
     .progs = ALL | MGR,
     .help = "MTU of the network interface (for UDP)."},
    {.key = "udp_timeout",
     .lopt = "udp-timeout",
     .arg = "<seconds>",
     .type = SS_SET_INT,
     FIELD(udp_timeout),
     .min = 1,
     .max = SS_TIMEOUT_MAX,
     .expect = "a positive number of seconds",
     .field = SS_CF_UDP_TIMEOUT,
     .progs = ALL | MGR,
     .help = "Idle time before a UDP association ends (60)."},
    {.key = "udp_max_associations",
     .lopt = "udp-max-associations",
     .arg = "<n>",
     .type = SS_SET_INT,
     FIELD(udp_max_assoc),
     .min = 1,
     .max = 1L << 20,
     .field = SS_CF_UDP_MAX_ASSOC,
     .progs = ALL,
     .help = "Most UDP associations at once (" STR(SS_UDP_MAX_ASSOC_DEFAULT) ")."},
    {.key = "mptcp",
     .lopt = "mptcp",
     .type = SS_SET_BOOL,
     FIELD(mptcp),
     .field = SS_CF_MPTCP,
     .progs = ALL | MGR,
     .help = "Use Multipath TCP."},
    {.key = "no_delay",
     .lopt = "no-delay",
     .type = SS_SET_BOOL,
     FIELD(no_delay),
     .field = SS_CF_NO_DELAY,
     .progs = ALL | MGR,
     .help = "Set TCP_NODELAY."},
    {.key = "key",
     .lopt = "key",
     .arg = "<key_in_base64>",
     .type = SS_SET_FN,
     FIELD(key_b64),
     .fn = set_key,
     .field = SS_CF_SECRET,
     .label = "--key",
     .noun = "key",
     .progs = ALL,
     .flags = SS_SET_SECRET | SS_SET_ARG_NONEMPTY,
     .help = "Key in base64, instead of a password."},
    {.key = "plugin",
     .lopt = "plugin",
     .arg = "<plugin>",
     .type = SS_SET_STRING,
     FIELD(plugin),
     .field = SS_CF_PLUGIN,
     .progs = ALL | MGR,
     .help = "SIP003 plugin to run: a path, or a name\nin PATH or the working directory; it\n"
	     "replaces a URL's plugin too.",
     .help_server = "SIP003 plugin to run: a path, or a name\nin PATH or the working directory."},
    {.key = "plugin_opts",
     .lopt = "plugin-opts",
     .arg = "<options>",
     .type = SS_SET_STRING,
     FIELD(plugin_opts),
     .field = SS_CF_PLUGIN_OPTS,
     .progs = ALL | MGR,
     .help = "Its options (SS_PLUGIN_OPTIONS); they\nreplace a URL's too.",
     .help_server = "Its options (SS_PLUGIN_OPTIONS)."},
    {.key = "plugin_mode",
     .lopt = "plugin-mode",
     .arg = "<mode>",
     .type = SS_SET_ENUM,
     FIELD(plugin_mode),
     .names = mode_names,
     .field = SS_CF_PLUGIN_MODE,
     .progs = ALL | MGR,
     .help = "What it carries: tcp_only (default),\ntcp_and_udp (SIP003u) or udp_only."},
    /* The online configuration (SIP008). */
    {.key = "online_config",
     .lopt = "online-config",
     .arg = "<url>",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_online,
     .field = SS_CF_ONLINE_CONFIG,
     .label = "--online-config",
     .progs = CLIENTS,
     .scope = "%s is for ss-local, ss-tunnel and ss-redir",
     .flags = SS_SET_GAP,
     .help = "Servers from an online configuration\n(SIP008) at this https:// or ssconf://\n"
	     "URL, fetched at start and every hour."},
    {.key = "ca_file",
     .lopt = "ca-file",
     .arg = "<file>",
     .type = SS_SET_STRING,
     FIELD(ca_file),
     .field = SS_CF_CA_FILE,
     .label = "--ca-file",
     .noun = "CA file path",
     .progs = CLIENTS,
     .scope = "%s is for ss-local, ss-tunnel and ss-redir",
     .flags = SS_SET_ARG_NONEMPTY | SS_SET_FILE_NONEMPTY,
     .help = "CA certificates (PEM) its server is checked\nagainst, instead of the system's."},
    /* Kept from a file for any program: ss_cfg_finish_socks has its say. */
    {.key = "socks_user",
     .lopt = "socks-user",
     .arg = "<name>",
     .type = SS_SET_FN,
     FIELD(socks_user),
     .fn = set_socks_field,
     .field = SS_CF_SOCKS_AUTH,
     .progs = ONLY(LOCAL),
     .scope = SOCKS_SCOPE,
     .flags = SS_SET_FILE_KEEPS,
     .help = "SOCKS5 clients must log in (RFC 1929)\nas this user, with --socks-pass."},
    {.key = "socks_pass",
     .lopt = "socks-pass",
     .arg = "<password>",
     .type = SS_SET_FN,
     FIELD(socks_pass),
     .fn = set_socks_field,
     .field = SS_CF_SOCKS_AUTH,
     .progs = ONLY(LOCAL),
     .scope = SOCKS_SCOPE,
     .flags = SS_SET_FILE_KEEPS | SS_SET_SECRET,
     .help = "That user's password."},
    {.key = "socks_users",
     .lopt = "socks-users",
     .arg = "<file>",
     .type = SS_SET_STRING,
     FIELD(socks_users_file),
     .field = SS_CF_SOCKS_AUTH,
     .progs = ONLY(LOCAL),
     .scope = SOCKS_SCOPE,
     .flags = SS_SET_FILE_KEEPS,
     .help = "Users who may log in, one name:password\na line."},
    /* ss-local's DNS relay. */
    {.key = "dns",
     .lopt = "dns",
     .arg = "<addr:port>",
     .type = SS_SET_FN,
     FIELD(dns_addr),
     .fn = set_dns,
     .field = SS_CF_DNS,
     .progs = ONLY(LOCAL),
     .scope = "%s is for ss-local",
     .flags = SS_SET_GAP | SS_SET_FILE_SKIPS,
     .help = "Answer DNS here, UDP and TCP (port 53 if\nnot given): names the ACL proxies are\n"
	     "asked through the server, the others\ndirectly."},
    {.key = "remote_dns",
     .lopt = "remote-dns",
     .arg = "<addr:port>",
     .type = SS_SET_FN,
     FIELD(remote_dns),
     .fn = set_dns,
     .field = SS_CF_REMOTE_DNS,
     .progs = ONLY(LOCAL),
     .scope = "%s is for ss-local",
     .flags = SS_SET_FILE_SKIPS,
     .help = "The name server asked through the server\n(8.8.8.8:53)."},
    {.key = "local_dns",
     .lopt = "local-dns",
     .arg = "<addr:port>",
     .type = SS_SET_FN,
     FIELD(local_dns),
     .fn = set_dns,
     .field = SS_CF_LOCAL_DNS,
     .progs = ONLY(LOCAL),
     .scope = "%s is for ss-local",
     .flags = SS_SET_FILE_SKIPS,
     .help = "The name server asked directly (the first\nof /etc/resolv.conf)."},
    {.key = "manager_address",
     .lopt = "manager-address",
     .arg = "<addr>",
     .type = SS_SET_STRING,
     FIELD(manager_address),
     .label = "--manager-address",
     .noun = "manager address",
     .field = -1,
     .progs = ONLY(SERVER) | MGR,
     .scope = "%s is for ss-server and ss-manager",
     .flags = SS_SET_ARG_NONEMPTY | SS_SET_GAP | SS_SET_FILE_SKIPS,
     .help_manager =
	 "Where the manager takes its commands:\nhost:port (UDP) or a Unix socket path.",
     .help = "Send traffic figures to a manager at\nhost:port or a Unix socket path."},
    {.key = "metrics",
     .lopt = "metrics",
     .arg = "<addr:port>",
     .type = SS_SET_STRING,
     FIELD(metrics),
     .label = "--metrics",
     .noun = "metrics address",
     .field = -1,
     .progs = ONLY(SERVER) | MGR,
     .scope = "%s is for ss-server and ss-manager",
     .flags = SS_SET_ARG_NONEMPTY,
     .help_manager = "Serve every port's figures as Prometheus\n"
		     "text at addr:port (GET /metrics).",
     .help = "Serve Prometheus metrics over HTTP\nat addr:port (GET /metrics)."},
    {.key = "block_private",
     .lopt = "block-private",
     .type = SS_SET_BOOL,
     FIELD(block_private),
     .field = -1,
     .progs = ONLY(SERVER) | MGR,
     .scope = "%s is for ss-server and ss-manager",
     .help = "Refuse targets at loopback, private,\nlink-local and multicast addresses.",
     .help_manager = "Ports refuse private targets: the default;\n\"block_private\": false in the "
		     "file\nturns it off."},
    {.key = "workdir",
     .opt = 'D',
     .lopt = "workdir",
     .arg = "<path>",
     .type = SS_SET_STRING,
     FIELD(workdir),
     .field = -1,
     .label = "-D/--workdir",
     .noun = "directory",
     .progs = MGR,
     .scope = "%s is an ss-manager setting",
     .flags = SS_SET_ARG_NONEMPTY | SS_SET_FILE_SKIPS,
     .help = "Working directory: the state file is kept\nthere (ss-manager.json)."},
    {.key = "state",
     .lopt = "state",
     .arg = "<file>",
     .type = SS_SET_STRING,
     FIELD(state_file),
     .field = -1,
     .label = "--state",
     .noun = "state file path",
     .progs = MGR,
     .scope = "%s is an ss-manager setting",
     .flags = SS_SET_ARG_NONEMPTY | SS_SET_FILE_SKIPS,
     .help =
	 "The file the ports are kept in across\nrestarts (default: in the working directory)."},
    {.key = "port_password",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_port_password,
     .field = -1,
     .progs = MGR,
     .scope = "%s is an ss-manager setting",
     .flags = SS_SET_FILE_SKIPS | SS_SET_JSON_TEXT},
    {.key = "plugins",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_plugins,
     .field = -1,
     .progs = MGR,
     .scope = "%s is an ss-manager setting",
     .flags = SS_SET_FILE_SKIPS | SS_SET_JSON_TEXT},
    {.key = "acl_dir",
     .type = SS_SET_STRING,
     FIELD(acl_dir),
     .field = -1,
     .progs = MGR,
     .scope = "%s is an ss-manager setting",
     .flags = SS_SET_FILE_SKIPS},
    {.lopt = "print-url",
     .type = SS_SET_BOOL,
     FIELD(print_url),
     .field = -1,
     .progs = ONLY(SERVER),
     .scope = "%s is for ss-server",
     .flags = SS_SET_QUERY,
     .help = "Print the ss:// URL (and QR code) a client\nneeds for this configuration, and exit."},

    {.key = "verbose",
     .opt = 'v',
     .type = SS_SET_FN,
     .fn = set_verbose,
     .field = SS_CF_VERBOSE,
     .progs = ALL | MGR,
     .flags = SS_SET_GAP | SS_SET_JSON_TEXT,
     .help = "More log output; repeat for even more."},
    {.lopt = "check",
     .type = SS_SET_BOOL,
     FIELD(check),
     .field = -1,
     .progs = ALL,
     .flags = SS_SET_QUERY,
     .help = "Check the configuration (file, ACL, plugin,\nnames, -a user) and print what would "
	     "run;\nexit 1 with the first problem, else 0."},
    {.opt = 'h',
     .lopt = "help",
     .type = SS_SET_HELP,
     .field = -1,
     .progs = ALL | MGR,
     .help = "Show this help."},
    {.lopt = "version",
     .type = SS_SET_VERSION,
     .field = -1,
     .progs = ALL | MGR,
     .help = "Show the version, what runs each method's\ncrypto on this CPU, and the libraries."},

    /* In files only. */
    {.key = "use_syslog",
     .type = SS_SET_BOOL,
     FIELD(use_syslog),
     .field = SS_CF_USE_SYSLOG,
     .progs = ALL | MGR},
    {.key = "users",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_users,
     .field = -1,
     .progs = ONLY(SERVER),
     .flags = SS_SET_JSON_TEXT,
     .scope = "%s is for ss-server; %s takes the identity and user PSKs as \"password\": "
	      "\"iPSK:uPSK\""},
    {.key = "replay_capacity",
     .type = SS_SET_INT,
     FIELD(replay_capacity),
     .min = 1,
     .max = SS_REPLAY_CAPACITY_MAX,
     .field = -1,
     .progs = ONLY(SERVER),
     .flags = SS_SET_FILE_KEEPS},

    /* Refused, with the reason. */
    {.key = "auth",
     .opt = 'A',
     .type = SS_SET_FN,
     .fn = set_auth,
     .field = -1,
     .progs = ALL,
     .flags = SS_SET_REFUSED | SS_SET_JSON_TEXT},
    {.lopt = "executable",
     .arg = "<path>",
     .type = SS_SET_FN,
     .fn = ss_cfg_set_executable,
     .field = -1,
     .progs = MGR,
     .scope = "%s is an ss-manager flag",
     .help = "Taken and ignored: every port runs in\nthis process, not in an ss-server."},
    /* Keys of shadowsocks-libev 3.3.5 (src/jconf.c) that these programs do
     * not act on, each listed in docs/compatibility.md: ss-manager's, and
     * dscp. A file shared with libev's programs may hold them. */
    {.key = "dscp", .type = SS_SET_UNUSED, .field = -1},
};

const size_t ss_cfg_n_settings = SS_ARRAY_LEN(ss_cfg_settings);
_Static_assert(SS_ARRAY_LEN(ss_cfg_settings) <= SS_CFG_SETTINGS_MAX, "the getopt tables fit");

const ss_setting_t *ss_cfg_setting_by_key(const char *key)
{
	for (size_t i = 0; i < ss_cfg_n_settings; i++)
		if (ss_cfg_settings[i].key && strcmp(ss_cfg_settings[i].key, key) == 0)
			return &ss_cfg_settings[i];
	return NULL;
}
