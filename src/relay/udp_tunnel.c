/* SPDX-License-Identifier: MIT */
/* ss-tunnel's UDP front: every datagram goes to the one target the
 * configuration names (tunnel_address), and answers go back as they are,
 * plain payloads. */
#include "proto/addr.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"

/* Right after the target's address, which goes at SS_UDP_HEAD. */
static size_t tunnel_read_off(const ss_udp_relay_t *u)
{
	uint8_t scratch[SS_ADDR_MAX_ENCODED];

	return SS_UDP_HEAD + ss_addr_encode(&u->inst->cfg->tunnel_addr, scratch, sizeof(scratch));
}

static ss_udp_assoc_t *tunnel_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				   size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d)
{
	d->addr = buf + SS_UDP_HEAD;
	d->addr_len = ss_addr_encode(&u->inst->cfg->tunnel_addr, d->addr, SS_ADDR_MAX_ENCODED);
	d->len = n;
	return ss_udp_client_assoc(u, l, r, d);
}

static void tunnel_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p)
{
	ss_udp_client_answer(u, a, p->payload, p->payload_len);
}

const ss_udp_front_t ss_udp_tunnel_front = {
    .read_off = tunnel_read_off,
    .take = tunnel_take,
    .answer = tunnel_answer,
};
