# SPDX-License-Identifier: MIT
"""Clients with several servers: picking, failover, health learned from real
traffic, names that move, mixed methods, ss:// URLs (helpers in
ssmulti.py)."""

import os
import re
import threading
import time

import pytest

import sslib
import ssudp
from sslib import T
from ssmulti import (BACKOFF_LONGEST, RESOLVE_MIN, Srv, echo_traffic, out_ip, peers, start_client,
                     through)

def run_connections(proxy, target, count, workers, size=300):
    """count connections, workers at a time, each exchanging size bytes;
    returns (failures, slowest SOCKS5 reply in seconds)."""
    errors, slowest, lock = [], [0.0], threading.Lock()
    todo = iter(range(count))

    def work():
        while True:
            with lock:
                if next(todo, None) is None:
                    return
            t0 = time.monotonic()
            try:
                s = sslib.socks5_connect(proxy, *target, timeout=T(15))
            except (OSError, AssertionError) as e:
                with lock:
                    errors.append("connect: %r" % e)
                continue
            took = time.monotonic() - t0
            try:
                sslib.small_exchange(s, size)
            except (OSError, AssertionError) as e:
                with lock:
                    errors.append("exchange: %r" % e)
            finally:
                s.close()
            with lock:
                slowest[0] = max(slowest[0], took)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors, slowest[0]


# ---------------------------------------------------------------------------
# Failover and recovery

def test_one_server_stopped_every_connection_succeeds_and_it_comes_back(ss, tmp_path):
    """Three servers, one of them not running: 1,000 connections through
    ss-local all succeed, spread over the two that run; -v names the
    server of each connection and the stopped one going down. Started
    again, it carries connections again within the longest backoff."""
    with sslib.EchoServer() as echo:
        srvs = [Srv(ss, i) for i in range(3)]
        srvs[0].start()
        srvs[1].start()
        local = start_client(ss, tmp_path, {"servers": [s.entry() for s in srvs]})
        errors, slowest = run_connections(local.addr, echo.addr, 1000, 10)
        assert not errors, "%d of 1000 connections failed: %s" % (len(errors), errors[:5])
        seen = peers(echo)
        assert seen.get(out_ip(2), 0) == 0
        # Spread: the least loaded server, in turn among equals.
        assert seen.get(out_ip(0), 0) > 300 and seen.get(out_ip(1), 0) > 300, seen
        out = local.program.output()
        assert re.search(r"socks5 127\.0\.0\.1:\d+: server 1 \"s0\" 127\.0\.0\.1:%d"
                         % srvs[0].port, out), out[-2000:]
        assert re.search(r"server 3 \"s2\" 127\.0\.0\.1:%d: down \(connect: Connection refused\)"
                         % srvs[2].port, out), out[-2000:]
        print("slowest SOCKS5 reply with a server stopped: %.3f s" % slowest)

        srvs[2].start()
        t0 = time.monotonic()
        while peers(echo).get(out_ip(2), 0) == 0:
            assert time.monotonic() - t0 < BACKOFF_LONGEST + T(3), \
                "the server started again was not used within %.1f s" % BACKOFF_LONGEST
            assert through(local.addr, echo) is not None
            time.sleep(0.05)
        print("server used again %.1f s after it started" % (time.monotonic() - t0))
        assert "server 3 \"s2\" 127.0.0.1:%d: up again" % srvs[2].port in \
            local.program.output()


def test_tunnel_fails_over(ss, tmp_path):
    """ss-tunnel with the first server not running: every connection
    reaches the target through the other one, also those that try the
    dead one again after its backoff."""
    with sslib.EchoServer() as echo:
        dead, live = Srv(ss, 0), Srv(ss, 1).start()
        tunnel = start_client(ss, tmp_path, {"servers": [dead.entry(), live.entry()]},
                              prog="ss-tunnel", target=echo.addr)
        deadline = time.monotonic() + T(10)
        n = 0
        while n < 50 or tunnel.program.output().count("still down") < 2:
            assert time.monotonic() < deadline, tunnel.program.output()[-2000:]
            s = sslib.connect(*tunnel.addr)
            try:
                sslib.small_exchange(s, 1000)
            finally:
                s.close()
            n += 1
            time.sleep(0.01)
        # (and the start-up probe's connection)
        assert list(peers(echo)) == [out_ip(1)] and peers(echo)[out_ip(1)] >= 50


