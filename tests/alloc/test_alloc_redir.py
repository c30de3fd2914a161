# SPDX-License-Identifier: MIT
"""Zero heap allocations in ss-redir's steady state, in the network
namespaces of tests/integration/ssnetns.py: connections redirected by
nftables (REDIRECT, and TPROXY with -T), connections that were not
redirected (closed with a refusal line), and TPROXY datagrams answered from
their original destinations. Counted as in test_alloc.py."""

import socket
import subprocess
import time

import pytest

import sslib
import ssnetns
from sslib import T
from ssnetns import TGT4, TGT6, RTR4
from test_alloc import TCP_CONNS, Counted, counted_env

UDP_TIMEOUT = 1


@pytest.fixture(scope="module")
def nets():
    n = ssnetns.make()
    ssnetns.policy_routing(n)
    yield n
    n.destroy()


def tcp_round(nets, ssload, echo_ports, redir_port, conns, parallel):
    with nets.enter("cli"):
        for host, port in zip((TGT4, TGT6), echo_ports):
            spec = ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)
            res = subprocess.run([ssload, "rr", "--connect", spec, "--count", str(conns // 2),
                                  "--size", "512", "--conns", str(parallel), "--timeout", "30"],
                                 capture_output=True, timeout=T(60))
            assert res.returncode == 0, res.stderr.decode()[-500:]
        # Straight to the proxy's port: refused, a line logged.
        for _ in range(8):
            with socket.create_connection((RTR4, redir_port), timeout=T(5)) as s:
                s.settimeout(T(5))
                assert s.recv(16) == b""


def udp_round(nets, uechoes, count):
    """count datagrams from each of two cli sockets a family, spread over
    the family's targets; each answer must come from where it was sent."""
    with nets.enter("cli"):
        socks = [socket.socket(f, socket.SOCK_DGRAM)
                 for f in (socket.AF_INET, socket.AF_INET, socket.AF_INET6, socket.AF_INET6)]
    try:
        for i in range(count):
            for j, s in enumerate(socks):
                s.settimeout(T(5))
                dest = uechoes[2 * (j // 2) + i % 2].addr
                s.sendto(b"%06d" % i + b"x" * 300, dest)
                data, src = s.recvfrom(2048)
                assert data[:6] == b"%06d" % i and src[:2] == dest
    finally:
        for s in socks:
            s.close()


@pytest.mark.parametrize("tproxy", [False, True], ids=["redirect", "tproxy"])
def test_no_allocations_in_redir(ss, tmp_path, shim, ssload, nets, tproxy):
    """TCP by REDIRECT or TPROXY; with TPROXY, UDP as well, whose
    associations and answer sockets expire between the rounds."""
    import ssudp
    method = "aes-256-gcm"
    udp = ["-u", "--udp-timeout", str(UDP_TIMEOUT)] if tproxy else []
    with nets.enter("tgt"):
        echoes = [sslib.EchoServer(host=TGT4), sslib.EchoServer(host=TGT6)]
        uechoes = [ssudp.UdpEcho(host=h) for h in (TGT4, TGT4, TGT6, TGT6)]
    try:
        with nets.enter("rtr"):
            server = ss.server(method=method, extra=["-u", "--udp-timeout", str(UDP_TIMEOUT)])
            env, rep = counted_env(shim, tmp_path, "ss-redir")
            args = lambda port: (["-s", server.host, "-p", server.port, "-b", "::", "-l", port,
                                  "-m", method, "-k", server.password]
                                 + (["-T"] if tproxy else []) + udp)
            p, port = ss.procs.start_listening(ss.exe("ss-redir"), args, host=sslib.LOOPBACK4,
                                               env=env)
        nets.nft("rtr", ssnetns.tproxy_rules(port) if tproxy else ssnetns.redirect_rules(port))
        counted = Counted(p, rep)
        ports = [e.port for e in echoes]
        for _ in range(2):
            tcp_round(nets, ssload, ports, port, TCP_CONNS, 16)
            if tproxy:
                udp_round(nets, uechoes, 100)
                time.sleep(UDP_TIMEOUT + 1.5)
        before = counted.sample()
        tcp_round(nets, ssload, ports, port, TCP_CONNS, 4)
        if tproxy:
            udp_round(nets, uechoes, 500)
        time.sleep(0.5)
        after = counted.sample()
        assert before > 0
        assert after == before, "heap allocations in ss-redir: %d" % (after - before)
        assert "closed: not sent here by a" in p.output()
    finally:
        for e in echoes + uechoes:
            e.close()
