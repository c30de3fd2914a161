#!/usr/bin/python3
"""Workers benchmark: N parallel bulk connections through ss-server with --workers 2, against
--workers 1 and shadowsocks-libev's ss-server, on loopback, in one run:

    ssload send --conns N --> ss-tunnel (ours) --> ss-server --> ssload sink

The client relay is the same for all three (our ss-tunnel, one worker) so that only the server
differs. For each run it measures the wall time (aggregate throughput), the CPU time of each
relay (utime + stime of all its threads, /proc/PID/stat) per GB, and for ours the bytes each
worker relayed (the "[wN] worker stopped: ... bytes up" lines ss-server writes at -v when it
exits). Runs alternate between the servers; the report gives medians.

Standard library only; run with /usr/bin/python3:

    /usr/bin/python3 tests/bench/workers.py --ours build [--conns 8] [--bytes 1G] [--runs 3]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

LOOPBACK = bench.LOOPBACK
WORKER_LINE = re.compile(r"\[w(\d+)\] worker stopped: (\d+) connections, (\d+) bytes up")


def run_once(server_exe, workers, tunnel_exe, ssload, method, cfg, logdir):
    procs = bench.Procs(logdir)
    try:
        password = bench.new_password(method)
        sink = procs.start("sink", [ssload, "sink", "--listen", f"{LOOPBACK}:0", "--quit-after",
                                    str(cfg.conns), "--timeout", str(cfg.timeout + 60)],
                           pipe_stdout=True)
        buf = [b""]
        sink_port = bench.read_json_line(sink, buf, 10, "sink")["port"]
        server_port, tunnel_port = bench.free_ports(2)
        argv = [server_exe, "-s", LOOPBACK, "-p", str(server_port), "-k", password, "-m", method]
        if workers:
            argv += ["--workers", str(workers), "-v"]
        server = procs.start("ss-server", argv)
        tunnel = procs.start("ss-tunnel", [
            tunnel_exe, "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK, "-l",
            str(tunnel_port), "-L", f"{LOOPBACK}:{sink_port}", "-k", password, "-m", method])
        relays = {"server": server, "tunnel": tunnel}
        bench.wait_listening([server_port, tunnel_port], relays, 10)
        time.sleep(0.3)
        t0 = bench.relays_times(relays)
        client = bench.run_client([ssload, "send", "--connect", f"{LOOPBACK}:{tunnel_port}",
                                   "--bytes", str(cfg.bytes), "--conns", str(cfg.conns),
                                   "--timeout", str(cfg.timeout)], cfg, logdir)
        sink.wait(timeout=30)
        t1 = bench.relays_times(relays)
        if not client.get("ok"):
            raise bench.BenchError(f"the load tool failed: {client}")
        out = buf[0] + sink.stdout.read()
        summary = [line for line in out.decode().splitlines() if '"summary"' in line]
        if not summary or f'"rx":{cfg.bytes}' not in summary[-1].replace(" ", ""):
            raise bench.BenchError(f"the sink did not receive {cfg.bytes} bytes: {summary}")
        wall = client["t_end"] - client["t_start"]
        cpu = {name: sum(t1[name]) - sum(t0[name]) for name in relays}
    finally:
        procs.stop_all()
    shares = {}
    with open(os.path.join(logdir, "ss-server.log"), errors="replace") as f:
        for m in WORKER_LINE.finditer(f.read()):
            shares[int(m.group(1))] = int(m.group(3))
    if workers > 1 and sorted(shares) != list(range(workers)):
        raise bench.BenchError(f"ss-server --workers {workers} logged the bytes of workers "
                               f"{sorted(shares)}")
    return {"mb_s": cfg.bytes / wall / 1e6,
            "server_s_gb": cpu["server"] / (cfg.bytes / bench.GB),
            "tunnel_s_gb": cpu["tunnel"] / (cfg.bytes / bench.GB),
            "shares": shares}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", default=os.path.join(bench.REPO, "build"))
    p.add_argument("--libev", default="/usr/bin")
    p.add_argument("--methods", default="aes-256-gcm,chacha20-ietf-poly1305")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--conns", type=int, default=8)
    p.add_argument("--bytes", type=bench.parse_size, default=1 << 30)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout", type=int, default=120)
    cfg = p.parse_args(argv)
    cfg.pin = {}
    ours = os.path.join(cfg.ours, "ss-server")
    tunnel = os.path.join(cfg.ours, "ss-tunnel")
    ssload = os.path.join(cfg.ours, "tests", "bench", "ssload")
    servers = [(f"ours --workers {cfg.workers}", ours, cfg.workers),
               ("ours --workers 1", ours, 1),
               ("libev", os.path.join(cfg.libev, "ss-server"), 0)]
    print(f"{cfg.conns} connections, {bench.human_bytes(cfg.bytes)} per run, {cfg.runs} runs "
          f"each (medians); {os.cpu_count()} CPUs; client relay: our ss-tunnel\n")
    print("| method | server | MB/s | server CPU s/GB | tunnel CPU s/GB | bytes per worker |")
    print("|---|---|---:|---:|---:|---|")
    for method in cfg.methods.split(","):
        results = {name: [] for name, _, _ in servers}
        for _ in range(cfg.runs):
            for name, exe, workers in servers:
                with tempfile.TemporaryDirectory(prefix="ss-workers-bench-") as logdir:
                    results[name].append(run_once(exe, workers, tunnel, ssload, method, cfg,
                                                  logdir))
        base = statistics.median(r["server_s_gb"] for r in results["ours --workers 1"])
        for name, _, workers in servers:
            rs = results[name]
            per = ""
            if workers > 1:
                fracs = []
                for r in rs:
                    total = sum(r["shares"].values()) or 1
                    fracs.append([r["shares"].get(w, 0) / total for w in range(workers)])
                per = " / ".join("w%d %.0f%%" % (w, 100 * statistics.median(f[w] for f in fracs))
                                 for w in range(workers))
                per += " (min over runs %.0f%%)" % (100 * min(min(f) for f in fracs))
            s_gb = statistics.median(r["server_s_gb"] for r in rs)
            print("| %s | %s | %.0f | %.3f (%.2fx w1) | %.3f | %s |" % (
                method, name, statistics.median(r["mb_s"] for r in rs), s_gb, s_gb / base,
                statistics.median(r["tunnel_s_gb"] for r in rs), per or "-"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except bench.BenchError as e:
        print(f"workers.py: {e}", file=sys.stderr)
        sys.exit(1)
