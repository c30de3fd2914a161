/* SPDX-License-Identifier: MIT */
#ifndef SS_CODEC_CODEC_H
#define SS_CODEC_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "proto/addr.h"
#include "util/span.h"

struct ss_config;
struct ss_crypto_backend;
struct ss_method;
struct ss_psk_list;

/* Codecs: how bytes travel between ss-local/ss-tunnel and ss-server, one
 * table of operations per method family (codec_aead.c: SIP004 AEAD;
 * codec_2022.c: SIP022 with SIP023 identity headers; codec_none.c: no
 * encryption). The relay (src/relay) sees a codec only through this
 * interface and never asks which method runs; ss_codec_setup is the one
 * place that picks the table for a method. No figure of one method's wire
 * format is defined here: what the relay must know of it (where the
 * plaintext goes in the buffer, what a datagram adds around it) the codec
 * describes once, at setup (ops->describe), and the relay reads it from
 * ss_codec_t.
 *
 * TCP: a connection has two directions, each with an opaque state of
 * ops->state_size bytes that lives in the connection slot. One direction
 * encodes (what a client reads from its application, what a server reads
 * from the target) and the other decodes. The direction that carries the
 * request (a client's encoder, a server's decoder) binds the other one to it
 * once the request has gone or arrived (ops->bind): a SIP022 response names
 * its request's salt.
 *
 * UDP: whole datagrams, sealed and opened in place in the relay's datagram
 * buffer, with a state per relay and one per association. */

/* ---- The relay buffer, as an encoder fills it ----
 *
 * One read fills several plaintext slots, each sealed in place into a chunk,
 * and one write sends them: fewer system calls per byte. Slot k's plaintext
 * starts at first + k * stride (ss_codec_layout_t); the codec writes what
 * goes before a slot (its chunk's framing, and before slot 0 the stream's
 * header) and after it (the tag), inside the buffer:
 *
 *   0            first                 first + payload   first + stride
 *   |  [ header ][ slot 0 plaintext   ][ tag ][ framing ][ slot 1 plaintext ...
 *
 * (header: the stream's header, then slot 0's framing; framing: what a
 * chunk has before its plaintext, such as its sealed length)
 *
 * Each codec's file draws its own layout. An identity codec (ops->identity)
 * has one slot, the whole buffer from 0: the relay copies, and splices, its
 * bytes. A decoder reads into the whole buffer and opens in place.
 *
 * ss-local reads the SOCKS or HTTP handshake into the last SS_HS_LEN bytes
 * (an HTTP request head must fit). For the chunked codecs only the last slots
 * overlap it: slot 0 and its tag end before the handshake area (each codec
 * checks its own). For an identity codec, slot 0 is the whole buffer and so
 * covers the handshake area too. Both are safe for one reason: the early
 * payload is moved (memmove, overlap allowed) to the front of slot 0 before
 * anything else is read into the buffer (ss_conn_client_stream).
 *
 * The buffer's size is that of the largest layout, SIP022's (codec_2022.c
 * derives it and checks this figure; every other codec checks that it
 * fits). */

#define SS_HS_LEN 8192
#define SS_RELAY_BUF_SIZE 263104
#define SS_HS_OFF (SS_RELAY_BUF_SIZE - SS_HS_LEN)
#define SS_CODEC_MAX_SLOTS 16
/* The most any codec adds after a datagram's plaintext (ss_codec_t.udp_tail):
 * what a client leaves free before it knows which server's codec seals. */
#define SS_CODEC_UDP_TAIL_MAX 16

typedef struct ss_codec_layout {
	uint32_t first;   /* offset of slot 0's plaintext */
	uint32_t stride;  /* from one slot's plaintext to the next one's */
	uint32_t payload; /* plaintext bytes a slot takes */
	uint32_t slots;   /* slots in a buffer, at most SS_CODEC_MAX_SLOTS */
} ss_codec_layout_t;

