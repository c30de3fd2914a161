# SPDX-License-Identifier: MIT
"""UDP helpers for the integration and interop suites (standard library only,
loopback only).

- UdpEcho: a UDP echo server on a thread that records who sent what.
- SOCKS5 UDP: UDP ASSOCIATE, the request header, wrapping and unwrapping.
- App: one application behind ss-local (SOCKS5 UDP) or ss-tunnel, and
  run_clients: many of them at once, each checking it gets its own
  datagrams back.
- Readiness and resources of a program: wait until it has a UDP socket bound
  on a port (for programs without a TCP listener), count its open sockets.
- A Shadowsocks AEAD UDP packet codec (SIP004 packet form) for
  chacha20-ietf-poly1305, written from RFC 8439 and RFC 5869, so tests can
  talk to ss-server directly: send packets no real client would, and read
  the address header of its answers.
"""

import hashlib
import hmac
import os
import socket
import struct
import threading
import time

import sslib
from sslib import T

SOCKBUF = 4 << 20
MAX_DGRAM = 65535


def udp_socket(host=sslib.LOOPBACK4, bind_port=0, timeout=None):
    """A UDP socket bound on host (loopback) with 4 MiB buffers."""
    s = socket.socket(sslib.family_of(host), socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, SOCKBUF)
        except OSError:  # pragma: no cover
            pass
    s.bind((host, bind_port))
    s.settimeout(T(5) if timeout is None else timeout)
    return s


def free_udp_port(host=sslib.LOOPBACK4):
    """A port free for both TCP and UDP on host a moment ago."""
    for _ in range(50):
        p = sslib.free_port(host)
        try:
            with socket.socket(sslib.family_of(host), socket.SOCK_DGRAM) as u:
                u.bind((host, p))
            return p
        except OSError:
            continue
    raise sslib.SetupError("no port free for TCP and UDP")


def recv_nothing(sock, quiet):
    """Asserts that nothing arrives on sock for quiet seconds."""
    sock.settimeout(quiet)
    try:
        data, addr = sock.recvfrom(MAX_DGRAM + 1)
    except socket.timeout:
        return
    raise AssertionError("expected no datagram, got %d bytes from %r: %r" % (
        len(data), addr, data[:40]))


# ---------------------------------------------------------------------------
# Echo server

class UdpEcho:
    """Echoes every datagram to its sender. records: (source address,
    length, first 16 bytes) per datagram received. With mute=True it only
    records."""

    def __init__(self, host=sslib.LOOPBACK4, port=0, mute=False):
        self.host = host
        self.sock = udp_socket(host, port, timeout=0.1)
        self.port = self.sock.getsockname()[1]
        self.mute = mute
        self.records = []
        self.errors = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="UdpEcho:%d" % self.port)
        self.thread.start()

    @property
    def addr(self):
        return (self.host, self.port)

    def _run(self):
        buf = bytearray(MAX_DGRAM + 1)
        while not self.stopping.is_set():
            try:
                n, peer = self.sock.recvfrom_into(buf)
            except socket.timeout:
                continue
            except OSError as e:
                if not self.stopping.is_set():
                    self.errors.append(e)
                break
            with self.lock:
                self.records.append((peer[:2], n, bytes(buf[:16])))
            if self.mute:
                continue
            try:
                self.sock.sendto(memoryview(buf)[:n], peer)
            except OSError as e:
                self.errors.append(e)

    def sources(self):
        """The source addresses seen, in order of first appearance."""
        with self.lock:
            out = []
            for peer, _, _ in self.records:
                if peer not in out:
                    out.append(peer)
            return out

    def source_of(self, head):
        """The source of the last datagram whose first bytes start with head."""
        with self.lock:
            for peer, _, first in reversed(self.records):
                if first.startswith(head[:16]):
                    return peer
        return None

    def count(self):
        with self.lock:
            return len(self.records)

    def close(self):
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------------------
# SOCKS5 UDP

