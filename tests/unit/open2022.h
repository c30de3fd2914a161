/* SPDX-License-Identifier: MIT */
#ifndef SS_TESTS_OPEN2022_H
#define SS_TESTS_OPEN2022_H

/* Shared by the SIP022 UDP unit test and fuzz targets. */

#include <stddef.h>
#include <stdint.h>

#include "crypto/aead2022.h"
#include "crypto/method.h"
#include "util/result.h"

/* Opens a whole packet, both halves, with a session started for it in
 * scratch (through ss_2022_udp_session_init before): a subkey derivation
 * per packet, where the relay keeps sessions. SS_OK or SS_ERR with p->err. */
static inline int udp_open_whole(ss_2022_udp_t *u, ss_2022_udp_session_t *scratch, uint8_t *buf,
				 size_t len, uint64_t now, ss_2022_udp_pkt_t *p)
{
	if (ss_2022_udp_open_head(u, buf, len, p) != SS_OK)
		return SS_ERR;
	/* ChaCha20 packets have no session subkey. */
	if (u->method->alg == SS_AEAD_AES_GCM &&
	    ss_2022_udp_session_start(u, scratch, p->session_id, p->user) != 0) {
		p->err = SS_2022_E_AUTH;
		return SS_ERR;
	}
	return ss_2022_udp_open_body(u, scratch, p, now);
}

#endif
