# SPDX-License-Identifier: MIT
"""A shared ss:// link never runs anything but a plugin: the real ss-local
and ss-tunnel, given a URL whose plugin parameter is shell text, a path or
an option, exit 1 naming the URL's part, and nothing of it runs (no file
appears, in their working directory or anywhere else); a URL whose plugin is
a plain name starts that program from PATH, itself, with no arguments and
the URL's options, shell syntax and all, as data in SS_PLUGIN_OPTIONS."""

import base64
import json
import os
import socket
import stat
import urllib.parse

import pytest

import sslib
from sslib import T, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
XOR = os.path.join(HERE, "xorplugin.py")
METHOD = "aes-256-gcm"
PROGS = ("ss-local", "ss-tunnel")
REFUSED = "ss:// URL: the plugin in the URL's \"plugin\" parameter is not a plain program name"

# The plugin parameter as a link would carry it (percent-encoded), and how
# the message quotes the name. Each would create a file named pwned in the
# working directory if a shell ran it (or try to run a path).
PAYLOADS = (
    ("touch%20pwned%20%23", "touch pwned #"),
    ("touch%20pwned", "touch pwned"),
    ("touch%20pwned%3Bobfs%3Dhttp", "touch pwned"),
    ("%24(touch%20pwned)", "$(touch pwned)"),
    ("$(touch%20pwned)", "$(touch pwned)"),
    ("%60touch%20pwned%60", "`touch pwned`"),
    ("true%7Ctouch%20pwned", "true|touch pwned"),
    ("true%26touch%20pwned", "true&touch pwned"),
    ("true%26%26touch%20pwned", "true&&touch pwned"),
    ("true%3Epwned", "true>pwned"),
    ("true%0Atouch%20pwned", "true?touch pwned"),
    ("true%09pwned", "true?pwned"),
    ("'touch'%20pwned", "'touch' pwned"),
    ("%22touch%22%20pwned", "\"touch\" pwned"),
    ("touch%5C%20pwned", "touch\\ pwned"),
    ("pwn*", "pwn*"),
    ("pwne%3F", "pwne?"),
    ("..%2F..%2Fusr%2Fbin%2Ftouch", "../../usr/bin/touch"),
    ("%2Fusr%2Fbin%2Ftouch", "/usr/bin/touch"),
    ("%2Fbin%2Fsh", "/bin/sh"),
    (".%2Fpwned", "./pwned"),
    ("-c", "-c"),
    (".hidden", ".hidden"),
    ("%3Bobfs%3Dhttp", ""),
)


def url(host="127.0.0.1", port=8388, password="secret", plugin=None, tag="t"):
    info = base64.urlsafe_b64encode(("%s:%s" % (METHOD, password)).encode()).decode()
    text = "ss://%s@%s:%d/" % (info.rstrip("="), host, port)
    if plugin is not None:
        text += "?plugin=" + plugin
    return text + "#" + tag


def prog_args(prog, server_url, lport):
    args = ["--server-url", server_url, "-l", str(lport)]
    return args + (["-L", "127.0.0.1:9"] if prog == "ss-tunnel" else [])


def run_in(ss, prog, args, cwd, env=None):
    """prog with args in the working directory cwd, expected to exit on its
    own within a few seconds: (exit status or None, program)."""
    return ss.run(prog, args, env=env, preexec=lambda: os.chdir(cwd))


def fresh_dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return d


@pytest.mark.parametrize("prog", PROGS)
@pytest.mark.parametrize("param,shown", PAYLOADS)
def test_url_plugin_that_is_not_a_name_is_refused(ss, tmp_path, prog, param, shown):
    """The refusal names the flag, the URL's part and the name as given;
    the status is 1; the working directory stays empty."""
    cwd = fresh_dir(tmp_path, "cwd")
    rc, p = run_in(ss, prog, prog_args(prog, url(plugin=param), sslib.free_port()), cwd)
    assert os.listdir(cwd) == [], "something ran: %r\n%s" % (os.listdir(cwd), p.describe())
    assert rc == 1, p.describe()
    want = "--server-url: %s: `%s'" % (REFUSED, shown)
    assert want in p.stderr(), p.describe()
    assert len(p.stderr().strip().split("\n")) == 1, p.describe()


