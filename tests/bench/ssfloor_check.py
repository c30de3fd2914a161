#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks ssfloor as a relay pair on 127.0.0.1: every byte of one-way transfers (whose last bytes
come with the FIN), of short request/answer connections, and of a client that half-closes right
after its request, arrives, and each end is passed on.

usage: ssfloor_check.py SSFLOOR SSLOAD
"""
import json
import socket
import subprocess
import sys
import threading
import time

LOOPBACK = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_port(port, deadline=5.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def sink(ssload, args):
    p = subprocess.Popen([ssload, "sink", "--listen", f"{LOOPBACK}:0", "--timeout", "30"] + args,
                         stdout=subprocess.PIPE, text=True)
    return p, json.loads(p.stdout.readline())["port"]


def relay_pair(ssfloor, target_port):
    server_port, tunnel_port = free_port(), free_port()
    server = subprocess.Popen([ssfloor, "--listen", f"{LOOPBACK}:{server_port}"])
    wait_port(server_port)
    tunnel = subprocess.Popen([ssfloor, "--listen", f"{LOOPBACK}:{tunnel_port}", "--connect",
                               f"{LOOPBACK}:{server_port}", "--target",
                               f"{LOOPBACK}:{target_port}"])
    wait_port(tunnel_port)
    return [server, tunnel], tunnel_port


def client(ssload, args):
    res = subprocess.run([ssload] + args + ["--timeout", "10"], stdout=subprocess.PIPE,
                         text=True, timeout=30)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if res.returncode != 0 or not out.get("ok"):
        raise SystemExit(f"ssload {' '.join(args)}: {out}")
    return out


def summary(p):
    out, _ = p.communicate(timeout=30)
    for line in out.splitlines():
        if '"summary"' in line:
            return json.loads(line)
    raise SystemExit("the sink printed no summary")


def read_to_end(sock):
    got = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return got
        got += chunk


def echo_until_eof(listener, n):
    """A target that reads each connection to its end, then sends it all back and closes."""
    for _ in range(n):
        conn, _ = listener.accept()
        with conn:
            conn.sendall(read_to_end(conn))


def half_close(port, size):
    """A request, then shutdown(SHUT_WR) at once: the echo comes back whole, then EOF."""
    data = bytes(range(256)) * (size // 256)
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = read_to_end(s)
    if got != data:
        raise SystemExit(f"half-close: {len(got)} bytes came back of {len(data)}, or altered")


def main():
    ssfloor, ssload = sys.argv[1], sys.argv[2]
    # One-way: the last bytes and the FIN reach the relays together.
    sk, port = sink(ssload, ["--quit-after", "3"])
    procs, tport = relay_pair(ssfloor, port)
    try:
        for size in ("1000", "3000", "32M"):
            client(ssload, ["send", "--connect", f"{LOOPBACK}:{tport}", "--bytes", size])
        s = summary(sk)
        want = 1000 + 3000 + 32 * 1024 * 1024
        if s["rx"] != want or s["bad_conns"] or s["failed_conns"]:
            raise SystemExit(f"upload: the sink saw {s}, wanted {want} bytes in 3 connections")
    finally:
        for p in procs:
            p.kill()
    # Short request/answer connections.
    sk, port = sink(ssload, ["--echo", "--quit-after", "200"])
    procs, tport = relay_pair(ssfloor, port)
    try:
        client(ssload, ["rr", "--connect", f"{LOOPBACK}:{tport}", "--count", "200", "--size",
                        "512", "--conns", "8"])
        s = summary(sk)
        if s["conns"] != 200 or s["bad_conns"] or s["failed_conns"]:
            raise SystemExit(f"rr: the sink saw {s}")
    finally:
        for p in procs:
            p.kill()
    # Clients that half-close right after their request: the target answers only at that end.
    sizes = (512, 4096, 70000)
    with socket.socket() as listener:
        listener.bind((LOOPBACK, 0))
        listener.listen(8)
        t = threading.Thread(target=echo_until_eof, args=(listener, len(sizes)), daemon=True)
        t.start()
        procs, tport = relay_pair(ssfloor, listener.getsockname()[1])
        try:
            for size in sizes:
                half_close(tport, size)
        finally:
            for p in procs:
                p.kill()
    print("ssfloor: ok")


if __name__ == "__main__":
    main()
