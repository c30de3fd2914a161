# SPDX-License-Identifier: MIT
"""ACL files (--acl) in the programs: ss-local and ss-tunnel bypass or
proxy per connection (by name first, by address when only an address rule
can decide), ss-server refuses clients by address and targets in
[outbound_block_list] over TCP and UDP, and a bad file stops start-up with
its file and line. Targets live on 127.0.0.1 and 127.0.0.2 (both loopback)
so that address rules can tell them apart."""

import os
import re
import socket
import time

import pytest

import sslib
import ssudp
from sslib import T

LOOP2 = "127.0.0.2"
HOLD = 1.0


def write_acl(tmp_path, text, name="rules.acl"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def server_v(ss, extra=()):
    return ss.server(extra=["-v"] + list(extra))


def connects_logged(server):
    """The targets ss-server was asked to connect to, from its -v log."""
    return re.findall(r"connect (\S+)", server.program.output())


@pytest.fixture
def echo2():
    s = sslib.EchoServer(host=LOOP2)
    yield s
    s.close()


@pytest.mark.parametrize("rule", ["127.0.0.2", "127.0.0.0/30"])
def test_local_bypasses_by_address(ss, tmp_path, echo, echo2, rule):
    """[bypass_list] with an address rule: the bypassed target is reached
    without the server, the other one through it; both echo correctly."""
    acl = write_acl(tmp_path, "[proxy_all]\n[bypass_list]\n%s\n" % rule)
    server = server_v(ss)
    local = ss.local(server, extra=["--acl", acl, "-v"])
    proxied = echo.addr if rule == "127.0.0.2" else None
    for target in (echo2.addr, echo.addr):
        with sslib.socks5_connect(local.addr, *target, timeout=T(5)) as s:
            sslib.echo_check(s, os.urandom(200000), timeout=T(10))
    seen = connects_logged(server)
    assert "%s:%d" % echo2.addr not in seen, "the bypassed target went through the server"
    if proxied:
        assert "%s:%d" % echo.addr in seen, "the proxied target did not go through the server"
    else:
        # 127.0.0.0/30 covers both: neither goes through the server.
        assert seen == [], seen
    out = local.program.output()
    assert "bypass %s:%d (ACL)" % echo2.addr in out


def test_local_bypasses_by_name(ss, tmp_path, echo):
    """A '|' rule on a name decides without any lookup; a name that no name
    rule matches is looked up when an address rule could decide."""
    acl = write_acl(tmp_path, "[bypass_list]\n|localhost\n")
    server = server_v(ss)
    local = ss.local(server, extra=["--acl", acl])
    with sslib.socks5_connect(local.addr, "localhost", echo.port, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(5000), timeout=T(10))
    with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(5000), timeout=T(10))
    assert connects_logged(server) == ["%s:%d" % echo.addr]

    acl2 = write_acl(tmp_path, "[proxy_all]\n[bypass_list]\n127.0.0.0/8\n", "addr.acl")
    server2 = server_v(ss)
    local2 = ss.local(server2, extra=["--acl", acl2])
    with sslib.socks5_connect(local2.addr, "localhost", echo.port, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(5000), timeout=T(10))
    assert connects_logged(server2) == [], "a name resolving into a bypassed prefix was proxied"


def test_local_regex_and_default_bypass(ss, tmp_path, echo):
    """[bypass_all] with a regex in [proxy_list]: only matching names go
    through the server."""
    acl = write_acl(tmp_path, "[bypass_all]\n[proxy_list]\n^local(host)?$\n")
    server = server_v(ss)
    local = ss.local(server, extra=["--acl", acl])
    with sslib.socks5_connect(local.addr, "localhost", echo.port, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(3000), timeout=T(10))
    with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(3000), timeout=T(10))
    assert connects_logged(server) == ["localhost:%d" % echo.port]


def test_tunnel_bypass(ss, tmp_path, echo2):
    acl = write_acl(tmp_path, "[bypass_list]\n127.0.0.2\n")
    server = server_v(ss)
    tunnel = ss.tunnel(server, echo2.addr, extra=["--acl", acl])
    with sslib.connect(*tunnel.addr) as s:
        sslib.echo_check(s, os.urandom(100000), timeout=T(10))
        s.shutdown(socket.SHUT_WR)
        assert sslib.recv_all(s, timeout=T(5)) == b""
    assert connects_logged(server) == []


