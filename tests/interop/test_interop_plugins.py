# SPDX-License-Identifier: MIT
"""SIP003 plugins from Debian's packages between our programs and
shadowsocks-libev's: simple-obfs (obfs-local/obfs-server, http and tls) and
v2ray-plugin (ss-v2ray-plugin, websocket). Every pair both ways: ours
against ours, ours against libev, libev against ours; bytes compared.
Then several servers each behind its plugin, plugins and servers killed
while connections run."""

import os
import re
import shutil
import time

import pytest

import sslib
from sslib import T
from ssmulti import Srv, kill_in_turn, start_client

# (server plugin, its options, client plugin, its options)
PLUGINS = {
    "obfs-http": ("obfs-server", "obfs=http", "obfs-local", "obfs=http;obfs-host=www.example.com"),
    "obfs-tls": ("obfs-server", "obfs=tls", "obfs-local", "obfs=tls;obfs-host=www.example.com"),
    "v2ray-ws": ("ss-v2ray-plugin", "server;mode=websocket;path=/ss",
                 "ss-v2ray-plugin", "mode=websocket;path=/ss;host=www.example.com"),
}
PAIRS = (("ours", "ours"), ("ours", "libev"), ("libev", "ours"))


@pytest.fixture(scope="module")
def plugins_installed():
    missing = [p for p in ("obfs-local", "obfs-server", "ss-v2ray-plugin") if not shutil.which(p)]
    if missing:
        pytest.fail("plugins missing (scripts/deps.sh installs simple-obfs and "
                    "shadowsocks-v2ray-plugin): %s" % ", ".join(missing), pytrace=False)


