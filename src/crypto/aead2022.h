/* SPDX-License-Identifier: MIT */
#ifndef SS_CRYPTO_AEAD2022_H
#define SS_CRYPTO_AEAD2022_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/aead.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "crypto/saltpool.h"
#include "proto/addr.h"

/* Shadowsocks 2022 (SIP022) codecs, with SIP023 identity headers for the AES
 * methods. Pure functions over the caller's buffers: no sockets, no clock
 * (every check takes `now`, unix seconds), nothing allocated after init.
 *
 * TCP, per direction, everything in place like aead.h:
 *   request  = [salt][identity header]...[sealed fixed header + tag]
 *              [sealed variable header + tag] then chunks
 *   response = [salt][sealed fixed header + tag][sealed first payload + tag]
 *              then chunks
 *   chunk    = [sealed u16be length + tag][sealed payload + tag], payload up
 *              to 0xFFFF bytes
 * The fixed request header is type 0, u64be timestamp, u16be length of the
 * variable header; the variable header is the SOCKS address, u16be padding
 * length, padding, initial payload. The fixed response header is type 1,
 * u64be timestamp, the request salt, u16be length of the first payload chunk,
 * which follows without a length chunk of its own. One AEAD per direction,
 * keyed with BLAKE3-derive_key("shadowsocks 2022 session subkey", PSK || salt),
 * nonce a 12-byte little-endian counter from zero, one step per seal/open,
 * shared by the headers and the chunks.
 *
 * UDP: whole packets, see ss_2022_udp_* below. */

#define SS_2022_MAX_PAYLOAD 0xFFFF
#define SS_2022_CHUNK_HDR (2 + SS_AEAD_TAG_LEN)
#define SS_2022_CHUNK_OVERHEAD (2 + 2 * SS_AEAD_TAG_LEN)
#define SS_2022_MAX_TIME_DIFF 30 /* seconds either way */
#define SS_2022_SALT_TTL 60      /* seconds a server remembers request salts */
#define SS_2022_MAX_PADDING 900
#define SS_2022_IDENTITY_LEN 16
#define SS_2022_MAX_IDENTITIES (SS_PSK_MAX - 1)
#define SS_2022_REQ_FIXED_LEN (1 + 8 + 2)
/* Wire bytes of a response before its first payload byte. */
#define SS_2022_RESP_HDR_LEN(m) (2 * (size_t)(m)->salt_len + 1 + 8 + 2 + SS_AEAD_TAG_LEN)
/* Room before the initial payload that any request header fits in. */
#define SS_2022_REQ_HDR_MAX                                                                        \
	(SS_MAX_SALT_LEN + SS_2022_MAX_IDENTITIES * SS_2022_IDENTITY_LEN + SS_2022_REQ_FIXED_LEN + \
	 SS_AEAD_TAG_LEN + SS_ADDR_MAX_ENCODED + 2 + SS_2022_MAX_PADDING)
#define SS_2022_PAD_AUTO (-1)

/* Why a decoder refused its input. Every SIP022 rejection rule has its own. */
typedef enum {
	SS_2022_E_NONE = 0,
	SS_2022_E_AUTH,    /* a header, chunk or packet failed authentication */
	SS_2022_E_USER,    /* the identity header names no known user */
	SS_2022_E_TYPE,    /* the header type is not the peer's direction */
	SS_2022_E_TIME,    /* the timestamp is more than 30 s from now */
	SS_2022_E_REPLAY,  /* request salt seen in the last 60 s */
	SS_2022_E_FULL,    /* salt pool full: the salt cannot be remembered */
	SS_2022_E_SALT,    /* the response is bound to another request salt */
	SS_2022_E_LENGTH,  /* a header or packet too short for its fields */
	SS_2022_E_ADDR,    /* the SOCKS address is malformed */
	SS_2022_E_PADDING, /* the padding runs past the end of its header */
	SS_2022_E_EMPTY,   /* request header with neither padding nor payload */
} ss_2022_err_t;

/* A short phrase for logs ("bad timestamp"). */
const char *ss_2022_strerror(ss_2022_err_t e);

/* session subkey = BLAKE3 derive_key("shadowsocks 2022 session subkey",
 * key || salt), m->key_len bytes to out. salt_len <= SS_MAX_SALT_LEN. */