/* What a decoder's header said, reported by the call that validated it. */
typedef struct ss_codec_hdr {
	bool done;          /* the header is validated (this call) */
	bool has_target;    /* requests whose header carries the target (SIP022); */
	ss_addr_t target;   /* otherwise it is the first bytes of the plaintext */
	const char *user;   /* a multi-user server's user, for logs, or NULL */
	uint64_t timestamp; /* the peer's, where the header has one */
} ss_codec_hdr_t;

/* An opened datagram: the address it names (target or source), its
 * encoding right before the payload, both inside the datagram buffer. */
typedef struct ss_codec_pkt {
	ss_addr_t addr;
	uint8_t *addr_raw;
	uint8_t *payload;
	size_t payload_len;
} ss_codec_pkt_t;

/* A server's datagram between ops->udp_open_request and ops->udp_accept:
 * the key of its association and what the codec keeps of it. */
#define SS_CODEC_DGRAM_PRIV 512
typedef struct ss_codec_dgram {
	struct sockaddr_storage key;
	socklen_t key_len;
	_Alignas(16) unsigned char priv[SS_CODEC_DGRAM_PRIV];
} ss_codec_dgram_t;

struct ss_codec_ops;

/* One instance's codec: the operations, what they told of the wire format,
 * and the codec's own part (the method, the keys, a server's replay pools
 * and users), which only the codecs read. Set up once, shared by every
 * connection and datagram of the instance (one thread); the pools and the
 * users' cipher states change as it runs. */
#define SS_CODEC_PRIV_SIZE 448
typedef struct ss_codec {
	const struct ss_codec_ops *ops;
	/* Set by ops->describe at setup, read by the relay per chunk and
	 * datagram. */
	ss_codec_layout_t layout;
	/* Bytes a datagram from the other relay has before its plaintext when
	 * opened in place (SIP004: the salt): it is received that far before
	 * where the plaintext is wanted. */
	size_t udp_rx_lead;
	/* Bytes a sealed datagram has after its plaintext (the tag): room a
	 * datagram read for sealing in place leaves free at the buffer's end. */
	size_t udp_tail; /* at most SS_CODEC_UDP_TAIL_MAX */
	_Alignas(16) unsigned char priv[SS_CODEC_PRIV_SIZE];
} ss_codec_t;

/* The operations of a codec. Those marked optional may be NULL: the
 * ss_codec_* wrappers below then do nothing (and return 0 or NULL). */
