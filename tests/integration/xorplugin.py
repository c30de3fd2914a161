#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A SIP003/SIP003u plugin for the tests: forwards TCP and UDP between
SS_LOCAL_HOST:SS_LOCAL_PORT and SS_REMOTE_HOST:SS_REMOTE_PORT, XORing every
byte with a key on the way, so that a path that goes around it fails.

A client's plugin (no "server" option) listens on the local address and
sends to the remote one; a server's listens on the remote address and sends
to the local one. Both XOR, so a pair gives the bytes back as they were.

SS_PLUGIN_OPTIONS, ';'-separated:
  server          run as a server's plugin
  key=N           XOR key, 0-255 (default 90)
  record=PATH     write what it was started with (JSON) to PATH, then go on
  exit=N          print a line and exit at once with status N
  nolisten        print a line and never open a port
  ignore_term     ignore SIGTERM
  child           start a process that sleeps (in the plugin's process group)
  once=PATH       run only if PATH does not exist (it is made); else exit 4
  delay=S         wait S seconds before opening its ports
  connect=HOST    a client's plugin sends to HOST instead of SS_REMOTE_HOST
                  (for a remote name the tests give no resolver for)
Standard library only.
"""

import json
import os
import signal
import socket
import sys
import threading
import time


def options():
    opts = {}
    for item in os.environ.get("SS_PLUGIN_OPTIONS", "").split(";"):
        if item:
            k, _, v = item.partition("=")
            opts[k.strip()] = v.strip()
    return opts


def fds():
    """Each open descriptor and what it is (its /proc/self/fd link)."""
    out = {}
    for f in os.listdir("/proc/self/fd"):
        try:
            out[f] = os.readlink("/proc/self/fd/" + f)
        except OSError:  # the directory listing's own
            pass
    return out


def say(text):
    sys.stdout.write("xorplugin: %s\n" % text)
    sys.stdout.flush()


def addrinfo(host, port, kind, passive=False):
    flags = socket.AI_PASSIVE if passive else 0
    return socket.getaddrinfo(host, port, 0, kind, 0, flags)[0]


def pipe(src, dst, table):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data.translate(table))
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve_tcp(listener, target, table):
    while True:
        conn, _ = listener.accept()
        try:
            out = socket.create_connection(target[:2], timeout=10)
            out.settimeout(None)
        except OSError as e:
            say("cannot connect to %s: %s" % (target, e))
            conn.close()
            continue
        # Each connection's own list, passed in: a closure would see the
        # variable, rebound by the next accept, and close another
        # connection's sockets mid-transfer.
        ends = []

        def run(a, b, ends):
            pipe(a, b, table)
            ends.append(1)
            if len(ends) == 2:
                a.close()
                b.close()
        threading.Thread(target=run, args=(conn, out, ends), daemon=True).start()
        threading.Thread(target=run, args=(out, conn, ends), daemon=True).start()


def serve_udp(sock, target, table):
    peers = {}

    def back(peer, up):
        while True:
            try:
                data = up.recv(65536)
            except OSError:
                return
            sock.sendto(data.translate(table), peer)

    while True:
        data, peer = sock.recvfrom(65536)
        up = peers.get(peer)
        if up is None:
            info = addrinfo(target[0], target[1], socket.SOCK_DGRAM)
            up = socket.socket(info[0], socket.SOCK_DGRAM)
            up.connect(info[4])
            peers[peer] = up
            threading.Thread(target=back, args=(peer, up), daemon=True).start()
        try:
            up.send(data.translate(table))
        except OSError:
            pass


def main():
    opts = options()
    env = os.environ
    remote = (env["SS_REMOTE_HOST"], int(env["SS_REMOTE_PORT"]))
    local = (env["SS_LOCAL_HOST"], int(env["SS_LOCAL_PORT"]))
    server = "server" in opts
    if "connect" in opts and not server:
        remote = (opts["connect"], remote[1])
    listen, target = (remote, local) if server else (local, remote)
    key = int(opts.get("key", "90"))
    table = bytes(i ^ key for i in range(256))

    if "record" in opts:
        rec = {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0),
               "sid": os.getsid(0), "argv": sys.argv, "uid": os.getuid(),
               "env": {k: v for k, v in env.items()
                       if k.startswith("SS_") or k == "NOTIFY_SOCKET"},
               "fds": fds(),
               "sigterm": str(signal.getsignal(signal.SIGTERM)),
               "sigpipe": str(signal.getsignal(signal.SIGPIPE))}
        with open(opts["record"] + ".tmp", "w") as f:
            json.dump(rec, f)
        os.rename(opts["record"] + ".tmp", opts["record"])
    if "ignore_term" in opts:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "child" in opts:
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/sleep", ["sleep", "600"])
        say("started a process of its own: %d" % pid)
    if "once" in opts:
        if os.path.exists(opts["once"]):
            say("ran once already: exiting with status 4")
            sys.exit(4)
        open(opts["once"], "w").close()
    if "exit" in opts:
        say("exiting at once with status %s" % opts["exit"])
        sys.exit(int(opts["exit"]))
    if "nolisten" in opts:
        say("never listening")
        while True:
            time.sleep(60)
    if "delay" in opts:
        time.sleep(float(opts["delay"]))

    info = addrinfo(listen[0], listen[1], socket.SOCK_STREAM, passive=True)
    tcp = socket.socket(info[0], socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if info[0] == socket.AF_INET6:
        tcp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    tcp.bind(info[4])
    tcp.listen(128)
    udp = socket.socket(info[0], socket.SOCK_DGRAM)
    if info[0] == socket.AF_INET6:
        udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        udp.bind(info[4])
    except OSError as e:
        say("no UDP on %s: %s" % (listen, e))
        udp = None
    say("%s: listening on %s:%d, forwarding to %s:%d" % (
        "server" if server else "client", listen[0], listen[1], target[0], target[1]))
    if udp is not None:
        threading.Thread(target=serve_udp, args=(udp, target, table), daemon=True).start()
    serve_tcp(tcp, target, table)


if __name__ == "__main__":
    main()
