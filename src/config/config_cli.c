/* SPDX-License-Identifier: MIT */
/* The command line of shadowsocks-libev 3.3.5 (ss-local, ss-server,
 * ss-tunnel, ss-redir), as its getopt strings and long options define it.
 * All four programs accept the union of libev's flags except -L, which only
 * ss-tunnel takes, and -T, which only ss-redir takes; flags of ss-manager
 * are refused with a reason. */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

#define TIMEOUT_MAX 2147483L /* seconds; fits in an int of milliseconds */

enum {
	OPT_FAST_OPEN = 0x100,
	OPT_REUSE_PORT,
	OPT_NO_DELAY,
	OPT_MPTCP,
	OPT_ACL,
	OPT_MTU,
	OPT_PLUGIN,
	OPT_PLUGIN_OPTS,
	OPT_PLUGIN_MODE,
	OPT_PASSWORD,
	OPT_KEY,
	OPT_HELP,
	OPT_VERSION,
	OPT_MANAGER_ADDRESS,
	OPT_EXECUTABLE,
	OPT_UDP_TIMEOUT,
	OPT_UDP_MAX_ASSOC,
	OPT_SERVER_URL,
	OPT_PRINT_URL,
	OPT_CHECK,
	OPT_SOCKS_USER,
	OPT_SOCKS_PASS,
	OPT_SOCKS_USERS,
	OPT_TCP_TPROXY,
	OPT_WORKERS,
};

static const struct option long_options[] = {
    {"fast-open", no_argument, NULL, OPT_FAST_OPEN},
    {"reuse-port", no_argument, NULL, OPT_REUSE_PORT},
    {"no-delay", no_argument, NULL, OPT_NO_DELAY},
    {"mptcp", no_argument, NULL, OPT_MPTCP},
    {"acl", required_argument, NULL, OPT_ACL},
    {"mtu", required_argument, NULL, OPT_MTU},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"plugin-opts", required_argument, NULL, OPT_PLUGIN_OPTS},
    {"plugin-mode", required_argument, NULL, OPT_PLUGIN_MODE},
    {"password", required_argument, NULL, OPT_PASSWORD},
    {"key", required_argument, NULL, OPT_KEY},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"manager-address", required_argument, NULL, OPT_MANAGER_ADDRESS},
    {"executable", required_argument, NULL, OPT_EXECUTABLE},
    {"udp-timeout", required_argument, NULL, OPT_UDP_TIMEOUT},
    {"udp-max-associations", required_argument, NULL, OPT_UDP_MAX_ASSOC},
    {"server-url", required_argument, NULL, OPT_SERVER_URL},
    {"print-url", no_argument, NULL, OPT_PRINT_URL},
    {"check", no_argument, NULL, OPT_CHECK},
    {"socks-user", required_argument, NULL, OPT_SOCKS_USER},
    {"socks-pass", required_argument, NULL, OPT_SOCKS_PASS},
    {"socks-users", required_argument, NULL, OPT_SOCKS_USERS},
    {"tcp-tproxy", no_argument, NULL, OPT_TCP_TPROXY},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {NULL, 0, NULL, 0},
};

/* Leading ':' makes a missing value its own case; -A is taken only to
 * refuse it with a reason, as -T is outside ss-redir. */
static const char short_options[] = ":s:p:l:k:m:a:f:t:c:n:i:b:d:L:uUv6hAT";

/* How messages name an option: "-p", "--mtu". */
static const char *opt_name(int c, char *buf, size_t cap)
{
	if (c < 0x100) {
		if (isprint(c))
			snprintf(buf, cap, "-%c", c);
		else
			snprintf(buf, cap, "-\\x%02x", (unsigned)c & 0xffu);
		return buf;
	}
	for (const struct option *o = long_options; o->name != NULL; o++)
		if (o->val == c) {
			snprintf(buf, cap, "--%s", o->name);
			return buf;
		}
	snprintf(buf, cap, "(option %d)", c);
	return buf;
}

