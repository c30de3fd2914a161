# SPDX-License-Identifier: MIT
"""Helpers shared by the integration and interop suites.

Everything here talks to 127.0.0.1 / ::1 only. Standard library only.

- Program / Processes: start ss-* programs, wait for their listening port,
  keep stdout/stderr in files, stop them (SIGTERM, then SIGKILL), and report
  crashes, sanitizer findings and programs that ignore SIGTERM.
- EchoServer, ResponderServer, ServerFirstServer, CaptureServer: loopback
  TCP peers run on threads.
- SOCKS5 client helpers.
- Transfer helpers (send while receiving, compare by SHA-256).
- Passwords and keys (EVP_BytesToKey as shadowsocks-libev does).
"""

import base64
import ctypes
import hashlib
import os
import secrets
import signal
import socket
import struct
import subprocess
import threading
import time

# ---------------------------------------------------------------------------
# Binaries and methods

PROGRAMS = ("ss-local", "ss-server", "ss-tunnel", "ss-redir")
LIBEV_BIN_DIR = "/usr/bin"  # shadowsocks-libev 3.3.5 (Debian package)
LOOPBACK4 = "127.0.0.1"
LOOPBACK6 = "::1"

AEAD_METHODS = (
    "aes-128-gcm",
    "aes-192-gcm",
    "aes-256-gcm",
    "chacha20-ietf-poly1305",
    "xchacha20-ietf-poly1305",
)
SIP022_METHODS = (
    "2022-blake3-aes-128-gcm",
    "2022-blake3-aes-256-gcm",
    "2022-blake3-chacha20-poly1305",
)
KEY_LEN = {
    "aes-128-gcm": 16,
    "aes-192-gcm": 24,
    "aes-256-gcm": 32,
    "chacha20-ietf-poly1305": 32,
    "xchacha20-ietf-poly1305": 32,
    "2022-blake3-aes-128-gcm": 16,
    "2022-blake3-aes-256-gcm": 32,
    "2022-blake3-chacha20-poly1305": 32,
}
SALT_LEN = dict(KEY_LEN)  # SIP004 and SIP022: salt length == key length
TAG_LEN = 16
DEFAULT_METHOD = "chacha20-ietf-poly1305"

# Stream ciphers (and table) that shadowsocks-c refuses.
REMOVED_METHODS = (
    "rc4-md5",
    "aes-256-cfb",
    "chacha20",
    "salsa20",
    "table",
    "bf-cfb",
    "aes-128-ctr",
    "chacha20-ietf",
)

SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "SUMMARY: AddressSanitizer",
    "SUMMARY: UndefinedBehaviorSanitizer",
    "Sanitizer has encountered a fatal error",
    "runtime error:",  # UBSan
    "ThreadSanitizer",
)


class SetupError(Exception):
    """The test environment is broken (missing binaries, ...)."""


def bin_dir():
    """The directory holding the ss-* programs under test ($SS_BIN_DIR)."""
    d = os.environ.get("SS_BIN_DIR")
    if not d:
        raise SetupError("SS_BIN_DIR is not set: it must name the directory holding "
                         "ss-local, ss-server, ss-tunnel and ss-redir")
    return d


def check_binaries(directory):
    """Raises SetupError unless directory holds the four executables."""
    missing = []
    for p in PROGRAMS:
        path = os.path.join(directory, p)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            missing.append(path)
    if missing:
        raise SetupError("missing or not executable: " + ", ".join(missing))


def prog(name, directory=None):
    """Absolute path of program name under directory (default $SS_BIN_DIR)."""
    return os.path.join(directory or bin_dir(), name)


_asan_cache = {}


def _is_sanitized(path):
    if path not in _asan_cache:
        try:
            with open(os.path.realpath(path), "rb") as f:
                data = f.read()
            _asan_cache[path] = (b"__asan_init" in data or b"__ubsan_handle" in data
                                  or b"__tsan_init" in data)
        except OSError:
            _asan_cache[path] = False
    return _asan_cache[path]


_time_factor = None


def time_factor():
    """Multiplier for time limits: $SS_TIME_FACTOR, else 3 for a sanitizer
    build of the programs under test, else 1. Only upper bounds are scaled."""
    global _time_factor
    if _time_factor is None:
        env = os.environ.get("SS_TIME_FACTOR")
        if env:
            _time_factor = max(1.0, float(env))
        else:
            d = os.environ.get("SS_BIN_DIR")
            sanitized = bool(d) and any(_is_sanitized(os.path.join(d, p)) for p in PROGRAMS)
            _time_factor = 3.0 if sanitized else 1.0
    return _time_factor


def T(seconds):
    """seconds scaled by time_factor()."""
    return seconds * time_factor()


# ---------------------------------------------------------------------------
# Ports, passwords, keys

