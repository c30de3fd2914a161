# SPDX-License-Identifier: MIT
"""--workers N: ss-server runs N loops, each on a thread of its own with its
own SO_REUSEPORT listeners, and the kernel spreads connections and UDP
flows over them. At -v each line a worker writes starts with its id
("[w1] server 127.0.0.1:40000: connect ..."), which is how these tests see
which worker took a connection.

Connections are shared out and their bytes arrive whole; a first flight
replayed from new source ports is refused by whichever worker it reaches
(the replay pools are one, shared); UDP associations stay on one worker;
SIGTERM stops every worker; bad values are refused."""

import json
import os
import re
import time

import pytest

import sslib
import ssudp
from sslib import T

LINE = re.compile(r"\[w(\d+)\] (server|udp) [^ ]*:(\d+): (.*)")


def _lines(program):
    """(worker, kind, source port, rest) for each line about a peer."""
    out = []
    for line in program.stderr().splitlines():
        m = LINE.search(line)
        if m:
            out.append((int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)))
    return out


def _about(program, port, kind="server"):
    return [(w, rest) for w, k, p, rest in _lines(program) if k == kind and p == port]


def _server(ss, method=sslib.DEFAULT_METHOD, workers=2, extra=(), **kw):
    return ss.server(method=method, extra=["--workers", str(workers), "-v"] + list(extra), **kw)


def test_connections_spread_over_workers(ss, echo):
    server = _server(ss)
    local = ss.local(server)
    n = 60
    ports = []
    for i in range(n):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 2000 + 97 * i)
    sslib.wait_for(lambda: len([x for x in _lines(server.program) if "connect" in x[3]]) >= n,
                   T(5))
    took = [w for w, kind, port, rest in _lines(server.program) if rest.startswith("connect")]
    ports = {w: took.count(w) for w in set(took)}
    assert len(took) == n, "%d of %d connections logged" % (len(took), n)
    assert set(ports) == {0, 1}, "connections went to workers %s only" % sorted(ports)
    # Binomial(60, 1/2): below 12 on one side is a one-in-10^5 event.
    assert min(ports.values()) >= 12, "uneven spread: %r" % ports
    assert echo.accepted == n


def test_held_connections_shared_evenly(ss, echo):
    """Connections held open are shared out whatever the kernel's hash
    does: a worker that accepts one while it holds more than one more than
    another hands it over, so with 16 held the workers differ by at most 2."""
    server = _server(ss)
    local = ss.local(server)
    held = []
    try:
        for _ in range(16):
            s = sslib.socks5_connect(local.addr, *echo.addr)
            sslib.small_exchange(s, 100)
            held.append(s)
        took = [w for w, kind, port, rest in _lines(server.program)
                if rest.startswith("connect")]
        assert len(took) == 16
        assert abs(took.count(0) - took.count(1)) <= 2, "workers hold %d and %d" % (
            took.count(0), took.count(1))
    finally:
        for s in held:
            s.close()


def test_bulk_bytes_whole_with_workers(ss, echo, blob):
    server = _server(ss, method="chacha20-ietf-poly1305")
    local = ss.local(server)
    data = blob(3 << 20)
    socks = [sslib.socks5_connect(local.addr, *echo.addr) for _ in range(6)]
    try:
        for s in socks:
            s.settimeout(T(20))
        for s in socks:
            s.sendall(data[:1 << 20])
        for s in socks:
            got = bytearray()
            while len(got) < 1 << 20:
                chunk = s.recv(1 << 20)
                assert chunk, "closed after %d bytes" % len(got)
                got += chunk
            assert bytes(got) == data[:1 << 20]
    finally:
        for s in socks:
            s.close()


