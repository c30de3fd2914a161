# SPDX-License-Identifier: MIT
"""SIP003 and SIP003u plugins, with xorplugin.py (a plugin of our own that
XORs every byte, so that traffic that goes around it fails): the traffic,
what the plugin is started with, process care (its group, its output in our
log, restarts, SIGTERM, SIGKILL to us, -f) and plugins that cannot run.
The real plugins (simple-obfs, v2ray-plugin) are in tests/interop."""

import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time

import pytest

import sslib
import ssudp
from sslib import T, alive, children, proc_state, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
XOR = os.path.join(HERE, "xorplugin.py")
PROGS = ("ss-local", "ss-server", "ss-tunnel")


def plugin_args(opts="", mode=None, plugin=XOR):
    args = ["--plugin", plugin, "--plugin-opts", opts]
    return args + (["--plugin-mode", mode] if mode else [])


def server_opts(extra=""):
    return "server" + (";" + extra if extra else "")


def read_record(path, timeout=None):
    def load():
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None
    rec = wait_for(load, T(10) if timeout is None else timeout)
    assert rec, "the plugin did not write %s" % path
    return rec


def plugin_pid(program, timeout=None, ups=1):
    """The pid of the program's plugin (its one live child), once the
    program has logged it up ups times."""
    timeout = T(10) if timeout is None else timeout
    assert wait_for(lambda: up_count(program) >= ups, timeout), program.describe()

    def find():
        kids = [p for p, st in children(program.pid) if st != "Z"]
        return kids[0] if len(kids) == 1 else None
    pid = wait_for(find, timeout)
    assert pid, "%s has no plugin child: %r" % (program.name, children(program.pid))
    return pid


def up_count(program):
    return program.output().count(") up after ")


def pair(ss, via, target, server_kw=None, client_kw=None):
    return ss.path(via, target, server_kw=dict({"extra": plugin_args(server_opts())},
                                               **(server_kw or {})),
                   client_kw=dict({"extra": plugin_args()}, **(client_kw or {})))


# --- traffic ---------------------------------------------------------------

@pytest.mark.parametrize("via", ("socks", "tunnel"))
def test_tcp_goes_through_the_plugins(ss, echo, blob, via):
    """ss-local and ss-tunnel with the plugin against ss-server with the
    plugin: 2 MiB echoed byte for byte; a client that skips the plugin gets
    nothing back from the same server."""
    open_, server, client = pair(ss, via, echo.addr)
    s = open_()
    try:
        sslib.echo_check(s, blob(2 << 20))
    finally:
        s.close()
    plain = ss.local(server) if via == "socks" else ss.tunnel(server, echo.addr)
    if via == "socks":
        s = sslib.socks5_connect(plain.addr, *echo.addr)
    else:
        s = sslib.connect(*plain.addr)
    try:
        s.sendall(b"x" * 1000)
        state, got = sslib.wait_closed(s, T(1.5))
        assert got == b"", "bytes came back around the plugin: %r" % got[:40]
    finally:
        s.close()


def test_udp_goes_through_the_plugins_with_tcp_and_udp(ss, blob):
    """SIP003u: with plugin_mode tcp_and_udp the datagrams of ss-tunnel -u
    and ss-server -u go through both plugins (bytes compared); a client
    whose plugin carries TCP only sends its datagrams around it and gets no
    answer from that server."""
    with ssudp.UdpEcho() as uecho:
        server = ss.server(extra=["-u"] + plugin_args(server_opts(), "tcp_and_udp"))
        tunnel = ss.tunnel(server, uecho.addr, extra=["-u"] + plugin_args("", "tcp_and_udp"))
        with ssudp.udp_socket() as s:
            for n in (1, 1000, 8000):
                data = blob(n)
                got = wait_for(lambda: _try_udp(s, tunnel.addr, data), T(5), step=0)
                assert got == data, "datagram of %d bytes came back as %r" % (n, got and got[:20])
        around = ss.tunnel(server, uecho.addr, extra=["-u"] + plugin_args("", "tcp_only"))
        with ssudp.udp_socket() as s:
            s.sendto(b"around the plugin", around.addr)
            ssudp.recv_nothing(s, T(1))


def _try_udp(sock, addr, data):
    try:
        return ssudp.tunnel_exchange(sock, addr, data, timeout=0.5)
    except socket.timeout:
        return None


def test_udp_goes_straight_with_tcp_only(ss, blob):
    """With the default plugin_mode (tcp_only) UDP goes to the server
    directly, as libev does: a client without any plugin talks UDP to
    ss-server whose plugin carries TCP."""
    with ssudp.UdpEcho() as uecho:
        server = ss.server(extra=["-u"] + plugin_args(server_opts()))
        tunnel = ss.tunnel(server, uecho.addr, extra=["-u"])
        with ssudp.udp_socket() as s:
            data = blob(1200)
            got = wait_for(lambda: _try_udp(s, tunnel.addr, data), T(5), step=0)
            assert got == data