def socks5_udp_header(host, port, frag=0, atyp=None):
    atyp, addr = sslib.socks5_address(host, atyp)
    return bytes([0, 0, frag, atyp]) + addr + struct.pack("!H", port)


def parse_addr(buf):
    """A Shadowsocks / SOCKS5 address at the start of buf: (atyp, host,
    port, length)."""
    atyp = buf[0]
    if atyp == sslib.ATYP_IPV4:
        host, n = socket.inet_ntop(socket.AF_INET, buf[1:5]), 5
    elif atyp == sslib.ATYP_IPV6:
        host, n = socket.inet_ntop(socket.AF_INET6, buf[1:17]), 17
    elif atyp == sslib.ATYP_DOMAIN:
        ln = buf[1]
        host, n = buf[2:2 + ln].decode("latin-1"), 2 + ln
    else:
        raise AssertionError("bad ATYP %d in %r" % (atyp, buf[:20]))
    if len(buf) < n + 2:
        raise AssertionError("address header cut short: %r" % buf[:20])
    (port,) = struct.unpack("!H", buf[n:n + 2])
    return atyp, host, port, n + 2


def socks5_unwrap(dgram):
    """(atyp, host, port, data) of a SOCKS5 UDP datagram from the proxy."""
    assert len(dgram) >= 10, "SOCKS5 UDP datagram too short: %r" % dgram
    assert dgram[:3] == b"\0\0\0", "RSV/FRAG not zero: %r" % dgram[:3]
    atyp, host, port, n = parse_addr(dgram[3:])
    return atyp, host, port, dgram[3 + n:]


class Association:
    """One SOCKS5 UDP ASSOCIATE: the TCP control connection, the relay
    address from the reply, and a UDP socket of the client. login: (name,
    password) as bytes, to log in with username/password (RFC 1929)."""

    def __init__(self, proxy, client_host=sslib.LOOPBACK4, timeout=None, login=None):
        self.udp = udp_socket(client_host)
        self.ctrl = sslib.connect(proxy[0], proxy[1], timeout)
        try:
            want = 2 if login else 0
            if sslib.socks5_greet(self.ctrl, methods=(want,)) != want:
                raise sslib.SocksError("proxy did not choose method %d" % want)
            if login and sslib.socks5_login(self.ctrl, *login) != 0:
                raise sslib.SocksError("login refused")
            # DST = the address the client will send from (RFC 1928).
            h, p = self.udp.getsockname()[:2]
            self.ctrl.sendall(sslib.socks5_request_bytes(sslib.CMD_UDP_ASSOCIATE, h, p))
            rep, bnd = sslib.socks5_read_reply(self.ctrl)
            if rep != 0:
                raise sslib.SocksError("UDP ASSOCIATE failed with reply 0x%02x" % rep)
            self.relay = bnd
        except BaseException:
            self.close()
            raise

    def send(self, host, port, data, frag=0, atyp=None):
        self.udp.sendto(socks5_udp_header(host, port, frag, atyp) + data, self.relay[:2])

    def recv(self, timeout=None):
        """(atyp, host, port, data) of the next datagram from the relay."""
        self.udp.settimeout(T(5) if timeout is None else timeout)
        while True:
            dgram, src = self.udp.recvfrom(MAX_DGRAM + 1)
            if src[:2] == tuple(self.relay[:2]):
                return socks5_unwrap(dgram)

    def exchange(self, target, data, timeout=None):
        """Sends data to target through the relay; returns the answer's
        (atyp, host, port, data)."""
        self.send(target[0], target[1], data)
        return self.recv(timeout)

    def close(self):
        for s in (getattr(self, "ctrl", None), self.udp):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tunnel_exchange(sock, tunnel_addr, data, timeout=None):
    """Sends data to the tunnel from sock; returns the answer."""
    sock.sendto(data, tunnel_addr)
    sock.settimeout(T(5) if timeout is None else timeout)
    while True:
        dgram, src = sock.recvfrom(MAX_DGRAM + 1)
        if src[:2] == tuple(tunnel_addr[:2]):
            return dgram


