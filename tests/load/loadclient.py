#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Many SOCKS5 connections from one process, for the load suite.

  loadclient.py --proxy HOST:PORT --target HOST:PORT --conns N
                [--size S] [--parallel K] [--timeout SECONDS] [--tag T]

Opens N connections through the SOCKS5 proxy to the target (an echo), at
most K of them in their handshake at a time; on each, once it is
established, sends S bytes of its own and checks that the same bytes come
back. Then holds them all open:

  SIGUSR1  one more echo round on every connection still open, with new
           bytes (shows they all still work at the same time)
  SIGTERM  closes every connection (a normal close) and exits 0

Each phase ends with one JSON line on stdout: {"event": "open" | "echo" |
"closed", "ok": connections that did it right, "failed": ..., "reasons":
{reason: count}, "examples": [...], "seconds": ...}. A connection that ends
or misbehaves while held open counts as failed in the next report.

Standard library only; loopback only (the test passes the addresses).
"""

import argparse
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time

NEW, CONNECTING, GREETING, REPLY, ECHO, IDLE, FAILED = range(7)
STATE_NAMES = ("not started", "connecting", "greeting", "reply", "echo", "idle", "failed")


class Conn:
    __slots__ = ("index", "sock", "state", "out", "got", "expect")

    def __init__(self, index):
        self.index = index
        self.sock = None
        self.state = NEW
        self.out = b""
        self.got = bytearray()
        self.expect = b""


class Client:
    def __init__(self, args):
        self.args = args
        self.proxy = _addr(args.proxy)
        self.target = _addr(args.target)
        self.sel = selectors.DefaultSelector()
        self.conns = [Conn(i) for i in range(args.conns)]
        self.reasons = {}
        self.examples = []
        self.round = 0
        self.base = os.urandom(args.size + 256)
        host = socket.inet_pton(socket.AF_INET, self.target[0])
        self.request = b"\x05\x01\x00\x01" + host + struct.pack("!H", self.target[1])

    def payload(self, c):
        """Bytes no other connection (or round) sends: a cross-wired or
        replayed stream shows."""
        head = b"%s:%d:%d:" % (self.args.tag.encode(), c.index, self.round)
        off = (c.index * 7 + self.round * 13) % 256
        return (head + self.base[off:off + self.args.size])[:self.args.size]

    def fail(self, c, reason):
        if c.state == FAILED:
            return
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if len(self.examples) < 8:
            self.examples.append("conn %d: %s" % (c.index, reason))
        c.state = FAILED
        if c.sock is not None:
            try:
                self.sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
            c.sock = None

    def watch(self, c, events):
        try:
            self.sel.modify(c.sock, events, c)
        except KeyError:
            self.sel.register(c.sock, events, c)

    def send(self, c, data):
        c.out += data
        self.flush(c)

    def flush(self, c):
        while c.out:
            try:
                n = c.sock.send(c.out)
            except BlockingIOError:
                break
            except OSError as e:
                self.fail(c, "send: %s" % e.strerror)
                return
            c.out = c.out[n:]
        if c.state != FAILED:
            self.watch(c, selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0))

    def start(self, c):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        c.sock = s
        c.state = CONNECTING
        err = s.connect_ex(self.proxy)
        if err not in (0, 115):  # EINPROGRESS
            self.fail(c, "connect: %s" % os.strerror(err))
            return
        self.watch(c, selectors.EVENT_WRITE)

    def begin_echo(self, c):
        c.state = ECHO
        c.expect = self.payload(c)
        c.got = bytearray()
        self.send(c, c.expect)

    def on_event(self, c, mask):
        if c.state == CONNECTING:
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.fail(c, "connect: %s" % os.strerror(err))
                return
            c.state = GREETING
            c.got = bytearray()
            self.send(c, b"\x05\x01\x00")
            return
        if mask & selectors.EVENT_WRITE:
            self.flush(c)
            if c.state == FAILED or not mask & selectors.EVENT_READ:
                return
        try:
            data = c.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as e:
            self.fail(c, "recv in %s: %s" % (STATE_NAMES[c.state], e.strerror))
            return
        if not data:
            self.fail(c, "closed by the proxy in %s" % STATE_NAMES[c.state])
            return
        if c.state == IDLE:
            self.fail(c, "unexpected bytes while idle")
            return
        c.got += data
        if c.state == GREETING and len(c.got) >= 2:
            if bytes(c.got[:2]) != b"\x05\x00" or len(c.got) > 2:
                self.fail(c, "bad method reply %r" % bytes(c.got[:4]))
                return
            c.state = REPLY
            c.got = bytearray()
            self.send(c, self.request)
        elif c.state == REPLY and len(c.got) >= 5:
            need = {1: 10, 4: 22, 3: 7 + c.got[4]}.get(c.got[3])
            if c.got[0] != 5 or c.got[1] != 0 or need is None:
                self.fail(c, "SOCKS5 reply %r" % bytes(c.got[:4]))
                return
            if len(c.got) > need:
                self.fail(c, "bytes before the payload was sent")
            elif len(c.got) == need:
                self.begin_echo(c)
        elif c.state == ECHO and len(c.got) >= len(c.expect):
            if bytes(c.got) != c.expect:
                self.fail(c, "echo differs from what was sent (%d bytes)" % len(c.got))
                return
            c.state = IDLE
            c.got = bytearray()

    def run_until(self, done, deadline, pending=()):
        """Dispatches events until done() or the deadline; starts the
        connections of pending (an iterator) as room opens."""
        pending = iter(pending)
        busy = sum(1 for c in self.conns if NEW < c.state < IDLE)
        while not done():
            while busy < self.args.parallel:
                c = next(pending, None)
                if c is None:
                    break
                self.start(c)
                busy += 1
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, mask in self.sel.select(min(left, 0.2)):
                c = key.data
                before = c.state
                self.on_event(c, mask)
                if before < IDLE <= c.state:
                    busy -= 1
        for c in self.conns:
            if c.state < IDLE:
                self.fail(c, "timed out in %s" % STATE_NAMES[c.state])

    def report(self, event, t0, ok):
        line = {"event": event, "ok": ok, "failed": sum(self.reasons.values()),
                "reasons": self.reasons, "examples": self.examples,
                "seconds": round(time.monotonic() - t0, 3)}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        self.reasons, self.examples = {}, []

    def open_all(self):
        t0 = time.monotonic()
        self.run_until(lambda: all(c.state >= IDLE for c in self.conns),
                       t0 + self.args.timeout, self.conns)
        self.report("open", t0, sum(1 for c in self.conns if c.state == IDLE))

    def echo_round(self):
        t0 = time.monotonic()
        self.round += 1
        for c in self.conns:
            if c.state == IDLE:
                self.begin_echo(c)
        self.run_until(lambda: all(c.state >= IDLE for c in self.conns),
                       t0 + self.args.timeout)
        self.report("echo", t0, sum(1 for c in self.conns if c.state == IDLE))

    def hold(self, flags):
        """Watches the idle connections until a signal asks for more."""
        while not flags:
            for key, mask in self.sel.select(0.1):
                self.on_event(key.data, mask)

    def close_all(self):
        t0 = time.monotonic()
        ok = 0
        for c in self.conns:
            if c.sock is not None:
                self.sel.unregister(c.sock)
                c.sock.close()
                c.sock = None
                ok += 1
        self.report("closed", t0, ok)


def _addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--conns", type=int, required=True)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--tag", default="c")
    args = ap.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    flags = []
    signal.signal(signal.SIGUSR1, lambda *_: flags.append("echo"))
    signal.signal(signal.SIGTERM, lambda *_: flags.append("close"))
    client = Client(args)
    client.open_all()
    while True:
        client.hold(flags)
        what = flags.pop(0)
        if what == "close":
            client.close_all()
            return 0
        client.echo_round()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
