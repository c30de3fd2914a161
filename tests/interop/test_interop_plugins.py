"""SIP003 plugins from Debian's packages between our programs and
shadowsocks-libev's: simple-obfs (obfs-local/obfs-server, http and tls) and
v2ray-plugin (ss-v2ray-plugin, websocket). Every pair both ways: ours
against ours, ours against libev, libev against ours; bytes compared."""

import os
import shutil
import time

import pytest

import sslib
from sslib import T

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
    s = open_through(client, echo.addr, T(10))
    try:
        sslib.echo_check(s, blob(4 << 20))
    finally:
        s.close()
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
