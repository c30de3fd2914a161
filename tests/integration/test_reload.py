# SPDX-License-Identifier: MIT
"""SIGHUP reads the configuration again: new connections get the new one,
open connections go on, a file with an error changes nothing, ports that
changed are opened and closed, and no connection fails across reloads."""

import json
import os
import signal
import socket
import threading
import time

import pytest

import sslib
import ssudp
from sslib import T

METHOD = "aes-256-gcm"


def write_conf(path, **kw):
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(kw, f)
    os.replace(tmp, path)


def start_with_conf(procs, ss, name, conf, host, port):
    p = procs.start(ss.exe(name), ["-c", str(conf)])
    p.wait_listening(host, port)
    return p


def count_in_log(p, text):
    return p.output().count(text)


def reload_and_wait(p, n_before, text="configuration reloaded"):
    """SIGHUP, then waits for the n_before+1-th line with text."""
    os.kill(p.pid, signal.SIGHUP)
    assert sslib.wait_for(lambda: count_in_log(p, text) > n_before, T(10)), p.describe()


def server_conf(port, password, **extra):
    return dict(server="127.0.0.1", server_port=port, password=password, method=METHOD,
                **extra)


def tunnel_to(ss, port, password, target):
    server = sslib.Server(None, sslib.LOOPBACK4, port, METHOD, password, None)
    return ss.tunnel(server, target)


def works(addr, nbytes=2000):
    try:
        with sslib.connect(*addr, timeout=T(3)) as s:
            sslib.small_exchange(s, nbytes, timeout=T(3))
        return True
    except (OSError, AssertionError, sslib.SocksError):
        return False


def test_reload_under_load_fails_no_connection(procs, ss, echo, tmp_path):
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    password = sslib.random_password()
    write_conf(conf, **server_conf(port, password, workers=2, timeout=30))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    tunnel = tunnel_to(ss, port, password, echo.addr)
    long_lived = sslib.connect(*tunnel.addr)
    sslib.small_exchange(long_lived, 100)

    stop = threading.Event()
    done, failed = [0] * 8, []

    def client(i):
        while not stop.is_set():
            try:
                with sslib.connect(*tunnel.addr, timeout=T(5)) as s:
                    sslib.small_exchange(s, 1000 + 97 * i, timeout=T(5))
                done[i] += 1
            except Exception as e:  # any failure counts
                failed.append(repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    try:
        for n in range(20):
            time.sleep(0.25)
            # A real change each time: the idle timeout.
            write_conf(conf, **server_conf(port, password, workers=2, timeout=30 + n))
            reload_and_wait(server, n)
            sslib.small_exchange(long_lived, 200)
        time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(T(20))
    assert not failed, "%d connections failed across 20 reloads: %s" % (len(failed), failed[:3])
    assert sum(done) > 100, done
    assert all(done), done
    sslib.small_exchange(long_lived, 5000)
    long_lived.close()
    # Once the old configurations' connections have ended, their workers go.
    assert sslib.wait_for(lambda: server.output().count(
        "the configuration before a reload has no connection left") == 20, T(15)), \
        server.describe()
    assert sslib.wait_for(lambda: sum(1 for t in os.listdir("/proc/%d/task" % server.pid)
                                      if open("/proc/%d/task/%s/comm" % (server.pid, t))
                                      .read().startswith("ss-worker")) == 1, T(10))


def test_reload_changes_password_for_new_connections(procs, ss, echo, tmp_path):
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    old, new = sslib.random_password(), sslib.random_password()
    write_conf(conf, **server_conf(port, old))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    old_tunnel = tunnel_to(ss, port, old, echo.addr)
    new_tunnel = tunnel_to(ss, port, new, echo.addr)
    open_conn = sslib.connect(*old_tunnel.addr)
    sslib.small_exchange(open_conn, 100)
    assert works(old_tunnel.addr) and not works(new_tunnel.addr)

    write_conf(conf, **server_conf(port, new))
    reload_and_wait(server, 0)
    assert works(new_tunnel.addr), server.describe()
    assert not works(old_tunnel.addr)
    sslib.small_exchange(open_conn, 3000)  # the open connection goes on
    open_conn.close()


def test_reload_with_an_error_keeps_the_running_configuration(procs, ss, echo, tmp_path):
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    password = sslib.random_password()
    write_conf(conf, **server_conf(port, password))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    tunnel = tunnel_to(ss, port, password, echo.addr)
    with open(conf, "w") as f:
        f.write('{"server_port": %d, "password": "x", "method": "rc4-md5"}' % port)
    reload_and_wait(server, 0, "reload refused")
    assert "rc4-md5" in server.output()
    assert works(tunnel.addr)
    with open(conf, "w") as f:
        f.write("{not json")
    reload_and_wait(server, 1, "reload refused")
    assert works(tunnel.addr)
    assert server.alive()


def test_reload_moves_the_port(procs, ss, echo, tmp_path):
    conf = tmp_path / "server.json"
    p1, p2 = sslib.free_port(), sslib.free_port()
    password = sslib.random_password()
    write_conf(conf, **server_conf(p1, password, mode="tcp_and_udp"))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, p1)
    t1 = tunnel_to(ss, p1, password, echo.addr)
    t2 = tunnel_to(ss, p2, password, echo.addr)
    open_conn = sslib.connect(*t1.addr)
    sslib.small_exchange(open_conn, 100)
    assert not works(t2.addr)

    write_conf(conf, **server_conf(p2, password, mode="tcp_and_udp"))
    reload_and_wait(server, 0)
    assert works(t2.addr)
    # Each worker closes its old listener on its own thread, at once.
    assert sslib.wait_for(lambda: p1 not in sslib.listening_ports(server.pid), T(5))
    assert p2 in sslib.listening_ports(server.pid)
    with pytest.raises(OSError):
        socket.create_connection((sslib.LOOPBACK4, p1), timeout=T(2)).close()
    sslib.small_exchange(open_conn, 2000)
    open_conn.close()


