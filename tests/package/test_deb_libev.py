# SPDX-License-Identifier: MIT
"""Installing beside shadowsocks-libev and the plugins that depend on it
(simple-obfs on shadowsocks-libev (>= 3.0.5), shadowsocks-v2ray-plugin on
shadowsocks-libev): shadowsocks-c provides shadowsocks-libev (= 3.3.5) and
conflicts with and replaces the real one (debian/README.md), so apt and dpkg
remove shadowsocks-libev alone, and the plugins stay and work with our
programs. Nothing is installed on the machine: apt-get -s on the machine's
own state, and dpkg on a scratch root that holds a copy of the machine's
package database and the files of libev and of the plugins."""

import glob
import os
import re
import shutil
import subprocess
import time

import pytest

import sslib
from conftest import dpkg_root, lib_env
from sslib import T

LIBEV = "shadowsocks-libev"
PLUGINS = ("simple-obfs", "shadowsocks-v2ray-plugin")
OURS = ("libshadowsocks-c0", "shadowsocks-c")
ADMIN = "/var/lib/dpkg"


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=300,
                          **kw)


def package_status(package, admindir=ADMIN):
    """dpkg's two letters for package ("ii", "rc", ...), "" when unknown."""
    r = run(["dpkg-query", "--admindir=" + admindir, "-W", "-f", "${db:Status-Abbrev}",
             package])
    return r.stdout.strip() if r.returncode == 0 else ""


@pytest.fixture(scope="module")
def libev_and_plugins():
    missing = [p for p in (LIBEV,) + PLUGINS if package_status(p) != "ii"]
    if missing:
        pytest.fail("not installed on this machine (scripts/deps.sh installs them): %s"
                    % ", ".join(missing), pytrace=False)


def apt_simulate(args, status=None):
    """apt-get -s ARGS, on the machine's package database or on status.
    Returns (packages removed, packages installed, apt's output)."""
    cmd = ["apt-get", "-s", "-o", "Debug::NoLocking=1"]
    if status:
        cmd += ["-o", "Dir::State::status=" + status]
    r = run(cmd + list(args))
    assert r.returncode == 0, "%s: exit %d\n%s%s" % (cmd + list(args), r.returncode, r.stdout,
                                                    r.stderr)
    removed = re.findall(r"^Remv (\S+)", r.stdout, re.M)
    installed = re.findall(r"^Inst (\S+)", r.stdout, re.M)
    return removed, installed, r.stdout


def test_apt_removes_libev_alone(debs, libev_and_plugins):
    removed, installed, out = apt_simulate(["install"] + [debs.deb(p) for p in OURS])
    assert removed == [LIBEV], out
    assert set(OURS) <= set(installed), out


def copy_files_of(package, root):
    """The machine's files of package, by its dpkg file list, into root; not
    /etc, which holds the machine's own configuration and secrets."""
    (listing,) = glob.glob(os.path.join(ADMIN, "info", package + "*.list"))
    with open(listing) as f:
        paths = [line.rstrip("\n") for line in f if line.strip() not in ("", "/.")]
    for path in paths:
        if path == "/etc" or path.startswith("/etc/"):
            continue
        dst = root + path
        if os.path.lexists(dst):
            continue
        if os.path.islink(path):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isdir(path):  # /lib -> usr/lib: the directory first
                os.makedirs(root + os.path.realpath(path), exist_ok=True)
            os.symlink(os.readlink(path), dst)
        elif os.path.isdir(path):
            os.makedirs(dst, exist_ok=True)
        elif os.path.isfile(path):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(path, dst)


