/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 (SIP022, SIP023 identity headers) as a codec, over
 * crypto/aead2022.c. TCP: a client's request header carries the target and
 * the first slot; the response to it names the request's salt (bind). UDP:
 * an association is an application's address on a client and a client
 * session on a server; each side keeps the peer's session and a window of
 * its packet ids, updated only once a packet has authenticated, and a
 * session never seen before is tried on one of the relay's scratch states
 * first and only then takes an association. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "crypto/window.h"
#include "util/log.h"
#include "util/result.h"

/* The relay buffer as this codec's encoder fills it: the stream's header
 * before slot 0, then a chunk per slot, each slot's plaintext between its
 * sealed length and its tag.
 *
 *   first = 1344, stride = 65442, payload = 65408, 4 slots:
 *
 *   0        1344-h     1344                 66752  66768     66786
 *   |         [ header ][ slot 0 plaintext  ][ tag ][len+tag][ slot 1 ...
 *
 * The header is a request's (salt, identity headers, fixed and variable
 * header, at most SS_2022_REQ_HDR_MAX bytes) or a response's; a request's
 * slot 0 takes at most what its variable header leaves (c22_slot0). */
#define C22_FIRST ((SS_2022_REQ_HDR_MAX + 63) & ~63)
/* The protocol's maximum rounded down to a multiple of 128, on which
 * OpenSSL's ChaCha20-Poly1305 runs a third faster. */
#define C22_SLOT (SS_2022_MAX_PAYLOAD & ~127)
#define C22_STRIDE (C22_SLOT + SS_2022_CHUNK_OVERHEAD)
#define C22_SLOTS 4
SS_CODEC_LAYOUT_FITS("SIP022", C22_FIRST, C22_SLOT, C22_STRIDE, C22_SLOTS);
/* The largest layout: the relay buffer is its size. */
_Static_assert(SS_RELAY_BUF_SIZE == ((SS_CODEC_END(C22_FIRST, C22_STRIDE, C22_SLOTS) + 63) & ~63),
	       "SS_RELAY_BUF_SIZE is SIP022's buffer, rounded up to 64 bytes");
_Static_assert(SS_AEAD_TAG_LEN <= SS_CODEC_UDP_TAIL_MAX, "SS_CODEC_UDP_TAIL_MAX");

/* A datagram is its separate header, then the sealed body and its tag,
 * opened where it lands. */
static void c22_describe(ss_codec_t *k)
{
	k->layout = (ss_codec_layout_t){C22_FIRST, C22_STRIDE, C22_SLOT, C22_SLOTS};
	k->udp_rx_lead = 0;
	k->udp_tail = SS_AEAD_TAG_LEN;
}

static ss_2022_users_t *c22_users(ss_codec_t *k)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);

	return kp->users.n ? &kp->users : NULL;
}

/* The PSK that keys a client's sessions: the last of its list. */
static const uint8_t *c22_user_psk(const ss_codec_t *k)
{
	const ss_psk_list_t *psks = ss_codec_priv_const(k)->psks;

	return psks->keys[psks->n - 1];
}

/* The request salts of the last 60 s, and the users. */
static int c22_server_setup(ss_codec_t *k, const ss_config_t *cfg, char *err, size_t errlen)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);
	int rc;

	if (!(kp->pool =
		  ss_codec_replay_pool(k, 0, (size_t)cfg->replay_capacity, SS_2022_SALT_TTL)))
		return ss_codec_pool_error(cfg, err, errlen);
	if (!cfg->n_users)
		return 0;
	rc = ss_2022_users_init(&kp->users, cfg->method, kp->be, cfg->n_users);
	for (size_t i = 0; rc == 0 && i < cfg->n_users; i++)
		rc = ss_2022_users_add(&kp->users, cfg->users[i].key, (void *)cfg->users[i].name);
	if (rc < 0)
		snprintf(err, errlen, "cannot set up the users: %s", strerror(-rc));
	return rc;
}

static int c22_init(ss_codec_t *k, void *st)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);

	return ss_2022_stream_init(st, kp->method, kp->be);
}

static void c22_reset(ss_codec_t *k, void *st)
{
	(void)k;
	ss_2022_stream_reset(st);
}

static void c22_free(ss_codec_t *k, void *st)
{
	(void)k;
	ss_2022_stream_free(st);
}

