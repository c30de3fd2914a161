#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a SIP022 UDP session costs ss-server when its datagrams reach a worker that does not
hold it: the hand-off of relay/udp_sessions.h, measured on loopback.

    this script (K sockets, one session) --> ss-server --workers W -u --> ssload udp-echo

One SIP022 session (2022-blake3-aes-256-gcm, made here with the reference encoder of
tests/tools, one subkey for the session) sends N datagrams of S bytes, each echoed by the
target and answered by the server. With K = 1 the session's datagrams all come from one port,
so they reach one worker (the one that holds the session). With K > 1 they come from K ports
in turn, as from a client whose NAT changes its port, and the kernel's hash sends some to the
other workers, which hand them to the holder. The server's CPU time (utime + stime of all its
threads, /proc/PID/stat) over the run is divided by N; ss-server's summary at exit (-v) says
how many datagrams were handed over. Runs alternate between the configurations; the report
gives medians, and the extra CPU per handed datagram:

    (CPU per datagram with K ports - CPU with one port) / (fraction handed)

The client is Python and is the bottleneck: the rate is not the server's, the CPU per datagram
is. Standard library plus python3-cryptography and b3sum (the reference encoder's):

    /usr/bin/python3 tests/bench/udp_sessions.py --ours build [--count 20000] [--runs 3]
"""

import argparse
import base64
import os
import re
import select
import socket
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import bench  # noqa: E402
import ss2022_ref as ref  # noqa: E402

LOOPBACK = bench.LOOPBACK
METHOD = "2022-blake3-aes-256-gcm"
HANDED = re.compile(r"udp: (\d+) datagrams handed to the workers holding their sessions")


class Session:
    """Client datagrams of one session, sealed as SIP022 says (AES methods)."""

    def __init__(self, psk, target):
        self.key = psk
        self.sid = int.from_bytes(os.urandom(8), "big")
        self.pid = 0
        self.aead = ref.aead(METHOD, ref.session_subkey(psk, ref.u64(self.sid)))
        host, port = target
        self.addr = bytes([1]) + socket.inet_aton(host) + port.to_bytes(2, "big")

    def next(self, payload):
        sep = ref.u64(self.sid) + ref.u64(self.pid)
        self.pid += 1
        main = bytes([0]) + ref.u64(int(time.time())) + ref.u16(0) + self.addr
        return ref.aes_ecb(self.key, sep) + self.aead.encrypt(sep[4:16], main + payload, None)


def run_once(cfg, workers, ports, logdir, count=None):
    """One run of count datagrams (default cfg.count): the server's CPU per datagram, the
    share handed over, the share lost, the rate; with --callgrind, also the server's
    user-space instructions in all ("instructions")."""
    count = count or cfg.count
    procs = bench.Procs(logdir)
    cg_out = os.path.join(logdir, "callgrind.out")
    try:
        psk = os.urandom(32)
        echo = procs.start("echo", [cfg.ssload, "udp-echo", "--listen", f"{LOOPBACK}:0"],
                           pipe_stdout=True)
        buf = [b""]
        echo_port = bench.read_json_line(echo, buf, 10, "udp-echo")["port"]
        server_port, = bench.free_ports(1, udp=True)
        valgrind = (["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg_out}"]
                    if cfg.callgrind else [])
        server = procs.start("ss-server", valgrind + [
            cfg.server, "-s", LOOPBACK, "-p", str(server_port), "-u", "-m", METHOD,
            "-k", base64.b64encode(psk).decode(), "--workers", str(workers), "-v"])
        bench.wait_listening([server_port], {"server": server}, 120 if cfg.callgrind else 10,
                             udp_ports=[server_port])
        time.sleep(1.0 if cfg.callgrind else 0.3)
        socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(ports)]
        for s in socks:
            s.bind((LOOPBACK, 0))
            s.setblocking(False)
        session = Session(psk, (LOOPBACK, echo_port))
        payload = os.urandom(cfg.size)
        dest = (LOOPBACK, server_port)
        sent = got = 0
        cpu0 = bench.proc_cpu(server.pid)
        t0 = time.monotonic()
        while sent < count:
            burst = min(cfg.burst, count - sent)
            for i in range(burst):
                socks[(sent + i) % ports].sendto(session.next(payload), dest)
            sent += burst
            want = burst
            deadline = time.monotonic() + (10.0 if cfg.callgrind else 1.0)
            while want and time.monotonic() < deadline:
                ready, _, _ = select.select(socks, [], [], 0.2)
                for s in ready:
                    while want:
                        try:
                            s.recv(65536)
                        except BlockingIOError:
                            break
                        want -= 1
                        got += 1
        wall = time.monotonic() - t0
        cpu = bench.proc_cpu(server.pid) - cpu0
        for s in socks:
            s.close()
        server.terminate()
        server.wait(timeout=120)
        with open(os.path.join(logdir, "ss-server.log"), errors="replace") as f:
            handed = sum(int(m.group(1)) for m in HANDED.finditer(f.read()))
        res = {"cpu_us": cpu / count * 1e6, "handed": handed / count,
               "lost": (count - got) / count, "rate": count / wall}
        if cfg.callgrind:
            with open(cg_out) as f:
                res["instructions"] = int(re.search(r"^(?:summary|totals): (\d+)", f.read(),
                                                    re.M).group(1))
        return res
    finally:
        procs.stop_all()


def callgrind_report(cfg, configs, work):
    n1, n2 = cfg.count, 5 * cfg.count
    print(f"ss-server's user-space instructions per datagram (in and answer), callgrind, "
          f"({n2} - {n1}) datagrams of {cfg.size} bytes; kernel work not counted\n")
    print("| configuration | instructions per datagram | handed over |")
    print("|---|---:|---:|")
    per = {}
    for name, workers, ports in configs:
        runs = []
        for n in (n1, n2):
            logdir = os.path.join(work, f"cg-w{workers}-p{ports}-n{n}")
            os.makedirs(logdir)
            runs.append(run_once(cfg, workers, ports, logdir, n))
            print(f"{name}, {n}: {runs[-1]}", file=sys.stderr)
        per[name] = (runs[1]["instructions"] - runs[0]["instructions"]) / (n2 - n1)
        handed = (runs[1]["handed"] * n2 - runs[0]["handed"] * n1) / (n2 - n1)
        per[name, "handed"] = handed
        print(f"| {name} | {per[name]:,.0f} | {handed:.0%} |", flush=True)
    many = f"--workers 2, {cfg.ports} ports"
    if per[many, "handed"] > 0:
        extra = (per[many] - per["--workers 2, 1 port"]) / per[many, "handed"]
        print(f"\nExtra instructions per handed datagram: {extra:,.0f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--count", type=int, default=20000, help="datagrams a run (20000)")
    p.add_argument("--size", type=int, default=1200, help="payload bytes (1200)")
    p.add_argument("--burst", type=int, default=16, help="datagrams in flight at most (16)")
    p.add_argument("--ports", type=int, default=4, help="source ports taking turns (4)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--ssload")
    p.add_argument("--callgrind", action="store_true",
                   help="count ss-server's user-space instructions per datagram under "
                        "callgrind instead (runs of --count and 5 x --count, differenced)")
    cfg = p.parse_args()
    cfg.server = bench.binary(cfg.ours, "ss-server")
    work = tempfile.mkdtemp(prefix="udp-sessions-")
    cfg.ssload = bench.find_tool("ssload", cfg.ssload, cfg.ours, work)
    configs = [("--workers 1, 1 port", 1, 1), ("--workers 2, 1 port", 2, 1),
               (f"--workers 2, {cfg.ports} ports", 2, cfg.ports)]
    if cfg.callgrind:
        callgrind_report(cfg, configs, work)
        return
    results = {name: [] for name, _, _ in configs}
    for r in range(cfg.runs):
        for name, workers, ports in configs:
            logdir = os.path.join(work, f"run{r}-w{workers}-p{ports}")
            os.makedirs(logdir)
            res = run_once(cfg, workers, ports, logdir)
            print(f"{name}: {res}", file=sys.stderr)
            results[name].append(res)
    print(f"{cfg.count} datagrams of {cfg.size} bytes a run, {cfg.runs} runs, medians; "
          f"CPU of ss-server per datagram (in and answer)\n")
    print("| configuration | CPU per datagram | handed over | lost | datagrams/s (client-bound) |")
    print("|---|---:|---:|---:|---:|")
    med = {}
    for name, _, _ in configs:
        rs = results[name]
        med[name] = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        m = med[name]
        print(f"| {name} | {m['cpu_us']:.2f} µs | {m['handed']:.0%} | {m['lost']:.2%} | "
              f"{m['rate']:.0f} |")
    one = med["--workers 2, 1 port"]
    many = med[f"--workers 2, {cfg.ports} ports"]
    if many["handed"] > 0:
        extra = (many["cpu_us"] - one["cpu_us"]) / many["handed"]
        print(f"\nExtra CPU per handed datagram: {extra:.2f} µs")


if __name__ == "__main__":
    main()
