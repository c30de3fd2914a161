# SPDX-License-Identifier: MIT
"""A Shadowsocks 2022 peer for the tests, independent of src/crypto: it seals
with tests/tools/ss2022_ref.py (python3-cryptography and b3sum, written from
SIP022/SIP023) and opens with the same primitives. It lets the tests speak to
ss-server as a client and to ss-local as a server, and craft what our own
programs never send (old timestamps, answers bound to another request).

Loopback only, like everything in this suite.
"""

import base64
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

import ss2022_ref as ref  # noqa: E402

import sslib  # noqa: E402

TAG = 16


class Opener:
    """The receiving half of ref.Sealer: the same counter nonce."""

    def __init__(self, method, key):
        self.aead = ref.aead(method, key)
        self.counter = 0

    def open(self, sealed):
        nonce = self.counter.to_bytes(12, "little")
        self.counter += 1
        return self.aead.decrypt(nonce, sealed, None)


def _recv_exact(sock, n, timeout):
    sock.settimeout(timeout)
    return sslib.recv_exact(sock, n)


def ref_key(text):
    """A PSK from its base64 text."""
    return base64.b64decode(text)


def addr_bytes(host, port):
    atyp, raw = sslib.socks5_address(host)
    return bytes([atyp]) + raw + port.to_bytes(2, "big")


def request(method, psks, addr, payload=b"", padding=b"", ts=None, chunks=(), salt=None):
    """A client's first flight: (salt, bytes)."""
    salt = salt or os.urandom(sslib.SALT_LEN[method])
    ts = int(time.time()) if ts is None else ts
    return salt, ref.tcp_request(method, psks, salt, ts, addr, padding, payload, list(chunks))


def read_response(sock, method, key, timeout=5.0):
    """Reads a server's response header and first chunk.
    Returns (opener, type, timestamp, request salt echoed, first payload)."""
    n = sslib.SALT_LEN[method]
    salt = _recv_exact(sock, n, timeout)
    o = Opener(method, ref.session_subkey(key, salt))
    fixed = o.open(_recv_exact(sock, 1 + 8 + n + 2 + TAG, timeout))
    kind, ts = fixed[0], int.from_bytes(fixed[1:9], "big")
    req_salt, first_len = fixed[9:9 + n], int.from_bytes(fixed[9 + n:], "big")
    first = o.open(_recv_exact(sock, first_len + TAG, timeout))
    return o, kind, ts, req_salt, first


def read_chunk(sock, opener, timeout=5.0):
    length = int.from_bytes(opener.open(_recv_exact(sock, 2 + TAG, timeout)), "big")
    return opener.open(_recv_exact(sock, length + TAG, timeout))


def read_request(sock, method, key, timeout=5.0):
    """Reads a single-user client's request header. Returns (opener, salt,
    type, timestamp, address bytes, padding length, initial payload)."""
    n = sslib.SALT_LEN[method]
    salt = _recv_exact(sock, n, timeout)
    o = Opener(method, ref.session_subkey(key, salt))
    fixed = o.open(_recv_exact(sock, 1 + 8 + 2 + TAG, timeout))
    kind, ts = fixed[0], int.from_bytes(fixed[1:9], "big")
    var = o.open(_recv_exact(sock, int.from_bytes(fixed[9:11], "big") + TAG, timeout))
    if var[0] == 1:
        alen = 7
    elif var[0] == 4:
        alen = 19
    else:
        alen = 2 + var[1] + 2
    addr = var[:alen]
    plen = int.from_bytes(var[alen:alen + 2], "big")
    payload = var[alen + 2 + plen:]
    return o, salt, kind, ts, addr, plen, payload


def seal_chunk(sealer, data):
    return sealer.seal(len(data).to_bytes(2, "big")) + sealer.seal(data)


def response_stream(method, key, req_salt, first, ts=None):
    """(bytes of a response header with first as its first chunk, Sealer
    for the chunks after it)."""
    ts = int(time.time()) if ts is None else ts
    salt = os.urandom(sslib.SALT_LEN[method])
    s = ref.Sealer(method, ref.session_subkey(key, salt))
    out = salt + s.seal(bytes([1]) + ref.u64(ts) + req_salt + ref.u16(len(first)))
    out += s.seal(first)
    return out, s


def connect(addr, timeout=5.0):
    return socket.create_connection(addr, timeout=timeout)
