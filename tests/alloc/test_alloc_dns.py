# SPDX-License-Identifier: MIT
"""Zero heap allocations in ss-local's DNS relay (--dns) in steady state:
queries over UDP and TCP, proxied ones through the door into the relay
(the UDP relay with -u, Shadowsocks connections without), bypassed ones
to the local name server, answers from the cache, malformed queries.
Counted as in test_alloc.py."""

import os
import socket
import struct
import time

import pytest

import sslib
from sslib import T
from test_alloc import Counted, counted_env
from test_dns_relay import NameServer, make_query, parse_answer, wait_relay

UDP_TIMEOUT = 1
ACL = "[proxy_all]\n[bypass_list]\n||bypass.test\n"


def burst(dns, n):
    """n proxied queries at once: as many door connections (tcp_only) or
    queries in flight, more than a round has at a time."""
    socks = []
    try:
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(T(6))
            socks.append(s)
            s.sendto(make_query("burst%d.test" % i, i), dns)
        for i, s in enumerate(socks):
            assert parse_answer(s.recv(65536))[0] == i
    finally:
        for s in socks:
            s.close()


def dns_round(dns, n):
    """n queries over UDP (proxied names never cached, bypassed ones
    cached after the first), a few malformed ones, and n // 10 over TCP."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(T(6))
    try:
        for i in range(n):
            name = ("p%d.test" % i) if i % 2 else ("b%d.bypass.test" % (i % 20))
            qid = int.from_bytes(os.urandom(2), "big")
            s.sendto(make_query(name, qid), dns)
            assert parse_answer(s.recv(65536))[0] == qid
            if i % 50 == 0:
                s.sendto(os.urandom(40), dns)
    finally:
        s.close()
    for i in range(n // 10):
        t = sslib.connect(*dns)
        try:
            for k in range(3):
                q = make_query("t%d-%d.test" % (i, k), 1000 + k)
                t.sendall(struct.pack("!H", len(q)) + q)
                size = struct.unpack("!H", sslib.recv_exact(t, 2))[0]
                assert parse_answer(sslib.recv_exact(t, size))[0] == 1000 + k
        finally:
            t.close()


@pytest.mark.parametrize("udp", [True, False], ids=["tcp_and_udp", "tcp_only"])
def test_no_allocations_in_the_dns_relay(ss, tmp_path, shim, udp):
    remote, local = NameServer("10.0.0.1", ttl=0), NameServer("10.0.0.2", ttl=300)
    try:
        mode = ["-u", "--udp-timeout", str(UDP_TIMEOUT)] if udp else []
        server = ss.server(extra=mode)
        acl = tmp_path / "dns.acl"
        acl.write_text(ACL)
        port = NameServer.free_port()
        env, rep = counted_env(shim, tmp_path, "ss-local")
        local_prog = ss.local(server, env=env, extra=mode + [
            "--dns", "127.0.0.1:%d" % port, "--remote-dns", remote.addr, "--local-dns",
            local.addr, "--acl", str(acl)])
        wait_relay(local_prog.program.pid, port)
        counted = Counted(local_prog.program, rep)
        dns = (sslib.LOOPBACK4, port)
        for _ in range(2):
            burst(dns, 32)
            dns_round(dns, 400)
            time.sleep(UDP_TIMEOUT + 1.5)
        before = counted.sample()
        dns_round(dns, 400)
        time.sleep(0.5)
        after = counted.sample()
        assert before > 0
        assert after == before, "heap allocations in the DNS relay: %d" % (after - before)
        assert len(remote.names()) >= 3 * 200
    finally:
        remote.close()
        local.close()
