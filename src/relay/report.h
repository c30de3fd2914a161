/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_REPORT_H
#define SS_RELAY_REPORT_H

#include <ev.h>
#include <stddef.h>
#include <sys/socket.h>

#include "relay/shared.h"

/* --manager-address: what shadowsocks-libev's ss-server tells its manager
 * (ss-manager), every SS_REPORT_INTERVAL seconds, one datagram
 *   stat: {"PORT":BYTES,...}
 * with its NUL, BYTES the plaintext relayed both ways on PORT since the
 * start, summed over the workers. To HOST:PORT over UDP, or to a Unix
 * datagram socket at the address when it has no port. */
#define SS_REPORT_INTERVAL 10.0

typedef struct ss_report {
	const ss_shared_t *sh;
	struct ev_loop *loop;
	ev_timer timer;
	int fd;
	struct sockaddr_storage to;
	socklen_t to_len;
	bool warned; /* a failed send was logged */
} ss_report_t;

/* Parses addr ("HOST:PORT", "[V6]:PORT", or a Unix socket's path). 0 or
 * -EINVAL with err. */
int ss_report_parse(const char *addr, struct sockaddr_storage *to, socklen_t *len, char *err,
		    size_t errlen);
/* Opens the socket and starts the timer on loop (which it does not keep
 * alive: the loop ends when the workers stop). 0 or -errno with err. */
int ss_report_start(ss_report_t *r, const ss_shared_t *sh, struct ev_loop *loop, const char *addr,
		    char *err, size_t errlen);
/* The datagram's text into buf (with its NUL): its length without the NUL,
 * or -ENOSPC. */
int ss_report_format(const ss_shared_t *sh, char *buf, size_t len);
/* Sends one report now. */
void ss_report_send(ss_report_t *r);
/* Stops the timer and closes the socket. Safe on a zeroed one or twice. */
void ss_report_stop(ss_report_t *r);

#endif
