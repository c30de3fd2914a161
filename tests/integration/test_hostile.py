# SPDX-License-Identifier: MIT
"""Peers that do not follow the protocol: wrong keys, random bytes, truncated
and replayed streams, resets. ss-server reacts the same way to all of them
(reads and discards until the peer closes or the timeout passes, then closes
without a reset) and keeps serving correct clients."""

import os
import socket
import threading
import time

import pytest

import sslib
from sslib import T

HOSTILE_LENGTHS = (1, 10, 50, 100, 1000, 5000)
HOLD = 1.0  # seconds a hostile connection must stay open (well below -t)


def check_serves(local, echo, nbytes=10000):
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.small_exchange(s, nbytes)


def test_wrong_password(ss, echo):
    server = ss.server(password="right-" + sslib.random_password())
    bad = ss.local(server, password="wrong-" + sslib.random_password())
    try:
        s, rep = sslib.socks5_open(bad.addr, *echo.addr)
    except (sslib.SocksError, OSError):
        s = None  # refusing at the SOCKS5 stage is fine too
    if s is not None:
        with s:
            if rep == 0:
                s.settimeout(T(5))
                s.sendall(os.urandom(65536))
            state, data = sslib.wait_closed(s, 1.5)
            assert data == b"", "a client with the wrong password received %d bytes" % len(data)
    assert echo.accepted == 0, "ss-server connected to the target for a wrong password"
    good = ss.local(server)
    check_serves(good, echo)
    assert echo.accepted == 1


def test_wrong_method(ss, echo):
    """Same password, different AEAD method: nothing gets through."""
    server = ss.server(method="aes-256-gcm", password="pw-" + sslib.random_password())
    bad = ss.local(server, method="chacha20-ietf-poly1305")
    s, rep = sslib.socks5_open(bad.addr, *echo.addr)
    with s:
        if rep == 0:
            s.sendall(os.urandom(4096))
        state, data = sslib.wait_closed(s, 1.5)
        assert data == b""
    assert echo.accepted == 0
    check_serves(ss.local(server), echo)


@pytest.mark.parametrize("n", HOSTILE_LENGTHS)
def test_random_bytes_keep_connection_open(ss, echo, n):
    server = ss.server()
    local = ss.local(server)
    with sslib.connect(*server.addr) as h:
        h.sendall(os.urandom(n))
        state, data = sslib.wait_closed(h, HOLD)
        assert data == b"", "ss-server answered %d random bytes with %d bytes" % (n, len(data))
        assert state == "open", "ss-server ended the connection (%s) after %d random bytes" % (
            state, n)
    check_serves(local, echo)
    assert echo.accepted == 1


@pytest.mark.parametrize("method", (sslib.DEFAULT_METHOD, "2022-blake3-aes-128-gcm",
                                    "2022-blake3-chacha20-poly1305"))
def test_random_bytes_then_peer_close(ss, echo, method):
    """After garbage, a FIN from the peer ends the connection cleanly (no
    reset, no data), whatever the length."""
    server = ss.server(method=method)
    socks = []
    try:
        for n in HOSTILE_LENGTHS:
            h = sslib.connect(*server.addr)
            socks.append(h)
            h.sendall(os.urandom(n))
        time.sleep(0.3)
        for h in socks:
            h.shutdown(socket.SHUT_WR)
        results = [sslib.wait_closed(h, T(5)) for h in socks]
    finally:
        for h in socks:
            h.close()
    for n, (state, data) in zip(HOSTILE_LENGTHS, results):
        assert (state, data) == ("eof", b""), "%d random bytes then FIN: %s, %d bytes" % (
            n, state, len(data))
    check_serves(ss.local(server), echo)


@pytest.mark.parametrize("method", (sslib.DEFAULT_METHOD, "2022-blake3-aes-256-gcm"))
def test_random_bytes_closed_at_timeout_alike(ss, echo, method):
    """With -t 2, every garbage connection stays open ~2 s, then is closed
    with a FIN (no reset), the same for every length."""
    timeout = 2
    server = ss.server(method=method, timeout=timeout)
    socks = []
    try:
        for n in HOSTILE_LENGTHS:
            h = sslib.connect(*server.addr)
            h.sendall(os.urandom(n))
            socks.append((n, h, time.monotonic()))
        time.sleep(HOLD)
        outcome = {}
        for n, h, t0 in socks:
            state, data = sslib.wait_closed(h, max(0.0, t0 + T(6) - time.monotonic()))
            outcome[n] = (state, len(data), time.monotonic() - t0)
    finally:
        for _, h, _ in socks:
            h.close()
    for n, (state, nbytes, after) in outcome.items():
        assert nbytes == 0, "%d random bytes: server sent %d bytes" % (n, nbytes)
        assert state == "eof", "%d random bytes: connection %s after %.1fs" % (n, state, after)
        assert after >= timeout - 0.5, "%d random bytes: closed after only %.2fs" % (n, after)
    check_serves(ss.local(server, timeout=timeout), echo)


def _capture(ss, server, target, payload):
    return sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), server.method,
                                       server.password, target, payload)


