# SPDX-License-Identifier: MIT
"""Fixtures for the Debian package tests: the packages built once per run
(scripts/build-deb.sh into a temporary directory) and unpacked with dpkg -x
into a scratch root. Nothing is installed on the machine itself, so the
shadowsocks-libev that the interop suite runs stays in place."""

import glob
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))

from ssfixtures import blob, echo, procs, pytest_runtest_makereport, watchdog  # noqa: E402,F401

PACKAGES = ("shadowsocks-c", "libshadowsocks-c0", "libshadowsocks-c-dev")
# A full build of the project on two cores, with some room.
BUILD_TIMEOUT = 1200


class Debs:
    def __init__(self, outdir):
        self.outdir = os.path.abspath(outdir)

    def deb(self, package):
        found = glob.glob(os.path.join(self.outdir, "%s_*.deb" % package))
        assert len(found) == 1, "expected one %s .deb in %s, found %r" % (
            package, self.outdir, found)
        return found[0]

    @property
    def changes(self):
        found = glob.glob(os.path.join(self.outdir, "*.changes"))
        assert len(found) == 1, found
        return found[0]


@pytest.fixture(scope="session")
def debs(tmp_path_factory):
    """The packages, built now; or those scripts/build-deb.sh DIR built
    before, with SS_DEB_DIR=DIR."""
    if os.environ.get("SS_DEB_DIR"):
        return Debs(os.environ["SS_DEB_DIR"])
    out = str(tmp_path_factory.mktemp("deb"))
    log = os.path.join(out, "build.log")
    env = dict(os.environ, DEB_BUILD_OPTIONS="parallel=2")
    with open(log, "wb") as f:
        rc = subprocess.run([os.path.join(SOURCE, "scripts", "build-deb.sh"), out],
                            stdout=f, stderr=subprocess.STDOUT, env=env,
                            timeout=BUILD_TIMEOUT).returncode
    if rc != 0:
        with open(log, errors="replace") as f:
            tail = f.read()[-6000:]
        pytest.fail("dpkg-buildpackage failed (exit %d):\n%s" % (rc, tail), pytrace=False)
    return Debs(out)


@pytest.fixture(scope="session")
def root(debs, tmp_path_factory):
    """The three packages unpacked into one scratch root."""
    r = str(tmp_path_factory.mktemp("root"))
    for p in PACKAGES:
        subprocess.run(["dpkg-deb", "-x", debs.deb(p), r], check=True)
    return r


def multiarch():
    return subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], check=True,
                          capture_output=True, text=True).stdout.strip()


def dpkg_root(root, *args):
    """dpkg --root=root args, the maintainer scripts run outside a chroot
    with DPKG_ROOT set (--force-script-chrootless), in a mount namespace with
    an empty /run so that they never see a running systemd on the machine
    (they would reload it). Returns the CompletedProcess."""
    cmd = ["dpkg", "--root=" + root, "--force-script-chrootless", "--log=/dev/null"] + list(args)
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           'mount -t tmpfs none /run && exec "$@"', "dpkg"] + cmd,
                          capture_output=True, text=True, timeout=120)


def lib_env(root):
    """The environment for programs run from a scratch root: its library
    directory first, where they find libshadowsocks-c.so.0."""
    libdir = os.path.join(root, "usr", "lib", multiarch())
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": libdir + (":" + old if old else "")}


@pytest.fixture(scope="session")
def root_env(root):
    return lib_env(root)


@pytest.fixture
def root_procs(procs, root_env):
    """procs whose programs see the scratch root's libraries."""
    start = procs.start

    def start_in_root(exe, args, name=None, env=None, **kw):
        return start(exe, args, name=name, env=dict(root_env, **(env or {})), **kw)

    procs.start = start_in_root
    return procs

