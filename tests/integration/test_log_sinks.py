# SPDX-License-Identifier: MIT
"""Where log lines go: stderr with a time stamp; syslog after -f detaches
(as shadowsocks-libev does) or with "use_syslog"; systemd's journal, with
sd-daemon priority prefixes, when JOURNAL_STREAM names stderr.

Syslog lines are RFC 3164 datagrams on /dev/log; SS_SYSLOG_SOCKET points
the programs at another socket, which these tests bind themselves (binding
/dev/log would take the machine's syslog away)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import sslib
from sslib import T, alive, wait_for

METHOD = "aes-256-gcm"


@pytest.fixture
def syslog_sock():
    """A unix datagram socket standing in for /dev/log, at a short path (a
    socket path holds at most 107 bytes)."""
    d = tempfile.mkdtemp(prefix="sslog", dir="/tmp")
    path = os.path.join(d, "log")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    yield s, path
    s.close()
    shutil.rmtree(d)


def recv_until(sock, pred, timeout):
    """Datagrams received until one satisfies pred (returned with the
    list) or the time is up (None)."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            msg = sock.recv(4096).decode()
        except socket.timeout:
            break
        got.append(msg)
        if pred(msg):
            return msg, got
    return None, got


def junk(port):
    with sslib.connect("127.0.0.1", port) as s:
        s.sendall(os.urandom(sslib.SALT_LEN[METHOD] + 2 + sslib.TAG_LEN + 40))
        sslib.wait_closed(s, 0.3)


def test_daemon_logs_to_syslog(procs, bin_dir, syslog_sock, tmp_path):
    sock, path = syslog_sock
    pidfile = tmp_path / "ss.pid"
    port = sslib.free_port()
    p = procs.start(os.path.join(bin_dir, "ss-server"),
                    ["-s", "127.0.0.1", "-p", port, "-m", METHOD, "-k", "pw", "-f", pidfile],
                    env={"SS_SYSLOG_SOCKET": path})
    p.expect_exit = True
    assert p.wait_exit(T(10)) == 0, p.describe()
    daemon = int(pidfile.read_text())
    try:
        # daemon.notice: 3 * 8 + 5
        msg, got = recv_until(sock, lambda m: "started" in m, T(5))
        assert msg, got
        assert re.match(r"<29>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d ss-server\[%d\]: "
                        r"ss-server \S+ started, method %s" % (daemon, METHOD), msg), msg
        junk(port)
        msg, got = recv_until(sock, lambda m: "refused" in m, T(5))
        assert msg and msg.startswith("<28>"), got  # daemon.warning
        assert re.search(r"ss-server\[%d\]: server 127\.0\.0\.1:\d+: refused: "
                         r"authentication failed" % daemon, msg), msg
        # Only what came before the fork is on the terminal.
        assert " started" not in p.stderr() and "refused" not in p.stderr(), p.stderr()
        os.kill(daemon, signal.SIGTERM)
        assert wait_for(lambda: not alive(daemon), T(5))
        msg, got = recv_until(sock, lambda m: "shutting down" in m, T(2))
        assert msg, got
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_use_syslog_in_the_foreground(ss, syslog_sock, tmp_path):
    sock, path = syslog_sock
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"use_syslog": True}))
    server = ss.server(method=METHOD, extra=["-c", str(conf)],
                       env={"SS_SYSLOG_SOCKET": path})
    msg, got = recv_until(sock, lambda m: "started" in m, T(5))
    assert msg and msg.startswith("<29>"), got
    assert "ss-server[%d]: " % server.program.pid in msg, msg
    assert " started" not in server.program.stderr(), server.program.stderr()


def _journal_run(procs, bin_dir, tmp_path, matching):
    """ss-server with stderr on a file and JOURNAL_STREAM naming that file
    (matching) or another one; returns (program, port, that file)."""
    err = tmp_path / "stderr"
    other = tmp_path / "other"
    err.write_bytes(b"")
    other.write_bytes(b"")
    st = os.stat(err if matching else other)
    port = sslib.free_port()
    args = ["-s", "127.0.0.1", "-p", port, "-m", METHOD, "-k", "pw"]
    # The program's stderr is made ours in the child, before exec.
    with open(err, "wb") as f:
        q = procs.start(os.path.join(bin_dir, "ss-server"), args,
                        env={"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)},
                        preexec=lambda: os.dup2(f.fileno(), 2), pass_fds=(f.fileno(),))
    q.wait_listening("127.0.0.1", port)
    return q, port, err


def test_journal_gets_priority_prefixes(procs, bin_dir, tmp_path):
    p, port, err = _journal_run(procs, bin_dir, tmp_path, True)
    junk(port)
    assert wait_for(lambda: "refused" in err.read_text(), T(5)), err.read_text()
    lines = err.read_text().splitlines()
    assert any(re.match(r"<5>ss-server \S+ started", ln) for ln in lines), lines
    assert any(re.match(r"<4>server 127\.0\.0\.1:\d+: refused: ", ln) for ln in lines), lines
    assert all(re.match(r"<[3-7]>", ln) for ln in lines), lines


def test_journal_stream_of_another_file_is_ignored(procs, bin_dir, tmp_path):
    p, port, err = _journal_run(procs, bin_dir, tmp_path, False)
    junk(port)
    assert wait_for(lambda: "refused" in err.read_text(), T(5)), err.read_text()
    lines = err.read_text().splitlines()
    assert lines and all(re.match(r" \d{4}-\d\d-\d\d \d\d:\d\d:\d\d (INFO|WARN): ", ln)
                         for ln in lines), lines


@pytest.mark.parametrize("check", (False, True))
def test_journal_gets_configuration_errors_at_err(bin_dir, tmp_path, check):
    """A broken file fails the start (and --check, which a unit runs first)
    with its message at priority err, so `journalctl -p err` shows why."""
    conf = tmp_path / "config.json"
    conf.write_text('{"server_port": 8388, "password": "pw", "sever": "x",\n')
    err = tmp_path / "stderr"
    err.write_bytes(b"")
    st = os.stat(err)
    env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    argv = [os.path.join(bin_dir, "ss-server"), "-c", str(conf)] + (["--check"] if check else [])
    with open(err, "wb") as f:
        rc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=f, timeout=T(10)).returncode
    lines = err.read_text().splitlines()
    assert rc == 1, lines
    assert lines and all(ln.startswith("<3>ss-server: ") for ln in lines), lines
    assert "invalid JSON" in lines[0], lines
