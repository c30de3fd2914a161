# SPDX-License-Identifier: MIT
"""--manager-address: ss-server tells its manager what it relayed, as
shadowsocks-libev's does, every 10 s one datagram `stat: {"PORT":BYTES}`
with its NUL, to HOST:PORT over UDP or to a Unix datagram socket at a path.
The figure counts open connections as they go (not only once they close)
and sums every worker.

The interop test runs Debian's ss-manager with our ss-server as its
--executable: add a port, relay through it, ping for the figure ss-manager
gathered from our datagrams, remove it (the process and the port go)."""

import json
import os
import shutil
import socket
import tempfile
import time

import pytest

import sslib
import ssudp
from sslib import T, wait_for

METHOD = "aes-256-gcm"
# ss-server's report interval (SS_REPORT_INTERVAL), and room for a slow run.
INTERVAL = 10
# What a run through an echo carries both ways besides the payload: nothing
# (the figure is plaintext); a margin for a stray byte would hide a bug.
SLACK = 0


def _stat(data):
    """The figures of one stat datagram: {port: bytes}."""
    assert data.endswith(b"\0"), data
    text = data[:-1].decode()
    assert text.startswith("stat: "), text
    return {int(k): v for k, v in json.loads(text[len("stat: "):]).items()}


def _recv_stat(sock, want_port, at_least, timeout):
    """The first stat datagram whose figure for want_port is at least
    at_least (earlier ones may come before the bytes)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            data = sock.recv(4096)
        except socket.timeout:
            break
        last = _stat(data)
        if last.get(want_port, 0) >= at_least:
            return last
    raise AssertionError("no stat datagram with %d bytes on port %d; last: %r" %
                         (at_least, want_port, last))


def _echo_open(client, echo, n, blob):
    """A connection through client to echo that has carried n bytes each
    way, left open."""
    s = sslib.socks5_connect(client.addr, *echo.addr)
    data = blob(n)
    s.sendall(data)
    assert sslib.recv_exact(s, n) == data
    return s


@pytest.mark.parametrize("kind", ("udp", "unix"))
def test_stat_datagrams_count_open_connections(ss, echo, blob, tmp_path, kind):
    """Four connections carry known bytes and stay open; the stat datagram
    says exactly what they carried both ways, summed over two workers."""
    if kind == "udp":
        mgr = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        mgr.bind((sslib.LOOPBACK4, 0))
        where = "%s:%d" % mgr.getsockname()
    else:
        where = str(tmp_path / "manager.sock")
        mgr = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        mgr.bind(where)
    with mgr:
        server = ss.server(method=METHOD, extra=["--manager-address", where, "--workers", "2"])
        client = ss.local(server)
        sizes = (100000, 3000, 70001, 1)
        conns = [_echo_open(client, echo, n, blob) for n in sizes]
        total = 2 * sum(sizes)
        got = _recv_stat(mgr, server.port, total, T(3 * INTERVAL))
        assert got == {server.port: total}, got
        for s in conns:
            s.close()


def test_manager_is_no_target(ss, tmp_path):
    """A client's datagram to the manager's address through the relay never
    arrives (it could forge figures); only the server's own stat datagrams
    do, and the refusal is logged."""
    mgr = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    mgr.bind((sslib.LOOPBACK4, 0))
    with mgr:
        where = "%s:%d" % mgr.getsockname()
        server = ss.server(method=METHOD, extra=["-u", "--manager-address", where])
        client = ss.local(server, extra=["-u"])
        app = ssudp.App("socks", client, mgr.getsockname())
        for _ in range(3):
            app.send(b'stat: {"1":1}\0')
        got = []
        mgr.settimeout(0.5)
        deadline = time.monotonic() + T(INTERVAL + 3)
        while time.monotonic() < deadline:
            try:
                got.append(mgr.recv(4096))
            except socket.timeout:
                continue
            if got[-1].startswith(b"stat: {\"%d\"" % server.port):
                break
        app.close()
    assert all(d.startswith(b"stat: {\"%d\"" % server.port) for d in got), got
    assert got, "no stat datagram at all"
    assert "manager or metrics address" in server.program.output()


def test_bad_manager_address_is_refused(ss):
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-k", "x", "-m", METHOD,
                                 "--manager-address", "no-such-host.invalid:99"])
    assert rc not in (0, None), p.output()


def _ask(ctl, addr, text, timeout=None):
    ctl.settimeout(T(5) if timeout is None else timeout)
    ctl.sendto(text.encode(), addr)
    return ctl.recv(65536)


@pytest.mark.parametrize("kind", ("udp", "unix"))
def test_libev_ss_manager_runs_our_server(ss, procs, echo, blob, tmp_path, kind):
    """Debian's ss-manager adds a port served by our ss-server, gathers its
    stat datagrams (ping) and removes it; its control socket on UDP or a
    Unix path, which it hands to our ss-server as --manager-address."""
    libev_mgr = os.path.join(sslib.LIBEV_BIN_DIR, "ss-manager")
    if not os.access(libev_mgr, os.X_OK):
        pytest.skip("shadowsocks-libev's ss-manager is not installed")
    # ss-manager kills the process of every *.pid file in its directory at
    # start: it gets one of its own.
    workdir = tmp_path / "manager"
    workdir.mkdir()
    port = sslib.free_port()
    if kind == "udp":
        maddr = (sslib.LOOPBACK4, sslib.free_port(kind=socket.SOCK_DGRAM))
        where = "%s:%d" % maddr
        ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    else:
        # A short path: sun_path holds 108 bytes.
        short = tempfile.mkdtemp(prefix="ssm")
        maddr = where = os.path.join(short, "m.sock")
        ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ctl.bind(os.path.join(short, "c.sock"))  # ss-manager answers the sender
    procs.start(libev_mgr, ["--manager-address", where,
                            "--executable", os.path.join(ss.dirs["ours"], "ss-server"),
                            "-D", str(workdir), "-m", METHOD, "-s", sslib.LOOPBACK4, "-v"],
                name="ss-manager")
    try:
        with ctl:
            _manage(ss, ctl, maddr, workdir, port, echo, blob)
    finally:
        if kind == "unix":
            shutil.rmtree(short, ignore_errors=True)


def _manage(ss, ctl, maddr, workdir, port, echo, blob):
    # It answers once it listens.
    assert wait_for(lambda: _try_ping(ctl, maddr), T(5)), "ss-manager does not answer"
    password = sslib.random_password()
    assert _ask(ctl, maddr, json_cmd("add", {"server_port": port, "password": password})) \
        == b"ok"
    pidfile = workdir / (".shadowsocks_%d.pid" % port)
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), T(5))
    pid = int(pidfile.read_text())
    assert sslib.alive(pid)
    assert wait_for(lambda: sslib.accepts(port), T(5)), "our ss-server does not listen"

    server = sslib.Server(None, sslib.LOOPBACK4, port, METHOD, password, None)
    client = ss.local(server)
    n = 50000
    conn = _echo_open(client, echo, n, blob)
    # ss-manager keeps the last figure each stat datagram brought.
    seen = wait_for(lambda: _pinged(ctl, maddr).get(port, 0) >= 2 * n, T(3 * INTERVAL),
                    step=0.5)
    figures = _pinged(ctl, maddr)
    assert seen, figures
    assert figures[port] == 2 * n + SLACK, figures
    conn.close()

    assert _ask(ctl, maddr, json_cmd("remove", {"server_port": port})) == b"ok"
    assert wait_for(lambda: not sslib.alive(pid), T(5)), "ss-server still runs"
    assert wait_for(lambda: not sslib.accepts(port), T(5)), "the port is still open"
    assert port not in _pinged(ctl, maddr)


def json_cmd(verb, obj):
    return "%s: %s" % (verb, json.dumps(obj))


def _try_ping(ctl, maddr):
    try:
        return _ask(ctl, maddr, "ping", timeout=0.2).startswith(b"stat: ")
    except OSError:  # not there yet (a Unix socket), or no answer yet
        return False


def _pinged(ctl, maddr):
    data = _ask(ctl, maddr, "ping")
    if data.endswith(b"\0"):
        data = data[:-1]
    text = data.decode()
    assert text.startswith("stat: "), text
    return {int(k): v for k, v in json.loads(text[len("stat: "):]).items()}
