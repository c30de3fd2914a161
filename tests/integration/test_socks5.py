# SPDX-License-Identifier: MIT
"""ss-local's SOCKS5 side: replies to what it does not support, failures it
can report, and clients that split or pipeline their messages."""

import socket
import time

import pytest

import sslib
from sslib import T


@pytest.fixture
def pair(ss):
    server = ss.server()
    local = ss.local(server)
    return server, local


def still_serves(local, echo):
    with sslib.socks5_connect(local.addr, *echo.addr) as s:
        sslib.small_exchange(s, 2000)


@pytest.mark.parametrize("cmd", (sslib.CMD_BIND, sslib.CMD_UDP_ASSOCIATE),
                         ids=("bind", "udp_associate_without_udp"))
def test_unsupported_command(pair, echo, cmd):
    _, local = pair
    s, rep = sslib.socks5_open(local.addr, *echo.addr, cmd=cmd)
    with s:
        assert rep == 0x07, "reply 0x%02x to command %d, expected 0x07" % (rep, cmd)
        state, data = sslib.wait_closed(s, T(5))
        assert data == b"" and state != "open", "after the 0x07 reply: %s, %r" % (state, data)
    assert echo.accepted == 0
    still_serves(local, echo)


def test_unknown_address_type(pair, echo):
    _, local = pair
    with sslib.connect(*local.addr) as s:
        assert sslib.socks5_greet(s) == 0
        s.sendall(bytes([5, 1, 0, 0x09, 127, 0, 0, 1]) + echo.port.to_bytes(2, "big"))
        rep, _ = sslib.socks5_read_reply(s)
        assert rep == 0x08, "reply 0x%02x to ATYP 9, expected 0x08" % rep
        state, data = sslib.wait_closed(s, T(5))
        assert data == b"" and state != "open"
    assert echo.accepted == 0
    still_serves(local, echo)


def test_no_acceptable_auth_method(pair, echo):
    """Only username/password (2) and GSSAPI (1) offered: method 0xFF."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        method = sslib.socks5_greet(s, methods=(1, 2))
        assert method == 0xFF, "method 0x%02x chosen without no-auth offered" % method
        state, data = sslib.wait_closed(s, T(5))
        assert data == b"" and state != "open"
    still_serves(local, echo)


@pytest.mark.parametrize("greeting", (b"\x06\x01\x00",
                                      b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                                      b"\x05\x00"),
                         ids=("version6", "http", "no_methods"))
def test_bad_greeting(pair, echo, greeting):
    """Not a usable SOCKS5 greeting: the connection is closed, nothing is
    relayed, the process goes on. (A letter starts an HTTP request, and an
    origin-form one is not a proxy request: 400.)"""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(greeting)
        state, data = sslib.wait_closed(s, T(5))
        assert state != "open", "connection kept open after %r" % greeting
        want = (b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
                if greeting[:1].isalpha() else b"\x05\xff")
        assert data in (b"", want), "unexpected answer %r" % data
    assert echo.accepted == 0
    still_serves(local, echo)


def test_server_not_running(ss, echo):
    """ss-local answers CONNECT once it has tried the server, so a refused
    server connection is reported as reply 0x05."""
    dead_port = sslib.free_port()
    dead = sslib.Server(None, "127.0.0.1", dead_port, sslib.DEFAULT_METHOD,
                        sslib.random_password())
    local = ss.local(dead)
    for _ in range(2):
        s, rep = sslib.socks5_open(local.addr, *echo.addr)
        with s:
            assert rep == 0x05, "reply 0x%02x with the server down, expected 0x05" % rep
            state, data = sslib.wait_closed(s, T(5))
            assert data == b"" and state != "open"
    assert echo.accepted == 0


def test_closed_target_port(pair, echo):
    """CONNECT through a working server to a port nobody listens on: the
    client's connection ends without data, and the programs go on."""
    _, local = pair
    closed = sslib.free_port()
    s, rep = sslib.socks5_open(local.addr, "127.0.0.1", closed)
    with s:
        state, data = sslib.wait_closed(s, T(10))
        assert data == b"", "received %r from a closed port" % data
        assert state == "eof", "connection to a closed port: %s" % state
    still_serves(local, echo)


def test_pipelined_greeting_and_request(pair, echo):
    """Greeting, request and first data in a single write."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.sendall(b"\x05\x01\x00" + sslib.socks5_request_bytes(1, *echo.addr) + b"early data")
        assert sslib.recv_exact(s, 2) == b"\x05\x00"
        rep, _ = sslib.socks5_read_reply(s)
        assert rep == 0
        assert sslib.recv_exact(s, 10) == b"early data"
        sslib.small_exchange(s)


def test_fragmented_handshake(pair, echo):
    """Greeting and request arrive one byte at a time."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for b in b"\x05\x02\x02\x00":
            s.sendall(bytes([b]))
            time.sleep(0.02)
        assert sslib.recv_exact(s, 2) == b"\x05\x00"
        for b in sslib.socks5_request_bytes(1, "localhost", echo.port):
            s.sendall(bytes([b]))
            time.sleep(0.02)
        rep, _ = sslib.socks5_read_reply(s)
        assert rep == 0
        sslib.small_exchange(s)


def test_reply_bound_address_is_well_formed(pair, echo):
    """A success reply carries a full address (IPv4 or IPv6) and port."""
    _, local = pair
    with sslib.connect(*local.addr) as s:
        assert sslib.socks5_greet(s) == 0
        s.sendall(sslib.socks5_request_bytes(1, *echo.addr))
        rep, bnd = sslib.socks5_read_reply(s)
        assert rep == 0 and bnd is not None
        sslib.small_exchange(s)


def test_error_reply_survives_pipelined_data(pair, echo):
    """A refused request followed at once by payload the server never reads:
    the client still gets the whole reply and then a FIN, never a reset."""
    _, local = pair
    for _ in range(20):
        with sslib.connect(*local.addr) as s:
            s.sendall(b"\x05\x01\x00" + sslib.socks5_request_bytes(sslib.CMD_BIND, *echo.addr)
                      + b"x" * 20000)
            got = b""
            s.settimeout(T(5))
            while True:
                chunk = s.recv(4096)  # ConnectionResetError fails the test
                if not chunk:
                    break
                got += chunk
        assert got[:2] == b"\x05\x00" and got[2:4] == b"\x05\x07", got[:12]
    still_serves(local, echo)
