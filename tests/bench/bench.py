#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Relay benchmark: our ss-tunnel/ss-server against shadowsocks-libev's, on loopback.

For each method and each implementation this starts, per run,

    ssload send --> ss-tunnel --> ss-server --> ssload sink        (upload)
    ssload send <-- ss-tunnel <-- ss-server <-- ssload sink        (download)
    ssload rr  <--> ss-tunnel <--> ss-server <--> ssload sink --echo (rr: short connections)
    ssload udp-send <--> ss-tunnel -u <--> ss-server -u <--> ssload udp-echo        (udp, udp16)

and measures, over the transfer only, the CPU time (utime + stime from /proc/PID/stat) of each relay
process, the wall time, and the peak RSS (VmHWM) of each relay. Runs alternate between the
implementations (ours, libev, ours, libev, ...) and the report gives medians, the ratio ours/libev
and a note where the runs spread too much to be trusted.

CPU seconds per GB (10^9 bytes) is the primary figure (CPU µs per datagram for udp): on a small
machine the load tool and both relays share the cores, so throughput depends on scheduling much more
than CPU per byte does.

Standard library only; run with /usr/bin/python3. See README.md.
"""

import argparse
import base64
import json
import os
import platform
import resource
import secrets
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLK_TCK = os.sysconf("SC_CLK_TCK")
GB = 1e9
MIB = 1 << 20
LOOPBACK = "127.0.0.1"
DEFAULT_METHODS = "aes-256-gcm,chacha20-ietf-poly1305"
SCENARIOS = ("upload", "download", "rr", "udp", "udp16", "idle")
# udp: datagrams one by one as the window allows; udp16: bursts of UDP_BURST
# sent together, the next once the whole burst is back (QUIC's shape).
UDP_SCENARIOS = ("udp", "udp16")
UDP_BURST = 16
# shadowsocks-libev has no Shadowsocks 2022: for a 2022 method it runs the
# AEAD method with the same cipher, the one a user would otherwise pick.
LIBEV_STANDIN = {
    "2022-blake3-aes-128-gcm": "aes-128-gcm",
    "2022-blake3-aes-256-gcm": "aes-256-gcm",
    "2022-blake3-chacha20-poly1305": "chacha20-ietf-poly1305",
}


def impl_method(impl, method):
    """The method impl actually runs for method."""
    if impl.name == "libev":
        return LIBEV_STANDIN.get(method, method)
    return method


def new_password(method):
    """A key for one run: a base64 PSK of the right length for 2022 methods
    (SIP022 takes no passwords), a random password otherwise."""
    if method.startswith("2022-"):
        size = 16 if "aes-128" in method else 32
        return base64.b64encode(os.urandom(size)).decode()
    return secrets.token_hex(16)


def bypass_args(method, logdir):
    """ss-tunnel's extra arguments for the bypass pseudo-method: an ACL that
    sends every connection straight to its target."""
    if method != "bypass":
        return []
    path = os.path.join(logdir, "bypass.acl")
    with open(path, "w") as f:
        f.write("[bypass_all]\n")
    return ["--acl", path]


def relay_method(method):
    """The -m a run passes: bypass connections never reach the server, whose
    method then does not matter."""
    return "chacha20-ietf-poly1305" if method == "bypass" else method
UDP_MAX = 65507  # the largest UDP payload over IPv4
DEFAULT_UDP_COUNT = 30000
UDP_FAIL_LOSS = 0.05  # a udp run that loses more than this fraction is a failure, not a figure


class BenchError(Exception):
    pass


# ------------------------------------------------------------------ small helpers


def parse_size(text):
    """'1G' -> 2**30; K, M, G, T are binary multiples; an optional 'iB' or 'B' is accepted."""
    s = text.strip()
    for suffix in ("iB", "B"):
        if s.endswith(suffix) and len(s) > len(suffix):
            s = s[: -len(suffix)]
            break
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(s[-1:].lower(), 1)
    if mult != 1:
        s = s[:-1]
    if not s.isdigit():
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return int(s) * mult


def human_bytes(n):
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def proc_times(pid):
    """(utime, stime) of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2 :].split()  # fields[0] is field 3 (state)
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def proc_cpu(pid):
    """utime + stime of a process (all its threads), in seconds."""
    return sum(proc_times(pid))


def relays_times(relays):
    return {name: proc_times(p.pid) for name, p in relays.items()}