def test_server_blocks_outbound_tcp(ss, tmp_path, echo, echo2):
    acl = write_acl(tmp_path, "[outbound_block_list]\n127.0.0.2\n||blocked.test\n")
    server = server_v(ss, extra=["--acl", acl])
    local = ss.local(server)
    with sslib.socks5_connect(local.addr, *echo2.addr, timeout=T(5)) as s:
        s.sendall(b"hello")
        state, data = sslib.wait_closed(s, T(5))
    assert data == b"" and state in ("eof", "reset"), (state, data)
    assert echo2.accepted == 0, "a blocked target was reached"
    with sslib.socks5_connect(local.addr, "blocked.test", 80, timeout=T(5)) as s:
        s.sendall(b"hello")
        state, data = sslib.wait_closed(s, T(5))
    assert data == b"" and state in ("eof", "reset")
    with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
        sslib.echo_check(s, os.urandom(1000), timeout=T(10))
    assert "outbound block list" in server.program.output()


def test_server_blocks_outbound_udp(ss, tmp_path):
    acl = write_acl(tmp_path, "[outbound_block_list]\n127.0.0.2\n|localhost\n")
    server = ss.server(extra=["-u", "-v", "--acl", acl])
    with ssudp.UdpEcho(host=LOOP2) as blocked, ssudp.UdpEcho() as allowed:
        local = ss.local(server, extra=["-u"])
        app = ssudp.App("socks", local, blocked.addr)
        app.send(b"blocked?")
        app.nothing(HOLD)
        assert blocked.count() == 0, "a datagram reached a blocked target"
        app.assoc.send("localhost", allowed.addr[1], b"by name")
        app.nothing(HOLD)
        assert allowed.count() == 0, "a datagram reached a target blocked by name"
        app2 = ssudp.App("socks", local, allowed.addr)
        ssudp.check_exchange(app2, b"allowed")
    assert "outbound block list" in server.program.output()


def _hold_open(addr, source):
    """Connects from source, sends garbage; how the connection ends within HOLD."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(T(5))
    s.connect(addr)
    with s:
        try:
            s.sendall(os.urandom(100))
        except OSError:
            return "reset"
        return sslib.wait_closed(s, HOLD)[0]


def test_server_refuses_clients_by_address(ss, tmp_path):
    """[reject_all] with 127.0.0.2 in [white_list]: a client from 127.0.0.1
    is closed at once; one from 127.0.0.2 is served (garbage is read until it
    closes, as for any client)."""
    acl = write_acl(tmp_path, "[reject_all]\n[white_list]\n127.0.0.2\n")
    server = server_v(ss, extra=["--acl", acl, "-u"])
    assert _hold_open(server.addr, "127.0.0.1") in ("eof", "reset")
    assert _hold_open(server.addr, LOOP2) == "open"
    assert "refused by the ACL" in server.program.output()
    # UDP: datagrams from a refused address are dropped before decryption.
    with ssudp.udp_socket() as u:
        u.sendto(os.urandom(100), server.addr)
    time.sleep(0.3)
    assert "client refused by the ACL" in server.program.output()


@pytest.mark.parametrize("prog", ("ss-local", "ss-server"))
def test_bad_acl_stops_startup(ss, tmp_path, prog):
    acl = write_acl(tmp_path, "[bypass_list]\n10.0.0.0/8\n10.0.0.0/33\n")
    args = ["-s", "127.0.0.1", "-p", "1", "-k", "x", "--acl", acl]
    if prog == "ss-local":
        args += ["-l", str(sslib.free_port())]
    rc, p = ss.run(prog, args)
    assert rc not in (None, 0)
    assert "rules.acl:3:" in p.stderr() and "10.0.0.0/33" in p.stderr(), p.stderr()


@pytest.mark.parametrize("no_splice", (False, True))
def test_bypassed_bytes_are_spliced(ss, tmp_path, echo2, no_splice):
    """A bypassed connection copies nothing in user space when splice(2) is
    available, and everything with SS_NO_SPLICE=1; the counts agree."""
    acl = write_acl(tmp_path, "[bypass_list]\n127.0.0.2\n")
    server = server_v(ss)
    env = {"SS_NO_SPLICE": "1"} if no_splice else None
    local = ss.local(server, extra=["--acl", acl, "-v", "-v"], env=env)
    data = os.urandom(4 << 20)
    with sslib.socks5_connect(local.addr, *echo2.addr, timeout=T(5)) as s:
        sslib.echo_check(s, data, timeout=T(20))
    deadline = time.monotonic() + T(5)
    found = []
    while not found and time.monotonic() < deadline:
        found = re.findall(r"closed, (\d+) bytes up, (\d+) bytes down, (\d+) spliced "
                           r"\(bypassed\)", local.program.output())
        time.sleep(0.05)
    assert found, "no bypassed connection logged"
    up, down, spliced = (int(x) for x in found[0])
    assert up == down == len(data)
    assert spliced == (0 if no_splice else 2 * len(data)), spliced
