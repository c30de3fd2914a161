/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_CONN_INTERNAL_H
#define SS_RELAY_CONN_INTERNAL_H

#include "relay/conn.h"

/* Between conn.c (a connection's life: accept, timers, drain, close) and
 * conn_connect.c (its outbound leg). */

/* Every change of state goes through here: a connection that leaves its
 * first handshake for anything but a drain has proven itself, and the idle
 * timeout applies to it from then on. */
void ss_conn_enter(ss_conn_t *c, ss_conn_state_t s);
/* (Re)arms the connection's one timer for its next deadline. */
void ss_conn_arm_timer(ss_conn_t *c);
/* The outbound connect ended (err 0 or an errno value). */
void ss_conn_connected(ss_conn_t *c, int err);
/* Side side of c takes fd, with its watchers. */
void ss_conn_side_init(ss_conn_t *c, int side, int fd);
/* The connection goes through codec k (of class cls). 0 or -errno. */
int ss_conn_use_codec(ss_conn_t *c, ss_codec_t *k, unsigned cls);
/* A direction's stream state as it starts. */
void ss_conn_dir_fresh(ss_dir_t *dir);
/* The fields a connection's outbound leg and stream start from, on accept
 * and again when a client's connection goes back to its handshake for a new
 * target: no server tried, no codec (the old one's states already reset),
 * nothing framed, both directions fresh. Its sockets, buffers, byte counts,
 * handshake state and state are the caller's. */
void ss_conn_reset(ss_conn_t *c);

#endif