def user_seconds(t0, t1):
    """User-space CPU seconds of each relay between two relays_times() samples."""
    return {name: t1[name][0] - t0[name][0] for name in t0}


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def listening_ports():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A":  # TCP_LISTEN
                        ports.add(int(cols[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            pass
    return ports


def bound_udp_ports():
    ports = set()
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    ports.add(int(line.split()[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            pass
    return ports


def free_ports(n, udp=False):
    """n ports free on 127.0.0.1 for TCP (and for UDP too if udp)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            if len(socks) > 4 * n + 50:
                raise BenchError("no free port found for both TCP and UDP")
            s = socket.socket(type=socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
            port = s.getsockname()[1]
            if udp:
                t = socket.socket()
                socks.append(t)
                try:
                    t.bind((LOOPBACK, port))
                except OSError:
                    continue
            ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


try:
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (ImportError, OSError, AttributeError):
    _prctl = None


def _child_setup(cpus=None):
    """What a child does before exec: get SIGTERM if bench.py dies, so nothing is left running,
    and keep to its CPUs if pinned."""

    def setup():
        if _prctl is not None:
            _prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        if cpus:
            os.sched_setaffinity(0, cpus)

    return setup


ROLES = ("client", "tunnel", "server", "sink")


def pin_layout(spec):
    """--pin: 'none', 'auto' or four CPU numbers for client,tunnel,server,sink ('-': free)."""
    if spec == "none":
        return {}
    cpus = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        if len(cpus) >= 4:
            picks = cpus[:4]
        elif len(cpus) >= 2:
            # each relay on its own core, the tool's two ends beside the relay they talk to
            picks = [cpus[0], cpus[0], cpus[1], cpus[1]]
        else:
            return {}
    else:
        picks = spec.split(",")
        if len(picks) != 4:
            raise BenchError("--pin wants 'none', 'auto' or 4 CPUs: client,tunnel,server,sink")
    layout = {}
    for role, cpu in zip(ROLES, picks):
        if cpu != "-":
            layout[role] = {int(cpu)}
    return layout


def median(values):
    return statistics.median(values) if values else None


def spread(values):
    """(max - min) / median, or None."""
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else None


# ------------------------------------------------------------------ processes


class Procs:
    """The processes of one run; stop_all() ends every one of them, by pid."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.items = []

    def start(self, name, argv, pipe_stdout=False, cpus=None, env=None):
        log = open(os.path.join(self.logdir, name + ".log"), "wb")
        log.write(("$ " + shlex.join(argv) + "\n").encode())
        log.flush()
        p = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipe_stdout else log,
            stderr=log,
            bufsize=0,
            close_fds=True,
            preexec_fn=_child_setup(cpus),
            env=dict(os.environ, **env) if env else None,
        )
        self.items.append((name, p, log))
        return p

    def stop_all(self, grace=3.0):
        for _, p, _ in self.items:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for _, p, log in self.items:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
            log.close()
        self.items = []


def read_json_line(p, buf, timeout, what):
    """Next JSON line from p's stdout (an unbuffered pipe); buf: [bytes left over]."""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf[0]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError(f"{what}: no output within {timeout:.0f} s")
        ready, _, _ = select.select([p.stdout], [], [], left)
        if ready:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                raise BenchError(f"{what} exited with status {p.wait()}")
            buf[0] += chunk
    line, _, buf[0] = buf[0].partition(b"\n")
    return json.loads(line)


def wait_listening(ports, procs, timeout, udp_ports=()):
    deadline = time.monotonic() + timeout
    while True:
        for name, p in procs.items():
            if p.poll() is not None:
                raise BenchError(f"{name} exited with status {p.returncode} at start-up")
        missing = set(ports) - listening_ports()
        if udp_ports:
            missing |= set(udp_ports) - bound_udp_ports()
        if not missing:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"nothing listening on port(s) {sorted(missing)} after {timeout} s")
        time.sleep(0.02)


# ------------------------------------------------------------------ one run


class Impl:
    """A relay pair with Shadowsocks' command line."""
    scenarios = None  # every one
    ratio_figures = None  # every figure has a ratio to libev

    def __init__(self, name, server, tunnel, env=None, server_extra=()):
        self.name, self.server, self.tunnel, self.env = name, server, tunnel, env
        # Ours: one worker, as the server has one CPU here (tests/bench/workers.py measures
        # more); libev has one loop.
        self.server_extra = list(server_extra)

    def server_argv(self, port, password, method, extra):
        return [self.server, "-s", LOOPBACK, "-p", str(port), "-k", password,
                "-m", method] + self.server_extra + extra

    def tunnel_argv(self, port, server_port, target_port, password, method, extra):
        return [self.tunnel, "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK,
                "-l", str(port), "-L", f"{LOOPBACK}:{target_port}", "-k", password,
                "-m", method] + extra


class FloorImpl(Impl):
    """ssfloor in both places: a plain relay with no cipher and the fewest system calls, what
    any relay pair spends on a short connection. rr only, the method ignored; a floor for CPU,
    not for memory (it holds no buffers per connection)."""
    scenarios = ("rr",)
    ratio_figures = ("tunnel_cpu", "server_cpu", "total_cpu", "rate", "latency_p50",
                     "latency_p99")

    def __init__(self, ssfloor):
        super().__init__("floor", ssfloor, ssfloor)

    def server_argv(self, port, password, method, extra):
        return [self.server, "--listen", f"{LOOPBACK}:{port}"]

    def tunnel_argv(self, port, server_port, target_port, password, method, extra):
        return [self.tunnel, "--listen", f"{LOOPBACK}:{port}", "--connect",
                f"{LOOPBACK}:{server_port}", "--target", f"{LOOPBACK}:{target_port}"]


# "ours-copy": our binaries with splice(2) turned off, to show what it saves.
# "floor": FloorImpl.
IMPL_NAMES = ("ours", "ours-copy", "libev", "floor")
# Ours only: shadowsocks-libev has neither method none nor an ACL in ss-tunnel.
# "bypass" is ss-tunnel with an ACL that sends everything straight to the
# target (ss-server runs idle); an ACL routes no UDP.
OURS_ONLY = ("none", "bypass")


def supports(impl, method, scenario=None):
    """Whether impl runs method (in scenario, when given)."""
    if method == "bypass" and (scenario in UDP_SCENARIOS or impl.name == "floor"):
        return False
    if impl.scenarios is not None and scenario is not None and scenario not in impl.scenarios:
        return False
    return not (impl.name == "libev" and method in OURS_ONLY)


def run_client(argv, cfg, logdir):
    """Runs the load tool to its end; returns its last JSON line."""
    with open(os.path.join(logdir, "client.log"), "wb") as log:
        log.write(("$ " + shlex.join(argv) + "\n").encode())
        log.flush()
        try:
            res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log,
                                 timeout=cfg.timeout + 15,
                                 preexec_fn=_child_setup(cfg.pin.get("client")))
        except subprocess.TimeoutExpired:
            raise BenchError(f"the load tool did not finish within {cfg.timeout + 15} s")
        log.write(res.stdout)
    lines = res.stdout.decode(errors="replace").strip().splitlines()
    if not lines:
        raise BenchError(f"the load tool printed nothing (status {res.returncode})")
    return json.loads(lines[-1])


def run_udp_once(impl, method, cfg, logdir, burst=1):
    """One measured udp run: udp-send -> ss-tunnel -u -> ss-server -u -> udp-echo and back;
    with burst > 1, bursts of that many datagrams, one burst in flight."""
    procs = Procs(logdir)
    run_method = impl_method(impl, method)
    try:
        password = new_password(run_method)
        echo = procs.start(
            "udp-echo",
            [cfg.ssload, "udp-echo", "--listen", f"{LOOPBACK}:0", "--timeout",
             str(cfg.timeout + 60)],
            pipe_stdout=True,
            cpus=cfg.pin.get("sink"),
        )
        echo_port = read_json_line(echo, [b""], 10, "udp-echo")["port"]

        server_port, tunnel_port = free_ports(2, udp=True)
        server = procs.start(
            "ss-server",
            [impl.server, "-u", "-s", LOOPBACK, "-p", str(server_port), "-k", password,
             "-m", run_method] + impl.server_extra + cfg.server_args,
            cpus=cfg.pin.get("server"),
            env=impl.env,
        )
        tunnel = procs.start(
            "ss-tunnel",
            [impl.tunnel, "-u", "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK,
             "-l", str(tunnel_port), "-L", f"{LOOPBACK}:{echo_port}", "-k", password,
             "-m", run_method] + cfg.tunnel_args,
            cpus=cfg.pin.get("tunnel"),
            env=impl.env,
        )
        relays = {"ss-tunnel": tunnel, "ss-server": server}
        wait_listening([server_port, tunnel_port], relays, 10,
                       udp_ports=[server_port, tunnel_port])
        time.sleep(cfg.settle)

        t0 = relays_times(relays)
        client = run_client(
            [cfg.ssload, "udp-send", "--connect", f"{LOOPBACK}:{tunnel_port}",
             "--count", str(cfg.udp_count), "--size", str(cfg.udp_size),
             "--window", str(burst if burst > 1 else cfg.udp_window), "--burst", str(burst),
             "--clients", str(cfg.udp_clients),
             "--loss-after", str(cfg.udp_loss_after), "--timeout", str(cfg.timeout)],
            cfg, logdir)
        t1 = relays_times(relays)
        hwm = {name: proc_status_kb(p.pid, "VmHWM") for name, p in relays.items()}
        for name, p in relays.items():
            if p.poll() is not None:
                raise BenchError(f"{name} exited with status {p.returncode} during the run")

        # the echo's own counts tell on which leg the lost datagrams went missing
        echo.send_signal(signal.SIGTERM)
        try:
            echo.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise BenchError("udp-echo did not end within 10 s of SIGTERM")
        summary = None
        for line in echo.stdout.read().decode(errors="replace").splitlines():
            if '"summary"' in line:
                summary = json.loads(line)
        if summary is None:
            raise BenchError("no summary from udp-echo")

        if "sent" not in client:
            raise BenchError(f"the load tool failed: {client.get('error', client)}")
        if client["corrupt"]:
            raise BenchError(f"{client['corrupt']} datagram(s) came back altered: "
                             f"{client.get('error', '')}")
        if client.get("error") or client["sent"] != cfg.udp_count:
            raise BenchError(f"the load tool failed: {client.get('error', client)}")
        if client["lost"] > cfg.udp_count * UDP_FAIL_LOSS:
            raise BenchError(f"{client['lost']} of {cfg.udp_count} datagrams lost "
                             f"({summary['rx']} reached the target)")

        cpu = {name: sum(t1[name]) - sum(t0[name]) for name in relays}
        tool_cpu = (client["cpu_user"] + client["cpu_sys"] + summary["cpu_user"] +
                    summary["cpu_sys"])
        return {
            "impl": impl.name,
            "method": method,
            "scenario": "udp16" if burst > 1 else "udp",
            "seconds": client["seconds"],
            "cpu_s": cpu,
            "user_s": user_seconds(t0, t1),
            "hwm_kib": hwm,
            "tool_cpu_s": tool_cpu,
            "datagrams": cfg.udp_count,
            "received": client["received"],
            "lost": client["lost"],
            "lost_to_target": cfg.udp_count - summary["rx"],
            "late": client["late"],
            "datagrams_per_s": client["datagrams_per_s"],
            "latency_us": client["latency_us"],
        }
    finally:
        procs.stop_all()


def run_idle_once(impl, method, cfg, logdir):
    """Memory per idle connection: --idle-conns connections through ss-tunnel
    and ss-server to an echo, each sending a small request and reading the
    answer, then held open; the growth of each relay's resident memory over
    the connections, from one connection already open (start-up and the first
    connection's one-time costs are not per connection)."""
    procs = Procs(logdir)
    run_method = relay_method(impl_method(impl, method))
    socks = []
    try:
        password = new_password(run_method)
        n = cfg.idle_conns
        sink = procs.start(
            "sink",
            [cfg.ssload, "sink", "--listen", f"{LOOPBACK}:0", "--echo", "--quit-after",
             str(n + 16), "--timeout", str(cfg.timeout + 60)] + load_cc_args(cfg),
            pipe_stdout=True, cpus=cfg.pin.get("sink"))
        sink_port = read_json_line(sink, [b""], 10, "sink")["port"]
        server_port, tunnel_port = free_ports(2)
        nofile = ["-n", str(2 * n + 256)]
        server = procs.start(
            "ss-server",
            [impl.server, "-s", LOOPBACK, "-p", str(server_port), "-k", password,
             "-m", run_method] + nofile + impl.server_extra + cfg.server_args,
            cpus=cfg.pin.get("server"), env=impl.env)
        tunnel = procs.start(
            "ss-tunnel",
            [impl.tunnel, "-s", LOOPBACK, "-p", str(server_port), "-b", LOOPBACK,
             "-l", str(tunnel_port), "-L", f"{LOOPBACK}:{sink_port}", "-k", password,
             "-m", run_method] + nofile + bypass_args(method, logdir) + cfg.tunnel_args,
            cpus=cfg.pin.get("tunnel"), env=impl.env)
        relays = {"ss-tunnel": tunnel, "ss-server": server}
        wait_listening([server_port, tunnel_port], relays, 10)

        request = b"GET / HTTP/1.1\r\n\r\n" + b"x" * 100

        def hold():
            s = load_socket(cfg)
            s.settimeout(10)
            s.connect((LOOPBACK, tunnel_port))
            s.sendall(request)
            got = b""
            while len(got) < len(request):
                chunk = s.recv(len(request) - len(got))
                if not chunk:
                    raise BenchError("a connection ended before its answer")
                got += chunk
            if got != request:
                raise BenchError("an answer differs from its request")
            socks.append(s)

        hold()
        time.sleep(cfg.settle + 0.3)
        rss0 = {name: proc_status_kb(p.pid, "VmRSS") for name, p in relays.items()}
        cpu0 = {name: proc_cpu(p.pid) for name, p in relays.items()}
        t0 = time.monotonic()
        for _ in range(n):
            hold()
        seconds = time.monotonic() - t0
        time.sleep(0.5)
        rss1 = {name: proc_status_kb(p.pid, "VmRSS") for name, p in relays.items()}
        cpu1 = {name: proc_cpu(p.pid) for name, p in relays.items()}
        hwm = {name: proc_status_kb(p.pid, "VmHWM") for name, p in relays.items()}
        for name, p in relays.items():
            if p.poll() is not None:
                raise BenchError(f"{name} exited during the run")
        return {
            "impl": impl.name,
            "method": method,
            "scenario": "idle",
            "conns": n,
            "seconds": seconds,
            "rss_growth_kib": {name: rss1[name] - rss0[name] for name in relays},
            "cpu_s": {name: cpu1[name] - cpu0[name] for name in relays},
            "hwm_kib": hwm,
        }
    finally:
        for s in socks:
            s.close()
        procs.stop_all()


def run_once(impl, method, scenario, cfg, logdir):
    """One measured run; returns a dict of raw figures. Raises BenchError."""
    if scenario in UDP_SCENARIOS:
        return run_udp_once(impl, method, cfg, logdir, UDP_BURST if scenario == "udp16" else 1)
    if scenario == "idle":
        return run_idle_once(impl, method, cfg, logdir)
    procs = Procs(logdir)
    run_method = relay_method(impl_method(impl, method))
    try:
        password = new_password(run_method)
        conns = cfg.conns
        if scenario == "upload":
            sink_mode = []
            quit_after = conns
            client_argv = ["send", "--bytes", str(cfg.bytes), "--conns", str(conns)]
        elif scenario == "download":
            sink_mode = ["--download", str(cfg.bytes // conns)]
            quit_after = conns
            client_argv = ["send", "--download", "--bytes", str(cfg.bytes), "--conns", str(conns)]
        else:
            sink_mode = ["--echo"]
            quit_after = cfg.rr_count
            client_argv = ["rr", "--count", str(cfg.rr_count), "--size", str(cfg.rr_size),
                           "--conns", str(cfg.rr_conns)]
        client_argv += ["--timeout", str(cfg.timeout)] + load_cc_args(cfg)

        sink = procs.start(
            "sink",
            [cfg.ssload, "sink", "--listen", f"{LOOPBACK}:0", "--quit-after", str(quit_after),
             "--timeout", str(cfg.timeout + 60)] + sink_mode + load_cc_args(cfg),
            pipe_stdout=True,
            cpus=cfg.pin.get("sink"),
        )
        sink_out = [b""]
        sink_port = read_json_line(sink, sink_out, 10, "sink")["port"]

        server_port, tunnel_port = free_ports(2)
        server = procs.start(
            "ss-server",
            impl.server_argv(server_port, password, run_method, cfg.server_args),
            cpus=cfg.pin.get("server"),
            env=impl.env,
        )
        acl = bypass_args(method, logdir)
        tunnel = procs.start(
            "ss-tunnel",
            impl.tunnel_argv(tunnel_port, server_port, sink_port, password, run_method,
                             acl + cfg.tunnel_args),
            cpus=cfg.pin.get("tunnel"),
            env=impl.env,
        )
        relays = {"ss-tunnel": tunnel, "ss-server": server}
        wait_listening([server_port, tunnel_port], relays, 10)
        time.sleep(cfg.settle)

        t0 = relays_times(relays)
        argv = [cfg.ssload] + client_argv[:1] + ["--connect", f"{LOOPBACK}:{tunnel_port}"]
        argv += client_argv[1:]
        client = run_client(argv, cfg, logdir)
        # The sink quits once its side of every connection has ended, which is when the relays
        # have delivered everything (the client may see its end earlier: libev closes both legs
        # at the first EOF).
        try:
            sink.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise BenchError(
                f"the sink still waits for connections 30 s after the client ended "
                f"(client: {client.get('error', 'ok')})")
        while True:
            chunk = sink.stdout.read(65536)
            if not chunk:
                break
            sink_out[0] += chunk
        summary = None
        for line in sink_out[0].decode(errors="replace").splitlines():
            if '"summary"' in line:
                summary = json.loads(line)
        t1 = relays_times(relays)
        hwm = {name: proc_status_kb(p.pid, "VmHWM") for name, p in relays.items()}
        for name, p in relays.items():
            if p.poll() is not None:
                raise BenchError(f"{name} exited with status {p.returncode} during the run")

        if not client.get("ok"):
            raise BenchError(f"the load tool failed: {client.get('error', client)}")
        if summary is None:
            raise BenchError("no summary from the sink")
        if summary["bad_conns"] or summary["failed_conns"]:
            raise BenchError(f"the sink saw corrupted or short connections: {summary}")
        if scenario == "upload" and summary["rx"] != cfg.bytes:
            raise BenchError(f"the sink received {summary['rx']} bytes, not {cfg.bytes}")
        if scenario == "download" and (client["bytes_received"] != cfg.bytes or
                                       summary["tx"] != cfg.bytes):
            raise BenchError(f"the client received {client['bytes_received']} bytes, "
                             f"not {cfg.bytes}")
        if scenario == "rr" and client["ok_conns"] != cfg.rr_count:
            raise BenchError(f"{client['ok_conns']} of {cfg.rr_count} connections succeeded")

        wall = max(client["t_end"], summary["t_last"]) - client["t_start"]
        cpu = {name: sum(t1[name]) - sum(t0[name]) for name in relays}
        tool_cpu = (client["cpu_user"] + client["cpu_sys"] + summary["cpu_user"] +
                    summary["cpu_sys"])
        run = {
            "impl": impl.name,
            "method": method,
            "scenario": scenario,
            "seconds": wall,
            "cpu_s": cpu,
            "user_s": user_seconds(t0, t1),
            "hwm_kib": hwm,
            "tool_cpu_s": tool_cpu,
        }
        if scenario == "rr":
            run["conns"] = cfg.rr_count
            run["conns_per_s"] = cfg.rr_count / wall
            run["latency_us"] = client["latency_us"]
        else:
            run["bytes"] = cfg.bytes
            run["mb_per_s"] = cfg.bytes / wall / 1e6
        return run
    finally:
        procs.stop_all()


# ------------------------------------------------------------------ figures


def figures(run):
    """The figures of one run, by name (see FIGURES)."""
    cpu = run["cpu_s"]
    total = cpu["ss-tunnel"] + cpu["ss-server"]
    f = {
        "tunnel_rss_mib": run["hwm_kib"]["ss-tunnel"] / 1024,
        "server_rss_mib": run["hwm_kib"]["ss-server"] / 1024,
    }
    if run["scenario"] == "idle":
        n = run["conns"]
        g = run["rss_growth_kib"]
        f.update(tunnel_cpu=g["ss-tunnel"] / n, server_cpu=g["ss-server"] / n,
                 total_cpu=(g["ss-tunnel"] + g["ss-server"]) / n, rate=n / run["seconds"])
    elif run["scenario"] == "rr":
        n = run["conns"]
        f.update(tunnel_cpu=cpu["ss-tunnel"] / n * 1e6, server_cpu=cpu["ss-server"] / n * 1e6,
                 total_cpu=total / n * 1e6, rate=run["conns_per_s"],
                 latency_p50=run["latency_us"]["p50"], latency_p99=run["latency_us"]["p99"],
                 tool_cpu=run["tool_cpu_s"] / n * 1e6)
    elif run["scenario"] in UDP_SCENARIOS:
        n = run["datagrams"]
        f.update(tunnel_cpu=cpu["ss-tunnel"] / n * 1e6, server_cpu=cpu["ss-server"] / n * 1e6,
                 total_cpu=total / n * 1e6, rate=run["datagrams_per_s"],
                 latency_p50=run["latency_us"]["p50"], latency_p99=run["latency_us"]["p99"],
                 tool_cpu=run["tool_cpu_s"] / n * 1e6, lost=run["lost"])
    else:
        gb = run["bytes"] / GB
        f.update(tunnel_cpu=cpu["ss-tunnel"] / gb, server_cpu=cpu["ss-server"] / gb,
                 total_cpu=total / gb, rate=run["mb_per_s"], tool_cpu=run["tool_cpu_s"] / gb)
    if "user_s" in run and total > 0:
        f["user_share"] = 100 * sum(run["user_s"].values()) / total
    return f


def figure_labels(scenario):
    if scenario == "idle":
        cpu, rate = "KiB per idle connection", "connections opened/s"
    elif scenario == "rr":
        cpu, rate = "CPU µs/conn", "connections/s"
    elif scenario in UDP_SCENARIOS:
        cpu, rate = "CPU µs/datagram", "datagrams/s"
    else:
        cpu, rate = "CPU s/GB", "throughput MB/s"
    labels = [
        ("tunnel_cpu", f"ss-tunnel {cpu}"),
        ("server_cpu", f"ss-server {cpu}"),
        ("total_cpu", f"**relays {cpu}** (tunnel + server)"),
        ("rate", rate),
    ]
    if scenario != "idle":
        labels += [("user_share", "share of relays CPU in user space %")]
    if scenario in ("rr",) + UDP_SCENARIOS:
        labels += [("latency_p50", "latency p50 µs"), ("latency_p99", "latency p99 µs")]
    if scenario in UDP_SCENARIOS:
        labels += [("lost", "datagrams lost (all runs)")]
    labels += [
        ("tunnel_rss_mib", "ss-tunnel peak RSS MiB"),
        ("server_rss_mib", "ss-server peak RSS MiB"),
    ]
    if scenario != "idle":
        labels += [("tool_cpu", f"load tool {cpu} (client + sink)")]
    return labels


NOISE_FIGURES = ("total_cpu", "rate")
SUM_FIGURES = ("lost",)  # shown as the total over the runs, not a median


def summarize(runs, impls, methods, scenarios, noise_limit):
    groups = []
    for method in methods:
        for scenario in scenarios:
            group = {"method": method, "scenario": scenario, "impls": {}, "ratio": {},
                     "notes": []}
            for impl in impls:
                mine = [figures(r) for r in runs
                        if r["impl"] == impl and r["method"] == method and
                        r["scenario"] == scenario and "error" not in r]
                failed = sum(1 for r in runs
                             if r["impl"] == impl and r["method"] == method and
                             r["scenario"] == scenario and "error" in r)
                entry = {"runs": len(mine), "failed": failed, "median": {}, "spread": {},
                         "sum": {}}
                for key in mine[0] if mine else []:
                    values = [f[key] for f in mine]
                    if key in SUM_FIGURES:
                        entry["sum"][key] = sum(values)
                        continue
                    entry["median"][key] = median(values)
                    entry["spread"][key] = spread(values)
                lost = entry["sum"].get("lost")
                if lost:
                    lost_out = sum(r["lost_to_target"] for r in runs
                                   if r["impl"] == impl and r["method"] == method and
                                   r["scenario"] == scenario and "error" not in r)
                    group["notes"].append(
                        f"{impl}: {lost} datagram(s) lost in {len(mine)} run(s), {lost_out} of "
                        f"them on the way to the target")
                for key in NOISE_FIGURES:
                    s = entry["spread"].get(key)
                    if s is not None and s > noise_limit:
                        label = dict(figure_labels(scenario))[key].replace("**", "")
                        group["notes"].append(
                            f"{impl}: {label} spread {s:.0%} of the median "
                            f"(> {noise_limit:.0%}): too noisy to trust")
                if failed:
                    group["notes"].append(f"{impl}: {failed} run(s) FAILED")
                if len(mine) == 1:
                    group["notes"].append(f"{impl}: a single run, no spread known")
                group["impls"][impl] = entry
            # Every other implementation against libev; "ratio" is ours/libev. The floor
            # is one for CPU only: it holds no buffers per connection, so not for memory.
            group["vs_libev"] = {}
            if "libev" in group["impls"]:
                b = group["impls"]["libev"]["median"]
                for name, impl in impls.items():
                    if name == "libev" or name not in group["impls"]:
                        continue
                    a = group["impls"][name]["median"]
                    keys = impl.ratio_figures or a
                    group["vs_libev"][name] = {key: a[key] / b[key] for key in keys
                                               if key in a and key in b and b[key]}
            group["ratio"] = group["vs_libev"].get("ours", {})
            groups.append(group)
    return groups


def svg_chart(groups, impls):
    """A bar chart (SVG text) of relays' CPU s/GB per method, upload and
    download, one bar per implementation."""
    rows = [g for g in groups if g["scenario"] in ("upload", "download")]
    if not rows:
        return None
    colors = {"ours": "#2b6cb0", "ours-copy": "#68a0d8", "libev": "#c05621"}
    impls = [i for i in impls
             if any(g["impls"].get(i, {}).get("median", {}).get("total_cpu") for g in rows)]
    vals = [g["impls"].get(i, {}).get("median", {}).get("total_cpu") for g in rows for i in impls]
    top = max([v for v in vals if v] or [1.0])
    bar, gap, left, height = 14, 10, 250, 18 * 0 + 40
    group_h = bar * len(impls) + gap
    width, scale = 760, 460 / top
    h = height + group_h * len(rows) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           '<text x="10" y="20" font-size="14">Relays CPU seconds per GB (ss-tunnel + '
           'ss-server), lower is better</text>']
    y = height
    for g in rows:
        out.append(f'<text x="10" y="{y + bar}">{g["method"]} {g["scenario"]}</text>')
        for k, impl in enumerate(impls):
            v = g["impls"].get(impl, {}).get("median", {}).get("total_cpu")
            yy = y + k * bar
            if v:
                w = max(1, int(v * scale))
                out.append(f'<rect x="{left}" y="{yy}" width="{w}" height="{bar - 2}" '
                           f'fill="{colors.get(impl, "#888")}"/>')
                out.append(f'<text x="{left + w + 4}" y="{yy + bar - 4}">{v:.2f}</text>')
        y += group_h
    for k, impl in enumerate(impls):
        x = left + k * 120
        out.append(f'<rect x="{x}" y="{y + 10}" width="12" height="12" '
                   f'fill="{colors.get(impl, "#888")}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 21}">{impl}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def pin_text(pin):
    if not pin:
        return "none"
    return ", ".join(f"{role} on CPU {','.join(map(str, sorted(pin[role])))}"
                     for role in ROLES if role in pin)


def fmt(value, key, scenario=None):
    if value is None:
        return "-"
    if key == "ratio":
        return f"{value:.2f}"
    if key in SUM_FIGURES:
        return f"{value:.0f}"
    if scenario in UDP_SCENARIOS and key.endswith("_cpu"):
        return f"{value:.1f}"
    if key in ("rate", "latency_p50", "latency_p99") or key.endswith("_cpu") and (
            scenario == "rr" or value >= 100):
        return f"{value:.0f}"
    if key.endswith("rss_mib"):
        return f"{value:.1f}"
    return f"{value:.3f}" if value < 10 else f"{value:.2f}"


OVERVIEW_UNITS = {"rr": ("µs/conn", "conn/s"), "udp": ("µs/dgram", "dgram/s"),
                  "udp16": ("µs/dgram", "dgram/s"),
                  "idle": ("KiB/conn", "conn/s")}


def markdown(groups, impls, cfg, machine):
    out = []
    out.append("# Relay benchmark: ss-tunnel -> ss-server on loopback\n")
    tests = []
    if {"upload", "download"} & set(cfg.scenario_list):
        tests.append(f"{human_bytes(cfg.bytes)} per transfer over {cfg.conns} connection(s)")
    if "rr" in cfg.scenario_list:
        tests.append(f"rr: {cfg.rr_count} connections of {cfg.rr_size} bytes each way, "
                     f"{cfg.rr_conns} at a time")
    if "udp" in cfg.scenario_list:
        tests.append(f"udp: {cfg.udp_count} datagrams of {cfg.udp_size} bytes echoed back, at "
                     f"most {cfg.udp_window} in flight per client, {cfg.udp_clients} client "
                     f"socket(s); CPU per datagram covers its round trip (each relay handles it "
                     f"twice)")
    if "udp16" in cfg.scenario_list:
        tests.append(f"udp16: {cfg.udp_count} datagrams of {cfg.udp_size} bytes in bursts of "
                     f"{UDP_BURST} sent at once (sendmmsg), each burst once the last is back, "
                     f"{cfg.udp_clients} client socket(s); CPU per datagram as for udp")
    out.append(
        f"{machine['cpus']} CPUs ({machine['cpu_model']}), Linux {machine['kernel']}. "
        + "; ".join(tests) + ". "
        f"{cfg.repeat} run(s) per implementation, alternating; medians shown. "
        f"GB = 10^9 bytes. CPU = utime + stime of the relay process over the transfer. "
        f"CPU affinity: {pin_text(cfg.pin)}. "
        f"TCP congestion control: the system's is {machine['tcp_congestion_control']} (the "
        f"relays use it); the load tool's sockets use "
        f"{machine['tcp_congestion_control'] if cfg.load_cc == 'system' else cfg.load_cc}.\n")
    standins = sorted({(m, LIBEV_STANDIN[m]) for m in cfg.method_list if m in LIBEV_STANDIN})
    if standins and "libev" in impls:
        out.append("shadowsocks-libev has no Shadowsocks 2022 methods; in their rows it runs "
                   + ", ".join(f"{b} for {a}" for a, b in standins) + ".\n")
    if machine["cpus"] <= 2:
        out.append(
            "The load tool and both relays share the CPUs: CPU per byte (or per connection, "
            "per datagram) is the figure to compare; throughput depends on scheduling.\n")
    if "ours" in impls and "libev" in impls:
        out.append("## Overview (ours / libev: below 1 means ours uses less CPU)\n")
        out.append("| method | test | relays CPU ours | relays CPU libev | CPU ours/libev "
                   "| rate ours | rate libev | rate ours/libev | noisy |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
        for g in groups:
            a, b = g["impls"]["ours"]["median"], g["impls"]["libev"]["median"]
            unit, runit = OVERVIEW_UNITS.get(g["scenario"], ("s/GB", "MB/s"))
            noisy = any(n.startswith(("ours:", "libev:")) for n in g["notes"])
            r = g["ratio"]
            out.append(
                f"| {g['method']} | {g['scenario']} "
                f"| {fmt(a.get('total_cpu'), 'total_cpu', g['scenario'])} {unit} "
                f"| {fmt(b.get('total_cpu'), 'total_cpu', g['scenario'])} {unit} "
                f"| {fmt(r.get('total_cpu'), 'ratio')} "
                f"| {fmt(a.get('rate'), 'rate')} {runit} | {fmt(b.get('rate'), 'rate')} {runit} "
                f"| {fmt(r.get('rate'), 'ratio')} | {'yes' if noisy else ''} |")
        out.append("")
    for g in groups:
        what = {"upload": f"upload, {human_bytes(cfg.bytes)} client -> target",
                "download": f"download, {human_bytes(cfg.bytes)} target -> client",
                "rr": f"rr, {cfg.rr_count} short connections",
                "udp": f"udp, {cfg.udp_count} datagrams of {cfg.udp_size} bytes echoed",
                "udp16": f"udp16, {cfg.udp_count} datagrams of {cfg.udp_size} bytes echoed in "
                         f"bursts of {UDP_BURST}",
                "idle": f"idle, {cfg.idle_conns} connections held after one request each"
                }[g["scenario"]]
        # an implementation that does not run this test (libev: none; floor: udp) has no column
        shown = [i for i in impls if g["impls"][i]["runs"] or g["impls"][i]["failed"]]
        if not shown:
            continue
        runs = ", ".join(f"{i}: {g['impls'][i]['runs']} run(s)" for i in shown)
        out.append(f"## {g['method']}, {what} ({runs})\n")
        ratios = [i for i in shown if g["vs_libev"].get(i)]
        header = "| figure | " + " | ".join(shown) + "".join(f" | {i}/libev" for i in ratios)
        rule = "|---|" + "---:|" * (len(shown) + len(ratios))
        out.append(header + " |")
        out.append(rule)
        for key, label in figure_labels(g["scenario"]):
            source = "sum" if key in SUM_FIGURES else "median"
            cells = [fmt(g["impls"][i][source].get(key), key, g["scenario"]) for i in shown]
            cells += ["" if key in SUM_FIGURES else fmt(g["vs_libev"][i].get(key), "ratio")
                      for i in ratios]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        for key in NOISE_FIGURES:
            label = dict(figure_labels(g["scenario"]))[key].replace("**", "")
            cells = []
            for i in shown:
                s = g["impls"][i]["spread"].get(key)
                cells.append("-" if s is None else f"{s:.0%}")
            cells += [""] * len(ratios)
            out.append(f"| spread of {label} | " + " | ".join(cells) + " |")
        out.append("")
        for note in g["notes"]:
            out.append(f"- NOTE: {note}")
        if g["notes"]:
            out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------ setup


def find_tool(name, given, ours, workdir):
    """A tool of tests/bench (ssload, ssfloor): the one given, else the build's, else built
    from its source into workdir."""
    candidates = [given] if given else []
    candidates += [os.path.join(ours, "tests", "bench", name),
                   os.path.join(REPO, "build", "tests", "bench", name)]
    src = os.path.join(HERE, f"{name}.c")
    for path in candidates:
        if os.access(path, os.X_OK) and os.path.isfile(path):
            if os.path.exists(src) and os.path.getmtime(path) < os.path.getmtime(src):
                print(f"warning: {path} is older than {src}; rebuild it", file=sys.stderr)
            return os.path.abspath(path)
        if path == given:
            raise BenchError(f"--{name} {path}: not an executable")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise BenchError(f"no {name} binary found and no C compiler to build one")
    out = os.path.join(workdir, name)
    subprocess.run([cc, "-std=gnu17", "-O2", "-Wall", "-Wextra", "-o", out, src], check=True)
    print(f"built {out} from {src}", file=sys.stderr)
    return out


def binary(directory, name):
    path = os.path.join(directory, name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BenchError(f"{path}: no such executable")
    return os.path.abspath(path)


def load_cc_args(cfg):
    """ssload's arguments for the congestion control of its TCP sockets."""
    return [] if cfg.load_cc == "system" else ["--congestion", cfg.load_cc]


def load_socket(cfg):
    """A TCP socket for the harness's own clients, with the load tool's
    congestion control."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cfg.load_cc != "system":
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg.load_cc.encode())
    return s


def check_load_cc(cfg):
    try:
        load_socket(cfg).close()
    except OSError as e:
        raise BenchError(f"--load-cc {cfg.load_cc}: {e.strerror} (see "
                         f"/proc/sys/net/ipv4/tcp_allowed_congestion_control, or use "
                         f"--load-cc system)")


def system_congestion_control():
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def machine_info():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpus": os.cpu_count() or 1, "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version(),
            "tcp_congestion_control": system_congestion_control()}


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="CPU per GB, throughput and peak RSS of ss-tunnel -> ss-server, ours "
                    "against shadowsocks-libev, on loopback.")
    p.add_argument("--ours", default=os.path.join(REPO, "build"),
                   help="directory with our ss-server and ss-tunnel (default: build/)")
    p.add_argument("--libev", default="/usr/bin",
                   help="directory with shadowsocks-libev's ss-server and ss-tunnel "
                        "(default: /usr/bin)")
    p.add_argument("--impls", default="ours,libev",
                   help="which implementations to run, in order (default: ours,libev)")
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help=f"comma-separated methods (default: {DEFAULT_METHODS})")
    p.add_argument("--scenarios", "--tests", dest="scenarios", default=",".join(SCENARIOS),
                   help="comma-separated: upload, download, rr, udp (default: all)")
    p.add_argument("--bytes", type=parse_size, default=1 << 30,
                   help="bytes per upload/download transfer, K/M/G suffixes (default: 1G)")
    p.add_argument("--conns", type=int, default=1,
                   help="parallel connections for upload/download (default: 1)")
    p.add_argument("--rr-count", type=int, default=5000,
                   help="connections per rr run (default: 5000)")
    p.add_argument("--rr-size", type=int, default=512,
                   help="bytes each way per rr connection (default: 512)")
    p.add_argument("--rr-conns", type=int, default=8,
                   help="rr connections in parallel (default: 8)")
    p.add_argument("--udp-count", type=int, default=DEFAULT_UDP_COUNT,
                   help=f"datagrams per udp run (default: {DEFAULT_UDP_COUNT})")
    p.add_argument("--udp-size", type=int, default=1200,
                   help="bytes per datagram (default: 1200). libev's relays take at most "
                        "2739 without --mtu (in --server-args and --tunnel-args); no relay can "
                        "carry more than 65452 (65507 less the Shadowsocks overhead)")
    p.add_argument("--udp-window", type=int, default=32,
                   help="datagrams in flight per client socket, at most (default: 32)")
    p.add_argument("--idle-conns", type=int, default=1000,
                   help="idle: connections held open (default 1000)")
    p.add_argument("--udp-clients", type=int, default=1,
                   help="client sockets, each its own UDP association (default: 1)")
    p.add_argument("--udp-loss-after", type=float, default=1.0,
                   help="seconds after which a datagram not yet back counts as lost "
                        "(default: 1)")
    p.add_argument("--repeat", "-n", type=int, default=3,
                   help="runs per implementation and test (default: 3)")
    p.add_argument("--noise", type=float, default=0.15,
                   help="spread (max-min)/median above which a result is flagged (default: 0.15)")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds allowed for one transfer before it is killed (default: 600)")
    p.add_argument("--settle", type=float, default=0.2,
                   help="seconds to let the relays finish start-up before measuring "
                        "(default: 0.2)")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the unmeasured warm-up run of each implementation")
    p.add_argument("--pin", default="auto",
                   help="CPU affinity: 'none', 'auto', or 4 CPUs for client,tunnel,server,sink "
                        "('-' leaves one free), e.g. 0,0,1,1. auto: with 2-3 CPUs, client and "
                        "ss-tunnel on the first, ss-server and sink on the second (like a client "
                        "and a server machine); with 4 or more, one CPU each (default: auto)")
    p.add_argument("--load-cc", default="cubic",
                   help="TCP congestion control of the load tool's sockets, or 'system' for the "
                        "system's (default: cubic). With a pacing one (bbr, without the fq "
                        "qdisc) the tool's sends run from timer interrupts on whichever process "
                        "holds the CPU, often a relay, whose CPU figures then carry the tool's "
                        "work. The relays use the system's, except that ours move sockets "
                        "to a loopback peer off a pacing one (SS_NO_LOOPBACK_CC=1: not).")
    p.add_argument("--server-args", default="",
                   help="extra ss-server arguments for both implementations, e.g. '--no-delay'")
    p.add_argument("--tunnel-args", default="",
                   help="extra ss-tunnel arguments for both implementations")
    p.add_argument("--ours-workers", type=int, default=1,
                   help="--workers of our ss-server (default 1: libev runs one loop)")
    p.add_argument("--ssload", help="the ssload binary (default: found in the build, or built)")
    p.add_argument("--ssfloor", help="the ssfloor binary, for --impls floor (default: found in "
                                     "the build, or built)")
    p.add_argument("--json", metavar="FILE", help="write every run and the summary as JSON")
    p.add_argument("--markdown", metavar="FILE", help="also write the markdown report to FILE")
    p.add_argument("--svg", metavar="FILE",
                   help="also write a chart of CPU s/GB per method (upload, download) to FILE")
    p.add_argument("--logdir", help="keep each run's process logs here (default: a temporary "
                                    "directory, removed unless a run failed)")
    args = p.parse_args(argv)
    args.impl_names = [s for s in args.impls.split(",") if s]
    args.method_list = [s for s in args.methods.split(",") if s]
    args.scenario_list = [s for s in args.scenarios.split(",") if s]
    for s in args.scenario_list:
        if s not in SCENARIOS:
            p.error(f"unknown scenario {s!r}; choose from {', '.join(SCENARIOS)}")
    for s in args.impl_names:
        if s not in IMPL_NAMES:
            p.error(f"unknown implementation {s!r}; choose from {', '.join(IMPL_NAMES)}")
    if args.conns < 1 or args.repeat < 1 or args.rr_count < 1 or args.rr_conns < 1:
        p.error("--conns, --repeat, --rr-count and --rr-conns must be at least 1")
    if not 1 <= args.rr_size <= 256 * 1024:
        p.error("--rr-size must be 1..262144")
    if not 16 <= args.udp_size <= UDP_MAX:
        p.error(f"--udp-size must be 16..{UDP_MAX}")
    if args.udp_count < 1 or args.udp_window < 1 or not 1 <= args.udp_clients <= 1024:
        p.error("--udp-count and --udp-window must be at least 1, --udp-clients 1..1024")
    if args.udp_loss_after <= 0:
        p.error("--udp-loss-after must be more than 0")
    if args.bytes < args.conns:
        p.error("--bytes must be at least --conns")
    args.bytes -= args.bytes % args.conns  # every connection carries the same share
    args.pin_spec = args.pin
    args.server_args = shlex.split(args.server_args)
    args.tunnel_args = shlex.split(args.tunnel_args)
    return args


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # idle holds one descriptor per connection here.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    own_logdir = args.logdir is None
    logroot = tempfile.mkdtemp(prefix="ssbench-") if own_logdir else args.logdir
    os.makedirs(logroot, exist_ok=True)
    failures = 0
    try:
        args.pin = pin_layout(args.pin_spec)
        check_load_cc(args)
        args.ssload = find_tool("ssload", args.ssload, args.ours, logroot)
        dirs = {"ours": args.ours, "ours-copy": args.ours, "libev": args.libev}
        envs = {"ours-copy": {"SS_NO_SPLICE": "1"}}
        impls = {}
        for name in args.impl_names:
            if name == "floor":
                impls[name] = FloorImpl(find_tool("ssfloor", args.ssfloor, args.ours, logroot))
            else:
                impls[name] = Impl(name, binary(dirs[name], "ss-server"),
                                   binary(dirs[name], "ss-tunnel"), envs.get(name),
                                   [] if name == "libev"
                                   else ["--workers", str(args.ours_workers)])
        machine = machine_info()
        for name, impl in impls.items():
            print(f"{name}: {impl.server} {impl.tunnel}", file=sys.stderr)
        if machine["cpus"] <= 2:
            print(f"note: {machine['cpus']} CPUs shared by the load tool and both relays; "
                  "compare CPU per GB (connection, datagram) rather than rates", file=sys.stderr)

        seq = 0

        def attempt(impl, method, scenario, cfg, label):
            nonlocal seq
            seq += 1
            logdir = os.path.join(logroot, f"{seq:03d}-{impl.name}-{method}-{scenario}")
            os.makedirs(logdir)
            t0 = time.monotonic()
            try:
                run = run_once(impl, method, scenario, cfg, logdir)
            except (BenchError, OSError, ValueError, KeyError) as e:
                print(f"  {label}: FAILED: {e} (logs: {logdir})", file=sys.stderr)
                return {"impl": impl.name, "method": method, "scenario": scenario,
                        "error": str(e), "logs": logdir}
            f = figures(run)
            unit = OVERVIEW_UNITS.get(scenario, ("s/GB", "MB/s"))
            p = {"rr": 0, "udp": 1, "udp16": 1}.get(scenario, 3)
            lost = f", {f['lost']} lost" if scenario in UDP_SCENARIOS else ""
            print(f"  {label}: relays {f['total_cpu']:.{p}f} {unit[0]} (tunnel "
                  f"{f['tunnel_cpu']:.{p}f}, server {f['server_cpu']:.{p}f}), {f['rate']:.0f} "
                  f"{unit[1]}{lost}, RSS {f['tunnel_rss_mib']:.1f}/{f['server_rss_mib']:.1f} MiB "
                  f"[{time.monotonic() - t0:.1f} s]", file=sys.stderr)
            return run

        if not args.no_warmup:
            warm = argparse.Namespace(**vars(args))
            warm.bytes = min(args.bytes, 64 * MIB)
            warm.bytes -= warm.bytes % args.conns
            warm.udp_count = min(args.udp_count, 10000)
            # a udp-only run warms up with udp, everything else with an upload
            warm_test = "udp" if set(args.scenario_list) <= set(UDP_SCENARIOS) else "upload"
            for impl in impls.values():
                wm = next((m for m in args.method_list if supports(impl, m)), "aes-256-gcm")
                if not supports(impl, wm, warm_test):
                    continue
                run = attempt(impl, wm, warm_test, warm, f"warm-up {impl.name}")
                if "error" in run:
                    failures += 1

        runs = []
        for method in args.method_list:
            for scenario in args.scenario_list:
                print(f"{method} {scenario}:", file=sys.stderr)
                for rep in range(args.repeat):
                    for impl in impls.values():
                        if not supports(impl, method, scenario):
                            continue
                        run = attempt(impl, method, scenario, args,
                                      f"run {rep + 1}/{args.repeat} {impl.name:5}")
                        run["rep"] = rep + 1
                        runs.append(run)
                        if "error" in run:
                            failures += 1

        if not runs:
            raise BenchError("the implementations chosen run none of the tests chosen "
                             "(floor runs rr only; libev has no none or bypass)")
        groups = summarize(runs, impls, args.method_list, args.scenario_list,
                           args.noise)
        report = markdown(groups, args.impl_names, args, machine)
        print(report)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(report + "\n")
        if args.svg:
            chart = svg_chart(groups, args.impl_names)
            if chart:
                with open(args.svg, "w") as f:
                    f.write(chart)
        if args.json:
            config = {k: v for k, v in vars(args).items()
                      if k not in ("impl_names", "method_list", "scenario_list", "pin")}
            config["pin_layout"] = {role: sorted(c) for role, c in args.pin.items()}
            config.update(impls={n: {"ss-server": i.server, "ss-tunnel": i.tunnel}
                                 for n, i in impls.items()})
            with open(args.json, "w") as f:
                json.dump({"machine": machine, "config": config, "runs": runs,
                           "summary": groups}, f, indent=1, ensure_ascii=False)
                f.write("\n")
    except BenchError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 2
    finally:
        if own_logdir and not failures:
            shutil.rmtree(logroot, ignore_errors=True)
        elif failures:
            print(f"logs of the failed runs: {logroot}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
