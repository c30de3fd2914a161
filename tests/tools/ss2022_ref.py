#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Independent Shadowsocks 2022 encoder, written from SIP022 and SIP023, for
the known-answer vectors in tests/unit/aead2022_vectors.h.

BLAKE3 comes from b3sum (the BLAKE3 team's implementation), AES and the
AEADs from python3-cryptography: nothing here shares code with src/crypto.

  ss2022_ref.py            print the header to stdout
  ss2022_ref.py --check F  exit 0 if F is what this script prints, 1 if not;
                           1 also without python3-cryptography or b3sum
"""

import shutil
import subprocess
import sys

SKIP = 1  # both are installed by scripts/deps.sh: missing is a failure

try:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
except ImportError:
    Cipher = None


def b3(data, length, context=None):
    argv = ["b3sum", "--raw", "-l", str(length)]
    if context is not None:
        argv += ["--derive-key", context]
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout


def session_subkey(key, salt):
    return b3(key + salt, len(key), "shadowsocks 2022 session subkey")


def identity_subkey(key, salt):
    return b3(key + salt, len(key), "shadowsocks 2022 identity subkey")


def psk_hash(key):
    return b3(key, 16)


def aes_ecb(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def aead(method, key):
    return ChaCha20Poly1305(key) if "chacha" in method else AESGCM(key)


def u16(v):
    return v.to_bytes(2, "big")


def u64(v):
    return v.to_bytes(8, "big")


class Sealer:
    """SIP022 3.1.1: a 12-byte little-endian counter from zero."""

    def __init__(self, method, key):
        self.aead = aead(method, key)
        self.counter = 0

    def seal(self, plain):
        nonce = self.counter.to_bytes(12, "little")
        self.counter += 1
        return self.aead.encrypt(nonce, plain, None)


def tcp_request(method, psks, salt, ts, addr, padding, payload, chunks):
    out = salt
    # SIP023 TCP: one identity header per identity PSK.
    for i in range(len(psks) - 1):
        out += aes_ecb(identity_subkey(psks[i], salt), psk_hash(psks[i + 1]))
    s = Sealer(method, session_subkey(psks[-1], salt))
    var = addr + u16(len(padding)) + padding + payload
    out += s.seal(bytes([0]) + u64(ts) + u16(len(var)))
    out += s.seal(var)
    for c in chunks:
        out += s.seal(u16(len(c))) + s.seal(c)
    return out


def tcp_response(method, key, salt, req_salt, ts, first, chunks):
    s = Sealer(method, session_subkey(key, salt))
    out = salt + s.seal(bytes([1]) + u64(ts) + req_salt + u16(len(first)))
    out += s.seal(first)
    for c in chunks:
        out += s.seal(u16(len(c))) + s.seal(c)
    return out


def udp_packet(psks, sid, pid, main_header, payload, identities=True):
    """AES methods. Client packets carry identity headers; server ones do
    not and are under the user PSK alone (psks == [uPSK])."""
    sep = u64(sid) + u64(pid)
    out = aes_ecb(psks[0], sep)
    if identities:
        for i in range(len(psks) - 1):
            mask = bytes(a ^ b for a, b in zip(psk_hash(psks[i + 1]), sep))
            out += aes_ecb(psks[i], mask)
    key = session_subkey(psks[-1], u64(sid))
    return out + AESGCM(key).encrypt(sep[4:16], main_header + payload, None)


def h(b):
    return b.hex()


def vectors():
    rep = lambda v, n: bytes([v]) * n
    addr_domain = bytes([3, 11]) + b"example.com" + u16(443)
    addr_v4 = bytes([1, 1, 2, 3, 4]) + u16(53)
    out = []

    # TCP, 2022-blake3-aes-128-gcm, one identity PSK: request and response.
    m = "2022-blake3-aes-128-gcm"
    psks = [rep(0x11, 16), rep(0x22, 16)]
    salt, rsalt = rep(0xA1, 16), rep(0xB2, 16)
    req = tcp_request(m, psks, salt, 1700000000, addr_domain, b"",
                      b"GET / HTTP/1.1\r\n\r\n", [b"hello"])
    resp = tcp_response(m, psks[-1], rsalt, salt, 1700000001,
                        b"HTTP/1.1 200 OK\r\n\r\n", [b"world!"])
    out.append(("tcp_aes128", m, psks, salt, rsalt, req, resp))

    # TCP, 2022-blake3-chacha20-poly1305, padding and no initial payload.
    m = "2022-blake3-chacha20-poly1305"
    psks = [rep(0x33, 32)]
    salt, rsalt = rep(0xC3, 32), rep(0xD4, 32)
    req = tcp_request(m, psks, salt, 1700000002, addr_v4, bytes(7), b"", [b"ping"])
    resp = tcp_response(m, psks[-1], rsalt, salt, 1700000003, b"pong", [])
    out.append(("tcp_chacha", m, psks, salt, rsalt, req, resp))

    # UDP, 2022-blake3-aes-256-gcm, two identity PSKs: a client packet and
    # the server's answer (user PSK only, no identity headers).
    psks = [rep(0x44, 32), rep(0x55, 32), rep(0x66, 32)]
    csid, ssid = 0x0102030405060708, 0x1112131415161718
    c2s = udp_packet(psks, csid, 5,
                     bytes([0]) + u64(1700000004) + u16(3) + bytes(3) + addr_v4, b"query")
    s2c = udp_packet(psks[-1:], ssid, 9,
                     bytes([1]) + u64(1700000005) + u64(csid) + u16(0) + addr_v4, b"answer",
                     identities=False)
    udp = (psks, csid, ssid, c2s, s2c)
    return out, udp


def carray(name, b):
    """A macro of hex text, wrapped as clang-format leaves it."""
    text = h(b)
    if len(text) <= 100 - len("#define  \"\"") - len(name):
        return '#define %s "%s"\n' % (name, text)
    parts = [text[i:i + 88] for i in range(0, len(text), 88)]
    rows = ["#define " + name] + ['\t"%s"' % p for p in parts]
    width = lambda r: len(r.expandtabs(8))
    out = "".join(r + " " * (99 - width(r)) + "\\\n" for r in rows[:-1])
    return out + rows[-1] + "\n"


def render():
    tcp, (psks, csid, ssid, c2s, s2c) = vectors()
    lines = ["/* SPDX-License-Identifier: MIT */\n",
             "/* Generated by tests/tools/ss2022_ref.py (an independent encoder written\n"
             " * from SIP022/SIP023 on python3-cryptography and b3sum); do not edit.\n"
             " * The test unit.aead2022_ref checks it is still what the script prints. */\n"]
    for name, m, keys, salt, rsalt, req, resp in tcp:
        up = name.upper()
        for i, k in enumerate(keys):
            lines.append(carray("V_%s_PSK%d" % (up, i), k))
        lines.append(carray("V_%s_SALT" % up, salt))
        lines.append(carray("V_%s_RSALT" % up, rsalt))
        lines.append(carray("V_%s_REQ" % up, req))
        lines.append(carray("V_%s_RESP" % up, resp))
    for i, k in enumerate(psks):
        lines.append(carray("V_UDP_PSK%d" % i, k))
    lines.append("#define V_UDP_CSID 0x%016xull\n" % csid)
    lines.append("#define V_UDP_SSID 0x%016xull\n" % ssid)
    lines.append(carray("V_UDP_C2S", c2s))
    lines.append(carray("V_UDP_S2C", s2c))
    return "".join(lines)


def main():
    if Cipher is None or shutil.which("b3sum") is None:
        print("skipped: needs python3-cryptography and b3sum", file=sys.stderr)
        return SKIP
    text = render()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2]) as f:
            if f.read() != text:
                print("%s differs from what ss2022_ref.py computes" % sys.argv[2],
                      file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