def test_reload_changes_the_clients_server(procs, ss, echo, tmp_path):
    a = ss.server(method=METHOD)
    b = ss.server(method=METHOD)
    conf = tmp_path / "tunnel.json"
    lport = sslib.free_port()
    target = "%s:%d" % echo.addr

    def tunnel_conf(s):
        return dict(server=s.host, server_port=s.port, password=s.password, method=METHOD,
                    local_address="127.0.0.1", local_port=lport, tunnel_address=target)

    write_conf(conf, **tunnel_conf(a))
    tunnel = start_with_conf(procs, ss, "ss-tunnel", conf, sslib.LOOPBACK4, lport)
    addr = (sslib.LOOPBACK4, lport)
    assert works(addr)
    write_conf(conf, **tunnel_conf(b))
    reload_and_wait(tunnel, 0)
    a.program.kill()
    assert works(addr), tunnel.describe()


def test_reload_keeps_udp(procs, ss, tmp_path):
    uecho = ssudp.UdpEcho()
    try:
        conf = tmp_path / "server.json"
        port = sslib.free_port()
        password = sslib.random_password()
        write_conf(conf, **server_conf(port, password, mode="tcp_and_udp", workers=2))
        server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
        s = sslib.Server(None, sslib.LOOPBACK4, port, METHOD, password, None)
        tunnel = ss.tunnel(s, (uecho.host, uecho.port), extra=["-u"])
        app = ssudp.udp_socket()
        assert ssudp.tunnel_exchange(app, tunnel.addr, b"before") == b"before"
        for n in range(3):
            write_conf(conf, **server_conf(port, password, mode="tcp_and_udp", workers=2,
                                           timeout=40 + n))
            reload_and_wait(server, n)
            # The same client association, and a new one, both answered.
            assert ssudp.tunnel_exchange(app, tunnel.addr, b"after%d" % n) == b"after%d" % n
            other = ssudp.udp_socket()
            assert ssudp.tunnel_exchange(other, tunnel.addr, b"new%d" % n) == b"new%d" % n
            other.close()
        udp_ports = ssudp.bound_ports(server.pid, "udp")
        assert port in udp_ports, udp_ports
    finally:
        uecho.close()


def test_reload_that_cannot_listen_keeps_every_listener(procs, ss, echo, tmp_path):
    """The new set takes the socket of 127.0.0.1:PORT, then fails on
    127.0.0.2:PORT (taken by the test): the socket goes back to the running
    set, which keeps accepting on it."""
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    password = sslib.random_password()
    write_conf(conf, **server_conf(port, password, workers=2))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    tunnel = tunnel_to(ss, port, password, echo.addr)
    blocker = socket.socket()
    blocker.bind(("127.0.0.2", port))
    blocker.listen(1)
    try:
        cfg = server_conf(port, password, workers=2)
        cfg["server"] = ["127.0.0.1", "127.0.0.2"]
        write_conf(conf, **cfg)
        for n in range(3):
            reload_and_wait(server, n, "reload refused")
            assert works(tunnel.addr), server.describe()
        assert port in sslib.listening_ports(server.pid)
    finally:
        blocker.close()
    assert "configuration reloaded" not in server.output()