/* A server's decoder checks requests (and their salts); a client's waits
 * for its request to be sealed (bind). */
static void c22_start(ss_codec_t *k, void *enc, void *dec)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);

	(void)enc;
	if (kp->server)
		ss_2022_dec_start_server(dec, kp->key, c22_users(k), kp->pool);
}

static int c22_bind(ss_codec_t *k, const void *req, void *other)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);
	const ss_2022_stream_t *r = req;

	if (kp->server)
		return ss_2022_enc_start_response(other, r->user ? r->user->key : kp->key, r->salt);
	ss_2022_dec_start_client(other, c22_user_psk(k), r->salt);
	return 0;
}

static size_t c22_put_target(ss_codec_t *k, const ss_addr_t *target, uint8_t *lead, size_t room)
{
	(void)k;
	(void)target;
	(void)lead;
	(void)room;
	return 0; /* the request header carries it */
}

/* A request's first slot shares the variable header's 0xFFFF bytes with the
 * address and the padding length. */
static size_t c22_slot0(ss_codec_t *k, const void *enc, const ss_addr_t *req_target)
{
	uint8_t addr[SS_ADDR_MAX_ENCODED];
	size_t room;

	(void)enc;
	if (!req_target)
		return k->layout.payload;
	room = SS_2022_MAX_PAYLOAD - 2 - ss_addr_encode(req_target, addr, sizeof(addr));
	return room < k->layout.payload ? room : k->layout.payload;
}

/* The first unit is the request header carrying slot 0 (padding alone when
 * total is 0), or the response header with slot 0 as its first chunk;
 * every other unit is a chunk. Slot 0 of a request may be shorter than the
 * others, whose chunks then start after a gap: a second piece of output. */
static int c22_seal(ss_codec_t *k, void *enc, uint8_t *buf, size_t total, uint64_t now,
		    const ss_addr_t *req_target, struct iovec *iov, size_t *niov)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);
	const ss_codec_layout_t *l = &k->layout;
	ss_2022_stream_t *s = enc;
	uint8_t *payload = buf + l->first, *start;
	size_t slot0 = c22_slot0(k, enc, req_target);
	size_t n = total < slot0 ? total : slot0, len;

	if (s->have_header) {
		start = payload - SS_2022_CHUNK_HDR;
		if (n && ss_2022_enc_chunk(s, start, n) < 0)
			return SS_ERR;
		len = n ? n + SS_2022_CHUNK_OVERHEAD : 0;
	} else if (!kp->server) {
		uint8_t addr[SS_ADDR_MAX_ENCODED];
		ss_2022_request_t req = {.addr = addr, .padding = SS_2022_PAD_AUTO, .now = now};
		long h;

		if (!req_target)
			return SS_ERR;
		req.addr_len = ss_addr_encode(req_target, addr, sizeof(addr));
		h = ss_2022_enc_request(s, kp->psks, &req, payload, n, l->first);
		if (h < 0)
			return SS_ERR;
		start = payload - h;
		len = (size_t)h + n + SS_AEAD_TAG_LEN;
	} else {
		size_t h = SS_2022_RESP_HDR_LEN(kp->method);

		start = payload - h;
		if (n == 0 || ss_2022_enc_response(s, start, n, now) < 0)
			return SS_ERR;
		len = h + n + SS_AEAD_TAG_LEN;
	}
	*niov = 0;
	if (len)
		iov[(*niov)++] = (struct iovec){start, len};
	total -= n;
	uint8_t *run = payload + l->stride - SS_2022_CHUNK_HDR, *end = run;
	for (size_t i = 1; total; i++) {
		size_t m = total < l->payload ? total : l->payload;
		uint8_t *chunk = payload + i * l->stride - SS_2022_CHUNK_HDR;

		if (ss_2022_enc_chunk(s, chunk, m) < 0)
			return SS_ERR;
		end = chunk + m + SS_2022_CHUNK_OVERHEAD;
		total -= m;
	}
	if (end != run) {
		if (*niov && start + len == run)
			iov[0].iov_len += (size_t)(end - run);
		else
			iov[(*niov)++] = (struct iovec){run, (size_t)(end - run)};
	}
	return SS_OK;
}

