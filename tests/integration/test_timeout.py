# SPDX-License-Identifier: MIT
"""-t: idle connections are closed, busy ones (either direction) are not."""

import os
import socket
import threading
import time

import pytest

import sslib
from sslib import T

TIMEOUT = 2  # seconds, given to both programs
SURVIVE = 5.0  # an active connection must outlive 2.5 timeouts


class DripServer(sslib.TcpServer):
    """Sends `chunk` bytes every `interval` seconds, `count` times, then
    shuts down its write side and waits for the peer to close."""

    def __init__(self, chunk, interval, count, **kw):
        self.chunk, self.interval, self.count = chunk, interval, count
        super().__init__(**kw)

    def handle(self, conn, record):
        for _ in range(self.count):
            conn.sendall(self.chunk)
            time.sleep(self.interval)
        conn.shutdown(socket.SHUT_WR)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


@pytest.mark.parametrize("via", ("socks", "tunnel"))
def test_idle_connection_closed_active_survives(ss, echo, via):
    open_, _, _ = ss.path(via, echo.addr, server_kw={"timeout": TIMEOUT},
                          client_kw={"timeout": TIMEOUT})
    idle, active = open_(), open_()
    try:
        sslib.small_exchange(idle, 100)
        sslib.small_exchange(active, 100)
        t0 = time.monotonic()
        closed_at, state = None, None
        give_up = t0 + max(T(4.5), SURVIVE)
        while True:
            now = time.monotonic()
            if closed_at is None and now > give_up:
                break
            if closed_at is not None and now - t0 > SURVIVE:
                break
            sslib.small_exchange(active, 64)
            if closed_at is None:
                st, data = sslib.wait_closed(idle, 0.2)
                assert data == b"", "data on an idle connection"
                if st != "open":
                    closed_at, state = time.monotonic() - t0, st
            else:
                time.sleep(0.2)
        assert closed_at is not None, "idle connection still open after %.1fs with -t %d" % (
            time.monotonic() - t0, TIMEOUT)
        assert state == "eof", "idle connection ended with a %s" % state
        assert closed_at >= TIMEOUT - 0.5, "idle connection closed after only %.2fs" % closed_at
        sslib.small_exchange(active, 1000)
    finally:
        idle.close()
    # The idle connection's leg to the target is gone as well; only the
    # active one remains open there.
    deadline = time.monotonic() + T(5)
    while time.monotonic() < deadline:
        with echo.lock:
            open_recs = [r for r in echo.records if not r["done"].is_set()]
        if len(open_recs) <= 1:
            break
        time.sleep(0.05)
    assert len(open_recs) == 1, "%d connections to the target still open" % len(open_recs)
    active.close()


def test_one_way_traffic_is_not_idle(ss, procs):
    """Traffic in one direction only (upload to a silent sink, download from
    a target while the client is silent) keeps a connection alive."""
    chunk, interval = os.urandom(512), 0.25
    count = int(SURVIVE / interval) + 1
    with sslib.CaptureServer(quiet=T(30)) as sink, \
            DripServer(chunk, interval, count) as drip:
        server = ss.server(timeout=TIMEOUT)
        local = ss.local(server, timeout=TIMEOUT)
        up = sslib.socks5_connect(local.addr, *sink.addr)
        down = sslib.socks5_connect(local.addr, *drip.addr)
        result = {}

        def download():
            try:
                result["down"] = sslib.recv_all(down, timeout=SURVIVE + T(10))
            except Exception as e:  # reported below
                result["down"] = e

        t = threading.Thread(target=download, daemon=True)
        t.start()
        try:
            up.settimeout(T(5))
            for _ in range(count):
                up.sendall(chunk)
                time.sleep(interval)
            want = count * len(chunk)
            deadline = time.monotonic() + T(5)
            while time.monotonic() < deadline:
                with sink.lock:
                    got = max([len(r.get("data", b"")) for r in sink.records] or [0])
                if got >= want:
                    break
                time.sleep(0.05)
            assert got == want, "upload-only connection: sink got %d of %d bytes" % (got, want)
            t.join(T(15))
            down_data = result.get("down")
            assert not isinstance(down_data, Exception), "download failed: %r" % down_data
            assert down_data == chunk * count, "download-only connection got %s of %d bytes" % (
                None if down_data is None else len(down_data), count * len(chunk))
        finally:
            up.close()
            down.close()


class UnansweredPort:
    """A loopback port whose accept queue is full, so the kernel drops every
    further SYN to it: a connect there waits until someone gives up."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind((sslib.LOOPBACK4, 0))
        self.listener.listen(0)
        self.addr = self.listener.getsockname()
        self.fillers = []
        for _ in range(3):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(self.addr)
            self.fillers.append(s)
        time.sleep(0.1)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(self.addr)
            answered = True
        except (socket.timeout, OSError):
            answered = False
        finally:
            probe.close()
        assert not answered, "a full accept queue still took a connection"

    def close(self):
        for s in self.fillers + [self.listener]:
            s.close()


def test_lookup_and_connect_share_the_connect_timeout(ss):
    """ss-server gives up on a target min(-t, 10) seconds after the request,
    the name lookup included: a slow lookup does not restart the clock for
    the connect that follows it."""
    delay, connect_timeout = 3.5, 10
    hole = UnansweredPort()
    with sslib.DnsResponder(delay=delay) as dns:
        try:
            server = ss.server(timeout=14, extra=["-d", dns.addr])
            tunnel = ss.tunnel(server, ("unanswered.test", hole.addr[1]))
            sock = sslib.connect(*tunnel.addr)
            try:
                sock.sendall(b"hello")
                t0 = time.monotonic()
                state, data = sslib.wait_closed(sock, connect_timeout + delay + T(3))
                took = time.monotonic() - t0
            finally:
                sock.close()
        finally:
            hole.close()
    assert dns.queries >= 1, "ss-server did not ask the DNS responder"
    assert data == b"" and state != "open", "still open after %.1f s (%s)" % (took, state)
    # Both figures are timers, not work: a sanitizer build keeps them.
    assert connect_timeout - 0.5 <= took < connect_timeout + 1.5, (
        "closed %.1f s after the request; the lookup took %.1f s and the connect "
        "timeout is %d s" % (took, delay, connect_timeout))


def test_client_bytes_while_the_server_resolves(ss, echo):
    """Bytes that reach ss-server while it still looks the target up wait in
    the kernel: no busy loop on the readable socket, and all of them reach
    the target, in order, once it is connected."""
    delay = 0.8
    pieces = [os.urandom(700) for _ in range(4)]
    with sslib.DnsResponder(delay=delay) as dns:
        server = ss.server(extra=["-d", dns.addr])
        tunnel = ss.tunnel(server, ("echo.test", echo.addr[1]))
        cpu0 = sslib.cpu_seconds(server.program.pid)
        sock = sslib.connect(*tunnel.addr)
        try:
            sock.settimeout(T(10))
            for piece in pieces:
                sock.sendall(piece)
                time.sleep(delay / 5)
            got = sslib.recv_exact(sock, sum(len(p) for p in pieces))
        finally:
            sock.close()
        cpu = sslib.cpu_seconds(server.program.pid) - cpu0
    assert dns.queries >= 1, "ss-server did not ask the DNS responder"
    assert got == b"".join(pieces)
    assert cpu < 0.3, "ss-server spent %.2f s of CPU waiting %.1f s for a lookup" % (cpu, delay)
