/* SPDX-License-Identifier: MIT */
#ifndef SS_CONFIG_CONFIG_H
#define SS_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/method.h"
#include "proto/addr.h"
#include "proto/socks5_auth.h"
#include "shadowsocks.h" /* ss_prog_t, and the ss_config_t the library hands out */

/* One configuration for all three programs, filled from the command line and
 * the JSON file (flags override the file), then validated. The core only
 * ever sees it const. */

typedef enum {
	SS_MODE_TCP_ONLY,
	SS_MODE_TCP_AND_UDP,
	SS_MODE_UDP_ONLY,
} ss_relay_mode_t;

#define SS_MAX_SERVERS 16
#define SS_UDP_MAX_ASSOC_DEFAULT 4096
/* Salts ss-server remembers against replays, in each of its pools (see
 * replay_capacity below); shadowsocks-libev also remembers 10^6. */
#define SS_REPLAY_CAPACITY_DEFAULT 1000000
#define SS_REPLAY_CAPACITY_MAX (1L << 26)
/* --workers: loops at most, each on a thread of its own. */
#define SS_WORKERS_MAX 256
/* -t, --udp-timeout: seconds at most, so that milliseconds fit in an int. */
#define SS_TIMEOUT_MAX 2147483L
#define SS_HOST_MAX 256

typedef struct ss_host_port {
	char host[SS_HOST_MAX]; /* name or address literal, without brackets */
	uint16_t port;          /* 0: not given, use server_port */
} ss_host_port_t;

#define SS_PLUGIN_MAX 4096
#define SS_SERVER_TAG_MAX 256

/* One server entry: for ss-local and ss-tunnel a server to use, with its
 * own method, key and SIP003 plugin; for ss-server a listen address (only
 * host and port count there). Entries come from -s, --server-url and the
 * file's "server", "servers" and "server_url"; after ss_config_parse every
 * client entry has its method and key, its own or the top-level ones. */
typedef struct ss_config_server {
	char host[SS_HOST_MAX];      /* name or address literal, without brackets */
	uint16_t port;               /* 0: not given, use server_port */
	char tag[SS_SERVER_TAG_MAX]; /* "remarks"/"tag", a URL's #tag; may be empty */
	const ss_method_t *method;
	uint8_t key[SS_MAX_KEY_LEN];
	ss_psk_list_t psks; /* a 2022 method's PSKs, as ss_config_t.psks */
	bool key_ignored;   /* method none with a password or key */
	/* Its SIP003 plugin (empty: none), run by the instance in front of
	 * this server. Each of plugin, plugin_opts and plugin_mode is the
	 * entry's own where it gives one (a URL gives plugin and options, "no
	 * plugin" included), else the top-level one; options are not taken
	 * from the top for a plugin of the entry's own. plugin_tcp and
	 * plugin_udp: what that leaves the plugin to carry, as in ss_config_t. */
	char plugin[SS_PLUGIN_MAX];
	char plugin_opts[SS_PLUGIN_MAX];
	ss_relay_mode_t plugin_mode;
	bool plugin_tcp, plugin_udp;
	/* plugin and plugin_opts came from an ss:// URL, text anyone may have
	 * written: the plugin is a plain program name (ss_url_plugin_name_ok),
	 * and is run only as that, found in PATH without a shell. One from
	 * the configuration (--plugin, "plugin") may be a path or a command
	 * line. */
	bool plugin_from_url;

	/* Parser bookkeeping: where the entry came from (for messages), what
	 * it set itself, and its secret text until the method is known (wiped
	 * then, or by ss_config_clear). */
	char origin[48];
	bool own_method, own_secret, own_plugin, own_plugin_opts, own_plugin_mode;
	char password[1024];
	char key_b64[512];
} ss_config_server_t;

/* One user of ss-server ("users" in the JSON file): a SIP023 user of a 2022
 * AES method, or a SIP004 user of an AEAD method (several keys on one port,
 * told apart by which opens a connection's first chunk). */