static int c22_decode(ss_codec_t *k, void *dec, uint8_t *buf, size_t len, uint64_t now,
		      size_t *consumed, ss_span_t *spans, size_t max, size_t *nspans,
		      ss_codec_hdr_t *hdr)
{
	ss_2022_header_t h;
	int rc = ss_2022_dec(dec, buf, len, now, consumed, spans, max, nspans, &h);

	if (hdr) {
		memset(hdr, 0, sizeof(*hdr));
		if (h.done) {
			hdr->done = true;
			hdr->has_target = ss_codec_priv(k)->server;
			hdr->target = h.target;
			hdr->user = h.user ? h.user->data : NULL;
			hdr->timestamp = h.timestamp;
		}
	}
	return rc;
}

static const char *c22_why(ss_codec_t *k, const void *dec)
{
	(void)k;
	return ss_2022_strerror(((const ss_2022_stream_t *)dec)->err);
}

/* ---- UDP ---- */

/* Sessions this side holds no association for are opened on scratch states:
 * a new session until its datagram validates, or, on a server, one that
 * another worker holds, whose datagrams are opened here and handed there
 * (its client's NAT moved it). A few stay set up, by session id, so that
 * each such datagram does not derive its session's subkey again. */
#define C22_SCRATCH 8

typedef struct c22_udp {
	ss_2022_udp_t u22;
	ss_2022_udp_session_t scratch[C22_SCRATCH];
	bool started[C22_SCRATCH]; /* scratch[i] is set up for its id and user */
	unsigned last;             /* the scratch state the last datagram opened with */
} c22_udp_t;

/* One association's sessions: the one this side sends with and the peer's
 * (the client's on a server, the server's on a client). The cipher states
 * are set up on the slot's first use and kept. */
typedef struct c22_assoc {
	bool ready;         /* tx and rx set up */
	bool rx_known;      /* client: a server session has been seen */
	ss_window_t window; /* client: the packet ids of rx (a server's are in its memo) */
	ss_2022_udp_session_t tx, rx;
} c22_assoc_t;

_Static_assert(sizeof(ss_2022_udp_pkt_t) <= SS_CODEC_DGRAM_PRIV, "grow SS_CODEC_DGRAM_PRIV");

static uint64_t c22_new_id(void)
{
	uint64_t id;

	ss_random_bytes(&id, sizeof(id));
	return id;
}

static int c22_udp_init(ss_codec_t *k, void *rst)
{
	const ss_codec_priv_t *kp = ss_codec_priv(k);
	c22_udp_t *r = rst;
	int rc = kp->server
		     ? ss_2022_udp_init_server(&r->u22, kp->method, kp->be, kp->key, c22_users(k))
		     : ss_2022_udp_init_client(&r->u22, kp->method, kp->be, kp->psks);

	for (size_t i = 0; rc == 0 && i < C22_SCRATCH; i++)
		rc = ss_2022_udp_session_init(&r->u22, &r->scratch[i]);
	if (rc < 0) {
		for (size_t i = 0; i < C22_SCRATCH; i++)
			ss_2022_udp_session_free(&r->u22, &r->scratch[i]);
		ss_2022_udp_free(&r->u22);
	}
	return rc;
}

static void c22_udp_free(ss_codec_t *k, void *rst)
{
	c22_udp_t *r = rst;
	(void)k;

	for (size_t i = 0; i < C22_SCRATCH; i++)
		ss_2022_udp_session_free(&r->u22, &r->scratch[i]);
	ss_2022_udp_free(&r->u22);
}

static int c22_udp_assoc_init(ss_codec_t *k, void *rst, void *ast)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	(void)k;

	a->rx_known = false;
	ss_window_reset(&a->window);
	if (a->ready)
		return 0;
	if (ss_2022_udp_session_init(&r->u22, &a->tx) < 0 ||
	    ss_2022_udp_session_init(&r->u22, &a->rx) < 0) {
		ss_2022_udp_session_free(&r->u22, &a->tx);
		return -ENOMEM;
	}
	a->ready = true;
	return 0;
}

/* A client's association sends with a session of its own from the start. */
static int c22_udp_assoc_start(ss_codec_t *k, void *rst, void *ast)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	(void)k;

	return ss_2022_udp_session_start(&r->u22, &a->tx, c22_new_id(), NULL);
}

static void c22_udp_assoc_reset(ss_codec_t *k, void *rst, void *ast)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	(void)k;

	ss_2022_udp_session_reset(&r->u22, &a->tx);
	ss_2022_udp_session_reset(&r->u22, &a->rx);
}

