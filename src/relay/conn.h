/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_CONN_H
#define SS_RELAY_CONN_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "codec/codec.h"
#include "net/splice.h"
#include "net/resolver.h"
#include "proto/addr.h"

/* One relayed TCP connection: two sides (inbound = the accepted socket,
 * outbound = the one we connect), two pump directions, one state. */

/* The relay buffer's size and layout are the codecs' (codec/codec.h, with
 * a picture). */
#define SS_DIR_MAX_IOV 32
/* A leased buffer: the relay bytes, then the pending-output vector (it only
 * ever points into the same buffer, so it lives and goes with it). */
#define SS_LEASE_SIZE (SS_RELAY_BUF_SIZE + SS_DIR_MAX_IOV * sizeof(struct iovec))

enum { SS_IN = 0, SS_OUT = 1 };

/* Room for a handshake's own state (ss_conn_t.hs). */
#define SS_HS_STATE_LEN 88

typedef enum {
	SS_XF_COPY,   /* identity */
	SS_XF_ENCODE, /* plaintext in, the codec's stream out */
	SS_XF_DECODE, /* the codec's stream in, plaintext out */
} ss_xform_t;

typedef enum {
	SS_CONN_HANDSHAKE,   /* reading the inbound handshake */
	SS_CONN_RESOLVING,   /* looking up the target's name */
	SS_CONN_CONNECTING,  /* outbound connect in progress */
	SS_CONN_STREAM,      /* pumping both ways */
	SS_CONN_DRAIN,       /* hostile peer: read and discard until EOF or timeout */
	SS_CONN_UDP_CONTROL, /* ss-local: holds a UDP association open until EOF */
	SS_CONN_CLOSED,      /* waiting for the reaper */
} ss_conn_state_t;

typedef struct ss_side {
	int fd;
	ev_io rio; /* readable: drives the direction reading from this side */
	ev_io wio; /* writable: drives the direction writing to this side */
} ss_side_t;

/* One direction: reads from side[d], writes to side[!d]. The fields go by
 * size, largest last, so that none pads (the slot's size, conn.c). */
typedef struct ss_dir {
	ss_xform_t xf;
	uint32_t keep; /* bytes at the front that must stay (plaintext awaiting a write) */
	uint32_t rpos; /* DECODE: undecoded wire bytes are [rpos, rend) */
	uint32_t rend;
	uint32_t outq; /* the sink's unsent bytes at the idle timer's last look while
			  blocked; UINT32_MAX: no look yet */
	uint16_t lead; /* plaintext already placed in slot 0 (a request's target
			  first, where the codec puts it there) */
	uint8_t iov_n; /* pending output: iov[iov_i..iov_n) */
	uint8_t iov_i;
	bool hdr_pending; /* clients: the request (its target) is still to go */
	bool splice;      /* COPY between two TCP sockets: moved with splice(2) */
	bool copy_once;   /* splicing, but the next read goes through user space */
	bool drained;     /* the last read emptied the source: wait for the watcher */
	bool eof;         /* source reached EOF */
	bool shut;        /* SHUT_WR done on the sink */
	/* This direction's codec state, in the slot's tail (ss_conn_t.tail),
	 * as large as the method's codec needs; NULL when it needs none. */
	void *codec;
	uint8_t *buf;      /* leased only while bytes wait in it */
	struct iovec *iov; /* pending output, at the end of buf; NULL without buf */
	uint64_t bytes;    /* plaintext bytes delivered */
	uint64_t spliced;  /* of which moved by splice(2) */
	ss_splice_t sp;
} ss_dir_t;

struct ss_instance;

