# SPDX-License-Identifier: MIT
"""Method none (alias plain): the address header, then the application's
bytes unchanged, over TCP and UDP, through ss-local, ss-tunnel and
ss-server; no key needed, a password draws a warning."""

import concurrent.futures
import os
import re
import socket
import struct
import time

import pytest

import ss2022peer
import sslib
import ssudp
from sslib import T

MiB = 1 << 20
RELAY_BUF = 263104  # SS_RELAY_BUF_SIZE
VIAS = ("socks", "tunnel")


def none_path(ss, via, target, method="none", server_extra=(), client_extra=()):
    server = ss.server(method=method, password="", extra=list(server_extra))
    if via == "socks":
        client = ss.local(server, password="", extra=list(client_extra))
        return server, client, lambda: sslib.socks5_connect(client.addr, *target, timeout=T(5))
    client = ss.tunnel(server, target, password="", extra=list(client_extra))
    return server, client, lambda: sslib.connect(*client.addr)


@pytest.mark.parametrize("via", VIAS)
def test_upload_64mib_half_close(ss, blob, via):
    """64 MiB up, the client's EOF carried across, the target's digest back
    after it."""
    data = blob(64 * MiB)
    with sslib.SinkServer() as target:
        _, _, open_ = none_path(ss, via, target.addr)
        with open_() as s:
            digest, got, err = sslib.exchange(s, struct.pack("!Q", len(data)) + data, 32,
                                              timeout=T(90))
        assert err is None and got == 32
        rec = target.wait_for(lambda r: "digest" in r, T(5))
        assert rec is not None and rec["received"] == len(data)
        assert rec["digest"] == sslib.sha256(data)


@pytest.mark.parametrize("via", VIAS)
def test_download_64mib_half_close(ss, blob, via):
    """64 MiB down from a target that then shuts down its side; the client
    reads to EOF and still sends its own bytes, which arrive whole."""
    data = blob(64 * MiB)
    with sslib.ServerFirstServer(data) as target:
        _, _, open_ = none_path(ss, via, target.addr)
        with open_() as s:
            got = sslib.recv_all(s, timeout=T(90))
            assert len(got) == len(data) and got == data
            s.settimeout(T(10))
            s.sendall(b"after EOF")
            s.shutdown(socket.SHUT_WR)
            # (ss-tunnel's start-up probe may have been the first connection.)
            rec = target.wait_for(lambda r: r.get("received"), T(20))
            assert rec is not None and rec["received"] == len(b"after EOF")
            assert sslib.wait_closed(s, T(10)) == ("eof", b"")


def test_parallel_64(ss, echo, blob):
    n, size = 64, 256 * 1024
    data = blob(n * size)
    _, _, open_ = none_path(ss, "socks", echo.addr)

    def one(i):
        with open_() as s:
            sslib.echo_check(s, data[i * size:(i + 1) * size], timeout=T(60))
        return i

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        done = [f.result(timeout=T(90)) for f in [pool.submit(one, i) for i in range(n)]]
    assert sorted(done) == list(range(n))


@pytest.mark.parametrize("method", ("none", "plain"))
def test_wire_is_address_then_bytes(ss, method):
    """What ss-local sends to its server: the address header in the clear,
    then the payload, nothing else (as shadowsocks-rust frames it)."""
    payload = os.urandom(300)
    target = ("127.0.0.1", 4242)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), method, "",
                                         target, payload)
    assert stream == ss2022peer.addr_bytes(*target) + payload


def test_server_reads_plain_header(ss, echo):
    """ss-server with none takes a client that writes the header in pieces."""
    server = ss.server(method="none", password="")
    head = ss2022peer.addr_bytes(*echo.addr)
    with sslib.connect(*server.addr) as s:
        for b in head:
            s.sendall(bytes([b]))
        s.sendall(b"hello")
        s.settimeout(T(5))
        assert sslib.recv_exact(s, 5) == b"hello"


@pytest.mark.parametrize("via", VIAS)
def test_udp(ss, via):
    server = ss.server(method="none", password="", extra=["-u"])
    with ssudp.UdpEcho() as uecho:
        if via == "socks":
            client = ss.local(server, password="", extra=["-u"])
        else:
            client = ss.tunnel(server, uecho.addr, password="", extra=["-u"])
        app = ssudp.App(via, client, uecho.addr)
        for n in (0, 1, 1200, 30000, 65000):
            ssudp.check_exchange(app, os.urandom(n))
        app.close()


def test_password_draws_warning(ss, echo):
    server = ss.server(method="none", password="secret")
    assert "encrypts nothing" in server.program.output()
    local = ss.local(server, password="")
    assert "encrypts nothing" not in local.program.output()
    with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
        sslib.echo_check(s, b"x" * 100, timeout=T(5))


def _spliced(program):
    """(bytes up, bytes down, bytes spliced) of each closed connection, from -vv."""
    found = re.findall(r"closed, (\d+) bytes up, (\d+) bytes down, (\d+) spliced",
                       program.output())
    # (The start-up probe's connection carries nothing.)
    return [tuple(int(x) for x in m) for m in found if m != ("0", "0", "0")]


@pytest.mark.parametrize("no_splice", (False, True))
def test_which_path_carried_the_bytes(ss, blob, no_splice):
    """With splice(2) the bulk of a none connection is spliced in both
    relays (the first read, which rides with the address header, is
    copied); with SS_NO_SPLICE=1 everything is copied. The byte counts are
    the same either way."""
    env = {"SS_NO_SPLICE": "1"} if no_splice else None
    data = blob(8 * MiB)
    server = ss.server(method="none", password="", extra=["-v", "-v"], env=env)
    local = ss.local(server, password="", extra=["-v", "-v"], env=env)
    with sslib.SinkServer() as target:
        with sslib.socks5_connect(local.addr, *target.addr, timeout=T(5)) as s:
            digest, got, err = sslib.exchange(s, struct.pack("!Q", len(data)) + data, 32,
                                              timeout=T(60))
        assert err is None and got == 32
    for prog in (server.program, local.program):
        deadline = time.monotonic() + T(5)
        while not _spliced(prog) and time.monotonic() < deadline:
            time.sleep(0.05)
        (up, down, spliced), = _spliced(prog)
        assert up == len(data) + 8 and down == 32, (up, down)
        if no_splice:
            assert spliced == 0, "SS_NO_SPLICE=1 still spliced %d bytes" % spliced
        else:
            # What came before the header went out is copied: one read,
            # at most a relay buffer (SS_RELAY_BUF_SIZE, src/codec/codec.h),
            # as much as the sender got in while the relay connected (a
            # receive window's worth, often over 64 KiB, when it was slow).
            assert spliced >= len(data) - RELAY_BUF, "only %d of %d bytes spliced" % (spliced, up)
