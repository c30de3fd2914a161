# SPDX-License-Identifier: MIT
"""The units of debian/ run for real: under systemd (booted in a container by
conftest.py), with their hardening, a configuration file kept 0600 root, and
traffic through an ss-local / ss-server pair, with and without simple-obfs."""

import json
import os
import re
import socket
import time

import pytest

import sslib

METHOD = "aes-256-gcm"
CAP_NET_BIND_SERVICE = 1 << 10
CAP_NET_ADMIN = 1 << 12
# systemd's range for DynamicUser= (systemd.exec(5), "DynamicUser=").
DYNAMIC_UIDS = range(61184, 65519 + 1)
MAX_EXPOSURE = 2.0
PAYLOAD = 1 << 20


@pytest.fixture
def units(box):
    """Starts units by name and stops them (and forgets their failures)
    when the test ends."""
    started = []

    def start(unit, check=True):
        started.append(unit)
        r = box.systemctl("start", unit, check=False)
        if check and r.returncode != 0:
            pytest.fail("systemctl start %s exited with %d: %s%s"
                        % (unit, r.returncode, r.stderr, unit_report(box, unit)))
        return r

    yield start
    for unit in started:
        box.systemctl("stop", unit, check=False)
        box.systemctl("reset-failed", unit, check=False)


def write_config(box, name, cfg):
    box.write("/etc/shadowsocks-c/%s.json" % name, json.dumps(cfg, indent=1) + "\n", 0o600)


def pair_configs(server_port, local_port, plugin=None):
    password = sslib.random_password()
    server = {"server": "127.0.0.1", "server_port": server_port, "password": password,
              "method": METHOD}
    local = dict(server, local_address="127.0.0.1", local_port=local_port)
    if plugin:
        server.update(plugin=plugin[0], plugin_opts=plugin[1])
        local.update(plugin=plugin[2], plugin_opts=plugin[3])
    return server, local


def unit_report(box, unit):
    r = box.run(["journalctl", "--no-pager", "-n", "30", "-u", unit], check=False)
    return "\n" + r.stdout + r.stderr


def connect_once(box, port, unit):
    """One connection attempt to port in the container, no retry: whoever
    calls it right after `systemctl start` checks that start waited."""
    with box.netns():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError as e:
            pytest.fail("nothing accepts on 127.0.0.1:%d right after systemctl start %s "
                        "returned: %s%s" % (port, unit, e, unit_report(box, unit)))


def wait_accepts(box, port, unit, timeout=10):
    deadline = time.monotonic() + timeout
    with box.netns():
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                return
            except OSError as e:
                if time.monotonic() > deadline:
                    pytest.fail("nothing accepts on 127.0.0.1:%d of %s after %ds: %s%s"
                                % (port, unit, timeout, e, unit_report(box, unit)))
            time.sleep(0.05)


def relay_echo(box, socks_port):
    """Bytes through ss-local -> ss-server -> an echo server, all in the
    container, and back, compared."""
    data = os.urandom(PAYLOAD)
    with box.netns():
        with sslib.EchoServer() as echo:
            s = sslib.socks5_connect(("127.0.0.1", socks_port), "127.0.0.1", echo.port)
            with s:
                sslib.echo_check(s, data)


def show(box, unit, prop):
    return box.systemctl("show", "-p", prop, "--value", unit).stdout.strip()


def proc_status(box, pid):
    text = box.run(["cat", "/proc/%d/status" % pid]).stdout
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def unit_pids(box, unit):
    """PIDs (as the container sees them) and their names, of the unit's cgroup."""
    cg = show(box, unit, "ControlGroup")
    pids = box.run(["cat", "/sys/fs/cgroup%s/cgroup.procs" % cg]).stdout.split()
    return {int(p): box.run(["cat", "/proc/%s/comm" % p]).stdout.strip() for p in pids}