typedef struct ss_conn {
	void *pool_link; /* first: the pool's free list writes here */
	struct ss_instance *inst;
	ss_conn_state_t state;
	/* In the instance's list of expendable connections (exp_prev,
	 * exp_next): those that have not completed a handshake since they
	 * were accepted, and those draining. Each ends at deadline, whatever
	 * it sends, and may be closed earlier to make room for a new one
	 * (ss_conn_make_room). Flags in bits, so that they share a byte. */
	bool expendable : 1;
	bool lookup_busy : 1; /* a resolver callback is still owed */
	bool lead_wait : 1;   /* waiting briefly for a first payload to ride with the header */
	bool bypass : 1;      /* client: the ACL sends it straight to its target */
	/* It came to the instance's door (ss_instance_listen_door), and
	 * starts with the door's handshake, not the program's (ss_conn_ops). */
	bool door : 1;
	/* The handshake's own state, laid out by its front end (relay/hs_*.c,
	 * each with its own struct, checked to fit), zeroed at the accept: used
	 * in HANDSHAKE and by the front end's pump filter in STREAM. */
	_Alignas(8) unsigned char hs[SS_HS_STATE_LEN];
	/* STREAM: the pump's filters, a pair set together, filter[d] for
	 * direction d (relay/pump.c); NULL: neither direction has one, the
	 * stream goes as it comes. */
	const struct ss_pump_filter *filter;
	/* The connection's codec: ss-server's, or a client's server's once it
	 * is chosen; NULL before, and for a bypassed connection. */
	ss_codec_t *k;
	/* Clients: the server in use (index in inst->servers, -1: none), the
	 * ones tried so far, and what it has said. */
	int8_t srv;
	bool srv_wait;  /* waiting in inst->servers for an address */
	bool connected; /* the outbound connect succeeded */
	bool answered;  /* the outbound side sent a byte */
	uint16_t tried;
	/* Codec classes (inst->classes) whose states this slot has set up:
	 * kept across the slot's connections. */
	uint16_t classes;
	int out_err; /* the last connect error, then what ended the outbound side */
	/* Its row in its worker's figures (relay/figures.h) plus one, from
	 * the relay stage on; 0 before. */
	uint32_t fig;
	ev_tstamp srv_since;      /* when the server accepted the connect */
	struct ss_conn *srv_next; /* srv_wait: the next one waiting */
	const char *action;       /* what it was doing, for log lines */
	ss_side_t side[2];
	ss_dir_t dir[2];
	ev_timer timer;
	ev_tstamp last_active;
	/* The fixed end of the present stage, which no byte moves: the
	 * connect (with the name lookup before it) in RESOLVING and
	 * CONNECTING, the connection itself while it is expendable. */
	ev_tstamp deadline;
	ss_addr_t target;
	ss_inaddr_t peer; /* inbound peer (a listener takes IPv4 and IPv6 alone) */
	ss_resolve_req_t lookup;
	struct ss_conn *next_closed;
	struct ss_conn *exp_prev, *exp_next; /* expendable: the older and the newer one */
	struct ss_udp_assoc *udp_assoc;      /* UDP_CONTROL: the association it holds */
	struct ss_conn *udp_next;            /* UDP_CONTROL: not yet matched to one */
	/* The codec states: a pair per codec class (struct ss_instance
	 * classes, a slot being sizeof(ss_conn_t) + inst->slot_states), set
	 * up when a connection first uses the class. */
	_Alignas(64) unsigned char tail[];
} ss_conn_t;

/* What differs between the programs: how a connection starts. */
typedef struct ss_handshake_ops {
	const char *name;
	/* true: inbound plaintext is encoded toward the outbound (ss-local,
	 * ss-tunnel); false: inbound is decoded (ss-server). */
	bool client;
	/* The client speaks first (ss-server, SOCKS5); a tunnel's target may
	 * speak first instead. */
	bool client_first;
	/* A new inbound connection; state is HANDSHAKE with inbound reads on. */
	void (*accepted)(ss_conn_t *c);
	/* Inbound readable during HANDSHAKE. */
	void (*inbound)(ss_conn_t *c);
	/* The outbound connect finished: err 0 or an errno value. */
	void (*connected)(ss_conn_t *c, int err);
} ss_handshake_ops_t;

