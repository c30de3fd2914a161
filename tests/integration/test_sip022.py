# SPDX-License-Identifier: MIT
"""Shadowsocks 2022 (SIP022, SIP023 identity headers) end to end: our
ss-local / ss-tunnel with our ss-server for every 2022 method, and each of
our programs against ss2022peer, an independent encoder/decoder on
python3-cryptography and b3sum. Replays, clocks 60 s off, responses bound to
another request, several users on one port, UDP across a server restart."""

import json
import os
import socket
import threading
import time

import pytest

import ss2022peer as peer
import sslib
import ssudp
from sslib import T

MiB = 1 << 20
VIAS = ("socks", "tunnel")
METHODS = sslib.SIP022_METHODS
AES_METHODS = [m for m in METHODS if "aes" in m]
App, check_exchange = ssudp.App, ssudp.check_exchange
HOLD = 1.0  # how long a refused connection is watched for anything to get through


def b64(key):
    import base64
    return base64.b64encode(key).decode()


# ---------------------------------------------------------------------------
# TCP through our own pair

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("via", VIAS)
def test_echo_sizes(ss, echo, blob, via, method):
    """1 B, 4 KiB and 1 MiB echoed, each on a new connection, then several
    exchanges on one."""
    open_, _, _ = ss.path(via, echo.addr, method=method)
    for n in (1, 4096, MiB):
        with open_() as s:
            sslib.echo_check(s, blob(n), timeout=T(30))
    with open_() as s:
        for n in (1, 100, 70000, 1):
            sslib.echo_check(s, os.urandom(n), timeout=T(30))


@pytest.mark.parametrize("method,via", [(METHODS[0], "socks"), (METHODS[1], "tunnel"),
                                        (METHODS[2], "socks")])
def test_echo_64mib(ss, echo, blob, via, method):
    open_, _, _ = ss.path(via, echo.addr, method=method)
    with open_() as s:
        sslib.echo_check(s, blob(64 * MiB), timeout=T(90))


@pytest.mark.parametrize("method", METHODS)
def test_server_speaks_first(ss, blob, method):
    """A target that talks before the client sends anything: the client's
    request goes out with padding alone after its short wait, the answer
    comes back, and so does the half-close."""
    data = blob(300000)
    with sslib.ServerFirstServer(data) as target:
        open_, _, _ = ss.path("tunnel", target.addr, method=method)
        with open_() as s:
            got = sslib.recv_all(s, timeout=T(30))
            assert got == data, "got %d of %d bytes from a server-first target" % (
                len(got), len(data))


@pytest.mark.parametrize("method", METHODS)
def test_parallel(ss, echo, method):
    open_, _, _ = ss.path("socks", echo.addr, method=method)
    socks = [open_() for _ in range(32)]
    try:
        payloads = [os.urandom(1000 + i) for i in range(len(socks))]
        for s, p in zip(socks, payloads):
            s.sendall(p)
        for s, p in zip(socks, payloads):
            s.settimeout(T(10))
            assert sslib.recv_exact(s, len(p)) == p
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------------------
# Our ss-server against the independent client

@pytest.mark.parametrize("method", METHODS)
def test_server_answers_independent_client(ss, echo, method):
    """A request sealed by ss2022peer gets an echo whose response header is
    type 1, bound to the request's salt, stamped with the current time."""
    server = ss.server(method=method)
    psk = peer.ref_key(server.password)
    salt, req = peer.request(method, [psk], peer.addr_bytes(*echo.addr), payload=b"ping",
                             chunks=[b"more"])
    with peer.connect(server.addr) as s:
        s.sendall(req)
        o, kind, ts, req_salt, first = peer.read_response(s, method, psk, T(5))
        got = first
        while len(got) < 8:
            got += peer.read_chunk(s, o, T(5))
    assert kind == 1, "response header type %d" % kind
    assert req_salt == salt, "the response is bound to another request salt"
    assert abs(ts - time.time()) <= 5, "response timestamp %d is off" % ts
    assert got == b"pingmore"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("skew", (-60, 60))
def test_server_refuses_clock_off(ss, echo, method, skew):
    """A request stamped 60 s before or after now never reaches the target,
    and the connection gets no answer (it is read until the client
    closes)."""
    server = ss.server(method=method)
    psk = peer.ref_key(server.password)
    _, req = peer.request(method, [psk], peer.addr_bytes(*echo.addr), payload=b"ping",
                          ts=int(time.time()) + skew)
    with peer.connect(server.addr) as s:
        s.sendall(req)
        state, data = sslib.wait_closed(s, HOLD)
    assert (state, data) == ("open", b""), "a request 60 s off got %s %r" % (state, data)
    assert echo.records == [], "a request 60 s off reached the target"
    # The same request with the right time goes through.
    _, req = peer.request(method, [psk], peer.addr_bytes(*echo.addr), payload=b"ping")
    with peer.connect(server.addr) as s:
        s.sendall(req)
        assert peer.read_response(s, method, psk, T(5))[4] == b"ping"


