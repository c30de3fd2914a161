# SPDX-License-Identifier: MIT
"""Zero heap allocations in steady state, in all three programs.

Each program runs with tests/alloc/alloc_count.c preloaded, which counts
malloc/calloc/realloc/memalign calls and reports the count on SIGUSR2. Two
rounds of warm-up traffic set up every slot and cipher state the measured
round will reuse (the UDP associations expire in between, so their slots go
back and come out again), then the count is taken, 200 TCP connections and
2,000 datagrams go through, and the count is taken again: it must not move.

Traffic per round: TCP through ss-tunnel (ssload rr) and through ss-local to
the name "target.test" (over SOCKS5, SOCKS4a and HTTP CONNECT in turn, and
forwarded HTTP requests), which ss-server
resolves itself with c-ares from a DNS responder on loopback (every lookup
goes through c-ares); UDP through ss-tunnel (ssload udp-send) and through
ss-local's SOCKS5 UDP ASSOCIATE. One
case runs all three with a SIP003u plugin (tests/integration/xorplugin.py)
carrying TCP and UDP; another gives ss-local and ss-tunnel two servers of
different methods, one of them behind such a plugin of its own; a third has
ss-local take SOCKS5 logins (RFC 1929) and HTTP Basic proxy logins, failed
ones included."""

import base64
import http.server
import os
import signal
import subprocess
import threading
import time
import urllib.parse

import pytest

import ssfixtures
import sslib
import ssudp
from sslib import T
from ssmulti import ss_url

METHODS = ("aes-128-gcm", "aes-192-gcm", "aes-256-gcm", "chacha20-ietf-poly1305",
           "xchacha20-ietf-poly1305", "2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm",
           "2022-blake3-chacha20-poly1305", "none")
UDP_TIMEOUT = 1  # seconds: associations of one round are gone before the next
TCP_CONNS, DATAGRAMS = 200, 2000


class Counted:
    """A program's allocation count, read by signalling it."""

    def __init__(self, program, report):
        self.program, self.report = program, report

    def sample(self):
        before = self._lines()
        os.kill(self.program.pid, signal.SIGUSR2)
        deadline = time.monotonic() + T(5)
        while len(self._lines()) == len(before):
            if time.monotonic() > deadline:
                raise AssertionError("%s did not report its count" % self.program.name)
            time.sleep(0.01)
        return int(self._lines()[-1])

    def _lines(self):
        try:
            with open(self.report) as f:
                return f.read().split()
        except FileNotFoundError:
            return []


def counted_env(shim, tmp_path, name):
    report = str(tmp_path / ("%s.count" % name))
    # Backtraces of allocations after the first sample go to the program's
    # stderr, which a failure shows.
    return {"LD_PRELOAD": shim, "SS_ALLOC_REPORT": report, "SS_ALLOC_TRACE": "1"}, report


def run_ssload(ssload, args):
    res = subprocess.run([ssload] + args, capture_output=True, timeout=T(60))
    assert res.returncode == 0, "ssload %s failed: %s" % (args[0], res.stderr.decode()[-500:])


def http_forward(local, host, port):
    """Two requests kept alive, forwarded by ss-local's HTTP proxy to an
    echo server: what comes back is each head as the origin saw it, and the
    body."""
    with sslib.connect(*local.addr, timeout=T(5)) as s:
        for _ in range(2):
            body = os.urandom(300)
            s.sendall(b"POST http://%s:%d/p HTTP/1.1\r\nProxy-Connection: keep-alive\r\n"
                      b"Content-Length: 300\r\n\r\n%s" % (host.encode(), port, body))
            want = (b"POST /p HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 300\r\n\r\n%s"
                    % (host.encode(), port, body))
            assert sslib.recv_exact(s, len(want)) == want


_web = []


def web_port():
    """A loopback HTTP origin (the integration suite's), started once."""
    if not _web:
        srv = http.server.ThreadingHTTPServer((sslib.LOOPBACK4, 0), ssfixtures._BlobHandler)
        srv.daemon_threads = True
        srv.blob = b"b" * 1000
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        _web.append(srv)
    return _web[0].server_port


def http_switch(local, host):
    """Kept alive, requests for two origins in turn (host and 127.0.0.1,
    the same HTTP server): each switch ends the outbound leg and connects
    anew."""
    port = web_port()
    with sslib.connect(*local.addr, timeout=T(5)) as s:
        for h in (host, sslib.LOOPBACK4, host):
            s.sendall(b"GET http://%s:%d/ HTTP/1.1\r\n\r\n" % (h.encode(), port))
            status, head = sslib.http_head(s)
            assert status == 200 and sslib.recv_exact(s, 1000) == b"b" * 1000, head