#define SS_USER_NAME_MAX 64
#define SS_USER_PASSWORD_MAX 256
typedef struct ss_config_user {
	char name[SS_USER_NAME_MAX]; /* non-empty, unique among the users */
	/* 2022: the user PSK (uPSK); SIP004: the user's key (from "key", or
	 * its password as EVP_BytesToKey); method->key_len bytes. */
	uint8_t key[SS_MAX_KEY_LEN];
	/* The user's method: SIP004 users may each have one of their own
	 * ("method", any AEAD method); set to the port's once it is known. */
	const ss_method_t *method;
	/* "password": the 2022 PSK in base64 (wiped once decoded into key),
	 * or a SIP004 user's password text (kept, as the top-level password
	 * is, for --print-url). */
	char password[SS_USER_PASSWORD_MAX];
	/* "key": a SIP004 user's key in base64 until decoded, then wiped. */
	char key_b64[64];
} ss_config_user_t;

struct ss_config {
	ss_prog_t prog;
	const char *prog_name; /* argv[0] basename, for messages */

	/* -s, --server-url / "server", "servers", "server_url": ss-local,
	 * ss-tunnel: the servers to use (one picked per connection); ss-server:
	 * the addresses to listen on. */
	ss_config_server_t servers[SS_MAX_SERVERS];
	size_t n_servers;
	uint16_t server_port; /* -p / "server_port" */

	/* -b / "local_address": ss-local, ss-tunnel: the listen address;
	 * ss-server: the outbound bind address. */
	char local_addr[SS_HOST_MAX];
	uint16_t local_port; /* -l / "local_port" (ss-local, ss-tunnel) */
	/* "local_ipv4_address" / "local_ipv6_address": ss-server outbound binds */
	char local_ipv4_addr[64];
	char local_ipv6_addr[64];

	const ss_method_t *method;   /* -m / "method" */
	uint8_t key[SS_MAX_KEY_LEN]; /* from -k/password or --key/key */
	/* For a 2022 method, every PSK from -k/password or --key/key: the
	 * identity PSKs first, the user PSK last (SIP023). key is a copy of the
	 * last one: for a client the PSK that keys the sessions, for ss-server
	 * (which takes exactly one) its own PSK, the iPSK when it has users.
	 * n is 0 for the other methods. */
	ss_psk_list_t psks;
	/* Method none: a password or key was given and is not used. */
	bool key_ignored;
	/* "users" (ss-server): a 2022 AES method's users' PSKs, each behind
	 * the server's identity PSK; or a SIP004 port's users, each with its
	 * own key (and maybe method), the port then having no key of its own. An array of n_users
	 * allocated by the parser and freed by ss_config_clear; NULL when there are none. */
	ss_config_user_t *users;
	size_t n_users;

