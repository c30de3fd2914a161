# SPDX-License-Identifier: MIT
"""Refused peers are logged at the default level, rate-limited per source
address: ss-server's clients that fail to authenticate, replay or send
datagrams that do not open; a client's server whose answer fails to
authenticate. The first refusal from an address is a WARN line naming the
peer and the reason; later ones within the interval (SS_LOG_INTERVAL, 60 s
by default) are counted and summed up in one line when it ends."""

import os
import re
import socket
import time

import pytest

import sslib
from sslib import T, wait_for

METHOD = "aes-256-gcm"


def warn_lines(program):
    return [ln for ln in program.output().splitlines() if " WARN: " in ln]


def junk(server, n):
    """n connections from 127.0.0.1 that each send more than a salt, a
    length block and its tag of random bytes, and close."""
    for _ in range(n):
        with sslib.connect(*server.addr) as s:
            s.sendall(os.urandom(sslib.SALT_LEN[METHOD] + 2 + sslib.TAG_LEN + 40))
            time.sleep(0.02)


@pytest.mark.parametrize("method", (METHOD, "2022-blake3-aes-256-gcm"))
def test_wrong_password_is_one_warn_line(ss, echo, method):
    if sslib.is_sip022(method):
        server = ss.server(method=method)
        bad = ss.local(server, key=sslib.random_psk(method))
    else:
        server = ss.server(method=method, password="right-" + sslib.random_password())
        bad = ss.local(server, password="wrong-" + sslib.random_password())
    s, rep = sslib.socks5_open(bad.addr, *echo.addr)
    with s:
        if rep == 0:
            s.sendall(os.urandom(1000))
        sslib.wait_closed(s, 0.5)
    assert wait_for(lambda: warn_lines(server.program), T(5)), server.program.output()
    time.sleep(0.3)
    lines = warn_lines(server.program)
    assert len(lines) == 1, lines
    assert re.search(r"server 127\.0\.0\.1:\d+: refused: authentication failed",
                     lines[0]), lines[0]
    assert echo.accepted == 0


def test_burst_gives_one_line_then_a_summary(ss):
    """Five bad connections within the interval: one line at once, the
    other four in one summary when the interval ends, nothing more."""
    # One worker: each worker limits its own lines (ss-server(1), LOGGING).
    server = ss.server(method=METHOD, env={"SS_LOG_INTERVAL": "1.5"}, extra=["--workers", "1"])
    junk(server, 5)
    assert wait_for(lambda: "more from" in server.program.output(), T(6)), \
        server.program.output()
    time.sleep(1.8)  # another interval: nothing more to say
    lines = warn_lines(server.program)
    assert len(lines) == 2, lines
    assert "server 127.0.0.1:" in lines[0] and "refused: authentication failed" in lines[0]
    assert lines[1].endswith("refused: 4 more from 127.0.0.1 in the last 1.5 s"), lines[1]
    # A new interval: the next refusal is a line of its own again.
    junk(server, 1)
    assert wait_for(lambda: len(warn_lines(server.program)) == 3, T(5)), \
        server.program.output()
    assert "refused: authentication failed" in warn_lines(server.program)[2]


def test_bad_interval_is_reported(ss):
    server = ss.server(method=METHOD, env={"SS_LOG_INTERVAL": "soon"})
    assert "SS_LOG_INTERVAL='soon' is not a number of seconds" in server.program.output()


def test_replay_is_logged(ss, echo):
    server = ss.server(method=METHOD)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), METHOD,
                                         server.password, echo.addr, os.urandom(100))
    for _ in range(2):
        with sslib.connect(*server.addr) as s:
            s.sendall(stream)
            sslib.wait_closed(s, 0.5)
    assert wait_for(lambda: warn_lines(server.program), T(5)), server.program.output()
    lines = warn_lines(server.program)
    assert len(lines) == 1 and "replay" in lines[0], lines
    assert echo.accepted == 1


def test_udp_datagram_that_fails_to_open_is_logged(ss):
    server = ss.server(method=METHOD, extra=["-u"])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        for _ in range(3):
            u.sendto(os.urandom(100), server.addr)
    assert wait_for(lambda: warn_lines(server.program), T(5)), server.program.output()
    time.sleep(0.3)
    lines = warn_lines(server.program)
    assert len(lines) == 1, lines
    assert re.search(r"udp 127\.0\.0\.1:\d+: datagram refused: ", lines[0]), lines[0]


@pytest.mark.parametrize("prog", ("ss-local", "ss-tunnel"))
def test_client_logs_an_answer_that_fails_to_authenticate(ss, echo, prog):
    """A "server" that answers with random bytes (as one with another
    password would seem to): the client says so once per server."""
    with sslib.ServerFirstServer(os.urandom(200)) as fake:
        srv = sslib.Server(None, sslib.LOOPBACK4, fake.port, METHOD, sslib.random_password())
        for attempt in range(3):
            if prog == "ss-local":
                if attempt == 0:
                    client = ss.local(srv)
                s, _ = sslib.socks5_open(client.addr, *echo.addr, early=b"hello")
            else:
                if attempt == 0:
                    client = ss.tunnel(srv, echo.addr)
                s = sslib.connect(*client.addr)
                s.sendall(b"hello")
            with s:
                sslib.wait_closed(s, T(3))
        lines = warn_lines(client.program)
        assert len(lines) == 1, client.program.output()
        assert re.search(r": the answer of server \S* ?127\.0\.0\.1:%d is refused: "
                         r"authentication failed" % fake.port, lines[0]), lines[0]


def test_tunnel_logs_a_datagram_answer_that_fails_to_authenticate(ss):
    """UDP: a "server" that answers each datagram with random bytes; ss-tunnel
    says so once for the three answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fake, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as app:
        fake.bind((sslib.LOOPBACK4, 0))
        fake.settimeout(T(5))
        srv = sslib.Server(None, sslib.LOOPBACK4, fake.getsockname()[1], METHOD,
                           sslib.random_password())
        tunnel = ss.tunnel(srv, ("127.0.0.1", 9), extra=["-u"])
        for _ in range(3):
            app.sendto(b"question", tunnel.addr)
            _, src = fake.recvfrom(65536)
            fake.sendto(os.urandom(100), src)
        assert wait_for(lambda: warn_lines(tunnel.program), T(5)), tunnel.program.output()
        time.sleep(0.3)
        lines = warn_lines(tunnel.program)
        assert len(lines) == 1, lines
        assert re.search(r"udp 127\.0\.0\.1:\d+: an answer of server \S* ?127\.0\.0\.1:%d is "
                         r"refused: " % srv.port, lines[0]), lines[0]
