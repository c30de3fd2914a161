# SPDX-License-Identifier: MIT
"""Command line and JSON configuration: refused methods, config files,
precedence, validation messages, --key, signals."""

import base64
import json
import os
import re
import signal
import subprocess
import time

import pytest

import sslib
from sslib import T

PROGS = ("ss-server", "ss-local", "ss-tunnel")


def stderr_lines(p):
    return [line for line in p.stderr().splitlines() if line.strip()]


def base_settings(prog, method, password="pw-" + "x" * 8):
    """Complete settings for prog (ports free now, nothing to connect to):
    (argv, json dict)."""
    sp = sslib.free_port()
    argv = ["-s", "127.0.0.1", "-p", str(sp), "-k", password, "-m", method]
    conf = {"server": "127.0.0.1", "server_port": sp, "password": password, "method": method}
    if prog in ("ss-local", "ss-tunnel"):
        lp = sslib.free_port()
        argv += ["-b", "127.0.0.1", "-l", str(lp)]
        conf.update(local_address="127.0.0.1", local_port=lp)
    if prog == "ss-tunnel":
        argv += ["-L", "127.0.0.1:%d" % sslib.free_port()]
        conf["tunnel_address"] = "127.0.0.1:%d" % sslib.free_port()
    return argv, conf


def write_json(tmp_path, conf, name="config.json"):
    path = tmp_path / name
    path.write_text(conf if isinstance(conf, str) else json.dumps(conf))
    return str(path)


def run_all(ss, runs, timeout=None):
    """Starts every (prog, argv) at once; waits for all with one deadline.
    Returns [(exit code or None, Program)]; programs still running at the
    deadline are killed."""
    progs = []
    for name, argv in runs:
        p = ss.procs.start(ss.exe(name), argv)
        p.expect_exit = True
        progs.append(p)
    deadline = time.monotonic() + (T(5) if timeout is None else timeout)
    out = []
    for p in progs:
        rc = p.wait_exit(max(0.0, deadline - time.monotonic()))
        if rc is None:
            p.kill()
        out.append((rc, p))
    return out


def word(name):
    """name as a whole token (so "chacha20" does not match inside
    "chacha20-ietf-poly1305")."""
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")


def check_removed(rc, p, method):
    """Returns a problem description, or None."""
    if rc is None:
        return "%s: still running %.0fs after start" % (method, T(5))
    if rc == 0:
        return "%s: exit status 0" % method
    lines = stderr_lines(p)
    if len(lines) != 1:
        return "%s: %d lines on stderr, expected 1: %r" % (method, len(lines), lines[:5])
    line = lines[0]
    if not word(method).search(line):
        return "%s: the message does not name the method: %r" % (method, line)
    if "removed" not in line.lower():
        return "%s: the message does not say 'removed': %r" % (method, line)
    if not any(m in line for m in sslib.AEAD_METHODS):
        return "%s: the message suggests no AEAD method: %r" % (method, line)
    return None