@pytest.mark.parametrize("prog", PROGS)
def test_url_plugin_writing_elsewhere_is_refused(ss, tmp_path, prog):
    """Payloads that would write to an absolute path (another temporary
    directory) write nothing there either."""
    cwd, outside = fresh_dir(tmp_path, "cwd"), fresh_dir(tmp_path, "outside")
    target = str(outside / "pwned")
    for command in ("touch %s" % target, "sh -c 'touch %s'" % target, "$(touch %s)" % target,
                    "true;touch %s" % target, "x>%s" % target):
        param = urllib.parse.quote(command, safe="")
        rc, p = run_in(ss, prog, prog_args(prog, url(plugin=param), sslib.free_port()), cwd)
        assert not os.path.exists(target), "ran: %s\n%s" % (command, p.describe())
        assert os.listdir(cwd) == [] and os.listdir(outside) == []
        name = command.split(";")[0]
        assert rc == 1, p.describe()
        if name == "true":
            # ';' ends the name: the plugin "true" with the options "touch
            # ...", which only go to SS_PLUGIN_OPTIONS. true exits at once.
            assert "plugin true exited with status 0 before opening" in p.stderr(), \
                p.describe()
        else:
            # The message quotes the first 64 bytes.
            shown = name[:64] + ("..." if len(name) > 64 else "")
            assert "%s: `%s'" % (REFUSED, shown) in p.stderr(), p.describe()


def test_url_plugin_refused_from_the_file(ss, tmp_path):
    """A URL in the configuration file ("server_url", "servers", "server")
    is as untrusted as one on the command line, and named by its key."""
    cwd = fresh_dir(tmp_path, "cwd")
    bad = url(plugin="touch%20pwned")
    for key, value, where in (("server_url", bad, "\"server_url\""),
                              ("server_url", [url(), bad], "\"server_url\"[1]"),
                              ("servers", [bad], "\"servers\"[0]"),
                              ("server", [bad], "-s/server")):
        conf = tmp_path / "config.json"
        conf.write_text(json.dumps({"local_port": sslib.free_port(), key: value}))
        rc, p = run_in(ss, "ss-local", ["-c", str(conf)], cwd)
        assert os.listdir(cwd) == [], "something ran: %s" % p.describe()
        assert rc == 1, p.describe()
        assert "%s: %s: `touch pwned'" % (where, REFUSED) in p.stderr(), p.describe()


def test_url_plugin_in_the_working_directory_is_not_run(ss, tmp_path):
    """A plain name is looked for in PATH only: an executable of that name
    in the working directory (a download, say) is not run, even with "." in
    PATH, and ss-local says it found none."""
    cwd = fresh_dir(tmp_path, "cwd")
    marker = cwd / "ran"
    fake = cwd / "ss-test-cwd-plugin"
    fake.write_text("#!/bin/sh\ntouch '%s'\nexec sleep 30\n" % marker)
    fake.chmod(0o755)
    env = {"PATH": ".:" + os.environ.get("PATH", "/usr/bin:/bin")}
    rc, p = run_in(ss, "ss-local", prog_args("ss-local", url(plugin="ss-test-cwd-plugin"),
                                             sslib.free_port()), cwd, env=env)
    assert not marker.exists(), "ran: %s" % p.describe()
    assert rc == 1, p.describe()
    assert "plugin 'ss-test-cwd-plugin': not found in PATH" in p.stderr(), p.describe()


# What the URL's options are: SIP003 options and, as data, shell syntax
# that would create files if anything ran it.
OPTIONS = "a=1;$(touch pwned);`touch pwned`;b=x|touch pwned&;c='q' \"d\" \\;>pwned"

