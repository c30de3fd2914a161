# SPDX-License-Identifier: MIT
"""Replays against ss-server with one, two and four workers.

Each worker has its own sockets (SO_REUSEPORT), and the kernel picks one by
a datagram's (or connection's) source address and port. A captured datagram
or first flight sent again from other ports and other addresses
(127.0.0.2, 127.0.0.3, ...) reaches every worker; whichever it reaches, the
target sees it once and only one answer comes back. For SIP022 UDP that is
the session table (relay/udp_sessions.h): a session is held by one worker,
the others hand its datagrams there, and its packet-id window is kept past
its association, while the datagrams could still pass the time check. A
session whose client moves to other ports (NAT rebinding) goes on, from
its one association.

Datagrams are captured from a real ss-tunnel (sealed by our own client),
for TCP, from a real ss-local."""

import os
import re
import select
import socket
import time

import pytest

import sslib
import ssudp
from sslib import T

WORKERS = (1, 2, 4)
SOURCES = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
PER_SOURCE = 8  # 40 replays: every worker gets some (a miss is a 1-in-10^5 event at 4)
QUIET = 1.0  # how long the replays' sockets are watched for an answer
SIP022 = sslib.SIP022_METHODS
HANDED = re.compile(r"udp: (\d+) datagrams handed to the workers holding their sessions, "
                    r"(\d+) taken from them")


def _server(ss, method, psk, workers, extra=()):
    return ss.server(method=method, password=psk,
                     extra=["-u", "--workers", str(workers), "-v"] + list(extra))


def _capture(ss, method, psk, target, sends):
    """The datagrams a real ss-tunnel seals for sends, a list of (app,
    payload): app i is a socket of its own, so a session of its own. Each
    datagram is taken by a capture socket standing in for the server."""
    out = []
    with ssudp.udp_socket() as cap:
        fake = sslib.Server(None, sslib.LOOPBACK4, cap.getsockname()[1], method, psk)
        client = ss.tunnel(fake, target, extra=["-u"])
        apps = {}
        cap.settimeout(T(5))
        try:
            for app, payload in sends:
                if app not in apps:
                    apps[app] = ssudp.App("tunnel", client, target)
                apps[app].send(payload)
                packet, _ = cap.recvfrom(65536)
                out.append(packet)
        finally:
            for a in apps.values():
                a.close()
            client.program.terminate()
    return out


def _answers(socks, quiet):
    """Datagrams that come back to socks until none came for quiet seconds:
    {socket index: count}."""
    got = {}
    while True:
        ready, _, _ = select.select(socks, [], [], quiet)
        if not ready:
            return got
        for s in ready:
            s.recvfrom(65536)
            got[socks.index(s)] = got.get(socks.index(s), 0) + 1


def _spray(server, packets):
    """Sends each packet from PER_SOURCE new ports on each of SOURCES;
    returns the sockets."""
    socks = []
    for host in SOURCES:
        for _ in range(PER_SOURCE):
            s = ssudp.udp_socket(host)
            for p in packets:
                s.sendto(p, server.addr)
            socks.append(s)
    return socks


def _close(socks):
    for s in socks:
        s.close()


def _handed(server):
    """Stops the server; (handed, taken) summed over its workers' last lines."""
    assert server.program.terminate() == 0
    handed = taken = 0
    for m in HANDED.finditer(server.program.stderr()):
        handed += int(m.group(1))
        taken += int(m.group(2))
    return handed, taken


def _wait_echo(uecho, n):
    assert sslib.wait_for(lambda: uecho.count() >= n, T(5)), \
        "the target saw %d datagrams, expected %d" % (uecho.count(), n)


def _deliver(server, packets, uecho):
    """Sends packets once, in order, from one socket, each answered."""
    with ssudp.udp_socket() as client:
        client.settimeout(T(5))
        for p in packets:
            client.sendto(p, server.addr)
            client.recvfrom(65536)
    _wait_echo(uecho, len(packets))


def _replays_refused(workers, packets, delivered, uecho, server, sessions=True):
    """packets (already delivered, delivered of them reaching the target),
    sent again from 40 sources: nothing more reaches the target and nothing
    comes back; with sessions and workers, some were handed over and
    refused there."""
    socks = _spray(server, packets)
    try:
        got = _answers(socks, QUIET)
    finally:
        _close(socks)
    assert not got, "replays were answered: %r" % got
    assert uecho.count() == delivered, "the target saw %d datagrams, %d were sent once" % (
        uecho.count(), delivered)
    handed, taken = _handed(server)
    if sessions and workers > 1:
        assert handed > 0 and taken == handed, \
            "no replay reached another worker (handed %d, taken %d)" % (handed, taken)
    else:
        assert handed == taken == 0


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("method", SIP022)
def test_sip022_datagram_replayed_from_everywhere(ss, method, workers):
    """The capture of test_sip022.py's test_udp_replayed_packet, sent from
    40 sources to servers with 1, 2 and 4 workers: one answer in all."""
    psk = sslib.random_psk(method)
    with ssudp.UdpEcho() as uecho:
        packets = _capture(ss, method, psk, uecho.addr, [(0, b"once")])
        server = _server(ss, method, psk, workers)
        _deliver(server, packets, uecho)
        _replays_refused(workers, packets, 1, uecho, server)


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("method", ("2022-blake3-aes-128-gcm", "2022-blake3-chacha20-poly1305"))
def test_sip022_established_session_replayed_out_of_order(ss, method, workers):
    """Six datagrams of one session delivered in order; then the second,
    fourth and first again, from 40 sources each: all refused."""
    psk = sslib.random_psk(method)
    with ssudp.UdpEcho() as uecho:
        packets = _capture(ss, method, psk, uecho.addr,
                           [(0, b"datagram %d" % i) for i in range(6)])
        server = _server(ss, method, psk, workers)
        _deliver(server, packets, uecho)
        _replays_refused(workers, [packets[1], packets[3], packets[0]], 6, uecho, server)