def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def free_port(host=LOOPBACK4, kind=socket.SOCK_STREAM):
    """A port that was free on host a moment ago (bind to port 0)."""
    with socket.socket(family_of(host), kind) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def random_password(nbytes=18):
    return secrets.token_urlsafe(nbytes)


def is_sip022(method):
    return method.startswith("2022-")


def random_psk(method):
    """A SIP022 PSK as `openssl rand -base64 N` prints it."""
    return base64.b64encode(os.urandom(KEY_LEN[method])).decode()


def random_key_b64(method):
    """A random key of the method's length, URL-safe base64 with padding."""
    return base64.urlsafe_b64encode(os.urandom(KEY_LEN[method])).decode()


def evp_bytes_to_key(password, key_len):
    """OpenSSL EVP_BytesToKey(MD5, no salt, 1 round): libev's password to key."""
    if isinstance(password, str):
        password = password.encode()
    out, prev = b"", b""
    while len(out) < key_len:
        prev = hashlib.md5(prev + password).digest()
        out += prev
    return out[:key_len]


def key_b64_from_password(method, password):
    return base64.urlsafe_b64encode(evp_bytes_to_key(password, KEY_LEN[method])).decode()


def sha256(data):
    return hashlib.sha256(data).digest()


# ---------------------------------------------------------------------------
# Processes

_libc = None


def _child_setup():
    # Die with the parent (pytest) even if it is killed before its finalizers
    # run. Processes are started from the main thread, which lives as long as
    # the session.
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    # Whatever the runner ignores, the programs start with default handling.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


class ProgramFailed(AssertionError):
    pass