WRAPPER = """#!/usr/bin/python3
# A plugin of the test's, found in PATH: records how it was started, then
# becomes xorplugin.py (no options of its own: those are the URL's).
import json, os, sys
path = os.environ["SS_TEST_PLUGIN_RECORD"]
rec = {"argv": sys.argv, "pid": os.getpid(), "ppid": os.getppid(),
       "opts": os.environ.get("SS_PLUGIN_OPTIONS")}
with open(path + ".tmp", "w") as f:
    json.dump(rec, f)
os.rename(path + ".tmp", path)
os.execv(%r, [%r])
"""


def wrapper_plugin(bindir, name):
    """WRAPPER as the program bindir/name."""
    plugin = bindir / name
    plugin.write_text(WRAPPER % (XOR, XOR))
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return plugin


def started_record(record, program):
    """What the wrapper recorded of its start, once program started it."""
    rec = wait_for(lambda: record.exists() and json.loads(record.read_text()), T(10))
    assert rec, program.describe()
    return rec


def echo_through(prog, lport, echo, data):
    """One connection through prog listening on lport (SOCKS5 for ss-local,
    a tunnel to echo for ss-tunnel) that gets data back whole."""
    if prog == "ss-local":
        s = sslib.socks5_connect((sslib.LOOPBACK4, lport), *echo.addr)
    else:
        s = socket.create_connection((sslib.LOOPBACK4, lport), timeout=T(10))
    try:
        sslib.echo_check(s, data)
    finally:
        s.close()


@pytest.mark.parametrize("prog", PROGS)
def test_url_plugin_by_name_runs_from_path_without_a_shell(ss, echo, blob, tmp_path, prog):
    """ss-local and ss-tunnel run a URL's plain plugin name found in PATH
    as the file itself (the path they log is the plugin's, not a shell's),
    with no arguments, a child of theirs, and SS_PLUGIN_OPTIONS exactly the
    URL's options; no shell ran them; the traffic goes through it."""
    cwd, bindir = fresh_dir(tmp_path, "cwd"), fresh_dir(tmp_path, "bin")
    plugin = wrapper_plugin(bindir, "ss-test-plugin")
    record = tmp_path / "record.json"
    env = {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", "/usr/bin:/bin")),
           "SS_TEST_PLUGIN_RECORD": str(record)}
    server = ss.server(method=METHOD, extra=["--plugin", XOR, "--plugin-opts", "server"])
    param = urllib.parse.quote("ss-test-plugin;" + OPTIONS, safe="")
    link = url(port=server.port, password=server.password, plugin=param)
    target = "%s:%d" % echo.addr
    program, lport = ss.procs.start_listening(
        ss.exe(prog),
        lambda port: ["--server-url", link, "-l", port, "-v"] +
        (["-L", target] if prog == "ss-tunnel" else []),
        env=env, preexec=lambda: os.chdir(cwd))

    rec = started_record(record, program)
    assert rec["argv"] == [str(plugin)], rec
    assert rec["opts"] == OPTIONS, rec
    assert rec["ppid"] == program.pid, "not started by %s itself: %r" % (prog, rec)
    line = "plugin ss-test-plugin started: pid %d, %s" % (rec["pid"], plugin)
    assert wait_for(lambda: line in program.output(), T(5)), program.describe()

    echo_through(prog, lport, echo, blob(64 << 10))
    assert os.listdir(cwd) == [], "something ran: %r" % os.listdir(cwd)
    assert not (tmp_path / "pwned").exists() and not (bindir / "pwned").exists()


