# SPDX-License-Identifier: MIT
"""Helpers of the load suite: sizes (normal and soak), open-file limits, the
relay pair, the load tools, and the health check every fault ends with.

Loopback only; standard library only. The integration suite's sslib does
the process handling (crash and sanitizer detection, logs).
"""

import hashlib
import json
import os
import resource
import socket
import sys
import threading
import time

import sslib
from sslib import T

HERE = os.path.dirname(os.path.abspath(__file__))
LOADCLIENT = os.path.join(HERE, "loadclient.py")

# `make soak` sets SS_LOAD_SOAK=1: bigger counts, longer runs, the same
# assertions.
SOAK = os.environ.get("SS_LOAD_SOAK") == "1"

METHODS = ("aes-256-gcm", "2022-blake3-aes-256-gcm")

# The health check: CPU time a relay may use while nothing happens, over
# IDLE_WINDOW seconds. Measured: 0.00 s after every fault (Release and
# ASan+UBSan), up to 0.02 s while full of connections out of descriptors
# (a retry each second). A relay spinning on a ready descriptor or a zero
# timer used 0.44-0.93 s of the window on this 2-core machine. The bound
# allows ten clock ticks (10 ms each) for a loaded machine.
IDLE_WINDOW = 1.5
IDLE_CPU_MAX = 0.10


def size(normal, soak):
    """normal, or soak under `make soak`."""
    return soak if SOAK else normal


def sanitized():
    return sslib.time_factor() > 1.0


# ---------------------------------------------------------------------------
# Open-file limits

# What the concurrent test needs per process: 2 descriptors a connection
# and room to spare. Root may raise the hard limit itself (a CI machine's
# may be lower than this one's 20,000); everyone else gets what there is.
NOFILE_WANT = 20000


def _raise_hard(want=NOFILE_WANT):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want and os.geteuid() == 0:
        try:
            with open("/proc/sys/fs/nr_open") as f:
                want = min(want, int(f.read()))
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, want), want))
        except (OSError, ValueError):
            pass


_raise_hard()


def nofile_hard():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def raise_nofile():
    """In the child: the soft open-file limit up to the hard one."""
    hard = nofile_hard()
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def limit_nofile(n):
    """A child set-up: `ulimit -n n` (soft and hard)."""
    def setup():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return setup


# ---------------------------------------------------------------------------
# Programs

def start_pair(ss, method, timeout=None, many=False, server_kw=None, local_kw=None):
    """ss-server and ss-local (SOCKS5) with method. many=True lets both hold
    as many descriptors as the system allows a process (the hard limit: the
    soft limit raised before exec, and -n). Returns (server, local)."""
    server_kw, local_kw = dict(server_kw or {}), dict(local_kw or {})
    if many:
        for kw in (server_kw, local_kw):
            kw["extra"] = ["-n", str(nofile_hard())] + list(kw.get("extra", ()))
            kw.setdefault("preexec", raise_nofile)
    server = ss.server(method=method, timeout=timeout, **server_kw)
    local = ss.local(server, timeout=timeout, **local_kw)
    return server, local


def start_limited(ss, echo, method, nofile, held=0, t=60, server_extra=(), local_extra=()):
    """ss-server under `ulimit -n nofile`, inheriting `held` more open
    descriptors (as if something else held them), and ss-local, with -t t;
    the relays' fresh connection goes to echo. (server, local, relays), at
    rest. The timeout is the relays' default: a connection that waits its
    turn in a full server's backlog (its first flight sent, nothing back)
    is idle for ss-local the whole time, which on a busy machine ran past
    the 20 s these tests once gave it; the tests' own waits are longer."""
    holds = [os.open(os.devnull, os.O_RDONLY) for _ in range(held)]
    try:
        server = ss.server(method=method, timeout=t, preexec=limit_nofile(nofile),
                           pass_fds=holds, extra=list(server_extra))
    finally:
        for fd in holds:
            os.close(fd)
    local = ss.local(server, timeout=t, extra=list(local_extra))
    relays = Relays({"ss-local": local.program, "ss-server": server.program},
                    socks_fresh(local, echo.addr))
    relays.settle()
    return server, local, relays