void ss_2022_session_subkey(const ss_method_t *m, const uint8_t *key, const uint8_t *salt,
			    size_t salt_len, uint8_t *out);
/* The first 16 bytes of BLAKE3(key): what an identity header carries. */
void ss_2022_psk_hash(const ss_method_t *m, const uint8_t *key,
		      uint8_t out[static SS_2022_IDENTITY_LEN]);

/* ---- Users of a multi-user server (SIP023) ---- */

typedef struct ss_2022_user {
	uint8_t hash[SS_2022_IDENTITY_LEN]; /* ss_2022_psk_hash(key) */
	uint8_t key[SS_MAX_KEY_LEN];        /* the user PSK */
	ss_aes_block_t aes;                 /* keyed with key: UDP server-to-client headers */
	void *data;                         /* the caller's (a name for logs, counters) */
} ss_2022_user_t;

/* Built at configuration time and shared by every connection; only the AES
 * states change afterwards (a block operation uses its context), so one
 * table serves one thread. Entries never move: pointers to them stay valid. */
typedef struct ss_2022_users {
	const ss_method_t *method;
	const ss_crypto_backend_t *be;
	ss_2022_user_t *v; /* in the order added */
	uint32_t *order;   /* indices of v by hash, for the lookup */
	size_t n, cap;
} ss_2022_users_t;

/* Room for cap users of method m (an AES 2022 method: -EINVAL otherwise).
 * 0, -EINVAL or -ENOMEM. */
int ss_2022_users_init(ss_2022_users_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
		       size_t cap);
/* Adds the user PSK key (m->key_len bytes, copied). 0, -ENOSPC when cap users
 * are there, -EEXIST when the key (its hash) is already there, or -errno. */
int ss_2022_users_add(ss_2022_users_t *u, const uint8_t *key, void *data);
/* The user whose PSK hash is hash, or NULL. */
ss_2022_user_t *ss_2022_users_find(ss_2022_users_t *u,
				   const uint8_t hash[static SS_2022_IDENTITY_LEN]);
/* Wipes the keys and frees. Safe on a zeroed ss_2022_users_t, and twice. */
void ss_2022_users_free(ss_2022_users_t *u);

/* ---- TCP ---- */

typedef struct ss_2022_stream {
	const ss_method_t *method;
	const ss_crypto_backend_t *be;
	ss_aead_t aead;
	/* Identity headers: made on the first stream of the slot that carries
	 * them (most do not: responses, single-user servers and clients), so
	 * the others hold a pointer instead of the state. */
	ss_aes_block_t *aes;
	uint8_t nonce[SS_AEAD_MAX_NONCE_LEN];
	uint8_t salt[SS_MAX_SALT_LEN];     /* this direction's salt, once known */
	uint8_t req_salt[SS_MAX_SALT_LEN]; /* response streams: the request's salt */
	uint8_t key[SS_MAX_KEY_LEN];       /* decoder: the PSK until the salt arrives */
	ss_2022_users_t *users;            /* server decoder: NULL when single-user */
	ss_saltpool_t *pool;               /* server decoder: request salts, or NULL */
	ss_2022_user_t *user;              /* server decoder: the user who connected */
	uint64_t timestamp;                /* decoder: the peer header's */
	uint8_t state;
	bool response;     /* a response stream (server encoder, client decoder) */
	bool have_header;  /* encoder: header written; decoder: header validated */
	ss_2022_err_t err; /* decoder: why it failed; it refuses everything after */
	uint16_t pending_len;
} ss_2022_stream_t;

/* Once per slot. 0 or -errno from the backend. */
int ss_2022_stream_init(ss_2022_stream_t *s, const ss_method_t *m, const ss_crypto_backend_t *be);
/* Per connection end: wipes keys, subkeys, salts and nonce; keeps the backend
 * states for reuse. */
void ss_2022_stream_reset(ss_2022_stream_t *s);
/* When the slot is destroyed. Safe on a zeroed stream, and twice. */
void ss_2022_stream_free(ss_2022_stream_t *s);

