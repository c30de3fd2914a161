# SPDX-License-Identifier: MIT
"""Replay protection that peers without the key cannot flush.

ss-server remembers the salts of the last "replay_capacity" connections
whose first chunk authenticated (SIP004), and those of datagrams that
opened in a pool of their own. These tests use a small capacity so that a
few hundred connections or datagrams would be enough to push a real salt
out if anything else were recorded."""

import json
import os
import socket

import pytest

import sslib
import ssudp
from sslib import T

CAPACITY = 40
HOLD = 1.0


def _server(ss, tmp_path, method, extra=()):
    conf = tmp_path / "replay.json"
    conf.write_text(json.dumps({"replay_capacity": CAPACITY}))
    return ss.server(method=method, extra=["-c", str(conf)] + list(extra))


def _capture(ss, server, target, payload):
    return sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), server.method,
                                       server.password, target, payload)


def _play(server, stream):
    """Sends a captured first flight; returns what came back (the echo,
    sealed by the server) before the server closed or the time passed."""
    with sslib.connect(*server.addr) as h:
        h.sendall(stream)
        h.settimeout(T(5))
        try:
            return h.recv(65536)
        except socket.timeout:
            return b""


def _assert_refused(server, stream):
    with sslib.connect(*server.addr) as h:
        h.sendall(stream)
        state, data = sslib.wait_closed(h, HOLD)
        assert data == b"", "a replayed first flight got %d bytes back" % len(data)
        assert state == "open", "a replay was answered differently (%s)" % state


def _junk(server, n, salt_len):
    """n connections that each send a salt's worth of random bytes and more
    (enough for a length block and a short payload to fail), then close."""
    for _ in range(n):
        with sslib.connect(*server.addr) as h:
            h.sendall(os.urandom(salt_len + 2 + sslib.TAG_LEN + 64 + sslib.TAG_LEN))
    # A last one held until the server has surely read and refused it, so
    # the ones before it were handled too (one loop, in order of arrival).
    with sslib.connect(*server.addr) as h:
        h.sendall(os.urandom(salt_len + 200))
        state, _ = sslib.wait_closed(h, 0.3)
        assert state == "open"


@pytest.mark.parametrize("method", ("aes-256-gcm", "chacha20-ietf-poly1305"))
def test_junk_connections_do_not_flush_salts(ss, echo, tmp_path, method):
    server = _server(ss, tmp_path, method)
    payload = os.urandom(300)
    stream = _capture(ss, server, echo.addr, payload)
    assert _play(server, stream), "the captured stream was not served"
    assert echo.accepted == 1
    # Ten times the pool's capacity of connections from peers without the
    # key: if their salts were recorded, the real one would be long gone.
    _junk(server, 10 * CAPACITY, sslib.SALT_LEN[method])
    _assert_refused(server, stream)
    assert echo.accepted == 1, "a replayed first flight reached the target"


def test_capacity_is_what_it_says(ss, echo, tmp_path):
    """The positive control: real connections do push a salt out once the
    pool has seen CAPACITY newer ones, so the test above measures the pool
    it configured."""
    method = "aes-256-gcm"
    server = _server(ss, tmp_path, method)
    local = ss.local(server)
    stream = _capture(ss, server, echo.addr, b"first")
    assert _play(server, stream)
    for _ in range(CAPACITY // 2):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 10)
    _assert_refused(server, stream)
    for _ in range(CAPACITY):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 10)
    assert _play(server, stream), "a salt CAPACITY connections old was still remembered"


def test_datagrams_do_not_flush_connection_salts(ss, tmp_path):
    """SIP004 datagrams each bring a fresh salt; they have a pool of their
    own, so a burst of them leaves the connections' salts in place."""
    method = ssudp.Packets.METHOD
    with ssudp.UdpEcho() as uecho, sslib.EchoServer() as echo:
        server = _server(ss, tmp_path, method, extra=["-u"])
        pk = ssudp.Packets(server.password)
        stream = _capture(ss, server, echo.addr, b"tcp")
        assert _play(server, stream)
        with ssudp.udp_socket() as u:
            for i in range(5 * CAPACITY):
                u.sendto(pk.request(uecho.host, uecho.port, b"d%d" % i), server.addr)
                pk.answer(u.recvfrom(65536)[0])  # one at a time: none is lost
            # A datagram replayed is still refused by its own pool.
            first = pk.request(uecho.host, uecho.port, b"once")
            u.sendto(first, server.addr)
            assert pk.answer(u.recvfrom(65536)[0])[3] == b"once"
            u.sendto(first, server.addr)
            ssudp.recv_nothing(u, 0.5)
        _assert_refused(server, stream)
        assert echo.accepted == 1
        assert uecho.count() == 5 * CAPACITY + 1, "a replayed datagram reached the target"


@pytest.mark.parametrize("method", ("2022-blake3-aes-256-gcm",))
def test_junk_does_not_fill_a_2022_pool(ss, echo, tmp_path, method):
    """A SIP022 pool refuses new salts when full rather than forget one
    early; junk must not fill it, or real clients would be refused."""
    server = _server(ss, tmp_path, method)
    _junk(server, 3 * CAPACITY, sslib.SALT_LEN[method])
    local = ss.local(server)
    for _ in range(CAPACITY // 2):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 10)
    assert echo.accepted == CAPACITY // 2


def test_bad_capacity_refused(ss, tmp_path):
    for bad in (0, -1, "many", 1 << 40):
        conf = tmp_path / "bad.json"
        conf.write_text(json.dumps({"replay_capacity": bad}))
        rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-k", "x",
                                    "-m", "aes-256-gcm", "-c", str(conf)])
        assert rc == 1, "replay_capacity %r accepted" % (bad,)
        assert "replay_capacity" in p.stderr()
