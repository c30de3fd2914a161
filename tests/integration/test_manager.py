# SPDX-License-Identifier: MIT
"""ss-manager: ports added over its control socket (UDP and Unix), each
served in the manager's one process; ping and list as libev's manager
answers them; remove closes a port and leaves the others; the state file
brings the ports back after a restart; malformed commands, plugins not
allowed and ACLs outside acl_dir are refused without harm."""

import json
import os
import socket
import stat
import time

import sslib

METHODS = ("aes-256-gcm", "chacha20-ietf-poly1305")


class Control:
    """The manager's control socket, from a client's side."""

    def __init__(self, addr, tmp_path=None):
        self.addr = addr
        if isinstance(addr, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.sock.bind(str(tmp_path / "client.sock"))
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(sslib.T(3))

    def ask(self, text):
        if isinstance(text, str):
            text = text.encode()
        self.sock.sendto(text, self.addr)
        return self.sock.recv(65536).decode()

    def add(self, port, password, method=None, **fields):
        cmd = dict(server_port=port, password=password, **fields)
        if method:
            cmd["method"] = method
        return self.ask("add: " + json.dumps(cmd))

    def remove(self, port):
        return self.ask('remove: {"server_port": %d}' % port)

    def ping(self):
        reply = self.ask("ping")
        assert reply.startswith("stat: "), reply
        return {int(k): v for k, v in json.loads(reply[len("stat: "):]).items()}

    def list(self):
        return {int(p["server_port"]): p for p in json.loads(self.ask("list"))}

    def close(self):
        self.sock.close()


def loopback_config(tmp_path, **config):
    """A manager file whose ports may reach loopback, where every target of
    these tests is ("block_private" is on by default)."""
    config.setdefault("block_private", False)
    path = tmp_path / "manager.json"
    path.write_text(json.dumps(config))
    return str(path)


def start_manager(ss, tmp_path, control, extra=(), config=None, name="ss-manager"):
    """ss-manager with its state file in tmp_path; waits until it answers."""
    args = ["--manager-address", control, "-s", sslib.LOOPBACK4, "-m", METHODS[0],
            "--state", str(tmp_path / "state.json")] + list(extra)
    args += ["-c", loopback_config(tmp_path, **(config or {}))]
    p = ss.procs.start(ss.exe("ss-manager"), args, name=name)
    addr = control if control.startswith("/") else (
        sslib.LOOPBACK4, int(control.rsplit(":", 1)[1]))
    c = Control(addr, tmp_path)
    # A datagram sent before the socket is bound is lost without a word.
    assert sslib.wait_for(lambda: not p.alive() or "started" in p.stderr(), sslib.T(10)), \
        p.describe()
    assert p.alive(), p.describe()
    c.ping()
    return p, c


def udp_control():
    return "%s:%d" % (sslib.LOOPBACK4, sslib.free_port(kind=socket.SOCK_DGRAM))


def client_for(ss, port, password, method):
    server = sslib.Server(None, sslib.LOOPBACK4, port, method, password)
    return sslib.start_local(ss.procs, ss.exe("ss-local"), server)


def relay_ok(client, echo, nbytes=20000):
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, os.urandom(nbytes))


def refused(port):
    try:
        socket.create_connection((sslib.LOOPBACK4, port), timeout=1).close()
        return False
    except ConnectionRefusedError:
        return True


def two_ports(ss, c, echo):
    """Adds two ports with methods and passwords of their own and relays
    through each; returns [(port, password, method, client)]."""
    ports = []
    for method in METHODS:
        port, password = sslib.free_port(), sslib.random_password()
        assert c.add(port, password, method) == "ok"
        client = client_for(ss, port, password, method)
        relay_ok(client, echo)
        ports.append((port, password, method, client))
    return ports


