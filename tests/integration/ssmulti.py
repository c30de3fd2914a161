# SPDX-License-Identifier: MIT
"""Helpers for the tests of clients with several servers (test_servers.py,
test_server_plugins.py, tests/interop) and of ss-server --print-url
(test_print_url.py).

Each ss-server started here sends to its targets from an address of its
own on loopback (-b 127.0.0.N), so the echo servers' records tell which
server carried a connection or a datagram."""

import base64
import json
import os
import signal
import threading
import time
import urllib.parse

import sslib
import ssudp
from sslib import T

# Backoff (src/relay/health.h): a down server is tried again by a real
# connection at most 30 s * 1.25 after its last failed try.
BACKOFF_LONGEST = 37.5
RESOLVE_MIN = 5.0  # src/relay/servers.h: the shortest time between lookups


def out_ip(i):
    return "127.0.0.%d" % (10 + i)


class Srv:
    """One ss-server on 127.0.0.1 (or host) at a fixed port, sending from
    out_ip(index); it can be stopped and started again on the same port."""

    def __init__(self, ss, index, method="aes-256-gcm", password=None, port=None, udp=False,
                 host=sslib.LOOPBACK4, out=None, extra=()):
        self.ss, self.index, self.method, self.host = ss, index, method, host
        self.extra = list(extra)
        self.password = password or (sslib.random_psk(method) if sslib.is_sip022(method)
                                     else sslib.random_password())
        self.port = port or ssudp.free_udp_port(host)
        self.udp = udp
        self.out = out or out_ip(index)
        self.program = None

    def start(self):
        args = ["-s", self.host, "-p", self.port, "-m", self.method, "-k", self.password,
                "-b", self.out, "-v"] + (["-u"] if self.udp else []) + self.extra
        self.program = self.ss.procs.start(self.ss.exe("ss-server"), args,
                                           name="ss-server-%d" % self.index)
        if self.udp:
            ssudp.wait_udp_bound(self.program, self.port)
        self.program.wait_listening(self.host, self.port)
        return self

    def stop(self):
        self.program.kill()

    def entry(self, **kw):
        e = {"server": self.host, "server_port": self.port, "method": self.method,
             "password": self.password, "remarks": "s%d" % self.index}
        e.update(kw)
        return e

    def url(self, tag=None):
        return ss_url(self.method, self.password, self.host, self.port, tag)


def ss_url(method, password, host, port, tag=None):
    """A SIP002 URL, written here independently of the programs' writer."""
    if method.startswith("2022-"):
        info = urllib.parse.quote(method, safe="") + ":" + urllib.parse.quote(password, safe="")
    else:
        info = base64.urlsafe_b64encode(("%s:%s" % (method, password)).encode())
        info = info.decode().rstrip("=")
    h = "[%s]" % host if ":" in host else host
    return "ss://%s@%s:%d/" % (info, h, port) + ("#" + urllib.parse.quote(tag) if tag else "")


_configs = [0]


def start_client(ss, tmp_path, conf, prog="ss-local", target=None, extra=(), env=None):
    """ss-local or ss-tunnel (to target) with the JSON configuration conf
    (a dict), -v, listening on 127.0.0.1."""
    _configs[0] += 1
    path = tmp_path / ("client-%d.json" % _configs[0])
    path.write_text(json.dumps(conf))
    tunnel = ["-L", "%s:%d" % tuple(target)] if prog == "ss-tunnel" else []

    def args(port):
        return ["-c", str(path), "-l", port, "-b", sslib.LOOPBACK4, "-v"] + tunnel + list(extra)
    program, port = ss.procs.start_listening(ss.exe(prog), args, env=env)
    return sslib.Client(program, sslib.LOOPBACK4, port)


def peers(echo):
    """How many connections (or datagrams) came from each source address."""
    with echo.lock:
        recs = list(echo.records)
    out = {}
    for r in recs:
        out[r["peer"][0]] = out.get(r["peer"][0], 0) + 1
    return out


def through(proxy, echo, n=300, timeout=None):
    """One connection through ss-local to echo, checked; returns which
    server's address the echo server saw it come from."""
    with echo.lock:
        before = len(echo.records)
    s = sslib.socks5_connect(proxy, *echo.addr, timeout=T(10) if timeout is None else timeout)
    try:
        sslib.small_exchange(s, n)
    finally:
        s.close()
    # The echo server accepted it before it echoed a byte.
    with echo.lock:
        return echo.records[before]["peer"][0]


