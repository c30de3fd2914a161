/* SPDX-License-Identifier: MIT */
/* -h text: the flags each program accepts, laid out as shadowsocks-libev
 * lays out its own, so users find them where they expect. */

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "crypto/primitives.h"

#define DESC_COL 35 /* where descriptions start */
#define WIDTH 78

static void line(FILE *f, const char *flag, const char *desc)
{
	fprintf(f, "       %-27s %s\n", flag, desc);
}

static void more(FILE *f, const char *desc)
{
	fprintf(f, "%*s%s\n", DESC_COL, "", desc);
}

/* The method list, wrapped under the -m description. */
static void methods(FILE *f)
{
	const char *const *names = ss_method_names();
	int col = DESC_COL;

	fprintf(f, "%*s", DESC_COL, "");
	for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
		bool last = names[i + 1] == NULL;
		int w = (int)strlen(names[i]) + (last ? 1 : 2);
		if (col > DESC_COL && col + 1 + w > WIDTH) {
			fprintf(f, "\n%*s", DESC_COL, "");
			col = DESC_COL;
		} else if (col > DESC_COL) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%s%s", names[i], last ? "." : ",");
		col += w;
	}
	fputc('\n', f);
}

static const char *const prog_names[] = {
    [SS_PROG_LOCAL] = "ss-local",
    [SS_PROG_SERVER] = "ss-server",
    [SS_PROG_TUNNEL] = "ss-tunnel",
    [SS_PROG_REDIR] = "ss-redir",
};

void ss_config_version(ss_prog_t prog, void *out)
{
	const ss_crypto_backend_t *be = ss_crypto_default();
	const char *const *names = ss_method_names();
	FILE *f = out;
	char line[256];

	if (f == NULL)
		return;
	fprintf(f, "%s (shadowsocks-c) %s\n", prog_names[prog], SS_VERSION);
	fprintf(f, "crypto: %s\n", ss_crypto_own_setting(be, line, sizeof(line)));
	fprintf(f, "what seals each method on this CPU:\n");
	for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
		const ss_method_t *m;

		if (ss_method_lookup(names[i], &m, NULL, 0) == 0)
			fprintf(f, "  %-30s %s\n", names[i],
				ss_crypto_describe(be, m, line, sizeof(line)));
	}
	ss_config_version_libs(f);
}