static int copy_opt(char *dst, size_t cap, const char *arg, const char *name, char *err,
		    size_t errlen)
{
	if (ss_cfg_copy(dst, cap, arg) != 0)
		return ss_cfg_err(err, errlen,
				  "value '%.64s...' for %s is too long (max %zu bytes)", arg, name,
				  cap - 1);
	return 0;
}

static int mode_name(const char *s, ss_relay_mode_t *mode)
{
	if (strcmp(s, "tcp_only") == 0)
		*mode = SS_MODE_TCP_ONLY;
	else if (strcmp(s, "tcp_and_udp") == 0)
		*mode = SS_MODE_TCP_AND_UDP;
	else if (strcmp(s, "udp_only") == 0)
		*mode = SS_MODE_UDP_ONLY;
	else
		return -EINVAL;
	return 0;
}

/* ss-local's SOCKS5 login settings; the lengths are judged once all are in. */
static int socks_opt(ss_config_t *cfg, int c, const char *arg, char *err, size_t errlen)
{
	if (cfg->prog != SS_PROG_LOCAL)
		return ss_cfg_err(err, errlen,
				  "--socks-user, --socks-pass and --socks-users are "
				  "for ss-local");
	if (c == OPT_SOCKS_USERS)
		return copy_opt(cfg->socks_users_file, sizeof(cfg->socks_users_file), arg,
				"--socks-users", err, errlen);
	char *dst = c == OPT_SOCKS_USER ? cfg->socks_user : cfg->socks_pass;
	/* Never echo the password into a message. */
	if (*arg == '\0' || ss_cfg_copy(dst, SS_SOCKS5_FIELD_MAX + 1, arg) != 0)
		return ss_cfg_err(err, errlen, "%s must be 1 to 255 bytes",
				  c == OPT_SOCKS_USER ? "--socks-user" : "--socks-pass");
	return 0;
}

