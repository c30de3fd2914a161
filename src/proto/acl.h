/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_ACL_H
#define SS_PROTO_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "proto/addr.h"

/* Access control lists in shadowsocks-libev's file format (--acl FILE).
 *
 * File format
 * -----------
 * One entry per line. Leading and trailing white space (CR of a CRLF file
 * included) is dropped; blank lines and lines whose first character is '#'
 * are skipped. A '#' later in a line is part of the entry.
 *
 * Section headers, matched exactly (case-sensitive):
 *   [proxy_all]  [accept_all]   default: proxy / accept what no entry matches
 *   [bypass_all] [reject_all]   default: bypass / reject what no entry matches
 *   [bypass_list] [black_list]  following entries bypass / are rejected
 *   [proxy_list] [white_list]   following entries are proxied / accepted
 *   [outbound_block_list]       following entries are targets ss-server
 *                               refuses to connect to
 * The default mode is proxy_all; when several mode headers appear the last
 * one wins. A mode header does not change which list takes the following
 * entries. Entries before any list header go to the bypass list, as in
 * libev (init_acl starts with the black list as its current list). A line
 * of the form [name] (letters, digits, '_' and '-' between brackets) is a
 * section header; any other name is an error, where libev would have
 * compiled it into a character-class regex that matches almost anything.
 *
 * Entries:
 *   10.0.0.0/8, 2001:db8::/32    address prefixes (host bits are ignored)
 *   192.0.2.1, 2001:db8::1       one address (/32, /128)
 *   ||example.com                example.com and every name under it
 *                                (a.example.com, a.b.example.com), not
 *                                badexample.com
 *   |example.com                 exactly example.com
 *   anything else                a PCRE2 regular expression
 * An IPv4-mapped IPv6 prefix of length 96 or more (::ffff:10.0.0.0/104) is
 * stored as the IPv4 prefix it maps (10.0.0.0/8), since addresses are looked
 * up as IPv4 when they are IPv4-mapped. The '|' and '||' rules are compared
 * without case and with one trailing dot ignored, on both sides. They are an
 * extension: libev would compile them as regexes with empty alternatives,
 * which match every host.
 *
 * Regular expressions are compiled as libev compiles them (pcre2_compile
 * with no options) and tried as libev tries them: unanchored, case-sensitive,
 * against the host name exactly as the peer sent it. Write ^ and $ to anchor,
 * e.g. "(^|\.)example\.com$". A regex whose match exceeds PCRE2's match
 * limit (set here to 10^6, libev sets none) counts as not matching.
 *
 * A bad line fails the whole load: the error names the file, the line and
 * the rejected text, e.g.
 *   acl.txt:12: invalid CIDR '10.0.0.0/33' (prefix length over 32)
 *   acl.txt:3: invalid regular expression '(': missing closing parenthesis
 *   at offset 1
 * libev silently skips or mis-reads such lines instead.
 *
 * How a decision is made (libev 3.3.5, src/acl.c acl_match_host and
 * src/local.c server_handshake; server.c accept_cb)
 * -----------------------------------------------
 * 1. If the target is a host name, the host rules ('|', '||', regex) are
 *    asked: a match in the bypass list gives BYPASS; otherwise a match in
 *    the proxy list gives PROXY. The bypass list wins when both match.
 * 2. Only when no host rule matched is the address asked: the client resolves
 *    the name (or takes the literal address) and looks it up in the address
 *    prefixes: the bypass list wins again, then the proxy list.
 * 3. When neither matched, the default mode decides: proxy_all proxies,
 *    bypass_all bypasses.
 * A host rule match is final: an address rule never overrides it, and a name
 * is not resolved when a host rule matched. ss-server reads the same lists as
 * accept (proxy list) and reject (bypass list) for the address of the client
 * connecting to it, with reject_all/accept_all as the default. Independently
 * of these, ss-server refuses to connect to a target in the
 * outbound_block_list (libev checks the address it is about to connect to).
 */

typedef struct ss_acl ss_acl_t;

typedef enum {
	SS_ACL_UNDECIDED = 0, /* no entry matched: ask by address, or take the default */
	SS_ACL_PROXY = 1,     /* client: send through the server */
	SS_ACL_BYPASS = 2,    /* client: connect directly */
} ss_acl_decision_t;

