# SPDX-License-Identifier: MIT
"""--check, and the JSON file as shadowsocks-libev reads it: what it lets
pass, what it refuses (with line and column here), unknown keys."""

import json
import os
import pwd
import socket
import stat

import pytest

import sslib
from sslib import T

PROGS = ("ss-server", "ss-local", "ss-tunnel")
PASSWORD = "check-" + "p4ss" * 4


def run_check(ss, prog, argv, env=None):
    """prog ARGV --check: (exit status, stdout, stderr)."""
    p = ss.procs.start(ss.exe(prog), list(argv) + ["--check"], env=env)
    p.expect_exit = True
    rc = p.wait_exit(T(10))
    if rc is None:
        p.kill()
    assert rc is not None, "--check still running:\n" + p.describe()
    return rc, p.stdout(), p.stderr()


def settings(prog, server="127.0.0.1", method="aes-256-gcm"):
    """A complete file for prog, with free ports: a dict."""
    conf = {"server": server, "server_port": sslib.free_port(), "password": PASSWORD,
            "method": method, "mode": "tcp_and_udp"}
    if prog != "ss-server":
        conf.update(local_address="127.0.0.1", local_port=sslib.free_port())
    if prog == "ss-tunnel":
        conf["tunnel_address"] = "192.0.2.7:53"
    return conf


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def closed_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("prog", PROGS)
def test_check_reports_what_would_run(ss, tmp_path, prog):
    """A good configuration: exit 0 and a report of the method, servers
    (a name looked up through -d), listen address, mode, plugin and ACL,
    without the password; nothing listens."""
    acl = write(tmp_path, "rules.acl", "[bypass_list]\n10.0.0.0/8\n::1/128\n||example.com\n"
                "[proxy_list]\n(^|\\.)test$\n")
    with sslib.DnsResponder(answers={"srv.check.test": "127.0.0.3"}) as dns:
        conf = settings(prog, server="127.0.0.1" if prog == "ss-server" else "srv.check.test")
        conf.update(acl=acl, nameserver=dns.addr)
        if prog == "ss-server":
            conf.update(plugin="obfs-server", plugin_opts="obfs=http")
        hosts = write(tmp_path, "hosts", "")
        rc, out, err = run_check(ss, prog, ["-c", write(tmp_path, "c.json", conf)],
                                 env={"SS_HOSTS_FILE": hosts})
        looked_up = list(dns.names)
    assert rc == 0, out + err
    assert "the configuration is good" in out, out
    assert PASSWORD not in out + err
    assert "aes-256-gcm" in out and "mode: tcp_and_udp" in out, out
    default = "accept" if prog == "ss-server" else "proxy"
    assert "acl: %s, default %s" % (acl, default) in out, out
    bypass = "reject" if prog == "ss-server" else "bypass"
    assert "%s list: 1 IPv4, 1 IPv6, 1 domains, 0 regexes" % bypass in out, out
    if prog == "ss-server":
        assert "listen: 127.0.0.1:%d" % conf["server_port"] in out, out
        assert "plugin: obfs-server (/usr/bin/obfs-server)" in out, out
        assert "options obfs=http" in out, out
        assert "targets: any address, private ones included (block_private off)" in out, out
        assert refused(conf["server_port"])
    else:
        assert "listen: 127.0.0.1:%d" % conf["local_port"] in out, out
        assert "server 1: srv.check.test port %d" % conf["server_port"] in out, out
        assert "srv.check.test is at 127.0.0.3:%d" % conf["server_port"] in out, out
        assert "srv.check.test" in looked_up, looked_up
        assert refused(conf["local_port"])
    if prog == "ss-tunnel":
        assert "tunnel to: 192.0.2.7:53" in out, out


@pytest.mark.parametrize("how", ("json", "cli"))
def test_check_reports_block_private(ss, tmp_path, how):
    """ss-server --check says when targets at private addresses are
    refused, whether the file or the command line asked for it."""
    conf = settings("ss-server")
    if how == "json":
        conf["block_private"] = True
    argv = ["-c", write(tmp_path, "c.json", conf)] + (["--block-private"] if how == "cli" else [])
    rc, out, err = run_check(ss, "ss-server", argv)
    assert rc == 0, out + err
    assert ("targets: loopback, private, link-local and other special-purpose addresses "
            "refused (block_private)") in out, out


def conf_args(tmp_path, prog, **changes):
    """-c and a complete file for prog, with changes to its keys."""
    conf = settings(prog)
    conf.update(changes)
    return ["-c", write(tmp_path, "c.json", conf)]


