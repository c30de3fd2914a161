# SPDX-License-Identifier: MIT
"""Our programs against shadowsocks-libev 3.3.5 (/usr/bin/ss-*), both ways
round, for every AEAD method: ~1 MiB echoed plus a small exchange, compared
byte for byte."""

import os

import pytest

import sslib
from sslib import T

MiB = 1 << 20

# (name, server implementation, client implementation, via)
PAIRS = [
    ("our-local_libev-server", "libev", "ours", "socks"),
    ("our-tunnel_libev-server", "libev", "ours", "tunnel"),
    ("libev-local_our-server", "ours", "libev", "socks"),
    ("libev-tunnel_our-server", "ours", "libev", "tunnel"),
]


@pytest.fixture
def peers(ss, libev_bin_dir):
    ss.dirs["libev"] = libev_bin_dir
    return ss


@pytest.mark.parametrize("method", sslib.AEAD_METHODS)
@pytest.mark.parametrize("name,server_impl,client_impl,via", PAIRS, ids=[p[0] for p in PAIRS])
def test_echo(peers, echo, blob, method, name, server_impl, client_impl, via):
    open_, _, _ = peers.path(via, echo.addr, method=method, server_impl=server_impl,
                             client_impl=client_impl)
    with open_() as s:
        sslib.small_exchange(s, 1)
        sslib.echo_check(s, blob(MiB + 12345), timeout=T(30))
        sslib.small_exchange(s, 3000)
    # A second connection on the same pair.
    with open_() as s:
        sslib.small_exchange(s, 70000)


@pytest.mark.parametrize("name,server_impl,client_impl", [
    ("our-local_libev-server", "libev", "ours"),
    ("libev-local_our-server", "ours", "libev"),
], ids=["our-local_libev-server", "libev-local_our-server"])
def test_address_types(peers, echo, echo6, name, server_impl, client_impl):
    """IPv4, IPv6 and domain targets in the address header, each side
    encoding or decoding it."""
    server = peers.server(impl=server_impl, method="aes-256-gcm")
    local = peers.local(server, impl=client_impl)
    for host, port, atyp in (("127.0.0.1", echo.port, sslib.ATYP_IPV4),
                             ("::1", echo6.port, sslib.ATYP_IPV6),
                             ("localhost", echo.port, sslib.ATYP_DOMAIN)):
        with sslib.socks5_connect(local.addr, host, port, atyp=atyp) as s:
            sslib.small_exchange(s, 20000)


@pytest.mark.parametrize("name,server_impl,client_impl", [
    ("our-local_libev-server", "libev", "ours"),
    ("libev-local_our-server", "ours", "libev"),
], ids=["our-local_libev-server", "libev-local_our-server"])
def test_base64_key(peers, echo, name, server_impl, client_impl):
    method = "chacha20-ietf-poly1305"
    key = sslib.random_key_b64(method)
    server = peers.server(impl=server_impl, method=method, key=key)
    local = peers.local(server, impl=client_impl)
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.echo_check(s, os.urandom(200000), timeout=T(20))


@pytest.mark.parametrize("name,server_impl,client_impl", [
    ("our-local_libev-server", "libev", "ours"),
    ("libev-local_our-server", "ours", "libev"),
], ids=["our-local_libev-server", "libev-local_our-server"])
def test_parallel(peers, echo, blob, name, server_impl, client_impl):
    """16 connections at once, 256 KiB each."""
    import concurrent.futures
    n, size = 16, 256 * 1024
    data = blob(n * size)
    server = peers.server(impl=server_impl, method="aes-128-gcm")
    local = peers.local(server, impl=client_impl)

    def one(i):
        with sslib.socks5_connect(local.addr, *echo.addr) as s:
            sslib.echo_check(s, data[i * size:(i + 1) * size], timeout=T(30))

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        for f in [pool.submit(one, i) for i in range(n)]:
            f.result(timeout=T(60))