@pytest.mark.parametrize("method", METHODS)
def test_replayed_first_flight(ss, echo, method):
    """The first flight of a real ss-local, captured and sent again: the
    first copy reaches the target, the replay does not."""
    server = ss.server(method=method)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), method,
                                         server.password, echo.addr, b"hello")
    with peer.connect(server.addr) as s:
        s.sendall(stream)
        s.settimeout(T(5))
        assert s.recv(1), "the first copy got no answer"
        assert echo.wait_records(1, T(5)), "the first copy did not reach the target"
    with peer.connect(server.addr) as s:
        s.sendall(stream)
        state, data = sslib.wait_closed(s, HOLD)
        assert (state, data) == ("open", b""), "the replay got %s %r" % (state, data)
    time.sleep(0.2)
    assert len(echo.records) == 1, "the replayed flight reached the target again"


# ---------------------------------------------------------------------------
# Our clients against the independent server

class PeerServer(sslib.TcpServer):
    """A SIP022 server on ss2022peer: reads the request, records it, and
    answers with reply (a function of the request's salt giving the bytes
    to send)."""

    def __init__(self, method, psk, reply, **kw):
        self.method, self.psk, self.reply = method, psk, reply
        super().__init__(**kw)

    def handle(self, conn, record):
        o, salt, kind, ts, addr, plen, payload = peer.read_request(conn, self.method,
                                                                   self.psk, T(5))
        record.update(kind=kind, ts=ts, addr=addr, padding=plen, payload=payload)
        conn.sendall(self.reply(salt))
        conn.settimeout(T(5))
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


def _via_peer(ss, method, reply, host, port, payload):
    """ss-local to a PeerServer: connects through it to (host, port), sends
    payload, and returns (the request record, how the connection ended, the
    bytes the application got)."""
    psk = os.urandom(sslib.KEY_LEN[method])
    with PeerServer(method, psk, lambda salt: reply(psk, salt)) as srv:
        fake = sslib.Server(None, sslib.LOOPBACK4, srv.port, method, b64(psk))
        local = ss.local(fake)
        # The payload goes with the request, so that it is in ss-local's
        # hands before the server connects, however slow the machine.
        with sslib.socks5_connect(local.addr, host, port, timeout=T(5), early=payload) as s:
            state, data = sslib.wait_closed(s, HOLD)
        recs = srv.wait_records(1, T(5))
    assert recs, "the request never reached the peer server"
    return recs[0], state, data


@pytest.mark.parametrize("method", METHODS)
def test_client_request_to_independent_server(ss, method):
    """ss-local's request opens with the independent decoder: type 0, the
    current time, the target's address, the first payload in the header
    and no padding with it; the answer bound to its salt comes through."""
    rec, state, data = _via_peer(
        ss, method, lambda psk, salt: peer.response_stream(method, psk, salt, b"world")[0],
        "example.test", 8443, b"hello")
    assert rec["kind"] == 0
    assert abs(rec["ts"] - time.time()) <= 5
    assert rec["addr"] == peer.addr_bytes("example.test", 8443)
    assert rec["payload"] == b"hello" and rec["padding"] == 0
    assert data == b"world", "the answer did not come through: %s %r" % (state, data)


@pytest.mark.parametrize("method", METHODS)
def test_client_pads_empty_request(ss, method):
    """With no first payload the request carries 1..900 bytes of padding."""
    rec, state, data = _via_peer(
        ss, method, lambda psk, salt: peer.response_stream(method, psk, salt, b"x")[0],
        "127.0.0.1", 9, b"")
    assert rec["payload"] == b"" and 1 <= rec["padding"] <= 900, rec
    assert data == b"x"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fault", ("clock", "salt"))
def test_client_refuses_bad_response(ss, method, fault):
    """An answer stamped 60 s ago, or bound to another request's salt, is
    refused: none of it reaches the application, and the connection ends."""
    n = sslib.SALT_LEN[method]

    def reply(psk, salt):
        if fault == "clock":
            return peer.response_stream(method, psk, salt, b"bad", ts=int(time.time()) - 60)[0]
        return peer.response_stream(method, psk, os.urandom(n), b"bad")[0]

    rec, state, data = _via_peer(ss, method, reply, "127.0.0.1", 9, b"hi")
    assert rec["payload"] == b"hi"
    assert data == b"", "a bad response delivered %r" % data
    assert state in ("eof", "reset"), "the connection stayed %s" % state


# ---------------------------------------------------------------------------
# Several users on one port (SIP023)

def _users_server(ss, tmp_path, method, users):
    ipsk = os.urandom(sslib.KEY_LEN[method])
    conf = {"method": method, "password": b64(ipsk), "mode": "tcp_and_udp",
            "users": [{"name": n, "password": b64(k)} for n, k in users]}
    path = tmp_path / "server.json"
    path.write_text(json.dumps(conf))
    args = lambda port: ["-c", str(path), "-s", sslib.LOOPBACK4, "-p", port, "-v"]
    p, port = ss.procs.start_listening(ss.exe("ss-server"), args)
    return ipsk, sslib.Server(p, sslib.LOOPBACK4, port, method, b64(ipsk))