class App:
    """One application behind the client program: a SOCKS5 UDP association
    (via="socks") or a plain UDP socket talking to ss-tunnel (via="tunnel").
    Every answer through SOCKS5 must name target as its source."""

    def __init__(self, via, client, target, check_bnd=True):
        self.via, self.client, self.target = via, client, tuple(target)
        local = sslib.LOOPBACK6 if ":" in client.host else sslib.LOOPBACK4
        if via == "socks":
            self.assoc = Association(client.addr, client_host=local)
            self.sock = self.assoc.udp
            assert not check_bnd or tuple(self.assoc.relay) == (client.host, client.port), \
                "BND of UDP ASSOCIATE is %r, not the relay %r" % (self.assoc.relay, client.addr)
        else:
            self.assoc = None
            self.sock = udp_socket(local)

    def send(self, data):
        if self.assoc:
            self.assoc.send(self.target[0], self.target[1], data)
        else:
            self.sock.sendto(data, self.client.addr)

    def recv(self, timeout=None):
        if self.assoc:
            atyp, host, port, data = self.assoc.recv(timeout)
            assert (host, port) == self.target, \
                "answer names %s:%d, not the target %s:%d" % (host, port, *self.target)
            assert atyp == (sslib.ATYP_IPV6 if ":" in host else sslib.ATYP_IPV4)
            return data
        self.sock.settimeout(T(5) if timeout is None else timeout)
        while True:
            data, src = self.sock.recvfrom(MAX_DGRAM + 1)
            if src[:2] == tuple(self.client.addr):
                return data

    def exchange(self, data, timeout=None):
        self.send(data)
        return self.recv(timeout)

    def nothing(self, quiet=0.5):
        recv_nothing(self.sock, quiet)

    def close(self):
        if self.assoc:
            self.assoc.close()
        else:
            self.sock.close()


def tagged(tag, n):
    """n bytes starting with tag (a marker the echo server's records show)."""
    return (tag + os.urandom(max(0, n - len(tag))))[:n]


def check_exchange(app, data):
    back = app.exchange(data)
    assert len(back) == len(data), "sent %d bytes, %d came back" % (len(data), len(back))
    assert back == data, "the %d bytes that came back differ" % len(data)


def run_clients(apps, per_client, window=4, max_size=1400, timeout=None):
    """Each App (on its own thread) sends per_client datagrams carrying its
    index and a sequence number, keeping at most window in flight, and never
    sending one again: every datagram must come back, unaltered, to the app
    that sent it. Closes the apps. Returns the list of failures."""
    results = [None] * len(apps)
    start = threading.Barrier(len(apps))
    timeout = T(10) if timeout is None else timeout

    def payload(cid, seq):
        n = (cid * 7919 + seq * 104729) % max(1, max_size - 6)
        return struct.pack("!HI", cid, seq) + bytes((cid + seq + i) & 0xFF for i in range(n))

    def run(cid):
        app, pending, received, nxt = apps[cid], {}, 0, 0
        try:
            start.wait(T(10))
            while nxt < min(window, per_client):
                pending[nxt] = payload(cid, nxt)
                app.send(pending[nxt])
                nxt += 1
            while pending:
                try:
                    data = app.recv(timeout)
                except socket.timeout:
                    results[cid] = "client %d: %d of %d back, lost %s" % (
                        cid, received, per_client, sorted(pending)[:8])
                    return
                owner, seq = struct.unpack("!HI", data[:6])
                if owner != cid:
                    results[cid] = "client %d got client %d's datagram %d" % (cid, owner, seq)
                    return
                if pending.pop(seq, None) != data:
                    results[cid] = "client %d: datagram %d unexpected or altered" % (cid, seq)
                    return
                received += 1
                if nxt < per_client:
                    pending[nxt] = payload(cid, nxt)
                    app.send(pending[nxt])
                    nxt += 1
            results[cid] = received
        except Exception as e:  # reported to the caller
            results[cid] = "client %d: %r after %d" % (cid, e, received)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(apps))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + T(60)
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    for a in apps:
        a.close()
    errors = ["client %d still running" % i for i, t in enumerate(threads) if t.is_alive()]
    return errors + [str(r) for r in results if r != per_client]


