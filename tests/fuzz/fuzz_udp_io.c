/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the kernel's control data and the batch arithmetic of
 * UDP in batches (relay/udp_io.h), raw. The input is control data as
 * recvmsg fills it (ss_udp_cmsg_gro must stay inside it and give a
 * segment size of 1 to 65535 or 0); its first bytes also give a GRO
 * buffer's length and segment size, whose segments must tile the buffer
 * exactly, and a run of datagram lengths, of which ss_udp_gso_run must
 * take a prefix the kernel would send as one GSO send. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz_util.h"
#include "relay/udp_io.h"

static void check_gro(size_t len, size_t seg)
{
	size_t at, n, total = 0, i;

	for (i = 0; (n = ss_udp_gro_segment(len, seg, i, &at)) > 0; i++) {
		FZ_CHECK(at == total);
		FZ_CHECK(seg == 0 || seg >= len || n <= seg);
		/* only the last may be shorter */
		if (seg && seg < len && n < seg)
			FZ_CHECK(at + n == len);
		total += n;
		FZ_CHECK(total <= len);
	}
	FZ_CHECK(total == len);
	FZ_CHECK(ss_udp_gro_segment(len, seg, i + 1, &at) == 0);
}

static void check_gso(const uint8_t *data, size_t size)
{
	size_t len[SS_UDP_SLOTS], n = 0, seg_max, max_segs, max_total, r, total = 0;

	if (size < 4)
		return;
	seg_max = 1 + (size_t)(data[0] << 4);
	max_segs = 1 + data[1] % 70;
	max_total = 1 + (size_t)((data[2] << 8) | data[3]);
	for (size_t i = 4; i + 1 < size && n < SS_UDP_SLOTS; i += 2)
		len[n++] = (size_t)((data[i] << 8) | data[i + 1]) % 2000;
	r = ss_udp_gso_run(len, n, seg_max, max_segs, max_total);
	FZ_CHECK(n == 0 ? r == 0 : r >= 1 && r <= n);
	if (r <= 1)
		return;
	FZ_CHECK(r <= max_segs);
	FZ_CHECK(len[0] > 0 && len[0] <= seg_max);
	for (size_t i = 0; i < r; i++) {
		FZ_CHECK(len[i] > 0);
		FZ_CHECK(i + 1 == r ? len[i] <= len[0] : len[i] == len[0]);
		total += len[i];
	}
	FZ_CHECK(total <= max_total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union {
		struct cmsghdr align;
		uint8_t b[4096];
	} ctl;
	struct msghdr m;
	size_t n = size < sizeof(ctl.b) ? size : sizeof(ctl.b);
	uint16_t seg;

	memcpy(ctl.b, data, n);
	memset(&m, 0, sizeof(m));
	m.msg_control = ctl.b;
	m.msg_controllen = n;
	seg = ss_udp_cmsg_gro(&m);
	(void)seg;
	if (size >= 6) {
		size_t len = (size_t)data[0] << 16 | (size_t)data[1] << 8 | data[2];
		size_t s = (size_t)data[3] << 8 | data[4];
		check_gro(len % 70000, data[5] & 1 ? s : 0);
	}
	check_gso(data, size);
	return 0;
}
