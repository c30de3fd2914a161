# SPDX-License-Identifier: MIT
"""The Debian packages: lintian, what each one holds, the installed programs
relaying end to end, and the systemd units as installed."""

import io
import os
import re
import shutil
import subprocess
import tarfile

import pytest

import sslib
from conftest import PACKAGES, SOURCE, multiarch

PROGRAMS = ("ss-local", "ss-server", "ss-tunnel", "ss-redir", "ss-manager")
UNITS = ("ss-server.service", "ss-server@.service", "ss-local@.service", "ss-tunnel@.service",
         "ss-redir@.service", "ss-manager.service")
MAX_EXPOSURE = 2.0


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def test_lintian_finds_no_error(debs):
    r = run(["lintian", "--fail-on", "error", "--display-level", ">=warning", debs.changes])
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert r.returncode == 0 and not errors, "lintian:\n%s%s" % (r.stdout, r.stderr)


def listing(deb):
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {n.lstrip("./").rstrip("/") for n in t.getnames()}


def test_each_package_holds_its_files(debs):
    ma = multiarch()
    lib = "usr/lib/%s/libshadowsocks-c" % ma
    want = {
        "shadowsocks-c": ["usr/bin/" + p for p in PROGRAMS]
        + ["lib/systemd/system/" + u for u in UNITS]
        + ["usr/share/man/man1/%s.1.gz" % p for p in PROGRAMS]
        + ["usr/share/man/man8/shadowsocks-c.8.gz", "etc/shadowsocks-c"]
        + ["usr/share/bash-completion/completions/" + p for p in PROGRAMS]
        + ["usr/share/fish/vendor_completions.d/%s.fish" % p for p in PROGRAMS]
        + ["usr/share/doc/shadowsocks-c/" + d
           for d in ("README.md", "compatibility.md", "security.md", "router.md")],
        "libshadowsocks-c0": [lib + ".so.0"],
        "libshadowsocks-c-dev": ["usr/include/shadowsocks.h", lib + ".so", lib + ".a",
                                 "usr/lib/%s/pkgconfig/shadowsocks-c.pc" % ma,
                                 "usr/share/doc/libshadowsocks-c-dev/examples/embed-local.c"],
    }
    files = {p: listing(debs.deb(p)) for p in PACKAGES}
    for p in PACKAGES:
        # dh_compress gzips documents above 4 KiB.
        missing = [f for f in want[p] if f not in files[p] and f + ".gz" not in files[p]]
        assert not missing, "%s lacks %s" % (p, missing)
    # Each library file in one package only; the configuration is made by
    # postinst, never shipped (an upgrade must not offer to replace it).
    assert not [f for f in files["shadowsocks-c"] if "libshadowsocks-c" in f]
    assert not [f for f in files["libshadowsocks-c0"] if f.endswith((".so", ".a", ".h"))]
    assert "etc/shadowsocks-c/config.json" not in files["shadowsocks-c"]
    zsh = [f for f in files["shadowsocks-c"] if re.match(r"usr/share/zsh/.+/_", f)]
    assert zsh, "no zsh completion in shadowsocks-c"