# ---------------------------------------------------------------------------
# Program resources

def _socket_inodes(pid):
    inodes = set()
    d = "/proc/%d/fd" % pid
    for name in os.listdir(d):
        try:
            link = os.readlink(os.path.join(d, name))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def socket_count(pid):
    """Open sockets of process pid."""
    return len(_socket_inodes(pid))


def wait_sockets(pid, want, timeout):
    """Waits until process pid has want sockets open; returns the count at
    the end (== want unless the time ran out)."""
    return sslib.wait_count(socket_count, pid, want, timeout)


def settled_sockets(pid, quiet=0.3, timeout=None):
    """The socket count of pid once it stopped changing for quiet seconds."""
    return sslib.settled_count(socket_count, pid, quiet, timeout)


def _bound_ports(proto):
    """{(port, inode)} of the bound sockets in /proc/net/<proto>{,6}."""
    out = set()
    for name in (proto, proto + "6"):
        try:
            with open("/proc/net/" + name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    port = int(fields[1].rsplit(":", 1)[1], 16)
                    out.add((port, int(fields[9])))
        except OSError:
            continue
    return out


def bound_ports(pid, proto):
    """Ports of pid's sockets of proto ("udp" or "tcp"; TCP includes
    connections)."""
    mine = _socket_inodes(pid)
    return {port for port, inode in _bound_ports(proto) if inode in mine}


def listening_tcp_ports(pid):
    mine = _socket_inodes(pid)
    out = set()
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/net/" + name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[9]) in mine:  # LISTEN
                        out.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            continue
    return out


def bound_addresses(pid):
    """[(proto, local ip text, port, state)] of every socket of pid."""
    mine = _socket_inodes(pid)
    out = []
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open("/proc/net/" + name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[9]) not in mine:
                        continue
                    ip_hex, port_hex = fields[1].rsplit(":", 1)
                    raw = bytes.fromhex(ip_hex)
                    if len(raw) == 4:
                        ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
                    else:
                        words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                        ip = socket.inet_ntop(socket.AF_INET6, words)
                    out.append((name, ip, int(port_hex, 16), fields[3]))
        except OSError:
            continue
    return out


def wait_udp_bound(program, port, timeout=None):
    """Waits until program has a UDP socket bound on port. Raises
    sslib.ProgramFailed if it exits or the time runs out."""
    timeout = T(10) if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        if program.poll() is not None:
            raise sslib.ProgramFailed("%s exited before binding UDP port %d\n%s" % (
                program.name, port, program.describe()))
        try:
            if port in bound_ports(program.pid, "udp"):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise sslib.ProgramFailed("%s has no UDP socket on port %d after %.1fs\n%s" % (
                program.name, port, timeout, program.describe()))
        time.sleep(0.02)


def start_udp_listening(procs, exe, make_args, host=sslib.LOOPBACK4, name=None, port=None,
                        attempts=5):
    """Like Processes.start_listening for programs that only bind UDP:
    (program, port) once the program has its UDP socket on port."""
    last = None
    for _ in range(attempts):
        p_ = port or free_udp_port(host)
        p = procs.start(exe, make_args(p_), name=name)
        try:
            wait_udp_bound(p, p_)
            return p, p_
        except sslib.ProgramFailed as e:
            last = e
            p.kill()
            p.expect_exit = True
            if port is None and any(m in p.output() for m in procs.ADDR_IN_USE):
                continue
            raise
    raise last


# ---------------------------------------------------------------------------
# Shadowsocks AEAD UDP packets (chacha20-ietf-poly1305), pure Python

def _rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def _chacha_block(key_words, counter, nonce_words):
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] + key_words + \
        [counter & 0xFFFFFFFF] + nonce_words
    x = list(state)
    for _ in range(10):
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 16)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 12)
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 8)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 7)
    return struct.pack("<16I", *((x[i] + state[i]) & 0xFFFFFFFF for i in range(16)))


