/* SPDX-License-Identifier: MIT */
#ifndef SHADOWSOCKS_H
#define SHADOWSOCKS_H

/* libshadowsocks-c: run an ss-local, ss-server, ss-tunnel or ss-redir
 * in-process, on a libev loop of the caller's.
 *
 *   ss_config_t *cfg;
 *   ss_instance_t *inst;
 *   char err[256];
 *
 *   ss_config_new(SS_PROG_LOCAL, &cfg);
 *   ss_config_load_json(cfg, "{\"server\": \"203.0.113.1\", ...}", err, sizeof(err));
 *   ss_config_set(cfg, "local_port", "1080", err, sizeof(err));
 *   ss_config_validate(cfg, err, sizeof(err));
 *   ss_instance_create(cfg, EV_DEFAULT, &inst, err, sizeof(err));
 *   ev_run(EV_DEFAULT, 0);        // until ss_instance_stop() and STOPPED
 *   ss_instance_destroy(inst);
 *   ss_config_free(cfg);
 *
 * Link with `pkg-config --libs shadowsocks-c`; the caller uses libev itself
 * (ev.h, -lev) for its loop.
 *
 * Errors: a function that can fail returns 0 or a negative errno value and,
 * where it takes err, writes one line there (no newline, at most errlen
 * bytes with the NUL; err may be NULL when errlen is 0). The configuration
 * calls print nothing.
 *
 * Threads: an instance belongs to the thread that runs its loop. Create,
 * run, stop and destroy it on that thread, with a loop no other thread
 * runs (libev loops are not thread-safe). Instances on different threads,
 * each with a loop of its own (ev_loop_new), may run at the same time:
 * the state the library keeps per process is per thread (the cache of
 * random bytes, the c-ares allocator's arena) or taken under a lock
 * (c-ares's library set-up). Instances log to stderr: errors, warnings
 * and start-up lines (the keys "verbose" and "use_syslog" act only in
 * ss_program_main). ss_config_load_args uses getopt, whose state is global:
 * call it from one thread at a time. A plugin is a child of the thread that
 * runs the loop (on Linux it is killed when that thread ends,
 * PR_SET_PDEATHSIG); on libev's default loop its exit comes through an
 * ev_child watcher, on any other through a pidfd, so no SIGCHLD handler of
 * ours is installed. ss_program_main is a whole program (signals, daemon,
 * user switch, libev's allocator, and with "workers" above 1 threads of its
 * own, each running an instance on a loop of its own): call it once per
 * process, on its main thread.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports; everything else in it is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define SS_API __attribute__((visibility("default")))
#else
#define SS_API
#endif

struct ev_loop;

/* Which program a configuration and an instance are: its flags, its keys
 * and its handshake. */
typedef enum {
	SS_PROG_LOCAL,  /* SOCKS5 in, Shadowsocks out */
	SS_PROG_SERVER, /* Shadowsocks in, the target out */
	SS_PROG_TUNNEL, /* a fixed target (tunnel_address) through a server */
	SS_PROG_REDIR,  /* a transparent proxy: the firewall's original destination */
	/* ss-manager: many ss-server ports in one process, added and removed
	 * over a control socket; for ss_program_main only (ss_config_new
	 * refuses it). */
	SS_PROG_MANAGER,
} ss_prog_t;

/* ---- Configuration ---------------------------------------------------
 * Opaque. Built with any mix of ss_config_load_args, ss_config_load_json
 * and ss_config_set, in any order (a later setting of a key replaces an
 * earlier one, except that ss_config_load_json leaves what
 * ss_config_load_args set, as the programs let flags beat the file), then
 * validated once. The keys and flags are those of shadowsocks-libev 3.3.5
 * (ss-local(1), ss-server(1), ss-tunnel(1), ss-redir(1)). */
typedef struct ss_config ss_config_t;

/* An empty configuration for prog, in *out; the caller owns it and frees
 * it with ss_config_free. 0, -EINVAL (prog is none of ss_prog_t) or
 * -ENOMEM. */
SS_API int ss_config_new(ss_prog_t prog, ss_config_t **out);

/* Reads the keys of a JSON configuration file from json (NUL-terminated,
 * not kept; unknown keys are ignored, as libev does). 0, -EINVAL with err
 * naming the key and value, or -EBUSY once cfg is validated. */
SS_API int ss_config_load_json(ss_config_t *cfg, const char *json, char *err, size_t errlen);

/* Reads a command line as the program reads it: argv[0] is the program's
 * name (skipped), argc counts it. -c FILE reads that file, read as
 * by ss_config_load_json; without -c no file is read. argv is not kept but
 * may be reordered, as getopt does. 0, -EINVAL with err naming the flag and
 * value (-h and --version are refused: they are for the programs), or
 * -EBUSY once cfg is validated. */
SS_API int ss_config_load_args(ss_config_t *cfg, int argc, char **argv, char *err, size_t errlen);

/* Sets one setting by its JSON key name ("server", "server_port",
 * "password", "method", "local_port", "mode", ...), value as text: "true" or
 * "false" for the yes/no keys, a number as digits, JSON text (an array of
 * objects) for "servers" and "users", the string itself otherwise. "server"
 * and "server_url" replace the server list with one entry. value is not
 * kept; secrets in it are not echoed in err. 0, -ENOENT (no such key),
 * -EINVAL (a bad value, err says why) or -EBUSY once cfg is validated. */
SS_API int ss_config_set(ss_config_t *cfg, const char *key, const char *value, char *err,
			 size_t errlen);

