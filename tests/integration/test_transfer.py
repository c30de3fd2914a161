# SPDX-License-Identifier: MIT
"""Bytes through ss-local (SOCKS5) or ss-tunnel and ss-server, compared byte
for byte: sizes, methods, parallel connections, half-close, address types."""

import concurrent.futures
import os
import socket
import struct
import time

import pytest

import sslib
from sslib import T

MiB = 1 << 20
VIAS = ("socks", "tunnel")


@pytest.mark.parametrize("method", sslib.AEAD_METHODS)
@pytest.mark.parametrize("via", VIAS)
def test_echo_1mib(ss, echo, blob, via, method):
    open_, _, _ = ss.path(via, echo.addr, method=method)
    with open_() as s:
        sslib.small_exchange(s, 1)
        sslib.echo_check(s, blob(MiB), timeout=T(30))
        sslib.small_exchange(s, 100)


@pytest.mark.parametrize("via,method", [("socks", "aes-256-gcm"),
                                        ("tunnel", "chacha20-ietf-poly1305")])
def test_echo_64mib(ss, echo, blob, via, method):
    open_, _, _ = ss.path(via, echo.addr, method=method)
    with open_() as s:
        sslib.echo_check(s, blob(64 * MiB), timeout=T(90))


@pytest.mark.parametrize("direction", ("upload", "download"))
@pytest.mark.parametrize("via", VIAS)
def test_bulk_one_way_64mib(ss, blob, via, direction):
    """64 MiB in one direction with (almost) nothing coming the other way."""
    data = blob(64 * MiB)
    target = sslib.SinkServer() if direction == "upload" else sslib.SourceServer(data)
    with target:
        open_, _, _ = ss.path(via, target.addr)
        with open_() as s:
            if direction == "upload":
                digest, got, err = sslib.exchange(s, struct.pack("!Q", len(data)) + data, 32,
                                                  timeout=T(90))
                assert err is None, "upload failed: %r" % err
                assert got == 32, "no digest from the sink (%d bytes)" % got
                rec = target.wait_for(lambda r: "digest" in r, T(5))
                assert rec is not None, "the sink never finished"
                n, want = rec["received"], len(data)
                assert n == want, "sink got %d of %d bytes" % (n, want)
                assert rec["digest"] == sslib.sha256(data), "uploaded bytes differ"
                assert digest == sslib.sha256(sslib.sha256(data)), "the digest came back wrong"
            else:
                digest, got, err = sslib.exchange(s, b"!", len(data), timeout=T(90))
                assert err is None
                assert got == len(data), "downloaded %d of %d bytes" % (got, len(data))
                assert digest == sslib.sha256(data), "downloaded bytes differ"


def test_echo_small_writes(ss, echo):
    """Many tiny writes: every byte arrives, in order."""
    open_, _, _ = ss.path("socks", echo.addr)
    with open_() as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = os.urandom(3000)
        s.settimeout(T(10))
        for i in range(0, len(data), 7):
            s.sendall(data[i:i + 7])
        assert sslib.recv_exact(s, len(data)) == data


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm"))
def test_server_client_that_speaks_late(ss, echo, method):
    """ss-server reads a new connection at once, as its client usually has
    spoken by then; one that has not, and then sends its request in pieces,
    is served all the same."""
    server = ss.server(method=method)
    payload = os.urandom(3000)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), server.method,
                                         server.password, echo.addr, payload)
    with sslib.connect(*server.addr) as h:
        h.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        time.sleep(0.3)
        for piece in (stream[:5], stream[5:40], stream[40:]):
            h.sendall(piece)
            time.sleep(0.1)
        assert sslib.recv_exact(h, 16) != b"", "no answer to a late request"
    assert echo.accepted == 1


def test_parallel_64_connections(ss, echo, blob):
    n, size = 64, 256 * 1024
    data = blob(n * size)
    open_, _, _ = ss.path("socks", echo.addr, method="aes-128-gcm")

    def one(i):
        part = data[i * size:(i + 1) * size]
        with open_() as s:
            sslib.echo_check(s, part, timeout=T(60))
        return i

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(one, i) for i in range(n)]
        done = [f.result(timeout=T(90)) for f in futures]
    assert sorted(done) == list(range(n))
    recs = echo.wait_records(n, T(10))
    assert sum(1 for r in recs if r.get("received") == size) == n