static void c22_udp_assoc_free(ss_codec_t *k, void *rst, void *ast)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	(void)k;

	ss_2022_udp_session_free(&r->u22, &a->tx);
	ss_2022_udp_session_free(&r->u22, &a->rx);
	a->ready = false;
}

static long c22_udp_seal(ss_codec_t *k, void *rst, void *ast, uint8_t *buf, size_t cap,
			 uint8_t *addr, size_t addr_len, size_t n, uint64_t now, uint8_t **out)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	ss_2022_udp_msg_t msg = {.addr = addr,
				 .addr_len = addr_len,
				 .now = now,
				 .client_session_id = ss_codec_priv(k)->server ? a->rx.id : 0};
	size_t start;
	long w = ss_2022_udp_seal(&r->u22, &a->tx, &msg, buf, (size_t)(addr + addr_len - buf), n,
				  cap, &start);

	*out = buf + start;
	return w;
}

/* a takes the session a packet was just opened with on a scratch state,
 * which takes a's old state (reset) in its place. */
static void c22_adopt(c22_udp_t *r, c22_assoc_t *a)
{
	ss_2022_udp_session_t t = a->rx;

	a->rx = r->scratch[r->last];
	r->scratch[r->last] = t;
	r->started[r->last] = false;
}

/* Opens the body of p with the peer session of a (known), or, for a session
 * a does not know yet, with the scratch state. NULL on success, else why
 * not. The packet id is the caller's to check against a window. */
static const char *c22_open(c22_udp_t *r, c22_assoc_t *a, bool known, ss_2022_udp_pkt_t *p,
			    uint64_t now)
{
	if (known) {
		if (ss_2022_udp_open_body(&r->u22, &a->rx, p, now) != SS_OK)
			return ss_2022_strerror(p->err);
		return NULL;
	}
	unsigned i = (unsigned)(p->session_id % C22_SCRATCH);
	ss_2022_udp_session_t *s = &r->scratch[i];

	r->last = i;
	if (!r->started[i] || s->id != p->session_id || s->user != p->user) {
		r->started[i] = false;
		if (ss_2022_udp_session_start(&r->u22, s, p->session_id, p->user) < 0)
			return ss_2022_strerror(SS_2022_E_AUTH);
		r->started[i] = true;
	}
	if (ss_2022_udp_open_body(&r->u22, s, p, now) != SS_OK)
		return ss_2022_strerror(p->err);
	return NULL;
}

static void c22_take(ss_codec_pkt_t *to, const ss_2022_udp_pkt_t *p)
{
	to->addr = p->addr;
	to->addr_raw = p->addr_raw;
	to->payload = p->payload;
	to->payload_len = p->payload_len;
}

static const char *c22_udp_open_answer(ss_codec_t *k, void *rst, void *ast, uint8_t *wire,
				       size_t len, uint64_t now, ss_codec_pkt_t *out)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	ss_2022_udp_pkt_t p;
	const char *why;
	(void)k;

	if (ss_2022_udp_open_head(&r->u22, wire, len, &p) != SS_OK)
		return ss_2022_strerror(p.err);
	/* A server session id not seen before: the first answer, or the
	 * server restarted; it starts a window of its own. */
	bool known = a->rx_known && p.session_id == a->rx.id;
	if (known && !ss_window_check(&a->window, p.packet_id))
		return "packet id replayed or too old";
	if ((why = c22_open(r, a, known, &p, now)))
		return why;
	if (!known) {
		if (a->rx_known)
			ss_debug("udp: the server started a new session");
		c22_adopt(r, a);
		ss_window_reset(&a->window);
	}
	ss_window_commit(&a->window, p.packet_id);
	a->rx_known = true;
	if (p.client_session_id != a->tx.id)
		return "answer for another session";
	c22_take(out, &p);
	return NULL;
}

