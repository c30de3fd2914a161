/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SIP022 UDP packets opened on raw bytes
 * (udp_open_whole), with fixed keys so that the seeds, sealed with them
 * (timestamps at FZ_NOW), open and their mutations reach the main header.
 * Input: [selector][packet...]. The selector's low 7 bits pick the method
 * (modulo 3), then the backend, then the side; bit 7 its keys:
 * - a server opening client packets: PSK fz_key(0), alone or (AES methods,
 *   bit 7) as the identity PSK of users fz_key(1..3);
 * - a client opening server packets: PSK fz_key(0), or (AES methods, bit 7)
 *   identity PSK fz_key(0) and user PSK fz_key(1). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_2022.h"

/* [method][backend][bit 7] */
static ss_2022_udp_t servers[FZ_N_2022][FZ_N_BACKENDS][2], clients[FZ_N_2022][FZ_N_BACKENDS][2];
static ss_2022_udp_session_t scratch[FZ_N_2022][FZ_N_BACKENDS];

__attribute__((constructor)) static void setup(void)
{
	for (unsigned i = 0; i < FZ_N_2022; i++)
		for (unsigned b = 0; b < FZ_N_BACKENDS; b++)
			for (unsigned k = 0; k < 2; k++) {
				const ss_method_t *m = fz_method(fz_2022_names[i]);
				bool multi = k && ss_method_has_identity(m);
				ss_psk_list_t psks = {.n = multi ? 2 : 1};

				fz_key(0, psks.keys[0]);
				fz_key(1, psks.keys[1]);
				FZ_CHECK(ss_2022_udp_init_server(
					     &servers[i][b][k], m, fz_backend(b), psks.keys[0],
					     multi ? &fz_users[i][b] : NULL) == 0);
				FZ_CHECK(ss_2022_udp_init_client(&clients[i][b][k], m,
								 fz_backend(b), &psks) == 0);
				if (k == 0)
					FZ_CHECK(ss_2022_udp_session_init(&servers[i][b][k],
									  &scratch[i][b]) == 0);
			}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_t f = {data, size};
	uint8_t sel = fz_u8(&f);
	unsigned v = sel & 0x7f, mi = v % FZ_N_2022, bi = v / FZ_N_2022 % FZ_N_BACKENDS;
	unsigned k = sel >> 7;
	bool server = v / (FZ_N_2022 * FZ_N_BACKENDS) % 2;
	ss_2022_udp_t *u = server ? &servers[mi][bi][k] : &clients[mi][bi][k];
	ss_2022_udp_pkt_t p;
	uint8_t *buf = malloc(f.n + 1);
	int rc;

	memcpy(buf, f.p, f.n);
	rc = udp_open_whole(u, &scratch[mi][bi], buf, f.n, FZ_NOW, &p);
	FZ_CHECK((rc == SS_OK) == (p.err == SS_2022_E_NONE));
	if (rc == SS_OK) {
		/* The payload ends where the tag starts; the address is just
		 * before it. */
		FZ_CHECK(f.n >= SS_AEAD_TAG_LEN && p.payload + p.payload_len == buf + f.n - 16);
		FZ_CHECK(p.addr_raw + p.addr_len == p.payload && p.addr_raw > buf);
		FZ_CHECK(p.timestamp + 30 >= FZ_NOW && p.timestamp <= FZ_NOW + 30);
		FZ_CHECK(!server || (p.user != NULL) == (u->users != NULL));
	}
	free(buf);
	return 0;
}