def events(program, name):
    """The JSON lines of program's stdout whose "event" is name."""
    out = []
    for line in program.stdout().splitlines():
        if line.startswith("{"):
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") == name:
                out.append(ev)
    return out


def wait_event(program, name, timeout, nth=1):
    """The nth JSON line of that event on program's stdout, waiting for it
    up to timeout; fails if the program exits first."""
    deadline = time.monotonic() + timeout
    while True:
        evs = events(program, name)
        if len(evs) >= nth:
            return evs[nth - 1]
        if not program.alive():
            raise AssertionError("%s exited before reporting %r\n%s" % (
                program.name, name, program.describe()))
        if time.monotonic() > deadline:
            raise AssertionError("%s: no %r report after %.0fs\n%s" % (
                program.name, name, timeout, program.describe()))
        time.sleep(0.05)


def ssload():
    """The load tool (tests/bench/ssload.c), built with the programs."""
    d = os.environ.get("SS_BENCH_DIR") or os.path.join(sslib.bin_dir(), "tests", "bench")
    path = os.path.join(d, "ssload")
    if not os.access(path, os.X_OK):
        raise sslib.SetupError("ssload not found at %s (SS_BENCH_DIR)" % path)
    return path


def start_sink(procs, conn_log=False):
    """ssload's echo target on loopback (it raises its own open-file limit);
    conn_log: it reports each connection's end (event "conn"). Returns
    (program, (host, port))."""
    p = procs.start(ssload(), ["sink", "--listen", "%s:0" % sslib.LOOPBACK4, "--echo"]
                    + (["--conn-log"] if conn_log else []), name="echo-sink")
    port = wait_event(p, "listening", T(10))["port"]
    return p, (sslib.LOOPBACK4, port)


def start_clients(procs, proxy, target, total, nprocs, size=256, parallel=64, timeout=None):
    """total SOCKS5 connections to target through proxy, split over nprocs
    loadclient.py processes. Returns the programs."""
    timeout = T(120) if timeout is None else timeout
    out = []
    for i in range(nprocs):
        n = total // nprocs + (1 if i < total % nprocs else 0)
        out.append(procs.start(sys.executable, [
            LOADCLIENT, "--proxy", "%s:%d" % proxy, "--target", "%s:%d" % target,
            "--conns", n, "--size", size, "--parallel", parallel, "--timeout", timeout,
            "--tag", "p%d" % i], name="loadclient%d" % i))
    return out