def plugin_of(program, var, item):
    """The pid of the program's live plugin child whose environment variable
    var (SS_PLUGIN_OPTIONS, SS_REMOTE_PORT, ...), split at ";", holds item."""
    want = item.encode()

    def find():
        for pid, st in sslib.children(program.pid):
            if st == "Z":
                continue
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            for e in env:
                if e.startswith(var.encode() + b"=") and want in e.split(b"=", 1)[1].split(b";"):
                    return pid
        return None
    pid = sslib.wait_for(find, T(10))
    assert pid, "%s has no plugin with %s holding %s: %r" % (
        program.name, var, item, sslib.children(program.pid))
    return pid


def echo_traffic(local, echo, chaos, apps=8, size=1 << 16):
    """apps applications open connection after connection through ss-local
    (local) to echo and exchange size random bytes on each while
    chaos(stats, lock) runs; then they stop. Every SOCKS5 request must
    succeed and no byte that comes back may be wrong. Returns the counts:
    done (whole), cut (ended early), under lock while chaos runs."""
    stop = threading.Event()
    lock = threading.Lock()
    stats = {"done": 0, "cut": 0, "failed": [], "wrong": []}

    def app():
        while not stop.is_set():
            data = os.urandom(size)
            try:
                s = sslib.socks5_connect(local.addr, *echo.addr, timeout=T(15))
            except (OSError, AssertionError) as e:
                with lock:
                    stats["failed"].append(repr(e))
                continue
            got = bytearray()
            try:
                s.settimeout(T(15))
                sent = 0
                while len(got) < size:
                    if sent < size:
                        s.sendall(data[sent:sent + 8192])
                        sent += 8192
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            except OSError:
                pass
            finally:
                s.close()
            with lock:
                if bytes(got) != data[:len(got)]:
                    stats["wrong"].append(len(got))
                stats["done" if len(got) == size else "cut"] += 1

    threads = [threading.Thread(target=app) for _ in range(apps)]
    for t in threads:
        t.start()
    try:
        chaos(stats, lock)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not stats["failed"], stats["failed"][:5]
    assert not stats["wrong"], "wrong bytes on %d connections" % len(stats["wrong"])
    return stats


def kill_in_turn(local, echo, srvs, rounds=6, apps=8, size=1 << 16, min_done=100):
    """echo_traffic while in turn one of ss-local's plugins is killed
    (SIGKILL; ss-local starts it again) and one of srvs (Srv) is killed,
    its plugin with it, and started again. At least min_done connections
    complete (apps of them after the last kill), few end early, and
    ss-local logs each plugin it lost. Those that end early are the ones a
    killed plugin or server carried, and the few a killed server is given
    after it went: behind a plugin a server down only closes connections
    without an answer, and it takes SS_HEALTH_STRIKES of those
    (src/relay/health.h), or its try after the backoff, before ss-local
    leaves it out. Returns the counts."""
    mark = {}

    def chaos(stats, lock):
        for r in range(rounds):
            time.sleep(1.5)
            victim = srvs[r % len(srvs)]
            if r % 2 == 0:
                pid = plugin_of(local.program, "SS_REMOTE_PORT", str(victim.port))
                os.kill(pid, signal.SIGKILL)
            else:
                plugin = plugin_of(victim.program, "SS_REMOTE_PORT", str(victim.port))
                victim.stop()
                assert sslib.wait_for(lambda: not sslib.alive(plugin), T(5)), \
                    "the plugin of %s outlived it" % victim.program.name
                time.sleep(1.0)
                victim.start()
        with lock:
            mark["before_last"] = stats["done"]
        time.sleep(1.5)

    stats = echo_traffic(local, echo, chaos, apps, size)
    before_last = mark["before_last"]
    assert stats["done"] >= min_done, stats
    assert stats["done"] - before_last >= apps, "%d done after the last kill: %s" % (
        stats["done"] - before_last, stats)
    assert stats["cut"] <= apps * rounds, stats
    downs = local.program.output().count("its plugin is down")
    assert downs >= (rounds + 1) // 2, "%d plugins killed, %d logged down: %s" % (
        (rounds + 1) // 2, downs, local.program.output()[-2000:])
    return stats
