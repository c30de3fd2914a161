/* SPDX-License-Identifier: MIT */
#ifndef SS_CONFIG_INTERNAL_H
#define SS_CONFIG_INTERNAL_H

/* Shared by the command line, JSON and validation parts of src/config/. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* One bit per setting in ss_config_t.cli_set. */
typedef enum {
	SS_CF_SERVERS,
	SS_CF_SERVER_PORT,
	SS_CF_LOCAL_ADDR,
	SS_CF_LOCAL_PORT,
	SS_CF_LOCAL_V4,
	SS_CF_LOCAL_V6,
	SS_CF_METHOD,
	SS_CF_SECRET, /* password or key: one setting, so -k beats a file "key" */
	SS_CF_TIMEOUT,
	SS_CF_USER,
	SS_CF_NOFILE,
	SS_CF_IFACE,
	SS_CF_IPV6_FIRST,
	SS_CF_NAMESERVER,
	SS_CF_TUNNEL,
	SS_CF_VERBOSE,
	SS_CF_FAST_OPEN,
	SS_CF_REUSE_PORT,
	SS_CF_NO_DELAY,
	SS_CF_MPTCP,
	SS_CF_USE_SYSLOG,
	SS_CF_MODE,
	SS_CF_MTU,
	SS_CF_ACL,
	SS_CF_PLUGIN,
	SS_CF_PLUGIN_OPTS,
	SS_CF_PLUGIN_MODE,
	SS_CF_UDP_TIMEOUT,
	SS_CF_UDP_MAX_ASSOC,
	SS_CF_SOCKS_AUTH, /* the SOCKS5 users: the command line's replace the file's */
	SS_CF_TCP_TPROXY,
	SS_CF_WORKERS,
	/* The online configuration (SIP008). */
	SS_CF_ONLINE_CONFIG,
	SS_CF_CA_FILE,
	SS_CF_DNS,
	SS_CF_REMOTE_DNS,
	SS_CF_LOCAL_DNS,
	SS_CF_COUNT,
} ss_cfg_field_t;

_Static_assert(SS_CF_COUNT <= 64, "cli_set has 64 bits");

static inline uint64_t ss_cfg_bit(ss_cfg_field_t f)
{
	return UINT64_C(1) << f;
}

/* ss-server's and ss-manager's default --workers: one loop per CPU the
 * system has online, at most SS_WORKERS_MAX. */
int ss_cfg_online_cpus(void);

/* Writes one line to err; returns -EINVAL so callers can `return ss_cfg_err(...)`. */
int ss_cfg_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes the message in err one line, whatever the values it quotes hold:
 * control bytes become '?'. The public entry points call it on failure. */
void ss_cfg_one_line(char *err, size_t errlen);

/* Decimal port 1-65535, digits only. 0 or -EINVAL. */
int ss_cfg_port(const char *text, uint16_t *port);

/* Decimal integer in [min, max], digits only (an optional leading '-' when
 * min < 0). 0 or -EINVAL. */
int ss_cfg_long(const char *text, long min, long max, long *out);

/* Copies src into dst[cap]; -ENAMETOOLONG when it does not fit. */
int ss_cfg_copy(char *dst, size_t cap, const char *src);

/* "host", "host:port", "v6literal", "[v6]" or "[v6]:port" into hp, as libev
 * reads "server" entries (an IP literal is never split). `name` is how
 * messages refer to the setting, e.g. "-s/server". */
int ss_cfg_host_port(const char *text, ss_host_port_t *hp, const char *name, char *err,
		     size_t errlen);

/* "host:port" or "[v6]:port" into an address; the port is required. */
int ss_cfg_tunnel(const char *text, ss_addr_t *a, const char *name, char *err, size_t errlen);

/* A name server's address for the DNS relay: "addr", "addr:port",
 * "v6literal" or "[v6]:port", the port 53 when not given; a name too when
 * name_ok (one the server looks up). 0 or -EINVAL with err naming the
 * setting. */
int ss_cfg_dns_addr(const char *text, bool name_ok, ss_addr_t *a, const char *name, char *err,
		    size_t errlen);

/* Sets the method by name, passing the lookup's message through. */
int ss_cfg_method(ss_config_t *cfg, const char *name, char *err, size_t errlen);

/* Derives a key from the secret text for method m (a 2022 method's PSK
 * list into psks as well; method none only notes in *ignored whether a
 * secret was given). 0 or -EINVAL with err naming the setting, never the
 * secret. */
int ss_cfg_derive_key(ss_prog_t prog, const ss_method_t *m, const char *password,
		      const char *key_b64, uint8_t *key, ss_psk_list_t *psks, bool *ignored,
		      char *err, size_t errlen);

/* What plugin under plugin_mode carries of what cfg's program relays to or
 * from a server (*tcp, *udp). 0, or -EINVAL when that is nothing, with err
 * naming who (an entry; NULL: the top-level settings) and the plugin. */
int ss_cfg_plugin_carries(const ss_config_t *cfg, const char *plugin, ss_relay_mode_t plugin_mode,
			  bool *tcp, bool *udp, const char *who, char *err, size_t errlen);