void ss_config_usage(ss_prog_t prog, void *out)
{
	FILE *f = out;
	bool server = prog == SS_PROG_SERVER;
	char path[4096];

	if (f == NULL)
		return;

	fprintf(f, "\nshadowsocks-c %s (flags and config file of shadowsocks-libev 3.3.5)\n\n",
		SS_VERSION);
	fprintf(f, "  usage:\n\n    %s\n\n", prog_names[prog]);

	if (server) {
		line(f, "-s <server_host>", "Address to listen on; repeat for more.");
		more(f, "Default: \"::\" (IPv6 and IPv4 on Linux).");
		line(f, "-p <server_port>", "Port to listen on.");
		line(f, "[-l <local_port>]", "Accepted and ignored, as by libev.");
	} else {
		line(f, "-s <server_host>", "Server host name or IP address, or an");
		more(f, "ss:// URL; repeat for more (\"host:port\"");
		more(f, "and \"[v6]:port\" work).");
		line(f, "-p <server_port>", "Server port.");
		line(f, "[--server-url <ss://...>]", "A server as a SIP002 URL, with its own");
		more(f, "method, password, plugin and tag; repeat");
		more(f, "for more. Several servers: failover.");
		line(f, "-l <local_port>", "Port to listen on locally.");
	}
	line(f, "-k <password>", "Password shared with the other side");
	more(f, "(also --password <password>).");
	line(f, "-m <encrypt_method>", "Encryption method, one of:");
	methods(f);
	more(f, "Default: " SS_DEFAULT_METHOD ".");
	fputc('\n', f);

	line(f, "[-a <user>]", "Switch to this user after start-up.");
	line(f, "[-f <pid_file>]", "Run in the background, pid written here.");
	line(f, "[-t <timeout>]", "Idle timeout in seconds (default 60).");
	line(f, "[-c <config_file>]", "JSON config file; flags override it.");
	more(f, "Given no settings (none, or only --check");
	more(f,
	     server ? "or --print-url), the first that exists of" : "), the first that exists of");
	more(f, "~/.config/shadowsocks-libev/config.json,");
	more(f, "/etc/shadowsocks-c/config.json and");
	more(f, "/etc/shadowsocks-libev/config.json; now:");
	ss_cfg_default_path(path, sizeof(path));
	more(f, path);
	line(f, "[-n <number>]", "Raise the open files limit to this.");
	line(f, "[-i <interface>]", "Network interface to send traffic through.");
	if (server)
		line(f, "[-b <local_address>]", "Local address for outbound connections.");
	else
		line(f, "[-b <local_address>]", "Address to listen on (default 127.0.0.1).");
	fputc('\n', f);

	line(f, "[-u]", "Relay UDP as well as TCP.");
	line(f, "[-U]", "Relay UDP only, no TCP.");
	line(f, "[-6]", "Prefer IPv6 when resolving host names.");
	line(f, "[-d <addr>]", "Name servers to use, comma-separated.");
	if (prog == SS_PROG_TUNNEL) {
		fputc('\n', f);
		line(f, "[-L <addr>:<port>]", "Where the tunnel leads: the destination");
		more(f, "every connection is forwarded to.");
	}
	if (prog == SS_PROG_REDIR) {
		fputc('\n', f);
		line(f, "[-T, --tcp-tproxy]", "TCP arrives by TPROXY, not REDIRECT");
		more(f, "(UDP always does: -u, -U).");
	}
	fputc('\n', f);

	line(f, "[--reuse-port]", "Set SO_REUSEPORT on listening sockets.");
	line(f, "[--workers <n>]",
	     server ? "Loops, each on a thread of its own (default:"
		    : "Loops, each on a thread of its own (1).");
	if (server)
		more(f, "one per online CPU); 1 to 256.");
	line(f, "[--fast-open]", "Use TCP Fast Open.");
	line(f, "[--acl <acl_file>]", "Access control list file.");
	line(f, "[--mtu <MTU>]", "MTU of the network interface (for UDP).");
	line(f, "[--udp-timeout <seconds>]", "Idle time before a UDP association ends (60).");
	line(f, "[--udp-max-associations <n>]", "Most UDP associations at once (4096).");
	line(f, "[--mptcp]", "Use Multipath TCP.");
	line(f, "[--no-delay]", "Set TCP_NODELAY.");
	line(f, "[--key <key_in_base64>]", "Key in base64, instead of a password.");
	line(f, "[--plugin <plugin>]", "SIP003 plugin to run: a path, or a name");
	if (server) {
		more(f, "in PATH or the working directory.");
		line(f, "[--plugin-opts <options>]", "Its options (SS_PLUGIN_OPTIONS).");
	} else {
		more(f, "in PATH or the working directory; it");
		more(f, "replaces a URL's plugin too.");
		line(f, "[--plugin-opts <options>]", "Its options (SS_PLUGIN_OPTIONS); they");
		more(f, "replace a URL's too.");
	}
	line(f, "[--plugin-mode <mode>]", "What it carries: tcp_only (default),");
	more(f, "tcp_and_udp (SIP003u) or udp_only.");
	if (prog == SS_PROG_LOCAL) {
		line(f, "[--socks-user <name>]", "SOCKS5 clients must log in (RFC 1929)");
		more(f, "as this user, with --socks-pass.");
		line(f, "[--socks-pass <password>]", "That user's password.");
		line(f, "[--socks-users <file>]", "Users who may log in, one name:password");
		more(f, "a line.");
	}
	if (server) {
		line(f, "[--print-url]", "Print the ss:// URL (and QR code) a client");
		more(f, "needs for this configuration, and exit.");
	}
	fputc('\n', f);

	line(f, "[-v]", "More log output; repeat for even more.");
	line(f, "[--check]", "Check the configuration (file, ACL, plugin,");
	more(f, "names, -a user) and print what would run;");
	more(f, "exit 1 with the first problem, else 0.");
	line(f, "[-h, --help]", "Show this help.");
	line(f, "[--version]", "Show the version, what runs each method's");
	more(f, "crypto on this CPU, and the libraries.");
	fputc('\n', f);
}
