#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "relay/conn.h"
#include "relay/instance.h"
#include "relay/udp_internal.h"
#include "util/log.h"
#include "util/result.h"

/* The UDP relay with Shadowsocks 2022 packets (SIP022 section 3.2). A
 * client association is an application's address, as with SIP004, and
 * sends with a random session id of its own. A server association is a
 * client session: found by the id in the packet, it answers the address the
 * last valid packet came from, with a session id of its own. Each side keeps
 * the peer's session and a window of its packet ids, updated only once a
 * packet has been authenticated; a session never seen before is tried on
 * the relay's scratch state and only then takes a slot. */

static uint64_t udp2022_now(ss_udp_relay_t *u)
{
	return (uint64_t)ev_now(u->loop);
}

uint64_t ss_udp2022_new_id(void)
{
	uint64_t id;

	ss_random_bytes(&id, sizeof(id));
	return id;
}

/* a takes the session a packet was just opened with on the scratch state,
 * with a fresh window holding that packet's id. */
static void udp2022_adopt(ss_udp_relay_t *u, ss_udp_assoc_t *a, uint64_t packet_id)
{
	ss_2022_udp_session_t t = a->rx;

	a->rx = u->scratch;
	u->scratch = t;
	ss_window_reset(&a->window);
	ss_window_commit(&a->window, packet_id);
}

/* Opens the body of p with the peer session of a, or, for a session a does
 * not know yet, with the scratch state, which then becomes a's. The window
 * is checked before and committed after. NULL on success, else why not. */
static const char *udp2022_open(ss_udp_relay_t *u, ss_udp_assoc_t *a, bool known,
				ss_2022_udp_pkt_t *p)
{
	if (known) {
		if (!ss_window_check(&a->window, p->packet_id))
			return "packet id replayed or too old";
		if (ss_2022_udp_open_body(&u->u22, &a->rx, p, udp2022_now(u)) != SS_OK)
			return ss_2022_strerror(p->err);
		ss_window_commit(&a->window, p->packet_id);
		return NULL;
	}
	if (ss_2022_udp_session_start(&u->u22, &u->scratch, p->session_id, p->user) < 0 ||
	    ss_2022_udp_open_body(&u->u22, &u->scratch, p, udp2022_now(u)) != SS_OK)
		return ss_2022_strerror(p->err);
	/* Without a (a server's new session) the caller adopts it once the
	 * association is made. */
	if (a)
		udp2022_adopt(u, a, p->packet_id);
	return NULL;
}

static void udp2022_take(ss_udp_pkt_t *to, const ss_2022_udp_pkt_t *p)
{
	to->addr = p->addr;
	to->addr_raw = p->addr_raw;
	to->payload = p->payload;
	to->payload_len = p->payload_len;
}

long ss_udp2022_seal(ss_udp_relay_t *u, ss_udp_assoc_t *a, uint8_t *addr, size_t addr_len, size_t n,
		     uint8_t **out)
{
	ss_2022_udp_msg_t msg = {.addr = addr,
				 .addr_len = addr_len,
				 .now = udp2022_now(u),
				 .client_session_id = u->client ? 0 : a->rx.id};
	size_t start;
	long w = ss_2022_udp_seal(&u->u22, &a->tx, &msg, u->buf, (size_t)(addr + addr_len - u->buf),
				  n, SS_UDP_BUF_SIZE, &start);

	*out = u->buf + start;
	return w;
}

const char *ss_udp2022_open_answer(ss_udp_relay_t *u, ss_udp_assoc_t *a, uint8_t *wire, size_t len,
				   ss_udp_pkt_t *out)
{
	ss_2022_udp_pkt_t p;
	const char *why;

	if (ss_2022_udp_open_head(&u->u22, wire, len, &p) != SS_OK)
		return ss_2022_strerror(p.err);
	/* A server session id not seen before: the first answer, or the
	 * server restarted. */
	bool known = a->rx_known && p.session_id == a->rx.id;
	if ((why = udp2022_open(u, a, known, &p)))
		return why;
	if (!known && a->rx_known)
		ss_debug("udp: the server started a new session");
	a->rx_known = true;
	if (p.client_session_id != a->tx.id)
		return "answer for another session";
	udp2022_take(out, &p);
	return NULL;
}

const char *ss_udp2022_open_request(ss_udp_relay_t *u, ss_udp_listener_t *l,
				    const struct sockaddr_storage *from, socklen_t fromlen,
				    uint8_t *wire, size_t len, ss_udp_pkt_t *out,
				    ss_udp_assoc_t **ap)
{
	struct sockaddr_storage key;
	socklen_t klen;
	ss_2022_udp_pkt_t p;
	const char *why;

	if (ss_2022_udp_open_head(&u->u22, wire, len, &p) != SS_OK)
		return ss_2022_strerror(p.err);
	ss_udp_session_key(p.session_id, &key, &klen);
	ss_udp_assoc_t *a =
	    (ss_udp_assoc_t *)ss_udp_table_find(&u->table, (struct sockaddr *)&key, klen);
	if (a && a->rx.user != p.user)
		return "session of another user";
	if ((why = udp2022_open(u, a, a != NULL, &p)))
		return why;
	if (a) {
		ss_udp_table_touch(&u->table, &a->entry, ev_now(u->loop));
		/* Answers follow the client to the address it last sent from. */
		memcpy(&a->peer, from, fromlen);
		a->peer_len = fromlen;
		a->listener = l->index;
	} else {
		a = ss_udp_assoc_get(u, (struct sockaddr *)&key, klen,
				     (const struct sockaddr *)from, fromlen, l->index);
		if (!a ||
		    ss_2022_udp_session_start(&u->u22, &a->tx, ss_udp2022_new_id(), p.user) < 0)
			return "no association";
		udp2022_adopt(u, a, p.packet_id);
		if (p.user) {
			char peer[SS_ADDR_STRLEN];
			ss_info(
			    "udp %s: user %s: new session",
			    ss_sockaddr_format((const struct sockaddr *)from, peer, sizeof(peer)),
			    (const char *)p.user->data);
		}
	}
	*ap = a;
	udp2022_take(out, &p);
	return NULL;
}

/* --- set-up --- */

int ss_udp2022_init(ss_udp_relay_t *u, char *err, size_t errlen)
{
	struct ss_instance *inst = u->inst;
	const ss_config_t *cfg = inst->cfg;
	int rc;

	if (u->client)
		rc = ss_2022_udp_init_client(&u->u22, cfg->method, inst->be, &cfg->psks);
	else
		rc = ss_2022_udp_init_server(&u->u22, cfg->method, inst->be, cfg->key,
					     ss_instance_users(inst));
	if (rc == 0 && (rc = ss_2022_udp_session_init(&u->u22, &u->scratch)) < 0)
		ss_2022_udp_free(&u->u22);
	if (rc < 0) {
		snprintf(err, errlen, "cannot set up the UDP cipher state: %s", strerror(-rc));
		return rc;
	}
	u->sip022 = true;
	return 0;
}
