# SPDX-License-Identifier: MIT
"""No pacing on loopback: with a pacing congestion control (bbr) as the
system's, the relays switch the TCP sockets whose peer is on the same host
(the local application, a local target, a plugin) to one that does not pace,
and leave the sockets on real network paths alone.

Two network namespaces made here, both with bbr as their default, joined by a
veth pair: ss-server and a target on 127.0.0.1 in one, ss-local and the
application in the other, so that each relay has one loopback leg and one
leg over the veth. `ss -tinp` inside each namespace tells each socket's
congestion control. Traffic never leaves the namespaces."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import sslib
from sslib import T

SRV_ADDR, CLI_ADDR = "10.251.0.1", "10.251.0.2"
SERVER_PORT, LOCAL_PORT, TARGET_PORT = 8388, 1080, 7000

ECHO = textwrap.dedent("""
    import socket, threading
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", %d))
    s.listen()
    def echo(c):
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
        c.close()
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()
""" % TARGET_PORT)

# Through ss-local's SOCKS5 port to the target, one exchange, then the
# connection held open until stdin closes.
CLIENT = textwrap.dedent("""
    import socket, struct, sys
    c = socket.create_connection(("127.0.0.1", %d), timeout=10)
    c.sendall(b"\\x05\\x01\\x00")
    assert c.recv(2) == b"\\x05\\x00"
    c.sendall(b"\\x05\\x01\\x00\\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", %d))
    assert c.recv(10)[:2] == b"\\x05\\x00"
    c.sendall(b"ping")
    got = b""
    while len(got) < 4:
        got += c.recv(4)
    print(got.decode(), flush=True)
    sys.stdin.read()
""" % (LOCAL_PORT, TARGET_PORT))


def run(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True,
                          timeout=T(20))


def in_ns(ns, *args):
    return ["ip", "netns", "exec", ns] + list(args)


@pytest.fixture(scope="module")
def namespaces():
    if os.geteuid() != 0:
        pytest.fail("these tests create network namespaces and need root (CI runs as root)")
    tag = "%d" % os.getpid()
    srv, cli = "sscc-srv-" + tag, "sscc-cli-" + tag
    made = []
    try:
        for ns in (srv, cli):
            run("ip", "netns", "add", ns)
            made.append(ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            # the namespace's default: a congestion control that paces
            run("ip", "netns", "exec", ns, "sysctl", "-qw",
                "net.ipv4.tcp_congestion_control=bbr")
        run("ip", "link", "add", "sscc0-" + tag, "netns", srv, "type", "veth", "peer", "name",
            "sscc1-" + tag, "netns", cli)
        run("ip", "-n", srv, "addr", "add", SRV_ADDR + "/24", "dev", "sscc0-" + tag)
        run("ip", "-n", cli, "addr", "add", CLI_ADDR + "/24", "dev", "sscc1-" + tag)
        run("ip", "-n", srv, "link", "set", "sscc0-" + tag, "up")
        run("ip", "-n", cli, "link", "set", "sscc1-" + tag, "up")
        yield srv, cli
    finally:
        for ns in made:
            run("ip", "netns", "del", ns, check=False)


def wait_listening(ns, port):
    deadline = time.monotonic() + T(10)
    while time.monotonic() < deadline:
        out = run(*in_ns(ns, "ss", "-ltnH", "sport = :%d" % port)).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise AssertionError("nothing listens on port %d in %s" % (port, ns))


def congestion(ns, prog):
    """{(local, peer): congestion control} of prog's established sockets."""
    out = run(*in_ns(ns, "ss", "-tinpH", "state", "established")).stdout
    socks, key = {}, None
    for line in out.splitlines():
        if not line.startswith((" ", "\t")):
            f = line.split()
            key = (f[2], f[3]) if '"%s"' % prog in line else None
        elif key:
            socks[key] = line.split()[0]
    return socks