def test_udp_add_relay_ping_list_remove(ss, tmp_path, echo):
    mgr, c = start_manager(ss, tmp_path, udp_control())
    ports = two_ports(ss, c, echo)
    (p1, pw1, m1, c1), (p2, pw2, m2, c2) = ports

    assert set(c.ping()) == {p1, p2}
    # 20,000 bytes each way through each port, counted once the server has
    # seen the connection end.
    assert sslib.wait_for(lambda: all(v >= 40000 for v in c.ping().values()), sslib.T(3)), \
        c.ping()
    listed = c.list()
    assert set(listed) == {p1, p2}
    assert (listed[p1]["password"], listed[p1]["method"]) == (pw1, m1)
    assert (listed[p2]["password"], listed[p2]["method"]) == (pw2, m2)

    assert c.remove(p1) == "ok"
    assert sslib.wait_for(lambda: refused(p1), sslib.T(3)), "port %d still open" % p1
    relay_ok(c2, echo)
    assert set(c.ping()) == {p2}
    assert set(c.list()) == {p2}
    # The same port twice is refused, and the first stays.
    assert c.add(p2, "other") == "err"
    relay_ok(c2, echo)
    # A port removed can be added again at once, with a new password.
    new_pw = sslib.random_password()
    assert c.remove(p2) == "ok" and c.add(p2, new_pw, m2) == "ok"
    relay_ok(client_for(ss, p2, new_pw, m2), echo)
    state = json.loads((tmp_path / "state.json").read_text())
    assert [e["server_port"] for e in state["ports"]] == [p2]
    assert mgr.alive()


