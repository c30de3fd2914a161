# SPDX-License-Identifier: MIT
"""Running out of connection slots or descriptors: UDP associations never
take TCP's share, and a shortage is logged when it starts and when it ends,
not on every connection it holds back."""

import threading
import time

import sslib
import ssudp
from sslib import T

METHOD = "chacha20-ietf-poly1305"  # ssudp.Packets speaks it


def _exchange_all(local, target, n):
    """n clients at once through local, each a small echo exchange; the
    failures, as text."""
    errors = []
    lock = threading.Lock()

    def one():
        try:
            with sslib.socks5_connect(local.addr, *target, timeout=T(20)) as s:
                sslib.small_exchange(s, 100, timeout=T(20))
        except Exception as e:  # noqa: BLE001 - reported below
            with lock:
                errors.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(T(60))
    return errors


def test_full_slots_logged_once(ss, echo):
    """-n 64 leaves ss-server 16 slots; 150 clients at once wait their turn,
    and the log says so once, then once again when the load is gone (each
    of them used to be held back with a line of its own)."""
    # One worker: with more, each has its share of the slots and logs its
    # own shortage.
    server = ss.server(method=METHOD, extra=["-n", "64", "--workers", "1"])
    local = ss.local(server)
    errors = _exchange_all(local, echo.addr, 150)
    assert not errors, errors[:3]
    assert echo.accepted == 150
    # The end is logged once accept has found nobody waiting for 2 s.
    deadline = time.monotonic() + T(10)
    while "connection slots free again" not in server.program.stderr():
        assert time.monotonic() < deadline, "the end of the shortage was not logged"
        time.sleep(0.1)
    log = server.program.stderr()
    began = log.count("connection slots in use")
    ended = log.count("connection slots free again")
    assert (began, ended) == (1, 1), "logged %d times, %d ends:\n%s" % (
        began, ended, log[-3000:])


def test_udp_leaves_tcp_its_descriptors(ss, echo):
    """80 UDP clients of a -n 64 ss-server take at most their quarter of the
    descriptors (the oldest association goes first); TCP clients are served
    all the while."""
    with ssudp.UdpEcho() as uecho:
        server = ss.server(method=METHOD, extra=["-n", "64", "-u", "-v"])
        pk = ssudp.Packets(server.password)
        socks = [ssudp.udp_socket() for _ in range(80)]
        try:
            for i, u in enumerate(socks):
                u.sendto(pk.request(uecho.host, uecho.port, b"u%d" % i), server.addr)
                pk.answer(u.recvfrom(65536)[0])
            assert sslib.fd_count(server.program.pid) < 64 - 16
            local = ss.local(server)
            errors = _exchange_all(local, echo.addr, 12)
            assert not errors, errors[:3]
        finally:
            for u in socks:
                u.close()
    log = server.program.stderr()
    assert "at most 8 UDP associations" in log, log[-2000:]
    assert "association evicted" in log
