# SPDX-License-Identifier: MIT
"""Type=notify readiness (sd_notify(3)'s datagram protocol): READY=1 once
the listeners accept and the plugins are up, with MAINPID and STATUS;
STOPPING=1 on SIGTERM; NOTIFY_SOCKET is not passed on to plugins."""

import os
import shutil
import signal
import socket
import tempfile
import time

import pytest

import sslib
from sslib import T
from test_plugin import XOR, plugin_args, read_record


@pytest.fixture
def notify_dir():
    d = tempfile.mkdtemp(prefix="ssntf", dir="/tmp")
    yield d
    shutil.rmtree(d)


def bind(name):
    """The service manager's end: a datagram socket at name (a path, or
    '@' for the abstract namespace)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + name[1:] if name.startswith("@") else name)
    return s


def recv(sock, timeout):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        return None


def start(procs, bin_dir, name, extra=()):
    port = sslib.free_port()
    p = procs.start(os.path.join(bin_dir, "ss-server"),
                    ["-s", "127.0.0.1", "-p", port, "-k", "pw"] + list(extra),
                    env={"NOTIFY_SOCKET": name})
    return p, port


def start_ready(procs, bin_dir, name, sock, extra=()):
    """start() until the port chosen was free (other tests run beside
    these); returns (program, port, the first message)."""
    for _ in range(4):
        p, port = start(procs, bin_dir, name, extra)
        msg = recv(sock, T(10))
        if msg is None and p.wait_exit(1) is not None and \
                any(m in p.output() for m in procs.ADDR_IN_USE):
            p.expect_exit = True
            continue
        return p, port, msg
    raise AssertionError("no free port")


@pytest.mark.parametrize("kind", ("path", "abstract"))
def test_ready_then_stopping(procs, bin_dir, notify_dir, kind):
    name = (os.path.join(notify_dir, "n") if kind == "path"
            else "@ss-test-notify-%d-%d" % (os.getpid(), time.monotonic_ns()))
    with bind(name) as sock:
        p, port, msg = start_ready(procs, bin_dir, name, sock)
        assert msg is not None, p.describe()
        # Ready means ready: the port takes a connection at once.
        socket.create_connection(("127.0.0.1", port), timeout=T(2)).close()
        fields = dict(line.split("=", 1) for line in msg.split("\n"))
        assert fields["READY"] == "1", msg
        assert fields["MAINPID"] == str(p.pid), msg
        assert fields["STATUS"] == "listening on tcp 127.0.0.1:%d" % port, msg
        assert recv(sock, 0.3) is None  # once
        p.proc.send_signal(signal.SIGTERM)
        assert recv(sock, T(5)) == "STOPPING=1"
        assert p.wait_exit(T(5)) == 0, p.describe()
        p.stopped = True


def test_no_ready_while_the_plugin_is_down(procs, bin_dir, notify_dir):
    name = os.path.join(notify_dir, "n")
    with bind(name) as sock:
        p, _ = start(procs, bin_dir, name, plugin_args("server;nolisten", plugin=XOR))
        assert recv(sock, T(2)) is None, "READY=1 before the plugin was up"
        assert p.alive(), p.describe()


def test_ready_after_the_plugin_and_not_inherited(procs, bin_dir, notify_dir):
    name = os.path.join(notify_dir, "n")
    record = os.path.join(notify_dir, "plugin.json")
    with bind(name) as sock:
        t0 = time.monotonic()
        p, _, msg = start_ready(procs, bin_dir, name, sock,
                                plugin_args("server;delay=1;record=" + record, plugin=XOR))
        assert msg and msg.startswith("READY=1\n"), p.describe()
        assert time.monotonic() - t0 >= 1.0
        rec = read_record(record)
        assert "NOTIFY_SOCKET" not in rec["env"], rec["env"]
        assert "SS_REMOTE_PORT" in rec["env"]  # the record does list the environment


def test_bad_notify_socket_is_reported(ss):
    server = ss.server(env={"NOTIFY_SOCKET": "relative/path"})
    assert "NOTIFY_SOCKET='relative/path' is neither an absolute path nor '@name'" in \
        server.program.output()