/* The client's request header. */
typedef struct ss_2022_request {
	const uint8_t *addr; /* the target, SOCKS-encoded; may point anywhere in */
	size_t addr_len;     /* the caller's buffer, the room before payload too */
	/* SS_2022_PAD_AUTO: 1..900 random bytes without initial payload, none
	 * with it (SIP022 3.1.4). Otherwise exactly this many, 0..900, and
	 * then at least one of padding and payload must be there. */
	int padding;
	uint64_t now; /* timestamp to send */
} ss_2022_request_t;

/* Bytes of request header before the initial payload. */
size_t ss_2022_request_hdr_len(const ss_method_t *m, size_t n_identities, size_t addr_len,
			       size_t padding);

/* Client encoder: starts the request stream with a random salt. psks: the
 * identity PSKs then the user PSK (ss_psk_parse), one identity header per
 * identity PSK. payload points at n (0 or more) initial payload bytes in the
 * caller's buffer, with `room` bytes writable before it and
 * SS_AEAD_TAG_LEN after it. The request is written to
 * [payload - h, payload + n + SS_AEAD_TAG_LEN) and sent in one write; h is
 * returned (<= SS_2022_REQ_HDR_MAX). -ENOSPC when room < h, -EMSGSIZE when
 * the variable header would pass 0xFFFF bytes, -EINVAL for bad arguments
 * (identity PSKs with ChaCha20, padding over 900, neither padding nor
 * payload), or -errno from the backend. Afterwards s->salt is the request
 * salt, for ss_2022_dec_start_client. */
long ss_2022_enc_request(ss_2022_stream_t *s, const ss_psk_list_t *psks,
			 const ss_2022_request_t *req, uint8_t *payload, size_t n, size_t room);
/* Same with a given salt (tests, known-answer vectors). */
long ss_2022_enc_request_salt(ss_2022_stream_t *s, const ss_psk_list_t *psks,
			      const ss_2022_request_t *req, uint8_t *payload, size_t n, size_t room,
			      const uint8_t *salt);

/* Server encoder: starts the response stream to the request with salt
 * req_salt, keyed with key: the user's PSK when the request named one
 * (hdr.user->key), else the server's PSK. A random salt. 0 or -errno. */
int ss_2022_enc_start_response(ss_2022_stream_t *s, const uint8_t *key, const uint8_t *req_salt);
int ss_2022_enc_start_response_salt(ss_2022_stream_t *s, const uint8_t *key,
				    const uint8_t *req_salt, const uint8_t *salt);
/* Writes the response header and its first payload chunk in place: unit
 * points at SS_2022_RESP_HDR_LEN(m) bytes of room, then n payload bytes
 * (1..0xFFFF) already in place, then SS_AEAD_TAG_LEN bytes of room;
 * SS_2022_RESP_HDR_LEN(m) + n + SS_AEAD_TAG_LEN bytes are written at unit.
 * 0 or -errno. */
int ss_2022_enc_response(ss_2022_stream_t *s, uint8_t *unit, size_t n, uint64_t now);

/* Seals one chunk in place after the header: chunk points at
 * SS_2022_CHUNK_HDR bytes of room, then n payload bytes (1..0xFFFF), then
 * SS_AEAD_TAG_LEN bytes of room. 0, or -EINVAL before the header or for a
 * bad n, or -errno. */
int ss_2022_enc_chunk(ss_2022_stream_t *s, uint8_t *chunk, size_t n);

/* Server decoder of a request stream. psk: the server's PSK (its identity
 * PSK when users is not NULL: each request then starts with one identity
 * header naming a user, whose PSK keys the session; ignored for ChaCha20,
 * which has no identity headers). pool: the salts of the last 60 s, checked
 * and filled here; or NULL, and the caller checks s->salt itself once the
 * header is done (hdr.done), before using anything the request carried. */
void ss_2022_dec_start_server(ss_2022_stream_t *s, const uint8_t *psk, ss_2022_users_t *users,
			      ss_saltpool_t *pool);
/* Client decoder of a response stream: key is the user PSK (the last of the
 * list), req_salt the salt of the request it answers. */
void ss_2022_dec_start_client(ss_2022_stream_t *s, const uint8_t *key, const uint8_t *req_salt);