extern const ss_handshake_ops_t ss_hs_local;  /* ss-local: its front ends (hs_local.h) */
extern const ss_handshake_ops_t ss_hs_tunnel; /* ss-tunnel */
extern const ss_handshake_ops_t ss_hs_redir;  /* ss-redir */
extern const ss_handshake_ops_t ss_hs_server; /* ss-server */
extern const ss_handshake_ops_t ss_hs_dns;    /* ss-local's DNS relay door (relay/dns.h) */

/* Core services for handshakes (relay/conn.c). */

/* Closes now (deferred free). reason NULL for a normal end. */
void ss_conn_close(ss_conn_t *c, const char *reason);
/* Hostile or broken peer: read and discard until EOF or the connection's
 * deadline; it is expendable from then on. The deadline of a connection
 * that never completed a handshake stays what it was (accepted + the
 * timeout); any other gets the timeout from now. */
void ss_conn_drain(ss_conn_t *c, const char *reason);
/* ss-server: a client refused (it failed to authenticate, replayed, sent a
 * bad header): the refusal is logged, rate-limited (relay/refused.h), and
 * the connection drains as with ss_conn_drain. */
void ss_conn_refuse(ss_conn_t *c, const char *why);
/* ss-local, ss-tunnel: the server's answer failed to decode: logged,
 * rate-limited per server, and the connection closed. */
void ss_conn_answer_refused(ss_conn_t *c, const char *why);
/* Connects the outbound side to a (resolving a domain first); on the result
 * calls ops->connected. */
void ss_conn_connect_addr(ss_conn_t *c, const ss_addr_t *a);
void ss_conn_connect_sa(ss_conn_t *c, const struct sockaddr *sa, socklen_t len);
/* Connects to one of the configured servers (clients): picks one it has
 * not tried (relay/servers.h), starts its codec and connects; a connect
 * that fails goes on to the next, and only when none is left (or can come)
 * does ops->connected hear of the failure. */
void ss_conn_connect_server(ss_conn_t *c);
/* Clients: connects toward c->target, through a server or, when the ACL
 * says bypass, straight to it (both directions then copy). A name is looked
 * up first only when no name rule decides and address rules might. On the
 * result calls ops->connected. */
void ss_conn_connect_route(ss_conn_t *c);
/* Clients: ends the outbound leg (socket, server, codec states, buffer,
 * splicing) and both directions' stream state, keeping the inbound socket
 * and what waits in its buffer, for a new connect: back in HANDSHAKE with
 * the inbound side's watchers stopped. */
void ss_conn_outbound_end(ss_conn_t *c);
/* Enters STREAM and starts both pumps. */
void ss_conn_stream(ss_conn_t *c);
/* Clients: puts the target's address header, then n bytes of extra (early
 * payload, may point into the direction's own buffer), in front of the
 * first chunk and enters STREAM. */
void ss_conn_client_stream(ss_conn_t *c, const uint8_t *extra, size_t n);
/* For the instance: a new inbound socket (that came to its door, or to
 * the program's own listeners), and the deferred frees. */
void ss_conn_accept(struct ss_instance *inst, bool door, int fd, const struct sockaddr *peer,
		    socklen_t peerlen);
void ss_conn_reap(struct ss_instance *inst);
/* Every slot is taken and a connection waits to be accepted: closes the
 * oldest expendable connection, as its deadline would (the reaper frees
 * the slot). 0 when it closed one; -EAGAIN when the oldest is still in its
 * grace period, *wait the seconds until it is not; -ENOENT when there is
 * none. */
int ss_conn_make_room(struct ss_instance *inst, ev_tstamp *wait);
/* Releases what a slot keeps across connections (its cipher states). */
void ss_conn_slot_free(ss_conn_t *c);
/* Leases the direction's buffer if it has none. */
uint8_t *ss_conn_buf(ss_conn_t *c, int d);
void ss_conn_buf_release(ss_conn_t *c, int d);
/* Starts or stops a side's read or write watcher. */
void ss_conn_want(ss_conn_t *c, int side, int events, bool on);
/* ss-local: the connection now holds a UDP association (SOCKS5 UDP
 * ASSOCIATE): it reads and discards until EOF, and the association ends
 * with it. */