def test_library_soname_header_and_pkgconfig(root, tmp_path):
    ma = multiarch()
    libdir = os.path.join(root, "usr", "lib", ma)
    real = os.path.realpath(os.path.join(libdir, "libshadowsocks-c.so"))
    assert os.path.basename(real).startswith("libshadowsocks-c.so.0."), real
    dyn = run(["readelf", "-d", real], check=True).stdout
    assert "Library soname: [libshadowsocks-c.so.0]" in dyn, dyn
    env = dict(os.environ, PKG_CONFIG_LIBDIR=os.path.join(libdir, "pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=root)
    r = run(["pkg-config", "--modversion", "shadowsocks-c"], env=env)
    version = run(["dpkg-parsechangelog", "-l", os.path.join(SOURCE, "debian", "changelog"),
                   "-S", "Version"], check=True).stdout.strip()
    assert r.returncode == 0 and r.stdout.strip() == version.split("-")[0], r.stdout + r.stderr
    r = run(["pkg-config", "--libs", "shadowsocks-c"], env=env)
    assert "-lshadowsocks-c" in r.stdout.split(), r.stdout + r.stderr
    # The installed header alone is enough to compile against.
    src = tmp_path / "use.c"
    src.write_text("#include <shadowsocks.h>\nint main(void) { return 0; }\n")
    r = run(["cc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
             "-I", os.path.join(root, "usr", "include"), str(src)])
    assert r.returncode == 0, r.stderr


def shared_library(root):
    return os.path.realpath(os.path.join(root, "usr", "lib", multiarch(), "libshadowsocks-c.so.0"))


def test_programs_are_hardened(root):
    lib = shared_library(root)
    for exe in [os.path.join(root, "usr", "bin", p) for p in PROGRAMS] + [lib]:
        name = os.path.basename(exe)
        head = run(["readelf", "-hldW", exe], check=True).stdout
        assert re.search(r"Type:\s+DYN", head), name + ": not PIE"
        if exe != lib:
            assert re.search(r"FLAGS_1.*\bPIE\b", head), name + ": not PIE"
        assert "BIND_NOW" in head or re.search(r"FLAGS_1.*\bNOW\b", head), name + ": no BIND_NOW"
        assert "GNU_RELRO" in head, name + ": no RELRO"
        stack = re.search(r"GNU_STACK.*", head).group(0)
        assert not stack.rstrip().split()[-2].endswith("E"), name + ": executable stack: " + stack
    # The code is in the library: it has the stack protector and fortified calls.
    syms = run(["nm", "-D", lib], check=True).stdout
    assert "__stack_chk_fail" in syms and "_chk" in syms.replace("__stack_chk_fail", ""), \
        "libshadowsocks-c.so.0: no stack protector or fortified calls"


def test_programs_share_one_core(debs, root):
    """Each program is a main() calling ss_program_main in
    libshadowsocks-c.so.0 (debian/README.md), found on the system's library
    path, from the library package of the same build."""
    for p in PROGRAMS:
        exe = os.path.join(root, "usr", "bin", p)
        dyn = run(["readelf", "-dW", exe], check=True).stdout
        assert "Shared library: [libshadowsocks-c.so.0]" in dyn, p + ":\n" + dyn
        assert "RPATH" not in dyn and "RUNPATH" not in dyn, p + ":\n" + dyn
        assert os.path.getsize(exe) < 64 << 10, "%s: %d bytes" % (p, os.path.getsize(exe))
        undefined = run(["nm", "-D", "--undefined-only", exe], check=True).stdout.split()
        assert [s for s in undefined if s.startswith("ss_")] == ["ss_program_main"], undefined
    version = run(["dpkg-deb", "-f", debs.deb("libshadowsocks-c0"), "Version"],
                  check=True).stdout.strip()
    depends = run(["dpkg-deb", "-f", debs.deb("shadowsocks-c"), "Depends"],
                  check=True).stdout
    assert "libshadowsocks-c0 (= %s)" % version in depends, depends


def test_installed_programs_relay(root, root_procs, echo, blob):
    bindir = os.path.join(root, "usr", "bin")
    server = sslib.start_server(root_procs, os.path.join(bindir, "ss-server"))
    client = sslib.start_local(root_procs, os.path.join(bindir, "ss-local"), server)
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, blob(1 << 20))


@pytest.fixture(scope="module")
def unit_root(root, tmp_path_factory):
    """The scratch root plus the machine's own units (the targets ours are
    ordered against), so that systemd-analyze checks the installed unit
    files against the installed programs and manual pages."""
    r = str(tmp_path_factory.mktemp("units") / "root")
    shutil.copytree(root, r, symlinks=True)
    # ExecReload's kill(1), which every Debian system has (procps).
    kill = os.path.join(r, "bin", "kill")
    if not os.path.lexists(kill):
        os.makedirs(os.path.dirname(kill), exist_ok=True)
        shutil.copy2(os.path.realpath(shutil.which("kill") or "/bin/kill"), kill)
    system = os.path.join(r, "lib", "systemd", "system")
    for name in os.listdir("/lib/systemd/system"):
        dst = os.path.join(system, name)
        if not os.path.lexists(dst):
            src = os.path.join("/lib/systemd/system", name)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            elif os.path.isdir(src):
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst)
    return r


def instances():
    return [u.replace("@.", "@test.") for u in UNITS]


def test_units_as_shipped(root):
    for u in UNITS:
        with open(os.path.join(SOURCE, "debian", u)) as f:
            shipped = f.read()
        with open(os.path.join(root, "lib", "systemd", "system", u)) as f:
            assert f.read() == shipped, u
        prog = re.search(r"^ExecStart=/usr/bin/(ss-\w+) ", shipped, re.M).group(1)
        conf = "%i.json" if "@" in u else "config.json"
        if prog == "ss-manager":
            own = ("LoadCredential=manager.json:/etc/shadowsocks-c/manager.json",
                   "ExecStart=/usr/bin/ss-manager -c ${CREDENTIALS_DIRECTORY}/manager.json"
                   " -D ${STATE_DIRECTORY}")
        else:
            own = ("LoadCredential=config.json:/etc/shadowsocks-c/" + conf,
                   "ExecStartPre=/usr/bin/%s --check -c ${CREDENTIALS_DIRECTORY}/config.json"
                   % prog,
                   "ExecStart=/usr/bin/%s -c ${CREDENTIALS_DIRECTORY}/config.json" % prog)
        for line in ("Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes",
                     "MemoryDenyWriteExecute=yes") + own:
            assert re.search("^%s$" % re.escape(line), shipped, re.M), "%s: no %s" % (u, line)


def test_units_verify_clean(unit_root):
    env = dict(os.environ, MANPATH=os.path.join(unit_root, "usr", "share", "man"))
    r = run(["systemd-analyze", "verify", "--root=" + unit_root] + instances(), env=env)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    # The check has teeth: without the program the same call fails.
    os.rename(os.path.join(unit_root, "usr", "bin", "ss-server"),
              os.path.join(unit_root, "usr", "bin", "ss-server.away"))
    try:
        r = run(["systemd-analyze", "verify", "--root=" + unit_root, "ss-server.service"],
                env=env)
        assert r.returncode != 0 and "ss-server" in r.stderr, r.stderr
    finally:
        os.rename(os.path.join(unit_root, "usr", "bin", "ss-server.away"),
                  os.path.join(unit_root, "usr", "bin", "ss-server"))


@pytest.mark.parametrize("unit", instances())
def test_unit_exposure(unit_root, unit):
    r = run(["systemd-analyze", "security", "--offline=true", "--root=" + unit_root, unit])
    m = re.search(r"Overall exposure level for %s: (\d+\.\d+)" % re.escape(unit), r.stdout)
    assert m, r.stdout + r.stderr
    assert float(m.group(1)) <= MAX_EXPOSURE, r.stdout