/* What the header said, reported once. */
typedef struct ss_2022_header {
	bool done;            /* true only from the call that validated the header */
	uint64_t timestamp;   /* the peer's */
	ss_2022_user_t *user; /* requests to a multi-user server */
	ss_addr_t target;     /* requests */
} ss_2022_header_t;

/* Decodes, in place, as much of buf[0..len) as forms whole units: the salt,
 * identity header and fixed header together (nothing is consumed until all
 * of it is there), the variable header or first payload chunk, then length
 * and payload blocks. Plaintext pieces go to spans (pointing into buf), up to
 * max_spans (at least 1); *consumed leading bytes of buf are used and may be
 * dropped, the rest must be presented again followed by new bytes. hdr (may
 * be NULL) is cleared on each call and filled by the call that completes the
 * header.
 * The order of the header checks: authentication, type, timestamp against
 * now, then request salts against the pool (recorded once new), response
 * salts against the request salt, then the variable header's rules.
 * Returns SS_OK (possibly with nothing consumed when more bytes are needed),
 * or SS_ERR with the reason in s->err; after SS_ERR the stream is dead.
 * A unit that fails after others authenticated in the same call ends the
 * stream the same way, but that call still returns SS_OK with those units
 * (the header, spans, *consumed up to the failing unit) and the next call
 * returns SS_ERR: what is delivered is every unit before the first bad one,
 * however the bytes were split into reads. */
int ss_2022_dec(ss_2022_stream_t *s, uint8_t *buf, size_t len, uint64_t now, size_t *consumed,
		ss_span_t *spans, size_t max_spans, size_t *nspans, ss_2022_header_t *hdr);

/* ---- UDP ----
 *
 * AES methods: [AES-ECB(PSK, session id || u64be packet id)]
 *              [identity headers, client to server only]
 *              [AEAD(subkey(PSK, session id), nonce = the separate header's
 *               plaintext bytes 4..16, main header || payload) + tag]
 * where identity header i = AES-ECB(iPSK_i, hash(PSK_i+1) ^ separate header)
 * and the separate header is encrypted with the first PSK of the list.
 * 2022-blake3-chacha20-poly1305:
 *              [24-byte random nonce][XChaCha20-Poly1305(PSK, session id ||
 *               u64be packet id || main header || payload) + tag]
 * Main header, client to server: type 0, u64be timestamp, u16be padding
 * length, padding, SOCKS address; server to client: type 1, timestamp, the
 * client session id, padding length, padding, SOCKS address. Server to
 * client packets are keyed with the user's PSK and carry no identity header.
 */

#define SS_2022_UDP_SEP_LEN 16
#define SS_2022_UDP_XNONCE_LEN 24

/* One side's keys, set up once per instance. Must not be moved once set up. */
typedef struct ss_2022_udp {
	const ss_method_t *method;
	const ss_crypto_backend_t *be;
	bool server;
	ss_psk_list_t psks;             /* client: identity PSKs, user PSK; server: its PSK */
	ss_2022_users_t *users;         /* server: NULL when single-user */
	ss_aes_block_t aes[SS_PSK_MAX]; /* AES methods: keyed with psks.keys[i] */
	uint8_t hash[SS_PSK_MAX][SS_2022_IDENTITY_LEN]; /* client: of psks.keys[i] */
	ss_aead_t xaead; /* ChaCha20: XChaCha20-Poly1305 keyed with the PSK */
} ss_2022_udp_t;

/* Client: psks as ss_psk_parse gives them (copied). 0, -EINVAL, or -errno. */
int ss_2022_udp_init_client(ss_2022_udp_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
			    const ss_psk_list_t *psks);
/* Server: its PSK (copied) and its users or NULL (kept; they must outlive u;
 * AES methods only, set up for the same method and backend). 0, -EINVAL, or
 * -errno. */
int ss_2022_udp_init_server(ss_2022_udp_t *u, const ss_method_t *m, const ss_crypto_backend_t *be,
			    const uint8_t *psk, ss_2022_users_t *users);
/* Wipes and releases. Safe on a zeroed ss_2022_udp_t, and twice. */
void ss_2022_udp_free(ss_2022_udp_t *u);