@pytest.mark.parametrize("workers", WORKERS)
def test_sip004_datagram_replayed_from_everywhere(ss, workers):
    """SIP004: each datagram has a salt of its own, which the one shared
    pool refuses the second time, whichever worker sees it."""
    method = "aes-256-gcm"
    password = sslib.random_password()
    with ssudp.UdpEcho() as uecho:
        packets = _capture(ss, method, password, uecho.addr, [(0, b"once")])
        server = _server(ss, method, password, workers)
        _deliver(server, packets, uecho)
        _replays_refused(workers, packets, 1, uecho, server, sessions=False)


def _flight(server, stream, host, hold):
    """A captured first flight from a new port on host: (state, bytes back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as h:
        h.bind((host, 0))
        h.settimeout(T(5))
        h.connect(server.addr)
        h.sendall(stream)
        return sslib.wait_closed(h, hold)


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm",
                                    "2022-blake3-chacha20-poly1305"))
def test_tcp_first_flight_replayed_from_everywhere(ss, echo, method, workers):
    server = _server(ss, method, None, workers)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), method, server.password,
                                         echo.addr, os.urandom(200))
    state, data = _flight(server, stream, SOURCES[0], 1.0)
    assert data, "the captured first flight was not served"
    assert echo.accepted == 1
    for host in SOURCES:
        for _ in range(4):
            state, data = _flight(server, stream, host, 0.2)
            assert data == b"", "a replay from %s got %d bytes back" % (host, len(data))
    time.sleep(0.2)
    assert echo.accepted == 1, "replays reached the target %d times" % (echo.accepted - 1)


@pytest.mark.parametrize("workers", (2, 4))
@pytest.mark.parametrize("method", SIP022)
def test_sip022_session_moves_between_ports(ss, method, workers):
    """NAT rebinding: each datagram of one session comes from another port
    and address. Each is relayed once, from the session's one association
    (the target sees one source), and its answer goes to where it came
    from; some reached a worker that does not hold the session."""
    psk = sslib.random_psk(method)
    n = 16
    with ssudp.UdpEcho() as uecho:
        packets = _capture(ss, method, psk, uecho.addr,
                           [(0, b"moved %02d" % i) for i in range(n)])
        server = _server(ss, method, psk, workers)
        for i, p in enumerate(packets):
            with ssudp.udp_socket(SOURCES[i % len(SOURCES)]) as s:
                s.sendto(p, server.addr)
                s.settimeout(T(5))
                answer, src = s.recvfrom(65536)
                assert src[:2] == server.addr[:2]
                assert len(answer) > len(b"moved 00")
        _wait_echo(uecho, n)
        assert uecho.count() == n
        assert len(uecho.sources()) == 1, \
            "one session reached the target from %r" % uecho.sources()
        handed, taken = _handed(server)
        assert handed > 0 and taken == handed, (handed, taken)


@pytest.mark.parametrize("workers", (1, 2))
@pytest.mark.parametrize("method", SIP022)
def test_sip022_replay_after_the_association_expired(ss, method, workers):
    """--udp-timeout 3: the association of a session goes after 3 s idle,
    its window stays. The first datagram sent again is refused; the next
    one of the session, new, is served."""
    psk = sslib.random_psk(method)
    with ssudp.UdpEcho() as uecho:
        packets = _capture(ss, method, psk, uecho.addr, [(0, b"first"), (0, b"second")])
        server = _server(ss, method, psk, workers, extra=["-v", "--udp-timeout", "3"])
        with ssudp.udp_socket() as client:
            client.sendto(packets[0], server.addr)
            client.settimeout(T(5))
            client.recvfrom(65536)
            assert sslib.wait_for(
                lambda: "association idle, closed" in server.program.stderr(), T(10)), \
                "the association did not expire"
            socks = _spray(server, [packets[0]]) + [client]
            try:
                got = _answers(socks, QUIET)
            finally:
                _close(socks[:-1])
            assert not got, "a replay after the association expired was answered: %r" % got
            assert uecho.count() == 1
            client.sendto(packets[1], server.addr)
            client.recvfrom(65536)
        _wait_echo(uecho, 2)
        assert "packet id replayed or too old" in server.program.stderr()


@pytest.mark.parametrize("method", SIP022)
def test_sip022_replay_after_eviction(ss, method):
    """--udp-max-associations 1: session B's first datagram evicts session
    A's association. A's datagram sent again is refused; A's next one is
    served (and evicts B)."""
    psk = sslib.random_psk(method)
    with ssudp.UdpEcho() as uecho:
        a0, b0, a1 = _capture(ss, method, psk, uecho.addr, [(0, b"a0"), (1, b"b0"), (0, b"a1")])
        server = _server(ss, method, psk, 1, extra=["--udp-max-associations", "1"])
        with ssudp.udp_socket() as client:
            client.settimeout(T(5))
            for p in (a0, b0):
                client.sendto(p, server.addr)
                client.recvfrom(65536)
            assert sslib.wait_for(
                lambda: "association evicted" in server.program.stderr(), T(5))
            socks = _spray(server, [a0]) + [client]
            try:
                got = _answers(socks, QUIET)
            finally:
                _close(socks[:-1])
            assert not got, "a replay after eviction was answered: %r" % got
            assert uecho.count() == 2
            client.sendto(a1, server.addr)
            client.recvfrom(65536)
        _wait_echo(uecho, 3)
        assert server.program.stderr().count("association evicted") == 2
