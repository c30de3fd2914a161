# SPDX-License-Identifier: MIT
"""pytest fixtures shared by the integration and interop suites (imported by
their conftest.py files)."""

import faulthandler
import hashlib
import http.server
import json
import os
import socket
import sys
import threading

import pytest

import sslib

__all__ = ["bin_dir", "libev_bin_dir", "pytest_report_header", "watchdog", "procs",
           "pytest_runtest_makereport", "echo", "echo6", "SS", "ss", "blob", "web",
           "named_server"]

# Upper bound for one test, before the time factor; the watchdog then kills
# the programs so the blocked test fails instead of hanging the suite.
TEST_TIME_LIMIT = 120


@pytest.fixture(scope="session")
def bin_dir():
    """$SS_BIN_DIR, checked: the suite errors loudly when it is missing."""
    try:
        d = sslib.bin_dir()
        sslib.check_binaries(d)
    except sslib.SetupError as e:
        pytest.fail("cannot run: %s" % e, pytrace=False)
    return d


@pytest.fixture(scope="session")
def libev_bin_dir():
    try:
        sslib.check_binaries(sslib.LIBEV_BIN_DIR)
    except sslib.SetupError as e:
        pytest.fail("shadowsocks-libev is needed for interop: %s" % e, pytrace=False)
    return sslib.LIBEV_BIN_DIR


def pytest_report_header(config):
    return "SS_BIN_DIR=%s time factor=%.1f" % (os.environ.get("SS_BIN_DIR"), sslib.time_factor())


@pytest.fixture(autouse=True)
def watchdog(request):
    fired = threading.Event()
    limit = sslib.T(TEST_TIME_LIMIT)

    def fire():
        fired.set()
        sys.stderr.write("\n*** %s exceeded %.0fs: killing its programs\n" % (
            request.node.nodeid, limit))
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sslib.kill_everything()

    t = threading.Timer(limit, fire)
    t.daemon = True
    t.start()
    yield
    t.cancel()
    if fired.is_set():
        pytest.fail("test exceeded its time limit of %.0fs" % limit, pytrace=False)


@pytest.fixture
def procs(request, tmp_path):
    """The programs of one test; all stopped at the end. The test errors if
    one of them died unexpectedly, ignored SIGTERM or printed a sanitizer
    report."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    p = sslib.Processes(str(logdir))
    request.node._ss_procs = p
    yield p
    problems = p.finish()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        procs = getattr(item, "_ss_procs", None)
        if procs is not None:
            for prog in procs.programs:
                rep.sections.append(("program %s" % prog.name, prog.describe()))


@pytest.fixture
def echo():
    s = sslib.EchoServer()
    yield s
    s.close()


@pytest.fixture
def echo6():
    s = sslib.EchoServer(host=sslib.LOOPBACK6)
    yield s
    s.close()


class SS:
    """Starts programs for one test: ours ($SS_BIN_DIR) by default, libev's
    with impl="libev"."""

    def __init__(self, procs, bin_dir, libev_dir=sslib.LIBEV_BIN_DIR):
        self.procs = procs
        self.dirs = {"ours": bin_dir, "libev": libev_dir}

    def exe(self, name, impl="ours"):
        return os.path.join(self.dirs[impl], name)

    def server(self, impl="ours", **kw):
        return sslib.start_server(self.procs, self.exe("ss-server", impl), **kw)

    def local(self, server, impl="ours", **kw):
        return sslib.start_local(self.procs, self.exe("ss-local", impl), server, **kw)

    def tunnel(self, server, target, impl="ours", **kw):
        return sslib.start_tunnel(self.procs, self.exe("ss-tunnel", impl), server, target, **kw)

    def path(self, via, target, method=sslib.DEFAULT_METHOD, server_impl="ours",
             client_impl="ours", server_kw=None, client_kw=None):
        """ss-server plus ss-local (via="socks") or ss-tunnel (via="tunnel")
        to target. Returns (open, server, client): open() gives a socket
        connected through the pair to target."""
        server = self.server(impl=server_impl, method=method, **(server_kw or {}))
        if via == "socks":
            client = self.local(server, impl=client_impl, **(client_kw or {}))

            def open_():
                return sslib.socks5_connect(client.addr, target[0], target[1])
        elif via == "tunnel":
            client = self.tunnel(server, target, impl=client_impl, **(client_kw or {}))

            def open_():
                return sslib.connect(*client.addr)
        else:
            raise ValueError(via)
        return open_, server, client

    def run(self, name, args, impl="ours", timeout=None, env=None, **kw):
        """Starts a program that is expected to exit by itself; returns
        (exit code or None if still running after timeout, program). A
        program still running is killed. env and kw (preexec, pass_fds) as
        for Processes.start."""
        p = self.procs.start(self.exe(name, impl), args, env=env, **kw)
        p.expect_exit = True
        rc = p.wait_exit(sslib.T(5) if timeout is None else timeout)
        if rc is None:
            p.kill()
        return rc, p


@pytest.fixture
def ss(procs, bin_dir):
    return SS(procs, bin_dir)


_blobs = {}


@pytest.fixture(scope="session")
def blob():
    """blob(n): n random bytes, made once per size per session."""
    def get(n):
        if n not in _blobs:
            _blobs[n] = os.urandom(n)
        return _blobs[n]
    return get


class _BlobHandler(http.server.BaseHTTPRequestHandler):
    """Over HTTP/1.1 keep-alive: GET answers the server's blob, or for
    /headers... the request line, fields and peer port as JSON; HEAD the blob's
    fields; POST and PUT the length and SHA-256 of the body they got
    (Content-Length or chunked)."""
    protocol_version = "HTTP/1.1"

    def _answer(self, body, head_only=False):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/headers"):
            self._answer(json.dumps({"line": self.requestline, "peer": self.client_address[1],
                                     "fields": list(self.headers.items())}).encode())
        else:
            self._answer(self.server.blob)

    def do_HEAD(self):
        self._answer(self.server.blob, head_only=True)

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_POST(self):
        body = self._body()
        self._answer(b"%d %s" % (len(body), hashlib.sha256(body).hexdigest().encode()))

    do_PUT = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    """A loopback HTTP server whose every GET answers web.blob (300 kB)."""
    srv = http.server.ThreadingHTTPServer((sslib.LOOPBACK4, 0), _BlobHandler)
    srv.daemon_threads = True
    srv.blob = os.urandom(300000)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def named_server(ss, tmp_path, name):
    """ss-server that answers name as 127.0.0.1 from a hosts file of the
    test's own, and asks a resolver port where nobody answers about any
    other name."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 %s\n" % name)
    dead_dns = sslib.free_port(kind=socket.SOCK_DGRAM)
    return ss.server(env={"SS_HOSTS_FILE": str(hosts)}, extra=["-d", "127.0.0.1:%d" % dead_dns])
