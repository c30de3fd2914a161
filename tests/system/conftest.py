# SPDX-License-Identifier: MIT
"""Fixtures for the system suite: one systemd container per module, with the
unit files and programs under test installed in it (see README.md)."""

import glob
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import container  # noqa: E402

PROGRAMS = ("ss-local", "ss-server", "ss-tunnel", "ss-redir")


def unit_dir():
    """The unit files under test: $SS_UNIT_DIR, else the repository's debian/."""
    return os.environ.get("SS_UNIT_DIR") or os.path.join(HERE, "..", "..", "debian")


def bin_dir():
    """The programs under test: $SS_SYSTEM_BIN_DIR (say, usr/bin of a
    `dpkg -x` of the package), else the build directory $SS_BIN_DIR."""
    d = os.environ.get("SS_SYSTEM_BIN_DIR") or os.environ.get("SS_BIN_DIR")
    if not d:
        pytest.fail("neither SS_SYSTEM_BIN_DIR nor SS_BIN_DIR names the directory "
                    "holding ss-local, ss-server, ss-tunnel and ss-redir")
    return d


@pytest.fixture(scope="module")
def box():
    if os.geteuid() != 0:
        pytest.skip("the system suite boots systemd in namespaces: root only")
    units = sorted(glob.glob(os.path.join(unit_dir(), "ss-*@.service")))
    if not units:
        pytest.fail("no ss-*@.service in " + unit_dir())
    programs = [os.path.join(bin_dir(), p) for p in PROGRAMS]
    missing = [p for p in programs if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail("missing or not executable: " + ", ".join(missing))
    c = container.Container()
    try:
        c.boot()
        # Copied over the host's paths in the overlay, where the units look.
        for p in programs:
            c.install(p, "/usr/bin/" + os.path.basename(p), 0o755)
        for u in units:
            c.install(u, "/etc/systemd/system/" + os.path.basename(u), 0o644)
        c.systemctl("daemon-reload")
        yield c
    finally:
        c.close()