# --- what the plugin is given ---------------------------------------------

@pytest.mark.parametrize("prog", PROGS)
def test_plugin_environment_and_process(ss, echo, tmp_path, prog):
    """The SIP003 variables, no arguments, its own process group, a child
    of ours, stdin /dev/null, stdout and stderr one pipe, nothing else of
    ours inherited (no socket), and its output in our log with its name."""
    rec_path = str(tmp_path / "record.json")
    opts = "record=%s;a=b c" % rec_path
    if prog == "ss-server":
        opts = "server;" + opts
        server = ss.server(extra=plugin_args(opts))
        program, remote, port = server.program, "127.0.0.1", server.port
    else:
        server = ss.server()
        client = (ss.local(server, extra=plugin_args(opts)) if prog == "ss-local" else
                  ss.tunnel(server, echo.addr, extra=plugin_args(opts)))
        program, remote, port = client.program, server.host, server.port
    rec = read_record(rec_path)
    env = rec["env"]
    assert env["SS_REMOTE_HOST"] == remote
    assert env["SS_REMOTE_PORT"] == str(port)
    assert env["SS_LOCAL_HOST"] == "127.0.0.1"
    assert 0 < int(env["SS_LOCAL_PORT"]) < 65536
    assert env["SS_PLUGIN_OPTIONS"] == opts
    assert rec["argv"] == [XOR], rec["argv"]
    assert rec["ppid"] == program.pid
    assert rec["pgid"] == rec["pid"], "not in a process group of its own"
    fds = rec["fds"]
    assert fds["0"] == "/dev/null"
    assert fds["1"] == fds["2"] and fds["1"].startswith("pipe:"), fds
    leaked = {k: v for k, v in fds.items() if int(k) > 2 and
              (v.startswith(("socket:", "pipe:", "anon_inode:")))}
    assert not leaked, "descriptors of ours in the plugin: %r" % leaked
    line = "plugin xorplugin.py[%d]: xorplugin: %s: listening on" % (
        rec["pid"], "server" if prog == "ss-server" else "client")
    assert wait_for(lambda: line in program.output(), T(5)), program.output()


def test_plugin_given_as_a_command_line(ss, echo, blob, tmp_path):
    """A plugin string with words after the file (as libev allows: it runs
    every plugin through sh -c "exec PLUGIN") gives the plugin those words
    as its arguments, with the plugin itself as the process we watch; the
    traffic goes through it."""
    rec_path = str(tmp_path / "record.json")
    server = ss.server(extra=plugin_args(server_opts()))
    command = "%s --first 'two words'" % XOR
    client = ss.tunnel(server, echo.addr, extra=plugin_args("record=%s" % rec_path,
                                                            plugin=command))
    rec = read_record(rec_path)
    assert rec["argv"] == [XOR, "--first", "two words"], rec["argv"]
    assert rec["ppid"] == client.program.pid, "the shell did not exec the plugin"
    assert rec["pgid"] == rec["pid"]
    s = socket.create_connection(client.addr, timeout=T(10))
    try:
        sslib.echo_check(s, blob(256 << 10))
    finally:
        s.close()
    assert "plugin xorplugin.py[%d]: " % rec["pid"] in client.program.output()


# --- process care ---------------------------------------------------------