@pytest.fixture(scope="module")
def replaced(debs, libev_and_plugins, tmp_path_factory):
    """A scratch root whose database is the machine's (every package it has
    installed, so dependencies hold without --force-depends) with the files
    of libev and the plugins, and none of the machine's maintainer scripts
    or triggers (libev's would stop and remove the machine's own services);
    then ours installed into it by dpkg. Returns (root, dpkg's output)."""
    root = str(tmp_path_factory.mktemp("libev") / "root")
    admin = os.path.join(root, ADMIN.lstrip("/"))
    for d in ("info", "updates", "triggers"):
        os.makedirs(os.path.join(admin, d))
    shutil.copy2(os.path.join(ADMIN, "status"), os.path.join(admin, "status"))
    for listing in glob.glob(os.path.join(ADMIN, "info", "*.list")):
        shutil.copy2(listing, os.path.join(admin, "info"))
    for p in (LIBEV,) + PLUGINS:
        copy_files_of(p, root)
        for md5sums in glob.glob(os.path.join(ADMIN, "info", p + "*.md5sums")):
            shutil.copy2(md5sums, os.path.join(admin, "info"))
    assert os.path.exists(os.path.join(root, "usr", "bin", "ss-manager"))
    r = dpkg_root(root, "-i", *[debs.deb(p) for p in OURS])
    assert r.returncode == 0, "dpkg -i: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr)
    return root, r.stdout + r.stderr


def test_dpkg_removes_libev_alone(replaced):
    root, out = replaced
    admin = os.path.join(root, ADMIN.lstrip("/"))
    # Removed, its configuration left to a purge ("c"; dpkg leaves the
    # selection as it was, apt would make it "r").
    assert package_status(LIBEV, admin)[1:] == "c", out
    for p in PLUGINS + OURS:
        assert package_status(p, admin) == "ii", "%s: %s\n%s" % (p, package_status(p, admin), out)
    r = run(["dpkg", "--admindir=" + admin, "--audit"] + list(PLUGINS + OURS))
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr
    # libev's programs are gone, ours are in their place (ss-manager too),
    # the plugins stay.
    bindir = os.path.join(root, "usr", "bin")
    for prog in ("ss-server", "ss-manager"):
        dyn = run(["readelf", "-d", os.path.join(bindir, prog)], check=True).stdout
        assert "libshadowsocks-c.so.0" in dyn, (prog, dyn)
    for plugin in ("obfs-server", "obfs-local", "ss-v2ray-plugin"):
        assert os.path.exists(os.path.join(bindir, plugin)), plugin


def test_apt_finds_every_dependency_met(replaced):
    root, _ = replaced
    status = os.path.join(root, ADMIN.lstrip("/"), "status")
    r = run(["apt-get", "check", "-o", "Debug::NoLocking=1", "-o", "Dir::State::status=" + status])
    assert r.returncode == 0 and "Unmet" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_apt_puts_libev_back_alone(replaced):
    """And the way back: installing shadowsocks-libev removes ours alone."""
    root, _ = replaced
    status = os.path.join(root, ADMIN.lstrip("/"), "status")
    removed, installed, out = apt_simulate(["install", LIBEV], status=status)
    assert removed == ["shadowsocks-c"], out
    assert LIBEV in installed, out


# (server plugin, its options, client plugin, its options), as tests/interop.
PLUGIN_PAIRS = {
    "obfs-http": ("obfs-server", "obfs=http", "obfs-local", "obfs=http;obfs-host=www.example.com"),
    "v2ray-ws": ("ss-v2ray-plugin", "server;mode=websocket;path=/ss",
                 "ss-v2ray-plugin", "mode=websocket;path=/ss;host=www.example.com"),
}


@pytest.mark.parametrize("pair", sorted(PLUGIN_PAIRS))
def test_plugins_work_with_ours(replaced, procs, echo, blob, pair):
    """ss-server and ss-local as installed over libev, each behind the
    installed plugin, carry bytes end to end."""
    root, _ = replaced
    bindir = os.path.join(root, "usr", "bin")
    splugin, sopts, cplugin, copts = PLUGIN_PAIRS[pair]
    env = lib_env(root)
    server = sslib.start_server(procs, os.path.join(bindir, "ss-server"), env=env,
                                extra=["--plugin", os.path.join(bindir, splugin),
                                       "--plugin-opts", sopts])
    client = sslib.start_local(procs, os.path.join(bindir, "ss-local"), server, env=env,
                               extra=["--plugin", os.path.join(bindir, cplugin),
                                      "--plugin-opts", copts])
    deadline = time.monotonic() + T(10)
    while True:  # the client's plugin may come up after ss-local listens
        try:
            s = sslib.socks5_connect(client.addr, *echo.addr)
            break
        except (OSError, sslib.SocksError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with s:
        sslib.echo_check(s, blob(256 << 10))