def test_servers_killed_and_restarted_mid_run(ss, tmp_path):
    """Servers killed (SIGKILL) and started again, one at a time, while
    eight applications open connection after connection through ss-local
    and exchange 64 KiB on each: every SOCKS5 request succeeds, no byte
    that comes back is wrong, and only connections a killed server carried
    end early."""
    size, kills = 1 << 16, 6
    with sslib.EchoServer() as echo:
        srvs = [Srv(ss, i).start() for i in range(3)]
        local = start_client(ss, tmp_path, {"servers": [s.entry() for s in srvs]})
        def chaos(stats, lock):
            for r in range(kills):
                time.sleep(1.5)
                victim = srvs[r % 3]
                victim.stop()
                time.sleep(1.0)
                victim.start()
            time.sleep(1.5)

        stats = echo_traffic(local, echo, chaos, apps=8, size=size)
        assert stats["done"] > 100, stats
        # At most the connections under way through each killed server.
        assert stats["cut"] <= 8 * kills, stats
        print("killed and restarted: %s" % stats)


# ---------------------------------------------------------------------------
# Health: what counts against a server

class Mute(sslib.TcpServer):
    """A "server" that takes the request and closes without a word."""

    def handle(self, conn, record):
        try:
            conn.recv(65536)
        except OSError:
            pass


def test_silent_server_goes_down_but_bad_targets_do_not_count(ss, tmp_path):
    """Connections to a target that refuses end without an answer through
    every server: that never marks one down. A server that closes without
    answering for a target that answers through another one goes down
    after three such closes, and connections stay off it."""
    with sslib.EchoServer() as echo:
        a, b = Srv(ss, 0).start(), Srv(ss, 1).start()
        local = start_client(ss, tmp_path, {"servers": [a.entry(), b.entry()]})
        closed = sslib.free_port()
        for _ in range(3):
            assert through(local.addr, echo) is not None
            for _ in range(10):
                s = sslib.socks5_connect(local.addr, sslib.LOOPBACK4, closed, timeout=T(10))
                try:
                    assert sslib.recv_all(s, timeout=T(10)) == b""
                finally:
                    s.close()
        time.sleep(0.3)
        assert ": down (" not in local.program.output()
        seen = {through(local.addr, echo) for _ in range(10)}
        assert seen == {out_ip(0), out_ip(1)}

    with sslib.EchoServer() as echo, Mute() as mute:
        good = Srv(ss, 2).start()
        fake = Srv(ss, 3, port=mute.port)
        local = start_client(ss, tmp_path, {"servers": [fake.entry(), good.entry()]})
        ok = bad = 0
        deadline = time.monotonic() + T(20)
        while "down (it closed connections" not in local.program.output():
            assert time.monotonic() < deadline, local.program.output()[-2000:]
            try:
                through(local.addr, echo)
                ok += 1
            except (OSError, AssertionError):
                bad += 1
        assert bad >= 3 and ok >= 1, (ok, bad)
        # Only a try after the backoff may still go to it.
        went = []
        for _ in range(20):
            try:
                went.append(through(local.addr, echo))
            except (OSError, AssertionError):
                went.append(None)
        assert went.count(out_ip(2)) >= 19, went


# ---------------------------------------------------------------------------
# Mixed methods, UDP