/* One session in one direction: the client session (client to server
 * packets) or a server session (server to client). The sender numbers its
 * packets from next_packet_id; the receiver pairs it with an ss_window_t. */
typedef struct ss_2022_udp_session {
	uint64_t id;
	uint64_t next_packet_id;
	ss_2022_user_t *user; /* server: the user the client session belongs to */
	ss_aead_t aead;       /* AES methods: keyed with the session subkey */
} ss_2022_udp_session_t;

/* Once per slot. 0 or -errno. */
int ss_2022_udp_session_init(const ss_2022_udp_t *u, ss_2022_udp_session_t *s);
/* Starts session id: derives its subkey (AES methods) from the PSK that
 * keys it (the client's user PSK; on a server the user's PSK, or its own
 * PSK when user is NULL) and restarts the packet ids at 0. 0 or -errno. */
int ss_2022_udp_session_start(const ss_2022_udp_t *u, ss_2022_udp_session_t *s, uint64_t id,
			      ss_2022_user_t *user);
/* When the session ends: wipes the subkey, keeps the backend state for the
 * next ss_2022_udp_session_start. */
void ss_2022_udp_session_reset(const ss_2022_udp_t *u, ss_2022_udp_session_t *s);
/* Wipes the subkey and releases. Safe on a zeroed session, and twice. */
void ss_2022_udp_session_free(const ss_2022_udp_t *u, ss_2022_udp_session_t *s);

typedef struct ss_2022_udp_msg {
	const uint8_t *addr; /* SOCKS-encoded address: target (client) or source */
	size_t addr_len;     /* (server); may point into buf, even just before the payload */
	size_t padding;      /* 0..900 bytes of padding */
	uint64_t now;
	uint64_t client_session_id; /* server to client: the session answered */
} ss_2022_udp_msg_t;

/* Bytes a packet has before its payload. */
size_t ss_2022_udp_hdr_len(const ss_2022_udp_t *u, size_t addr_len, size_t padding);

/* Seals one packet in place from session s (its next packet id, which is
 * then incremented): the n payload bytes at buf + off, the header written to
 * [off - h, off) and the tag after the payload. *start = off - h; returns
 * the packet length h + n + SS_AEAD_TAG_LEN, -ENOSPC when off < h or the tag
 * would pass cap, -EINVAL for bad arguments, or -errno. */
long ss_2022_udp_seal(ss_2022_udp_t *u, ss_2022_udp_session_t *s, const ss_2022_udp_msg_t *msg,
		      uint8_t *buf, size_t off, size_t n, size_t cap, size_t *start);

typedef struct ss_2022_udp_pkt {
	uint64_t session_id;
	uint64_t packet_id;
	ss_2022_user_t *user; /* server with users: who sent it */
	uint64_t timestamp;
	uint64_t client_session_id; /* server to client packets */
	ss_addr_t addr;             /* target (to a server) or source (to a client) */
	uint8_t *addr_raw;          /* its encoding, inside buf, just before the payload */
	size_t addr_len;
	uint8_t *payload; /* inside buf */
	size_t payload_len;
	ss_2022_err_t err;
	/* between open_head and open_body */
	uint8_t *body;
	size_t body_len;
	uint8_t nonce[12];
	bool opened;
} ss_2022_udp_pkt_t;

/* First half of opening a packet in place: decrypts the separate header
 * (and identity header on a multi-user server) or, for ChaCha20, opens the
 * whole packet, so p->session_id, p->packet_id and p->user are known: the
 * caller finds the session, may check its window, then calls open_body.
 * SS_OK or SS_ERR with p->err (SS_2022_E_LENGTH, _USER, _AUTH). */
int ss_2022_udp_open_head(ss_2022_udp_t *u, uint8_t *buf, size_t len, ss_2022_udp_pkt_t *p);
/* Second half: opens the body with session s (started for p->session_id
 * and p->user; unused for ChaCha20, may be NULL then) and validates the
 * main header: type, timestamp against now, padding, address. SS_OK with
 * the fields and payload in p, or SS_ERR with p->err. */
int ss_2022_udp_open_body(ss_2022_udp_t *u, ss_2022_udp_session_t *s, ss_2022_udp_pkt_t *p,
			  uint64_t now);

#endif