def check_confined(box, pid, what, caps=CAP_NET_BIND_SERVICE):
    """pid runs as a dynamic user, with the capabilities caps and no other,
    without new privileges and under a system call filter."""
    st = proc_status(box, pid)
    uids = [int(u) for u in st["Uid"].split()]
    gids = [int(g) for g in st["Gid"].split()]
    assert len(set(uids)) == 1 and uids[0] in DYNAMIC_UIDS, \
        "%s runs as uid %s, not as one dynamic user" % (what, st["Uid"])
    assert len(set(gids)) == 1 and gids[0] != 0, "%s runs as gid %s" % (what, st["Gid"])
    for key in ("CapEff", "CapPrm", "CapBnd"):
        assert int(st[key], 16) == caps, \
            "%s: %s is %s, not %#x" % (what, key, st[key], caps)
    assert int(st["CapAmb"], 16) & ~caps == 0, \
        "%s: ambient capabilities %s" % (what, st["CapAmb"])
    assert st["NoNewPrivs"].strip() == "1", "%s may gain privileges" % what
    assert st["Seccomp"].strip() == "2", "%s runs without a system call filter" % what
    return uids[0]


def exposure(box, unit):
    out = box.run(["systemd-analyze", "security", "--no-pager", unit]).stdout
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", out)
    assert m, "no exposure level in systemd-analyze security's output:\n" + out
    return float(m.group(1))


def check_unit(box, unit, caps=CAP_NET_BIND_SERVICE):
    """The running unit's main process is confined and systemd rates the
    unit's exposure low enough."""
    pid = int(show(box, unit, "MainPID"))
    assert pid > 0, unit + " has no main process"
    check_confined(box, pid, unit, caps)
    level = exposure(box, unit)
    assert level <= MAX_EXPOSURE, "%s: exposure %.1f > %.1f" % (unit, level, MAX_EXPOSURE)


def program_errors(box, unit, program):
    """Messages at priority err or worse that program logged in unit."""
    out = box.run(["journalctl", "--no-pager", "-o", "json", "-p", "err", "-u", unit]).stdout
    entries = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [e.get("MESSAGE", "") for e in entries if e.get("SYSLOG_IDENTIFIER") == program]


def test_units_wait_for_readiness(box):
    """start must return only once the program listens: Type=notify."""
    for unit in ("ss-server@x.service", "ss-local@x.service", "ss-tunnel@x.service",
                 "ss-redir@x.service"):
        assert show(box, unit, "Type") == "notify", unit


def test_pair_relays_right_after_start(box, units):
    server, local = pair_configs(8388, 1080)
    write_config(box, "pair-server", server)
    write_config(box, "pair-local", local)
    units("ss-server@pair-server")
    connect_once(box, 8388, "ss-server@pair-server")
    units("ss-local@pair-local")
    connect_once(box, 1080, "ss-local@pair-local")
    relay_echo(box, 1080)

    check_unit(box, "ss-server@pair-server")
    check_unit(box, "ss-local@pair-local")


def test_tunnel_forwards_right_after_start(box, units):
    server, tunnel = pair_configs(8391, 1082)
    write_config(box, "fwd-server", server)
    units("ss-server@fwd-server")
    connect_once(box, 8391, "ss-server@fwd-server")
    with box.netns():
        with sslib.EchoServer() as echo:
            tunnel["tunnel_address"] = "127.0.0.1:%d" % echo.port
            write_config(box, "fwd-tunnel", tunnel)
            units("ss-tunnel@fwd-tunnel")
            connect_once(box, 1082, "ss-tunnel@fwd-tunnel")
            with socket.create_connection(("127.0.0.1", 1082), timeout=5) as s:
                sslib.echo_check(s, os.urandom(PAYLOAD))
    check_unit(box, "ss-tunnel@fwd-tunnel")


