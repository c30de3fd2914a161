/* SPDX-License-Identifier: MIT */
#include "codec/codec_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/result.h"

/* The one place that knows which codec serves which method. */
static void codec_pick(ss_codec_t *k)
{
	switch (ss_codec_priv(k)->method->kind) {
	case SS_METHOD_AEAD:
		k->ops = &ss_codec_aead;
		break;
	case SS_METHOD_2022:
		k->ops = &ss_codec_2022;
		break;
	case SS_METHOD_NONE:
	default:
		k->ops = &ss_codec_none;
		break;
	}
	k->ops->describe(k);
}

void ss_codec_setup_client(ss_codec_t *k, const ss_method_t *method, const uint8_t *key,
			   const ss_psk_list_t *psks, const ss_crypto_backend_t *be)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);

	memset(k, 0, sizeof(*k));
	kp->method = method;
	kp->be = be;
	kp->key = key;
	kp->psks = psks;
	codec_pick(k);
}

static int codec_setup_server(ss_codec_t *k, const ss_config_t *cfg, bool server, char *err,
			      size_t errlen)
{
	int rc;

	ss_codec_priv(k)->server = server;
	/* A SIP004 port with users tells them apart by their keys. */
	if (server && cfg->n_users && k->ops == &ss_codec_aead)
		k->ops = &ss_codec_aead_users;
	if (server && k->ops->server_setup &&
	    (rc = k->ops->server_setup(k, cfg, err, errlen)) < 0) {
		ss_codec_free(k);
		return rc;
	}
	return 0;
}

int ss_codec_setup(ss_codec_t *k, const ss_config_t *cfg, const ss_crypto_backend_t *be,
		   bool server, char *err, size_t errlen)
{
	ss_codec_setup_client(k, cfg->method, cfg->key, &cfg->psks, be);
	return codec_setup_server(k, cfg, server, err, errlen);
}

int ss_codec_setup_after(ss_codec_t *k, const ss_config_t *cfg, const ss_crypto_backend_t *be,
			 const ss_codec_t *prev, char *err, size_t errlen)
{
	int rc;

	ss_codec_setup_client(k, cfg->method, cfg->key, &cfg->psks, be);
	ss_codec_priv(k)->prev = prev;
	rc = codec_setup_server(k, cfg, true, err, errlen);
	ss_codec_priv(k)->prev = NULL;
	return rc;
}

bool ss_codec_keeps_records(const ss_codec_t *k, const ss_codec_t *prev)
{
	const ss_codec_priv_t *a = ss_codec_priv_const(k), *b = ss_codec_priv_const(prev);

	return (!b->pool || a->pool == b->pool) &&
	       (!b->udp_pool || !a->udp_pool || a->udp_pool == b->udp_pool);
}

int ss_codec_setup_shared(ss_codec_t *k, const ss_config_t *cfg, const ss_crypto_backend_t *be,
			  const ss_codec_t *share, char *err, size_t errlen)
{
	ss_codec_setup_client(k, cfg->method, cfg->key, &cfg->psks, be);
	ss_codec_priv(k)->share = share;
	return codec_setup_server(k, cfg, true, err, errlen);
}

ss_saltpool_t *ss_codec_replay_pool(ss_codec_t *k, int i, size_t capacity, uint64_t ttl)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);
	ss_saltpool_t *prev = NULL;

	if (kp->share)
		return i ? ss_codec_priv_const(kp->share)->udp_pool
			 : ss_codec_priv_const(kp->share)->pool;
	if (kp->prev)
		prev = i ? ss_codec_priv_const(kp->prev)->udp_pool
			 : ss_codec_priv_const(kp->prev)->pool;
	/* Salts are random: one seen under another key or method of the same
	 * kind of pool is never a real client's, and is kept all the same. */
	if (prev && ss_saltpool_is(prev, capacity, ttl))
		kp->own[i] = ss_saltpool_ref(prev);
	else
		kp->own[i] = ss_saltpool_new(capacity, ttl);
	return kp->own[i];
}

void ss_codec_free(ss_codec_t *k)
{
	ss_codec_priv_t *kp = ss_codec_priv(k);

	ss_saltpool_unref(kp->own[0]);
	ss_saltpool_unref(kp->own[1]);
	kp->own[0] = kp->own[1] = NULL;
	kp->pool = kp->udp_pool = NULL;
	ss_2022_users_free(&kp->users);
	ss_codec_aead_users_free(kp->aeadu);
	kp->aeadu = NULL;
}

bool ss_codec_same_states(const ss_codec_t *a, const ss_codec_t *b)
{
	const ss_codec_priv_t *pa = ss_codec_priv_const(a), *pb = ss_codec_priv_const(b);

	return a->ops == b->ops && pa->method == pb->method && pa->be == pb->be &&
	       pa->server == pb->server;
}

int ss_codec_global_init(void)
{
	return ss_crypto_global_init();
}

const ss_crypto_backend_t *ss_codec_backend(void)
{
	return ss_crypto_default();
}

const char *ss_codec_impl(const ss_crypto_backend_t *be, const ss_method_t *m, char *buf,
			  size_t len)
{
	return ss_crypto_describe(be, m, buf, len);
}

size_t ss_codec_target_inline(ss_codec_t *k, const ss_addr_t *target, uint8_t *lead, size_t room)
{
	(void)k;
	return ss_addr_encode(target, lead, room);
}

size_t ss_codec_slot0_full(ss_codec_t *k, const void *enc, const ss_addr_t *req_target)
{
	(void)enc;
	(void)req_target;
	return k->layout.payload;
}

int ss_codec_pool_error(const ss_config_t *cfg, char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot reserve the salt pools for %ld salts", cfg->replay_capacity);
	return -ENOMEM;
}

ss_codec_pkt_t *ss_codec_dgram_by_source(ss_codec_dgram_t *d, const struct sockaddr *from,
					 socklen_t fromlen)
{
	_Static_assert(sizeof(ss_codec_pkt_t) <= SS_CODEC_DGRAM_PRIV, "grow SS_CODEC_DGRAM_PRIV");

	memcpy(&d->key, from, fromlen);
	d->key_len = fromlen;
	return (ss_codec_pkt_t *)d->priv;
}

const char *ss_codec_udp_accept_opened(ss_codec_t *k, void *rst, void *ast, ss_codec_dgram_t *d,
				       uint64_t now, ss_codec_pkt_t *p)
{
	(void)k;
	(void)rst;
	(void)ast;
	(void)now;
	*p = *(const ss_codec_pkt_t *)d->priv;
	return NULL;
}
