# SPDX-License-Identifier: MIT
"""ss-local's port answers SOCKS4 and SOCKS4a too: real clients (curl)
fetch from a loopback HTTP server through ss-local and ss-server, and raw
requests check the replies to what is refused or malformed."""

import os
import re
import socket
import subprocess
import time

import pytest

import sslib
from ssfixtures import named_server
from sslib import T

NAME = "web.socks4.test"
GRANTED, REJECTED = 90, 91


@pytest.fixture
def pair(ss, tmp_path):
    server = named_server(ss, tmp_path, NAME)
    return server, ss.local(server)


def curl(proxy_flag, local, url):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    out = subprocess.run(["curl", "-q", "-sS", "--max-time", str(T(20)), proxy_flag,
                          "%s:%d" % local.addr, url],
                         capture_output=True, env=env, timeout=T(30))
    assert out.returncode == 0, "curl %s failed: %s" % (proxy_flag, out.stderr.decode())
    return out.stdout


def request(port, ip=(127, 0, 0, 1), cmd=1, userid=b"", host=None):
    msg = bytes([4, cmd]) + port.to_bytes(2, "big") + bytes(ip) + userid + b"\0"
    return msg + (host + b"\0" if host is not None else b"")


def reply(s):
    rep = sslib.recv_exact(s, 8)
    assert rep[0] == 0, "reply version %d, expected 0: %r" % (rep[0], rep)
    return rep[1]


def refused(s, what):
    """A 91 reply, then the connection ends without another byte."""
    rep = reply(s)
    assert rep == REJECTED, "reply %d to %s, expected 91" % (rep, what)
    state, data = sslib.wait_closed(s, T(5))
    assert data == b"" and state != "open", "after 91 to %s: %s, %r" % (what, state, data)


def still_serves(local, echo):
    with sslib.connect(*local.addr) as s:
        s.sendall(request(echo.port, userid=b"again"))
        assert reply(s) == GRANTED
        sslib.small_exchange(s, 2000)


def test_curl_socks4(pair, web):
    _, local = pair
    body = curl("--socks4", local, "http://127.0.0.1:%d/" % web.server_port)
    assert body == web.blob


def test_curl_socks4a_name_resolved_by_server(pair, web):
    _, local = pair
    body = curl("--socks4a", local, "http://%s:%d/" % (NAME, web.server_port))
    assert body == web.blob


def test_early_data_and_userid(pair, echo):
    """Request and first payload in one write: the payload is relayed."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(request(echo.port, userid=b"alice") + b"early data")
        assert reply(s) == GRANTED
        assert sslib.recv_exact(s, 10) == b"early data"
        sslib.small_exchange(s)


def test_split_4a_request(pair, echo):
    """A 4a request arriving one byte at a time."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for b in request(echo.port, ip=(0, 0, 0, 7), userid=b"u", host=NAME.encode()):
            s.sendall(bytes([b]))
            time.sleep(0.01)
        assert reply(s) == GRANTED
        sslib.small_exchange(s)


@pytest.mark.parametrize("msg", (
    request(80, cmd=2), request(80, cmd=9), request(80, userid=b"u" * 256),
    request(80, ip=(0, 0, 0, 1), host=b"h" * 256), request(80, ip=(0, 0, 0, 1), host=b"")),
    ids=("bind", "unknown_command", "long_userid", "long_host", "empty_host"))
def test_refused(pair, echo, msg):
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(msg + b"x" * 100)
        refused(s, msg[:12])
    assert echo.accepted == 0
    still_serves(local, echo)


def test_unbounded_userid_refused_before_its_end(pair, echo):
    """A user id that never ends is refused once it passes the bound."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(bytes([4, 1, 0, 80, 127, 0, 0, 1]) + b"u" * 300)
        refused(s, "an endless user id")
    still_serves(local, echo)


def test_bad_version_goes_the_socks5_way(pair, echo):
    """Neither 4 nor 5: closed as a bad SOCKS5 greeting, nothing relayed."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(bytes([6, 1, 0, 80, 127, 0, 0, 1, 0]))
        state, data = sslib.wait_closed(s, T(5))
        assert data == b"" and state != "open", (state, data)
    assert echo.accepted == 0
    still_serves(local, echo)


def test_unknown_name_ends_without_data(pair, echo):
    """A name ss-server cannot resolve: as for SOCKS5, the grant says the
    server was reached; the connection then ends with nothing relayed."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(request(echo.port, ip=(0, 0, 0, 1), host=b"nowhere.invalid") + b"hello")
        assert reply(s) == GRANTED
        state, data = sslib.wait_closed(s, T(30))
        assert data == b"" and state != "open", (state, data)
    assert echo.accepted == 0


def test_server_not_running(ss, echo):
    dead = sslib.Server(None, "127.0.0.1", sslib.free_port(), sslib.DEFAULT_METHOD,
                        sslib.random_password())
    local = ss.local(dead)
    with sslib.connect(*local.addr) as s:
        s.sendall(request(echo.port))
        refused(s, "a request with the server down")
    assert echo.accepted == 0


def test_udp_only_refuses(ss, echo):
    """-U: the TCP relay is off, so CONNECT gets 91."""
    local = ss.local(ss.server(), extra=["-U"])
    with sslib.connect(*local.addr) as s:
        s.sendall(request(echo.port))
        refused(s, "a request with -U")
    assert echo.accepted == 0


def test_fails_over_to_a_live_server(ss, echo):
    """Two servers, one with nothing listening: every SOCKS4 connection is
    granted, through the live one."""
    server = ss.server()
    local = ss.local(server, extra=["-s", "127.0.0.2", "-v"])
    for _ in range(6):
        with sslib.socks4_connect(local.addr, *echo.addr, timeout=T(10)) as s:
            sslib.small_exchange(s, 500)
    assert echo.accepted == 6
    out = local.program.output()
    assert "127.0.0.2:%d: down" % server.port in out, "the dead server was never tried:\n" + out


def test_acl_bypass(ss, tmp_path, echo):
    """An ACL bypass rule applies to SOCKS4 addresses and SOCKS4a names as
    to SOCKS5 ones: the target is reached without the server (ss-local
    resolves the bypassed name from a hosts file of the test's own)."""
    acl = tmp_path / "bypass.acl"
    acl.write_text("[proxy_all]\n[bypass_list]\n127.0.0.0/8\n|%s\n" % NAME)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 %s\n" % NAME)
    server = ss.server(extra=["-v"])
    local = ss.local(server, extra=["--acl", str(acl), "-v"],
                     env={"SS_HOSTS_FILE": str(hosts)})
    for host in ("127.0.0.1", NAME):
        with sslib.socks4_connect(local.addr, host, echo.port, timeout=T(10)) as s:
            sslib.small_exchange(s, 500)
        assert "bypass %s:%d (ACL)" % (host, echo.port) in local.program.output()
    assert echo.accepted == 2
    assert re.findall(r"connect (\S+)", server.program.output()) == [], \
        server.program.output()