@pytest.mark.parametrize("prog", ("ss-local", "ss-tunnel"))
def test_mixed_methods_both_carry_traffic(ss, tmp_path, prog):
    """An AEAD server and a 2022 one behind one client: connections and UDP
    associations go to both, and every byte comes back right."""
    with sslib.EchoServer() as echo, ssudp.UdpEcho() as uecho:
        srvs = [Srv(ss, 0, "aes-256-gcm", udp=True).start(),
                Srv(ss, 1, "2022-blake3-aes-256-gcm", udp=True).start()]
        client = start_client(ss, tmp_path, {"servers": [s.entry() for s in srvs],
                                             "mode": "tcp_and_udp"},
                              prog=prog, target=echo.addr)
        for i in range(20):
            if prog == "ss-local":
                s = sslib.socks5_connect(client.addr, *echo.addr, timeout=T(10))
            else:
                s = sslib.connect(*client.addr)
            try:
                sslib.small_exchange(s, 20000 + i)
            finally:
                s.close()
        seen = peers(echo)
        assert set(seen) == {out_ip(0), out_ip(1)} and min(seen.values()) >= 5, seen
        # ss-tunnel's UDP goes to the target's port on the UDP echo's host.
        utarget = uecho.addr if prog == "ss-local" else echo.addr
        if prog == "ss-tunnel":
            uecho.close()
            uecho = ssudp.UdpEcho(port=echo.port)
        apps = [ssudp.App("socks" if prog == "ss-local" else "tunnel", client, utarget)
                for _ in range(6)]
        for app in apps:
            for n in (1, 1400, 30000):
                ssudp.check_exchange(app, os.urandom(n))
            app.close()
        sources = {src[0] for src in uecho.sources()}
        uecho.close()
        assert sources == {out_ip(0), out_ip(1)}, sources


def udp_exchange_retrying(app, data, tries=20):
    """An exchange that may lose its first datagrams (a server just died);
    the answer must be right."""
    for _ in range(tries):
        app.send(data)
        try:
            back = app.recv(timeout=0.5)
        except OSError:
            continue
        assert back == data
        return
    raise AssertionError("no answer in %d tries" % tries)


def test_udp_associations_spread_and_fail_over(ss, tmp_path):
    """UDP associations spread over two servers; one killed, the
    associations on it go on through the other one."""
    with ssudp.UdpEcho() as uecho:
        srvs = [Srv(ss, i, udp=True).start() for i in range(2)]
        local = start_client(ss, tmp_path, {"servers": [s.entry() for s in srvs],
                                            "mode": "tcp_and_udp"})
        apps = [ssudp.App("socks", local, uecho.addr) for _ in range(6)]
        for i, app in enumerate(apps):
            ssudp.check_exchange(app, b"before-%d" % i)
        assert {src[0] for src in uecho.sources()} == {out_ip(0), out_ip(1)}
        srvs[0].stop()
        t0 = time.monotonic()
        for i, app in enumerate(apps):
            udp_exchange_retrying(app, b"after-%d" % i)
        took = time.monotonic() - t0
        for i, app in enumerate(apps):
            ssudp.check_exchange(app, b"later-%d" % i)
            app.close()
        with uecho.lock:
            late = [peer[0] for peer, _, first in uecho.records if first.startswith(b"later-")]
        assert late == [out_ip(1)] * 6, late
        out = local.program.output()
        assert "the association goes on with server 2" in out, out[-2000:]
        print("six UDP associations moved in %.2f s" % took)


# ---------------------------------------------------------------------------
# Names that move

@pytest.mark.parametrize("how", ("hosts", "dns"))
def test_server_name_followed_to_a_new_address(ss, tmp_path, how):
    """A server given by name: when the name moves to another address, new
    connections follow it without a restart, within the lookup schedule
    (the answer's TTL, at least 5 s); when the old address stops answering
    right after a move, the failure looks the name up again at once."""
    port = ssudp.free_udp_port()
    first = Srv(ss, 0, host="127.0.0.5", port=port).start()
    second = Srv(ss, 1, host="127.0.0.6", port=port, password=first.password).start()
    hosts = tmp_path / "hosts"
    env = None
    extra = ()
    dns = None
    if how == "hosts":
        hosts.write_text("127.0.0.5 srv.test\n")
        env = {"SS_HOSTS_FILE": str(hosts)}
    else:
        hosts.write_text("")
        env = {"SS_HOSTS_FILE": str(hosts)}
        dns = sslib.DnsResponder(answers={"srv.test": "127.0.0.5"}, ttl=1)
        extra = ("-d", dns.addr)

    def move(to):
        if dns:
            dns.answers["srv.test"] = to
        else:
            staged = tmp_path / "hosts.new"
            staged.write_text("%s srv.test\n" % to)
            staged.rename(hosts)

    try:
        with sslib.EchoServer() as echo:
            local = start_client(ss, tmp_path, {
                "server": "srv.test", "server_port": port, "method": first.method,
                "password": first.password}, env=env, extra=extra)
            for _ in range(5):
                assert through(local.addr, echo) == out_ip(0)
            move("127.0.0.6")
            t0 = time.monotonic()
            while through(local.addr, echo) != out_ip(1):
                assert time.monotonic() - t0 < RESOLVE_MIN * 1.1 + T(3), \
                    "still going to the old address"
                time.sleep(0.1)
            print("%s: followed the move in %.1f s" % (how, time.monotonic() - t0))
            assert "srv.test is now at 127.0.0.6:%d (was 127.0.0.5:%d)" % (port, port) in \
                local.program.output()
            # Back to the first address, and the second one gone: the
            # connection that finds it gone looks the name up and goes on.
            move("127.0.0.5")
            time.sleep(2.1)
            second.stop()
            for _ in range(5):
                assert through(local.addr, echo) == out_ip(0)
    finally:
        if dns:
            dns.close()
    if dns:
        assert dns.names.count("srv.test") >= 3