typedef struct ss_codec_ops {
	const char *name;
	/* After a connection's first flight, bytes pass as they are: the relay
	 * copies them (with splice(2) where it can) and never calls seal or
	 * decode on the stream. */
	bool identity;
	size_t state_size; /* one TCP direction's state */

	/* Fills k->layout, k->udp_rx_lead and k->udp_tail for k's method,
	 * once, at setup. */
	void (*describe)(ss_codec_t *k);
	/* A server's replay pools and users (optional). 0 or -errno with err. */
	int (*server_setup)(ss_codec_t *k, const struct ss_config *cfg, char *err, size_t errlen);
	/* A slot's state (optional): init on its first use (0 or -errno), reset
	 * when a connection ends (wipes keys, keeps what init made), free when
	 * the slot goes. */
	int (*init)(ss_codec_t *k, void *st);
	void (*reset)(ss_codec_t *k, void *st);
	void (*free)(ss_codec_t *k, void *st);
	/* A new connection (optional): enc seals what this side sends, dec
	 * opens what it receives. */
	void (*start)(ss_codec_t *k, void *enc, void *dec);
	/* A server's new connection, right after start: the client's address
	 * (optional). */
	void (*peer)(ss_codec_t *k, void *dec, const struct sockaddr *from);
	/* The request has gone (a client's encoder, req) or arrived (a
	 * server's decoder): the opposite direction is bound to it (optional).
	 * 0 or -errno. */
	int (*bind)(ss_codec_t *k, const void *req, void *other);

	/* Encoders. A client's request: the codec puts its target at the start
	 * of slot 0's plaintext (returning how many bytes, at most room) or in
	 * its own header (returning 0). */
	size_t (*put_target)(ss_codec_t *k, const ss_addr_t *target, uint8_t *lead, size_t room);
	/* Plaintext bytes slot 0 takes now: the layout's payload, or for a
	 * request whose header carries req_target (not NULL until the request
	 * is sealed) what the header leaves. */
	size_t (*slot0)(ss_codec_t *k, const void *enc, const ss_addr_t *req_target);
	/* Seals total plaintext bytes laid out in buf's slots (slot 0 first,
	 * full slots before the last) in place: the wire bytes go out as
	 * iov[0..*niov) (at most 2), pointing into buf. The first call writes
	 * the stream's header (req_target: a request's target when the header
	 * carries it); it may seal 0 bytes then (a request of padding alone).
	 * SS_OK or SS_ERR. */
	int (*seal)(ss_codec_t *k, void *enc, uint8_t *buf, size_t total, uint64_t now,
		    const ss_addr_t *req_target, struct iovec *iov, size_t *niov);

	/* Decoder: opens, in place, as much of buf[0..len) as forms whole units;
	 * plaintext pieces go to spans (inside buf, up to max, at least 1);
	 * *consumed leading bytes are done with, the rest must be presented
	 * again followed by new ones. hdr (may be NULL) is filled by the call
	 * that validates the header. SS_OK (maybe with nothing consumed), or
	 * SS_ERR: the stream is dead. A unit that fails after others
	 * authenticated in the same call is reported by the next call: what is
	 * delivered never depends on how the bytes were split into reads. A
	 * server's decoder checks and records salts against replays. */
	int (*decode)(ss_codec_t *k, void *dec, uint8_t *buf, size_t len, uint64_t now,
		      size_t *consumed, ss_span_t *spans, size_t max, size_t *nspans,
		      ss_codec_hdr_t *hdr);
	/* Why a decoder refused its input, for logs. */
	const char *(*why)(ss_codec_t *k, const void *dec);

	/* UDP (a datagram from the other relay is received udp_rx_lead bytes
	 * before where its plaintext is to open, ss_codec_t). */
	size_t udp_relay_size; /* the relay's state */
	size_t udp_assoc_size; /* an association's */
	/* The relay's state (optional). */
	int (*udp_init)(ss_codec_t *k, void *rst);
	void (*udp_free)(ss_codec_t *k, void *rst);
	/* An association's state (optional): init for each new association
	 * (the state is zero on the slot's first use, and otherwise as reset
	 * left it), start for a client's (its own session), reset when it
	 * ends, free with the slot. */
	int (*udp_assoc_init)(ss_codec_t *k, void *rst, void *ast);
	int (*udp_assoc_start)(ss_codec_t *k, void *rst, void *ast);
	void (*udp_assoc_reset)(ss_codec_t *k, void *rst, void *ast);
	void (*udp_assoc_free)(ss_codec_t *k, void *rst, void *ast);
	/* Seals in place the address at addr (addr_len bytes) and the n payload
	 * bytes right after it, from association ast; buf[0..cap) is the
	 * datagram buffer, with room before addr for any header. Returns the
	 * datagram's length with *out at its start, or -errno. */
	long (*udp_seal)(ss_codec_t *k, void *rst, void *ast, uint8_t *buf, size_t cap,
			 uint8_t *addr, size_t addr_len, size_t n, uint64_t now, uint8_t **out);
	/* Client: opens an answer from the server to association ast. NULL,
	 * or why it was refused. */
	const char *(*udp_open_answer)(ss_codec_t *k, void *rst, void *ast, uint8_t *wire,
				       size_t len, uint64_t now, ss_codec_pkt_t *p);
	/* Server: opens a client's datagram as far as telling its
	 * association's key (d->key: the client's address, or its session),
	 * from the address it came from. NULL, or why it was refused. */
	const char *(*udp_open_request)(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
					uint64_t now, const struct sockaddr *from,
					socklen_t fromlen, ss_codec_dgram_t *d);
	/* Then, against the association found under that key (ast) or none
	 * (NULL): opens the rest and fills p. NULL, or why it was refused. */
	const char *(*udp_accept)(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d,
				  uint64_t now, ss_codec_pkt_t *p);
	/* A new association, made for an accepted datagram, takes its session
	 * (optional). 0 or -errno. */
	int (*udp_adopt)(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d);
	/* Who sent an accepted datagram, for logs: a multi-user server's user,
	 * or NULL (optional). */
	const char *(*udp_user)(ss_codec_t *k, const ss_codec_dgram_t *d);
	/* Server: what it remembers of a client session apart from the
	 * session's association (its packet-id window). 0: nothing; the
	 * association is keyed by the client's address, which the kernel keeps
	 * on one worker, and the replay pools refuse replays. Otherwise the
	 * relay keeps udp_memo_size bytes per association key in one table for
	 * all its workers (relay/udp_sessions.h), zero for a key never seen,
	 * and for udp_memo_ttl seconds after the association ends: as long as a
	 * datagram of the session could still pass the time check. */
	size_t udp_memo_size;
	double udp_memo_ttl;
	/* Whether d, opened as far as udp_open_request does, is new to its
	 * session's memo; udp_seen records it there once udp_accept took it.
	 * Both read only what the codec kept in d, not the datagram's bytes:
	 * they may run on the worker the datagram is handed to. Required
	 * with udp_memo_size. */
	bool (*udp_fresh)(ss_codec_t *k, const void *memo, const ss_codec_dgram_t *d);
	void (*udp_seen)(ss_codec_t *k, void *memo, const ss_codec_dgram_t *d);
} ss_codec_ops_t;

