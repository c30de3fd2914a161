/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_DNS_INTERNAL_H
#define SS_RELAY_DNS_INTERNAL_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/sock.h"
#include "proto/addr.h"
#include "proto/dns.h"
#include "relay/dns.h"
#include "relay/dns_cache.h"

/* Between dns.c (queries: where they go, the cache, UDP both ways) and
 * dns_tcp.c (TCP: clients that ask over it, and the connections to name
 * servers a query takes when UDP will not do). */

/* Queries in flight at once; a query beyond is dropped. */
#define SS_DNS_QUERIES 256
/* The largest query taken; a larger one is dropped. */
#define SS_DNS_QUERY_MAX 1024
/* The largest message (an answer over TCP). */
#define SS_DNS_MSG_MAX 65535
/* Clients over TCP at once, and TCP connections to name servers. */
#define SS_DNS_CLIENTS 64
#define SS_DNS_UPS 32
/* The cache: answers kept, and the largest kept. */
#define SS_DNS_CACHE_ENTRIES 1024
#define SS_DNS_CACHE_SLOT 4096
/* Seconds a name server has to answer a query, and how many times it is
 * asked before the client hears SERVFAIL. */
#define SS_DNS_TRY_TIMEOUT 2.5
#define SS_DNS_TRIES 2

/* Where a query goes (also part of its cache key). */
enum { SS_DNS_REMOTE = 0, SS_DNS_LOCAL = 1, SS_DNS_PATHS = 2 };

typedef struct ss_dns_path {
	struct ss_dns *dns;
	const char *name; /* for log lines: "through the server", "directly" */
	/* The name server, or the door that leads to it: over UDP and TCP. */
	ss_inaddr_t udp, tcp;
	socklen_t udp_len, tcp_len;
	bool has_udp, has_tcp;
	const ss_sockopts_t *opts; /* for the sockets toward it */
	ev_io io;                  /* the UDP socket its answers come back on */
} ss_dns_path_t;

/* Who asked a query, and how the answer goes back. */
typedef struct ss_dns_asker {
	int client;       /* the TCP client (clients[]), -1: over UDP */
	uint32_t gen;     /* the client's generation, as it asked */
	ss_inaddr_t peer; /* UDP: where the answer goes */
	socklen_t peer_len;
	uint16_t id;      /* its query id, which the answer keeps */
	size_t udp_limit; /* UDP: the largest answer it takes */
} ss_dns_asker_t;

typedef struct ss_dns_query {
	struct ss_dns *dns;
	ev_timer timer;
	bool used;
	bool by_answer; /* undecided by name: local first, its addresses decide */
	bool tcp;       /* asked over TCP (clients[] up) */
	uint8_t path, tries;
	uint16_t up_id; /* the id it goes upstream with */
	int up;         /* its TCP connection (ups[]), -1: none */
	int next_free;
	/* Waiting for a TCP connection (all ups[] busy): its place in the
	 * first-come queue, its timer running meanwhile. */
	bool waiting;
	int wait_prev, wait_next;
	ss_dns_asker_t who;
	ss_dns_question_t q;
	uint16_t qlen;
	uint8_t qbuf[SS_DNS_QUERY_MAX]; /* the query as it goes upstream */
} ss_dns_query_t;

/* A TCP connection to a name server, for one query. */
typedef struct ss_dns_up {
	struct ss_dns *dns;
	ev_io io;
	int fd; /* -1: free */
	int query;
	bool connected;
	size_t sent;  /* of the framed query */
	size_t got;   /* of the framed answer, in buf */
	uint8_t *buf; /* 2 + SS_DNS_MSG_MAX */
} ss_dns_up_t;

/* A client that asks over TCP: one query at a time, in order. */
typedef struct ss_dns_client {
	struct ss_dns *dns;
	ev_io rio, wio;
	ev_timer idle;
	int fd; /* -1: free */
	uint32_t gen;
	bool waiting;    /* its query is in flight */
	bool processing; /* in dns_client_process: an answer does not call it again */
	ss_inaddr_t peer;
	size_t in_n;
	uint8_t in[2 + SS_DNS_QUERY_MAX];
	size_t out_off, out_n;
	uint8_t *out; /* 2 + SS_DNS_MSG_MAX */
} ss_dns_client_t;

struct ss_dns {
	struct ss_instance *inst;
	struct ev_loop *loop;
	ss_dns_path_t paths[SS_DNS_PATHS];
	ss_sockopts_t listen_opts, door_opts;
	ev_io udp_io, tcp_io; /* the listeners on cfg->dns_addr */
	bool udp_handed, tcp_handed;
	ss_dns_cache_t cache;
	ss_dns_query_t *queries;
	int free_query;
	size_t in_flight;
	ss_dns_up_t ups[SS_DNS_UPS];
	int wait_head, wait_tail; /* queries waiting for one of ups[], -1: none */
	ev_prepare up_kick;       /* starts them when one is free again */
	ss_dns_client_t *clients;
	uint8_t *bufs; /* the ups' and clients' buffers */
	bool stopped;
	uint64_t asked, answered, cached, dropped;
	uint8_t msg[SS_DNS_MSG_MAX + 1]; /* a datagram read, an answer built */
};

/* A query from who, n bytes at msg (a buffer of SS_DNS_MSG_MAX bytes it may
 * write in): answered from the cache, or sent on its way. SS_OK (answered,
 * or the answer comes with ss_dns_client_answer for a TCP client), or
 * SS_ERR (dropped: it did not parse, or there is no room for it). */
int ss_dns_query_in(ss_dns_t *d, const ss_dns_asker_t *who, uint8_t *msg, size_t n);
/* An answer m (n bytes at msg) from path for query q, by UDP or TCP: checked
 * against it (id and question, by the caller), then delivered. */
void ss_dns_answer_in(ss_dns_t *d, ss_dns_query_t *q, uint8_t *msg, size_t n,
		      const ss_dns_msg_t *m);
/* Query q failed on its path (a TCP connection broke, or time ran out):
 * asked again while it has tries left, else its client hears SERVFAIL. */
void ss_dns_query_failed(ss_dns_t *d, ss_dns_query_t *q, const char *why);

/* dns_tcp.c: the TCP listener's watcher, a TCP client's answer (n bytes
 * at msg, its id already the client's), its end; a query's TCP connection
 * to its path (0, or -errno: none could start) and its end. */
void ss_dns_tcp_accept_cb(struct ev_loop *loop, ev_io *w, int revents);
void ss_dns_client_answer(ss_dns_t *d, int client, uint32_t gen, const uint8_t *msg, size_t n);
void ss_dns_client_close(ss_dns_t *d, ss_dns_client_t *c);
int ss_dns_up_start(ss_dns_t *d, ss_dns_query_t *q);
void ss_dns_up_close(ss_dns_t *d, ss_dns_up_t *u);
/* q waits for a TCP connection, the oldest first to have one when it
 * frees (-EAGAIN from ss_dns_up_start); ss_dns_up_unwait takes it out of
 * the queue (no harm if it is not in it). */
void ss_dns_up_wait(ss_dns_t *d, ss_dns_query_t *q);
void ss_dns_up_unwait(ss_dns_t *d, ss_dns_query_t *q);
void ss_dns_up_kick_cb(struct ev_loop *loop, ev_prepare *w, int revents);

#endif
