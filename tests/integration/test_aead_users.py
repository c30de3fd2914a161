# SPDX-License-Identifier: MIT
"""Several SIP004 (AEAD) users on one ss-server port, as outline-ss-server
serves its access keys: 100 users with their own passwords and a mix of
methods, each relaying TCP and UDP through the port; a stranger's password
refused as on a port of one user (drained, never answered); a replayed
first flight refused; the log naming the user. The clients are a small
SIP004 implementation on python3-cryptography, written here from the
specification, and our ss-local for a few users."""

import json
import os
import socket
import struct

import pytest

import sslib
import ssudp
from sslib import T

try:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
except ImportError:  # pragma: no cover
    AESGCM = ChaCha20Poly1305 = None

pytestmark = pytest.mark.skipif(AESGCM is None, reason="python3-cryptography is missing")

METHODS = ("aes-256-gcm", "chacha20-ietf-poly1305", "aes-128-gcm")
HOLD = 1.0


class Aead:
    """One user's SIP004: subkey = HKDF-SHA1(key, salt, "ss-subkey"),
    little-endian counter nonces, chunks [len+tag][payload+tag]."""

    def __init__(self, method, password):
        self.method = method
        self.key = sslib.evp_bytes_to_key(password, sslib.KEY_LEN[method])
        self.salt_len = sslib.SALT_LEN[method]

    def cipher(self, salt):
        sub = ssudp.hkdf_sha1(self.key, salt, b"ss-subkey", len(self.key))
        return ChaCha20Poly1305(sub) if "chacha" in self.method else AESGCM(sub)

    def stream(self, plaintext, salt=None):
        salt = os.urandom(self.salt_len) if salt is None else salt
        c, n, out = self.cipher(salt), 0, [salt]
        for i in range(0, len(plaintext), 0x3FFF):
            piece = plaintext[i:i + 0x3FFF]
            out.append(c.encrypt(n.to_bytes(12, "little"), struct.pack("!H", len(piece)), None))
            out.append(c.encrypt((n + 1).to_bytes(12, "little"), piece, None))
            n += 2
        return b"".join(out)

    def read_stream(self, sock, want, timeout):
        """want plaintext bytes of the server's answer."""
        sock.settimeout(timeout)
        salt = sslib.recv_exact(sock, self.salt_len)
        c, n, got = self.cipher(salt), 0, b""
        while len(got) < want:
            head = c.decrypt(n.to_bytes(12, "little"), sslib.recv_exact(sock, 18), None)
            size = struct.unpack("!H", head)[0]
            got += c.decrypt((n + 1).to_bytes(12, "little"),
                             sslib.recv_exact(sock, size + 16), None)
            n += 2
        return got

    def packet(self, plaintext):
        salt = os.urandom(self.salt_len)
        return salt + self.cipher(salt).encrypt(b"\0" * 12, plaintext, None)

    def open_packet(self, packet):
        salt = packet[:self.salt_len]
        return self.cipher(salt).decrypt(b"\0" * 12, packet[self.salt_len:], None)


def _address(host, port):
    atyp, addr = sslib.socks5_address(host)
    return bytes([atyp]) + addr + struct.pack("!H", port)


def _users(n):
    return [("user%03d" % i, METHODS[i % len(METHODS)], sslib.random_password())
            for i in range(n)]


def _server(ss, tmp_path, users, method="aes-256-gcm", extra=()):
    conf = {"method": method, "mode": "tcp_and_udp",
            "users": [{"name": n, "password": pw, "method": m} for n, m, pw in users]}
    path = tmp_path / "users.json"
    path.write_text(json.dumps(conf))
    args = lambda port: (["-c", str(path), "-s", sslib.LOOPBACK4, "-p", port, "-v"]
                         + list(extra))
    p, port = ss.procs.start_listening(ss.exe("ss-server"), args)
    return sslib.Server(p, sslib.LOOPBACK4, port, method)


def _echo_through(server, user, target, data):
    name, method, pw = user
    a = Aead(method, pw)
    with sslib.connect(*server.addr) as s:
        s.sendall(a.stream(_address(*target) + data))
        return a.read_stream(s, len(data), T(10))


def _udp_through(server, user, target, data):
    name, method, pw = user
    a = Aead(method, pw)
    with ssudp.udp_socket(timeout=T(5)) as u:
        u.sendto(a.packet(_address(*target) + data), server.addr)
        plain = a.open_packet(u.recv(65536))
    atyp, host, port, n = ssudp.parse_addr(plain)
    assert (host, port) == tuple(target)
    return plain[n:]


def test_hundred_users_tcp_and_udp(ss, tmp_path, echo):
    users = _users(100)
    server = _server(ss, tmp_path, users)
    with ssudp.UdpEcho() as uecho:
        for user in users:
            data = os.urandom(100 + len(user[0]) * 37)
            assert _echo_through(server, user, echo.addr, data) == data, user[0]
            data = os.urandom(700)
            assert _udp_through(server, user, uecho.addr, data) == data, user[0]
        # Again, with each address's last user known: the same answers.
        for user in users[::7]:
            data = os.urandom(3000)
            assert _echo_through(server, user, echo.addr, data) == data, user[0]
    out = server.program.output()
    for name in ("user000", "user049", "user099"):
        assert "user %s: connect" % name in out, out[-3000:]
        assert "user %s: new session" % name in out, out[-3000:]