/* Picks the codec for cfg's method and sets up k for a server (replay
 * pools sized by cfg->replay_capacity, users) or a client. cfg must outlive
 * k. 0 or -errno with err holding one line. */
int ss_codec_setup(ss_codec_t *k, const struct ss_config *cfg, const struct ss_crypto_backend *be,
		   bool server, char *err, size_t errlen);
/* As ss_codec_setup for a server, with share's replay pools instead of
 * pools of its own (share outlives k). A server's pools are safe for
 * threads: they lock themselves. */
int ss_codec_setup_shared(ss_codec_t *k, const struct ss_config *cfg,
			  const struct ss_crypto_backend *be, const ss_codec_t *share, char *err,
			  size_t errlen);
/* As ss_codec_setup for a server that takes over from prev, the server
 * codec of the configuration before a reload (it may go on serving, and
 * may be freed before or after k): k holds prev's replay pools where they
 * are of the kind k's own would be (SIP004's or SIP022's, and the same
 * replay_capacity), so that what one has seen the other refuses; otherwise
 * it makes new ones. prev is read during the call only. */
int ss_codec_setup_after(ss_codec_t *k, const struct ss_config *cfg,
			 const struct ss_crypto_backend *be, const ss_codec_t *prev, char *err,
			 size_t errlen);
/* Whether server codec k holds every replay pool of prev that it has a
 * use for (k without UDP needs no UDP pool). */
bool ss_codec_keeps_records(const ss_codec_t *k, const ss_codec_t *prev);
/* A client's codec for method with key (and a 2022 method's psks), which
 * must outlive k: each server of ss-local and ss-tunnel has its own. */
void ss_codec_setup_client(ss_codec_t *k, const struct ss_method *method, const uint8_t *key,
			   const struct ss_psk_list *psks, const struct ss_crypto_backend *be);
