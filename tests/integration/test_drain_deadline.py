# SPDX-License-Identifier: MIT
"""Connections that have not proven themselves (no whole request yet, or
refused and drained) end at one deadline fixed at their accept, the accept
+ -t, whatever and however much they send, with a FIN; and when every slot
is taken, the oldest of them makes room for a new connection, so peers that
fail to authenticate never keep a real client waiting."""

import os
import select
import socket
import threading
import time

import pytest

import sslib
from sslib import T

METHODS = ("aes-256-gcm", "2022-blake3-aes-256-gcm")
SLOTS = 8           # what -n 40 leaves ss-server (relay/instance.c, instance_budget)
NOFILE = "40"
GRACE = 1.0         # an expendable connection's grace before it may make room (relay/conn.c)
EARLY = 0.25        # how much sooner than accept + -t a close may be seen (loop time, clocks)
LATE = 0.5          # ... and how much later, before the time factor


def judged_after(method):
    """How many bytes ss-server needs before it can refuse a stream: the salt
    and the first length chunk (SIP004), or the fixed header (SIP022)."""
    salt = sslib.SALT_LEN[method]
    return salt + (11 if sslib.is_sip022(method) else 2) + sslib.TAG_LEN


class Prober:
    """A peer without the key: first bytes, then `chunk` bytes every `every`
    seconds (None: nothing more) until the server ends the connection; it
    records how (eof, reset) and when, from its connect. With past_eof it
    goes on sending after the server's FIN (a half-close), until a send
    fails."""

    def __init__(self, addr, first=b"", every=None, chunk=1, past_eof=False):
        self.sock = socket.create_connection(addr, timeout=T(5))
        self.t0 = time.monotonic()
        self.every, self.chunk, self.past_eof = every, chunk, past_eof
        self.next = self.t0 + every if every else None
        self.end, self.at, self.got, self.sent = None, None, b"", 0
        if first:
            self.sock.sendall(first)
            self.sent += len(first)
        self.sock.setblocking(False)

    @property
    def done(self):
        return self.end is not None and (not self.past_eof or self.next is None)

    @property
    def after(self):
        """Seconds from the connect to the end, or None while open."""
        return None if self.at is None else self.at - self.t0

    def readable(self, now):
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except ConnectionResetError:
            self.end, self.at = "reset", now
            return
        if data:
            self.got += data
        else:
            self.end, self.at = "eof", now

    def due(self, now):
        """Sends what is due by now."""
        while self.next is not None and self.next <= now:
            try:
                self.sent += self.sock.send(os.urandom(self.chunk))
            except BlockingIOError:
                pass
            except OSError as e:  # the server has closed
                if self.end is None:
                    self.end, self.at = "send: %s" % e.__class__.__name__, now
                self.next = None
                return
            self.next += self.every

    def close(self):
        self.sock.close()


class Probers(threading.Thread):
    """Drives probers from one thread, so that each end is timed to within
    a poll's wake-up; stops when all have ended, or at stop()."""

    def __init__(self, probers=()):
        super().__init__(daemon=True)
        self.lock = threading.Lock()
        self.probers = list(probers)
        self.halt = threading.Event()

    def add(self, p):
        with self.lock:
            self.probers.append(p)

    def open(self):
        with self.lock:
            return [p for p in self.probers if not p.done]

    def run(self):
        while not self.halt.is_set():
            live = self.open()
            now = time.monotonic()
            nexts = [p.next for p in live if p.next is not None]
            wait = max(0.0, min(nexts + [now + 0.05]) - now)
            reading = [p.sock for p in live if p.end is None]
            if reading:
                r, _, _ = select.select(reading, [], [], wait)
            else:
                time.sleep(wait)
                r = []
            now = time.monotonic()
            for p in live:
                if p.sock in r:
                    p.readable(now)
                if p.end is None or p.past_eof:
                    p.due(now)

    def wait_all(self, timeout):
        """Waits until every prober has ended; False if time ran out."""
        deadline = time.monotonic() + timeout
        while self.open():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def stop(self):
        self.halt.set()
        self.join(T(5))
        for p in self.probers:
            p.close()


def check_at_deadline(p, name, timeout, got=b""):
    assert p.end == "eof", "%s: ended with %s after %s s" % (name, p.end, p.after)
    assert p.got == got, "%s: the server sent %r" % (name, p.got[:64])
    assert timeout - EARLY <= p.after <= timeout + T(LATE), (
        "%s: closed %.2f s after the connect; -t is %d s" % (name, p.after, timeout))