void ss_conn_udp_control(ss_conn_t *c);
/* Marks activity for the idle timer. */
void ss_conn_touch(ss_conn_t *c);
/* Peer text for log lines. */
const char *ss_conn_peer(const ss_conn_t *c, char *buf, size_t len);

/* What a pump filter says of the bytes it was shown, or of what comes next
 * in its direction. */
typedef enum {
	SS_FILTER_KEEP, /* data: every byte goes on; next: read the source */
	SS_FILTER_END,  /* data: only the first *keep go on, the rest is the
			   filter's (what it wants of it, it took); next: what
			   goes on waits in the lead area (the source's eof may
			   be set) */
	SS_FILTER_WAIT, /* next: nothing yet; wait until the source is readable */
	SS_FILTER_HOLD, /* next: read no more until the filter resumes the
			   direction (ss_pump_resume); the other direction's
			   idle hook hears when that one has written all it had */
	SS_FILTER_ERR,  /* the stream's framing is malformed: the connection
			   closes */
} ss_filter_result_t;

/* One direction's filter (c->filter[d]): what a front end needs to see of
 * the plaintext (a proxy front end that follows its requests one way and
 * their answers the other), so that the pump knows no protocol. A filtered
 * direction reads one run at a time and is never spliced. Every hook is
 * set. */
typedef struct ss_pump_filter {
	/* The most one read takes: what follows the end of a message must
	 * fit where the filter keeps it. */
	uint32_t read_max;
	/* Before each read, with nothing waiting to be written. */
	ss_filter_result_t (*next)(ss_conn_t *c, int d);
	/* n plaintext bytes at p, just read: KEEP, END with *keep, or ERR.
	 * Decoded ones (the codec's spans) are KEEP or END. */
	ss_filter_result_t (*data)(ss_conn_t *c, int d, uint8_t *p, size_t n, size_t *keep);
	/* d has written all it had and reads next (its source's eof may be
	 * set): true when the filter took the connection over (it may have
	 * ended the outbound leg, or the connection); false: keep pumping. */
	bool (*idle)(ss_conn_t *c, int d);
	/* Whether the filter keeps bytes of its own in d's buffer (the start
	 * of a next message): the buffer stays leased, and the direction
	 * goes on to next without waiting for its source. */
	bool (*keeps)(const ss_conn_t *c, int d);
} ss_pump_filter_t;

/* The pump (relay/pump.c): moves what it can in direction d. */
void ss_pump(ss_conn_t *c, int d);
/* A direction held by its filter (SS_FILTER_HOLD) reads again, after the
 * present wake-up. */
void ss_pump_resume(ss_conn_t *c, int d);
/* Reads once from side d into d's buffer, behind the undecoded bytes there
 * (ss-server's first flight, decoded with ss_pump_decode): what read(2)
 * returned, -1 with errno set. */
ssize_t ss_pump_read(ss_conn_t *c, int d);
/* Of the plaintext gathered at the front of d's buffer (ss_pump_gather),
 * the handshake took the first used bytes: the rest is d's pending
 * output, and only it counts as delivered. */
void ss_pump_consume(ss_conn_t *c, int d, size_t used);
/* Decodes what is buffered in d into its pending output, through the
 * codec (also an identity one: a server's first flight); hdr (may be NULL)
 * as the codec's decode fills it. SS_OK, SS_ERR. */
int ss_pump_decode(ss_conn_t *c, int d, ss_codec_hdr_t *hdr);
/* Moves d's pending output to the front of its buffer, one run of keep
 * bytes, the undecoded rest after it. */
void ss_pump_gather(ss_conn_t *c, int d);
/* Where plaintext lead bytes go: an ENCODE direction's slot 0. */
uint8_t *ss_pump_lead_area(ss_conn_t *c, int d);

#endif