@pytest.mark.parametrize("method", AES_METHODS)
def test_two_users_and_a_stranger(ss, tmp_path, echo, method):
    n = sslib.KEY_LEN[method]
    alice, bob, eve = (os.urandom(n) for _ in range(3))
    ipsk, server = _users_server(ss, tmp_path, method, [("alice", alice), ("bob", bob)])
    for name, upsk in (("alice", alice), ("bob", bob)):
        local = ss.local(server, password="%s:%s" % (b64(ipsk), b64(upsk)))
        with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
            sslib.echo_check(s, os.urandom(5000), timeout=T(10))
    assert len(echo.records) == 2
    out = server.program.output()
    assert "user alice" in out and "user bob" in out, out[-2000:]
    # A PSK the server does not know: nothing reaches the target.
    local = ss.local(server, password="%s:%s" % (b64(ipsk), b64(eve)))
    with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
        s.sendall(b"let me in")
        state, data = sslib.wait_closed(s, HOLD)
    assert data == b""
    time.sleep(0.2)
    assert len(echo.records) == 2, "an unknown user reached the target"


@pytest.mark.parametrize("method", AES_METHODS)
def test_users_udp(ss, tmp_path, method):
    n = sslib.KEY_LEN[method]
    alice, bob, eve = (os.urandom(n) for _ in range(3))
    ipsk, server = _users_server(ss, tmp_path, method, [("alice", alice), ("bob", bob)])
    with ssudp.UdpEcho() as uecho:
        for upsk in (alice, bob):
            client = ss.tunnel(server, uecho.addr, password="%s:%s" % (b64(ipsk), b64(upsk)),
                               extra=["-u"])
            app = App("tunnel", client, uecho.addr)
            for size in (1, 1200, 30000):
                check_exchange(app, os.urandom(size))
            app.close()
        before = uecho.count()
        client = ss.tunnel(server, uecho.addr, password="%s:%s" % (b64(ipsk), b64(eve)),
                           extra=["-u"])
        app = App("tunnel", client, uecho.addr)
        app.send(b"let me in")
        app.nothing(HOLD)
        assert uecho.count() == before, "an unknown user's datagram reached the target"
    out = server.program.output()
    assert "user alice: new session" in out and "user bob: new session" in out


# ---------------------------------------------------------------------------
# UDP

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("via", VIAS)
def test_udp_sizes(ss, via, method):
    server = ss.server(method=method, extra=["-u"])
    with ssudp.UdpEcho() as uecho:
        if via == "socks":
            client = ss.local(server, extra=["-u"])
        else:
            client = ss.tunnel(server, uecho.addr, extra=["-u"])
        app = App(via, client, uecho.addr)
        for n in (1, 2, 100, 1200, 4096, 8000, 30000, 65000):
            check_exchange(app, os.urandom(n))
        app.close()


@pytest.mark.parametrize("method", METHODS)
def test_udp_survives_server_restart(ss, method):
    """The server restarts on the same port with the same key: it has
    forgotten every session and answers from a new session id, which the
    client takes."""
    psk = sslib.random_psk(method)
    server = ss.server(method=method, password=psk, extra=["-u"])
    with ssudp.UdpEcho() as uecho:
        client = ss.tunnel(server, uecho.addr, extra=["-u"])
        app = App("tunnel", client, uecho.addr)
        check_exchange(app, b"before")
        server.program.terminate()
        args = ["-s", server.host, "-p", str(server.port), "-m", method, "-k", psk, "-u"]
        p = ss.procs.start(ss.exe("ss-server"), args)
        p.wait_listening(server.host, server.port)
        deadline = time.monotonic() + T(10)
        while True:
            app.send(b"after")
            try:
                assert app.recv(timeout=0.5) == b"after"
                break
            except (socket.timeout, TimeoutError):
                if time.monotonic() > deadline:
                    raise AssertionError("no answer after the server restarted")
        check_exchange(app, os.urandom(3000))
        app.close()


@pytest.mark.parametrize("method", ("2022-blake3-aes-128-gcm", "2022-blake3-chacha20-poly1305"))
def test_udp_replayed_packet(ss, method):
    """A packet of a real ss-tunnel, captured and sent to ss-server twice:
    the target sees it once, and only one answer comes back."""
    psk = sslib.random_psk(method)
    with ssudp.UdpEcho() as uecho:
        cap = ssudp.udp_socket()
        with cap:
            fake = sslib.Server(None, sslib.LOOPBACK4, cap.getsockname()[1], method, psk)
            client = ss.tunnel(fake, uecho.addr, extra=["-u"])
            app = App("tunnel", client, uecho.addr)
            app.send(b"once")
            packet, _ = cap.recvfrom(65536)
            app.close()
        server = ss.server(method=method, password=psk, extra=["-u"])
        with ssudp.udp_socket() as s:
            for _ in range(2):
                s.sendto(packet, server.addr)
                time.sleep(0.2)
            s.settimeout(T(5))
            s.recvfrom(65536)
            ssudp.recv_nothing(s, HOLD)
        assert uecho.count() == 1, "the replayed packet reached the target %d times" % (
            uecho.count())