# ---------------------------------------------------------------------------
# ss:// URLs in the configuration

def test_url_configurations(ss, tmp_path):
    """Servers given as URLs: --server-url (twice), "server_url" (one and a
    list) and URLs in the "server" list each relay traffic; methods and
    passwords come from the URLs."""
    with sslib.EchoServer() as echo:
        a = Srv(ss, 0, "aes-128-gcm", password="p@ss w:rd/?#%").start()
        b = Srv(ss, 1, "2022-blake3-aes-128-gcm").start()
        ua, ub = a.url("first one"), b.url()

        def check(client, want):
            seen = {through(client.addr, echo) for _ in range(6)}
            assert seen == want, seen

        exe = ss.exe("ss-local")
        program, port = ss.procs.start_listening(
            exe, lambda p: ["--server-url", ua, "--server-url", ub, "-l", p, "-v"])
        check(sslib.Client(program, sslib.LOOPBACK4, port), {out_ip(0), out_ip(1)})
        assert 'server 1 "first one" 127.0.0.1:%d' % a.port in program.output()
        check(start_client(ss, tmp_path, {"server_url": ub}), {out_ip(1)})
        check(start_client(ss, tmp_path, {"server_url": [ua, ub]}), {out_ip(0), out_ip(1)})
        check(start_client(ss, tmp_path, {"server": [ua]}), {out_ip(0)})
        tunnel = start_client(ss, tmp_path, {"server": [ub, "127.0.0.1:%d" % a.port],
                                             "method": a.method, "password": a.password},
                              prog="ss-tunnel", target=echo.addr)
        for _ in range(4):
            s = sslib.connect(*tunnel.addr)
            try:
                sslib.small_exchange(s, 500)
            finally:
                s.close()
        assert peers(echo).get(out_ip(0), 0) > 0 and peers(echo).get(out_ip(1), 0) > 0


@pytest.mark.parametrize("url, part", (
    ("ss://YWVzLTI1Ni1nY206U2VDckV0@127.0.0.1:99999", "the port 99999 is out of range"),
    ("ss://YWVzLTI1Ni1nY206U2VDckV0@127.0.0.1", "the server has no port"),
    ("ss://YWVzLTI1Ni1nY206U2VDckV0", "no userinfo@ before the host"),
    ("ss://bm9wZTpTZUNyRXQ@127.0.0.1:1", "the method: unknown method 'nope'"),
    ("ss://YWVzLTI1Ni1nY206U2VDckV0@[::1:1", "unclosed [IPv6]"),
    ("http://YWVzLTI1Ni1nY206U2VDckV0@h:1", "it does not start with ss://"),
))
def test_bad_url_is_refused_naming_the_part(ss, url, part):
    rc, p = ss.run("ss-local", ["--server-url", url, "-l", "1080"])
    assert rc == 1
    err = p.stderr()
    assert "--server-url: ss:// URL: " in err and part in err, err
    assert "SeCrEt" not in err