def chacha20(key, counter, nonce, data):
    kw = list(struct.unpack("<8I", key))
    nw = list(struct.unpack("<3I", nonce))
    out = bytearray(len(data))
    for i in range(0, len(data), 64):
        block = _chacha_block(kw, counter + i // 64, nw)
        chunk = data[i:i + 64]
        out[i:i + len(chunk)] = bytes(a ^ b for a, b in zip(chunk, block))
    return bytes(out)


def poly1305(key, msg):
    r = int.from_bytes(key[:16], "little") & 0x0FFFFFFC0FFFFFFC0FFFFFFC0FFFFFFF
    s = int.from_bytes(key[16:32], "little")
    p = (1 << 130) - 5
    acc = 0
    for i in range(0, len(msg), 16):
        n = int.from_bytes(msg[i:i + 16] + b"\x01", "little")
        acc = (acc + n) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def _pad16(b):
    return b"\0" * (-len(b) % 16)


def chacha20_poly1305_seal(key, nonce, plaintext, aad=b""):
    otk = chacha20(key, 0, nonce, b"\0" * 32)
    ct = chacha20(key, 1, nonce, plaintext)
    mac = aad + _pad16(aad) + ct + _pad16(ct) + struct.pack("<QQ", len(aad), len(ct))
    return ct + poly1305(otk, mac)


def chacha20_poly1305_open(key, nonce, sealed, aad=b""):
    """The plaintext, or None when the tag does not match."""
    if len(sealed) < 16:
        return None
    ct, tag = sealed[:-16], sealed[-16:]
    otk = chacha20(key, 0, nonce, b"\0" * 32)
    mac = aad + _pad16(aad) + ct + _pad16(ct) + struct.pack("<QQ", len(aad), len(ct))
    if not hmac.compare_digest(poly1305(otk, mac), tag):
        return None
    return chacha20(key, 1, nonce, ct)


def hkdf_sha1(key, salt, info, length):
    prk = hmac.new(salt, key, hashlib.sha1).digest()
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha1).digest()
        out += t
        i += 1
    return out[:length]


class Packets:
    """SIP004 UDP packets for chacha20-ietf-poly1305 under one password:
    [salt 32][sealed address header + payload][tag 16], zero nonce."""

    METHOD = "chacha20-ietf-poly1305"
    SALT = 32

    def __init__(self, password):
        self.key = sslib.evp_bytes_to_key(password, 32)

    def seal(self, plaintext, salt=None):
        salt = os.urandom(self.SALT) if salt is None else salt
        sub = hkdf_sha1(self.key, salt, b"ss-subkey", 32)
        return salt + chacha20_poly1305_seal(sub, b"\0" * 12, plaintext)

    def open(self, packet):
        """The plaintext, or None when the packet does not open."""
        if len(packet) < self.SALT + 16:
            return None
        sub = hkdf_sha1(self.key, packet[:self.SALT], b"ss-subkey", 32)
        return chacha20_poly1305_open(sub, b"\0" * 12, packet[self.SALT:])

    def request(self, host, port, data, atyp=None):
        atyp, addr = sslib.socks5_address(host, atyp)
        return self.seal(bytes([atyp]) + addr + struct.pack("!H", port) + data)

    def answer(self, packet):
        """(atyp, host, port, data) of a server's answer."""
        plain = self.open(packet)
        assert plain is not None, "the server's answer does not open (%d bytes)" % len(packet)
        atyp, host, port, n = parse_addr(plain)
        return atyp, host, port, plain[n:]