/* One option with its value; returns 0 or -EINVAL with err set. */
static int apply(ss_config_t *cfg, int c, const char *arg, char *err, size_t errlen)
{
	uint32_t bit = 0;
	long v;
	int rc = 0;

	switch (c) {
	case 's':
		rc = ss_cfg_add_server(cfg, arg, "-s/server", false, err, errlen);
		bit = ss_cfg_bit(SS_CF_SERVERS);
		break;
	case OPT_SERVER_URL:
		if (cfg->prog == SS_PROG_SERVER)
			return ss_cfg_err(
			    err, errlen,
			    "--server-url is for ss-local, ss-tunnel and ss-redir; ss-server "
			    "prints its URL with --print-url");
		rc = ss_cfg_add_server(cfg, arg, "--server-url", true, err, errlen);
		bit = ss_cfg_bit(SS_CF_SERVERS);
		break;
	case OPT_PRINT_URL:
		if (cfg->prog != SS_PROG_SERVER)
			return ss_cfg_err(err, errlen, "--print-url is for ss-server");
		cfg->print_url = true;
		break;
	case OPT_CHECK:
		cfg->check = true;
		break;
	case 'p':
		if (ss_cfg_port(arg, &cfg->server_port) != 0)
			return ss_cfg_err(err, errlen,
					  "invalid port '%s' for -p/server_port (expected 1-65535)",
					  arg);
		bit = ss_cfg_bit(SS_CF_SERVER_PORT);
		break;
	case 'l':
		if (ss_cfg_port(arg, &cfg->local_port) != 0)
			return ss_cfg_err(err, errlen,
					  "invalid port '%s' for -l/local_port (expected 1-65535)",
					  arg);
		bit = ss_cfg_bit(SS_CF_LOCAL_PORT);
		break;
	case 'b':
		if (*arg == '\0')
			return ss_cfg_err(err, errlen, "empty address for -b/local_address");
		rc = copy_opt(cfg->local_addr, sizeof(cfg->local_addr), arg, "-b", err, errlen);
		bit = ss_cfg_bit(SS_CF_LOCAL_ADDR);
		break;
	case 'k':
	case OPT_PASSWORD:
		/* Never echo a secret into a message. */
		if (*arg == '\0')
			return ss_cfg_err(err, errlen, "empty password for -k/--password");
		if (ss_cfg_copy(cfg->password, sizeof(cfg->password), arg) != 0)
			return ss_cfg_err(err, errlen,
					  "password for -k/--password is too long "
					  "(max %zu bytes)",
					  sizeof(cfg->password) - 1);
		bit = ss_cfg_bit(SS_CF_SECRET);
		break;
	case OPT_KEY:
		if (*arg == '\0')
			return ss_cfg_err(err, errlen, "empty key for --key");
		if (ss_cfg_copy(cfg->key_b64, sizeof(cfg->key_b64), arg) != 0)
			return ss_cfg_err(err, errlen, "key for --key is too long (max %zu bytes)",
					  sizeof(cfg->key_b64) - 1);
		bit = ss_cfg_bit(SS_CF_SECRET);
		break;
	case 'm':
		rc = ss_cfg_method(cfg, arg, err, errlen);
		bit = ss_cfg_bit(SS_CF_METHOD);
		break;
	case 't':
		if (ss_cfg_long(arg, 1, LONG_MAX, &v) != 0)
			return ss_cfg_err(err, errlen, "-t must be a positive number, not '%s'",
					  arg);
		if (v > TIMEOUT_MAX)
			return ss_cfg_err(err, errlen, "-t must be at most %ld seconds, not '%s'",
					  TIMEOUT_MAX, arg);
		cfg->timeout = (int)v;
		bit = ss_cfg_bit(SS_CF_TIMEOUT);
		break;
	case 'a':
		rc = copy_opt(cfg->user, sizeof(cfg->user), arg, "-a", err, errlen);
		bit = ss_cfg_bit(SS_CF_USER);
		break;
	case 'f':
		if (*arg == '\0')
			return ss_cfg_err(err, errlen, "empty pid file path for -f");
		rc = copy_opt(cfg->pid_file, sizeof(cfg->pid_file), arg, "-f", err, errlen);
		break;
	case 'c':
		if (*arg == '\0')
			return ss_cfg_err(err, errlen, "empty config file path for -c");
		rc = copy_opt(cfg->config_file, sizeof(cfg->config_file), arg, "-c", err, errlen);
		break;
	case 'n':
		if (ss_cfg_long(arg, 1, INT_MAX, &cfg->nofile) != 0)
			return ss_cfg_err(err, errlen, "-n must be a positive number, not '%s'",
					  arg);
		bit = ss_cfg_bit(SS_CF_NOFILE);
		break;
	case 'i':
		if (*arg == '\0' || strlen(arg) >= IFNAMSIZ)
			return ss_cfg_err(err, errlen,
					  "invalid interface name '%s' for -i (1-%d bytes)", arg,
					  IFNAMSIZ - 1);
		rc = copy_opt(cfg->iface, sizeof(cfg->iface), arg, "-i", err, errlen);
		bit = ss_cfg_bit(SS_CF_IFACE);
		break;
	case 'd':
		rc = copy_opt(cfg->nameserver, sizeof(cfg->nameserver), arg, "-d", err, errlen);
		bit = ss_cfg_bit(SS_CF_NAMESERVER);
		break;
	case 'L':
		if (cfg->prog != SS_PROG_TUNNEL)
			return ss_cfg_err(err, errlen, "-L is only for ss-tunnel");
		rc = ss_cfg_tunnel(arg, &cfg->tunnel_addr, "-L/tunnel_address", err, errlen);
		cfg->have_tunnel_addr = rc == 0;
		bit = ss_cfg_bit(SS_CF_TUNNEL);
		break;
	case 'u':
		cfg->mode = SS_MODE_TCP_AND_UDP;
		bit = ss_cfg_bit(SS_CF_MODE);
		break;
	case 'U':
		cfg->mode = SS_MODE_UDP_ONLY;
		bit = ss_cfg_bit(SS_CF_MODE);
		break;
	case 'v':
		if (cfg->verbose < 10)
			cfg->verbose++;
		bit = ss_cfg_bit(SS_CF_VERBOSE);
		break;
	case '6':
		cfg->ipv6_first = true;
		bit = ss_cfg_bit(SS_CF_IPV6_FIRST);
		break;
	case OPT_FAST_OPEN:
		cfg->fast_open = true;
		bit = ss_cfg_bit(SS_CF_FAST_OPEN);
		break;
	case OPT_REUSE_PORT:
		cfg->reuse_port = true;
		bit = ss_cfg_bit(SS_CF_REUSE_PORT);
		break;
	case OPT_NO_DELAY:
		cfg->no_delay = true;
		bit = ss_cfg_bit(SS_CF_NO_DELAY);
		break;
	case OPT_MPTCP:
		cfg->mptcp = true;
		bit = ss_cfg_bit(SS_CF_MPTCP);
		break;
	case OPT_MTU:
		if (ss_cfg_long(arg, 0, 65535, &v) != 0)
			return ss_cfg_err(err, errlen,
					  "--mtu must be a number from 0 to 65535, not '%s'", arg);
		cfg->mtu = (int)v;
		bit = ss_cfg_bit(SS_CF_MTU);
		break;
	case OPT_UDP_TIMEOUT:
		if (ss_cfg_long(arg, 1, TIMEOUT_MAX, &v) != 0)
			return ss_cfg_err(
			    err, errlen,
			    "--udp-timeout must be a positive number of seconds, not '%s'", arg);
		cfg->udp_timeout = (int)v;
		bit = ss_cfg_bit(SS_CF_UDP_TIMEOUT);
		break;
	case OPT_UDP_MAX_ASSOC:
		if (ss_cfg_long(arg, 1, 1L << 20, &v) != 0)
			return ss_cfg_err(
			    err, errlen,
			    "--udp-max-associations must be a number from 1 to 1048576, "
			    "not '%s'",
			    arg);
		cfg->udp_max_assoc = (int)v;
		bit = ss_cfg_bit(SS_CF_UDP_MAX_ASSOC);
		break;
	case OPT_WORKERS:
		if (ss_cfg_long(arg, 1, SS_WORKERS_MAX, &v) != 0)
			return ss_cfg_err(err, errlen,
					  "--workers must be a number from 1 to %d, not '%s'",
					  SS_WORKERS_MAX, arg);
		cfg->workers = (int)v;
		bit = ss_cfg_bit(SS_CF_WORKERS);
		break;
	case OPT_ACL:
		rc = copy_opt(cfg->acl, sizeof(cfg->acl), arg, "--acl", err, errlen);
		bit = ss_cfg_bit(SS_CF_ACL);
		break;
	case OPT_PLUGIN:
		rc = copy_opt(cfg->plugin, sizeof(cfg->plugin), arg, "--plugin", err, errlen);
		bit = ss_cfg_bit(SS_CF_PLUGIN);
		break;
	case OPT_PLUGIN_OPTS:
		rc = copy_opt(cfg->plugin_opts, sizeof(cfg->plugin_opts), arg, "--plugin-opts", err,
			      errlen);
		bit = ss_cfg_bit(SS_CF_PLUGIN_OPTS);
		break;
	case OPT_PLUGIN_MODE: {
		ss_relay_mode_t m;
		if (mode_name(arg, &m) != 0)
			return ss_cfg_err(
			    err, errlen,
			    "--plugin-mode must be tcp_only, tcp_and_udp or udp_only, "
			    "not '%s'",
			    arg);
		cfg->plugin_mode = m;
		bit = ss_cfg_bit(SS_CF_PLUGIN_MODE);
		break;
	}
	case OPT_SOCKS_USER:
	case OPT_SOCKS_PASS:
	case OPT_SOCKS_USERS:
		rc = socks_opt(cfg, c, arg, err, errlen);
		bit = ss_cfg_bit(SS_CF_SOCKS_AUTH);
		break;
	case 'A':
		return ss_cfg_err(
		    err, errlen,
		    "-A: one-time auth was removed from Shadowsocks; use an AEAD method");
	case 'T':
	case OPT_TCP_TPROXY:
		if (cfg->prog != SS_PROG_REDIR)
			return ss_cfg_err(err, errlen, "-T/--tcp-tproxy is only for ss-redir");
		cfg->tcp_tproxy = true;
		bit = ss_cfg_bit(SS_CF_TCP_TPROXY);
		break;
	case OPT_MANAGER_ADDRESS:
	case OPT_EXECUTABLE: {
		char name[32];
		return ss_cfg_err(err, errlen,
				  "%s is an ss-manager flag; shadowsocks-c has no "
				  "ss-manager",
				  opt_name(c, name, sizeof(name)));
	}
	default: {
		char name[32];
		return ss_cfg_err(err, errlen, "unknown option %s",
				  opt_name(c, name, sizeof(name)));
	}
	}
	if (rc == 0)
		cfg->cli_set |= bit;
	if (c != OPT_CHECK && c != OPT_PRINT_URL)
		cfg->cli_settings = true;
	return rc;
}