class Program:
    """One started program. stdout/stderr go to files in logdir."""

    _serial = 0

    def __init__(self, exe, args, logdir, name=None, env=None, preexec=None, pass_fds=()):
        Program._serial += 1
        self.exe = exe
        self.args = [str(a) for a in args]
        self.name = name or os.path.basename(exe)
        base = os.path.join(logdir, "%02d-%s" % (Program._serial, self.name))
        self.stdout_path = base + ".stdout"
        self.stderr_path = base + ".stderr"
        self.env = env
        self.preexec = preexec  # run in the child before exec, after the usual set-up
        self.pass_fds = tuple(pass_fds)  # descriptors the program inherits
        self.proc = None
        self.expect_exit = False  # the test expects it to exit by itself
        self.stopped = False
        self.problems = []

    def start(self):
        env = dict(os.environ)
        # Sanitizer reports must be visible and fatal; leak checks at exit.
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        if self.env:
            env.update(self.env)
        setup = _child_setup
        if self.preexec:
            def setup():
                _child_setup()
                self.preexec()
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [self.exe] + self.args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env=env, close_fds=True, pass_fds=self.pass_fds, preexec_fn=setup)
        return self

    @property
    def pid(self):
        return self.proc.pid

    def poll(self):
        return self.proc.poll()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stdout(self):
        return _read_text(self.stdout_path)

    def stderr(self):
        return _read_text(self.stderr_path)

    def output(self):
        return self.stdout() + self.stderr()

    def describe(self):
        rc = self.proc.poll() if self.proc else None
        return ("%s %s (pid %s, exit %s)\n--- stdout ---\n%s--- stderr ---\n%s" % (
            self.exe, " ".join(self.args), self.proc.pid if self.proc else "-", rc,
            _tail(self.stdout()), _tail(self.stderr())))

    def wait_exit(self, timeout):
        """Waits for the program to exit by itself; returns the exit code or
        None on timeout (the program is left running)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_listening(self, host, port, timeout=None):
        """Waits until a socket listens on port in the program's network
        namespace (its own, or its plugin's in front of it), read from
        /proc/PID/net/tcp and tcp6: no probe connection is made, which the
        program would accept and close at some later point, so that what it
        holds once this returns is what it holds at rest. host is the
        address the caller will use (kept for the messages). Raises
        ProgramFailed if the program exits or the time runs out."""
        timeout = T(10) if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ProgramFailed("%s exited before listening on %s:%d\n%s" % (
                    self.name, host, port, self.describe()))
            if port in listening_ports(self.proc.pid) and self.proc.poll() is None:
                return
            if time.monotonic() > deadline:
                raise ProgramFailed("%s not listening on %s:%d after %.1fs\n%s" % (
                    self.name, host, port, timeout, self.describe()))
            time.sleep(0.02)

    def terminate(self, timeout=None):
        """SIGTERM, wait, then SIGKILL. Returns the exit code."""
        timeout = T(5) if timeout is None else timeout
        self.stopped = True
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.problems.append("%s did not exit within %.1fs of SIGTERM" % (self.name, timeout))
            self.proc.kill()
            return self.proc.wait(timeout=10)

    def kill(self):
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass

    def sanitizer_report(self):
        text = self.stderr() + self.stdout()
        for m in SANITIZER_MARKERS:
            if m in text:
                return m
        return None


def _read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _tail(text, n=4000):
    return text if len(text) <= n else "...\n" + text[-n:]


class Processes:
    """Owner of every program a test starts. finish() stops them all and
    returns the problems found: programs that died during the test (unless
    expected), sanitizer reports, programs ignoring SIGTERM."""

    ADDR_IN_USE = ("Address already in use", "EADDRINUSE")

    def __init__(self, logdir):
        self.logdir = logdir
        self.programs = []
        self.lock = threading.Lock()
        _ACTIVE.add(self)

    def start(self, exe, args, name=None, env=None, **kw):
        """kw: Program's preexec and pass_fds."""
        p = Program(exe, args, self.logdir, name=name, env=env, **kw)
        with self.lock:
            self.programs.append(p)
        return p.start()

    def start_listening(self, exe, make_args, host=LOOPBACK4, name=None, env=None,
                        port=None, attempts=5, **kw):
        """Starts exe with make_args(port) for a free port (or the given one)
        and waits until host:port accepts; retries with another port if the
        chosen one turned out to be taken. kw as for start(). Returns
        (program, port)."""
        last = None
        for _ in range(attempts):
            p_ = port or free_port(host)
            p = self.start(exe, make_args(p_), name=name, env=env, **kw)
            try:
                p.wait_listening(host, p_)
                return p, p_
            except ProgramFailed as e:
                last = e
                p.kill()
                p.expect_exit = True
                if port is None and any(m in p.output() for m in self.ADDR_IN_USE):
                    continue
                raise
        raise last

    def kill_all(self):
        for p in list(self.programs):
            p.kill()

    def finish(self):
        problems = []
        for p in self.programs:
            if p.proc is None:
                continue
            if not p.stopped and not p.expect_exit and p.proc.poll() is not None:
                problems.append("%s exited during the test (code %s)\n%s" % (
                    p.name, p.proc.returncode, p.describe()))
            if not p.stopped:
                p.terminate()
            problems.extend("%s\n%s" % (x, p.describe()) for x in p.problems)
            m = p.sanitizer_report()
            if m:
                problems.append("%s: sanitizer report (%s)\n%s" % (p.name, m, p.describe()))
        self.programs = []
        _ACTIVE.discard(self)
        return problems


_ACTIVE = set()


def kill_everything():
    """Kills every program of every live Processes (used by the watchdog)."""
    for procs in list(_ACTIVE):
        procs.kill_all()


# ---------------------------------------------------------------------------
# A program's resources, from /proc

def cpu_seconds(pid):
    """utime + stime of process pid (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kib(pid, key):
    """A "kB" line of /proc/PID/status (VmRSS, VmHWM, ...), in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def listening_ports(pid):
    """The TCP ports some socket listens on in the network namespace of
    process pid (LISTEN in /proc/PID/net/tcp, tcp6)."""
    out = set()
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/%d/net/%s" % (pid, name)) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A":
                        out.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            continue
    return out


def fd_count(pid):
    """Open descriptors of process pid."""
    return len(os.listdir("/proc/%d/fd" % pid))


def proc_state(pid):
    """The state letter of pid (R, S, Z, ...), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def alive(pid):
    return proc_state(pid) not in (None, "Z", "X")


def children(pid):
    """(pid, state) of each child of pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append((int(d), fields[0]))
    return out


def wait_for(pred, timeout, step=0.02):
    """pred() once it is true, polled every step seconds; its last value
    (false) when timeout runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def wait_count(count, pid, want, timeout, step=0.02):
    """Waits until count(pid) (fd_count, ...) is want; returns the count at
    the end (== want unless the time ran out)."""
    deadline = time.monotonic() + timeout
    while True:
        n = count(pid)
        if n == want or time.monotonic() > deadline:
            return n
        time.sleep(step)


def settled_count(count, pid, quiet=0.3, timeout=None, step=0.03):
    """count(pid) once it has not changed for quiet seconds (or when the
    time runs out)."""
    timeout = T(5) if timeout is None else timeout
    deadline = time.monotonic() + timeout
    last, since = count(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(step)
        n = count(pid)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return n
    return last


# ---------------------------------------------------------------------------
# Loopback peers

class TcpServer:
    """A threaded TCP server on host:port (port 0 = pick one) that runs
    handler(conn, record) for each connection on its own thread. Whatever a
    handler stores in record (a dict) is kept in self.records; exceptions
    are kept in self.errors."""

    def __init__(self, host=LOOPBACK4, port=0, backlog=512, dualstack=False):
        self.host = host
        fam = family_of(host)
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if dualstack else 1)
        self.sock.bind((host, port))
        self.sock.listen(backlog)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.records = []
        self.errors = []
        self.conns = []
        self.threads = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.accepted = 0
        self.conn_timeout = T(60)
        self.thread = threading.Thread(target=self._accept_loop, daemon=True,
                                       name="%s:%d" % (type(self).__name__, self.port))
        self.thread.start()

    @property
    def addr(self):
        return (self.host, self.port)

    def handle(self, conn, record):  # override
        raise NotImplementedError

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                conn, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            conn.settimeout(self.conn_timeout)
            record = {"peer": peer, "done": threading.Event()}
            with self.lock:
                self.accepted += 1
                self.conns.append(conn)
                self.records.append(record)
            t = threading.Thread(target=self._run, args=(conn, record), daemon=True)
            with self.lock:
                self.threads.append(t)
            t.start()

    def _run(self, conn, record):
        try:
            self.handle(conn, record)
        except Exception as e:  # recorded, checked by tests that care
            record["error"] = e
            with self.lock:
                self.errors.append(e)
        finally:
            try:
                conn.close()
            except OSError:
                pass
            record["done"].set()

    def wait_records(self, n, timeout):
        """Waits until n connections were accepted and handled to the end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                recs = list(self.records)
            if len(recs) >= n and all(r["done"].is_set() for r in recs[:n]):
                return recs
            time.sleep(0.01)
        with self.lock:
            return list(self.records)

    def wait_for(self, pred, timeout):
        """The record of the first connection that satisfies pred (waits
        for one up to timeout), or None."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                recs = [r for r in self.records if pred(r)]
            if recs or time.monotonic() > deadline:
                return recs[0] if recs else None
            time.sleep(0.01)

    def close(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self.conns)
            threads = list(self.threads)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(5)
        for t in threads:
            t.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class EchoServer(TcpServer):
    """Echoes every byte; when the client shuts down its write side, finishes
    echoing, then shuts down its own write side (half-close)."""

    def handle(self, conn, record):
        total = 0
        while True:
            data = conn.recv(262144)
            if not data:
                break
            conn.sendall(data)
            total += len(data)
        record["received"] = total
        conn.shutdown(socket.SHUT_WR)
        # Wait for the peer to close so no RST is sent.
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


class ResponderServer(TcpServer):
    """Reads until EOF, then (after delay seconds) answers sha256(received)
    + blob and closes its write side. record: received (count), digest."""

    def __init__(self, blob, delay=0.0, **kw):
        self.blob = blob
        self.delay = delay
        super().__init__(**kw)

    def handle(self, conn, record):
        h = hashlib.sha256()
        total = 0
        while True:
            data = conn.recv(262144)
            if not data:
                break
            h.update(data)
            total += len(data)
        record["received"] = total
        record["digest"] = h.digest()
        time.sleep(self.delay)
        conn.sendall(h.digest() + self.blob)
        conn.shutdown(socket.SHUT_WR)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


class ServerFirstServer(TcpServer):
    """Sends blob first and shuts down its write side, then reads until the
    client's EOF. record: received (count), digest."""

    def __init__(self, blob, **kw):
        self.blob = blob
        super().__init__(**kw)

    def handle(self, conn, record):
        conn.sendall(self.blob)
        conn.shutdown(socket.SHUT_WR)
        h = hashlib.sha256()
        total = 0
        while True:
            data = conn.recv(262144)
            if not data:
                break
            h.update(data)
            total += len(data)
        record["received"] = total
        record["digest"] = h.digest()


class SinkServer(TcpServer):
    """Reads an 8-byte big-endian length L, then L bytes; answers their
    SHA-256 and waits for the client to close. record: received, digest."""

    def handle(self, conn, record):
        (want,) = struct.unpack("!Q", recv_exact(conn, 8))
        h = hashlib.sha256()
        got = 0
        while got < want:
            data = conn.recv(min(262144, want - got))
            if not data:
                break
            h.update(data)
            got += len(data)
        record["received"] = got
        record["digest"] = h.digest()
        conn.sendall(h.digest())
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


class SourceServer(TcpServer):
    """On one byte from the client, sends blob, then waits for the client
    to close. record: sent (bytes so far, kept up to date while sending)."""

    def __init__(self, blob, **kw):
        self.blob = blob
        super().__init__(**kw)

    def handle(self, conn, record):
        recv_exact(conn, 1)
        view = memoryview(self.blob)
        record["sent"] = 0
        while record["sent"] < len(view):
            record["sent"] += conn.send(view[record["sent"]:record["sent"] + (1 << 20)])
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


class CaptureServer(TcpServer):
    """Keeps every byte a connection sends (until EOF, or quiet for a while).
    record: data. Sends nothing."""

    def __init__(self, quiet=0.5, **kw):
        self.quiet = quiet
        super().__init__(**kw)

    def handle(self, conn, record):
        buf = bytearray()
        conn.settimeout(self.quiet)
        while True:
            try:
                data = conn.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            buf += data
            record["data"] = bytes(buf)
        record["data"] = bytes(buf)


# ---------------------------------------------------------------------------
# SOCKS5 client

ATYP_IPV4, ATYP_DOMAIN, ATYP_IPV6 = 1, 3, 4
CMD_CONNECT, CMD_BIND, CMD_UDP_ASSOCIATE = 1, 2, 3


class DnsResponder:
    """Answers every A query with 127.0.0.1 (or, for a name in the dict
    `answers`, the IPv4 address it maps to, which a test may change while
    it runs) and every other with no record, on a loopback UDP port, with
    TTL `ttl` (0: nothing is cached between lookups), each answer after
    `delay` seconds. names: every name asked for, in order."""

    def __init__(self, delay=0.0, answers=None, ttl=0):
        self.delay = delay
        self.answers = dict(answers or {})
        self.ttl = ttl
        self.names = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOOPBACK4, 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.queries = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def addr(self):
        return "%s:%d" % (LOOPBACK4, self.port)

    def _run(self):
        while not self.stop.is_set():
            try:
                q, peer = self.sock.recvfrom(512)
            except socket.timeout:
                continue
            end = 12
            while end < len(q) and q[end]:
                end += q[end] + 1
            question = q[12:end + 5]
            qtype = struct.unpack("!H", q[end + 1:end + 3])[0] if end + 3 <= len(q) else 0
            labels, i = [], 12
            while i < end:
                labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
                i += q[i] + 1
            name = ".".join(labels).lower()
            self.names.append(name)
            self.queries += 1
            answers = b""
            if qtype == 1:
                ip = socket.inet_aton(self.answers.get(name, "127.0.0.1"))
                answers = struct.pack("!HHHIH4s", 0xC00C, 1, 1, self.ttl, 4, ip)
            head = q[:2] + struct.pack("!HHHHH", 0x8180, 1, 1 if answers else 0, 0, 0)
            if self.delay:
                threading.Timer(self.delay, self._answer, (head + question + answers,
                                                           peer)).start()
            else:
                self._answer(head + question + answers, peer)

    def _answer(self, data, peer):
        try:
            self.sock.sendto(data, peer)
        except OSError:
            pass  # closed meanwhile

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SocksError(AssertionError):
    pass


def connect(host, port, timeout=None):
    s = socket.create_connection((host, port), timeout=T(10) if timeout is None else timeout)
    return s


def recv_exact(sock, n):
    """Exactly n bytes, or raises SocksError on EOF (with what arrived)."""
    buf = bytearray()
    while len(buf) < n:
        data = sock.recv(n - len(buf))
        if not data:
            raise SocksError("EOF after %d of %d bytes: %r" % (len(buf), n, bytes(buf)))
        buf += data
    return bytes(buf)


def socks5_greet(sock, methods=(0,)):
    """Sends the greeting; returns the method the proxy chose."""
    sock.sendall(bytes([5, len(methods)]) + bytes(methods))
    ver, method = recv_exact(sock, 2)
    if ver != 5:
        raise SocksError("bad version in method reply: %d" % ver)
    return method


def socks5_login(sock, name, password):
    """RFC 1929 after method 2 was chosen: sends name and password (bytes);
    returns the status byte (0: accepted)."""
    sock.sendall(bytes([1, len(name)]) + name + bytes([len(password)]) + password)
    ver, status = recv_exact(sock, 2)
    if ver != 1:
        raise SocksError("bad version in login reply: %d" % ver)
    return status


def socks5_address(host, atyp=None):
    """ATYP and encoded address for host (literal or name)."""
    if atyp is None:
        try:
            return ATYP_IPV4, socket.inet_pton(socket.AF_INET, host)
        except OSError:
            pass
        try:
            return ATYP_IPV6, socket.inet_pton(socket.AF_INET6, host)
        except OSError:
            pass
        atyp = ATYP_DOMAIN
    if atyp == ATYP_DOMAIN:
        name = host.encode()
        return ATYP_DOMAIN, bytes([len(name)]) + name
    if atyp == ATYP_IPV4:
        return ATYP_IPV4, socket.inet_pton(socket.AF_INET, host)
    return ATYP_IPV6, socket.inet_pton(socket.AF_INET6, host)


def socks5_request_bytes(cmd, host, port, atyp=None):
    atyp, addr = socks5_address(host, atyp)
    return bytes([5, cmd, 0, atyp]) + addr + struct.pack("!H", port)


def socks5_read_reply(sock):
    """Reads a reply; returns (rep, (bound host, port) or None)."""
    ver, rep, _rsv, atyp = recv_exact(sock, 4)
    if ver != 5:
        raise SocksError("bad version in reply: %d" % ver)
    if rep != 0:
        # A failure reply: the code is what matters; tolerate a proxy that
        # closes without sending the bound address (shadowsocks-libev).
        try:
            return rep, _read_socks5_addr(sock, atyp)
        except (SocksError, OSError):
            return rep, None
    return rep, _read_socks5_addr(sock, atyp)


def _read_socks5_addr(sock, atyp):
    if atyp == ATYP_IPV4:
        host = socket.inet_ntop(socket.AF_INET, recv_exact(sock, 4))
    elif atyp == ATYP_IPV6:
        host = socket.inet_ntop(socket.AF_INET6, recv_exact(sock, 16))
    elif atyp == ATYP_DOMAIN:
        host = recv_exact(sock, recv_exact(sock, 1)[0]).decode("latin-1")
    else:
        raise SocksError("bad ATYP in reply: %d" % atyp)
    (port,) = struct.unpack("!H", recv_exact(sock, 2))
    return host, port


def socks5_open(proxy, host, port, atyp=None, cmd=CMD_CONNECT, timeout=None, early=b""):
    """Connects to the SOCKS5 proxy (host, port), greets (no auth) and sends
    the request, with early (the first payload) in the same write. Returns
    (socket, reply code). The caller closes the socket."""
    s = connect(proxy[0], proxy[1], timeout)
    try:
        method = socks5_greet(s)
        if method != 0:
            raise SocksError("proxy chose method 0x%02x, not no-auth" % method)
        s.sendall(socks5_request_bytes(cmd, host, port, atyp) + early)
        rep, _bnd = socks5_read_reply(s)
        return s, rep
    except BaseException:
        s.close()
        raise


def socks5_connect(proxy, host, port, atyp=None, timeout=None, early=b""):
    """Like socks5_open but requires reply 0 (succeeded); returns the socket."""
    s, rep = socks5_open(proxy, host, port, atyp=atyp, timeout=timeout, early=early)
    if rep != 0:
        s.close()
        raise SocksError("SOCKS5 CONNECT to %s:%d failed with reply 0x%02x" % (host, port, rep))
    return s


def socks4_connect(proxy, host, port, timeout=None, userid=b""):
    """SOCKS4 CONNECT through proxy: an IPv4 literal as such, a name the 4a
    way (0.0.0.1, then the name). Requires reply 90; returns the socket."""
    try:
        ip, name = socket.inet_aton(host), b""
    except OSError:
        ip, name = b"\0\0\0\1", host.encode() + b"\0"
    s = connect(proxy[0], proxy[1], timeout)
    try:
        s.sendall(bytes([4, 1]) + port.to_bytes(2, "big") + ip + userid + b"\0" + name)
        rep = recv_exact(s, 8)
        if rep[:2] != b"\0\x5a":
            raise SocksError("SOCKS4 CONNECT to %s:%d answered %r" % (host, port, rep))
        return s
    except BaseException:
        s.close()
        raise


# ---------------------------------------------------------------------------
# Transfers

class Sender(threading.Thread):
    """Sends data on sock until done or deadline. The socket object is
    shared with the receiving thread (which sets its timeout), so a send
    that times out is simply retried until the deadline. stop: a send that
    times out is not retried; halt: not another chunk (sent counts what
    went)."""

    def __init__(self, sock, data, chunk, shut_wr, deadline):
        super().__init__(daemon=True)
        self.sock, self.data, self.chunk, self.shut_wr = sock, data, chunk, shut_wr
        self.deadline = deadline
        self.stop = threading.Event()
        self.halt = threading.Event()
        self.error = None
        self.sent = 0

    def run(self):
        try:
            view = memoryview(self.data)
            while self.sent < len(view):
                if self.halt.is_set():
                    return
                try:
                    self.sent += self.sock.send(view[self.sent:self.sent + self.chunk])
                except socket.timeout:
                    if self.stop.is_set() or time.monotonic() > self.deadline:
                        raise
            if self.shut_wr:
                self.sock.shutdown(socket.SHUT_WR)
        except Exception as e:
            self.error = e


def exchange(sock, data, expect_len, timeout=None, chunk=65536, shut_wr=False):
    """Sends data (on a thread) while receiving expect_len bytes (or until
    EOF when expect_len is None). Returns (received digest, received length,
    sender error). Never blocks past timeout: raises TimeoutError with the
    progress made."""
    timeout = T(30) if timeout is None else timeout
    deadline = time.monotonic() + timeout
    sock.settimeout(min(timeout, 5.0))
    sender = Sender(sock, data, chunk, shut_wr, deadline)
    sender.start()
    h = hashlib.sha256()
    got = 0
    buf = bytearray(262144)
    try:
        while expect_len is None or got < expect_len:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("received %d of %s bytes, sent %d of %d in %.1fs" % (
                    got, expect_len, sender.sent, len(data), timeout))
            sock.settimeout(min(left, 5.0))
            try:
                want = len(buf) if expect_len is None else min(len(buf), expect_len - got)
                n = sock.recv_into(buf, want)
            except socket.timeout:
                continue
            if n == 0:
                break
            h.update(memoryview(buf)[:n])
            got += n
    finally:
        # The receiving side is done (or failed): a sender still blocked
        # gives up at its next timeout.
        sender.stop.set()
        sender.join(10)
    if sender.is_alive():
        raise TimeoutError("sender still blocked after %d of %d bytes" % (sender.sent, len(data)))
    return h.digest(), got, sender.error


def echo_check(sock, data, timeout=None):
    """Sends data through an echo path and checks the echo byte for byte."""
    digest, got, err = exchange(sock, data, len(data), timeout=timeout)
    assert err is None, "sending failed after %d bytes: %r" % (len(data), err)
    assert got == len(data), "echo ended early: %d of %d bytes" % (got, len(data))
    assert digest == sha256(data), "echoed bytes differ from the bytes sent (%d bytes)" % got


def recv_all(sock, timeout=None, limit=1 << 30):
    """Everything until EOF (bounded by timeout)."""
    timeout = T(30) if timeout is None else timeout
    deadline = time.monotonic() + timeout
    out = bytearray()
    while len(out) < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no EOF after %d bytes in %.1fs" % (len(out), timeout))
        sock.settimeout(left)
        data = sock.recv(262144)
        if not data:
            break
        out += data
    return bytes(out)


def http_head(sock):
    """Reads an HTTP response head (through the blank line) and nothing
    after it; returns (status, head bytes)."""
    head = bytearray()
    while not head.endswith(b"\r\n\r\n"):
        data = sock.recv(1)
        if not data:
            raise SocksError("EOF inside an HTTP response head: %r" % bytes(head))
        head += data
    return int(head.split(b" ", 2)[1]), bytes(head)


def http_connect(proxy, host, port, timeout=None, early=b"", headers=b""):
    """HTTP CONNECT through proxy; requires 200 and returns the socket, with
    the response head read."""
    s = connect(proxy[0], proxy[1], timeout)
    try:
        hp = ("[%s]:%d" % (host, port)) if ":" in host else "%s:%d" % (host, port)
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n%s"
                  % (hp.encode(), hp.encode(), headers, early))
        status, head = http_head(s)
        if status != 200:
            raise SocksError("HTTP CONNECT to %s answered %r" % (hp, head))
        return s
    except BaseException:
        s.close()
        raise