	int timeout;         /* -t / "timeout", seconds, default 60 */
	char user[64];       /* -a / "user" */
	char pid_file[4096]; /* -f; non-empty means daemonize */
	/* -c; or, when the command line gives no settings, the default file
	 * (config_default): see ss_config_parse. */
	char config_file[4096];
	bool config_default;
	long nofile;           /* -n / "nofile", 0 = leave as is */
	char iface[32];        /* -i / "interface" */
	bool ipv6_first;       /* -6 / "ipv6_first" */
	char nameserver[256];  /* -d / "nameserver": comma-separated list */
	ss_addr_t tunnel_addr; /* -L / "tunnel_address" (ss-tunnel) */
	bool have_tunnel_addr;
	/* -T / "tcp_tproxy" (ss-redir): TCP arrives by TPROXY, not REDIRECT */
	bool tcp_tproxy;
	int verbose;          /* -v count / "verbose" */
	bool fast_open;       /* --fast-open / "fast_open" */
	bool reuse_port;      /* --reuse-port / "reuse_port" */
	bool no_delay;        /* --no-delay / "no_delay" */
	bool mptcp;           /* --mptcp / "mptcp" */
	bool use_syslog;      /* "use_syslog" */
	ss_relay_mode_t mode; /* -u, -U / "mode" */
	int mtu;              /* --mtu / "mtu", 0 = none */
	int udp_timeout;      /* --udp-timeout / "udp_timeout", seconds, default 60 */
	int udp_max_assoc;    /* --udp-max-associations / "udp_max_associations" */
	/* --workers / "workers": loops, each on a thread of its own with its
	 * own pools and SO_REUSEPORT listeners; 1 runs the one loop on the
	 * calling thread. Default: the online CPUs for ss-server, 1 for the
	 * clients. */
	int workers;
	/* "replay_capacity" (ss-server, JSON only): the salts each replay pool
	 * holds. SIP004 keeps two pools of the last this many salts, one for
	 * TCP and one for UDP, so datagrams never push out a connection's
	 * salt; SIP022 keeps the request salts of the last 60 s, at most this
	 * many (refusing new connections beyond it). */
	long replay_capacity;
	/* --manager-address / "manager_address" (ss-server): where a manager
	 * listens (HOST:PORT over UDP, or a Unix datagram socket's path); the
	 * server sends it "stat: {...}" datagrams, as shadowsocks-libev's
	 * ss-server does for its ss-manager. Empty: none. */
	char manager_address[512];
	/* Set by ss-manager on the ports it runs (no setting): its control
	 * socket, a target they refuse whatever the ACL (relay/doors.h),
	 * without reporting to it. Empty: none. */
	char manager_door[512];
	/* --metrics / "metrics" (ss-server): ADDR:PORT of the Prometheus text
	 * endpoint served on the loop. Empty: none. */
	char metrics[SS_HOST_MAX + 8];
	/* --block-private / "block_private" (ss-server): refuse targets at
	 * loopback, private, link-local, CGNAT, multicast and unspecified
	 * addresses, names resolving to them included. */
	bool block_private;
	/* ss-manager: -D/--workdir / "workdir", --state / "state" (the file
	 * its ports are kept in; default workdir/ss-manager.json, none without
	 * either), "acl_dir" (where an "acl" a port is added with must lie),
	 * "plugins" (the plugins a port may be added with: program names,
	 * '\n' between them) and "port_password" (the JSON object as given,
	 * allocated, wiped and freed by ss_config_clear; NULL: none). */
	char workdir[4096];
	char state_file[4096];
	char acl_dir[4096];
	char plugins_allowed[SS_PLUGIN_MAX];
	char *port_password;
	/* A top-level plugin to run as a program's name only, found in PATH,
	 * never a path or a command line (as a URL's: ss_url_plugin_name_ok).
	 * Set by ss-manager for a plugin a port was added with. */
	bool plugin_name_only;
	/* ss-local's DNS relay (relay/dns.h). --dns / "dns": where it answers,
	 * over UDP and TCP (have_dns false: no relay). --remote-dns /
	 * "remote_dns": the name server asked through the server, an address
	 * or a name the server looks up (default 8.8.8.8:53). --local-dns /
	 * "local_dns": the one asked directly, an address (default: the first
	 * name server of /etc/resolv.conf, read when the relay starts). Each
	 * port defaults to 53. */
	ss_addr_t dns_addr, remote_dns, local_dns;
	bool have_dns, have_remote_dns, have_local_dns;
	/* --print-url (ss-server): print the ss:// URLs clients need and exit.
	 * The password text is then kept (for the URLs) until ss_config_clear. */
	bool print_url;
	/* --check: parse, look up and report what would run, then exit. */
	bool check;
	/* What the parser found worth a word but not an error (an unknown
	 * JSON key), one line each, for the program to log once logging is
	 * set up. Lines past SS_CONFIG_WARN_MAX are counted, not kept. */
#define SS_CONFIG_WARN_MAX 8
	char warnings[SS_CONFIG_WARN_MAX][256];
	size_t n_warnings;

