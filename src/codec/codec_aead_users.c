/* SPDX-License-Identifier: MIT */
/* SIP004 AEAD with several users on one port, as outline-ss-server serves
 * its access keys: nothing on the wire names the user, so a server tells
 * them apart by which user's key opens what the client sent. A stream's
 * salt and first length block (salt_len + 18 bytes) are tried with each
 * user's key; a datagram is opened whole with each. The user a client's
 * address last matched is tried first (a small table per worker). No
 * user matching is refused as a wrong key is on a port of one user.
 *
 * Users may have methods of their own (any SIP004 one): a direction's
 * state holds one cipher state per algorithm the users have, set up once
 * per slot, so a connection never allocates whatever its user's method. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "util/result.h"

#define AU_ALGS 3 /* ss_aead_alg_t */
#define AU_CACHE 1024

/* Which user a client's address last matched: index + 1, 0 for none. */
typedef struct au_seen {
	uint8_t ip[16]; /* IPv6, or IPv4 mapped */
	uint32_t user;
} au_seen_t;

typedef struct ss_aead_users {
	const ss_config_user_t *v;
	size_t n;
	size_t
	    need; /* the longest salt + a length block: a first flight's bytes to tell its user */
	const ss_method_t *of_alg[AU_ALGS]; /* a method of each algorithm in use, NULL if none */
	uint64_t seed[2];                   /* random: peers cannot aim collisions */
	au_seen_t seen[AU_CACHE];
	uint8_t scratch[1 << 16]; /* a datagram's plaintext while it is tried */
} ss_aead_users_t;

/* A TCP direction: the stream of the user's algorithm. */
typedef struct au_dir {
	ss_aead_stream_t s[AU_ALGS];
	const ss_config_user_t *user; /* NULL until known */
	uint8_t cur;                  /* s[cur] is the user's */
	bool dead;                    /* no user's key opened it */
	bool has_ip;
	uint8_t ip[16]; /* a decoder's client */
} au_dir_t;

/* UDP: the relay's cipher states, and an association's user. */
typedef struct au_udp {
	ss_aead_t a[AU_ALGS];
} au_udp_t;

typedef struct au_assoc {
	const ss_config_user_t *user;
} au_assoc_t;

/* What an opened datagram keeps in ss_codec_dgram_t.priv. */
typedef struct au_dgram {
	ss_codec_pkt_t p; /* first: ss_codec_dgram_by_source puts it there */
	const ss_config_user_t *user;
} au_dgram_t;
_Static_assert(sizeof(au_dgram_t) <= SS_CODEC_DGRAM_PRIV, "grow SS_CODEC_DGRAM_PRIV");

static ss_aead_users_t *au(ss_codec_t *k)
{
	return ss_codec_priv(k)->aeadu;
}

/* ---- The table of who came from where ---- */

