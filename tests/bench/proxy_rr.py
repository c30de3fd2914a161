#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Short connections through ss-local's port: SOCKS5 against HTTP CONNECT.

    client (this script) <--> ss-local <--> ss-server <--> ssload sink --echo

Each connection does the proxy handshake, sends --size bytes, reads them
back and closes, --conns at a time. The figure is the CPU time of ss-local
and ss-server over the connections (the scheduler's nanosecond count,
/proc/PID/task/*/schedstat, user and system time together), per
connection: the client's own cost is left out, so Python's speed does not
enter it. The two protocols alternate, fresh processes each run; the
medians are printed, and the median of the runs' pairwise ratios, which a
machine whose load drifts between pairs disturbs less.

    /usr/bin/python3 tests/bench/proxy_rr.py --ours build --count 5000 --repeat 5
"""

import argparse
import concurrent.futures
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time

LOOPBACK = "127.0.0.1"
def cpu_seconds(pid):
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            total += int(f.read().split()[0])
    return total / 1e9


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((LOOPBACK, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nothing listens on port %d" % port)


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        data = s.recv(n - len(buf))
        if not data:
            raise RuntimeError("EOF after %d of %d bytes" % (len(buf), n))
        buf += data
    return bytes(buf)


def socks5_open(proxy, port):
    s = socket.create_connection(proxy)
    s.sendall(b"\x05\x01\x00")
    assert recv_exact(s, 2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(LOOPBACK) + port.to_bytes(2, "big"))
    rep = recv_exact(s, 10)
    assert rep[1] == 0, rep
    return s


def http_open(proxy, port):
    s = socket.create_connection(proxy)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
              % (LOOPBACK.encode(), port, LOOPBACK.encode(), port))
    want = b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert recv_exact(s, len(want)) == want
    return s


def one(opener, proxy, port, payload):
    s = opener(proxy, port)
    try:
        s.sendall(payload)
        assert recv_exact(s, len(payload)) == payload
    finally:
        s.close()


def run(args, proto):
    """One run: fresh relays, --count connections; CPU µs per connection."""
    procs = []
    try:
        sink = subprocess.Popen([args.ssload, "sink", "--listen", "%s:0" % LOOPBACK, "--echo"],
                                stdout=subprocess.PIPE)
        procs.append(sink)
        sink_port = json.loads(sink.stdout.readline())["port"]
        sport, lport = free_port(), free_port()
        password = secrets.token_urlsafe(16)
        common = ["-m", args.method, "-k", password]
        server = subprocess.Popen([os.path.join(args.ours, "ss-server"), "-s", LOOPBACK, "-p",
                                   str(sport)] + common, stderr=subprocess.DEVNULL)
        procs.append(server)
        wait_port(sport)
        local = subprocess.Popen([os.path.join(args.ours, "ss-local"), "-s", LOOPBACK, "-p",
                                  str(sport), "-l", str(lport)] + common,
                                 stderr=subprocess.DEVNULL)
        procs.append(local)
        wait_port(lport)
        opener = socks5_open if proto == "socks5" else http_open
        payload = os.urandom(args.size)
        proxy = (LOOPBACK, lport)
        one(opener, proxy, sink_port, payload)  # warm-up
        before = cpu_seconds(local.pid) + cpu_seconds(server.pid)
        with concurrent.futures.ThreadPoolExecutor(args.conns) as pool:
            for f in [pool.submit(one, opener, proxy, sink_port, payload)
                      for _ in range(args.count)]:
                f.result()
        after = cpu_seconds(local.pid) + cpu_seconds(server.pid)
        return (after - before) * 1e6 / args.count
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ours", default="build", help="the build directory with ss-local, ss-server")
    ap.add_argument("--ssload", help="ssload (default: OURS/tests/bench/ssload)")
    ap.add_argument("--method", default="chacha20-ietf-poly1305")
    ap.add_argument("--count", type=int, default=5000, help="connections per run")
    ap.add_argument("--size", type=int, default=512, help="bytes each way per connection")
    ap.add_argument("--conns", type=int, default=8, help="connections at a time")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each protocol")
    args = ap.parse_args()
    args.ssload = args.ssload or os.path.join(args.ours, "tests", "bench", "ssload")
    results = {"socks5": [], "http": []}
    for i in range(args.repeat):
        for proto in (("socks5", "http") if i % 2 == 0 else ("http", "socks5")):
            results[proto].append(run(args, proto))
            print("%s run %d: %.1f µs/conn" % (proto, i + 1, results[proto][-1]),
                  file=sys.stderr)
    med = {p: statistics.median(v) for p, v in results.items()}
    pairs = [h / s for h, s in zip(results["http"], results["socks5"])]
    print("| front end | ss-local + ss-server CPU, µs/conn (median of %d) | runs |"
          % args.repeat)
    print("| --- | --- | --- |")
    for p in ("socks5", "http"):
        print("| %s | %.1f | %s |" % ("SOCKS5" if p == "socks5" else "HTTP CONNECT", med[p],
                                     ", ".join("%.1f" % v for v in results[p])))
    print("\nHTTP CONNECT / SOCKS5: %.3f of the medians, %.3f the median of %d paired runs "
          "(%s)" % (med["http"] / med["socks5"], statistics.median(pairs), len(pairs),
                    ", ".join("%.2f" % r for r in pairs)))


if __name__ == "__main__":
    main()