def bad_json(tmp_path, prog):
    return ["-c", write(tmp_path, "bad.json",
                        '{"server": "127.0.0.1",\n  "timeout": 5, // why\n "method": "x"}')]


def bad_method(tmp_path, prog):
    return ["-c", write(tmp_path, "c.json", settings(prog, method="aes-256-cfb"))]


def missing_acl(tmp_path, prog):
    return conf_args(tmp_path, prog, acl=str(tmp_path / "no-such.acl"))


def bad_acl(tmp_path, prog):
    return conf_args(tmp_path, prog,
                     acl=write(tmp_path, "bad.acl", "[bypass_list]\n10.0.0.0/33\n"))


def missing_plugin(tmp_path, prog):
    return conf_args(tmp_path, prog, plugin="no-such-plugin-here")


def plugin_not_executable(tmp_path, prog):
    plugin = write(tmp_path, "plugin.sh", "#!/bin/sh\n")
    os.chmod(plugin, stat.S_IRUSR | stat.S_IWUSR)
    return conf_args(tmp_path, prog, plugin=plugin)


def unresolvable(tmp_path, prog):
    # The name is in no hosts file, and the only name server refuses.
    conf = settings(prog, server="nowhere.check.test")
    conf["nameserver"] = "127.0.0.1:%d" % closed_udp_port()
    return ["-c", write(tmp_path, "c.json", conf)]


def bad_listen_address(tmp_path, prog):
    conf = settings(prog)
    key = "server" if prog == "ss-server" else "local_address"
    conf[key] = "listen.nowhere.invalid"
    return ["-c", write(tmp_path, "c.json", conf)]


def unknown_user(tmp_path, prog):
    # -a would fail at start, after the listeners opened: --check says so.
    return conf_args(tmp_path, prog, user="no-such-user-here")


def misspelt_required_key(tmp_path, prog):
    # The warning about the unknown key never shows: the error comes first.
    conf = settings(prog)
    conf["sever_port"] = conf.pop("server_port")
    return ["-c", write(tmp_path, "c.json", conf)]


BAD = [
    (bad_json, "line 2, column 17: JSON has no comments"),
    (bad_method, "aes-256-cfb"),
    (missing_acl, "ACL file (--acl/\"acl\"): "),
    (bad_acl, "bad.acl:2: invalid CIDR '10.0.0.0/33'"),
    (missing_plugin, "plugin 'no-such-plugin-here': not found in PATH"),
    (plugin_not_executable, "it is not executable"),
    (unresolvable, "cannot resolve 'nowhere.check.test'"),
    (bad_listen_address, "cannot resolve 'listen.nowhere.invalid'"),
    (unknown_user, "unknown user 'no-such-user-here' for -a/user"),
    (misspelt_required_key, "missing server port (-p or \"server_port\"): the config file has "
     "\"sever_port\", did you mean \"server_port\"?"),
]


# ss-server looks no server up: its names are listen addresses.
CASES = [(prog, make, want) for prog in PROGS for make, want in BAD
         if not (make is unresolvable and prog == "ss-server")]


@pytest.mark.parametrize("prog,make,want", CASES,
                         ids=["%s-%s" % (c[0], c[1].__name__) for c in CASES])
def test_check_names_the_first_problem(ss, tmp_path, prog, make, want):
    hosts = write(tmp_path, "hosts", "")
    rc, out, err = run_check(ss, prog, make(tmp_path, prog), env={"SS_HOSTS_FILE": hosts})
    assert rc == 1, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(prog + ": "), err
    assert want in lines[0], lines[0]
    assert PASSWORD not in out + err
    assert "the configuration is good" not in out


def test_check_warns_of_unknown_keys(ss, tmp_path):
    conf = settings("ss-server")
    conf.update(sever_port=1, plugin_opt="x", port_password={"8001": "x"}, dscp={})
    path = write(tmp_path, "c.json", conf)
    rc, out, err = run_check(ss, "ss-server", ["-c", path])
    assert rc == 0, out + err
    assert ('ss-server: warning: unknown key "sever_port" in %s, did you mean "server_port"?'
            % path) in err, err
    assert 'unknown key "plugin_opt" in %s, did you mean "plugin_opts"?' % path in err, err
    # libev's keys for its other programs pass without a word.
    assert "port_password" not in err and "dscp" not in err, err


def test_unknown_key_is_logged_when_running(ss, tmp_path):
    conf = settings("ss-server")
    conf["timeuot"] = 5
    path = write(tmp_path, "c.json", conf)
    p = ss.procs.start(ss.exe("ss-server"), ["-c", path])
    p.wait_listening("127.0.0.1", conf["server_port"])
    assert sslib.wait_for(lambda: "unknown key" in p.stderr(), T(5)), p.describe()
    assert 'unknown key "timeuot" in %s, did you mean "timeout"?' % path in p.stderr()


