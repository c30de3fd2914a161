#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Workers benchmark: N parallel bulk connections through ss-server with --workers 2, against
--workers 1 and shadowsocks-libev's ss-server, on loopback, in one run:

    ssload send --conns N --> ss-tunnel (ours) --> ss-server --> ssload sink

The client relay is the same for all three (our ss-tunnel, one worker) so that only the server
differs. For each run it measures the wall time (aggregate throughput), the CPU time of each
relay (utime + stime of all its threads, /proc/PID/stat) per GB, and for ours the bytes each
worker relayed (the "[wN] worker stopped: ... bytes up" lines ss-server writes at -v when it
exits). Runs alternate between the servers; the report gives medians.

Standard library only; run with /usr/bin/python3:

    /usr/bin/python3 tests/bench/workers.py --ours build [--conns 8] [--bytes 1G] [--runs 3] \
        [--svg docs/performance-workers.svg]
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
    p.add_argument("--svg", metavar="FILE",
                   help="also draw the throughput of each worker (a stacked bar per server) "
                        "to FILE")
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
    chart = []
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
            mb_s = statistics.median(r["mb_s"] for r in rs)
            if workers > 1:
                split = [mb_s * statistics.median(f[w] for f in fracs) for w in range(workers)]
            else:
                split = [mb_s]
            chart.append((method, name, split))
            print("| %s | %s | %.0f | %.3f (%.2fx w1) | %.3f | %s |" % (
                method, name, statistics.median(r["mb_s"] for r in rs), s_gb, s_gb / base,
                statistics.median(r["tunnel_s_gb"] for r in rs), per or "-"))
    if cfg.svg:
        with open(cfg.svg, "w") as f:
            f.write(svg_chart(chart, cfg))
    return 0


def svg_chart(rows, cfg):
    """A horizontal bar per method and server, MB/s relayed, split into
    each worker's share (medians over the runs)."""
    colors = ["#2b6cb0", "#68a0d8", "#2f855a", "#68d391", "#805ad5", "#b794f4", "#d69e2e",
              "#f6e05e"]
    top = max(sum(split) for _, _, split in rows) or 1.0
    left, bar, gap, width = 330, 18, 6, 820
    scale = (width - left - 80) / top
    h = 50 + len(rows) * (bar + gap) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="10" y="20" font-size="14">MB/s through ss-server, {cfg.conns} bulk '
           f'connections, split by worker (medians of {cfg.runs} runs)</text>']
    y = 40
    for method, name, split in rows:
        out.append(f'<text x="10" y="{y + bar - 5}">{method}, {name}</text>')
        x = left
        for w, v in enumerate(split):
            wd = max(1, int(v * scale))
            color = colors[w % len(colors)] if not name.startswith("libev") else "#c05621"
            out.append(f'<rect x="{x}" y="{y}" width="{wd}" height="{bar}" fill="{color}"/>')
            if len(split) > 1:
                out.append(f'<text x="{x + 4}" y="{y + bar - 5}" fill="white">w{w} '
                           f'{v:.0f}</text>')
            x += wd
        out.append(f'<text x="{x + 4}" y="{y + bar - 5}">{sum(split):.0f}</text>')
        y += bar + gap
    out.append(f'<text x="10" y="{y + 20}">ss-tunnel (one worker) in front; CPUs: '
               f'{os.cpu_count()}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except bench.BenchError as e:
        print(f"workers.py: {e}", file=sys.stderr)
        sys.exit(1)