@pytest.mark.parametrize("impl", ["ours", "libev"])
def test_ss_local_per_method(ss, tmp_path, echo, blob, impl):
    """Our ss-local, and shadowsocks-libev's, as the client of three users,
    one per method, with 1 MiB each way."""
    if impl == "libev" and not os.path.exists(ss.exe("ss-local", "libev")):
        pytest.skip("shadowsocks-libev is not installed")
    users = _users(30)
    server = _server(ss, tmp_path, users)
    for user in users[-3:]:
        local = ss.local(server, impl=impl, method=user[1], password=user[2])
        with sslib.socks5_connect(local.addr, *echo.addr, timeout=T(5)) as s:
            sslib.echo_check(s, blob(1 << 20), timeout=T(30))
    out = server.program.output()
    for user in users[-3:]:
        assert "user %s: connect" % user[0] in out, out[-2000:]


def test_stranger_is_drained(ss, tmp_path, echo):
    """A password no user has: the connection is read and never answered
    nor closed until its deadline, as on a port of one user."""
    users = _users(100)
    server = _server(ss, tmp_path, users)
    single = ss.server(method="aes-256-gcm")
    for srv in (server, single):
        for method in METHODS:
            a = Aead(method, "not a user's password")
            with sslib.connect(*srv.addr) as s:
                s.sendall(a.stream(_address(*echo.addr) + b"let me in"))
                state, data = sslib.wait_closed(s, HOLD)
            assert (state, data) == ("open", b""), (srv.method, method, state)
    assert not echo.records, "a stranger reached the target"
    with ssudp.UdpEcho() as uecho:
        with ssudp.udp_socket(timeout=T(5)) as u:
            u.sendto(Aead("aes-256-gcm", "nope").packet(_address(*uecho.addr) + b"x"),
                     server.addr)
            ssudp.recv_nothing(u, HOLD)
        assert uecho.count() == 0
    assert "no user's password or key opens it" in server.program.output()


def test_replayed_first_flight_is_refused(ss, tmp_path, echo):
    users = _users(10)
    server = _server(ss, tmp_path, users)
    name, method, pw = users[4]
    a = Aead(method, pw)
    flight = a.stream(_address(*echo.addr) + b"once")
    with sslib.connect(*server.addr) as s:
        s.sendall(flight)
        assert a.read_stream(s, 4, T(10)) == b"once"
    with sslib.connect(*server.addr) as s:
        s.sendall(flight)
        state, data = sslib.wait_closed(s, HOLD)
    assert (state, data) == ("open", b"")
    assert len(echo.records) == 1
    assert "repeated salt" in server.program.output()
    # A datagram played twice reaches its target once.
    with ssudp.UdpEcho() as uecho:
        packet = a.packet(_address(*uecho.addr) + b"dgram")
        with ssudp.udp_socket(timeout=T(5)) as u:
            u.sendto(packet, server.addr)
            assert a.open_packet(u.recv(65536)).endswith(b"dgram")
            u.sendto(packet, server.addr)
            ssudp.recv_nothing(u, HOLD)
        assert uecho.count() == 1


def test_a_port_with_users_has_no_password_of_its_own(ss, tmp_path):
    path = tmp_path / "both.json"
    path.write_text(json.dumps({"method": "aes-256-gcm", "password": "pw",
                                "users": [{"name": "a", "password": "x"}]}))
    rc, p = ss.run("ss-server", ["-c", str(path), "-s", sslib.LOOPBACK4, "-p", "1"])
    assert rc != 0
    assert "serves its users alone" in p.output()


def test_one_address_two_users_udp(ss, tmp_path):
    """A client address that sent as one user and then as another (a port
    an old socket left): each datagram is answered with its own user's
    key."""
    users = _users(5)
    server = _server(ss, tmp_path, users)
    with ssudp.UdpEcho() as uecho, ssudp.udp_socket(timeout=T(5)) as u:
        for user in (users[1], users[3], users[1]):
            a = Aead(user[1], user[2])
            u.sendto(a.packet(_address(*uecho.addr) + user[0].encode()), server.addr)
            assert a.open_packet(u.recv(65536)).endswith(user[0].encode())


def test_print_url_per_user(ss, tmp_path):
    """One URL per user, with that user's method and password."""
    import base64
    users = _users(3)
    path = tmp_path / "url.json"
    path.write_text(json.dumps({"method": "aes-256-gcm", "server_port": 8388, "users": [
        {"name": n, "password": pw, "method": m} for n, m, pw in users]}))
    rc, p = ss.run("ss-server", ["-c", str(path), "-s", "127.0.0.1", "--print-url"])
    assert rc == 0, p.output()
    urls = [w for w in p.stdout().split() if w.startswith("ss://")]
    assert len(urls) == 3, p.output()
    for url, (name, method, pw) in zip(urls, users):
        info = url[5:url.index("@")]
        info += "=" * (-len(info) % 4)
        assert base64.urlsafe_b64decode(info).decode() == "%s:%s" % (method, pw)
        assert url.endswith("#" + name)