LENIENT = (
    '{"server": ["127.0.0.1",], "server_port": %d, "password": "%s",\n'
    ' "method": "aes-256-gcm", "plugin_opts": "a\\\\q", "x": {"y": [1,],},\n}\n')


@pytest.mark.parametrize("impl", ("ours", "libev"))
def test_trailing_commas_start_as_with_libev(ss, tmp_path, impl):
    """Trailing commas and an unknown escape: libev's ss-server starts
    with them, and so does ours."""
    port = sslib.free_port()
    path = write(tmp_path, "c.json", LENIENT % (port, PASSWORD))
    p = ss.procs.start(ss.exe("ss-server", impl), ["-c", path])
    p.wait_listening("127.0.0.1", port)


@pytest.mark.parametrize("impl", ("ours", "libev"))
def test_comments_refused_as_by_libev(ss, tmp_path, impl):
    conf = json.dumps(settings("ss-server"))
    path = write(tmp_path, "c.json", conf[:-1] + ",\n  /* a comment */\n}")
    rc, p = ss.run("ss-server", ["-c", path], impl=impl)
    assert rc not in (None, 0), p.describe()
    if impl == "ours":
        assert "invalid JSON at line 2, column 3: JSON has no comments" in p.stderr(), \
            p.describe()


@pytest.mark.parametrize("prog", PROGS)
def test_check_looks_the_user_up(ss, tmp_path, prog):
    """-a on the command line: a user that does not exist fails --check as
    it would fail the start, naming the user; one that exists (by name or
    uid) is reported with its ids."""
    conf = write(tmp_path, "c.json", settings(prog))
    rc, out, err = run_check(ss, prog, ["-c", conf, "-a", "nosuchuser"])
    assert rc == 1, out + err
    assert err.strip() == "%s: unknown user 'nosuchuser' for -a/user" % prog, err
    me = pwd.getpwuid(os.getuid())
    for user in (me.pw_name, str(me.pw_uid)):
        rc, out, err = run_check(ss, prog, ["-c", conf, "-a", user])
        assert rc == 0, out + err
        assert "user: %s (uid %d, gid %d) after start-up" % (user, me.pw_uid, me.pw_gid) \
            in out, out


# --- the default file ------------------------------------------------------

def default_env(tmp_path):
    """An environment whose default files are under tmp_path, never the
    real /etc or the user's: (env, our package's path, libev's path)."""
    etc = tmp_path / "etc"
    for d in ("shadowsocks-c", "shadowsocks-libev"):
        (etc / d).mkdir(parents=True)
    (tmp_path / "xdg").mkdir()
    env = {"SS_SYSCONFDIR": str(etc), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return (env, etc / "shadowsocks-c" / "config.json",
            etc / "shadowsocks-libev" / "config.json")


@pytest.mark.parametrize("prog", PROGS)
def test_check_alone_checks_the_default_file(ss, tmp_path, prog):
    """--check with no -c checks the file the program reads when given no
    settings: our package's when it exists (its problems reported), else
    libev's."""
    env, ours, libev = default_env(tmp_path)
    libev.write_text(json.dumps(settings(prog)))
    conf = settings(prog)
    conf["acl"] = str(tmp_path / "no-such.acl")
    ours.write_text(json.dumps(conf))
    rc, out, err = run_check(ss, prog, [], env=env)
    assert rc == 1, out + err
    assert "checking the configuration from %s (the default file" % ours in out, out
    assert "ACL file (--acl/\"acl\"): " in err, err

    ours.unlink()
    rc, out, err = run_check(ss, prog, [], env=env)
    assert rc == 0, out + err
    assert "checking the configuration from %s (the default file" % libev in out, out
    assert "the configuration is good" in out, out

    libev.unlink()
    rc, out, err = run_check(ss, prog, [], env=env)
    assert rc == 1, out + err
    assert "no config file at %s or %s" % (ours, libev) in err, err


def test_bare_server_logs_the_default_file_it_read(ss, tmp_path):
    """ss-server with no arguments reads our package's file before libev's,
    and its start-up log says which."""
    env, ours, libev = default_env(tmp_path)
    conf = settings("ss-server")
    ours.write_text(json.dumps(conf))
    libev.write_text(json.dumps(settings("ss-server")))
    p = ss.procs.start(ss.exe("ss-server"), [], env=env)
    p.wait_listening("127.0.0.1", conf["server_port"])
    assert ("configuration from %s (the default file: no settings given)" % ours
            in p.stderr()), p.describe()