def _flight(server, stream, hold):
    """Sends a captured first flight from a new source port; returns (source
    port, state, bytes back)."""
    with sslib.connect(*server.addr) as h:
        port = h.getsockname()[1]
        h.sendall(stream)
        state, data = sslib.wait_closed(h, hold)
    return port, state, data


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm"))
def test_replay_refused_by_the_other_worker(ss, echo, method):
    server = _server(ss, method=method)
    payload = os.urandom(300)
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), method, server.password,
                                         echo.addr, payload)
    port, _, data = _flight(server, stream, 1.0)
    assert data, "the captured first flight was not served"
    assert sslib.wait_for(lambda: _about(server.program, port), T(5))
    first, rest = _about(server.program, port)[0]
    assert rest.startswith("connect"), rest
    assert echo.accepted == 1
    # A replay comes from a new source port, which the kernel's hash sends
    # to either worker: send it until one reached the other worker.
    other = None
    for _ in range(40):
        rport, state, data = _flight(server, stream, 0.3)
        assert data == b"", "a replay got %d bytes back" % len(data)
        assert state == "open", "a replay was answered differently (%s)" % state
        assert sslib.wait_for(lambda: _about(server.program, rport), T(5)), \
            "no line about the replay from port %d" % rport
        for w, rest in _about(server.program, rport):
            assert "refused" in rest and "connect" not in rest, rest
            if w != first:
                other = w
        if other is not None:
            break
    assert other is not None, "40 replays all reached worker %d" % first
    assert echo.accepted == 1, "a replayed first flight reached the target"


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm"))
def test_udp_associations_stay_whole(ss, method):
    clients, per_client = 12, 60
    with ssudp.UdpEcho() as uecho:
        server = _server(ss, method=method, extra=["-u", "-v"])
        tunnel = ss.tunnel(server, uecho.addr, extra=["-u"])
        apps = [ssudp.App("tunnel", tunnel, uecho.addr) for _ in range(clients)]
        errors = ssudp.run_clients(apps, per_client, window=4)
        assert not errors, "\n".join(errors)
        assert uecho.count() == clients * per_client
        # One association per client, made once, on one worker each.
        news = [(w, port) for w, kind, port, rest in _lines(server.program)
                if kind == "udp" and rest.startswith("new association")]
        assert len(news) == clients, news
        by_port = {}
        for w, port in news:
            by_port.setdefault(port, set()).add(w)
        assert all(len(ws) == 1 for ws in by_port.values()), by_port
        assert {w for w, _ in news} == {0, 1}, "associations all on one worker: %r" % news
        dropped = [x for x in _lines(server.program) if "dropped" in x[3]]
        assert not dropped, dropped


def _threads(pid):
    """The main thread and the workers' ("ss-worker-N"; a sanitizer's
    runtime may have threads of its own)."""
    names = []
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            names.append(f.read().strip())
    return 1 + sum(n.startswith("ss-worker-") for n in names)


def _settled_threads(pid, want):
    """The thread count once it is want, or what it is after a while (the
    listeners open before the worker threads start)."""
    sslib.wait_for(lambda: _threads(pid) == want, T(5))
    time.sleep(0.1)
    return _threads(pid)


def test_sigterm_stops_every_worker(ss, echo):
    server = _server(ss, workers=4)
    pid = server.program.pid
    assert _settled_threads(pid, 4) == 4
    local = ss.local(server)
    # Connections held open on several workers while the signal comes.
    held = [sslib.socks5_connect(local.addr, *echo.addr) for _ in range(12)]
    for s in held:
        sslib.small_exchange(s, 100)
    rc = server.program.terminate(T(10))  # SIGTERM to the process, as a service manager
    for s in held:
        s.close()
    assert rc == 0, "exit status %r" % rc
    assert not server.program.problems, server.program.problems
    stopped = [line for line in server.program.stderr().splitlines()
               if "worker stopped" in line]
    assert len(stopped) == 4, stopped
    # Exactly the held ones: nothing else connected.
    assert sum(int(re.search(r"(\d+) connections", line).group(1)) for line in stopped) == 12


def test_one_worker_is_one_thread(ss, echo):
    server = _server(ss, workers=1)
    assert _settled_threads(server.program.pid, 1) == 1
    local = ss.local(server)
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.small_exchange(s, 100)
    assert sslib.wait_for(lambda: "connect" in server.program.stderr(), T(5))
    assert "[w" not in server.program.stderr()


