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


def run_once(cfg, workers, ports, logdir):
    procs = bench.Procs(logdir)
    try:
        psk = os.urandom(32)
        echo = procs.start("echo", [cfg.ssload, "udp-echo", "--listen", f"{LOOPBACK}:0"],
                           pipe_stdout=True)
        buf = [b""]
        echo_port = bench.read_json_line(echo, buf, 10, "udp-echo")["port"]
        server_port, = bench.free_ports(1, udp=True)
        server = procs.start("ss-server", [
            cfg.server, "-s", LOOPBACK, "-p", str(server_port), "-u", "-m", METHOD,
            "-k", base64.b64encode(psk).decode(), "--workers", str(workers), "-v"])
        bench.wait_listening([server_port], {"server": server}, 10, udp_ports=[server_port])
        time.sleep(0.3)
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
        while sent < cfg.count:
            burst = min(cfg.burst, cfg.count - sent)
            for i in range(burst):
                socks[(sent + i) % ports].sendto(session.next(payload), dest)
            sent += burst
            want = burst
            deadline = time.monotonic() + 1.0
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
        server.wait(timeout=10)
        with open(os.path.join(logdir, "ss-server.log"), errors="replace") as f:
            handed = sum(int(m.group(1)) for m in HANDED.finditer(f.read()))
        return {"cpu_us": cpu / cfg.count * 1e6, "handed": handed / cfg.count,
                "lost": (cfg.count - got) / cfg.count, "rate": cfg.count / wall}
    finally:
        procs.stop_all()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--count", type=int, default=20000, help="datagrams a run (20000)")
    p.add_argument("--size", type=int, default=1200, help="payload bytes (1200)")
    p.add_argument("--burst", type=int, default=16, help="datagrams in flight at most (16)")
    p.add_argument("--ports", type=int, default=4, help="source ports taking turns (4)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--ssload")
    cfg = p.parse_args()
    cfg.server = bench.binary(cfg.ours, "ss-server")
    work = tempfile.mkdtemp(prefix="udp-sessions-")
    cfg.ssload = bench.find_tool("ssload", cfg.ssload, cfg.ours, work)
    configs = [("--workers 1, 1 port", 1, 1), ("--workers 2, 1 port", 2, 1),
               (f"--workers 2, {cfg.ports} ports", 2, cfg.ports)]
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
