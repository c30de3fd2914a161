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
/* Stops accepting and closes every connection; the loop then runs dry. */
void ss_instance_stop(ss_instance_t *inst);
void ss_instance_destroy(ss_instance_t *inst);

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