/* Releases what ss_codec_setup made. Safe on a zeroed ss_codec_t, and twice. */
void ss_codec_free(ss_codec_t *k);

/* Whether a state set up (init) by codec a serves codec b as well: the same
 * operations on the same method, on the same side. The keys come with
 * start, so codecs with other keys share states; a connection slot keeps
 * one pair of states per class of codecs it has used. */
bool ss_codec_same_states(const ss_codec_t *a, const ss_codec_t *b);

/* The crypto beneath the codecs, as the programs see it. Initialises the
 * libraries, once per process or again: 0 or -1. */
int ss_codec_global_init(void);
/* The backend the programs' codecs use (the build's library, with our own
 * code where it was built and not switched off). */
const struct ss_crypto_backend *ss_codec_backend(void);
/* What seals m's traffic through be on this CPU, one line into buf, for
 * the start-up line and --check: "ChaCha20-Poly1305: OpenSSL 3.0.19 EVP",
 * "no encryption". Returns buf. */
const char *ss_codec_impl(const struct ss_crypto_backend *be, const struct ss_method *m, char *buf,
			  size_t len);

/* A state size rounded up so that states placed back to back stay 64-byte
 * aligned. */
static inline size_t ss_codec_state_size(const ss_codec_t *k)
{
	return (k->ops->state_size + 63) & ~(size_t)63;
}

/* The optional operations, for the relay. */
static inline int ss_codec_init(ss_codec_t *k, void *st)
{
	return k->ops->init ? k->ops->init(k, st) : 0;
}

static inline void ss_codec_reset(ss_codec_t *k, void *st)
{
	if (k->ops->reset)
		k->ops->reset(k, st);
}

static inline void ss_codec_release(ss_codec_t *k, void *st)
{
	if (k->ops->free)
		k->ops->free(k, st);
}

static inline void ss_codec_start(ss_codec_t *k, void *enc, void *dec)
{
	if (k->ops->start)
		k->ops->start(k, enc, dec);
}

static inline void ss_codec_peer(ss_codec_t *k, void *dec, const struct sockaddr *from)
{
	if (k->ops->peer)
		k->ops->peer(k, dec, from);
}

static inline int ss_codec_bind(ss_codec_t *k, const void *req, void *other)
{
	return k->ops->bind ? k->ops->bind(k, req, other) : 0;
}

static inline int ss_codec_udp_init(ss_codec_t *k, void *rst)
{
	return k->ops->udp_init ? k->ops->udp_init(k, rst) : 0;
}

static inline void ss_codec_udp_free(ss_codec_t *k, void *rst)
{
	if (k->ops->udp_free)
		k->ops->udp_free(k, rst);
}

static inline int ss_codec_udp_assoc_init(ss_codec_t *k, void *rst, void *ast)
{
	return k->ops->udp_assoc_init ? k->ops->udp_assoc_init(k, rst, ast) : 0;
}

static inline int ss_codec_udp_assoc_start(ss_codec_t *k, void *rst, void *ast)
{
	return k->ops->udp_assoc_start ? k->ops->udp_assoc_start(k, rst, ast) : 0;
}

static inline void ss_codec_udp_assoc_reset(ss_codec_t *k, void *rst, void *ast)
{
	if (k->ops->udp_assoc_reset)
		k->ops->udp_assoc_reset(k, rst, ast);
}

static inline void ss_codec_udp_assoc_free(ss_codec_t *k, void *rst, void *ast)
{
	if (k->ops->udp_assoc_free)
		k->ops->udp_assoc_free(k, rst, ast);
}

static inline int ss_codec_udp_adopt(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d)
{
	return k->ops->udp_adopt ? k->ops->udp_adopt(k, rst, ast, d) : 0;
}

static inline const char *ss_codec_udp_user(ss_codec_t *k, const ss_codec_dgram_t *d)
{
	return k->ops->udp_user ? k->ops->udp_user(k, d) : NULL;
}

#endif
