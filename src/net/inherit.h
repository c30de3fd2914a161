/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_INHERIT_H
#define SS_NET_INHERIT_H

#include <stdbool.h>
#include <sys/socket.h>

/* Listening sockets handed from one set of workers to the next when the
 * configuration is read again (SIGHUP): the running set offers its
 * listeners, the new one takes those bound where it would bind (a
 * duplicate of the descriptor: the same socket, its queue of connections
 * waiting included), and binds the rest afresh. So a port that stays is
 * never closed, not even for a moment, and no connection waiting to be
 * accepted is lost. One process-wide table, used on the main thread only,
 * while a new set is made. */

#define SS_INHERIT_MAX 1024

/* Offers fd, a bound socket (TCP listening or UDP); ignored when the table
 * is full or the socket's address cannot be read. */
void ss_inherit_offer(int fd);
/* A duplicate of an offered socket of type (SOCK_STREAM, SOCK_DGRAM) bound
 * to exactly addr, each offered socket taken at most once; -1 if none. */
int ss_inherit_take(const struct sockaddr *addr, socklen_t len, int type);
/* Whether fd, once offered, was taken. */
bool ss_inherit_taken(int fd);
/* Forgets every offer. */
void ss_inherit_clear(void);

#endif
