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
    import ssudp
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
