/* SPDX-License-Identifier: MIT */
#ifndef SS_NET_INHERIT_H
#define SS_NET_INHERIT_H

#include <stdbool.h>
#include <sys/socket.h>

/* Listening sockets handed from one set of workers to the next when the
 * configuration is read again (SIGHUP): the running set offers its
 * listeners, the new one takes those bound where it would bind (the
 * descriptor itself, which changes owner: the same socket, its queue of
 * connections waiting included), and binds the rest afresh. So a port that
 * stays is never closed, not even for a moment, and no connection waiting
 * to be accepted is lost. The descriptor is not duplicated: an epoll set of
 * the old owner's loop still holding the socket under a closed number could
 * not drop it. One process-wide table, behind a lock: ss-server uses it on
 * its main thread while a new set is made, ss-manager on the thread of the
 * worker serving a port while the port's new instance is made (add_user,
 * remove_user), and any worker closing a listener asks it. */

#define SS_INHERIT_MAX 1024

/* Offers fd, a bound socket (TCP listening or UDP); ignored when the table
 * is full or the socket's address cannot be read. */
void ss_inherit_offer(int fd);
/* An offered socket of type (SOCK_STREAM, SOCK_DGRAM) bound to exactly
 * addr, each taken at most once, now the taker's; -1 if none. The offerer
 * learns it through ss_inherit_taken and then forgets the descriptor
 * without closing it. */
int ss_inherit_take(const struct sockaddr *addr, socklen_t len, int type);
/* Whether fd, once offered, was taken. */
bool ss_inherit_taken(int fd);
/* Closing a descriptor it took: a set made during a reload that failed
 * gives an offered socket back (true: the caller must not close it). */
bool ss_inherit_give_back(int fd);
/* Forgets every offer. */
void ss_inherit_clear(void);

#endif
