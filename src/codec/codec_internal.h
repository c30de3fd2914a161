/* SPDX-License-Identifier: MIT */
#ifndef SS_CODEC_CODEC_INTERNAL_H
#define SS_CODEC_CODEC_INTERNAL_H

/* What the codecs share and the relay does not see: the crypto they run
 * on, the part of ss_codec_t that is theirs, and helpers. */
#include "codec/codec.h"
#include "config/config.h"
#include "crypto/aead.h"
#include "crypto/aead2022.h"
#include "crypto/method.h"
#include "crypto/primitives.h"
#include "crypto/saltpool.h"

/* The codec's own part of ss_codec_t (its priv). */
typedef struct ss_codec_priv {
	const ss_method_t *method;
	const ss_crypto_backend_t *be;
	bool server;
	const uint8_t *key;        /* cfg->key: the key, or SIP022's user PSK / server PSK */
	const ss_psk_list_t *psks; /* cfg->psks: SIP022 identity PSKs, then the user PSK */
	/* server: salts seen (SIP004: the last replay_capacity salts of
	 * connections whose first chunk authenticated, and apart from them
	 * those of datagrams that opened; SIP022: the request salts of the last
	 * 60 s, its datagrams carrying session and packet ids instead) */
	ss_saltpool_t *pool, *udp_pool; /* NULL: none */
	/* The TCP and UDP pools this codec holds (ss_saltpool_new's, made or
	 * taken over from prev), or NULL. */
	ss_saltpool_t *own[2];
	/* Another server codec whose replay pools this one uses (workers after
	 * the first use the first's): a salt is refused whichever sees it. */
	const struct ss_codec *share;
	/* During setup only: the server codec of the configuration before a
	 * reload, whose pools this one holds too where they fit. */
	const struct ss_codec *prev;
	ss_2022_users_t users;       /* SIP022 server with "users" */
	struct ss_aead_users *aeadu; /* SIP004 server with "users" */
} ss_codec_priv_t;

_Static_assert(sizeof(ss_codec_priv_t) <= SS_CODEC_PRIV_SIZE, "grow SS_CODEC_PRIV_SIZE");
_Static_assert(_Alignof(ss_codec_priv_t) <= 16, "align ss_codec_t.priv further");

static inline ss_codec_priv_t *ss_codec_priv(ss_codec_t *k)
{
	return (ss_codec_priv_t *)k->priv;
}

static inline const ss_codec_priv_t *ss_codec_priv_const(const ss_codec_t *k)
{
	return (const ss_codec_priv_t *)k->priv;
}

/* The end of a chunked layout's last slot's tag. */
#define SS_CODEC_END(first, stride, slots) ((first) + (slots) * (stride)-SS_AEAD_CHUNK_HDR)

/* A layout's checks against the interface: it fits the relay buffer, slot 0
 * and its tag end before the handshake area, and it has few enough slots. */
#define SS_CODEC_LAYOUT_FITS(name, first, slot, stride, slots)                                     \
	_Static_assert(SS_CODEC_END(first, stride, slots) <= SS_RELAY_BUF_SIZE,                    \
		       name " overflows the relay buffer");                                        \
	_Static_assert((first) + (slot) + SS_AEAD_TAG_LEN <= SS_HS_OFF,                            \
		       name " slot 0 overlaps the handshake area");                                \
	_Static_assert((slots) <= SS_CODEC_MAX_SLOTS, "SS_CODEC_MAX_SLOTS")

/* server_setup's error when a salt pool cannot be reserved: -ENOMEM. */
int ss_codec_pool_error(const ss_config_t *cfg, char *err, size_t errlen);
/* For a server's setup: its replay pool i (0: TCP, 1: UDP), the shared
 * codec's, or else prev's pool i if it is of this kind, or else a new one of
 * capacity salts kept ttl seconds (0: the last capacity salts, first in
 * first out). NULL when it cannot be reserved. */
ss_saltpool_t *ss_codec_replay_pool(ss_codec_t *k, int i, size_t capacity, uint64_t ttl);
/* put_target for a codec that sends the target in front of the plaintext. */
size_t ss_codec_target_inline(ss_codec_t *k, const ss_addr_t *target, uint8_t *lead, size_t room);
/* slot0 for a codec whose slot 0 is always whole. */
size_t ss_codec_slot0_full(ss_codec_t *k, const void *enc, const ss_addr_t *req_target);
/* For a codec whose server datagrams open whole in udp_open_request: keys
 * d by its source and gives where to put the opened datagram... */
ss_codec_pkt_t *ss_codec_dgram_by_source(ss_codec_dgram_t *d, const struct sockaddr *from,
					 socklen_t fromlen);
/* ...and udp_accept for it. */
const char *ss_codec_udp_accept_opened(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d,
				       uint64_t now, ss_codec_pkt_t *p);

/* SIP004's layout and datagram room (ops->describe)... */
void ss_codec_aead_describe(ss_codec_t *k);
/* ...and its seal, of stream s (its method's) with key. */
int ss_codec_aead_seal_stream(const ss_codec_t *k, struct ss_aead_stream *s, const uint8_t *key,
			      uint8_t *buf, size_t total, struct iovec *iov, size_t *niov);
/* What a SIP004 server with users set up (codec_aead_users.c). Safe on
 * NULL. */
void ss_codec_aead_users_free(struct ss_aead_users *u);

extern const ss_codec_ops_t ss_codec_aead;       /* SIP004 */
extern const ss_codec_ops_t ss_codec_aead_users; /* SIP004, several users on one port */
extern const ss_codec_ops_t ss_codec_2022;       /* SIP022, SIP023 */
extern const ss_codec_ops_t ss_codec_none;       /* no encryption */

#endif