@pytest.mark.parametrize("method", ("aes-128-gcm", "chacha20-ietf-poly1305"))
def test_truncated_header(ss, echo, method):
    """Prefixes of a real client stream that end inside the salt, the first
    length chunk, and the first payload chunk."""
    server = ss.server(method=method)
    stream = _capture(ss, server, echo.addr, os.urandom(100))
    salt = sslib.SALT_LEN[method]
    cuts = (salt - 4, salt + 10, salt + 2 + sslib.TAG_LEN + 3)
    socks = []
    try:
        for cut in cuts:
            h = sslib.connect(*server.addr)
            h.sendall(stream[:cut])
            socks.append(h)
        time.sleep(HOLD)
        for cut, h in zip(cuts, socks):
            state, data = sslib.wait_closed(h, 0.05)
            assert (state, data) == ("open", b""), "cut at %d: %s" % (cut, state)
        for h in socks:
            h.shutdown(socket.SHUT_WR)
        for cut, h in zip(cuts, socks):
            state, data = sslib.wait_closed(h, T(5))
            assert (state, data) == ("eof", b""), "cut at %d, then FIN: %s" % (cut, state)
    finally:
        for h in socks:
            h.close()
    assert echo.accepted == 0, "ss-server reached the target from a truncated header"
    check_serves(ss.local(server), echo)


def test_replayed_stream_is_not_served(ss, echo):
    server = ss.server(method="aes-256-gcm")
    payload = os.urandom(1000)
    stream = _capture(ss, server, echo.addr, payload)
    # First use of the captured stream: a valid connection.
    with sslib.connect(*server.addr) as h:
        h.sendall(stream)
        h.settimeout(T(5))
        first = h.recv(65536)
        assert len(first) > 0, "the captured stream was not served the first time"
    assert echo.accepted == 1
    # Second use: the same salt again.
    with sslib.connect(*server.addr) as h:
        h.sendall(stream)
        state, data = sslib.wait_closed(h, HOLD)
        assert data == b"", "a replayed stream got %d bytes back" % len(data)
        assert state == "open", "a replayed stream was answered differently (%s)" % state
    assert echo.accepted == 1, "ss-server connected to the target for a replayed stream"
    check_serves(ss.local(server), echo)
    assert echo.accepted == 2


class _Pusher(threading.Thread):
    """Sends random data on sock until stopped. It works on a duplicate of
    the descriptor (its own timeout) and closes it when it ends, so the
    caller's close() is the last one; sock must have a timeout set."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.stop, self.sent = sock.dup(), threading.Event(), 0
        self.sock.settimeout(0.2)

    def run(self):
        chunk = os.urandom(65536)
        try:
            while not self.stop.is_set():
                try:
                    self.sent += self.sock.send(chunk)
                except socket.timeout:
                    continue
                except OSError:
                    break
        finally:
            self.sock.close()


def _wait_target_closed(target, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with target.lock:
            open_recs = [r for r in target.records if not r["done"].is_set()]
        if not open_recs:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("via", ("socks", "tunnel"))
def test_client_reset_midstream(ss, echo, via):
    """The client resets (SO_LINGER 0) while data flows both ways; the
    programs drop the connection, including its leg to the target, and
    keep serving."""
    open_, _, _ = ss.path(via, echo.addr)
    s = open_()
    s.settimeout(T(5))
    pusher = _Pusher(s)
    pusher.start()
    got = 0
    deadline = time.monotonic() + T(20)
    while got < 2 << 20 and time.monotonic() < deadline:
        got += len(s.recv(262144))
    pusher.stop.set()
    pusher.join(5)
    sslib.hard_close(s)
    assert got >= 2 << 20, "only %d bytes echoed before the reset" % got
    assert _wait_target_closed(echo, T(10)), "the target leg of a reset connection stayed open"
    with open_() as s2:
        sslib.echo_check(s2, os.urandom(1 << 20), timeout=T(20))


def test_client_reset_midstream_at_server(ss, echo):
    """A direct client of ss-server (a real client stream, replayed once)
    resets after data started to flow back."""
    server = ss.server()
    stream = _capture(ss, server, echo.addr, os.urandom(200000))
    h = sslib.connect(*server.addr)
    h.sendall(stream)
    h.settimeout(T(5))
    first = h.recv(65536)
    sslib.hard_close(h)
    assert len(first) > 0, "the captured stream was not served"
    assert _wait_target_closed(echo, T(10)), "the target leg of a reset connection stayed open"
    check_serves(ss.local(server), echo)


class ResetServer(sslib.TcpServer):
    """Reads `after` bytes, then resets the connection."""

    def __init__(self, after, **kw):
        self.after = after
        super().__init__(**kw)

    def handle(self, conn, record):
        got = 0
        while got < self.after:
            data = conn.recv(65536)
            if not data:
                break
            got += len(data)
        sslib.hard_close(conn)


@pytest.mark.parametrize("via", ("socks", "tunnel"))
def test_target_reset_midstream(ss, echo, via):
    """The target resets while the client is sending: the client's
    connection ends promptly; the programs keep serving."""
    with ResetServer(after=256 * 1024) as target:
        open_, server, client = ss.path(via, target.addr)
        s = open_()
        s.settimeout(T(5))
        pusher = _Pusher(s)
        pusher.start()
        try:
            state, _ = sslib.wait_closed(s, T(10))
        finally:
            pusher.stop.set()
            pusher.join(5)
            s.close()
        assert state in ("eof", "reset"), "client connection still open after the target reset"
        if via == "socks":
            with sslib.socks5_connect(client.addr, *echo.addr) as s2:
                sslib.small_exchange(s2, 50000)
        else:
            check_serves(ss.local(server), echo)
