/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_PLUGIN_H
#define SS_NET_PLUGIN_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net/child.h"

/* One SIP003 plugin: a child process between us and the network, given
 * (plugin, options, remote host and port) and giving back the loopback
 * address to use instead. Several may run at once, one per configured
 * server.
 *
 * SIP003 and SIP003u: the plugin gets SS_REMOTE_HOST, SS_REMOTE_PORT,
 * SS_LOCAL_HOST, SS_LOCAL_PORT and SS_PLUGIN_OPTIONS in its environment and
 * no arguments, as shadowsocks-libev 3.3.5 runs it. A plugin string that is
 * a command line rather than a file (spaces, shell syntax) runs as
 * sh -c "exec PLUGIN", as libev runs every plugin, so that its words are
 * the plugin's arguments; but only a plugin from the configuration. One
 * from an ss:// URL (name_only) is run as a plain program name or not at
 * all: it is text from whoever shared the URL. A client's plugin
 * listens on the local (loopback) address and carries what it gets there to
 * the remote server; a server's plugin listens on the remote (public)
 * address and hands what it gets to the local one, where ss-server listens.
 * It carries TCP, UDP or both, on the same port numbers.
 *
 * Life on the loop: ss_plugin_start forks it (net/child.h); it is up once
 * its ports are open (a listening TCP socket, a bound UDP one, on the port it
 * was given to listen on), looked for every few milliseconds up to
 * SS_PLUGIN_START_TIMEOUT. If it exits after that, it is started again after
 * a pause that doubles while it keeps failing; if it cannot be brought up
 * SS_PLUGIN_MAX_FAILS times in a row it is given up. ss_plugin_stop sends
 * SIGTERM to its process group and SIGKILL after SS_PLUGIN_GRACE seconds. */

#define SS_PLUGIN_START_TIMEOUT 10.0 /* seconds for its ports to open */
#define SS_PLUGIN_GRACE 3.0          /* seconds from SIGTERM to SIGKILL */
#define SS_PLUGIN_BACKOFF_FIRST 0.5  /* seconds before the first restart */
#define SS_PLUGIN_BACKOFF_MAX 30.0   /* ... doubling up to this */
#define SS_PLUGIN_STABLE 30.0        /* a run this long resets the pause and the count */
#define SS_PLUGIN_MAX_FAILS 5        /* restarts in a row that do not come up */

typedef enum {
	SS_PLUGIN_UP,     /* its ports are open: traffic may go to the local address */
	SS_PLUGIN_DOWN,   /* it exited (msg says how) and will be started again */
	SS_PLUGIN_FAILED, /* it could not be started (msg says why) and is given up */
	SS_PLUGIN_GONE,   /* stopped with ss_plugin_stop, or given up, and reaped */
} ss_plugin_event_t;

typedef struct ss_plugin ss_plugin_t;
/* Runs on the loop. msg is one line, for DOWN and FAILED; NULL otherwise. */
typedef void (*ss_plugin_cb)(ss_plugin_t *p, ss_plugin_event_t ev, const char *msg);

typedef struct ss_plugin_spec {
	const char *plugin; /* a path, or a name looked for in PATH, then in the
			     * working directory; or a command line */
	/* plugin came from an ss:// URL: it must be a plain program name
	 * (ss_url_plugin_name_ok), is looked for only in PATH's absolute
	 * directories, and is executed without a shell; anything else is
	 * refused. */
	bool name_only;
	const char *opts;        /* SS_PLUGIN_OPTIONS; "" or NULL for none */
	const char *remote_host; /* SS_REMOTE_HOST, as configured */
	uint16_t remote_port;
	bool server; /* ss-server: it listens on the remote address */
	bool tcp, udp;
	/* Ports the local port must not be, though free now: the program's own
	 * listening port, the port a server's plugin takes (0: none). */
	uint16_t avoid[2];
} ss_plugin_spec_t;

typedef enum {
	SS_PLUGIN_IDLE,
	SS_PLUGIN_STARTING, /* running, ports not open yet */
	SS_PLUGIN_RUNNING,  /* up */
	SS_PLUGIN_WAITING,  /* exited, to be started again */
	SS_PLUGIN_STOPPING, /* signalled */
} ss_plugin_state_t;

struct ss_plugin {
	struct ev_loop *loop;
	ss_child_t child;
	ss_plugin_state_t state;
	ev_timer timer;  /* the look for its ports, the pause, the grace */
	ev_tstamp since; /* when it was started last */
	ev_tstamp probe; /* the next look for its ports is this far away */
	ev_tstamp pause; /* before the next restart */
	int fails;       /* starts in a row that did not come up */
	bool ever_up;    /* it came up once: later failures are restarts */
	bool timed_out;  /* killed for not opening its ports in time */
	bool tcp, udp;   /* what it carries */
	bool server;
	uint16_t port; /* the one to look at: local for clients, remote for servers */
	struct sockaddr_storage local; /* 127.0.0.1 and the port it was given */
	socklen_t local_len;
	char *path;    /* what is executed */
	char *argv[4]; /* the file's name; or sh, -c, "exec PLUGIN" */
	char **envp;
	char name[64];  /* the file's name, for log lines */
	char last[160]; /* its last line of output, for the reason it failed */
	/* A URL's plugin not in PATH by its name but by Debian's
	 * (ss_plugin_debian_name): that name, which path ends in; else NULL. */
	const char *debian_name;
	ss_plugin_cb cb;
	void *data; /* the owner's */
};

/* Debian's name for the plugin a URL names name (v2ray-plugin is
 * ss-v2ray-plugin there), a plain program name; NULL when Debian calls it
 * the same or has no package of it. A URL's plugin is run under this name
 * when PATH has none under its own. */
const char *ss_plugin_debian_name(const char *name);

/* The file plugin would run as (what ss_plugin_init executes: a path or a
 * name found in PATH or the working directory; for a command line, its
 * first word when that is a plain name; with name_only, as the spec's, by
 * Debian's name when PATH has none by its own) into
 * path[cap]. 0, or -errno with err saying why it cannot run. Starts
 * nothing. */
int ss_plugin_locate(const char *plugin, bool name_only, char *path, size_t cap, char *err,
		     size_t errlen);

/* Finds the plugin's file, picks a free loopback port for it and builds its
 * environment; runs nothing yet. 0, or -errno with err naming the plugin and
 * the reason (not found, not executable, no port; -EPERM: name_only and not
 * a plain program name). */
int ss_plugin_init(ss_plugin_t *p, struct ev_loop *loop, const ss_plugin_spec_t *spec,
		   ss_plugin_cb cb, void *data, char *err, size_t errlen);

/* The loopback address the plugin is given (SS_LOCAL_HOST:SS_LOCAL_PORT):
 * where a client sends, where ss-server listens. */
const struct sockaddr *ss_plugin_local(const ss_plugin_t *p, socklen_t *len);

/* Starts it; UP follows on the loop, or FAILED (then GONE). 0, or -errno
 * with err set when it cannot even be forked. */
int ss_plugin_start(ss_plugin_t *p, char *err, size_t errlen);

/* Stops it (SIGTERM to its process group, SIGKILL after SS_PLUGIN_GRACE);
 * GONE follows once it is reaped, at once when nothing runs. */
void ss_plugin_stop(ss_plugin_t *p);

/* Frees what init took. One still running is stopped and reaped first,
 * without the loop (waiting up to SS_PLUGIN_GRACE); no callback runs. */
void ss_plugin_free(ss_plugin_t *p);

#endif
