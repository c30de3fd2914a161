#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Idle ports: our ss-manager serving N ports in one process against
shadowsocks-libev's ss-manager starting one ss-server per port. Reports the
resident memory (the manager and, for libev, its ss-server children summed),
the CPU time all of them spend over an idle interval, and how long an add
takes to be answered (its state file written included). Loopback only.

    /usr/bin/python3 tests/bench/manager_idle.py --ours build --ports 1000 --idle 60
"""

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import sslib  # noqa: E402


def free_udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid, work=None):
    """pid and its descendants, and the daemons whose pid files are in
    work (libev's ss-manager starts each ss-server with -f there)."""
    out = [pid]
    for c, _ in sslib.children(pid):
        out += tree(c)
    for f in os.listdir(work) if work else ():
        if f.endswith(".pid"):
            try:
                with open(os.path.join(work, f)) as fh:
                    out.append(int(fh.read().strip()))
            except (OSError, ValueError):
                pass
    return sorted(set(out))


def _each(fn, pids):
    total = 0
    for p in pids:
        try:
            total += fn(p) or 0
        except OSError:
            pass
    return total


def rss_kib(pids):
    return _each(sslib.rss_kib, pids)


def cpu(pids):
    return _each(sslib.cpu_seconds, pids)


def ask(sock, addr, text, timeout=10):
    sock.settimeout(timeout)
    sock.sendto(text.encode(), addr)
    return sock.recv(1 << 16).decode()


def run(name, argv, ports, idle, method):
    control = ("127.0.0.1", free_udp())
    with tempfile.TemporaryDirectory() as work:
        argv = argv + ["--manager-address", "%s:%d" % control, "-s", "127.0.0.1",
                       "-m", method, "-D", work]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for _ in range(100):
                try:
                    if ask(s, control, "ping", 0.2).startswith("stat"):
                        break
                except OSError:
                    time.sleep(0.1)
            added = 0
            base = 20000
            took = []
            for i in range(ports):
                t0 = time.monotonic()
                reply = ask(s, control, 'add: {"server_port": %d, "password": "pw%d"}'
                            % (base + i, i))
                took.append(time.monotonic() - t0)
                added += reply == "ok"
            took.sort()
            time.sleep(3)  # children start, lazy pages settle
            pids = tree(p.pid, work)
            rss = rss_kib(pids)
            c0 = cpu(pids)
            time.sleep(idle)
            pids = tree(p.pid, work)
            c1 = cpu(pids)
            return {"impl": name, "ports": added, "processes": len(pids), "rss_mib": rss / 1024,
                    "rss_kib_per_port": rss / max(added, 1),
                    "cpu_s": c1 - c0, "idle_s": idle,
                    "add_ms_median": 1000 * took[len(took) // 2] if took else 0}
        finally:
            for pid in reversed(tree(p.pid, work)):
                try:
                    os.kill(pid, 15)
                except ProcessLookupError:
                    pass
            p.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True, help="build directory holding ss-manager")
    ap.add_argument("--libev", default="/usr/bin", help="shadowsocks-libev's directory")
    ap.add_argument("--ports", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=60)
    ap.add_argument("--method", default="aes-256-gcm")
    ap.add_argument("--impls", default="ours,libev")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    results = []
    for impl in a.impls.split(","):
        if impl == "ours":
            argv = [os.path.join(a.ours, "ss-manager")]
        else:
            argv = [os.path.join(a.libev, "ss-manager"), "--executable",
                    os.path.join(a.libev, "ss-server")]
        r = run(impl, argv, a.ports, a.idle, a.method)
        results.append(r)
        print(json.dumps(r), flush=True)
    print("\n| impl | ports | processes | RSS (MiB) | RSS per port (KiB) | CPU over %.0f s idle "
          "| add (median) |" % a.idle)
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print("| %s | %d | %d | %.1f | %.0f | %.2f s | %.1f ms |" % (
            r["impl"], r["ports"], r["processes"], r["rss_mib"], r["rss_kib_per_port"],
            r["cpu_s"], r["add_ms_median"]))


if __name__ == "__main__":
    main()
