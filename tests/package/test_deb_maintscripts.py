# SPDX-License-Identifier: MIT
"""The maintainer scripts, run by dpkg itself on a scratch root: dpkg --root
with a database of its own, and the scripts run outside a chroot with
DPKG_ROOT set, as dpkg does for --force-script-chrootless. Dependencies are
not in the scratch database, hence --force-depends. dpkg runs in a mount
namespace with an empty /run, so the scripts never see a running systemd on
the machine (they would reload it)."""

import base64
import json
import os
import stat
import subprocess

import sslib
from conftest import dpkg_root, lib_env

CONF = ("etc", "shadowsocks-c", "config.json")


def make_root(path):
    for d in ("info", "updates", "triggers"):
        os.makedirs(os.path.join(path, "var", "lib", "dpkg", d))
    open(os.path.join(path, "var", "lib", "dpkg", "status"), "w").close()
    return str(path)


def dpkg(root, *args):
    r = dpkg_root(root, "--force-depends", *args)
    assert r.returncode == 0, "dpkg %s: exit %d\n%s%s" % (args, r.returncode, r.stdout, r.stderr)
    return r.stdout


def install(root, debs):
    """shadowsocks-c and the library its programs link, as apt would."""
    dpkg(root, "-i", debs.deb("libshadowsocks-c0"), debs.deb("shadowsocks-c"))


def status(root):
    r = subprocess.run(["dpkg-query", "--admindir=" + os.path.join(root, "var", "lib", "dpkg"),
                        "-W", "-f", "${Status}", "shadowsocks-c"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "absent"


def read(path):
    with open(path) as f:
        return f.read()


def check_generated(path):
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0 and st.st_gid == 0, oct(st.st_mode)
    conf = json.loads(read(path))
    assert set(conf) == {"server_port", "password", "method", "mode", "block_private"}, conf
    assert conf["block_private"] is True, conf
    assert len(base64.b64decode(conf["password"], validate=True)) == 24, conf["password"]
    return conf


def test_install_makes_a_private_config_that_works(debs, tmp_path, root_procs, echo, blob):
    root = make_root(tmp_path / "a")
    install(root, debs)
    assert status(root) == "install ok installed"
    path = os.path.join(root, *CONF)
    conf = check_generated(path)
    # Each installation draws its own password.
    other = make_root(tmp_path / "b")
    install(other, debs)
    assert check_generated(os.path.join(other, *CONF))["password"] != conf["password"]

    bindir = os.path.join(root, "usr", "bin")
    env = lib_env(root)
    r = subprocess.run([os.path.join(bindir, "ss-server"), "--check", "-c", path],
                       capture_output=True, text=True, timeout=30, env=dict(os.environ, **env))
    assert r.returncode == 0, r.stdout + r.stderr
    # The file as made serves a client holding its password, on a loopback
    # address and free port given on the command line; but not to a target
    # on loopback (block_private), which the same file without it reaches.
    lenient = str(tmp_path / "lenient.json")
    with open(lenient, "w") as f:
        json.dump(dict(conf, block_private=False), f)
    for conf_path in (path, lenient):
        p, port = root_procs.start_listening(
            os.path.join(bindir, "ss-server"),
            lambda port: ["-c", conf_path, "-s", sslib.LOOPBACK4, "-p", port], env=env)
        server = sslib.Server(p, sslib.LOOPBACK4, port, conf["method"], conf["password"])
        client = sslib.start_local(root_procs, os.path.join(bindir, "ss-local"), server,
                                   env=env)
        with sslib.socks5_connect(client.addr, *echo.addr) as s:
            if conf_path == lenient:
                sslib.echo_check(s, blob(64 << 10))
                continue
            s.sendall(b"x" * 100)
            state, got = sslib.wait_closed(s, sslib.T(5))
            assert state != "open" and got == b"", (state, got)
            assert echo.accepted == 0


def test_upgrade_remove_and_purge_respect_the_config(debs, tmp_path):
    root = make_root(tmp_path / "r")
    install(root, debs)
    path = os.path.join(root, *CONF)
    edited = read(path).replace("8388", "8389")
    with open(path, "w") as f:
        f.write(edited)
    own = os.path.join(root, "etc", "shadowsocks-c", "main.json")
    with open(own, "w") as f:
        f.write("{}\n")

    install(root, debs)  # a reinstallation runs postinst as an upgrade does
    assert read(path) == edited
    os.unlink(path)
    install(root, debs)
    assert not os.path.exists(path), "an upgrade made the deleted config again"
    with open(path, "w") as f:
        f.write(edited)

    dpkg(root, "-r", "shadowsocks-c")
    assert status(root) == "deinstall ok config-files"
    assert not os.path.exists(os.path.join(root, "usr", "bin", "ss-server"))
    assert read(path) == edited

    dpkg(root, "-P", "shadowsocks-c")
    assert status(root) == "absent"
    assert not os.path.exists(path)
    # What the administrator wrote is theirs: it stays, and its directory.
    assert read(own) == "{}\n"
    state = os.path.join(root, "var", "lib", "systemd", "deb-systemd-helper-enabled")
    assert not os.path.exists(os.path.join(state, "ss-server.service.dsh-also"))


def test_purge_leaves_no_directory_behind(debs, tmp_path):
    root = make_root(tmp_path / "p")
    install(root, debs)
    assert os.path.exists(os.path.join(root, *CONF))
    dpkg(root, "-P", "shadowsocks-c")
    assert not os.path.exists(os.path.join(root, "etc", "shadowsocks-c"))
    assert not os.path.exists(os.path.join(root, "usr", "bin", "ss-server"))


def test_units_never_enabled_on_install(debs, tmp_path):
    root = make_root(tmp_path / "u")
    install(root, debs)
    wants = os.path.join(root, "etc", "systemd", "system", "multi-user.target.wants")
    assert not os.path.isdir(wants) or not os.listdir(wants), os.listdir(wants)
    assert os.path.exists(os.path.join(root, "lib", "systemd", "system", "ss-server@.service"))