def test_default_workers(ss, echo):
    """ss-server: one per online CPU; the clients: one."""
    server = ss.server(extra=["-v"])
    cpus = min(256, os.sysconf("SC_NPROCESSORS_ONLN"))
    assert _settled_threads(server.program.pid, cpus) == cpus
    local = ss.local(server)
    assert _settled_threads(local.program.pid, 1) == 1


@pytest.mark.parametrize("bad", ("0", "300", "x", "", "2.5", "-1"))
def test_bad_workers_refused(ss, tmp_path, bad):
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-k", "x",
                                "-m", "aes-256-gcm", "--workers", bad])
    assert rc == 1
    assert "--workers must be a number from 1 to 256, not '%s'" % bad in p.stderr()


@pytest.mark.parametrize("bad", (0, 257, "x", 1.5, True))
def test_bad_workers_key_refused(ss, tmp_path, bad):
    conf = tmp_path / "w.json"
    conf.write_text(json.dumps({"workers": bad}))
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-k", "x",
                                "-m", "aes-256-gcm", "-c", str(conf)])
    assert rc == 1
    assert '"workers" must be a number from 1 to 256' in p.stderr()


def test_workers_key_in_json(ss, tmp_path, echo):
    conf = tmp_path / "w.json"
    conf.write_text(json.dumps({"workers": 3}))
    server = ss.server(extra=["-c", str(conf)])
    assert _settled_threads(server.program.pid, 3) == 3


def test_client_plugin_runs_one_worker(ss):
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "8388", "-k", "x", "-l", "1080",
                               "-m", "aes-256-gcm", "--plugin", "true", "--workers", "2"])
    assert rc == 1
    assert "a client with a plugin (server 1) runs one worker" in p.stderr()


def test_local_udp_runs_one_worker(ss):
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "8388", "-k", "x", "-l", "1080",
                               "-m", "aes-256-gcm", "-u", "--workers", "2"])
    assert rc == 1
    assert "ss-local relays UDP (SOCKS5 UDP ASSOCIATE) with one worker" in p.stderr()


def test_tunnel_and_local_with_workers(ss, echo):
    server = _server(ss)
    local = ss.local(server, extra=["--workers", "2", "-v"])
    tunnel = ss.tunnel(server, echo.addr, extra=["--workers", "2", "-v"])
    for _ in range(30):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 500)
        with sslib.connect(*tunnel.addr) as s:
            sslib.small_exchange(s, 500)
    for c in (local, tunnel):
        took = [line for line in c.program.stderr().splitlines() if "listening" not in line]
        for w in ("[w0] ", "[w1] "):
            assert any(w in line for line in took), "%s: nothing on %s" % (c.program.name, w)
    # One echo connection per exchange, nothing more.
    assert echo.accepted == 60


def test_check_names_the_workers(ss):
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-k", "x", "-m", "aes-256-gcm",
                                "--workers", "3", "--check"])
    assert rc == 0, p.describe()
    assert "workers: 3, each a loop on a thread of its own" in p.stdout()


def test_daemon_with_workers(ss, tmp_path, echo):
    """-f: the threads start in the daemon, after its fork; the PID file
    names it, SIGTERM stops it and every worker."""
    pidfile = tmp_path / "ss.pid"
    port = sslib.free_port()
    pw = sslib.random_password()
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", str(port), "-k", pw,
                                "-m", "aes-256-gcm", "--workers", "2", "-f", str(pidfile)])
    assert rc == 0, p.describe()
    pid = int(pidfile.read_text())
    try:
        assert _settled_threads(pid, 2) == 2
        srv = sslib.Server(None, "127.0.0.1", port, "aes-256-gcm", pw)
        local = ss.local(srv)
        for _ in range(6):
            with sslib.socks5_connect(local.addr, *echo.addr) as s:
                sslib.small_exchange(s, 300)
    finally:
        os.kill(pid, 15)
    assert sslib.wait_for(lambda: not sslib.alive(pid), T(10)), "the daemon did not stop"
