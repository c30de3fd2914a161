/* SPDX-License-Identifier: MIT */
#ifndef SS_RELAY_UDP_IO_H
#define SS_RELAY_UDP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Datagrams in batches: what one readiness event finds on a socket is read
 * with one recvmmsg, and what the relay makes of them is queued and sent
 * with one sendmmsg per socket, consecutive datagrams to one destination of
 * one size going as one UDP GSO send (UDP_SEGMENT). Sockets also take GRO
 * (UDP_GRO): a buffer of several datagrams from one source, split here.
 *
 * Every buffer is reserved at start: SS_UDP_BATCH slots a receive lands in,
 * and SS_UDP_SPARES slots the segments of a GRO buffer are copied to (a
 * codec seals and opens in place, with room before and after each
 * datagram). Nothing is allocated per datagram.
 *
 * SS_NO_UDP_MMSG=1 reads and sends one datagram per system call,
 * SS_NO_UDP_GSO=1 neither sends with GSO nor asks for GRO; where the kernel
 * lacks either, the same happens without being asked. */

#define SS_UDP_BATCH 16
#define SS_UDP_SPARES 16
#define SS_UDP_SLOTS (SS_UDP_BATCH + SS_UDP_SPARES)
/* GSO: the most segments in one send (the kernel's UDP_MAX_SEGMENTS), the
 * largest segment sent that way (an Ethernet path's IPv4 payload: larger
 * ones would be IP fragments, which GSO refuses), and the most bytes. */
#define SS_UDP_GSO_SEGS 64
#define SS_UDP_GSO_SEG_MAX 1472
#define SS_UDP_GSO_TOTAL 65000

/* Per socket, kept by its owner: set once GSO failed on it. */
#define SS_UDP_SOCK_NO_GSO 1u

/* One datagram read: its length, where it came from and, when asked, where
 * it was going (ss-redir), and the GRO segment size (0: one datagram). */
typedef struct ss_udp_rxmsg {
	size_t len;
	bool truncated; /* longer than the buffer: dropped */
	uint16_t seg;
	struct sockaddr_storage from;
	socklen_t fromlen;
	struct sockaddr_storage dst;
	socklen_t dstlen;
} ss_udp_rxmsg_t;

/* One datagram to send: p[0..len) from fd to `to` (tolen 0: the socket is
 * connected). flags: the socket's SS_UDP_SOCK_* flags, which live as long
 * as anything is queued on the socket. owner is the caller's, given back
 * when the send fails. */
typedef struct ss_udp_out {
	int fd;
	uint8_t *flags;
	const uint8_t *p;
	size_t len;
	struct sockaddr_storage to;
	socklen_t tolen;
	void *owner;
} ss_udp_out_t;

typedef struct ss_udp_io_stats {
	uint64_t rx_calls;    /* receive system calls */
	uint64_t rx_batched;  /* reads of two or more datagrams (a batch) */
	uint64_t rx_gro;      /* GRO buffers of two or more datagrams */
	uint64_t tx_calls;    /* send system calls */
	uint64_t tx_batched;  /* of those, sendmmsg calls carrying two or more */
	uint64_t tx_gso;      /* GSO sends of two or more datagrams */
	uint64_t gso_refused; /* sockets GSO was turned off on */
} ss_udp_io_stats_t;

typedef union ss_udp_ctl {
	struct cmsghdr align;
	uint8_t b[CMSG_SPACE(sizeof(int)) + 2 * CMSG_SPACE(sizeof(struct sockaddr_in6))];
} ss_udp_ctl_t;

typedef struct ss_udp_io {
	uint8_t *slots; /* SS_UDP_SLOTS buffers of slot_size bytes */
	size_t slot_size;
	bool mmsg, gso;
	/* without recvmmsg: an error for the next read of socket rx_fd */
	int rx_err, rx_fd;
	size_t spares_used;
	ss_udp_rxmsg_t rx[SS_UDP_BATCH];
	ss_udp_out_t out[SS_UDP_SLOTS];
	size_t n_out;
	/* scratch of the system calls */
	struct mmsghdr hdr[SS_UDP_SLOTS];
	struct iovec iov[SS_UDP_SLOTS];
	ss_udp_ctl_t ctl[SS_UDP_SLOTS];
	ss_udp_io_stats_t stats;
} ss_udp_io_t;

/* Sets io up over slots (SS_UDP_SLOTS buffers of slot_size bytes, owned by
 * the caller), reading the switches from the environment. */
void ss_udp_io_init(ss_udp_io_t *io, uint8_t *slots, size_t slot_size);
/* Asks for GRO on a UDP socket (unless switched off). Errors are ignored. */
void ss_udp_io_sock(const ss_udp_io_t *io, int fd);

static inline uint8_t *ss_udp_io_slot(ss_udp_io_t *io, size_t i)
{
	return io->slots + i * io->slot_size;
}

/* Reads up to SS_UDP_BATCH datagrams (want: how many at most) from fd,
 * datagram i landing at slot i + off, at most cap bytes; with want_dst,
 * also their original destination. Returns how many (io->rx[0..n)), 0
 * when there was none, or -errno when the first read failed. Fewer than
 * asked for means the socket had no more, unless io->rx_err is set: an
 * error that the next read of fd returns. */
int ss_udp_io_recv(ss_udp_io_t *io, int fd, size_t want, size_t off, size_t cap, bool want_dst);

/* A spare slot for one segment of a GRO buffer, or NULL when all are in
 * use (ss_udp_io_flush frees them). */
uint8_t *ss_udp_io_spare(ss_udp_io_t *io);

/* An entry to fill, queued; NULL when the queue is full (flush first). */
ss_udp_out_t *ss_udp_io_queue(ss_udp_io_t *io);

/* Sends everything queued, in order per socket, and empties the queue (and
 * the spare slots). fail(ctx, out, err) hears of each datagram that could
 * not be sent. */
void ss_udp_io_flush(ss_udp_io_t *io, void (*fail)(void *ctx, const ss_udp_out_t *o, int err),
		     void *ctx);

/* --- pure helpers (tests/unit/test_udp_io.c, tests/fuzz/fuzz_udp_io.c) --- */

/* How many of the n datagrams of lengths len[0..n), all to one destination,
 * go out as one GSO send from the first: all of one length (the last may be
 * shorter), each at most seg_max bytes, at most max_segs of them and
 * max_total bytes in all. At least 1 when n > 0; 1 means a plain send. */
size_t ss_udp_gso_run(const size_t *len, size_t n, size_t seg_max, size_t max_segs,
		      size_t max_total);

/* A GRO buffer of len bytes with segment size seg: the length of segment
 * i (0 past the last). seg 0 means one datagram of len bytes. */
size_t ss_udp_gro_segment(size_t len, size_t seg, size_t i, size_t *offset);

/* The GRO segment size a received message's control data carries, or 0. */
uint16_t ss_udp_cmsg_gro(const struct msghdr *msg);

#endif
