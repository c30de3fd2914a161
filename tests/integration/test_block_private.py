# SPDX-License-Identifier: MIT
"""ss-server --block-private: targets at loopback (and other private)
addresses are refused, over TCP and UDP, given as literals (IPv4, IPv6,
IPv4-mapped IPv6) or as names that resolve to them (the address a name
gives is checked, asked here of a DNS responder the test runs on
loopback). A refused connection closes without reaching the target and
a refused datagram never arrives; the server logs one WARN line per
client. Without the setting the same requests pass. Which addresses
count as private is the unit test's (tests/unit/test_addr_private.c);
the targets here are on loopback, but for the last test, which shows
public addresses passing with the setting on, inside a network namespace
of its own where documentation addresses stand in for public ones."""

import os

import pytest

import sslib
import ssnetns
import ssudp
from sslib import T, wait_for

NAME = "inside.test"  # the DNS responder answers 127.0.0.1
PUB4, PUB6 = "198.51.100.7", "2001:db8::7"  # public by the classifier


@pytest.fixture
def dns():
    d = sslib.DnsResponder()
    yield d
    d.close()


def server(ss, tmp_path, dns, block, udp=False):
    """ss-server that resolves names through dns alone (an empty hosts
    file), with --block-private when block."""
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    extra = ["-d", dns.addr] + (["--block-private"] if block else []) + (["-u"] if udp else [])
    return ss.server(extra=extra, env={"SS_HOSTS_FILE": str(hosts)})


def refusal_lines(srv):
    return [ln for ln in srv.program.output().splitlines()
            if " WARN: " in ln and "--block-private" in ln]


def tcp_target(echo, echo6, how):
    if how == "ipv4":
        return "127.0.0.1", echo.port, echo
    if how == "ipv6":
        return "::1", echo6.port, echo6
    if how == "mapped":
        return "::ffff:127.0.0.1", echo.port, echo
    return NAME, echo.port, echo


@pytest.mark.parametrize("block", (True, False), ids=("blocked", "open"))
@pytest.mark.parametrize("how", ("ipv4", "ipv6", "mapped", "name"))
def test_tcp(ss, tmp_path, dns, echo, echo6, how, block):
    """Through ss-local: the SOCKS5 reply comes (ss-local answers before
    the server hears of the target), then the server closes the
    connection without a byte from the target, which accepts nothing."""
    srv = server(ss, tmp_path, dns, block)
    local = ss.local(srv)
    host, port, target = tcp_target(echo, echo6, how)
    s = sslib.socks5_connect(local.addr, host, port)
    with s:
        if not block:
            sslib.small_exchange(s, 1000)
            return
        s.sendall(b"x" * 100)
        state, got = sslib.wait_closed(s, T(5))
    assert state in ("eof", "reset") and got == b"", (state, got)
    assert target.accepted == 0
    assert wait_for(lambda: refusal_lines(srv), T(5)), srv.program.output()
    line = refusal_lines(srv)[0]
    assert "refused: loopback address" in line, line
    if how == "name":
        assert NAME in line and "127.0.0.1" in line, line
        assert NAME in dns.names, "the server did not look the name up"


@pytest.mark.parametrize("block", (True, False), ids=("blocked", "open"))
@pytest.mark.parametrize("how", ("ipv4", "name"))
def test_udp(ss, tmp_path, dns, how, block):
    """A datagram to a loopback target comes back echoed without the
    setting; with it, the echo server never receives it."""
    with ssudp.UdpEcho() as uecho:
        srv = server(ss, tmp_path, dns, block, udp=True)
        local = ss.local(srv, extra=["-u"])
        host = "127.0.0.1" if how == "ipv4" else NAME
        with ssudp.Association(local.addr) as a:
            atyp = sslib.ATYP_DOMAIN if how == "name" else None
            if not block:
                a.send(host, uecho.port, b"hello", atyp=atyp)
                assert a.recv() == (sslib.ATYP_IPV4, "127.0.0.1", uecho.port, b"hello")
                return
            for i in range(3):  # a name's first datagram may wait for its lookup
                a.send(host, uecho.port, b"hello %d" % i, atyp=atyp)
            ssudp.recv_nothing(a.udp, T(1))
        assert uecho.count() == 0
        assert wait_for(lambda: refusal_lines(srv), T(5)), srv.program.output()
        line = refusal_lines(srv)[0]
        assert "target refused: 127.0.0.1:%d: loopback address" % uecho.port in line, line
        if how == "name":
            assert NAME in dns.names, "the server did not look the name up"


