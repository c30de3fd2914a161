"""Helpers for the tests of clients with several servers (test_servers.py)
and of ss-server --print-url (test_print_url.py).

Each ss-server started here sends to its targets from an address of its
own on loopback (-b 127.0.0.N), so the echo servers' records tell which
server carried a connection or a datagram."""

import base64
import json
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
