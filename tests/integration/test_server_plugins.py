# SPDX-License-Identifier: MIT
"""Clients with several servers, each with a SIP003 plugin of its own or
none (xorplugin.py, whose key must match on both sides): which plugin each
server gets, that a server reached through its plugin is never looked up,
and that a server whose plugin is down is left out until the plugin is up
again, with no connection failing meanwhile."""

import os
import re
import signal
import socket
import time

import sslib
from sslib import T, wait_for
from ssmulti import Srv, kill_in_turn, out_ip, peers, plugin_of, start_client, through
from test_plugin import XOR, read_record


def spread(local, echo, n):
    """n connections through ss-local, each checked; how many each server
    carried (by its outbound address)."""
    before = peers(echo)
    for _ in range(n):
        assert through(local.addr, echo) is not None
    after = peers(echo)
    return {ip: after.get(ip, 0) - before.get(ip, 0) for ip in after}


def test_each_server_with_its_own_plugin(ss, tmp_path):
    """Three servers: one behind a plugin with key 90 given in its entry
    (under a name no resolver knows), one taking the top-level plugin with
    key 7, one with no plugin (its entry turns the top-level one off). Every
    connection succeeds, so each plugin got its own options, and all three
    carry some. The first server's plugin gets the configured name and
    ss-local never looks that name up. Its plugin killed, connections go on
    through the other two without a failure, the server is logged as left
    out, and it carries connections again once its plugin is back."""
    record = str(tmp_path / "plugin-a.json")
    with sslib.EchoServer() as echo:
        a = Srv(ss, 0, extra=["--plugin", XOR, "--plugin-opts", "server;key=90"]).start()
        b = Srv(ss, 1, extra=["--plugin", XOR, "--plugin-opts", "server;key=7"]).start()
        c = Srv(ss, 2).start()
        dead_dns = sslib.free_port(kind=socket.SOCK_DGRAM)
        conf = {"plugin": XOR, "plugin_opts": "key=7",
                "servers": [a.entry(server="xor-a.test", plugin=XOR,
                                    plugin_opts="key=90;connect=127.0.0.1;record=" + record),
                            b.entry(),
                            c.entry(plugin="")]}
        local = start_client(ss, tmp_path, conf, extra=["-d", "127.0.0.1:%d" % dead_dns])
        # Until their plugins are up, only the server with none is picked.
        assert wait_for(lambda: local.program.output().count(") up after ") >= 2, T(10)), \
            local.program.output()[-2000:]

        seen = spread(local, echo, 60)
        for i in range(3):
            assert seen.get(out_ip(i), 0) > 0, "server %d carried nothing: %r" % (i, seen)
        rec = read_record(record)
        assert rec["env"]["SS_REMOTE_HOST"] == "xor-a.test"
        assert rec["env"]["SS_REMOTE_PORT"] == str(a.port)
        out = local.program.output()
        assert "xor-a.test" in out  # named in the server's log lines
        assert "cannot look up" not in out and "xor-a.test is at" not in out, out[-2000:]

        first = plugin_of(local.program, "SS_PLUGIN_OPTIONS", "key=90")
        os.kill(first, signal.SIGKILL)
        assert wait_for(lambda: "its plugin is down" in local.program.output(), T(5)), \
            local.program.output()[-2000:]
        assert re.search(r'server 1 "s0" xor-a\.test:%d: its plugin is down; not used until '
                         r'it is up again' % a.port, local.program.output())
        seen = spread(local, echo, 30)
        assert seen.get(out_ip(0), 0) == 0, "a server whose plugin is down was used: %r" % seen
        assert seen.get(out_ip(1), 0) > 0 and seen.get(out_ip(2), 0) > 0, seen

        assert wait_for(lambda: local.program.output().count("its plugin is up") >= 2, T(10)), \
            local.program.output()[-2000:]
        assert plugin_of(local.program, "SS_PLUGIN_OPTIONS", "key=90") != first
        t0 = time.monotonic()
        while not spread(local, echo, 3).get(out_ip(0), 0):
            assert time.monotonic() - t0 < T(10), "server 1 not used after its plugin came back"


def test_plugin_mode_per_server(ss, tmp_path):
    """"plugin_mode" in a server entry is that server's: with tcp_and_udp
    in the entry (tcp_only at the top), ss-local -u starts the plugin with
    TCP and UDP ports, while a server taking the top-level mode gets a
    plugin for TCP alone."""
    rec_a, rec_b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    conf = {"plugin": XOR, "plugin_mode": "tcp_only", "mode": "tcp_and_udp",
            "servers": [{"server": "127.0.0.1", "server_port": 1, "password": "x",
                         "plugin": XOR, "plugin_opts": "record=" + rec_a,
                         "plugin_mode": "tcp_and_udp"},
                        {"server": "127.0.0.1", "server_port": 2, "password": "y",
                         "plugin_opts": "record=" + rec_b}]}
    local = start_client(ss, tmp_path, conf)
    a, b = read_record(rec_a), read_record(rec_b)
    assert a["env"]["SS_REMOTE_PORT"] == "1" and b["env"]["SS_REMOTE_PORT"] == "2"
    for rec in (a, b):
        assert wait_for(lambda: "(pid %d) up" % rec["pid"] in local.program.output(), T(10))
    out = local.program.output()
    # plugin.c's line says what it waited for: UDP as well only for a.
    line_a = [l for l in out.splitlines() if "(pid %d) up" % a["pid"] in l][0]
    line_b = [l for l in out.splitlines() if "(pid %d) up" % b["pid"] in l][0]
    assert "udp" in line_a.lower(), line_a
    assert "udp" not in line_b.lower(), line_b


def test_plugins_and_servers_killed_mid_run(ss, tmp_path):
    """Three servers, each behind a plugin pair of its own (keys 11, 22,
    33), while eight applications open connection after connection through
    ss-local and exchange 64 KiB on each: in turn, one of ss-local's plugins
    is killed (SIGKILL; ss-local starts it again) and one ss-server is
    killed, its plugin with it, and started again. Every SOCKS5 request
    succeeds, no byte that comes back is wrong, and only connections a
    killed plugin or server carried end early."""
    keys = (11, 22, 33)
    with sslib.EchoServer() as echo:
        srvs = [Srv(ss, i, extra=["--plugin", XOR, "--plugin-opts", "server;key=%d" % k]).start()
                for i, k in enumerate(keys)]
        conf = {"servers": [s.entry(plugin=XOR, plugin_opts="key=%d" % k)
                            for s, k in zip(srvs, keys)]}
        local = start_client(ss, tmp_path, conf)
        assert wait_for(lambda: local.program.output().count(") up after ") >= 3, T(10)), \
            local.program.output()[-2000:]
        stats = kill_in_turn(local, echo, srvs)
        print("plugins and servers killed: %s" % stats)