/* Taken only to be refused with a reason: not options of ours. */
static bool refused(ss_prog_t prog, int c)
{
	switch (c) {
	case 'A':
	case OPT_MANAGER_ADDRESS:
	case OPT_EXECUTABLE:
		return true;
	case 'L':
		return prog != SS_PROG_TUNNEL;
	case 'T':
	case OPT_TCP_TPROXY:
		return prog != SS_PROG_REDIR;
	case OPT_SERVER_URL:
		return prog == SS_PROG_SERVER;
	case OPT_PRINT_URL:
		return prog != SS_PROG_SERVER;
	case OPT_SOCKS_USER:
	case OPT_SOCKS_PASS:
	case OPT_SOCKS_USERS:
		return prog != SS_PROG_LOCAL;
	default:
		return false;
	}
}

size_t ss_config_cli_options(ss_prog_t prog, char (*out)[32], size_t cap)
{
	size_t n = 0;

	for (const char *p = short_options; *p != '\0'; p++)
		if (*p != ':' && !refused(prog, *p) && n < cap)
			snprintf(out[n++], sizeof(out[0]), "-%c", *p);
	for (const struct option *o = long_options; o->name != NULL; o++)
		if (!refused(prog, o->val) && n < cap)
			snprintf(out[n++], sizeof(out[0]), "--%s", o->name);
	return n;
}