	/* --online-config / "online_config" (clients): the URL of an online
	 * configuration (SIP008), https:// or ssconf://; empty: none. Its
	 * servers join those of the configuration, which may then have none:
	 * servers[0, n_static_servers) are the configuration's own, the rest
	 * the document's (ss_config_set_document). online_interval: its
	 * "update_interval", seconds between fetches. ca_file: --ca-file /
	 * "ca_file", the CA certificates its server is checked against
	 * instead of the system's. */
	char online_url[2048];
	int online_interval;
	char ca_file[4096];
	size_t n_static_servers;

	/* Empty means not given (an empty "plugin" counts as none, as libev). */
	char acl[4096];                  /* --acl / "acl": path of the ACL file */
	char plugin[SS_PLUGIN_MAX];      /* --plugin / "plugin": SIP003 plugin, a path or a name */
	char plugin_opts[SS_PLUGIN_MAX]; /* --plugin-opts / "plugin_opts": its SS_PLUGIN_OPTIONS */
	/* --plugin-mode / "plugin_mode": which traffic goes through the plugin
	 * (default tcp_only); plugin_tcp and plugin_udp say what that leaves it
	 * of what this program relays to or from the server, at least one of
	 * them when there is a plugin. A client's server entries carry their
	 * own (ss_config_server_t), which is what the relay acts on. */
	ss_relay_mode_t plugin_mode;
	bool plugin_tcp, plugin_udp;

	/* ss-local's SOCKS5 users (RFC 1929): --socks-user with --socks-pass
	 * ("socks_user", "socks_pass") and the users of --socks-users FILE
	 * ("socks_users"). With any, clients must log in; with none, they need
	 * not. An array of n_socks_creds allocated by ss_config_parse and
	 * wiped and freed by ss_config_clear; NULL when there are none. */
	ss_socks5_cred_t *socks_creds;
	size_t n_socks_creds;

	/* Parser bookkeeping, not for the core. The secret text waits here
	 * until the method is known, and is wiped once the key is derived
	 * (ss_config_parse) or by ss_config_clear. A key wins over a password,
	 * as in libev. cli_set has one bit per setting the command line gave,
	 * so the file does not override it. */
	char password[1024]; /* -k, --password / "password" */
	char key_b64[512];   /* --key / "key": a key, or for 2022 a PSK list */
	/* The SOCKS5 settings as given, until ss_config_parse makes
	 * socks_creds of them (the password wiped then). */
	char socks_user[SS_SOCKS5_FIELD_MAX + 1];
	char socks_pass[SS_SOCKS5_FIELD_MAX + 1];
	char socks_users_file[4096];
	uint64_t cli_set;
	/* Unknown keys of the file that look like a slip for a known key the
	 * file does not set ("sever_port" for "server_port"): a message that
	 * the known key is missing names the slip too. known points into the
	 * parser's table. Keys past SS_CONFIG_TYPO_MAX are dropped. */
#define SS_CONFIG_TYPO_MAX 4
	struct {
		char key[64];
		const char *known;
	} typos[SS_CONFIG_TYPO_MAX];
	size_t n_typos;
	/* The command line gave something besides --check and --print-url,
	 * which ask about what would run and so read the default file too. */
	bool cli_settings;
	/* Checked as a whole and keys derived (ss_config_parse,
	 * ss_config_validate): complete, and no longer to be changed. */
	bool validated;
};

/* What ss_config_parse found besides a configuration. */
typedef enum {
	SS_CONFIG_RUN = 0, /* cfg is complete and valid */
	SS_CONFIG_HELP,    /* -h/--help: usage was written to out */
	SS_CONFIG_ERROR,   /* err holds one line naming the flag or key and value */
	SS_CONFIG_VERSION, /* --version: the version was written to out */
} ss_config_status_t;