def test_plugin_killed_mid_run_is_restarted(ss, blob):
    """SIGKILL to ss-local's plugin in the middle of transfers: each
    connection gets the bytes it was sent, or a prefix of them and an end,
    never other bytes; the plugin is reaped (no zombie), started again
    after 0.5 s as the man page says, and a connection opened while it is
    down is held, then served."""
    echo = sslib.EchoServer()
    try:
        open_, server, client = pair(ss, "socks", echo.addr)
        first = plugin_pid(client.program)
        data = blob(8 << 20)
        results = [None] * 4
        progress = [0] * 4

        def transfer(i):
            s = open_()
            got = bytearray()
            try:
                sender = threading.Thread(target=_send_quietly, args=(s, data), daemon=True)
                sender.start()
                s.settimeout(T(10))
                while True:
                    try:
                        chunk = s.recv(1 << 20)
                    except OSError:
                        break
                    if not chunk:
                        break
                    got += chunk
                    progress[i] = len(got)
            finally:
                s.close()
            results[i] = bytes(got)

        threads = [threading.Thread(target=transfer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        # The kill lands while every transfer is under way through the
        # plugin (bytes have come back), not before one has begun.
        assert wait_for(lambda: all(progress), T(10)), progress
        os.kill(first, signal.SIGKILL)
        t0 = time.monotonic()
        # Once ss-local knows, a connection opened waits for the plugin to
        # come back.
        assert wait_for(lambda: "starting it again" in client.program.output(), T(5))
        held = open_()
        try:
            sslib.small_exchange(held, 5000)
        finally:
            held.close()
        waited = time.monotonic() - t0
        for t in threads:
            t.join(T(30))
        for i, got in enumerate(results):
            assert got is not None, "transfer %d did not end" % i
            assert got == data[:len(got)], "transfer %d: wrong bytes after %d" % (
                i, next(k for k in range(len(got)) if got[k] != data[k]))
        assert any(len(g) < len(data) for g in results), "the kill cut no connection"
        second = plugin_pid(client.program, ups=2)
        assert second != first
        assert proc_state(first) is None, "the killed plugin is left as %s" % proc_state(first)
        assert not [p for p, st in children(client.program.pid) if st == "Z"]
        out = client.program.output()
        assert "plugin xorplugin.py was killed by signal 9 (Killed); starting it again in 0.5 s" \
            in out, out
        assert waited >= 0.5, "served %.2f s after the kill: before the restart" % waited
        s = open_()
        try:
            sslib.echo_check(s, blob(1 << 20))
        finally:
            s.close()
    finally:
        echo.close()


def _send_quietly(sock, data):
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.mark.parametrize("prog", ("ss-local", "ss-server"))
def test_sigterm_stops_the_plugin_and_its_group(ss, prog):
    """SIGTERM to us: the plugin and what it started in its group are gone
    when we exit 0, within 2 s."""
    opts = "child" + (";server" if prog == "ss-server" else "")
    if prog == "ss-server":
        program = ss.server(extra=plugin_args(opts)).program
    else:
        program = ss.local(ss.server(), extra=plugin_args(opts)).program
    pid = plugin_pid(program)
    line = wait_for(lambda: [l for l in program.output().splitlines()
                             if "started a process of its own" in l], T(5))
    assert line, program.output()
    grandchild = int(line[0].rsplit(":", 1)[1])
    assert alive(grandchild)
    t0 = time.monotonic()
    rc = program.terminate()
    took = time.monotonic() - t0
    assert rc == 0, program.describe()
    assert took < T(2), "stopping took %.2f s" % took
    assert not alive(pid), "the plugin outlived us"
    assert wait_for(lambda: not alive(grandchild), T(2)), "the plugin's child outlived us"


def test_plugin_ignoring_sigterm_is_killed_after_the_grace(ss):
    program = ss.local(ss.server(), extra=plugin_args("ignore_term")).program
    pid = plugin_pid(program)
    t0 = time.monotonic()
    rc = program.terminate(timeout=T(10))
    took = time.monotonic() - t0
    assert rc == 0, program.describe()
    assert 2.8 <= took < T(5), "stopping took %.2f s, not the 3 s grace" % took
    assert not alive(pid)


@pytest.mark.parametrize("prog", ("ss-local", "ss-server"))
def test_sigkill_to_us_takes_the_plugin(ss, prog):
    """PR_SET_PDEATHSIG: the plugin does not outlive a SIGKILL to us."""
    if prog == "ss-server":
        program = ss.server(extra=plugin_args("server")).program
    else:
        program = ss.local(ss.server(), extra=plugin_args()).program
    pid = plugin_pid(program)
    program.kill()
    assert wait_for(lambda: not alive(pid), T(2)), "the plugin outlived SIGKILL to us"


def test_restarts_that_fail_end_the_program(ss, tmp_path):
    """A plugin that comes up once and then fails at every restart: after
    five restarts in a row the program exits 1 naming it."""
    program = ss.local(ss.server(),
                       extra=plugin_args("once=%s" % (tmp_path / "ran"))).program
    os.kill(plugin_pid(program), signal.SIGKILL)
    program.expect_exit = True
    rc = program.wait_exit(T(40))
    assert rc == 1, program.describe()
    out = program.output()
    assert out.count("starting it again in") == 5, out
    assert "plugin xorplugin.py given up after 5 restarts in a row failed: plugin " \
        "xorplugin.py exited with status 4 before opening TCP port" in out, out


def test_daemon_waits_for_the_plugin(ss, echo, tmp_path):
    """-f: the foreground process exits 0 once the plugin is up; the plugin
    is the daemon's child; SIGTERM to the daemon stops both."""
    pidfile = tmp_path / "ss.pid"
    server = ss.server(extra=plugin_args(server_opts()))
    port = sslib.free_port()
    rc, p = ss.run("ss-local", ["-s", server.host, "-p", server.port, "-l", port,
                                "-k", server.password, "-m", server.method,
                                "-f", str(pidfile)] + plugin_args(), timeout=T(10))
    assert rc == 0, p.describe()
    daemon = int(pidfile.read_text())
    try:
        kids = [k for k, st in children(daemon) if st != "Z"]
        assert len(kids) == 1, kids
        s = sslib.socks5_connect(("127.0.0.1", port), *echo.addr)
        try:
            sslib.small_exchange(s)
        finally:
            s.close()
        os.kill(daemon, signal.SIGTERM)
        assert wait_for(lambda: not alive(daemon) and not alive(kids[0]), T(5))
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_daemon_reports_a_plugin_that_fails(ss, tmp_path):
    pidfile = tmp_path / "ss.pid"
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "1", "-l", sslib.free_port(),
                                "-k", "pw", "-f", str(pidfile)] + plugin_args("exit=3"),
                   timeout=T(10))
    assert rc == 1, p.describe()
    assert "plugin xorplugin.py exited with status 3 before opening TCP port" in p.stderr()
    assert not pidfile.exists()