ss_config_status_t ss_config_parse_cli(ss_config_t *cfg, int argc, char **argv, char *err,
				       size_t errlen)
{
	char name[32];
	int c;

	if (argc <= 1)
		return SS_CONFIG_RUN;

	/* getopt keeps its state in globals: 0 makes GNU getopt start over
	 * (and re-read its environment), so parsing can run more than once. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
		if (c == 'h' || c == OPT_HELP)
			return SS_CONFIG_HELP;
		if (c == OPT_VERSION)
			return SS_CONFIG_VERSION;
		if (c == ':') {
			ss_cfg_err(err, errlen, "option %s needs a value",
				   opt_name(optopt, name, sizeof(name)));
			return SS_CONFIG_ERROR;
		}
		if (c == '?') {
			if (optopt >= 0x100)
				ss_cfg_err(err, errlen, "option %s takes no value",
					   opt_name(optopt, name, sizeof(name)));
			else if (optopt != 0)
				ss_cfg_err(err, errlen, "unknown option %s",
					   opt_name(optopt, name, sizeof(name)));
			else
				ss_cfg_err(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return SS_CONFIG_ERROR;
		}
		if (apply(cfg, c, optarg, err, errlen) != 0)
			return SS_CONFIG_ERROR;
	}
	if (optind < argc) {
		ss_cfg_err(err, errlen, "unexpected argument '%s'", argv[optind]);
		return SS_CONFIG_ERROR;
	}
	return SS_CONFIG_RUN;
}