def open_through(client, target, timeout):
    """A SOCKS5 connection through client to target that echoes. libev's
    ss-local accepts before its plugin listens: the first tries may fail."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            s = sslib.socks5_connect(client.addr, *target)
            sslib.small_exchange(s, 100, timeout=T(5))
            return s
        except (OSError, sslib.SocksError, AssertionError):
            try:
                s.close()
            except (OSError, UnboundLocalError):
                pass
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def echo_through(client, target, data, timeout):
    """One connection through client to target (an echo server) that sends
    data and gets it back whole."""
    s = open_through(client, target, timeout)
    try:
        sslib.echo_check(s, data)
    finally:
        s.close()


@pytest.mark.parametrize("server_impl,client_impl", PAIRS, ids=["-".join(p) for p in PAIRS])
@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_plugin_pair(ss, libev_bin_dir, plugins_installed, echo, blob, plugin, server_impl,
                     client_impl):
    splugin, sopts, cplugin, copts = PLUGINS[plugin]
    method = "aes-256-gcm"
    server = ss.server(impl=server_impl, method=method,
                       extra=["--plugin", splugin, "--plugin-opts", sopts])
    client = ss.local(server, impl=client_impl,
                      extra=["--plugin", cplugin, "--plugin-opts", copts])
    echo_through(client, echo.addr, blob(4 << 20), T(10))
    # A second connection, and one at the same time.
    a = open_through(client, echo.addr, T(5))
    b = open_through(client, echo.addr, T(5))
    try:
        sslib.echo_check(a, blob(300000))
        sslib.echo_check(b, blob(700000))
    finally:
        a.close()
        b.close()
    ours = server.program if server_impl == "ours" else client.program
    assert "plugin %s" % (splugin if server_impl == "ours" else cplugin) in ours.output()



def test_several_servers_each_with_its_plugin(ss, libev_bin_dir, plugins_installed, echo, blob,
                                             tmp_path):
    """Our ss-local with three servers: libev's behind v2ray-plugin (a
    "servers" entry naming its plugin), ours behind obfs-server (tls) given
    as the URL our ss-server --print-url prints for it, and ours with no
    plugin. Every connection's bytes come back whole, and each server
    carries some of them."""
    v2 = PLUGINS["v2ray-ws"]
    libev = ss.server(impl="libev", method="aes-256-gcm",
                      extra=["--plugin", v2[0], "--plugin-opts", v2[1]])
    psk = sslib.random_psk("2022-blake3-aes-128-gcm")
    obfs_args = ["-m", "2022-blake3-aes-128-gcm", "--plugin", "obfs-server", "--plugin-opts",
                 "obfs=tls"]
    obfs = ss.server(method="2022-blake3-aes-128-gcm", password=psk, extra=obfs_args[2:])
    rc, p = ss.run("ss-server", ["-s", obfs.host, "-p", str(obfs.port), "-k", psk]
                   + obfs_args + ["--print-url"])
    assert rc == 0, p.describe()
    url = p.stdout().split("\n")[0]
    assert "?plugin=obfs-local%3Bobfs%3Dtls" in url, url
    plain = ss.server(method="chacha20-ietf-poly1305")
    conf = {"servers": [
        {"server": libev.host, "server_port": libev.port, "method": libev.method,
         "password": libev.password, "plugin": v2[2], "plugin_opts": v2[3], "remarks": "libev"},
        {"server": plain.host, "server_port": plain.port, "method": plain.method,
         "password": plain.password, "remarks": "plain"}],
        "server_url": url}
    local = start_client(ss, tmp_path, conf)
    deadline = time.monotonic() + T(10)
    while local.program.output().count(") up after ") < 2:
        assert time.monotonic() < deadline, local.program.output()[-2000:]
        time.sleep(0.05)
    for _ in range(30):
        echo_through(local, echo.addr, blob(64 << 10), T(10))
    out = local.program.output()
    for server in (libev, plain, obfs):
        assert re.search(r': server \d+ ("[^"]*" )?127\.0\.0\.1:%d\n' % server.port, out), \
            "no connection through the server on port %d: %s" % (server.port, out[-2000:])


def test_real_plugins_and_servers_killed_mid_run(ss, plugins_installed, echo, tmp_path):
    """Three of our servers, behind obfs-server (http), obfs-server (tls)
    and v2ray-plugin (websocket), and our ss-local with each server's
    client plugin in its "servers" entry, while applications exchange
    64 KiB on connection after connection: in turn one of ss-local's
    plugins is killed and one server is killed with its plugin and started
    again (kill_in_turn). Every SOCKS5 request succeeds and no byte that
    comes back is wrong."""
    names = ("obfs-http", "obfs-tls", "v2ray-ws")
    srvs = [Srv(ss, i, extra=["--plugin", PLUGINS[n][0], "--plugin-opts", PLUGINS[n][1]]).start()
            for i, n in enumerate(names)]
    conf = {"servers": [s.entry(plugin=PLUGINS[n][2], plugin_opts=PLUGINS[n][3])
                        for s, n in zip(srvs, names)]}
    local = start_client(ss, tmp_path, conf)
    assert sslib.wait_for(lambda: local.program.output().count(") up after ") >= 3, T(10)), \
        local.program.output()[-2000:]
    stats = kill_in_turn(local, echo, srvs)
    print("real plugins and servers killed: %s" % stats)


def test_printed_v2ray_url_runs_debians_plugin(ss, plugins_installed, echo, blob, tmp_path):
    """Our ss-server behind Debian's ss-v2ray-plugin prints a URL naming
    v2ray-plugin, as the phone apps know it; our ss-local given that URL on
    a machine that has only ss-v2ray-plugin (Debian's) runs that, says so,
    and relays through it; given --plugin too, it runs that program."""
    if shutil.which("v2ray-plugin"):
        pytest.skip("v2ray-plugin is in PATH under its own name here")
    splugin, sopts = PLUGINS["v2ray-ws"][:2]
    server = ss.server(method="aes-256-gcm", extra=["--plugin", splugin, "--plugin-opts", sopts])
    rc, p = ss.run("ss-server", ["-s", server.host, "-p", str(server.port), "-k", server.password,
                                 "-m", server.method, "--plugin", splugin, "--plugin-opts", sopts,
                                 "--print-url"])
    assert rc == 0, p.describe()
    url = p.stdout().split("\n")[0]
    assert "?plugin=v2ray-plugin%3Bmode%3Dwebsocket%3Bpath%3D%2Fss" in url, url
    local = start_client(ss, tmp_path, {"server_url": url})
    echo_through(local, echo.addr, blob(1 << 20), T(10))
    out = local.program.output()
    assert ("plugin v2ray-plugin is not in PATH under that name: running %s, Debian's name for "
            "it" % shutil.which("ss-v2ray-plugin")) in out, out[-2000:]

    # --plugin on the command line names the program for the URL's plugin
    # (here by its path), which keeps the URL's options.
    path = shutil.which("ss-v2ray-plugin")
    local = start_client(ss, tmp_path, {"server_url": url}, extra=["--plugin", path])
    echo_through(local, echo.addr, blob(1 << 20), T(10))
    out = local.program.output()
    assert "plugin ss-v2ray-plugin started: pid" in out and "Debian's name" not in out, out