# ---------------------------------------------------------------------------
# What carries over a reload: the figures and the replay records.

def _scrape(mport, port):
    m = sslib.metrics_samples(mport)

    def v(name, **labels):
        return sslib.metric(m, name, port=port, **labels)
    return v


def _stat_after(sock, since, timeout):
    """The figures of the first stat datagram received after the time since
    (a monotonic time), as {port: bytes}."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        if time.monotonic() >= since:
            text = data.rstrip(b"\0").decode()
            assert text.startswith("stat: "), text
            return {int(k): n for k, n in json.loads(text[len("stat: "):]).items()}
    raise AssertionError("no stat datagram after the reload")


def test_reload_figures_go_on(procs, ss, echo, tmp_path):
    """Bytes, connections and refusals counted before a SIGHUP still count
    after it, in --metrics and in the manager's stat datagrams; an open
    connection of the old configuration counts as active until it ends, and
    its bytes go on counting; nothing is counted twice once its workers
    go."""
    conf = tmp_path / "server.json"
    port, mport = sslib.free_port(), sslib.free_port()
    password = sslib.random_password()
    stat = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stat.bind((sslib.LOOPBACK4, 0))
    extra = dict(workers=2, metrics="127.0.0.1:%d" % mport,
                 manager_address="127.0.0.1:%d" % stat.getsockname()[1])
    write_conf(conf, **server_conf(port, password, timeout=30, **extra))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    assert sslib.wait_for(lambda: sslib.accepts(mport), T(5))
    client = ss.local(sslib.Server(None, sslib.LOOPBACK4, port, METHOD, password, None))
    sent = 0
    for n in (5000, 123):
        with sslib.socks5_connect(client.addr, *echo.addr) as s:
            sslib.echo_check(s, os.urandom(n))
        sent += n
    held = sslib.socks5_connect(client.addr, *echo.addr)
    sslib.echo_check(held, os.urandom(1000))
    sent += 1000
    with sslib.connect(*server_addr(port)) as s:  # refused: random bytes
        s.sendall(os.urandom(sslib.SALT_LEN[METHOD] + 2 + sslib.TAG_LEN + 40))
        sslib.wait_closed(s, 0.3)
    assert sslib.wait_for(lambda: _scrape(mport, port)("ss_refused_total", reason="auth") == 1,
                          T(5))

    for n in range(2):
        write_conf(conf, **server_conf(port, password, timeout=40 + n, **extra))
        reload_and_wait(server, n)
        v = _scrape(mport, port)
        assert v("ss_bytes_total", user="", direction="up") == sent
        assert v("ss_bytes_total", user="", direction="down") == sent
        assert v("ss_connections_total", user="") == 3
        assert v("ss_connections_active", user="") == 1  # held, in the old workers
        assert v("ss_refused_total", reason="auth") == 1
    reloaded = time.monotonic()
    sslib.echo_check(held, os.urandom(700))  # the old workers' connection goes on
    sent += 700
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, os.urandom(300))
    sent += 300
    v = _scrape(mport, port)
    assert v("ss_bytes_total", user="", direction="up") == sent
    assert v("ss_connections_total", user="") == 4
    held.close()
    # Its workers go once it has ended: what they counted stays, once.
    assert sslib.wait_for(lambda: server.output().count(
        "the configuration before a reload has no connection left") == 2, T(10)), \
        server.describe()
    v = _scrape(mport, port)
    assert v("ss_bytes_total", user="", direction="up") == sent
    assert v("ss_bytes_total", user="", direction="down") == sent
    assert v("ss_connections_total", user="") == 4
    assert v("ss_connections_active", user="") == 0
    # The manager's datagram (every 10 s) from the new workers: both ways.
    assert _stat_after(stat, reloaded, T(25)) == {port: 2 * sent}
    stat.close()


def server_addr(port):
    return (sslib.LOOPBACK4, port)


def _assert_refused(addr, stream):
    with sslib.connect(*addr) as h:
        h.sendall(stream)
        state, data = sslib.wait_closed(h, 1.0)
        assert data == b"", "a replayed first flight got %d bytes back" % len(data)
        assert state == "open", "a replay was answered differently (%s)" % state


def _served(addr, stream):
    with sslib.connect(*addr) as h:
        h.sendall(stream)
        h.settimeout(T(5))
        return h.recv(65536) != b""


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-256-gcm"))
def test_reload_refuses_a_replay_seen_before(procs, ss, echo, tmp_path, method):
    """A first flight captured from a real ss-local, served once, then sent
    again after a SIGHUP: refused (the salt is remembered across the
    reload) and counted as a replay; the target saw it once."""
    conf = tmp_path / "server.json"
    port, mport = sslib.free_port(), sslib.free_port()
    password = sslib.random_psk(method) if sslib.is_sip022(method) else sslib.random_password()

    def cfg(n):
        return dict(server="127.0.0.1", server_port=port, password=password, method=method,
                    workers=2, timeout=30 + n, metrics="127.0.0.1:%d" % mport)

    write_conf(conf, **cfg(0))
    server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
    stream = sslib.capture_client_stream(procs, ss.exe("ss-local"), method, password,
                                         echo.addr, b"once")
    assert _served(server_addr(port), stream)
    assert echo.wait_records(1, T(5))
    write_conf(conf, **cfg(1))
    reload_and_wait(server, 0)
    assert "replay records start empty" not in server.output()
    _assert_refused(server_addr(port), stream)
    assert sslib.wait_for(
        lambda: _scrape(mport, port)("ss_refused_total", reason="replay") == 1, T(5))
    time.sleep(0.2)
    assert len(echo.records) == 1, "the replayed flight reached the target again"


def test_reload_refuses_a_replayed_sip004_datagram(procs, ss, tmp_path):
    method = ssudp.Packets.METHOD
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    password = sslib.random_password()

    def cfg(n):
        return dict(server="127.0.0.1", server_port=port, password=password, method=method,
                    mode="tcp_and_udp", workers=2, timeout=30 + n)

    with ssudp.UdpEcho() as uecho:
        write_conf(conf, **cfg(0))
        server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
        pk = ssudp.Packets(password)
        first = pk.request(uecho.host, uecho.port, b"once")
        with ssudp.udp_socket() as u:
            u.sendto(first, server_addr(port))
            u.settimeout(T(5))
            assert pk.answer(u.recvfrom(65536)[0])[3] == b"once"
        write_conf(conf, **cfg(1))
        reload_and_wait(server, 0)
        with ssudp.udp_socket() as u:
            u.sendto(first, server_addr(port))
            ssudp.recv_nothing(u, 0.5)
            # A new datagram is served: the server is there.
            u.sendto(pk.request(uecho.host, uecho.port, b"new"), server_addr(port))
            u.settimeout(T(5))
            assert pk.answer(u.recvfrom(65536)[0])[3] == b"new"
        assert uecho.count() == 2, "a replayed datagram reached the target"


def test_reload_refuses_a_replayed_sip022_datagram(procs, ss, tmp_path):
    """A datagram of a real ss-tunnel, captured, served once, then sent
    again after a SIGHUP: the session's packet-id window carried over."""
    method = "2022-blake3-aes-128-gcm"
    conf = tmp_path / "server.json"
    port = sslib.free_port()
    psk = sslib.random_psk(method)

    def cfg(n):
        return dict(server="127.0.0.1", server_port=port, password=psk, method=method,
                    mode="tcp_and_udp", workers=2, timeout=30 + n)

    with ssudp.UdpEcho() as uecho:
        with ssudp.udp_socket() as cap:
            fake = sslib.Server(None, sslib.LOOPBACK4, cap.getsockname()[1], method, psk)
            tunnel = ss.tunnel(fake, uecho.addr, extra=["-u"])
            app = ssudp.App("tunnel", tunnel, uecho.addr)
            app.send(b"once")
            cap.settimeout(T(5))
            packet, _ = cap.recvfrom(65536)
            app.close()
        write_conf(conf, **cfg(0))
        server = start_with_conf(procs, ss, "ss-server", conf, sslib.LOOPBACK4, port)
        with ssudp.udp_socket() as s:
            s.sendto(packet, server_addr(port))
            s.settimeout(T(5))
            s.recvfrom(65536)
        assert uecho.count() == 1
        write_conf(conf, **cfg(1))
        reload_and_wait(server, 0)
        for src in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):  # whichever worker
            with ssudp.udp_socket(host=src) as s:
                s.sendto(packet, server_addr(port))
                ssudp.recv_nothing(s, 0.5)
        assert uecho.count() == 1, "the replayed datagram reached the target again"
