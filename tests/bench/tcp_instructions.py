#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""User-space instructions per TCP connection and per MiB relayed, counted by valgrind's
callgrind in both relays of a pair: a figure that does not move with the machine's load, for
changes to the connection path too small for the CPU-time benchmark (bench.py) to resolve on a
shared machine. The TCP counterpart of udp_instructions.py.

    rr:      ssload rr   --> ss-tunnel --> ss-server --> ssload sink --echo   (per connection)
    upload:  ssload send --> ss-tunnel --> ss-server --> ssload sink          (per MiB)
    socks5:  SOCKS5 client --> ss-local --> ss-server --> ssload sink --echo  (per connection)
    http:    HTTP CONNECT client --> ss-local --> ss-server --> sink --echo   (per connection)

Both relays run under callgrind. Each configuration runs twice, with N1 and N2 units
(connections or MiB); the difference of the totals over N2 - N1 is the cost of one unit, start-up
and exit cancelling out. The kernel's work is not counted. Standard library only:

    /usr/bin/python3 tests/bench/tcp_instructions.py --build build [--build before/build] \\
        [--tests rr,upload,socks5,http] [--methods aes-256-gcm]
"""

import argparse
import os
import re
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

LOOPBACK = bench.LOOPBACK
TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)
TESTS = ("rr", "upload", "socks5", "http")
RR_SIZE = 100


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        data = s.recv(n - len(buf))
        if not data:
            raise bench.BenchError("EOF after %d of %d bytes" % (len(buf), n))
        buf += data
    return bytes(buf)


def proxy_exchange(proto, port, target_port, payload):
    """One short connection through ss-local's port: the handshake, payload out and back."""
    with socket.create_connection((LOOPBACK, port), timeout=60) as s:
        if proto == "socks5":
            s.sendall(b"\x05\x01\x00")
            if recv_exact(s, 2) != b"\x05\x00":
                raise bench.BenchError("SOCKS5: no method accepted")
            s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(LOOPBACK) +
                      target_port.to_bytes(2, "big"))
            if recv_exact(s, 10)[1] != 0:
                raise bench.BenchError("SOCKS5: request refused")
        else:
            target = b"%s:%d" % (LOOPBACK.encode(), target_port)
            s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
            want = b"HTTP/1.1 200 Connection established\r\n\r\n"
            if recv_exact(s, len(want)) != want:
                raise bench.BenchError("HTTP CONNECT refused")
        s.sendall(payload)
        if recv_exact(s, len(payload)) != payload:
            raise bench.BenchError("the echo differs")


def callgrind(out):
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]


def total(path):
    with open(path) as f:
        m = TOTAL.search(f.read())
    if not m:
        raise bench.BenchError(f"no total in {path}")
    return int(m.group(1))


def instructions(build, test, method, units, logdir):
    """Instructions of (client relay, ss-server) over one run of `units` units."""
    procs = bench.Procs(logdir)
    outs = {"client": os.path.join(logdir, "client.out"),
            "server": os.path.join(logdir, "server.out")}
    try:
        password = bench.new_password(method)
        sink_args = [] if test == "upload" else ["--echo"]
        sink = procs.start("sink", [build.ssload, "sink", "--listen", f"{LOOPBACK}:0",
                                    "--timeout", "900"] + sink_args, pipe_stdout=True)
        sink_port = bench.read_json_line(sink, [b""], 10, "sink")["port"]
        server_port, client_port = bench.free_ports(2)
        common = ["-k", password, "-m", method]
        server = procs.start("ss-server", callgrind(outs["server"]) + [
            build.server, "-s", LOOPBACK, "-p", str(server_port)] + common)
        if test in ("rr", "upload"):
            client_argv = [build.tunnel, "-L", f"{LOOPBACK}:{sink_port}"]
        else:
            client_argv = [build.local]
        client = procs.start("client", callgrind(outs["client"]) + client_argv + [
            "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK, "-l", str(client_port)]
            + common)
        bench.wait_listening([server_port, client_port], {"ss-server": server, "client": client},
                             120)
        time.sleep(1.0)
        if test == "rr":
            argv = ["rr", "--count", str(units), "--size", str(RR_SIZE), "--conns", "1"]
        elif test == "upload":
            argv = ["send", "--bytes", str(units * bench.MIB), "--conns", "1"]
        if test in ("rr", "upload"):
            run = procs.start("load", [build.ssload, argv[0], "--connect",
                                       f"{LOOPBACK}:{client_port}"] + argv[1:] +
                              ["--timeout", "900"], pipe_stdout=True)
            run.wait(timeout=1200)
            if run.returncode != 0:
                raise bench.BenchError(f"ssload failed ({run.returncode}), see {logdir}")
        else:
            payload = os.urandom(RR_SIZE)
            for _ in range(units):
                proxy_exchange(test, client_port, sink_port, payload)
        # Let the last connections' ends reach both relays before they stop.
        time.sleep(1.0)
        for p in (client, server):
            p.terminate()
            p.wait(timeout=120)
        return total(outs["client"]), total(outs["server"])
    finally:
        procs.stop_all()


class Build:
    def __init__(self, directory, ssload, work):
        self.dir = directory
        self.server = bench.binary(directory, "ss-server")
        self.tunnel = bench.binary(directory, "ss-tunnel")
        self.local = bench.binary(directory, "ss-local")
        self.ssload = bench.find_tool("ssload", ssload, directory, work)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", action="append", required=True,
                   help="a build directory to count (repeat to compare builds)")
    p.add_argument("--tests", default=",".join(TESTS))
    p.add_argument("--methods", default="aes-256-gcm,2022-blake3-aes-256-gcm")
    p.add_argument("--conns", default="50,250", help="N1,N2 connections (50,250)")
    p.add_argument("--mib", default="4,20", help="N1,N2 MiB for upload (4,20)")
    p.add_argument("--ssload")
    cfg = p.parse_args()
    work = tempfile.mkdtemp(prefix="tcp-instructions-")
    builds = [Build(d, cfg.ssload, work) for d in cfg.build]
    tests = cfg.tests.split(",")
    for t in tests:
        if t not in TESTS:
            p.error(f"unknown test {t}; known: {', '.join(TESTS)}")
    print(f"User-space instructions of each relay, per connection ({RR_SIZE} bytes each way) or "
          "per MiB uploaded (callgrind; difference of two runs)\n")
    print("| build | test | method | client relay | ss-server | both |")
    print("|---|---|---|---:|---:|---:|")
    for test in tests:
        n1, n2 = (int(x) for x in (cfg.mib if test == "upload" else cfg.conns).split(","))
        unit = "MiB" if test == "upload" else "conn"
        for method in cfg.methods.split(","):
            for i, b in enumerate(builds):
                runs = []
                for n in (n1, n2):
                    logdir = os.path.join(work, f"b{i}-{test}-{method}-n{n}")
                    os.makedirs(logdir)
                    runs.append(instructions(b, test, method, n, logdir))
                per = [(runs[1][k] - runs[0][k]) / (n2 - n1) for k in (0, 1)]
                print(f"| {b.dir} | {test} (per {unit}) | {method} | {per[0]:,.0f} | "
                      f"{per[1]:,.0f} | {per[0] + per[1]:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