@pytest.mark.parametrize("prog", PROGS)
def test_removed_method_on_command_line(ss, prog):
    runs = [(prog, base_settings(prog, m)[0]) for m in sslib.REMOVED_METHODS]
    results = run_all(ss, runs)
    problems = [check_removed(rc, p, m) for (rc, p), m in zip(results, sslib.REMOVED_METHODS)]
    problems = [x for x in problems if x]
    if problems:
        pytest.fail("%s -m <stream cipher>:\n" % prog + "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("prog", PROGS)
def test_removed_method_in_json(ss, tmp_path, prog):
    runs = []
    for m in sslib.REMOVED_METHODS:
        _, conf = base_settings(prog, m)
        runs.append((prog, ["-c", write_json(tmp_path, conf, "c-%s.json" % m)]))
    results = run_all(ss, runs)
    problems = [check_removed(rc, p, m) for (rc, p), m in zip(results, sslib.REMOVED_METHODS)]
    problems = [x for x in problems if x]
    if problems:
        pytest.fail("%s -c {\"method\": <stream cipher>}:\n" % prog + "\n".join(problems),
                    pytrace=False)


@pytest.mark.parametrize("prog", PROGS)
def test_unknown_method_lists_supported(ss, prog):
    argv, _ = base_settings(prog, "no-such-cipher-512")
    (rc, p), = run_all(ss, [(prog, argv)])
    assert rc is not None, "still running with an unknown method"
    assert rc != 0
    err = p.stderr()
    assert "no-such-cipher-512" in err, "the message does not name the method: %r" % err
    missing = [m for m in sslib.AEAD_METHODS if m not in err]
    assert not missing, "supported methods not listed: %s\n%s" % (missing, err)


# --- configuration files -------------------------------------------------

def start_from_json(ss, tmp_path, prog, conf, listen, name):
    """Starts prog -c <conf> and waits until listen (host, port) accepts."""
    p = ss.procs.start(ss.exe(prog), ["-c", write_json(tmp_path, conf, name)])
    p.wait_listening(*listen)
    return p


def test_json_server_as_string(ss, echo, tmp_path):
    pw, method = sslib.random_password(), "aes-128-gcm"
    sp, lp, tp = sslib.free_port(), sslib.free_port(), sslib.free_port()
    start_from_json(ss, tmp_path, "ss-server", {
        "server": "127.0.0.1", "server_port": sp, "password": pw, "method": method,
        "timeout": 30}, ("127.0.0.1", sp), "server.json")
    start_from_json(ss, tmp_path, "ss-local", {
        "server": "127.0.0.1", "server_port": sp, "local_address": "127.0.0.1",
        "local_port": lp, "password": pw, "method": method}, ("127.0.0.1", lp), "local.json")
    start_from_json(ss, tmp_path, "ss-tunnel", {
        "server": "127.0.0.1", "server_port": sp, "local_address": "127.0.0.1",
        "local_port": tp, "password": pw, "method": method,
        "tunnel_address": "127.0.0.1:%d" % echo.port}, ("127.0.0.1", tp), "tunnel.json")
    with sslib.socks5_connect(("127.0.0.1", lp), *echo.addr) as s:
        sslib.small_exchange(s, 20000)
    with sslib.connect("127.0.0.1", tp) as s:
        sslib.small_exchange(s, 20000)


def test_json_server_as_array(ss, echo, tmp_path):
    """ss-server listens on every address of the array; ss-local uses the
    servers of its array."""
    pw, method = sslib.random_password(), "aes-256-gcm"
    sp, lp = sslib.free_port(), sslib.free_port()
    srv = start_from_json(ss, tmp_path, "ss-server", {
        "server": ["127.0.0.1", "::1"], "server_port": sp, "password": pw,
        "method": method}, ("127.0.0.1", sp), "server.json")
    srv.wait_listening("::1", sp)
    for host in ("127.0.0.1", "::1"):
        single = sslib.Server(None, host, sp, method, pw)
        local = ss.local(single)
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.small_exchange(s, 5000)
    start_from_json(ss, tmp_path, "ss-local", {
        "server": ["::1", "127.0.0.1"], "server_port": sp, "local_address": "127.0.0.1",
        "local_port": lp, "password": pw, "method": method}, ("127.0.0.1", lp), "local.json")
    for _ in range(8):
        with sslib.socks5_connect(("127.0.0.1", lp), *echo.addr) as s:
            sslib.small_exchange(s, 1000)


def test_json_ports_and_timeout_as_strings(ss, echo, tmp_path):
    pw, method = sslib.random_password(), "chacha20-ietf-poly1305"
    sp, lp = sslib.free_port(), sslib.free_port()
    start_from_json(ss, tmp_path, "ss-server", {
        "server": "127.0.0.1", "server_port": str(sp), "password": pw, "method": method,
        "timeout": "30"}, ("127.0.0.1", sp), "server.json")
    start_from_json(ss, tmp_path, "ss-local", {
        "server": "127.0.0.1", "server_port": str(sp), "local_address": "127.0.0.1",
        "local_port": str(lp), "password": pw, "method": method, "timeout": "30"},
        ("127.0.0.1", lp), "local.json")
    with sslib.socks5_connect(("127.0.0.1", lp), *echo.addr) as s:
        sslib.small_exchange(s, 5000)


def test_json_client_server_with_port(ss, echo, tmp_path):
    """A client's "server": "host:port" takes that port over server_port."""
    server = ss.server(method="aes-128-gcm")
    lp = sslib.free_port()
    start_from_json(ss, tmp_path, "ss-local", {
        "server": "127.0.0.1:%d" % server.port, "server_port": sslib.free_port(),
        "local_address": "127.0.0.1", "local_port": lp, "password": server.password,
        "method": server.method}, ("127.0.0.1", lp), "local.json")
    with sslib.socks5_connect(("127.0.0.1", lp), *echo.addr) as s:
        sslib.small_exchange(s, 5000)


def test_command_line_overrides_json(ss, echo, tmp_path):
    pw, method = sslib.random_password(), "aes-256-gcm"
    sp, lp = sslib.free_port(), sslib.free_port()
    # The server's file has the wrong password and method; flags fix them.
    srv_conf = write_json(tmp_path, {"server": "127.0.0.1", "server_port": sp,
                                     "password": "not-" + pw, "method": "aes-128-gcm"},
                          "server.json")
    p = ss.procs.start(ss.exe("ss-server"), ["-c", srv_conf, "-k", pw, "-m", method])
    p.wait_listening("127.0.0.1", sp)
    # The client's file points at a dead port with the wrong password.
    loc_conf = write_json(tmp_path, {"server": "127.0.0.1", "server_port": sslib.free_port(),
                                     "local_address": "127.0.0.1", "local_port": lp,
                                     "password": "wrong", "method": method}, "local.json")
    p = ss.procs.start(ss.exe("ss-local"), ["-c", loc_conf, "-p", str(sp), "-k", pw])
    p.wait_listening("127.0.0.1", lp)
    with sslib.socks5_connect(("127.0.0.1", lp), *echo.addr) as s:
        sslib.small_exchange(s, 5000)


BAD_PORT_CASES = [
    # (program, where, flag or key, bad value, what the message must name)
    ("ss-server", "cli", "-p", "70000", r"(?<![\w-])-p\b|server_port"),
    ("ss-server", "cli", "-p", "abc", r"(?<![\w-])-p\b|server_port"),
    ("ss-server", "cli", "-p", "-1", r"(?<![\w-])-p\b|server_port"),
    ("ss-local", "cli", "-l", "70000", r"(?<![\w-])-l\b|local_port"),
    ("ss-local", "cli", "-l", "abc", r"(?<![\w-])-l\b|local_port"),
    ("ss-local", "cli", "-p", "0x50zz", r"(?<![\w-])-p\b|server_port"),
    ("ss-tunnel", "cli", "-L", "127.0.0.1:99999", r"(?<![\w-])-L\b|tunnel_address"),
    ("ss-server", "json", "server_port", 70000, r"server_port"),
    ("ss-server", "json", "server_port", "abc", r"server_port"),
    ("ss-local", "json", "local_port", 123456, r"local_port"),
    ("ss-tunnel", "json", "tunnel_address", "127.0.0.1:port", r"tunnel_address"),
]


@pytest.mark.parametrize("prog,where,name,value,pattern", BAD_PORT_CASES,
                         ids=["%s-%s-%s=%s" % c[:4] for c in BAD_PORT_CASES])
def test_bad_port_is_rejected(ss, tmp_path, prog, where, name, value, pattern):
    argv, conf = base_settings(prog, "aes-256-gcm")
    if where == "cli":
        argv[argv.index(name) + 1] = value
        args = argv
    else:
        conf[name] = value
        args = ["-c", write_json(tmp_path, conf)]
    (rc, p), = run_all(ss, [(prog, args)])
    assert rc is not None, "%s still running with %s %r" % (prog, name, value)
    assert rc != 0
    err = p.stderr()
    assert re.search(pattern, err), "the message does not name the setting (%s): %r" % (
        pattern, err)


@pytest.mark.parametrize("prog", PROGS)
def test_missing_password_is_rejected(ss, tmp_path, prog):
    argv, conf = base_settings(prog, "aes-256-gcm")
    i = argv.index("-k")
    del argv[i:i + 2]
    del conf["password"]
    cli, js = run_all(ss, [(prog, argv),
                           (prog, ["-c", write_json(tmp_path, conf)])])
    for how, (rc, p) in (("command line", cli), ("json", js)):
        assert rc is not None and rc != 0, "%s without a password (%s): exit %s" % (
            prog, how, rc)
        err = p.stderr()
        assert re.search(r"password|(?<![\w-])-k\b|--key", err), \
            "%s (%s): the message does not name the password: %r" % (prog, how, err)


# --- --key -----------------------------------------------------------------

def _urlsafe_key(method):
    """A random key whose URL-safe base64 uses '-' or '_'."""
    while True:
        k = sslib.random_key_b64(method)
        if "-" in k or "_" in k:
            return k


@pytest.mark.parametrize("method", ("aes-128-gcm", "xchacha20-ietf-poly1305"))
def test_key_base64(ss, echo, method):
    key = _urlsafe_key(method)
    server = ss.server(method=method, key=key)
    local = ss.local(server)  # the same --key
    tunnel = ss.tunnel(server, echo.addr)
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.echo_check(s, os.urandom(100000), timeout=T(20))
    with sslib.connect(*tunnel.addr) as s:
        sslib.small_exchange(s, 5000)


def test_key_matches_password_derivation(ss, echo):
    """--key base64(EVP_BytesToKey(password)) talks to -k password, both
    ways round."""
    method, pw = "aes-256-gcm", sslib.random_password()
    key = sslib.key_b64_from_password(method, pw)
    server = ss.server(method=method, password=pw)
    local = ss.local(server, key=key)
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.small_exchange(s, 5000)
    server2 = ss.server(method=method, key=key)
    local2 = ss.local(server2, password=pw)
    with sslib.socks5_connect(local2.addr, *echo.addr) as s:
        sslib.small_exchange(s, 5000)


def test_key_different_from_password_fails(ss, echo):
    method = "aes-256-gcm"
    server = ss.server(method=method, password=sslib.random_password())
    local = ss.local(server, key=sslib.random_key_b64(method))
    s, rep = sslib.socks5_open(local.addr, *echo.addr)
    with s:
        if rep == 0:
            s.sendall(b"x" * 100)
        _, data = sslib.wait_closed(s, 1.0)
        assert data == b""
    assert echo.accepted == 0


@pytest.mark.parametrize("bad", ("AAAA", "!!!not base64!!!",
                                 base64.urlsafe_b64encode(b"k" * 16).decode()),
                         ids=("short", "not_base64", "16_bytes_for_32"))
def test_bad_key_is_rejected(ss, bad):
    argv, _ = base_settings("ss-server", "aes-256-gcm")
    i = argv.index("-k")
    argv[i:i + 2] = ["--key", bad]
    (rc, p), = run_all(ss, [("ss-server", argv)])
    assert rc is not None and rc != 0, "ss-server with --key %r: exit %s" % (bad, rc)
    assert re.search(r"key", p.stderr(), re.I), "no message about the key: %r" % p.stderr()


# --- signals ---------------------------------------------------------------

@pytest.mark.parametrize("sig", (signal.SIGTERM, signal.SIGINT), ids=("TERM", "INT"))
@pytest.mark.parametrize("prog", PROGS)
def test_signal_exits_zero(ss, echo, prog, sig):
    """With connections open, SIGTERM/SIGINT make the program exit 0 quickly."""
    server = ss.server()
    local = ss.local(server)
    tunnel = ss.tunnel(server, echo.addr)
    a = sslib.socks5_connect(local.addr, *echo.addr)
    b = sslib.connect(*tunnel.addr)
    try:
        sslib.small_exchange(a)
        sslib.small_exchange(b)
        target = {"ss-server": server, "ss-local": local, "ss-tunnel": tunnel}[prog].program
        target.expect_exit = True
        target.proc.send_signal(sig)
        t0 = time.monotonic()
        rc = target.wait_exit(T(3))
        took = time.monotonic() - t0
        if rc is None:
            target.kill()
        assert rc is not None, "%s still running %.1fs after %s" % (prog, T(3), sig.name)
        assert rc == 0, "%s exited %d on %s" % (prog, rc, sig.name)
        assert took < T(3)
    finally:
        a.close()
        b.close()


# --- daemon ----------------------------------------------------------------

def test_daemon_with_pid_file_and_user(ss, echo, tmp_path):
    """-f forks into the background and writes the pid; -a switches user;
    the daemon serves and stops on SIGTERM."""
    import pwd
    user = pwd.getpwuid(os.getuid()).pw_name
    pidfile = tmp_path / "ss-server.pid"
    port = sslib.free_port()
    password = sslib.random_password()
    argv = ["-s", "127.0.0.1", "-p", str(port), "-k", password, "-m", "aes-256-gcm",
            "-f", str(pidfile), "-a", user]
    (rc, p), = run_all(ss, [("ss-server", argv)])
    assert rc == 0, "the foreground part exits 0 once the daemon runs: %s %r" % (rc, p.stderr())
    pid = int(pidfile.read_text().strip())
    try:
        status = open("/proc/%d/status" % pid).read()
        uid = int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
        assert uid == os.getuid()
        server = sslib.Server(None, "127.0.0.1", port, "aes-256-gcm", password)
        tunnel = ss.tunnel(server, echo.addr)
        s = sslib.connect(*tunnel.addr)
        try:
            sslib.small_exchange(s)
        finally:
            s.close()
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + T(3)
    while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists("/proc/%d" % pid), "the daemon did not stop on SIGTERM"


# --- what encrypts each method -----------------------------------------------

# Every flag our VAES AES-GCM needs, as /proc/cpuinfo names them.
VAES_FLAGS = {"aes", "pclmulqdq", "avx512f", "avx512bw", "avx512vl", "vaes", "vpclmulqdq"}


def cpu_has_vaes():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return VAES_FLAGS <= set(line.split(":", 1)[1].split())
    return False


def run_version(ss, prog, env=None):
    """prog --version: (its stdout, {method: what encrypts it})."""
    p = ss.procs.start(ss.exe(prog), ["--version"], env=env)
    p.expect_exit = True
    rc = p.wait_exit(T(5))
    assert rc == 0, "%s --version: exit %s\n%s" % (prog, rc, p.describe())
    out = p.stdout()
    methods = dict(line.split(None, 1) for line in out.split("\nlibraries:")[0].splitlines()
                   if line.startswith("  "))
    return out, methods


def started_line(p):
    """The start-up line in p's log, once it is there."""
    deadline = time.monotonic() + T(5)
    while time.monotonic() < deadline:
        for line in p.stderr().splitlines():
            if " started, method " in line:
                return line
        time.sleep(0.02)
    raise AssertionError("no start-up line:\n" + p.describe())


AES_OURS = ("aes-128-gcm", "aes-256-gcm", "2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm")


@pytest.mark.parametrize("prog", PROGS)
def test_version_names_what_encrypts(ss, prog):
    """--version gives the version, whether our own code was built and runs,
    and what encrypts every method on this CPU: our VAES code for AES-128/256
    exactly where the CPU has it (and the build has the code), a library for
    everything else."""
    out, methods = run_version(ss, prog)
    assert out.startswith(prog + " (shadowsocks-c) "), out
    missing = [m for m in sslib.AEAD_METHODS + sslib.SIP022_METHODS + ("none",)
               if m not in methods]
    assert not missing, "--version lacks %s:\n%s" % (missing, out)
    if "own code not built" in out:
        ours = False
    else:
        assert "own code built in (SS_OWN_CRYPTO=ON) and in use" in out, out
        ours = cpu_has_vaes()
    for m, what in methods.items():
        if m in AES_OURS:
            assert ("own VAES/AVX-512 code" in what) == ours, "%s: %s" % (m, what)
        else:
            assert "own" not in what, "%s: %s" % (m, what)
        if m not in AES_OURS or not ours:
            assert m in ("none", "plain") or re.search(r"OpenSSL|libsodium|Mbed TLS", what), \
                "%s names no library: %s" % (m, what)
    assert methods["none"].strip() == "no encryption"


LIBRARIES = ("libev", "c-ares", "libsodium", "Mbed TLS", "OpenSSL", "PCRE2", "cJSON",
             "qrencode", "BLAKE3")


@pytest.mark.parametrize("prog", PROGS)
def test_version_names_the_libraries(ss, prog):
    """--version names each library with the version built against and the
    one in use, each a version number where the library gives one."""
    out, _ = run_version(ss, prog)
    assert "\nlibraries:" in out, out
    rows = {}
    for line in out.split("\nlibraries:")[1].splitlines()[1:]:
        for name in LIBRARIES:
            if line.startswith("  " + name + " "):
                rows[name] = line[len(name) + 2:].split(None, 1)
    assert sorted(rows) == sorted(LIBRARIES), out
    version = re.compile(r"^\d+\.\d+")
    for name in ("libev", "c-ares", "libsodium", "Mbed TLS", "PCRE2", "cJSON"):
        built, runs = rows[name]
        assert version.match(built) and version.match(runs), "%s: %r" % (name, rows[name])
        # Same major version: the loader would not take another soname.
        assert built.split(".")[0] == runs.split(".")[0], "%s: %r" % (name, rows[name])
    for name in ("OpenSSL", "qrencode", "BLAKE3"):
        built, runs = rows[name]
        assert version.match(runs) or "not built in" in runs or "deps/" in runs, \
            "%s: %r" % (name, rows[name])
    # The build line (configure's summary) says the same of what was taken.
    build = re.search(r"^build: crypto ([^(]+) \(.*, qrencode ([^,]+), blake3 (\S+)", out, re.M)
    assert build, out
    crypto, qr, blake3 = build.groups()
    assert crypto.startswith("openssl ") == ("not built in" not in rows["OpenSSL"][1]), out
    assert (qr == "no") == ("not built in" in rows["qrencode"][1]), out
    assert (blake3 == "own") == ("deps/" in rows["BLAKE3"][1]), out
    assert "mbedtls " + rows["Mbed TLS"][0] in crypto, out
    # The version of the linked library is the one the loader found.
    ldd = subprocess.run(["ldd", ss.exe(prog)], capture_output=True, text=True).stdout
    if "libcares" in ldd:
        import ctypes
        lib = ctypes.CDLL("libcares.so.2")
        lib.ares_version.restype = ctypes.c_char_p
        assert rows["c-ares"][1] == lib.ares_version(None).decode(), rows["c-ares"]


@pytest.mark.parametrize("value", ("0", "off", "no"))
def test_version_with_own_code_turned_off(ss, value):
    """SS_OWN_CRYPTO=0 (off, no): every method from a library, and --version
    says why."""
    out, methods = run_version(ss, "ss-server", env={"SS_OWN_CRYPTO": value})
    assert ("turned off by SS_OWN_CRYPTO=%s in the environment" % value in out
            or "own code not built" in out), out
    ours = [m for m, what in methods.items() if "own" in what]
    assert not ours, "own code still named with SS_OWN_CRYPTO=%s: %s" % (value, ours)


@pytest.mark.parametrize("method", ("aes-256-gcm", "chacha20-ietf-poly1305"))
def test_startup_line_and_library_peer(ss, echo, method):
    """The start-up line names what encrypts the method, as --version does;
    a server on the library alone (SS_OWN_CRYPTO=0) and a tunnel with our
    own code carry traffic both ways."""
    _, with_own = run_version(ss, "ss-tunnel")
    _, lib_only = run_version(ss, "ss-server", env={"SS_OWN_CRYPTO": "0"})
    server = ss.server(method=method, env={"SS_OWN_CRYPTO": "0"})
    tunnel = ss.tunnel(server, echo.addr)
    line = started_line(server.program)
    assert "started, method %s (%s)" % (method, lib_only[method].strip()) in line, line
    assert "own" not in line and re.search(r"OpenSSL|libsodium|Mbed TLS", line), line
    line = started_line(tunnel.program)
    assert "started, method %s (%s)" % (method, with_own[method].strip()) in line, line
    s = sslib.connect(*tunnel.addr)
    try:
        sslib.small_exchange(s, 200000)
    finally:
        s.close()