@pytest.mark.parametrize("via", VIAS)
def test_half_close_answer_after_eof(ss, blob, via):
    """The client sends, shuts down its write side and still receives the
    whole answer the target writes after seeing EOF."""
    answer = blob(300 * 1024)
    with sslib.ResponderServer(answer) as target:
        open_, _, _ = ss.path(via, target.addr)
        data = blob(MiB)
        with open_() as s:
            s.settimeout(T(10))
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            got = sslib.recv_all(s, timeout=T(20))
        n, want = len(got), 32 + len(answer)
        assert n == want, "received %d bytes after EOF, expected %d" % (n, want)
        assert got[:32] == sslib.sha256(data), "target did not receive the bytes sent"
        assert got[32:] == answer, "answer differs"
        rec = target.wait_for(lambda r: r.get("received"), T(5))
        assert rec is not None and rec["received"] == len(data)


def test_half_close_target_first(ss, blob):
    """The target answers and shuts down its write side first; the client
    reads to EOF and can still send its own data, which arrives whole."""
    greeting = blob(200 * 1024)
    with sslib.ServerFirstServer(greeting) as target:
        open_, _, _ = ss.path("socks", target.addr)
        data = blob(MiB)
        with open_() as s:
            got = sslib.recv_all(s, timeout=T(20))
            n = len(got)
            assert n == len(greeting) and got == greeting, "greeting: %d bytes, differ" % n
            s.settimeout(T(10))
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            recs = target.wait_records(1, T(20))
            assert recs and recs[0]["done"].is_set(), "target never saw the client's EOF"
            assert recs[0].get("received") == len(data)
            assert recs[0].get("digest") == sslib.sha256(data)
            # Both directions are finished: the proxy closes the connection.
            state, extra = sslib.wait_closed(s, T(10))
            assert state == "eof" and extra == b""


def test_domain_target_localhost(ss, echo, blob):
    """ATYP domain: ss-server resolves "localhost" (from /etc/hosts)."""
    server = ss.server()
    local = ss.local(server)
    with sslib.socks5_connect(local.addr, "localhost", echo.port,
                              atyp=sslib.ATYP_DOMAIN) as s:
        sslib.echo_check(s, blob(256 * 1024), timeout=T(20))
    assert echo.accepted == 1


def test_ipv6_target(ss, echo6, blob):
    """ATYP IPv6: the echo server on ::1."""
    server = ss.server()
    local = ss.local(server)
    with sslib.socks5_connect(local.addr, "::1", echo6.port, atyp=sslib.ATYP_IPV6) as s:
        sslib.echo_check(s, blob(256 * 1024), timeout=T(20))
    assert echo6.accepted == 1


def test_ipv6_tunnel_target(ss, echo6):
    open_, _, _ = ss.path("tunnel", echo6.addr)
    with open_() as s:
        sslib.small_exchange(s, 5000)


def test_server_dual_stack(ss, echo, blob):
    """ss-server on "::" accepts an IPv4 client and an IPv6 client."""
    server = ss.server(host="::")
    # Over IPv4: a Server record pointing at 127.0.0.1, same port and key.
    v4 = sslib.Server(None, "127.0.0.1", server.port, server.method, server.password)
    for srv in (v4, server):
        local = ss.local(srv)
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.echo_check(s, blob(64 * 1024), timeout=T(20))


def test_ipv6_everywhere(ss, echo6):
    """ss-server on ::1, ss-local listening on ::1, target on ::1."""
    server = ss.server(host="::1")
    local = ss.local(server, host="::1")
    with sslib.socks5_connect(local.addr, *echo6.addr) as s:
        sslib.small_exchange(s, 5000)


@pytest.mark.parametrize("via", VIAS)
def test_socket_options(ss, echo, blob, via):
    """--fast-open, --reuse-port, --no-delay and --mptcp (which falls back
    to TCP where the kernel has no MPTCP) on both programs: still a working
    relay, and with --reuse-port a second ss-server can share the port."""
    opts = ["--fast-open", "--reuse-port", "--no-delay", "--mptcp"]
    open_, server, _ = ss.path(via, echo.addr, server_kw={"extra": opts},
                               client_kw={"extra": opts})
    for _ in range(3):
        with open_() as s:
            sslib.small_exchange(s, 1)
            sslib.echo_check(s, blob(MiB), timeout=T(30))
    second = ss.procs.start(ss.exe("ss-server"),
                            ["-s", "127.0.0.1", "-p", str(server.port), "-k", "x"] + opts)
    second.expect_exit = False
    time.sleep(T(0.5))
    assert second.proc.poll() is None, "a second --reuse-port server could not bind: %r" % (
        second.stderr())