def relay_pair(namespaces, tmp, env=None, server_prefix=()):
    """Starts target, ss-server, ss-local and one held client connection;
    returns ({socket: cc} of ss-server, of ss-local) and the processes to
    stop."""
    srv, cli = namespaces
    env = dict(os.environ, **(env or {}))
    procs = []
    try:
        procs.append(subprocess.Popen(in_ns(srv, sys.executable, "-c", ECHO)))
        wait_listening(srv, TARGET_PORT)
        procs.append(subprocess.Popen(
            in_ns(srv, *server_prefix, os.path.join(tmp, "ss-server"), "-s", "0.0.0.0", "-p",
                  str(SERVER_PORT), "-k", "secret", "-m", "aes-256-gcm"),
            env=env))
        procs.append(subprocess.Popen(
            in_ns(cli, sslib.prog("ss-local"), "-s", SRV_ADDR, "-p", str(SERVER_PORT), "-b",
                  "127.0.0.1", "-l", str(LOCAL_PORT), "-k", "secret", "-m", "aes-256-gcm"),
            env=env))
        wait_listening(srv, SERVER_PORT)
        wait_listening(cli, LOCAL_PORT)
        client = subprocess.Popen(in_ns(cli, sys.executable, "-c", CLIENT),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(client)
        assert client.stdout.readline().strip() == "ping", "no echo through the relays"
        return congestion(srv, "ss-server"), congestion(cli, "ss-local"), procs
    except BaseException:
        stop(procs)
        raise


def stop(procs):
    for p in reversed(procs):
        if p.stdin:
            p.stdin.close()
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=T(10))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def legs(server, local):
    """The congestion control of the four relay legs, by name."""
    target = "127.0.0.1:%d" % TARGET_PORT
    out = {
        "server->target": [cc for (l, p), cc in server.items() if p == target],
        "server<-veth": [cc for (l, p), cc in server.items()
                         if l == "%s:%d" % (SRV_ADDR, SERVER_PORT)],
        "local->veth": [cc for (l, p), cc in local.items()
                        if p == "%s:%d" % (SRV_ADDR, SERVER_PORT)],
        "local<-app": [cc for (l, p), cc in local.items()
                       if l == "127.0.0.1:%d" % LOCAL_PORT],
    }
    for name, ccs in out.items():
        assert len(ccs) == 1, "%s: %r (ss-server %r, ss-local %r)" % (name, ccs, server, local)
    return {name: ccs[0] for name, ccs in out.items()}


@pytest.fixture
def bindir():
    """A copy of ss-server any user may run (pytest's own temporary
    directories are the owner's alone)."""
    d = tempfile.mkdtemp(prefix="sscc-")
    try:
        os.chmod(d, 0o755)
        shutil.copy2(sslib.prog("ss-server"), d)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_loopback_legs_do_not_pace(namespaces, bindir):
    server, local, procs = relay_pair(namespaces, bindir)
    try:
        got = legs(server, local)
    finally:
        stop(procs)
    assert got == {"server->target": "cubic", "server<-veth": "bbr", "local->veth": "bbr",
                   "local<-app": "cubic"}


def test_switch_off_leaves_every_socket_alone(namespaces, bindir):
    server, local, procs = relay_pair(namespaces, bindir, env={"SS_NO_LOOPBACK_CC": "1"})
    try:
        got = legs(server, local)
    finally:
        stop(procs)
    assert set(got.values()) == {"bbr"}, got


def test_unprivileged_falls_back(namespaces, bindir):
    """A user may set only what net.ipv4.tcp_allowed_congestion_control
    lists, which always has reno: cubic where it is allowed, reno where
    not, never the pacing one."""
    allowed = open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read().split()
    server, local, procs = relay_pair(
        namespaces, bindir,
        server_prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    try:
        got = legs(server, local)
    finally:
        stop(procs)
    assert got["server->target"] == ("cubic" if "cubic" in allowed else "reno"), got
    assert got["server<-veth"] == "bbr", got
