/* SPDX-License-Identifier: MIT */
/* ss-tunnel's UDP front: every datagram goes to the one target the
 * configuration names (tunnel_address), and answers go back as they are,
 * plain payloads. The DNS relay's door (relay/dns.h) is the same front
 * with the remote name server for its target. */
#include "proto/addr.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"

/* Right after the target's address, which goes at SS_UDP_HEAD. */
static size_t fixed_read_off(const ss_addr_t *target)
{
	uint8_t scratch[SS_ADDR_MAX_ENCODED];

	return SS_UDP_HEAD + ss_addr_encode(target, scratch, sizeof(scratch));
}

static ss_udp_assoc_t *fixed_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				  size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d,
				  const ss_addr_t *target)
{
	d->addr = buf + SS_UDP_HEAD;
	d->addr_len = ss_addr_encode(target, d->addr, SS_ADDR_MAX_ENCODED);
	d->len = n;
	return ss_udp_client_assoc(u, l, r, d);
}

static void fixed_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, const ss_codec_pkt_t *p)
{
	ss_udp_client_answer(u, a, p->payload, p->payload_len);
}

static size_t tunnel_read_off(const ss_udp_relay_t *u)
{
	return fixed_read_off(&u->inst->cfg->tunnel_addr);
}

static ss_udp_assoc_t *tunnel_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				   size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d)
{
	return fixed_take(u, l, buf, n, r, d, &u->inst->cfg->tunnel_addr);
}

const ss_udp_front_t ss_udp_tunnel_front = {
    .read_off = tunnel_read_off,
    .take = tunnel_take,
    .answer = fixed_answer,
};

static size_t dns_read_off(const ss_udp_relay_t *u)
{
	return fixed_read_off(&u->inst->cfg->remote_dns);
}

static ss_udp_assoc_t *dns_take(ss_udp_relay_t *u, const ss_udp_listener_t *l, uint8_t *buf,
				size_t n, const ss_udp_rxmsg_t *r, ss_udp_app_dgram_t *d)
{
	return fixed_take(u, l, buf, n, r, d, &u->inst->cfg->remote_dns);
}

const ss_udp_front_t ss_udp_dns_front = {
    .read_off = dns_read_off,
    .take = dns_take,
    .answer = fixed_answer,
};
