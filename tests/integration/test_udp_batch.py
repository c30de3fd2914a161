# SPDX-License-Identifier: MIT
"""UDP in batches: bursts of datagrams through ss-tunnel (and ss-local's
SOCKS5 UDP) and ss-server, read with recvmmsg, sent with sendmmsg and UDP
GSO, received with GRO, and the fallbacks SS_NO_UDP_GSO=1 and
SS_NO_UDP_MMSG=1 forcing the other paths.

Every datagram of a burst reaches the target whole and in order, and comes
back whole and in order. The programs' exit summary at -v (the "udp: ...
reads, N of them batches ..." line) proves which path ran.

The application and the target send a burst of equal datagrams in one
sendmsg with UDP_SEGMENT, so the kernel queues them at once (as one GRO
buffer where the relay's socket takes GRO, as 16 datagrams where it does
not): the relay's readiness event finds the whole burst.
"""

import ctypes
import os
import re
import struct
import subprocess
import threading

import pytest

import sslib
import ssudp
from sslib import T

SOL_UDP = 17
CLONE_NEWNET = 0x40000000
UDP_SEGMENT = 103
METHODS = ("aes-256-gcm", "chacha20-ietf-poly1305", "2022-blake3-aes-256-gcm", "none")
MODES = {"default": {}, "no-gso": {"SS_NO_UDP_GSO": "1"}, "no-mmsg": {"SS_NO_UDP_MMSG": "1"}}
BURST = 16
MIXED = [1, 1200, 60000, 17, 1200, 1200, 1472, 9000, 2, 333, 60000, 1200, 4096, 1, 700, 1199]
SUMMARY = re.compile(r"udp: (\d+) datagrams in, (\d+) out; (\d+) reads, (\d+) of them batches; "
                     r"(\d+) GRO buffers; (\d+) sends, (\d+) of them batches; (\d+) GSO sends, "
                     r"refused on (\d+) sockets( \(no recvmmsg/sendmmsg\))?( \(no GSO/GRO\))?")