/* The same two answers from ss-server's side, for its client addresses. */
#define SS_ACL_ACCEPT SS_ACL_PROXY
#define SS_ACL_REJECT SS_ACL_BYPASS

/* Number of entries of each kind a list received, as written in the file
 * (before overlapping prefixes are merged). */
typedef struct ss_acl_list_stats {
	size_t ipv4;
	size_t ipv6;
	size_t domains; /* '|' and '||' rules */
	size_t regexes;
} ss_acl_list_stats_t;

typedef struct ss_acl_stats {
	ss_acl_list_stats_t bypass; /* [bypass_list] / [black_list] */
	ss_acl_list_stats_t proxy;  /* [proxy_list] / [white_list] */
	ss_acl_list_stats_t block;  /* [outbound_block_list] */
} ss_acl_stats_t;

/* Reads and parses the file at path. On success *out owns a new ACL (free it
 * with ss_acl_free) and 0 is returned. Errors: -EINVAL for a bad line,
 * -ENOMEM, -EFBIG for a file over 256 MiB, or -errno from opening or
 * reading; err (if errlen > 0) then holds one line naming path and the cause.
 */
int ss_acl_load(ss_acl_t **out, const char *path, char *err, size_t errlen);

/* Parses len bytes of text; name stands for the file in error messages.
 * Same results as ss_acl_load. The text need not be NUL-terminated; a NUL
 * byte inside a line is an error. */
int ss_acl_parse(ss_acl_t **out, const char *text, size_t len, const char *name, char *err,
		 size_t errlen);

/* A view of acl for another thread: the same rules, read in place (acl
 * must outlive the view), with a match block of its own, so that the view
 * and acl may be queried at once. Freed with ss_acl_free. NULL when out of
 * memory. */
ss_acl_t *ss_acl_view(const ss_acl_t *acl);

/* Frees the ACL; NULL is ignored. */
void ss_acl_free(ss_acl_t *acl);

/* What applies when no entry matched: SS_ACL_PROXY (proxy_all/accept_all,
 * also when the file names no mode) or SS_ACL_BYPASS (bypass_all/reject_all). */
ss_acl_decision_t ss_acl_default(const ss_acl_t *acl);

/* Step 1 for a host name: the host rules of the bypass list, then those of
 * the proxy list; SS_ACL_UNDECIDED when none matched. A host that is an IP
 * literal (IPv4, IPv6, or IPv6 in brackets) is looked up by address instead,
 * as libev does. NULL or "" is UNDECIDED.
 *
 * Queries neither allocate nor lock: the ACL holds one PCRE2 match block
 * that every query uses, so one ACL must not be queried from two threads at
 * once: each other thread queries a view of it (ss_acl_view). */
ss_acl_decision_t ss_acl_match_host(const ss_acl_t *acl, const char *host);

/* Step 2 for an address (AF_INET or AF_INET6; an IPv4-mapped IPv6 address is
 * looked up as IPv4): the prefixes of the bypass list, then of the proxy
 * list. SS_ACL_UNDECIDED when none matched or for another family. */
ss_acl_decision_t ss_acl_match_addr(const ss_acl_t *acl, const struct sockaddr *sa);

/* A Shadowsocks/SOCKS5 target: a domain goes to ss_acl_match_host, an
 * IPv4/IPv6 address to the address tables (the port is ignored). */
ss_acl_decision_t ss_acl_match_target(const ss_acl_t *acl, const ss_addr_t *target);

/* d itself, or the default when d is SS_ACL_UNDECIDED. */
ss_acl_decision_t ss_acl_resolve(const ss_acl_t *acl, ss_acl_decision_t d);

/* [outbound_block_list]: true when a host rule of that list matches host
 * (an IP literal is looked up by address), or its prefixes hold sa's
 * address. */
bool ss_acl_outbound_blocked_host(const ss_acl_t *acl, const char *host);
bool ss_acl_outbound_blocked_addr(const ss_acl_t *acl, const struct sockaddr *sa);

/* Entry counts per list. */
void ss_acl_stats(const ss_acl_t *acl, ss_acl_stats_t *out);

#endif