/* Checks the configuration as a whole, fills in the defaults and derives
 * the keys; the password text is wiped. After it cfg can no longer be
 * changed. 0 (also when already validated) or -EINVAL with err saying what
 * is missing or wrong. */
SS_API int ss_config_validate(ss_config_t *cfg, char *err, size_t errlen);

/* Wipes the keys and secrets and frees cfg. NULL is allowed. Instances
 * created from cfg must have been destroyed. */
SS_API void ss_config_free(ss_config_t *cfg);

/* ---- Instances ------------------------------------------------------- */
typedef struct ss_instance ss_instance_t;

/* Reserves pools, resolves the servers, opens the listeners and starts
 * watching them on loop. cfg must be validated and outlive the instance
 * (the instance reads it, never changes or frees it); the caller owns
 * *out and destroys it with ss_instance_destroy. 0 or -errno with err
 * holding one line (-EINVAL: cfg not validated or unusable, -ENOMEM,
 * -EADDRINUSE and the like from the listeners). */
SS_API int ss_instance_create(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t **out,
			      char *err, size_t errlen);

/* Stops accepting, closes every connection and stops its plugins (SIGTERM,
 * SIGKILL after 3 s); the loop then runs dry once they are reaped. Safe to
 * call more than once and from the instance's callback. */
SS_API void ss_instance_stop(ss_instance_t *inst);

/* Frees inst; also reaps plugins still running, waiting for them without
 * the loop (up to 3 s, then SIGKILL) if it was not run until STOPPED. NULL
 * is allowed; not from inside the instance's callback. */
SS_API void ss_instance_destroy(ss_instance_t *inst);

/* What an instance tells its owner, from its loop. */
typedef enum {
	/* It serves: listening, and its plugins are up (with none, on the
	 * loop's first turn). Once. */
	SS_INSTANCE_READY,
	/* It has stopped itself for a reason in msg (a plugin that could not
	 * be started, or restarted); STOPPED follows. Once. */
	SS_INSTANCE_FAILED,
	/* After ss_instance_stop or FAILED: every process it started has
	 * ended and been reaped. Once; it may come from inside
	 * ss_instance_stop. */
	SS_INSTANCE_STOPPED,
} ss_instance_event_t;

/* msg is one line for FAILED (valid during the call only), NULL
 * otherwise. */
typedef void (*ss_instance_cb)(ss_instance_t *inst, ss_instance_event_t ev, const char *msg,
			       void *arg);

/* Calls cb with arg on each event from now on (cb NULL: none). Without a
 * callback, FAILED's reason is logged as an error. arg stays the caller's. */
SS_API void ss_instance_set_cb(ss_instance_t *inst, ss_instance_cb cb, void *arg);

/* Counters since the instance was created. */
typedef struct ss_stats {
	uint64_t accepted;   /* connections accepted */
	uint64_t active;     /* connections open now */
	uint64_t bytes_up;   /* plaintext inbound -> outbound, open connections' included */
	uint64_t bytes_down; /* plaintext outbound -> inbound, open connections' included */
} ss_stats_t;

/* Copies inst's counters into *out (the caller's). Never fails. The bytes
 * of open connections count as they are relayed, not only when the
 * connection closes. */
SS_API void ss_instance_stats(const ss_instance_t *inst, ss_stats_t *out);

/* The figures of one listening port and one user of it. A connection
 * counts from the moment its request is accepted (ss-server: authenticated
 * and its target read, the target's connect included; a client: once
 * connected through its server); one refused before counts in the port's
 * refusals. The UDP
 * figures are ss-server's. */
typedef struct ss_figures {
	uint16_t port;       /* the public port (ss-server's listen port, a client's local port) */
	const char *user;    /* a multi-user server's user ("users"), "" for none; valid
				while the configuration is */
	uint64_t bytes_up;   /* plaintext client -> target, open connections' included */
	uint64_t bytes_down; /* plaintext target -> client */
	uint64_t conns_active; /* TCP connections open now, counted as above */
	uint64_t conns_total;  /* TCP connections whose request was accepted */
	/* The port's, whatever the user (the same in each of its rows): */
	uint64_t udp_in, udp_out;                   /* datagrams from clients, and to clients */
	uint64_t udp_assoc_active, udp_assoc_total; /* UDP associations */
	uint64_t refused_auth;    /* clients that failed to authenticate or sent a bad header */
	uint64_t refused_replay;  /* replayed requests */
	uint64_t refused_acl;     /* refused by the ACL (client or target) */
	uint64_t refused_blocked; /* targets the server never relays to */
} ss_figures_t;

/* How many rows ss_instance_figures has: the ports times (the users + 1),
 * fixed for the instance's life. Row i is port i / (users + 1), user
 * i % (users + 1), user 0 being "". */
SS_API size_t ss_instance_figures_count(const ss_instance_t *inst);

/* Row i of inst's figures into *out (the caller's), summed over every
 * worker that shares its state (ss_program_main's --workers; one for an
 * instance of ss_instance_create). May be called from inst's thread only
 * (the workers' counters are read without a lock). 0, or -ENOENT when i is
 * past the last row. */
SS_API int ss_instance_figures(const ss_instance_t *inst, size_t i, ss_figures_t *out);

/* ---- Programs -------------------------------------------------------- */

/* A whole program: parse argv, set up the process (user, nofile, daemon,
 * signals), run until SIGINT/SIGTERM, with messages on stderr or syslog.
 * Returns the exit status (0, or 1 on an error it has reported). */
SS_API int ss_program_main(ss_prog_t prog, int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
