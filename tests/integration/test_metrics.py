# SPDX-License-Identifier: MIT
"""--metrics ADDR:PORT: ss-server serves its figures as Prometheus text at
GET /metrics, summed over its workers: the plaintext bytes each way per
port and user (exactly what the clients sent and got), the connections,
the UDP datagrams and associations, the refusals. Anything else is
refused (404, 405, 400) and a garbage request neither crashes nor hangs
it. Parsed with prometheus_client, the format's reference parser."""

import base64
import json
import os
import socket
import time

import pytest

import sslib
import ssudp
from sslib import T, wait_for

parser = pytest.importorskip("prometheus_client.parser")

METHOD = "aes-256-gcm"


_get = sslib.metrics_get
_samples = sslib.metrics_samples
_v = sslib.metric


def _server(ss, extra=()):
    mport = sslib.free_port()
    server = ss.server(method=METHOD, extra=["-u", "--workers", "2", "--metrics",
                                             str(mport)] + list(extra))
    assert wait_for(lambda: sslib.accepts(mport), T(5))
    return server, mport


def test_figures_equal_the_bytes_relayed(ss, echo, blob):
    server, mport = _server(ss)
    client = ss.local(server, extra=["-u"])
    port = server.port
    sizes = (123456, 1, 40000)
    held = []
    for n in sizes:
        s = sslib.socks5_connect(client.addr, *echo.addr)
        data = blob(n)
        s.sendall(data)
        assert sslib.recv_exact(s, n) == data
        held.append(s)
    m = _samples(mport)
    # Open connections count as they go.
    assert _v(m, "ss_bytes_total", port=port, user="", direction="up") == sum(sizes)
    assert _v(m, "ss_bytes_total", port=port, user="", direction="down") == sum(sizes)
    assert _v(m, "ss_connections_active", port=port, user="") == len(sizes)
    assert _v(m, "ss_connections_total", port=port, user="") == len(sizes)
    for s in held:
        s.close()
    assert wait_for(lambda: _v(_samples(mport), "ss_connections_active", port=port,
                               user="") == 0, T(5))

    with ssudp.UdpEcho() as uecho:
        app = ssudp.App("socks", client, uecho.addr)
        for i in range(5):
            ssudp.check_exchange(app, os.urandom(100 + i))
        m = _samples(mport)
        app.close()
    assert _v(m, "ss_udp_datagrams_total", port=port, direction="up") == 5
    assert _v(m, "ss_udp_datagrams_total", port=port, direction="down") == 5
    assert _v(m, "ss_udp_associations", port=port) == 1
    assert _v(m, "ss_connections_total", port=port, user="") == len(sizes)
    assert _v(m, "ss_refused_total", port=port, reason="auth") == 0
    info = [k for k in m if k[0] == "ss_build_info"]
    assert len(info) == 1 and m[info[0]] == 1, info


def test_refusals_are_counted(ss):
    server, mport = _server(ss)
    # Random bytes: a salt, a length block and its tag that do not open.
    with sslib.connect(*server.addr) as s:
        s.sendall(os.urandom(sslib.SALT_LEN[METHOD] + 2 + sslib.TAG_LEN + 40))
        sslib.wait_closed(s, 0.3)
    assert wait_for(lambda: _v(_samples(mport), "ss_refused_total", port=server.port,
                               reason="auth") == 1, T(5))
    m = _samples(mport)
    assert _v(m, "ss_connections_total", port=server.port, user="") == 0


def b64(key):
    return base64.b64encode(key).decode()


def test_users_have_their_own_rows(ss, tmp_path, echo, blob):
    """A port with users (SIP023): each user's bytes in its own row, the
    names escaped as label values."""
    method = "2022-blake3-aes-256-gcm"
    n = sslib.KEY_LEN[method]
    ipsk, alice, bob = (os.urandom(n) for _ in range(3))
    odd = 'b"o\\b'
    mport = sslib.free_port()
    conf = {"method": method, "password": b64(ipsk), "mode": "tcp_only",
            "metrics": "127.0.0.1:%d" % mport,
            "users": [{"name": "alice", "password": b64(alice)},
                      {"name": odd, "password": b64(bob)}]}
    path = tmp_path / "server.json"
    path.write_text(json.dumps(conf))
    p, port = ss.procs.start_listening(
        ss.exe("ss-server"), lambda port: ["-c", str(path), "-s", sslib.LOOPBACK4, "-p", port])
    server = sslib.Server(p, sslib.LOOPBACK4, port, method, b64(ipsk))
    for upsk, size in ((alice, 1000), (bob, 7777)):
        local = ss.local(server, password="%s:%s" % (b64(ipsk), b64(upsk)))
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            data = blob(size)
            s.sendall(data)
            assert sslib.recv_exact(s, size) == data
    m = _samples(mport)
    assert _v(m, "ss_bytes_total", port=port, user="alice", direction="up") == 1000
    assert _v(m, "ss_bytes_total", port=port, user=odd, direction="down") == 7777
    assert _v(m, "ss_bytes_total", port=port, user="", direction="up") == 0
    assert _v(m, "ss_connections_total", port=port, user=odd) == 1