def test_unix_socket(ss, tmp_path, echo):
    path = str(tmp_path / "manager.sock")
    mgr, c = start_manager(ss, tmp_path, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    ports = two_ports(ss, c, echo)
    assert set(c.ping()) == {p[0] for p in ports}
    assert c.remove(ports[0][0]) == "ok"
    assert sslib.wait_for(lambda: refused(ports[0][0]), sslib.T(3))
    relay_ok(ports[1][3], echo)
    mgr.terminate()
    assert not os.path.exists(path), "the socket is removed at exit"


def test_restart_brings_ports_back(ss, tmp_path, echo):
    control = udp_control()
    mgr, c = start_manager(ss, tmp_path, control)
    ports = two_ports(ss, c, echo)
    # SIGHUP reads the file again; the ports go on.
    os.kill(mgr.pid, 1)
    assert sslib.wait_for(lambda: "configuration reloaded" in mgr.stderr(), sslib.T(3)), \
        mgr.describe()
    assert set(c.ping()) == {p[0] for p in ports}
    # Fields of every kind come back as they were given.
    extra = sslib.free_port()
    assert c.add(extra, "pw", fast_open=True, timeout=300, mode="tcp_and_udp") == "ok"
    c.close()
    assert mgr.terminate() == 0
    state = tmp_path / "state.json"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    assert [f for f in os.listdir(tmp_path) if f.startswith("state.json.")] == []
    for port, _, _, _ in ports:
        assert refused(port)

    mgr, c = start_manager(ss, tmp_path, control, name="ss-manager-again")
    listed = c.list()
    assert set(listed) == {p[0] for p in ports} | {extra}
    assert (listed[extra]["fast_open"], listed[extra]["timeout"],
            listed[extra]["mode"]) == ("true", "300", "tcp_and_udp")
    for port, password, method, client in ports:
        relay_ok(client, echo)
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600


def test_damaged_state_file_stops_the_start(ss, tmp_path):
    (tmp_path / "state.json").write_text('{"ports": [{"server_port": "x"')
    rc, p = ss.run("ss-manager", ["--manager-address", udp_control(),
                                  "--state", str(tmp_path / "state.json")])
    assert rc == 1, p.describe()
    assert "state file" in p.stderr(), p.stderr()
    (tmp_path / "state.json").write_text('{"ports": [{"server_port": 0}]}')
    rc, p = ss.run("ss-manager", ["--manager-address", udp_control(),
                                  "--state", str(tmp_path / "state.json")])
    assert rc == 1 and "port entry 0" in p.stderr(), p.describe()


MALFORMED = [
    b"bogus", b"", b"add", b"add:", b"add: {bad", b'add: {"server_port": 8388}',
    b'add: {"server_port": 70000, "password": "x"}', b'add: {"server_port": 1, "password": 5}',
    b'add: ["server_port", 1]', b'add: {"server_port": 1, "password": "x"} trailing',
    b"remove: {}", b'remove: {"server_port": "abc"}', b"\xff\xfe\x00add: {}", b"ping pong",
    b'add: {"server_port": 1, "password": "x", "method": "rc4-md5"}',
    b'add: {"server_port": 1, "password": "x\\nx"}',
    b'add: {"server_port": 1, "password": "x", "fast_open": "yes"}',
]


def test_malformed_commands_are_refused(ss, tmp_path):
    mgr, c = start_manager(ss, tmp_path, udp_control())
    for cmd in MALFORMED:
        assert c.ask(cmd) == "err", cmd
        assert c.ping() == {}, cmd
    assert mgr.stderr().count("refused") + mgr.stderr().count("add port") >= len(MALFORMED)
    assert mgr.alive()


def test_port_in_use_leaves_nothing(ss, tmp_path):
    mgr, c = start_manager(ss, tmp_path, udp_control())
    with socket.socket() as taken:
        taken.bind((sslib.LOOPBACK4, 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert c.add(port, "pw") == "err"
    assert c.list() == {} and c.ping() == {}
    assert "add port %d" % port in mgr.stderr()


def test_plugins_and_acls_only_from_the_configuration(ss, tmp_path, echo):
    acl_dir = tmp_path / "acl"
    acl_dir.mkdir()
    (acl_dir / "ok.acl").write_text("[accept_all]\n")
    (tmp_path / "outside.acl").write_text("[accept_all]\n")
    config = {"plugins": ["obfs-server"], "acl_dir": str(acl_dir)}
    mgr, c = start_manager(ss, tmp_path, udp_control(), config=config)

    for plugin in ("sh", "/bin/sh", "obfs-server; touch /tmp/x", "../obfs-server"):
        assert c.add(sslib.free_port(), "pw", plugin=plugin) == "err", plugin
        assert "is not one the manager" in mgr.stderr()
    for acl in (str(tmp_path / "outside.acl"), str(acl_dir / ".." / "outside.acl"),
                "/etc/passwd", str(acl_dir / "missing.acl")):
        assert c.add(sslib.free_port(), "pw", acl=acl) == "err", acl
    assert c.list() == {}

    # What acl_dir holds is taken, and the port serves.
    port, password = sslib.free_port(), sslib.random_password()
    assert c.add(port, password, acl=str(acl_dir / "ok.acl")) == "ok"
    relay_ok(client_for(ss, port, password, METHODS[0]), echo)
    assert mgr.alive()


def test_allowed_plugin_runs_by_name(ss, tmp_path, echo):
    """A plugin the configuration lists is found in PATH and run by name."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    here = os.path.dirname(os.path.abspath(__file__))
    os.symlink(os.path.join(here, "xorplugin.py"), bindir / "xorplugin")
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ.get("PATH", "")))
    args = ["--manager-address", udp_control(), "-s", sslib.LOOPBACK4, "-m", METHODS[0],
            "--state", str(tmp_path / "state.json"),
            "-c", loopback_config(tmp_path, plugins=["xorplugin"])]
    mgr = ss.procs.start(ss.exe("ss-manager"), args, env=env)
    c = Control((sslib.LOOPBACK4, int(args[1].rsplit(":", 1)[1])))
    assert sslib.wait_for(lambda: "started" in mgr.stderr(), sslib.T(10)), mgr.describe()
    port, password = sslib.free_port(), sslib.random_password()
    assert c.add(port, password, plugin="xorplugin", plugin_opts="server;key=7") == "ok"
    server = sslib.Server(None, sslib.LOOPBACK4, port, METHODS[0], password)
    client = sslib.start_local(ss.procs, ss.exe("ss-local"), server, env=env,
                               extra=["--plugin", os.path.join(here, "xorplugin.py"),
                                      "--plugin-opts", "key=7"])
    assert sslib.wait_for(lambda: not refused(port), sslib.T(5))
    relay_ok(client, echo)


def test_control_on_ipv6_loopback(ss, tmp_path, echo):
    """[::1]:PORT is a loopback control socket: no warning, and it serves."""
    port = sslib.free_port(sslib.LOOPBACK6, socket.SOCK_DGRAM)
    args = ["--manager-address", "[::1]:%d" % port, "-s", sslib.LOOPBACK4, "-m", METHODS[0],
            "-c", loopback_config(tmp_path)]
    mgr = ss.procs.start(ss.exe("ss-manager"), args)
    assert sslib.wait_for(lambda: "started" in mgr.stderr(), sslib.T(10)), mgr.describe()
    assert "not on loopback" not in mgr.stderr()
    c = Control((sslib.LOOPBACK6, port))
    c.sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    c.sock.settimeout(sslib.T(3))
    p1, pw = sslib.free_port(), sslib.random_password()
    assert c.add(p1, pw) == "ok"
    relay_ok(client_for(ss, p1, pw, METHODS[0]), echo)
    assert c.ping()[p1] >= 0


def test_daemon_serves_and_reports_a_failed_start(ss, tmp_path, echo):
    """-f: the foreground process returns once the daemon serves; a start
    that fails in the daemon (a damaged state file) is its exit status."""
    control = udp_control()
    pid_file = tmp_path / "mgr.pid"
    args = ["--manager-address", control, "-s", sslib.LOOPBACK4, "-m", METHODS[0],
            "--state", str(tmp_path / "state.json"), "-c", loopback_config(tmp_path),
            "-f", str(pid_file)]
    rc, p = ss.run("ss-manager", args, timeout=sslib.T(10))
    assert rc == 0, p.describe()
    pid = int(pid_file.read_text())
    try:
        c = Control((sslib.LOOPBACK4, int(control.rsplit(":", 1)[1])))
        port, pw = sslib.free_port(), sslib.random_password()
        assert c.add(port, pw) == "ok"
        relay_ok(client_for(ss, port, pw, METHODS[0]), echo)
    finally:
        os.kill(pid, 15)
    assert sslib.wait_for(lambda: not sslib.alive(pid), sslib.T(5))

    (tmp_path / "state.json").write_text("not json")
    rc, p = ss.run("ss-manager", args[:-1] + [str(tmp_path / "other.pid")],
                   timeout=sslib.T(10))
    assert rc == 1 and "state file" in p.stderr(), p.describe()


def test_ports_refuse_private_targets_by_default(ss, tmp_path, echo):
    """Without "block_private": false, a port's clients cannot reach the
    server's loopback (the echo server here), and the refusal is logged."""
    control = udp_control()
    args = ["--manager-address", control, "-s", sslib.LOOPBACK4, "-m", METHODS[0]]
    mgr = ss.procs.start(ss.exe("ss-manager"), args)
    assert sslib.wait_for(lambda: "started" in mgr.stderr(), sslib.T(10)), mgr.describe()
    c = Control((sslib.LOOPBACK4, int(control.rsplit(":", 1)[1])))
    port, pw = sslib.free_port(), sslib.random_password()
    assert c.add(port, pw) == "ok"
    client = client_for(ss, port, pw, METHODS[0])
    try:
        relay_ok(client, echo, nbytes=100)
        reached = True
    except (OSError, AssertionError, sslib.SocksError):
        reached = False
    assert not reached, "a manager's port relayed to loopback"
    assert sslib.wait_for(lambda: "block-private" in mgr.stderr(), sslib.T(5)), mgr.describe()
    assert not echo.records, echo.records


def user_client(ss, port, method, password):
    server = sslib.Server(None, sslib.LOOPBACK4, port, method, password)
    return sslib.start_local(ss.procs, ss.exe("ss-local"), server)


def relays(client, echo, nbytes=2000):
    """Whether nbytes go through client to echo and back (a refused user's
    connection drains: it is given up on after 2 s)."""
    try:
        with sslib.socks5_connect(client.addr, *echo.addr) as s:
            sslib.echo_check(s, os.urandom(nbytes), timeout=sslib.T(2))
        return True
    except (OSError, AssertionError, sslib.SocksError):
        return False


def test_add_and_remove_users_of_a_running_port(ss, tmp_path, echo):
    """add_user and remove_user change a SIP004 port's users at once; the
    others' open connections go on, the removed user's end, and the state
    file keeps the users."""
    mgr, c = start_manager(ss, tmp_path, udp_control())
    port, method = sslib.free_port(), "aes-256-gcm"
    pw = {n: sslib.random_password() for n in ("alice", "bob", "carol")}
    users = [{"name": n, "password": pw[n]} for n in ("alice", "bob")]
    assert c.ask("add: " + json.dumps({"server_port": port, "method": method,
                                       "users": users})) == "ok"
    clients = {n: user_client(ss, port, method, pw[n]) for n in pw}
    assert relays(clients["alice"], echo) and relays(clients["bob"], echo)
    assert not relays(clients["carol"], echo)

    open_alice = sslib.socks5_connect(clients["alice"].addr, *echo.addr)
    open_bob = sslib.socks5_connect(clients["bob"].addr, *echo.addr)
    sslib.echo_check(open_alice, os.urandom(1000))
    sslib.echo_check(open_bob, os.urandom(1000))
    before = c.ping()[port]

    add = {"server_port": port, "name": "carol", "password": pw["carol"]}
    assert c.ask("add_user: " + json.dumps(add)) == "ok"
    assert relays(clients["carol"], echo), mgr.describe()
    assert c.ask("add_user: " + json.dumps(add)) == "err"  # carol is one already
    sslib.echo_check(open_alice, os.urandom(1000))
    sslib.echo_check(open_bob, os.urandom(1000))

    assert c.ask('remove_user: {"server_port": %d, "name": "bob"}' % port) == "ok"
    st, _ = sslib.wait_closed(open_bob, sslib.T(5))
    assert st != "open", "the removed user's connection goes on"
    assert not relays(clients["bob"], echo)
    sslib.echo_check(open_alice, os.urandom(1000))  # the others' go on
    assert relays(clients["alice"], echo) and relays(clients["carol"], echo)
    assert c.ping()[port] >= before + 4000  # the count survives the new instance
    listed = c.list()[port]
    assert [u["name"] for u in listed["users"]] == ["alice", "carol"], listed

    for bad in ('remove_user: {"server_port": %d, "name": "bob"}' % port,
                'remove_user: {"server_port": %d}' % port,
                'add_user: {"server_port": %d, "name": "dave"}' % port,
                'add_user: {"server_port": %d, "name": "x", "password": "y"}' % (port + 1)):
        assert c.ask(bad) == "err", bad
    assert c.ask('remove_user: {"server_port": %d, "name": "alice"}' % port) == "ok"
    assert c.ask('remove_user: {"server_port": %d, "name": "carol"}' % port) == "err"  # the last
    open_alice.close()
    open_bob.close()

    # A restart: the state file has the users as they are now.
    mgr.terminate()
    mgr, c = start_manager(ss, tmp_path, udp_control(), name="ss-manager-2")
    assert sslib.wait_for(lambda: not refused(port), sslib.T(5))
    assert relays(clients["carol"], echo) and not relays(clients["alice"], echo)


def test_add_user_carries_figures_and_replay_records(ss, tmp_path, echo):
    """add_user and remove_user serve the port from a new instance: its
    ping goes on from the earlier instances' (exactly the bytes relayed both
    ways, a removed user's included), and a first flight the port served
    before is refused after."""
    mgr, c = start_manager(ss, tmp_path, udp_control())
    port, method = sslib.free_port(), "aes-256-gcm"
    pw = {n: sslib.random_password() for n in ("alice", "bob")}
    assert c.ask("add: " + json.dumps({"server_port": port, "method": method, "users": [
        {"name": "alice", "password": pw["alice"]}]})) == "ok"
    alice = user_client(ss, port, method, pw["alice"])
    held = sslib.socks5_connect(alice.addr, *echo.addr)
    sslib.echo_check(held, os.urandom(3000))
    stream = sslib.capture_client_stream(ss.procs, ss.exe("ss-local"), method, pw["alice"],
                                         echo.addr, b"once")
    with sslib.connect(sslib.LOOPBACK4, port) as h:
        h.sendall(stream)
        h.settimeout(sslib.T(5))
        assert h.recv(65536), "the captured first flight was not served"
    total = 2 * 3000 + 2 * len(b"once")
    assert sslib.wait_for(lambda: c.ping()[port] == total, sslib.T(5)), (c.ping(), total)

    add = {"server_port": port, "name": "bob", "password": pw["bob"]}
    assert c.ask("add_user: " + json.dumps(add)) == "ok"
    assert c.ping()[port] == total
    with sslib.connect(sslib.LOOPBACK4, port) as h:
        h.sendall(stream)
        state, data = sslib.wait_closed(h, 1.0)
        assert (state, data) == ("open", b""), "the replay got %s %r" % (state, data)
    bob = user_client(ss, port, method, pw["bob"])
    assert relays(bob, echo, 2000)
    sslib.echo_check(held, os.urandom(1000))  # the first instance's, going on
    total += 2 * 2000 + 2 * 1000
    assert c.ping()[port] == total

    assert c.ask('remove_user: {"server_port": %d, "name": "bob"}' % port) == "ok"
    assert c.ping()[port] == total  # bob's bytes stay the port's
    held.close()
    assert relays(alice, echo, 500)
    total += 2 * 500
    assert c.ping()[port] == total
    # The earlier instances go once their connections have ended (checked
    # every 0.25 s): what they counted stays, once.
    time.sleep(1.0)
    assert c.ping()[port] == total
    assert echo.accepted == 4, "the replayed flight reached the target"


def test_users_of_a_2022_port(ss, tmp_path, echo):
    """A SIP022 port's users (SIP023): identity PSK as the port's key, each
    user's PSK as its password."""
    import base64
    mgr, c = start_manager(ss, tmp_path, udp_control())
    method = "2022-blake3-aes-256-gcm"
    b64 = lambda b: base64.b64encode(b).decode()
    ipsk, alice, bob = (os.urandom(32) for _ in range(3))
    port = sslib.free_port()
    assert c.ask("add: " + json.dumps({"server_port": port, "method": method,
                                       "password": b64(ipsk),
                                       "users": [{"name": "alice",
                                                  "password": b64(alice)}]})) == "ok"
    key = lambda upsk: "%s:%s" % (b64(ipsk), b64(upsk))
    a, b = user_client(ss, port, method, key(alice)), user_client(ss, port, method, key(bob))
    assert relays(a, echo) and not relays(b, echo)
    assert c.ask("add_user: " + json.dumps({"server_port": port, "name": "bob",
                                            "password": b64(bob)})) == "ok"
    assert relays(b, echo) and relays(a, echo)


def test_control_socket_is_not_a_target(ss, tmp_path):
    """A port's user cannot send commands to the manager through the UDP
    relay, even with private targets allowed: the datagram is dropped and
    logged, and nothing is added."""
    import ssudp
    control = udp_control()
    mgr, c = start_manager(ss, tmp_path, control, extra=["-u"])
    port, pw = sslib.free_port(), sslib.random_password()
    assert c.add(port, pw) == "ok"
    client = sslib.start_local(ss.procs, ss.exe("ss-local"),
                               sslib.Server(None, sslib.LOOPBACK4, port, METHODS[0], pw),
                               extra=["-u"])
    victim = sslib.free_port()
    with ssudp.UdpEcho() as uecho, ssudp.Association(client.addr) as assoc:
        # The relay works for another target...
        assert assoc.exchange((uecho.host, uecho.port), b"hello")[3] == b"hello"
        # ...but not for the control socket.
        cmd = b'add: {"server_port": %d, "password": "x"}' % victim
        host, cport = control.rsplit(":", 1)
        assoc.send(host, int(cport), cmd)
        assert sslib.wait_for(lambda: "refused" in mgr.stderr() and
                              cport in mgr.stderr(), sslib.T(5)), mgr.describe()
    assert victim not in c.list()
    assert refused(victim)


def test_sighup_reads_the_file_again(ss, tmp_path, echo):
    """SIGHUP: a plugin the file now allows may be added, a port the file's
    port_password now names starts, the running ports go on, and a file
    with an error changes nothing."""
    here = os.path.dirname(os.path.abspath(__file__))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(os.path.join(here, "xorplugin.py"), bindir / "xorplugin")
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ.get("PATH", "")))
    control = udp_control()
    conf = loopback_config(tmp_path)
    args = ["--manager-address", control, "-s", sslib.LOOPBACK4, "-m", METHODS[0],
            "--state", str(tmp_path / "state.json"), "-c", conf]
    mgr = ss.procs.start(ss.exe("ss-manager"), args, env=env)
    assert sslib.wait_for(lambda: "started" in mgr.stderr(), sslib.T(10)), mgr.describe()
    c = Control((sslib.LOOPBACK4, int(control.rsplit(":", 1)[1])))
    p1, pw1 = sslib.free_port(), sslib.random_password()
    assert c.add(p1, pw1) == "ok"
    client1 = client_for(ss, p1, pw1, METHODS[0])
    open_conn = sslib.socks5_connect(client1.addr, *echo.addr)
    sslib.echo_check(open_conn, os.urandom(1000))
    p2, p3 = sslib.free_port(), sslib.free_port()
    assert c.add(p2, "pw", plugin="xorplugin", plugin_opts="server;key=7") == "err"

    def reload(n, text="configuration reloaded"):
        os.kill(mgr.pid, 1)
        assert sslib.wait_for(lambda: mgr.stderr().count(text) >= n, sslib.T(5)), \
            mgr.describe()

    with open(conf, "w") as f:
        json.dump({"block_private": False, "plugins": ["xorplugin"],
                   "port_password": {str(p3): "pw3"}}, f)
    reload(1)
    assert c.add(p2, "pw", plugin="xorplugin", plugin_opts="server;key=7") == "ok"
    assert set(c.ping()) == {p1, p2, p3}
    relay_ok(client_for(ss, p3, "pw3", METHODS[0]), echo)
    sslib.echo_check(open_conn, os.urandom(1000))  # the open connection goes on

    with open(conf, "w") as f:
        f.write('{"plugins": 1}')
    reload(1, "reload refused")
    assert set(c.ping()) == {p1, p2, p3}
    relay_ok(client1, echo)
    open_conn.close()