/* The JSON text (config_jsontext.c). Makes text what cJSON reads the way
 * shadowsocks-libev's parser reads it, in place:
 * trailing commas become spaces, an unknown escape "\q" becomes "q". */
void ss_cfg_json_relax(char *text);
/* cJSON stopped at `at` in text: err gets the line, the column and how to
 * fix it. Returns -EINVAL. */
int ss_cfg_json_error(const char *text, const char *at, char *err, size_t errlen);
/* The entry of known[n] a few edits from word (a slip of the keyboard),
 * or NULL when none is that close. */
const char *ss_cfg_closest(const char *word, const char *const *known, size_t n);
/* err says a setting is missing, and names it as the JSON key in quotes:
 * adds which unknown key of the file may be that key misspelt (from
 * cfg->typos), if any. */
void ss_cfg_typo_hint(const ss_config_t *cfg, char *err, size_t errlen);
/* Adds one line to cfg->warnings (dropped when they are full). */
void ss_cfg_warn(ss_config_t *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Server entries (config_servers.c). A new entry at the end of cfg->servers,
 * zeroed, with origin (how messages name where it came from); NULL with err
 * when there are SS_MAX_SERVERS already. The caller counts it in n_servers
 * once it is filled. */
ss_config_server_t *ss_cfg_new_server(ss_config_t *cfg, const char *origin, char *err,
				      size_t errlen);
/* Adds an entry from text: an ss:// URL (its own method, password, plugin
 * and tag; clients only) or host[:port] (url_only: refused). 0 or -EINVAL. */
int ss_cfg_add_server(ss_config_t *cfg, const char *text, const char *origin, bool url_only,
		      char *err, size_t errlen);
/* An entry from a SIP002 URL's fields (or an online configuration's
 * server): its own method, password, plugin and tag; name says how a
 * message about its method names it. 0 or -EINVAL. */
struct ss_url;
int ss_cfg_add_url_entry(ss_config_t *cfg, const struct ss_url *u, const char *origin,
			 const char *name, char *err, size_t errlen);
/* Client entry i's method, key and plugin, its own or the top-level ones
 * (its secret text wiped). 0 or -EINVAL naming the entry. */
int ss_cfg_finish_entry(ss_config_t *cfg, size_t i, char *err, size_t errlen);
/* After the top-level settings: every client entry's port, method, key and
 * plugin, its own or the top-level ones; the entries' secret text is wiped.
 * 0 or -EINVAL naming the entry. */
int ss_cfg_finish_servers(ss_config_t *cfg, char *err, size_t errlen);
/* ss-manager's configuration as a whole (config_manager.c): its defaults
 * for the ports stay as given, each port's own configuration checks them. */
int ss_cfg_finish_manager(ss_config_t *cfg, char *err, size_t errlen);
/* The online configuration (config_online.c): its URL checked and its
 * interval defaulted once the whole configuration is in. */
int ss_cfg_finish_online(ss_config_t *cfg, char *err, size_t errlen);
/* A client with several workers runs no plugin: 0, or -EINVAL naming the
 * first server with one. */
int ss_cfg_check_worker_plugins(const ss_config_t *cfg, char *err, size_t errlen);
/* Wipes the entries' keys and secret text. */
void ss_cfg_wipe_servers(ss_config_t *cfg);

/* SOCKS5 users (config_socks.c): checks the settings and builds
 * socks_creds, reading the users file; wipes the password text. 0 or
 * -EINVAL with err (never the password). */
int ss_cfg_finish_socks(ss_config_t *cfg, char *err, size_t errlen);
/* Wipes and frees socks_creds and wipes the password text. */
void ss_cfg_clear_socks(ss_config_t *cfg);

/* The default config file (see ss_config_parse) into out[cap]: the first
 * that exists, else the last, libev's system file. */
void ss_cfg_default_path(char *out, size_t cap);

/* Reads the JSON file at path into cfg (ss_config_parse_json), with err
 * naming the file. 0 or -EINVAL. */
int ss_cfg_load_file(ss_config_t *cfg, const char *path, char *err, size_t errlen);

/* Checks cfg as a whole, fills in the defaults, derives the keys, wipes the
 * secret text (unless print_url) and marks cfg validated. Once per cfg. 0
 * or -EINVAL with err. */
int ss_cfg_finish(ss_config_t *cfg, char *err, size_t errlen);

/* Sets one JSON key from text (ss_config_set): the key's value is read as
 * the JSON type that key wants. 0, -ENOENT or -EINVAL with err. */
int ss_cfg_set_key(ss_config_t *cfg, const char *key, const char *value, char *err, size_t errlen);

/* Parses argv into cfg, recording what it set in cfg->cli_set. Returns
 * SS_CONFIG_RUN when parsing may go on, SS_CONFIG_HELP on -h,
 * SS_CONFIG_VERSION on --version, or SS_CONFIG_ERROR with err set. */
ss_config_status_t ss_config_parse_cli(ss_config_t *cfg, int argc, char **argv, char *err,
				       size_t errlen);

/* The options prog takes ("-s", "--fast-open"), from the table the parser
 * runs on, into out[cap]; the ones taken only to be refused with a reason
 * are left out. Returns how many. */
size_t ss_config_cli_options(ss_prog_t prog, char (*out)[32], size_t cap);

#endif