def traffic(ssload, tunnel, local, sink_port, uecho, conns, datagrams, parallel):
    """One round: conns TCP connections and datagrams datagrams, half via
    ss-tunnel (parallel connections at a time), half via ss-local."""
    run_ssload(ssload, ["rr", "--connect", "%s:%d" % tunnel.addr, "--count", str(conns // 2),
                        "--size", "512", "--conns", str(parallel), "--timeout", "30"])
    for _ in range(conns // 2 // parallel):
        opens = (sslib.socks5_connect, sslib.socks4_connect, sslib.http_connect)
        socks = [opens[i % 3](local.addr, "target.test", sink_port, timeout=T(5))
                 for i in range(parallel)]
        for s in socks:
            sslib.small_exchange(s, 300)
            s.close()
        http_forward(local, "target.test", sink_port)
        http_switch(local, "target.test")
    run_ssload(ssload, ["udp-send", "--connect", "%s:%d" % tunnel.addr, "--count",
                        str(datagrams // 2), "--size", "1000", "--window", "4", "--clients", "4",
                        "--timeout", "30"])
    app = ssudp.App("socks", local, uecho.addr)
    for i in range(datagrams // 2):
        ssudp.check_exchange(app, b"%06d" % i + b"x" * 500)
    app.close()


# SIP003u: TCP and UDP through tests/integration/xorplugin.py in all three.
XOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                   "xorplugin.py")
CASES = [(m, False) for m in METHODS] + [("chacha20-ietf-poly1305", True)]


def plugin_args(plugin, opts):
    return ["--plugin", XOR, "--plugin-opts", opts, "--plugin-mode", "tcp_and_udp"] \
        if plugin else []


@pytest.mark.parametrize("method,plugin", CASES,
                         ids=[m + ("-plugin" if p else "") for m, p in CASES])
def test_no_allocations_in_steady_state(request, ss, tmp_path, shim, ssload, echo, method,
                                        plugin):
    password = "" if method == "none" else None
    progs = {}
    dns = sslib.DnsResponder()
    request.addfinalizer(dns.close)
    env, rep = counted_env(shim, tmp_path, "ss-server")
    server = ss.server(method=method, password=password, env=env,
                       extra=["-u", "--udp-timeout", str(UDP_TIMEOUT),
                              "-d", "%s:%d" % (sslib.LOOPBACK4, dns.port)]
                       + plugin_args(plugin, "server"))
    progs["ss-server"] = Counted(server.program, rep)
    with ssudp.UdpEcho() as uecho:
        env, rep = counted_env(shim, tmp_path, "ss-tunnel")
        tunnel = ss.tunnel(server, echo.addr, password=password, env=env,
                           extra=["-u", "--udp-timeout", str(UDP_TIMEOUT)]
                           + plugin_args(plugin, ""))
        progs["ss-tunnel"] = Counted(tunnel.program, rep)
        # ss-tunnel carries UDP to the echo on the same port number.
        uecho_tunnel = ssudp.UdpEcho(port=echo.port)
        env, rep = counted_env(shim, tmp_path, "ss-local")
        local = ss.local(server, password=password, env=env,
                         extra=["-u", "--udp-timeout", str(UDP_TIMEOUT)]
                         + plugin_args(plugin, ""))
        progs["ss-local"] = Counted(local.program, rep)
        try:
            measure(progs, ssload, tunnel, local, echo, uecho, method)
        finally:
            uecho_tunnel.close()
    assert dns.queries >= TCP_CONNS // 2, "ss-server did not ask the DNS responder (%d)" % (
        dns.queries)


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm"))
def test_no_allocations_with_two_workers(request, ss, tmp_path, shim, ssload, echo, method):
    """ss-server and ss-tunnel with --workers 2 (ss-local relays UDP with
    one): each worker has pools of its own and none allocates per
    connection or datagram; both workers of ss-server carry connections
    (the [wN] lines at -v)."""
    dns = sslib.DnsResponder()
    request.addfinalizer(dns.close)
    udp = ["-u", "--udp-timeout", str(UDP_TIMEOUT), "--workers", "2"]
    progs = {}
    env, rep = counted_env(shim, tmp_path, "ss-server")
    server = ss.server(method=method, env=env,
                       extra=udp + ["-v", "-d", "%s:%d" % (sslib.LOOPBACK4, dns.port)])
    progs["ss-server"] = Counted(server.program, rep)
    with ssudp.UdpEcho() as uecho:
        env, rep = counted_env(shim, tmp_path, "ss-tunnel")
        tunnel = ss.tunnel(server, echo.addr, env=env, extra=udp)
        progs["ss-tunnel"] = Counted(tunnel.program, rep)
        uecho_tunnel = ssudp.UdpEcho(port=echo.port)
        env, rep = counted_env(shim, tmp_path, "ss-local")
        local = ss.local(server, env=env, extra=udp[:-2])
        progs["ss-local"] = Counted(local.program, rep)
        try:
            measure(progs, ssload, tunnel, local, echo, uecho, method + ", two workers")
        finally:
            uecho_tunnel.close()
    out = server.program.output()
    for w in ("[w0] server ", "[w1] server "):
        assert w in out, "no connection on %s" % w


def measure(progs, ssload, tunnel, local, echo, uecho, what):
    """Two rounds of warm-up, then a measured round that must not allocate."""
    # More connections at a time in the warm-up than measured: the measured
    # round must not reach a slot never used before.
    for _ in range(2):
        traffic(ssload, tunnel, local, echo.port, uecho, TCP_CONNS, 500, 16)
        time.sleep(UDP_TIMEOUT + 1.5)
    before = {name: c.sample() for name, c in progs.items()}
    traffic(ssload, tunnel, local, echo.port, uecho, TCP_CONNS, DATAGRAMS, 4)
    time.sleep(0.5)
    after = {name: c.sample() for name, c in progs.items()}
    grew = {name: after[name] - before[name] for name in progs if after[name] != before[name]}
    assert not grew, "%s: heap allocations during %d connections and %d datagrams: %s" % (
        what, TCP_CONNS, DATAGRAMS, grew)
    # The shim counts: the programs allocated at start-up.
    assert all(before[name] > 0 for name in progs)


def test_no_allocations_with_several_servers(request, ss, tmp_path, shim, ssload, echo):
    """ss-local and ss-tunnel with two servers: one given with -s
    (aes-256-gcm), one as an ss:// URL (2022-blake3-aes-128-gcm) whose
    plugin= is xorplugin.py, found in PATH as a URL's plugin must be,
    carrying TCP and UDP (the
    top-level --plugin-mode): connections and associations spread over
    both, and nothing is allocated per connection or datagram."""
    dns = sslib.DnsResponder()
    request.addfinalizer(dns.close)
    udp = ["-u", "--udp-timeout", str(UDP_TIMEOUT)]
    resolver = ["-d", "%s:%d" % (sslib.LOOPBACK4, dns.port)]
    plain = ss.server(method="aes-256-gcm", extra=udp + resolver)
    behind = ss.server(method="2022-blake3-aes-128-gcm",
                       extra=udp + resolver + ["--plugin", XOR, "--plugin-opts", "server;key=33",
                                               "--plugin-mode", "tcp_and_udp"])
    # A URL names its plugin as a program found in PATH (docs/security.md,
    # "Plugins from links"): xorplugin.py goes there under a plain name.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(XOR, bindir / "xorplugin")
    path = {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", "/usr/bin:/bin"))}
    url = ss_url(behind.method, behind.password, behind.host, behind.port, "behind")
    url = url.replace("/#", "/?plugin=%s#" % urllib.parse.quote("xorplugin;key=33", safe=""))
    servers = ["--server-url", url, "--plugin-mode", "tcp_and_udp"]
    progs = {}
    with ssudp.UdpEcho() as uecho:
        env, rep = counted_env(shim, tmp_path, "ss-tunnel")
        tunnel = ss.tunnel(plain, echo.addr, env=dict(env, **path), extra=udp + servers + ["-v"])
        progs["ss-tunnel"] = Counted(tunnel.program, rep)
        uecho_tunnel = ssudp.UdpEcho(port=echo.port)
        env, rep = counted_env(shim, tmp_path, "ss-local")
        local = ss.local(plain, env=dict(env, **path), extra=udp + servers + ["-v"])
        progs["ss-local"] = Counted(local.program, rep)
        try:
            measure(progs, ssload, tunnel, local, echo, uecho, "several servers")
        finally:
            uecho_tunnel.close()
    # Both servers carried TCP and UDP.
    for c in (tunnel, local):
        out = c.program.output()
        for tag in ('server 1 127.0.0.1:%d' % plain.port,
                    'server 2 "behind" 127.0.0.1:%d' % behind.port):
            assert ": " + tag in out, "%s: no connection through %s" % (c.program.name, tag)
            assert "new association, " + tag in out, \
                "%s: no association through %s" % (c.program.name, tag)


def socks_login_round(local, echo, uecho, conns, parallel):
    """conns CONNECTs after a login (parallel at a time), a quarter as many
    failed logins, and one UDP association after a login."""
    login = (b"alloc-user", b"alloc-pass")
    for _ in range(conns // parallel):
        socks = []
        for _ in range(parallel):
            s = sslib.connect(*local.addr)
            assert sslib.socks5_greet(s, methods=(2,)) == 2
            assert sslib.socks5_login(s, *login) == 0
            s.sendall(sslib.socks5_request_bytes(sslib.CMD_CONNECT, *echo.addr))
            assert sslib.socks5_read_reply(s)[0] == 0
            socks.append(s)
        for s in socks:
            sslib.small_exchange(s, 300)
            s.close()
    for _ in range(conns // 4):
        with sslib.connect(*local.addr) as s:
            assert sslib.socks5_greet(s, methods=(2,)) == 2
            assert sslib.socks5_login(s, login[0], b"wrong") != 0
            sslib.wait_closed(s, T(5))
    # HTTP CONNECT with the same users, and refused.
    basic = b"Proxy-Authorization: Basic %s\r\n" % base64.b64encode(b":".join(login))
    for _ in range(conns // 4):
        with sslib.http_connect(local.addr, *echo.addr, headers=basic) as s:
            sslib.small_exchange(s, 300)
        with sslib.connect(*local.addr) as s:
            s.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (echo.addr[0].encode(), echo.addr[1]))
            assert sslib.http_head(s)[0] == 407
            sslib.wait_closed(s, T(5))
    with ssudp.Association(local.addr, login=login) as a:
        for i in range(20):
            assert a.exchange(uecho.addr, b"%04d" % i)[3] == b"%04d" % i


def test_no_allocations_with_socks5_logins(ss, tmp_path, shim, echo):
    """ss-local with SOCKS5 users: logins, failed logins (and their
    refusal log lines) and an association after a login allocate nothing."""
    udp = ["-u", "--udp-timeout", str(UDP_TIMEOUT)]
    server = ss.server(extra=udp)
    env, rep = counted_env(shim, tmp_path, "ss-local")
    local = ss.local(server, env=env, extra=udp + ["--socks-user", "alloc-user",
                                                   "--socks-pass", "alloc-pass"])
    counted = Counted(local.program, rep)
    with ssudp.UdpEcho() as uecho:
        for _ in range(2):
            socks_login_round(local, echo, uecho, TCP_CONNS // 2, 16)
            time.sleep(UDP_TIMEOUT + 1.5)
        before = counted.sample()
        socks_login_round(local, echo, uecho, TCP_CONNS // 2, 4)
        time.sleep(0.5)
        after = counted.sample()
    assert before > 0
    assert after == before, "heap allocations during SOCKS5 logins: %d" % (after - before)
    assert "refused: SOCKS5 login failed" in local.program.output()


def test_no_allocations_with_aead_users(request, ss, tmp_path, shim, ssload, echo):
    """ss-server with SIP004 users of three methods: telling each
    connection's and datagram's user allocates nothing (ss-tunnel is one
    user, ss-local another)."""
    import json
    dns = sslib.DnsResponder()
    request.addfinalizer(dns.close)
    users = [("alice", "aes-256-gcm", "pw-alice"), ("bob", "aes-128-gcm", "pw-bob"),
             ("carol", "chacha20-ietf-poly1305", "pw-carol")]
    conf = tmp_path / "users.json"
    conf.write_text(json.dumps({"users": [{"name": n, "method": m, "password": p}
                                          for n, m, p in users]}))
    udp = ["-u", "--udp-timeout", str(UDP_TIMEOUT)]
    progs = {}
    env, rep = counted_env(shim, tmp_path, "ss-server")
    args = lambda port: (["-s", sslib.LOOPBACK4, "-p", port, "-m", "aes-256-gcm", "-c",
                          str(conf), "-d", "%s:%d" % (sslib.LOOPBACK4, dns.port)] + udp)
    p, port = ss.procs.start_listening(ss.exe("ss-server"), args, env=env)
    server = sslib.Server(p, sslib.LOOPBACK4, port, "aes-256-gcm")
    progs["ss-server"] = Counted(p, rep)
    with ssudp.UdpEcho() as uecho:
        tunnel = ss.tunnel(server, echo.addr, method=users[2][1], password=users[2][2],
                           extra=udp)
        uecho_tunnel = ssudp.UdpEcho(port=echo.port)
        local = ss.local(server, method=users[1][1], password=users[1][2], extra=udp)
        try:
            measure(progs, ssload, tunnel, local, echo, uecho, "SIP004 users")
        finally:
            uecho_tunnel.close()