@pytest.mark.parametrize("method", METHODS)
def test_drippers_make_room_for_a_real_client(ss, echo, method):
    """Every slot held by a peer that failed to authenticate and sends one
    byte a second: a real client is served at once, the oldest such peer
    making room (a FIN); the others end at their accept + -t, with a FIN,
    though they never stop sending."""
    timeout = 6
    server = ss.server(method=method, timeout=timeout,
                       extra=["-n", NOFILE, "--workers", "1", "-v"])
    local = ss.local(server)
    drive = Probers()
    try:
        for _ in range(SLOTS):
            drive.add(Prober(server.addr, os.urandom(200), every=1.0))
        drive.start()
        # Each is refused at once: wait for the server to say so.
        assert sslib.wait_for(
            lambda: server.program.stderr().count("refused: ") >= SLOTS, T(5)), (
            "ss-server did not refuse the %d peers:\n%s" % (SLOTS, server.program.stderr()[-2000:]))
        first = drive.probers[0]
        # The oldest may make room once its grace is over.
        time.sleep(max(0.0, first.t0 + GRACE + 0.2 - time.monotonic()))
        assert not [p for p in drive.probers if p.end], "a dripper ended before the client came"
        began = time.monotonic()
        with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(10)) as s:
            sslib.small_exchange(s, 1000, timeout=T(10))
        took = time.monotonic() - began
        assert took < T(1.0), "the client was served %.2f s after it connected" % took
        assert sslib.wait_for(lambda: first.end is not None, T(2)), "no dripper made room"
        assert first.end == "eof", "the dripper that made room ended with %s" % first.end
        assert began <= first.at <= began + took + 0.2, (
            "the oldest dripper ended %.2f s after the client came" % (first.at - began))
        assert drive.wait_all(max(p.t0 for p in drive.probers) + timeout + T(3)
                              - time.monotonic()), "a dripper outlived its deadline"
    finally:
        drive.stop()
    for i, p in enumerate(drive.probers[1:], 1):
        check_at_deadline(p, "dripper %d (%d bytes sent)" % (i, p.sent), timeout)
    log = server.program.stderr()
    assert "all %d connection slots in use" % SLOTS in log, log[-2000:]
    assert log.count("closed to make room for a new connection") == 1, log[-3000:]
    assert echo.accepted == 1


@pytest.mark.parametrize("method", METHODS)
def test_close_time_does_not_depend_on_input(ss, method):
    """Peers that never authenticate end at their accept + -t, with a FIN,
    whether they sent nothing, too little to be judged, just enough, much
    more, one byte a second (judged half-way or never), or bytes without
    pause after they were refused: neither the refusal nor the bytes after
    it move the end."""
    timeout = 4
    server = ss.server(method=method, timeout=timeout, extra=["--workers", "1", "-v"])
    n = judged_after(method)
    plans = {
        "silent": dict(),
        "10 bytes": dict(first=os.urandom(10)),
        "%d bytes (one short of a judgement)" % (n - 1): dict(first=os.urandom(n - 1)),
        "%d bytes (refused)" % n: dict(first=os.urandom(n)),
        "200 bytes": dict(first=os.urandom(200)),
        "a byte a second": dict(every=1.0),
        "a byte a second, refused after 2 s": dict(first=os.urandom(n - 2), every=1.0),
        "refused, then 4 KB every 50 ms": dict(first=os.urandom(200), every=0.05, chunk=4096),
    }
    refused = [name for name in plans if "refused" in name or name == "200 bytes"]
    drive = Probers()
    try:
        for plan in plans.values():
            drive.add(Prober(server.addr, **plan))
        drive.start()
        assert drive.wait_all(timeout + T(4)), "a peer outlived its deadline"
    finally:
        drive.stop()
    for name, p in zip(plans, drive.probers):
        check_at_deadline(p, name, timeout)
    afters = [p.after for p in drive.probers]
    assert max(afters) - min(afters) < 0.3, "the ends differ by %.2f s: %r" % (
        max(afters) - min(afters), dict(zip(plans, afters)))
    # Those meant to be refused were, and only those (-v logs each).
    log = server.program.stderr()
    assert log.count("refused: ") == len(refused), "%d refusals for %r:\n%s" % (
        log.count("refused: "), refused, log[-3000:])


def test_local_front_ends_are_bounded(ss, echo):
    """ss-local: a SOCKS5 request that never completes, a SOCKS5 request it
    refuses and an HTTP request it cannot parse, each followed by a byte a
    second, hold their descriptors until the accept + -t, not longer."""
    timeout = 3
    server = ss.server()
    local = ss.local(server, timeout=timeout)
    pid = local.program.pid
    base = sslib.fd_count(pid)
    plans = {
        "SOCKS5, request never whole": b"\x05\x01\x00" + b"\x05\x01\x00\x03\x20ab",
        "SOCKS5, command 9": b"\x05\x01\x00" + b"\x05\x09\x00\x01\x7f\x00\x00\x01\x00\x50",
        "HTTP, malformed": b"GET \x00 HTTP/1.1\r\n\r\n",
    }
    drive = Probers()
    try:
        for first in plans.values():
            drive.add(Prober(local.addr, first, every=1.0, past_eof=True))
        drive.start()
        t0 = max(p.t0 for p in drive.probers)
        assert sslib.wait_for(lambda: sslib.fd_count(pid) >= base + len(plans), T(2))
        # Still held half a second before the deadline, released just
        # after it.
        time.sleep(max(0.0, min(p.t0 for p in drive.probers) + timeout - 0.5
                       - time.monotonic()))
        held = sslib.fd_count(pid) - base
        assert held == len(plans), "only %d of %d connections held before -t" % (
            held, len(plans))
        released = sslib.wait_for(lambda: sslib.fd_count(pid) <= base,
                                  t0 + timeout + T(LATE) - time.monotonic())
        assert released, "%d connections held past -t" % (sslib.fd_count(pid) - base)
        # Each sends until a send fails, the server having closed.
        assert drive.wait_all(T(3)), "a send still succeeds long after -t"
    finally:
        drive.stop()
    # The one never answered reads our FIN at the deadline; the refused
    # ones got their answer, then at once our FIN.
    never, refused, http = drive.probers
    check_at_deadline(never, "SOCKS5, request never whole", timeout, got=b"\x05\x00")
    assert refused.got[:4] == b"\x05\x00\x05\x07" and refused.end == "eof", refused.got
    assert refused.after < 1.0
    assert http.got.startswith(b"HTTP/1.1 400") and http.end == "eof", http.got[:64]
    assert http.after < 1.0
    # ss-local still serves.
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.small_exchange(s, 1000)