@pytest.mark.parametrize("prog", PROGS)
def test_url_plugin_by_its_apps_name_runs_debians(ss, echo, blob, tmp_path, prog):
    """A URL naming v2ray-plugin, as the phone apps and ss-server
    --print-url name it, where PATH has it only as Debian names it
    (ss-v2ray-plugin, a stand-in here): that program runs, the start-up log
    and --check say so, and the traffic goes through it."""
    bindir = fresh_dir(tmp_path, "bin")
    plugin = wrapper_plugin(bindir, "ss-v2ray-plugin")
    record = tmp_path / "record.json"
    # /usr/bin first would find Debian's own ss-v2ray-plugin, if installed.
    path = "%s:/usr/bin:/bin" % bindir
    assert not any(os.path.exists(os.path.join(d, "v2ray-plugin")) for d in path.split(":"))
    env = {"PATH": path, "SS_TEST_PLUGIN_RECORD": str(record)}
    server = ss.server(method=METHOD, extra=["--plugin", XOR, "--plugin-opts", "server"])
    link = url(port=server.port, password=server.password,
               plugin=urllib.parse.quote("v2ray-plugin;path=/ws", safe=""))
    target = "%s:%d" % echo.addr
    tunnel = ["-L", target] if prog == "ss-tunnel" else []

    rc, p = ss.run(prog, ["--server-url", link, "-l", str(sslib.free_port()), "--check"]
                   + tunnel, env=env)
    assert rc == 0, p.describe()
    assert ("plugin v2ray-plugin (%s, Debian's name for it), mode tcp_only, options path=/ws"
            % plugin) in p.stdout(), p.describe()

    program, lport = ss.procs.start_listening(
        ss.exe(prog), lambda port: ["--server-url", link, "-l", port] + tunnel, env=env)
    rec = started_record(record, program)
    assert rec["argv"] == [str(plugin)] and rec["opts"] == "path=/ws", rec
    assert ("plugin v2ray-plugin is not in PATH under that name: running %s, Debian's name "
            "for it" % plugin) in program.output(), program.describe()
    echo_through(prog, lport, echo, blob(64 << 10))


def test_url_plugin_found_nowhere_names_both(ss, tmp_path):
    """Neither name in PATH: the message says both were looked for."""
    env = {"PATH": str(fresh_dir(tmp_path, "bin"))}
    rc, p = ss.run("ss-local", prog_args("ss-local", url(plugin="v2ray-plugin"),
                                         sslib.free_port()), env=env)
    assert rc == 1, p.describe()
    assert ("plugin 'v2ray-plugin': not found in PATH, nor Debian's ss-v2ray-plugin"
            in p.stderr()), p.describe()


@pytest.mark.parametrize("prog", PROGS)
def test_command_line_plugin_overrides_the_urls(ss, echo, blob, tmp_path, prog):
    """--plugin on the command line replaces the plugin a URL names (here
    one that is nowhere), as the command line overrides the configuration:
    the program given there runs (by its path, the user's own text) with
    the URL's options, unless --plugin-opts replaces those too."""
    bindir = fresh_dir(tmp_path, "bin")
    plugin = wrapper_plugin(bindir, "my-plugin")
    record = tmp_path / "record.json"
    env = {"SS_TEST_PLUGIN_RECORD": str(record)}
    server = ss.server(method=METHOD, extra=["--plugin", XOR, "--plugin-opts", "server"])
    link = url(port=server.port, password=server.password,
               plugin=urllib.parse.quote("ss-no-such-plugin;a=1", safe=""))
    tunnel = ["-L", "%s:%d" % echo.addr] if prog == "ss-tunnel" else []
    for extra, opts in ((["--plugin", str(plugin)], "a=1"),
                        (["--plugin-opts", "b=2", "--plugin", str(plugin)], "b=2")):
        if record.exists():
            record.unlink()
        program, lport = ss.procs.start_listening(
            ss.exe(prog), lambda port: ["--server-url", link, "-l", port] + tunnel + extra,
            env=env)
        rec = started_record(record, program)
        assert rec["argv"] == [str(plugin)] and rec["opts"] == opts, rec
        echo_through(prog, lport, echo, blob(64 << 10))
        program.terminate()