def test_acl_cannot_let_it_through(ss, tmp_path, dns, echo):
    """An ACL that accepts everything (and blocks nothing) does not undo
    --block-private."""
    acl = tmp_path / "all.acl"
    acl.write_text("[accept_all]\n")
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    srv = ss.server(extra=["-d", dns.addr, "--block-private", "--acl", str(acl)],
                    env={"SS_HOSTS_FILE": str(hosts)})
    local = ss.local(srv)
    with sslib.socks5_connect(local.addr, "127.0.0.1", echo.port) as s:
        s.sendall(b"x")
        state, got = sslib.wait_closed(s, T(5))
    assert got == b"" and state != "open", state
    assert echo.accepted == 0


@pytest.fixture
def public_ns():
    """A network namespace whose loopback interface also holds PUB4 and
    PUB6: public-looking targets that reach nothing outside it."""
    name = "ssbp-%d" % os.getpid()
    try:
        ssnetns.sh("ip", "netns", "add", name)
    except (RuntimeError, OSError) as e:
        pytest.fail("cannot create a network namespace (root and iproute2 are needed): %s" % e,
                    pytrace=False)
    try:
        ssnetns.sh("ip", "-n", name, "link", "set", "lo", "up")
        ssnetns.sh("ip", "-n", name, "addr", "add", PUB4 + "/32", "dev", "lo")
        ssnetns.sh("ip", "-n", name, "-6", "addr", "add", PUB6 + "/128", "dev", "lo", "nodad")
        yield name
    finally:
        ssnetns.sh("ip", "netns", "del", name, ok=False)


class _Inside:
    """Moves the calling thread into the namespace: the sockets, threads
    and programs it makes there stay there."""

    def __init__(self, name):
        self.path = "/run/netns/" + name

    def __enter__(self):
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            ssnetns._setns(fd)
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            ssnetns._setns(self.home)
        finally:
            os.close(self.home)


def test_public_targets_pass(ss, tmp_path, public_ns):
    """With --block-private, targets at public addresses (IPv4, IPv6, a
    name that resolves to one) are reached over TCP and UDP, while
    127.0.0.1 in the same namespace is still refused."""
    with _Inside(public_ns):
        echo4, echo6 = sslib.EchoServer(host=PUB4), sslib.EchoServer(host=PUB6)
        near = sslib.EchoServer(host="127.0.0.1")
        uecho = ssudp.UdpEcho(host=PUB4)
        dns = sslib.DnsResponder(answers={"public.test": PUB4})
        try:
            srv = server(ss, tmp_path, dns, True, udp=True)
            local = ss.local(srv, extra=["-u"])
            for host, port in ((PUB4, echo4.port), (PUB6, echo6.port),
                               ("public.test", echo4.port)):
                with sslib.socks5_connect(local.addr, host, port) as s:
                    sslib.small_exchange(s, 1000)
            assert echo4.accepted == 2 and echo6.accepted == 1
            with ssudp.Association(local.addr) as a:
                assert a.exchange((PUB4, uecho.port), b"pub") == (
                    sslib.ATYP_IPV4, PUB4, uecho.port, b"pub")
                a.send("public.test", uecho.port, b"named", atyp=sslib.ATYP_DOMAIN)
                assert a.recv() == (sslib.ATYP_IPV4, PUB4, uecho.port, b"named")
            with sslib.socks5_connect(local.addr, "127.0.0.1", near.port) as s:
                s.sendall(b"x")
                state, got = sslib.wait_closed(s, T(5))
            assert state != "open" and got == b"" and near.accepted == 0, state
            assert "public.test" in dns.names
        finally:
            for x in (echo4, echo6, near, uecho, dns):
                x.close()