def test_redir_takes_tproxy_in_its_sandbox(box, units):
    """ss-redir@ with TPROXY for TCP and UDP: the transparent sockets need
    CAP_NET_ADMIN, which the unit grants (and nothing more); a connection
    that no rule sent is closed, with a line in the journal."""
    server, redir = pair_configs(8392, 1083)
    redir.update(local_address="::", tcp_tproxy=True, mode="tcp_and_udp")
    write_config(box, "tp-redir", redir)
    units("ss-redir@tp-redir")
    with box.netns():
        with socket.create_connection(("127.0.0.1", 1083), timeout=5) as s:
            s.settimeout(5)
            try:
                assert s.recv(16) == b""
            except ConnectionResetError:
                pass
    deadline = time.monotonic() + 5
    while "not sent here by a TPROXY rule" not in unit_report(box, "ss-redir@tp-redir"):
        assert time.monotonic() < deadline, unit_report(box, "ss-redir@tp-redir")
        time.sleep(0.1)
    assert "listening on UDP [::]:1083" in unit_report(box, "ss-redir@tp-redir")
    check_unit(box, "ss-redir@tp-redir", caps=CAP_NET_BIND_SERVICE | CAP_NET_ADMIN)


def test_pair_relays_through_simple_obfs(box, units):
    server, local = pair_configs(8389, 1081, plugin=(
        "obfs-server", "obfs=http", "obfs-local", "obfs=http;obfs-host=www.example.com"))
    write_config(box, "obfs-server", server)
    write_config(box, "obfs-local", local)
    units("ss-server@obfs-server")
    units("ss-local@obfs-local")
    # The plugin listens on server_port; the program's readiness is its own.
    wait_accepts(box, 8389, "ss-server@obfs-server")
    wait_accepts(box, 1081, "ss-local@obfs-local")
    relay_echo(box, 1081)

    for unit, plugin in (("ss-server@obfs-server", "obfs-server"),
                         ("ss-local@obfs-local", "obfs-local")):
        pids = unit_pids(box, unit)
        main = int(show(box, unit, "MainPID"))
        plugin_pids = [p for p, name in pids.items() if name == plugin]
        assert plugin_pids, "%s: no %s in the unit's cgroup: %s" % (unit, plugin, pids)
        uid = check_confined(box, main, unit)
        assert check_confined(box, plugin_pids[0], plugin + " of " + unit) == uid


@pytest.mark.parametrize("program", ["ss-server", "ss-local"])
def test_broken_config_fails_start_and_is_logged(box, units, program):
    name = "broken-" + program
    box.write("/etc/shadowsocks-c/%s.json" % name, '{"server_port": 8390, "password": \n', 0o600)
    unit = "%s@%s" % (program, name)
    r = units(unit, check=False)
    assert r.returncode != 0, "systemctl start %s succeeded with a broken file" % unit
    # The journal takes the program's stderr through a stream: give it a
    # moment. Only the program's own lines count: systemd's "Failed to start"
    # is at err too, and the unit's description may well name the .json file.
    deadline = time.monotonic() + 10
    while True:
        errors = program_errors(box, unit, program)
        if any(re.search("json", m, re.I) for m in errors) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert any(re.search("json", m, re.I) for m in errors), \
        "no error about the file from %s at priority err in the journal of %s: %r\nall of it:\n%s" \
        % (program, unit, errors, box.run(["journalctl", "--no-pager", "-u", unit]).stdout)


def test_reload_keeps_the_process_and_relays(box, units):
    """systemctl reload: ExecReload sends SIGHUP; the same process reads its
    configuration again and goes on relaying."""
    server, local = pair_configs(8393, 1084)
    write_config(box, "reload-server", server)
    write_config(box, "reload-local", local)
    units("ss-server@reload-server")
    units("ss-local@reload-local")
    connect_once(box, 8393, "ss-server@reload-server")
    connect_once(box, 1084, "ss-local@reload-local")
    for unit in ("ss-server@reload-server", "ss-local@reload-local"):
        pid = show(box, unit, "MainPID")
        r = box.run(["systemctl", "reload", unit], check=False)
        assert r.returncode == 0, "%s: reload failed: %s" % (unit, r.stderr)
        deadline = time.monotonic() + 10
        while "configuration reloaded" not in box.run(
                ["journalctl", "--no-pager", "-u", unit]).stdout:
            assert time.monotonic() < deadline, "%s: no reload in the journal" % unit
            time.sleep(0.2)
        assert show(box, unit, "MainPID") == pid, unit
        assert show(box, unit, "ActiveState") == "active", unit
    relay_echo(box, 1084)