/* A server's association is a client session: keyed by its id. */
static const char *c22_udp_open_request(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
					uint64_t now, const struct sockaddr *from,
					socklen_t fromlen, ss_codec_dgram_t *d)
{
	c22_udp_t *r = rst;
	ss_2022_udp_pkt_t *p = (ss_2022_udp_pkt_t *)d->priv;
	struct sockaddr_in6 *key = (struct sockaddr_in6 *)&d->key;
	(void)k;
	(void)now;
	(void)from;
	(void)fromlen;

	if (ss_2022_udp_open_head(&r->u22, wire, len, p) != SS_OK)
		return ss_2022_strerror(p->err);
	/* An address family no socket has, holding the id and the user (its
	 * place in the table, the same in every worker's): never equal to a
	 * client's address, and one user cannot take another's session id. */
	uint32_t user = p->user ? (uint32_t)(p->user - r->u22.users->v) + 1 : 0;
	memset(&d->key, 0, sizeof(d->key));
	key->sin6_family = AF_UNSPEC;
	memcpy(&key->sin6_addr, &p->session_id, sizeof(p->session_id));
	memcpy(key->sin6_addr.s6_addr + sizeof(p->session_id), &user, sizeof(user));
	d->key_len = sizeof(*key);
	return NULL;
}

static const char *c22_udp_accept(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d,
				  uint64_t now, ss_codec_pkt_t *out)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	ss_2022_udp_pkt_t *p = (ss_2022_udp_pkt_t *)d->priv;
	const char *why;
	(void)k;

	if (a && a->rx.user != p->user)
		return "session of another user";
	if ((why = c22_open(r, a, a != NULL, p, now)))
		return why;
	c22_take(out, p);
	return NULL;
}

/* A new server association: the client's session, just opened on the
 * scratch state, and one of its own to answer with. */
static int c22_udp_adopt(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d)
{
	c22_udp_t *r = rst;
	c22_assoc_t *a = ast;
	ss_2022_udp_pkt_t *p = (ss_2022_udp_pkt_t *)d->priv;
	int rc = ss_2022_udp_session_start(&r->u22, &a->tx, c22_new_id(), p->user);
	(void)k;

	(void)p;
	if (rc == 0)
		c22_adopt(r, a);
	return rc;
}

/* A server remembers each client session's window of packet ids, past its
 * association: a datagram passes the time check within 30 s of the
 * server's clock either way, so one taken at t may come again until t + 60. */
static bool c22_udp_fresh(ss_codec_t *k, const void *memo, const ss_codec_dgram_t *d)
{
	const ss_2022_udp_pkt_t *p = (const ss_2022_udp_pkt_t *)d->priv;
	(void)k;

	return ss_window_check(memo, p->packet_id);
}

static void c22_udp_seen(ss_codec_t *k, void *memo, const ss_codec_dgram_t *d)
{
	const ss_2022_udp_pkt_t *p = (const ss_2022_udp_pkt_t *)d->priv;
	(void)k;

	ss_window_commit(memo, p->packet_id);
}

static const char *c22_udp_user(ss_codec_t *k, const ss_codec_dgram_t *d)
{
	const ss_2022_udp_pkt_t *p = (const ss_2022_udp_pkt_t *)d->priv;
	(void)k;

	return p->user ? p->user->data : NULL;
}

const ss_codec_ops_t ss_codec_2022 = {
    .name = "SIP022",
    .state_size = sizeof(ss_2022_stream_t),
    .describe = c22_describe,
    .server_setup = c22_server_setup,
    .init = c22_init,
    .reset = c22_reset,
    .free = c22_free,
    .start = c22_start,
    .bind = c22_bind,
    .put_target = c22_put_target,
    .slot0 = c22_slot0,
    .seal = c22_seal,
    .decode = c22_decode,
    .why = c22_why,
    .udp_relay_size = sizeof(c22_udp_t),
    .udp_assoc_size = sizeof(c22_assoc_t),
    .udp_init = c22_udp_init,
    .udp_free = c22_udp_free,
    .udp_assoc_init = c22_udp_assoc_init,
    .udp_assoc_start = c22_udp_assoc_start,
    .udp_assoc_reset = c22_udp_assoc_reset,
    .udp_assoc_free = c22_udp_assoc_free,
    .udp_seal = c22_udp_seal,
    .udp_open_answer = c22_udp_open_answer,
    .udp_open_request = c22_udp_open_request,
    .udp_accept = c22_udp_accept,
    .udp_adopt = c22_udp_adopt,
    .udp_user = c22_udp_user,
    .udp_memo_size = sizeof(ss_window_t),
    .udp_memo_ttl = 2 * SS_2022_MAX_TIME_DIFF,
    .udp_fresh = c22_udp_fresh,
    .udp_seen = c22_udp_seen,
};
