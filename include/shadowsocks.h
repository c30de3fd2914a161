#ifndef SHADOWSOCKS_H
#define SHADOWSOCKS_H

/* Public API: run an ss-local, ss-server or ss-tunnel in-process.
 *
 *   ss_config_t cfg;
 *   ss_config_parse(&cfg, SS_PROG_SERVER, argc, argv, stdout, err, sizeof(err));
 *   ss_instance_t *inst;
 *   ss_instance_create(&cfg, EV_DEFAULT, &inst, err, sizeof(err));
 *   ev_run(EV_DEFAULT, 0);        // until ss_instance_stop()
 *   ss_instance_destroy(inst);
 *
 * Threads: an instance belongs to the thread that runs its loop. Create,
 * run, stop and destroy it on that thread, with a loop no other thread
 * runs (libev loops are not thread-safe). Instances on different threads,
 * each with a loop of its own (ev_loop_new), may run at the same time:
 * the state the library keeps per process is per thread (the cache of
 * random bytes, the c-ares allocator's arena) or taken under a lock
 * (c-ares's library set-up). The log settings are set once, before any
 * instance starts. A plugin is a child of the thread that runs the loop
 * (on Linux it is killed when that thread ends, PR_SET_PDEATHSIG); on
 * libev's default loop its exit comes through an ev_child watcher, on any
 * other through a pidfd, so no SIGCHLD handler of ours is installed. ss_program_main is a whole
 * program (signals, daemon, user switch, libev's allocator): call it once per process, on its main
 * thread.
 */

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

struct ev_loop;
typedef struct ss_instance ss_instance_t;

/* Reserves pools, resolves the servers, opens the listeners and starts
 * watching them on loop. cfg must outlive the instance. 0 or -errno with err
 * holding one line. */
int ss_instance_create(const ss_config_t *cfg, struct ev_loop *loop, ss_instance_t **out, char *err,
		       size_t errlen);
/* Stops accepting, closes every connection and stops its plugins (SIGTERM,
 * SIGKILL after 3 s); the loop then runs dry once they are reaped. */
void ss_instance_stop(ss_instance_t *inst);
/* Also reaps plugins still running, waiting for them without the loop (up
 * to 3 s, then SIGKILL) if it was not run until STOPPED. */
void ss_instance_destroy(ss_instance_t *inst);

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
/* msg is one line for FAILED, NULL otherwise. */
typedef void (*ss_instance_cb)(ss_instance_t *inst, ss_instance_event_t ev, const char *msg,
			       void *arg);
/* Without a callback, FAILED's reason is logged as an error. */
void ss_instance_set_cb(ss_instance_t *inst, ss_instance_cb cb, void *arg);

typedef struct ss_stats {
	uint64_t accepted;
	uint64_t active;
	uint64_t bytes_up;   /* plaintext inbound -> outbound */
	uint64_t bytes_down; /* plaintext outbound -> inbound */
} ss_stats_t;
void ss_instance_stats(const ss_instance_t *inst, ss_stats_t *out);

/* A whole program: parse argv, set up the process (user, nofile, daemon,
 * signals), run until SIGINT/SIGTERM. Returns the exit status. */
int ss_program_main(ss_prog_t prog, int argc, char **argv);

#endif