def test_other_requests_are_refused(ss):
    _server_, mport = _server(ss)
    assert _get(mport, "/metrics", "POST")[0] == 405
    assert _get(mport, "/", "GET")[0] == 404
    assert _get(mport, "/metricsx", "GET")[0] == 404
    assert _get(mport, "/metrics?x=1", "GET")[0] == 200
    # Garbage: answered 400 at once, and the server goes on.
    with socket.create_connection((sslib.LOOPBACK4, mport), timeout=T(5)) as s:
        s.sendall(b"\x00\x01\x02garbage\r\n\r\n")
        data = sslib.recv_all(s, timeout=T(5))
    assert data.startswith(b"HTTP/1.1 400 "), data
    # A request head larger than the server reads: 400, not a hang.
    with socket.create_connection((sslib.LOOPBACK4, mport), timeout=T(5)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000)
        data = sslib.recv_all(s, timeout=T(5))
    assert data.startswith(b"HTTP/1.1 400 "), data
    # Clients that say nothing hold no slot for ever (5 s each): more of
    # them than the server serves at once, then a scrape still works.
    idle = [socket.create_connection((sslib.LOOPBACK4, mport)) for _ in range(6)]
    t0 = time.monotonic()
    status, _, _ = _get(mport, timeout=15)
    assert status == 200
    assert time.monotonic() - t0 < T(12)
    for s in idle:
        s.close()
    assert _samples(mport)


def test_metrics_are_no_target(ss, echo):
    """A client cannot scrape the server's metrics through the relay, at
    their address or at the unspecified one; each try counts as blocked."""
    server, mport = _server(ss)
    client = ss.local(server)
    for host in (sslib.LOOPBACK4, "0.0.0.0"):
        s, rep = sslib.socks5_open(client.addr, host, mport)
        with s:
            if rep == 0:
                try:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                except OSError:
                    pass
                state, data = sslib.wait_closed(s, T(3))
                assert data == b"", data
    m = _samples(mport)
    assert _v(m, "ss_refused_total", port=server.port, reason="blocked") == 2
    # Other targets still go.
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, b"still relays")


def test_sip004_users_have_their_own_rows(ss, tmp_path, echo, blob):
    """A SIP004 port of users: each user's bytes and connections in its
    row, found by the user the codec names."""
    users = [("ann", "aes-256-gcm", sslib.random_password()),
             ("bo", "chacha20-ietf-poly1305", sslib.random_password())]
    mport = sslib.free_port()
    conf = {"method": "aes-256-gcm", "mode": "tcp_only", "metrics": str(mport),
            "users": [{"name": n, "password": pw, "method": m} for n, m, pw in users]}
    path = tmp_path / "users.json"
    path.write_text(json.dumps(conf))
    p, port = ss.procs.start_listening(
        ss.exe("ss-server"), lambda port: ["-c", str(path), "-s", sslib.LOOPBACK4, "-p", port])
    for (name, method, pw), size in zip(users, (2222, 33333)):
        server = sslib.Server(p, sslib.LOOPBACK4, port, method, pw)
        local = ss.local(server, method=method, password=pw)
        for _ in range(2):
            with sslib.socks5_connect(local.addr, *echo.addr) as s:
                data = blob(size)
                s.sendall(data)
                assert sslib.recv_exact(s, size) == data
    m = _samples(mport)
    assert _v(m, "ss_bytes_total", port=port, user="ann", direction="up") == 2 * 2222
    assert _v(m, "ss_bytes_total", port=port, user="bo", direction="down") == 2 * 33333
    assert _v(m, "ss_connections_total", port=port, user="bo") == 2
    assert _v(m, "ss_connections_total", port=port, user="") == 0


def test_block_private_counts_as_blocked(ss, echo):
    server, mport = _server(ss, extra=["--block-private"])
    client = ss.local(server)
    s, rep = sslib.socks5_open(client.addr, *echo.addr)
    with s:
        if rep == 0:
            s.sendall(b"x")
            sslib.wait_closed(s, T(3))
    assert wait_for(lambda: _v(_samples(mport), "ss_refused_total", port=server.port,
                               reason="blocked") == 1, T(5))
    assert echo.accepted == 0


def test_reload_keeps_serving_metrics(procs, ss, echo, tmp_path):
    """SIGHUP: the new configuration's workers take the metrics listener
    over (the port never closes), and their figures go on from the old
    ones' (tests/integration/test_reload.py has more)."""
    import signal
    conf = tmp_path / "server.json"
    port, mport = sslib.free_port(), sslib.free_port()
    password = sslib.random_password()
    conf.write_text(json.dumps({"server": "127.0.0.1", "server_port": port,
                                "password": password, "method": METHOD,
                                "metrics": "127.0.0.1:%d" % mport}))
    p = procs.start(ss.exe("ss-server"), ["-c", str(conf)])
    p.wait_listening(sslib.LOOPBACK4, port)
    assert wait_for(lambda: sslib.accepts(mport), T(5))
    client = ss.local(sslib.Server(None, sslib.LOOPBACK4, port, METHOD, password, None))
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, b"x" * 1000)
    assert wait_for(lambda: _v(_samples(mport), "ss_connections_total", port=port,
                               user="") == 1, T(5))
    os.kill(p.pid, signal.SIGHUP)
    assert wait_for(lambda: "configuration reloaded" in p.output(), T(10)), p.describe()
    m = _samples(mport)
    assert _v(m, "ss_connections_total", port=port, user="") == 1
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, b"y" * 300)
    assert _v(_samples(mport), "ss_bytes_total", port=port, user="", direction="up") == 1300
