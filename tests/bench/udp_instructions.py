#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ss-server's user-space instructions per UDP datagram, counted by valgrind's callgrind: a
figure that does not move with the machine's load, for changes too small for the CPU-time
benchmark (bench.py --tests udp,udp16) to resolve on a shared machine.

    ssload udp-send --> ss-tunnel -u --> ss-server -u (under callgrind) --> ssload udp-echo

Each configuration runs twice, with N1 and N2 datagrams (each echoed and answered); the
difference of the two totals over N2 - N1 is the cost of one datagram's round trip through
ss-server (the datagram in and its answer out), start-up and exit cancelling out. The kernel's
work is not counted. Standard library only:

    /usr/bin/python3 tests/bench/udp_instructions.py --server build/ss-server \\
        [--server before/ss-server] [--workers 1,2] [--methods 2022-blake3-aes-256-gcm]
"""

import argparse
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

LOOPBACK = bench.LOOPBACK
TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def instructions(cfg, server_exe, workers, method, count, logdir):
    procs = bench.Procs(logdir)
    out = os.path.join(logdir, "callgrind.out")
    try:
        password = bench.new_password(method)
        echo = procs.start("udp-echo", [cfg.ssload, "udp-echo", "--listen", f"{LOOPBACK}:0"],
                           pipe_stdout=True)
        echo_port = bench.read_json_line(echo, [b""], 10, "udp-echo")["port"]
        server_port, tunnel_port = bench.free_ports(2, udp=True)
        server = procs.start("ss-server", [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            server_exe, "-u", "-s", LOOPBACK, "-p", str(server_port), "-k", password,
            "-m", method, "--workers", str(workers)])
        tunnel = procs.start("ss-tunnel", [
            cfg.tunnel, "-u", "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK,
            "-l", str(tunnel_port), "-L", f"{LOOPBACK}:{echo_port}", "-k", password,
            "-m", method])
        bench.wait_listening([server_port, tunnel_port], {"server": server, "tunnel": tunnel},
                             120, udp_ports=[server_port, tunnel_port])
        time.sleep(1.0)
        client = procs.start("udp-send", [
            cfg.ssload, "udp-send", "--connect", f"{LOOPBACK}:{tunnel_port}", "--count",
            str(count), "--size", str(cfg.size), "--window", "4", "--loss-after", "30",
            "--timeout", "600"], pipe_stdout=True)
        client.wait(timeout=900)
        if client.returncode != 0:
            raise bench.BenchError(f"udp-send failed ({client.returncode}), see {logdir}")
        server.terminate()
        server.wait(timeout=120)
        with open(out) as f:
            m = TOTAL.search(f.read())
        if not m:
            raise bench.BenchError(f"no total in {out}")
        return int(m.group(1))
    finally:
        procs.stop_all()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", action="append", required=True,
                   help="an ss-server to count (repeat to compare builds)")
    p.add_argument("--tunnel", help="the ss-tunnel of the client side (default: beside the "
                                    "first --server)")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--methods", default="2022-blake3-aes-256-gcm,aes-256-gcm")
    p.add_argument("--counts", default="500,2500", help="N1,N2 (500,2500)")
    p.add_argument("--size", type=int, default=1200)
    p.add_argument("--ssload")
    cfg = p.parse_args()
    first = os.path.dirname(os.path.abspath(cfg.server[0]))
    cfg.tunnel = cfg.tunnel or bench.binary(first, "ss-tunnel")
    work = tempfile.mkdtemp(prefix="udp-instructions-")
    cfg.ssload = bench.find_tool("ssload", cfg.ssload, first, work)
    n1, n2 = (int(x) for x in cfg.counts.split(","))
    print(f"ss-server's instructions per datagram round trip ({cfg.size}-byte payload; "
          f"({n2} - {n1}) datagrams, callgrind)\n")
    print("| ss-server | method | workers | instructions |")
    print("|---|---|---:|---:|")
    for method in cfg.methods.split(","):
        for workers in (int(w) for w in cfg.workers.split(",")):
            for i, exe in enumerate(cfg.server):
                totals = []
                for n in (n1, n2):
                    logdir = os.path.join(work, f"s{i}-{method}-w{workers}-n{n}")
                    os.makedirs(logdir)
                    totals.append(instructions(cfg, exe, workers, method, n, logdir))
                per = (totals[1] - totals[0]) / (n2 - n1)
                print(f"| {exe} | {method} | {workers} | {per:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
