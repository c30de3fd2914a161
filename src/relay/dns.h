/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_DNS_H
#define SS_RELAY_DNS_H

#include <stddef.h>

/* ss-local's DNS relay (--dns): answers DNS over UDP and TCP on its own
 * address. Each query's name goes where the ACL sends a connection to that
 * name (as for a SOCKS5 CONNECT): a proxied name is asked of the remote
 * name server (--remote-dns) through a server, a bypassed one of the local
 * name server (--local-dns) directly; with no ACL every name is proxied.
 * A name that only an address rule could decide is asked of the local
 * name server first: its answer stands when the ACL bypasses every address
 * in it, else the name is asked through the server. The names of the
 * configured servers always go to the local name server (a server given
 * by name must be found without the tunnel it leads to).
 *
 * Through the server, a query travels over the instance's own relay: the
 * DNS relay sends it, as plain DNS, to the instance's door (relay/instance.h),
 * a loopback listener whose connections and datagrams go to the remote
 * name server as ss-tunnel's go to theirs. So a query takes the Shadowsocks
 * UDP relay when the mode has UDP (TCP DNS over a Shadowsocks connection
 * when the answer comes back truncated, and the mode has TCP too), and TCP
 * when the mode is tcp_only; it picks its server, fails over and keeps its
 * servers' health as any other connection or datagram. Directly, a query
 * goes over UDP, then TCP when the answer is truncated.
 *
 * Answers keep the client's query id and are kept by TTL in a bounded cache
 * (relay/dns_cache.h) per question and path. Queries in flight, TCP clients
 * and TCP connections to name servers are fixed tables made at start: no
 * allocation per query. A query that does not parse is dropped (logged at
 * -v), and so is an answer that matches no query in flight by id, source
 * and question. The relay runs on worker 0's loop only. */

struct ss_instance;
typedef struct ss_dns ss_dns_t;

/* Starts the relay of inst (cfg->have_dns): its listeners on cfg->dns_addr
 * (taken from a reload's offer when bound there), the door, the upstream
 * sockets, the tables and the cache. *out, or NULL with err and -errno. */
int ss_dns_start(struct ss_instance *inst, ss_dns_t **out, char *err, size_t errlen);
/* A reload, on the main thread: its listening sockets are offered to the
 * instances made next, then marked with whether one took them. */
void ss_dns_offer(ss_dns_t *d);
void ss_dns_mark_handed(ss_dns_t *d);
/* Ends the relay: queries in flight are dropped, sockets closed (a
 * listener a reload took is only forgotten). Safe with NULL. */
void ss_dns_stop(ss_dns_t *d);
void ss_dns_free(ss_dns_t *d);

#endif