def collect(clients, name, timeout, nth=1):
    """Sums the clients' nth report of event name: (ok, failed, reasons,
    examples)."""
    ok = failed = 0
    reasons, examples = {}, []
    deadline = time.monotonic() + timeout
    for c in clients:
        ev = wait_event(c, name, max(1.0, deadline - time.monotonic()), nth)
        ok += ev["ok"]
        failed += ev["failed"]
        for k, v in ev["reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
        examples += ev["examples"][:2]
    return ok, failed, reasons, examples


# ---------------------------------------------------------------------------
# Health

def wait_fds(pid, want, timeout):
    """Waits until process pid has want descriptors open; returns the count
    at the end (== want unless the time ran out)."""
    return sslib.wait_count(sslib.fd_count, pid, want, timeout, step=0.05)


def settled_fds(pid, quiet=0.5, timeout=None):
    """The descriptor count of pid once it stopped changing for quiet s."""
    return sslib.settled_count(sslib.fd_count, pid, quiet, T(10) if timeout is None else timeout,
                               step=0.05)


def idle_cpu(programs, window=IDLE_WINDOW):
    """CPU seconds each program ({name: Program}) used over window."""
    before = {name: sslib.cpu_seconds(p.pid) for name, p in programs.items()}
    time.sleep(window)
    return {name: sslib.cpu_seconds(p.pid) - before[name] for name, p in programs.items()}


class Relays:
    """The programs a test watches, with their descriptor counts at rest
    (baseline) and a way to make a fresh connection through them."""

    def __init__(self, programs, fresh):
        self.programs = programs  # {name: Program}
        self.fresh = fresh  # fresh(): one new connection works end to end
        self.baseline = {}

    def settle(self, after=0.0):
        """One connection end to end, then (after `after` seconds, for what
        it leaves behind to expire) the descriptor counts once they are
        steady: the baseline."""
        self.fresh()
        time.sleep(after)
        self.baseline = {name: settled_fds(p.pid) for name, p in self.programs.items()}
        return self.baseline

    def check(self, what, fds_timeout=None):
        """After `what`: each program alive, its descriptors back to the
        baseline, (nearly) no CPU over an idle window, and a fresh
        connection works. Returns {name: idle CPU seconds}."""
        fds_timeout = T(15) if fds_timeout is None else fds_timeout
        for name, p in self.programs.items():
            assert p.alive(), "after %s: %s is gone\n%s" % (what, name, p.describe())
        for name, p in self.programs.items():
            n = wait_fds(p.pid, self.baseline[name], fds_timeout)
            assert n == self.baseline[name], (
                "after %s: %s holds %d descriptors %.0fs later, %d at rest before" % (
                    what, name, n, fds_timeout, self.baseline[name]))
        cpu = idle_cpu(self.programs)
        for name, p in self.programs.items():
            assert cpu[name] <= IDLE_CPU_MAX, (
                "after %s: %s used %.2f s of CPU in %.1f s with nothing to do" % (
                    what, name, cpu[name], IDLE_WINDOW))
            n = sslib.fd_count(p.pid)
            assert n == self.baseline[name], (
                "after %s: %s holds %d descriptors after an idle window, %d at rest" % (
                    what, name, n, self.baseline[name]))
        print("after %s: idle CPU %s; descriptors %s" % (
            what, ", ".join("%s %.2fs" % kv for kv in sorted(cpu.items())),
            ", ".join("%s %d" % kv for kv in sorted(self.baseline.items()))))
        self.fresh()
        for name, p in self.programs.items():
            n = wait_fds(p.pid, self.baseline[name], T(5))
            assert n == self.baseline[name], (
                "after %s and one fresh connection: %s holds %d descriptors, %d before" % (
                    what, name, n, self.baseline[name]))
        return cpu


def socks_fresh(local, target, nbytes=4096):
    """fresh() for a path through ss-local to an echo at target."""
    def fresh():
        s = sslib.socks5_connect(local.addr, target[0], target[1])
        try:
            sslib.small_exchange(s, nbytes)
        finally:
            s.close()
    return fresh


# ---------------------------------------------------------------------------
# Traffic

class Transfer(threading.Thread):
    """One connection moving bytes both ways, for faults to hit mid-way: a
    sslib.Sender sends data while this thread reads, counting and hashing
    what comes back, until EOF, a reset, stop_all() or the deadline. end: None
    while running, then "eof", "reset", "stopped", "timeout" or an error."""

    def __init__(self, sock, data, timeout):
        super().__init__(daemon=True)
        self.sock, self.data = sock, data
        self.deadline = time.monotonic() + timeout
        self.sender = sslib.Sender(sock, data, 65536, False, self.deadline)
        self.received = 0
        self.digest = hashlib.sha256()
        self.end = None
        self.halt = threading.Event()

    def run(self):
        self.sock.settimeout(0.2)
        self.sender.start()
        buf = bytearray(262144)
        try:
            while self.end is None:
                if self.halt.is_set():
                    self.end = "stopped"
                elif time.monotonic() > self.deadline:
                    self.end = "timeout"
                else:
                    try:
                        n = self.sock.recv_into(buf)
                    except socket.timeout:
                        continue
                    except ConnectionResetError:
                        self.end = "reset"
                        break
                    except OSError as e:
                        self.end = "recv: %s" % e
                        break
                    if n == 0:
                        self.end = "eof"
                    self.received += n
                    self.digest.update(memoryview(buf)[:n])
        finally:
            self.sender.stop.set()
            self.sender.join(10)

    @staticmethod
    def stop_all(transfers):
        """Stops them all at once (the others keep moving while one stops)."""
        for t in transfers:
            t.halt.set()
            t.sender.halt.set()
        for t in transfers:
            t.join(10)

    def echoed_intact(self):
        """Whether what came back is a prefix of what was sent (an echo)."""
        return self.digest.digest() == sslib.sha256(self.data[:self.received])


def wait_until(pred, timeout, step=0.02):
    """Polls pred() until it is true (returns True) or timeout (False)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