def payloads(sizes, tag):
    """Datagrams of the given sizes, each telling its place and tag."""
    out = []
    for i, n in enumerate(sizes):
        head = struct.pack("!BH", tag, i)
        body = (head + bytes((i * 7 + j) & 0xff for j in range(64))) * (n // 67 + 1)
        out.append(body[:n])
    return out


def send_burst(sock, dgrams, to=None):
    """All of dgrams in one GSO send when they are one size, else one by one."""
    sizes = {len(d) for d in dgrams}
    if len(sizes) == 1 and len(dgrams) > 1 and len(dgrams[0]) <= 1472:
        anc = [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", len(dgrams[0])))]
        if to is None:
            sock.sendmsg([b"".join(dgrams)], anc)
        else:
            sock.sendmsg([b"".join(dgrams)], anc, 0, to)
        return
    for d in dgrams:
        if to is None:
            sock.send(d)
        else:
            sock.sendto(d, to)


class BurstEcho:
    """A target that takes a whole burst of n datagrams, keeps them, and
    sends them back as one burst."""

    def __init__(self):
        self.sock = ssudp.udp_socket(timeout=T(5))
        self.addr = self.sock.getsockname()
        self.got = []
        self.errors = []
        self.want = 0
        self.ready = threading.Semaphore(0)
        self.go = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.stop = False
        self.thread.start()

    def expect(self, n):
        self.want = n
        self.got = []
        self.go.release()

    def _run(self):
        while True:
            self.go.acquire()
            if self.stop:
                return
            peer = None
            try:
                while len(self.got) < self.want:
                    d, peer = self.sock.recvfrom(ssudp.MAX_DGRAM + 1)
                    self.got.append(d)
                send_burst(self.sock, self.got, peer)
            except OSError as e:
                self.errors.append(e)
            self.ready.release()

    def close(self):
        self.stop = True
        self.go.release()
        self.thread.join(5)
        self.sock.close()


def summary(prog):
    """The fields of the UDP summary a program (Server or Client) logs at
    exit, summed over its workers (one line each)."""
    prog = prog.program
    prog.terminate()
    ms = list(SUMMARY.finditer(prog.output()))
    assert ms, "no UDP summary in the log of %s:\n%s" % (prog.name, prog.output()[-3000:])
    keys = ("in", "out", "reads", "rx_batches", "gro", "sends", "tx_batches", "gso",
            "gso_refused")
    out = {k: sum(int(m.group(i + 1)) for m in ms) for i, k in enumerate(keys)}
    out["no_mmsg"] = all(m.group(10) is not None for m in ms)
    out["no_gso"] = all(m.group(11) is not None for m in ms)
    return out


def exchange_bursts(app, echo, bursts, send):
    """Sends each burst through the relays; checks what the target got and
    what came back: every datagram, whole, in order."""
    for dgrams in bursts:
        echo.expect(len(dgrams))
        send(dgrams)
        assert echo.ready.acquire(timeout=T(10)), "target got %d of %d datagrams" % (
            len(echo.got), len(dgrams))
        assert not echo.errors, echo.errors
        assert [len(d) for d in echo.got] == [len(d) for d in dgrams]
        assert echo.got == dgrams, "the target got them altered or out of order"
        back = [app() for _ in dgrams]
        assert [len(d) for d in back] == [len(d) for d in dgrams]
        assert back == dgrams, "the answers came back altered or out of order"


def check_paths(mode, stats):
    assert stats["gso_refused"] == 0, stats
    if mode == "no-mmsg":
        assert stats["no_mmsg"], stats
    else:
        assert not stats["no_mmsg"], stats
    if mode == "no-gso":
        assert stats["no_gso"] and stats["gso"] == 0 and stats["gro"] == 0, stats
    else:
        assert not stats["no_gso"], stats


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("method", METHODS)
def test_bursts_through_tunnel(ss, method, mode):
    env = MODES[mode]
    echo = BurstEcho()
    try:
        server = ss.server(method=method, extra=["-u", "-v"], env=env)
        tunnel = ss.tunnel(server, echo.addr, extra=["-u", "-v"], env=env)
        app = ssudp.udp_socket(timeout=T(5))
        app.connect(tunnel.addr)
        bursts = [payloads([1200] * BURST, k) for k in range(4)] + [payloads(MIXED, 9)]
        exchange_bursts(lambda: app.recv(ssudp.MAX_DGRAM + 1), echo, bursts,
                        lambda d: send_burst(app, d))
        app.close()
    finally:
        echo.close()
    total = BURST * 4 + len(MIXED)
    for prog in (tunnel, server):
        st = summary(prog)
        assert st["in"] == total and st["out"] == total, (prog.program.name, st)
        check_paths(mode, st)
        # A burst's datagrams went in one read and out in one send where
        # the path batches; one at a time without recvmmsg.
        assert st["rx_batches"] + st["gro"] > 0, (prog.program.name, st)
        if mode == "no-mmsg":
            # recvmsg and sendmsg alone (GRO and GSO still gather a burst)
            assert st["tx_batches"] == 0, (prog.program.name, st)
        else:
            assert st["reads"] < 2 * total, (prog.program.name, st)
            assert st["sends"] < 2 * total, (prog.program.name, st)
        if mode == "default":
            assert st["gso"] > 0, (prog.program.name, st)
        if mode == "no-gso":
            # recvmmsg and sendmmsg alone
            assert st["rx_batches"] > 0 and st["tx_batches"] > 0, (prog.program.name, st)


@pytest.mark.parametrize("mode", list(MODES))
def test_bursts_through_socks(ss, mode):
    env = MODES[mode]
    echo = BurstEcho()
    try:
        server = ss.server(method="aes-256-gcm", extra=["-u", "-v"], env=env)
        local = ss.local(server, extra=["-u", "-v"], env=env)
        with ssudp.Association(local.addr) as a:
            head = ssudp.socks5_udp_header(echo.addr[0], echo.addr[1])
            relay = tuple(a.relay[:2])

            def send(dgrams):
                send_burst(a.udp, [head + d for d in dgrams], relay)

            def recv():
                atyp, host, port, data = a.recv()
                assert (host, port) == tuple(echo.addr), (host, port)
                return data

            bursts = [payloads([1100] * BURST, k) for k in range(3)] + [payloads(MIXED, 9)]
            exchange_bursts(recv, echo, bursts, send)
    finally:
        echo.close()
    for prog in (local, server):
        st = summary(prog)
        check_paths(mode, st)
        assert st["rx_batches"] + st["gro"] > 0, (prog.program.name, st)


def setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: %s" % os.strerror(e))


@pytest.fixture
def small_mtu_netns():
    """The test thread (and the programs it starts) in a network namespace
    of its own whose loopback has an MTU of 1280: a GSO send of segments
    larger than 1252 bytes is refused there (EINVAL), a plain send of the
    same datagrams is fragmented and goes."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a network namespace and needs root (CI runs as root)")
    name = "ssudpgso-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", name], check=True)
    orig = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "mtu", "1280", "up"], check=True)
        fd = os.open("/run/netns/" + name, os.O_RDONLY)
        try:
            setns(fd)
        finally:
            os.close(fd)
        yield
    finally:
        setns(orig)
        os.close(orig)
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_gso_refused_falls_back(ss, small_mtu_netns):
    """The relays' sealed datagrams (1240 + 55 bytes) are too large for GSO
    on this loopback: the first GSO send of each socket is refused, its
    datagrams go one by one, and the socket sends without GSO from then on.
    Nothing is lost or reordered."""
    echo = BurstEcho()
    try:
        server = ss.server(method="aes-256-gcm", extra=["-u", "-v"])
        tunnel = ss.tunnel(server, echo.addr, extra=["-u", "-v"])
        app = ssudp.udp_socket(timeout=T(5))
        app.connect(tunnel.addr)
        bursts = [payloads([1240] * BURST, k) for k in range(4)]
        exchange_bursts(lambda: app.recv(ssudp.MAX_DGRAM + 1), echo, bursts,
                        lambda d: send_burst(app, d))
        app.close()
    finally:
        echo.close()
    for prog in (tunnel, server):
        st = summary(prog)
        assert st["in"] == BURST * 4 and st["out"] == BURST * 4, (prog.program.name, st)
        # the association's socket to the other relay refused GSO, once
        assert st["gso_refused"] >= 1, (prog.program.name, st)
        assert not st["no_gso"], (prog.program.name, st)
