# SPDX-License-Identifier: MIT
"""Every method over TCP and over UDP, through ss-local (SOCKS5) and
ss-tunnel with ss-server: the round trips each build of the matrix
(scripts/ci-matrix.sh) runs on the crypto libraries it was built with."""

import os

import pytest

import sslib
import ssudp
from sslib import T

METHODS = sslib.AEAD_METHODS + sslib.SIP022_METHODS + ("none",)
VIAS = ("socks", "tunnel")


def credentials(method):
    """none takes no password; the others a random one (a PSK for 2022)."""
    return {"password": ""} if method == "none" else {}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("via", VIAS)
def test_tcp_round_trip(ss, echo, blob, via, method):
    """1 byte, then 1 MiB, echoed byte for byte on one connection."""
    cred = credentials(method)
    open_, _, _ = ss.path(via, echo.addr, method=method, server_kw=cred, client_kw=cred)
    with open_() as s:
        sslib.small_exchange(s, 1)
        sslib.echo_check(s, blob(1 << 20), timeout=T(30))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("via", VIAS)
def test_udp_round_trip(ss, via, method):
    """Datagrams from 1 byte to 60,000 come back whole."""
    cred = credentials(method)
    server = ss.server(method=method, extra=["-u"], **cred)
    with ssudp.UdpEcho() as uecho:
        if via == "socks":
            client = ss.local(server, extra=["-u"], **cred)
        else:
            client = ss.tunnel(server, uecho.addr, extra=["-u"], **cred)
        app = ssudp.App(via, client, uecho.addr)
        for n in (1, 1200, 60000):
            ssudp.check_exchange(app, os.urandom(n))
        app.close()