def wait_closed(sock, timeout):
    """Reads until the peer closes. Returns ("eof", bytes) for a clean close,
    ("reset", bytes) for a reset, ("open", bytes) if it is still open when
    the time is up."""
    deadline = time.monotonic() + timeout
    got = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "open", bytes(got)
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return "open", bytes(got)
        except ConnectionResetError:
            return "reset", bytes(got)
        if not data:
            return "eof", bytes(got)
        got += data


def small_exchange(sock, nbytes=1000, timeout=None):
    data = os.urandom(nbytes)
    sock.settimeout(T(10) if timeout is None else timeout)
    sock.sendall(data)
    back = recv_exact(sock, len(data))
    assert back == data, "small exchange: echo differs"


def hard_close(sock):
    """Closes with SO_LINGER 0: the peer gets a reset."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ---------------------------------------------------------------------------
# Program launchers

class Server:
    def __init__(self, program, host, port, method, password=None, key=None):
        self.program, self.host, self.port = program, host, port
        self.method, self.password, self.key = method, password, key

    @property
    def addr(self):
        return (self.host, self.port)


class Client:
    def __init__(self, program, host, port):
        self.program, self.host, self.port = program, host, port

    @property
    def addr(self):
        return (self.host, self.port)


def _cred_args(password, key):
    """password "" means none at all (method none needs no key)."""
    if key is not None:
        return ["--key", key]
    return ["-k", password] if password != "" else []


def start_server(procs, exe, method=DEFAULT_METHOD, password=None, key=None,
                 host=LOOPBACK4, extra=(), probe_host=None, timeout=None, env=None, **kw):
    """ss-server on host:free port (kw: Program's preexec and pass_fds).
    Returns Server."""
    if password is None and key is None:
        password = random_psk(method) if is_sip022(method) else random_password()
    args = lambda port: (["-s", host, "-p", port, "-m", method] + _cred_args(password, key)
                         + (["-t", str(timeout)] if timeout else []) + list(extra))
    probe = probe_host or (LOOPBACK6 if host in ("::", "::1") or ":" in host else LOOPBACK4)
    if host == "0.0.0.0":
        probe = LOOPBACK4
    p, port = procs.start_listening(exe, args, host=probe, env=env, **kw)
    return Server(p, probe, port, method, password, key)


def start_local(procs, exe, server, method=None, password=None, key=None,
                host=LOOPBACK4, extra=(), timeout=None, env=None, **kw):
    """ss-local (SOCKS5) on host:free port, using server (a Server); kw as
    for start_server."""
    method = method or server.method
    if password is None and key is None:
        password, key = server.password, server.key
    args = lambda port: (["-s", server.host, "-p", server.port, "-b", host, "-l", port,
                          "-m", method] + _cred_args(password, key)
                         + (["-t", str(timeout)] if timeout else []) + list(extra))
    p, port = procs.start_listening(exe, args, host=host, env=env, **kw)
    return Client(p, host, port)


def start_tunnel(procs, exe, server, target, method=None, password=None, key=None,
                 host=LOOPBACK4, extra=(), timeout=None, env=None, **kw):
    """ss-tunnel on host:free port forwarding to target (host, port); kw as
    for start_server."""
    method = method or server.method
    if password is None and key is None:
        password, key = server.password, server.key
    th, tp = target
    tspec = ("[%s]:%d" % (th, tp)) if ":" in th else ("%s:%d" % (th, tp))
    args = lambda port: (["-s", server.host, "-p", server.port, "-b", host, "-l", port,
                          "-L", tspec, "-m", method] + _cred_args(password, key)
                         + (["-t", str(timeout)] if timeout else []) + list(extra))
    p, port = procs.start_listening(exe, args, host=host, env=env, **kw)
    return Client(p, host, port)


def accepts(port, host=LOOPBACK4):
    """Whether a TCP connection to host:port is accepted now."""
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def metrics_get(port, path="/metrics", method="GET", timeout=5):
    """(status code, headers text, body) of one request to a --metrics
    endpoint on loopback."""
    with socket.create_connection((LOOPBACK4, port), timeout=T(timeout)) as s:
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\n\r\n" % (method, path)).encode())
        data = recv_all(s, timeout=T(timeout))
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head.decode(), body


def metrics_samples(port):
    """{(name, frozenset(labels)): value} of one scrape of a --metrics
    endpoint, parsed with prometheus_client, the format's reference parser."""
    from prometheus_client import parser
    status, head, body = metrics_get(port)
    assert status == 200, head
    assert "Content-Type: text/plain; version=0.0.4" in head, head
    out = {}
    for fam in parser.text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def metric(samples, name, **labels):
    """One value of metrics_samples' by name and labels."""
    return samples[(name, frozenset((k, str(v)) for k, v in labels.items()))]


def capture_client_stream(procs, local_exe, method, password, target, payload,
                          timeout=None):
    """The bytes a real ss-local sends to its server for one SOCKS5 CONNECT
    to target carrying payload: valid client ciphertext that the tests can
    replay, truncate or corrupt. The server here is a CaptureServer."""
    timeout = T(10) if timeout is None else timeout
    # At least: salt, one length chunk, header (IPv4: 7) + payload + tag;
    # SIP022: salt, fixed header + tag, address, padding length, payload, tag;
    # none: the header and the payload.
    if method in ("none", "plain"):
        need = 7 + len(payload)
    elif is_sip022(method):
        need = SALT_LEN[method] + 11 + TAG_LEN + 7 + 2 + len(payload) + TAG_LEN
    else:
        need = SALT_LEN[method] + 2 + TAG_LEN + 7 + len(payload) + TAG_LEN
    with CaptureServer(quiet=T(30)) as cap:
        srv = Server(None, LOOPBACK4, cap.port, method, password)
        local = start_local(procs, local_exe, srv)
        s = socks5_connect(local.addr, target[0], target[1], timeout=timeout)
        try:
            s.sendall(payload)
            deadline = time.monotonic() + timeout
            last, since = -1, time.monotonic()
            while time.monotonic() < deadline:
                with cap.lock:
                    sizes = [len(r.get("data", b"")) for r in cap.records]
                size = max(sizes or [0])
                if size != last:
                    last, since = size, time.monotonic()
                elif size >= need and time.monotonic() - since >= 0.3:
                    with cap.lock:
                        return next(r["data"] for r in cap.records
                                    if len(r.get("data", b"")) == size)
                time.sleep(0.02)
            raise TimeoutError("ss-local sent %d bytes to the capture server, expected >= %d"
                               % (last, need))
        finally:
            s.close()
            local.program.terminate()
