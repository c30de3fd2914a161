# SPDX-License-Identifier: MIT
"""The library as a user gets it: `cmake --install` into a scratch prefix,
examples/embed-local.c built there with pkg-config alone, against the shared
and against the static library, each run as an ss-local in front of the
build's ss-server on loopback, with bytes relayed end to end."""

import glob
import json
import os
import re
import shlex
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))

import sslib  # noqa: E402

VERSION = os.environ.get("SS_VERSION", "0.1.0")
CC = os.environ.get("SS_CC", "cc")


def run(cmd, env=None):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, "%s failed (%d):\n%s%s" % (
        " ".join(cmd), r.returncode, r.stdout, r.stderr)
    return r.stdout


def dynamic(path):
    """(SONAME, [NEEDED]) from readelf -d."""
    soname, needed = None, []
    for line in run(["readelf", "-d", path]).splitlines():
        if "(SONAME)" in line:
            soname = line.split("[", 1)[1].rstrip("]")
        elif "(NEEDED)" in line:
            needed.append(line.split("[", 1)[1].rstrip("]"))
    return soname, needed


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The prefix, its libdir, and the environment pkg-config needs."""
    prefix = str(tmp_path_factory.mktemp("prefix"))
    run(["cmake", "--install", sslib.bin_dir(), "--prefix", prefix])
    pcs = glob.glob(os.path.join(prefix, "**", "pkgconfig", "shadowsocks-c.pc"), recursive=True)
    assert len(pcs) == 1, "shadowsocks-c.pc installed %d times: %s" % (len(pcs), pcs)
    libdir = os.path.dirname(os.path.dirname(pcs[0]))
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]),
               LD_LIBRARY_PATH=libdir)
    return prefix, libdir, env


def test_installed_files(installed):
    prefix, libdir, env = installed
    real = "libshadowsocks-c.so." + VERSION
    assert os.path.isfile(os.path.join(libdir, real)), os.listdir(libdir)
    assert os.readlink(os.path.join(libdir, "libshadowsocks-c.so.0")) == real
    assert os.readlink(os.path.join(libdir, "libshadowsocks-c.so")) == "libshadowsocks-c.so.0"
    assert os.path.isfile(os.path.join(libdir, "libshadowsocks-c.a"))
    assert os.path.isfile(os.path.join(prefix, "include", "shadowsocks.h"))
    assert dynamic(os.path.join(libdir, real))[0] == "libshadowsocks-c.so.0"
    cflags = run(["pkg-config", "--cflags", "shadowsocks-c"], env).split()
    assert "-I" + os.path.join(prefix, "include") in cflags, cflags
    assert run(["pkg-config", "--modversion", "shadowsocks-c"], env).strip() == VERSION


def build_example(installed, tmp_path, static):
    prefix, libdir, env = installed
    out = str(tmp_path / ("embed-static" if static else "embed-shared"))
    flags = run(["pkg-config", "--cflags", "--libs"] + (["--static"] if static else [])
                + ["shadowsocks-c"], env).split()
    if static:
        # The linker would take the .so beside the .a: name the archive.
        flags = [os.path.join(libdir, "libshadowsocks-c.a") if f == "-lshadowsocks-c" else f
                 for f in flags]
    run([CC, "-Wall", "-Wextra", "-Werror", "-o", out,
         os.path.join(SOURCE, "examples", "embed-local.c")] + flags + ["-lev"], env)
    needed = dynamic(out)[1]
    if static:
        assert not any(n.startswith("libshadowsocks-c") for n in needed), needed
    else:
        assert "libshadowsocks-c.so.0" in needed, needed
    return out


@pytest.mark.parametrize("static", [False, True], ids=["shared", "static"])
def test_example_relays(installed, tmp_path, static):
    env = installed[2]
    exe = build_example(installed, tmp_path, static)
    procs = sslib.Processes(str(tmp_path))
    echo = sslib.EchoServer()
    try:
        server = sslib.start_server(procs, sslib.prog("ss-server"))
        conf = json.dumps({"server": server.host, "server_port": server.port,
                           "password": server.password, "method": server.method})
        local, port = procs.start_listening(exe, lambda p: [conf, str(p)], env=env)
        data = os.urandom(300000)
        s = sslib.socks5_connect((sslib.LOOPBACK4, port), *echo.addr)
        try:
            sslib.echo_check(s, data)
        finally:
            s.close()
        assert local.terminate() == 0, local.describe()
        # What ss_instance_stats counted, as the example prints it (the
        # connections include wait_listening's probe).
        assert re.search(r"\b[12] connections, %d bytes up, %d down" % (len(data), len(data)),
                         local.stderr()), local.describe()
    finally:
        problems = procs.finish()
        echo.close()
    assert not problems, "\n".join(problems)


def test_example_reports_bad_config(installed, tmp_path):
    """A bad configuration is a message and exit status 1, not a crash."""
    exe = build_example(installed, tmp_path, False)
    r = subprocess.run([exe, '{"server": "127.0.0.1", "method": "rot13"}'], env=installed[2],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "rot13" in r.stderr, (r.returncode, r.stderr)