# --- plugins that cannot run ----------------------------------------------

def _bad(ss, prog, plugin, opts="", timeout=None):
    if prog == "ss-server":
        args = ["-s", "127.0.0.1", "-p", sslib.free_port(), "-k", "pw"]
        opts = "server;" + opts
    else:
        args = ["-s", "127.0.0.1", "-p", "1", "-l", sslib.free_port(), "-k", "pw"]
        if prog == "ss-tunnel":
            args += ["-L", "127.0.0.1:9"]
    t0 = time.monotonic()
    rc, p = ss.run(prog, args + plugin_args(opts, plugin=plugin), timeout=timeout)
    return rc, p, time.monotonic() - t0


@pytest.mark.parametrize("prog", ("ss-local", "ss-server"))
def test_plugin_not_found(ss, prog):
    rc, p, _ = _bad(ss, prog, "ss-no-such-plugin")
    assert rc == 1, p.describe()
    assert "plugin 'ss-no-such-plugin': not found in PATH or the working directory" in \
        p.stderr(), p.stderr()


def test_plugin_command_line_not_found(ss):
    rc, p, _ = _bad(ss, "ss-tunnel", "ss-no-such-plugin --with-an-argument")
    assert rc == 1, p.describe()
    assert "plugin 'ss-no-such-plugin': not found in PATH or the working directory" in \
        p.stderr(), p.stderr()


def test_plugin_not_executable(ss, tmp_path):
    path = tmp_path / "plugin"
    path.write_text("#!/bin/sh\n")
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    rc, p, _ = _bad(ss, "ss-local", str(path))
    assert rc == 1, p.describe()
    assert "plugin '%s': it is not executable" % path in p.stderr(), p.stderr()


@pytest.mark.parametrize("prog", ("ss-local", "ss-server"))
def test_plugin_that_exits_at_once(ss, prog):
    rc, p, _ = _bad(ss, prog, XOR, "exit=3")
    assert rc == 1, p.describe()
    assert "plugin xorplugin.py exited with status 3 before opening TCP port" in p.stderr()
    assert "its last line: xorplugin: exiting at once with status 3" in p.stderr()


def test_plugin_that_never_opens_its_port(ss):
    rc, p, took = _bad(ss, "ss-tunnel", XOR, "nolisten", timeout=T(20))
    assert rc == 1, p.describe()
    assert "plugin xorplugin.py did not open TCP port" in p.stderr()
    assert "within 10 s, and was killed; its last line: xorplugin: never listening" in \
        p.stderr(), p.stderr()
    assert 10 <= took < T(13), "gave up after %.1f s" % took


def test_plugin_port_is_never_our_own(tmp_path):
    """The port picked for a client's plugin is free when picked, and so is
    the program's own listening port until it binds it: in a namespace of
    its own whose ephemeral range holds just two ports, one of them ss-local's
    -l (the one the kernel hands out for port 0 while both are free: it
    prefers one parity for bind), the plugin must get the other one."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a network namespace and needs root (CI runs as root)")
    ns = "ssport-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        "net.ipv4.ip_local_port_range=40001 40002"], check=True)
        for i in range(4):
            rec_path = str(tmp_path / ("record%d.json" % i))
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, sslib.prog("ss-local"), "-s", "127.0.0.1", "-p",
                 "8388", "-l", "40002", "-k", "secret", "-m", "aes-256-gcm", "--plugin", XOR,
                 "--plugin-opts", "key=0;record=%s" % rec_path],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                rec = read_record(rec_path)
            finally:
                p.terminate()
                out = p.communicate(timeout=T(10))[0].decode(errors="replace")
            assert rec["env"]["SS_LOCAL_PORT"] == "40001", (rec["env"], out)
            assert "listening on 127.0.0.1:40002" in out, out
    finally:
        subprocess.run(["ip", "netns", "del", ns])