static bool au_ip(const struct sockaddr *sa, uint8_t ip[static 16])
{
	if (sa->sa_family == AF_INET6) {
		memcpy(ip, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, 16);
		return true;
	}
	if (sa->sa_family != AF_INET)
		return false;
	memset(ip, 0, 10);
	ip[10] = ip[11] = 0xff;
	memcpy(ip + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	return true;
}

static au_seen_t *au_slot(ss_aead_users_t *u, const uint8_t ip[static 16])
{
	uint64_t a, b;

	memcpy(&a, ip, 8);
	memcpy(&b, ip + 8, 8);
	a = (a ^ u->seed[0]) * 0x9e3779b97f4a7c15u;
	b = (b ^ u->seed[1]) * 0xc2b2ae3d27d4eb4fu;
	a ^= b ^ (a >> 29) ^ (b >> 32);
	return &u->seen[(a * 0x165667b19e3779f9u) >> 54 & (AU_CACHE - 1)];
}

/* The index of the user to try first for ip: the one it last matched. */
static size_t au_first(ss_aead_users_t *u, bool has_ip, const uint8_t *ip)
{
	const au_seen_t *e = has_ip ? au_slot(u, ip) : NULL;

	return e && e->user && e->user <= u->n && memcmp(e->ip, ip, 16) == 0 ? e->user - 1 : 0;
}

static void au_remember(ss_aead_users_t *u, bool has_ip, const uint8_t *ip, size_t user)
{
	au_seen_t *e;

	if (!has_ip)
		return;
	e = au_slot(u, ip);
	memcpy(e->ip, ip, 16);
	e->user = (uint32_t)user + 1;
}

/* ---- Setup ---- */

void ss_codec_aead_users_free(ss_aead_users_t *u)
{
	if (!u)
		return;
	ss_wipe(u->scratch, sizeof(u->scratch));
	free(u);
}

/* The replay pools of a port of one user (a salt is refused whichever
 * user's stream it opened), then the users. */
static int au_server_setup(ss_codec_t *k, const ss_config_t *cfg, char *err, size_t errlen)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);
	size_t cap = (size_t)cfg->replay_capacity, salt = 0;
	ss_aead_users_t *u;

	if (!(kp->pool = ss_codec_replay_pool(k, 0, cap, 0)) ||
	    (cfg->mode != SS_MODE_TCP_ONLY && !(kp->udp_pool = ss_codec_replay_pool(k, 1, cap, 0))))
		return ss_codec_pool_error(cfg, err, errlen);
	if (!(u = kp->aeadu = calloc(1, sizeof(*u)))) {
		snprintf(err, errlen, "cannot set up the users: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	u->v = cfg->users;
	u->n = cfg->n_users;
	for (size_t i = 0; i < u->n; i++) {
		const ss_method_t *m = u->v[i].method;
		if (!u->of_alg[m->alg])
			u->of_alg[m->alg] = m;
		if (m->salt_len > salt)
			salt = m->salt_len;
	}
	u->need = salt + SS_AEAD_CHUNK_HDR;
	ss_random_bytes(u->seed, sizeof(u->seed));
	/* A datagram is received far enough ahead for the longest salt. */
	k->udp_rx_lead = salt;
	return 0;
}

/* ---- TCP ---- */

static int au_init(ss_codec_t *k, void *st)
{
	const ss_aead_users_t *u = au(k);
	au_dir_t *d = st;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	for (int a = 0; a < AU_ALGS && rc == 0; a++)
		if (u->of_alg[a])
			rc = ss_aead_stream_init(&d->s[a], u->of_alg[a], ss_codec_priv(k)->be);
	return rc;
}

static void au_reset(ss_codec_t *k, void *st)
{
	au_dir_t *d = st;
	(void)k;

	for (int a = 0; a < AU_ALGS; a++)
		if (d->s[a].be)
			ss_aead_stream_reset(&d->s[a]);
	d->user = NULL;
	d->dead = d->has_ip = false;
	ss_wipe(d->ip, sizeof(d->ip));
}

static void au_free(ss_codec_t *k, void *st)
{
	au_dir_t *d = st;
	(void)k;

	for (int a = 0; a < AU_ALGS; a++)
		ss_aead_stream_free(&d->s[a]);
}

static void au_start(ss_codec_t *k, void *enc, void *dec)
{
	(void)k;
	((au_dir_t *)enc)->user = ((au_dir_t *)dec)->user = NULL;
}

static void au_peer(ss_codec_t *k, void *dec, const struct sockaddr *from)
{
	au_dir_t *d = dec;
	(void)k;

	d->has_ip = au_ip(from, d->ip);
}

/* The answer goes with the request's user's method and key. */
static int au_bind(ss_codec_t *k, const void *req, void *other)
{
	const au_dir_t *r = req;
	au_dir_t *o = other;
	(void)k;

	if (!r->user)
		return -EINVAL;
	o->user = r->user;
	o->cur = (uint8_t)r->user->method->alg;
	o->s[o->cur].method = r->user->method;
	return 0;
}

static int au_seal(ss_codec_t *k, void *enc, uint8_t *buf, size_t total, uint64_t now,
		   const ss_addr_t *req_target, struct iovec *iov, size_t *niov)
{
	au_dir_t *d = enc;
	(void)now;
	(void)req_target;

	if (!d->user)
		return SS_ERR;
	return ss_codec_aead_seal_stream(k, &d->s[d->cur], d->user->key, buf, total, iov, niov);
}

/* Which user's key opens the stream's first length block: SS_OK (d->user
 * set, its stream past the salt), SS_AGAIN (too few bytes yet: as many are
 * awaited whatever the users, so the answer never depends on how the
 * bytes were split) or SS_ERR (none). */
static int au_identify(ss_codec_t *k, au_dir_t *d, const uint8_t *buf, size_t len)
{
	ss_aead_users_t *u = au(k);
	size_t first;

	if (len < u->need)
		return SS_AGAIN;
	first = au_first(u, d->has_ip, d->ip);
	for (size_t t = 0; t < u->n; t++) {
		size_t i = t == 0 ? first : t <= first ? t - 1 : t;
		const ss_config_user_t *user = &u->v[i];
		ss_aead_stream_t *s = &d->s[user->method->alg];

		s->method = user->method;
		if (ss_aead_dec_try(s, user->key, buf, ss_codec_priv(k)->pool) == 0) {
			d->user = user;
			d->cur = (uint8_t)user->method->alg;
			au_remember(u, d->has_ip, d->ip, i);
			return SS_OK;
		}
	}
	return SS_ERR;
}

static int au_decode(ss_codec_t *k, void *dec, uint8_t *buf, size_t len, uint64_t now,
		     size_t *consumed, ss_span_t *spans, size_t max, size_t *nspans,
		     ss_codec_hdr_t *hdr)
{
	au_dir_t *d = dec;
	size_t skip = 0;
	int rc;
	(void)now;

	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	*consumed = *nspans = 0;
	if (d->dead)
		return SS_ERR;
	if (!d->user) {
		rc = au_identify(k, d, buf, len);
		if (rc == SS_AGAIN)
			return SS_OK;
		if (rc != SS_OK) {
			d->dead = true;
			return SS_ERR;
		}
		skip = d->user->method->salt_len;
	}
	/* Every call names the user: the relay may read it from any of them. */
	if (hdr)
		hdr->user = d->user->name;
	rc = ss_aead_dec(&d->s[d->cur], buf + skip, len - skip, consumed, spans, max, nspans);
	*consumed += skip;
	return rc;
}

static const char *au_why(ss_codec_t *k, const void *dec)
{
	const au_dir_t *d = dec;
	(void)k;

	if (d->user && d->s[d->cur].replayed)
		return "repeated salt, possible replay attack";
	return "authentication failed (no user's password or key opens it, or not a "
	       "Shadowsocks peer)";
}

/* ---- UDP ---- */

static int au_udp_init(ss_codec_t *k, void *rst)
{
	const ss_aead_users_t *u = au(k);
	au_udp_t *r = rst;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	for (int a = 0; a < AU_ALGS && rc == 0; a++)
		if (u->of_alg[a])
			rc = ss_codec_priv(k)->be->aead_init(&r->a[a], (ss_aead_alg_t)a);
	return rc;
}

static void au_udp_free(ss_codec_t *k, void *rst)
{
	au_udp_t *r = rst;

	for (int a = 0; a < AU_ALGS; a++)
		ss_codec_priv(k)->be->aead_free(&r->a[a]);
}

static void au_assoc_reset(ss_codec_t *k, void *rst, void *ast)
{
	(void)k;
	(void)rst;
	((au_assoc_t *)ast)->user = NULL;
}

/* An answer to the association's user, with its method and key. */
static long au_udp_seal(ss_codec_t *k, void *rst, void *ast, uint8_t *buf, size_t cap,
			uint8_t *addr, size_t addr_len, size_t n, uint64_t now, uint8_t **out)
{
	const ss_config_user_t *user = ast ? ((au_assoc_t *)ast)->user : NULL;
	au_udp_t *r = rst;
	(void)now;

	if (!user)
		return -EINVAL;
	if ((size_t)(addr - buf) < user->method->salt_len)
		return -ENOSPC;
	*out = addr - user->method->salt_len;
	return ss_aead_seal_packet(user->method, ss_codec_priv(k)->be, &r->a[user->method->alg],
				   user->key, addr, addr_len + n, *out, cap - (size_t)(*out - buf));
}

/* Tries user i's key on the datagram; on success its plaintext is moved
 * where opening in place would have put it. */
static long au_udp_try(ss_codec_t *k, au_udp_t *r, size_t i, uint8_t *wire, size_t len)
{
	ss_aead_users_t *u = au(k);
	const ss_config_user_t *user = &u->v[i];
	const ss_method_t *m = user->method;
	long n = ss_aead_open_packet_to(m, ss_codec_priv(k)->be, &r->a[m->alg], user->key, wire,
					len, u->scratch);

	if (n >= 0)
		memcpy(wire + m->salt_len, u->scratch, (size_t)n);
	return n;
}

/* A client's datagram, opened whole with the first user's key that opens
 * it; its association is its client's address. */
static const char *au_udp_open_request(ss_codec_t *k, void *rst, uint8_t *wire, size_t len,
				       uint64_t now, const struct sockaddr *from, socklen_t fromlen,
				       ss_codec_dgram_t *dg)
{
	ss_aead_users_t *u = au(k);
	au_dgram_t *d = (au_dgram_t *)ss_codec_dgram_by_source(dg, from, fromlen);
	uint8_t ip[16];
	bool has_ip = au_ip(from, ip);
	size_t first = au_first(u, has_ip, ip), i = 0, used;
	long n = -1;
	(void)now;

	if (len > sizeof(u->scratch))
		return "failed to decrypt";
	for (size_t t = 0; t < u->n && n < 0; t++) {
		i = t == 0 ? first : t <= first ? t - 1 : t;
		n = au_udp_try(k, rst, i, wire, len);
	}
	if (n < 0)
		return "failed to decrypt";
	d->user = &u->v[i];
	au_remember(u, has_ip, ip, i);
	if (ss_saltpool_check_add(ss_codec_priv(k)->udp_pool, wire, d->user->method->salt_len, 0) !=
	    0)
		return "repeated salt, possible replay";
	uint8_t *plain = wire + d->user->method->salt_len;
	if (ss_addr_parse(plain, (size_t)n, &d->p.addr, &used) != SS_OK)
		return "bad address header";
	d->p.addr_raw = plain;
	d->p.payload = plain + used;
	d->p.payload_len = (size_t)n - used;
	return NULL;
}

/* An association answers the user its client's address last sent as:
 * a new socket of another user may take a port an old one left, and the
 * answers go where the datagrams come from. */
static const char *au_udp_accept(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *dg,
				 uint64_t now, ss_codec_pkt_t *p)
{
	if (ast)
		((au_assoc_t *)ast)->user = ((const au_dgram_t *)dg->priv)->user;
	return ss_codec_udp_accept_opened(k, rst, ast, dg, now, p);
}

static int au_udp_adopt(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *dg)
{
	(void)k;
	(void)rst;
	((au_assoc_t *)ast)->user = ((const au_dgram_t *)dg->priv)->user;
	return 0;
}

static const char *au_udp_user(ss_codec_t *k, const ss_codec_dgram_t *dg)
{
	const au_dgram_t *d = (const au_dgram_t *)dg->priv;
	(void)k;

	return d->user ? d->user->name : NULL;
}

const ss_codec_ops_t ss_codec_aead_users = {
    .name = "SIP004 AEAD, several users",
    .state_size = sizeof(au_dir_t),
    .describe = ss_codec_aead_describe,
    .server_setup = au_server_setup,
    .init = au_init,
    .reset = au_reset,
    .free = au_free,
    .start = au_start,
    .peer = au_peer,
    .bind = au_bind,
    .put_target = ss_codec_target_inline,
    .slot0 = ss_codec_slot0_full,
    .seal = au_seal,
    .decode = au_decode,
    .why = au_why,
    .udp_relay_size = sizeof(au_udp_t),
    .udp_assoc_size = sizeof(au_assoc_t),
    .udp_init = au_udp_init,
    .udp_free = au_udp_free,
    .udp_assoc_reset = au_assoc_reset,
    .udp_seal = au_udp_seal,
    .udp_open_request = au_udp_open_request,
    .udp_accept = au_udp_accept,
    .udp_adopt = au_udp_adopt,
    .udp_user = au_udp_user,
};