/* Parses argv (flags as shadowsocks-libev 3.3.5 for prog) and the JSON file
 * (-c; or, when argv gives no settings at all, no arguments or only --check
 * or --print-url, the default file: the user's shadowsocks-libev file as
 * libev looks for it, else /etc/shadowsocks-c/config.json if it exists,
 * else /etc/shadowsocks-libev/config.json; SS_SYSCONFDIR names another
 * directory than /etc), then validates. err gets one line, no trailing
 * newline. Usage text for -h and the version for --version are written to
 * the FILE* out. Never exits, never prints anything else. */
ss_config_status_t ss_config_parse(ss_config_t *cfg, ss_prog_t prog, int argc, char **argv,
				   void *out, char *err, size_t errlen);

/* Zeroes cfg and sets prog; what ss_config_parse does first. Call it before
 * ss_config_parse_json when using that alone. It frees nothing: call
 * ss_config_clear on a cfg that was parsed before reusing it. */
void ss_config_init(ss_config_t *cfg, ss_prog_t prog);

/* Parses JSON text into cfg (used by ss_config_parse; exposed for tests).
 * Keys already set on the command line (tracked by the parser) are not
 * overridden. Returns 0 or -EINVAL with err set. */
int ss_config_parse_json(ss_config_t *cfg, const char *text, char *err, size_t errlen);

/* Usage text for prog. */
void ss_config_usage(ss_prog_t prog, void *out);

/* --version text: the version, and what serves each method's crypto on this
 * CPU with the backend the programs would use. */
void ss_config_version(ss_prog_t prog, void *out);
/* The part of it that names the libraries, built-with and in-use versions. */
void ss_config_version_libs(void *out);

/* ss-server --print-url: each ss:// URL (SIP002) a client needs for cfg
 * (parsed with print_url), one per listen address and, with "users", per
 * user. A wildcard address (none given, "::", "0.0.0.0") is written as
 * SS_URL_PLACEHOLDER, which the user must replace (placeholder true). The
 * URL holds the password and is wiped after the call. A plugin goes in as
 * the client runs it: its file's name, obfs-server as obfs-local,
 * ss-v2ray-plugin as v2ray-plugin, without
 * the options only a server takes. 0, or -EINVAL with
 * err (a SIP004 server given a key, not a password: a URL needs the
 * password; a plugin given as a command line: a client takes only a
 * program's name from a URL). */
#define SS_URL_PLACEHOLDER "SERVER-ADDRESS"
typedef void (*ss_share_fn)(void *arg, const char *url, bool placeholder, const char *user);
int ss_config_share_urls(const ss_config_t *cfg, ss_share_fn fn, void *arg, char *err,
			 size_t errlen);

/* The online configuration's servers (SIP008) in a validated client
 * configuration, in place of those of an earlier document: each with its
 * own method, password and plugin (a program's name only, as a URL's),
 * checked and keyed as the configuration's own entries are. Servers past
 * SS_MAX_SERVERS are left out, counted in *left_out. 0, or -EINVAL with
 * err naming the server at fault (a method we do not run, a bad PSK);
 * cfg then has no document's server. */
struct ss_sip008;
#define SS_ONLINE_INTERVAL_DEFAULT 3600
int ss_config_set_document(ss_config_t *cfg, const struct ss_sip008 *doc, size_t *left_out,
			   char *err, size_t errlen);

/* A copy of a validated configuration that owns its own allocations (the
 * SOCKS5 users, ss-server's users). 0 or -ENOMEM (dst is then cleared). */
int ss_config_copy(ss_config_t *dst, const ss_config_t *src);

/* Wipes the keys and any password or key text still held, and frees the
 * users. cfg may be parsed again afterwards. */
void ss_config_clear(ss_config_t *cfg);

#endif
