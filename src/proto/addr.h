/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_ADDR_H
#define SS_PROTO_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Shadowsocks / SOCKS5 address: ATYP (1 IPv4, 3 domain, 4 IPv6), address,
 * port. The same encoding is the Shadowsocks address header and the tail of
 * a SOCKS5 request. */
enum {
	SS_ATYP_IPV4 = 1,
	SS_ATYP_DOMAIN = 3,
	SS_ATYP_IPV6 = 4,
};

#define SS_ADDR_MAX_ENCODED (1 + 1 + 255 + 2)
/* "[v6]:port" or "domain:port", NUL included. */
#define SS_ADDR_STRLEN 264

typedef struct ss_addr {
	uint8_t atyp;
	uint8_t domain_len; /* for SS_ATYP_DOMAIN */
	uint16_t port;      /* host order */
	union {
		uint8_t v4[4];
		uint8_t v6[16];
		char domain[256]; /* NUL-terminated, domain_len bytes */
	};
} ss_addr_t;

/* Parses an address from the start of buf (read-only).
 * SS_OK with *used set; SS_AGAIN when buf holds a proper prefix; SS_ERR for an
 * unknown ATYP or an empty domain (or one containing a NUL byte). */
int ss_addr_parse(const uint8_t *buf, size_t len, ss_addr_t *out, size_t *used);

/* Encodes a into out. Returns the length, or 0 when cap is too small. */
size_t ss_addr_encode(const ss_addr_t *a, uint8_t *out, size_t cap);

/* An IPv4 or IPv6 socket address in 28 bytes (sockaddr_storage takes 128):
 * for what only ever holds a TCP or UDP peer, such as a connection slot's. */
typedef union ss_inaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
} ss_inaddr_t;

/* Copies sa (len bytes, an IPv4 or IPv6 address) into *dst, at most its 28
 * bytes, the rest zeroed. Returns the length stored. */
socklen_t ss_inaddr_set(ss_inaddr_t *dst, const struct sockaddr *sa, socklen_t len);

/* IPv4/IPv6 address to sockaddr. -EINVAL for a domain. */
int ss_addr_to_sockaddr(const ss_addr_t *a, struct sockaddr_storage *ss, socklen_t *len);
/* sockaddr (AF_INET/AF_INET6; a v4-mapped v6 becomes IPv4) to address.
 * -EAFNOSUPPORT for any other family. */
int ss_addr_from_sockaddr(ss_addr_t *a, const struct sockaddr *sa);
/* A dual-stack socket sees an IPv4 peer as the IPv4-mapped IPv6 address
 * ::ffff:a.b.c.d. These three are the one place that form is recognised,
 * made and undone, so that a peer compares equal in either form. */
/* Whether the 16 bytes of an IPv6 address are IPv4-mapped; the IPv4
 * address is then their last 4. */
bool ss_ip6_is_v4mapped(const uint8_t ip6[static 16]);
/* ip6 becomes the IPv4-mapped form of the IPv4 address at ip4 (4 bytes,
 * network order). */
void ss_ip6_map_v4(uint8_t ip6[static 16], const void *ip4);
/* An IPv4-mapped AF_INET6 address in ss becomes the AF_INET one with the
 * same port (the rest of ss zeroed, *len updated); any other is left as it
 * is. */
void ss_sockaddr_unmap(struct sockaddr_storage *ss, socklen_t *len);
/* --block-private: what kind of address a server must not connect to, or
 * NULL for a public one. IPv4: this network (0/8), private (10/8,
 * 172.16/12, 192.168/16), shared/CGNAT (100.64/10), loopback (127/8),
 * link-local (169.254/16), IETF protocol assignments (192.0.0/24),
 * benchmarking (198.18/15), multicast (224/4), reserved and broadcast
 * (240/4). IPv6: unspecified, loopback and the deprecated IPv4-compatible
 * form (::/96), unique local (fc00::/7), site-local (fec0::/10, deprecated),
 * link-local (fe80::/10), multicast (ff00::/8), local-use NAT64
 * (64:ff9b:1::/48); an IPv4-mapped address (::ffff:0:0/96) and one of the
 * well-known NAT64 prefix (64:ff9b::/96) are judged by the IPv4 address
 * they carry. Documentation ranges (192.0.2/24, 198.51.100/24,
 * 203.0.113/24, 2001:db8::/32) count as public. ip4: 4 bytes, ip6: 16,
 * network order. A sockaddr of another family than AF_INET/AF_INET6 is
 * "not an IP address": never a target to connect to. Pure; a few
 * comparisons. */
const char *ss_ip4_private_kind(const uint8_t ip4[static 4]);
const char *ss_ip6_private_kind(const uint8_t ip6[static 16]);
const char *ss_sockaddr_private_kind(const struct sockaddr *sa);
static inline bool ss_sockaddr_is_private(const struct sockaddr *sa)
{
	return ss_sockaddr_private_kind(sa) != NULL;
}
/* Sets a domain address; -EINVAL when empty or over 255 bytes. */
int ss_addr_set_domain(ss_addr_t *a, const char *host, uint16_t port);
/* Parses host text: an IPv4 or IPv6 literal (brackets allowed) becomes an IP
 * address, anything else a domain. -EINVAL when empty or too long. */
int ss_addr_from_host(ss_addr_t *a, const char *host, uint16_t port);

/* "1.2.3.4:80", "[::1]:80" or "example.com:80". Returns out. */
char *ss_addr_format(const ss_addr_t *a, char *out, size_t len);
/* The port of an AF_INET/AF_INET6 sockaddr, host order (0 for others). */
uint16_t ss_sockaddr_port(const struct sockaddr *sa);
/* Sets the port (host order) of an AF_INET/AF_INET6 sockaddr. */
void ss_sockaddr_set_port(struct sockaddr *sa, uint16_t port);
/* Same for a sockaddr. Returns out. */
char *ss_sockaddr_format(const struct sockaddr *sa, char *out, size_t len);

#endif
