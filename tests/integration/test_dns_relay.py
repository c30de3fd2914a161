# SPDX-License-Identifier: MIT
"""ss-local's DNS relay (--dns): proxied names are asked of the remote name
server through ss-server, bypassed ones of the local name server directly;
answers keep the query id and are cached by TTL; truncated answers are asked
again over TCP; clients may ask over TCP; a malformed query is dropped; the
queries in flight are bounded. Both name servers are the test's own, on
loopback, recording what they are asked and from which process's socket."""

import os
import socket
import struct
import threading
import time

import pytest

import sslib
import ssudp

# ---------------------------------------------------------------------------
# DNS messages, as much as the tests need


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def make_query(name, qid, qtype=1, opcode=0):
    head = struct.pack("!HHHHHH", qid, 0x0100 | (opcode << 11), 1, 0, 0, 0)
    return head + encode_name(name) + struct.pack("!HH", qtype, 1)


def parse_answer(msg):
    """(id, flags, question name, [(type, ttl, rdata)] of the answer section)."""
    qid, flags, qd, an, _ns, _ar = struct.unpack("!HHHHHH", msg[:12])
    assert qd == 1
    i, labels = 12, []
    while msg[i]:
        labels.append(msg[i + 1:i + 1 + msg[i]].decode())
        i += msg[i] + 1
    i += 5
    records = []
    for _ in range(an):
        if msg[i] & 0xC0 == 0xC0:
            i += 2
        else:
            while msg[i]:
                i += msg[i] + 1
            i += 1
        rtype, _cls, ttl, rdlen = struct.unpack("!HHIH", msg[i:i + 10])
        records.append((rtype, ttl, msg[i + 10:i + 10 + rdlen]))
        i += 10 + rdlen
    return qid, flags, ".".join(labels).lower(), records


def socket_owner(port, kind, pids):
    """Which of pids has a socket bound to loopback port (UDP or TCP)."""
    for pid in pids:
        try:
            if port in ssudp.bound_ports(pid, kind):
                return pid
        except OSError:
            continue
    return None


class NameServer:
    """A name server on 127.0.0.1, UDP and TCP on one port. Every A query is
    answered with `address` (TTL `ttl`), or the name's own in `addresses`;
    names in `truncate` are answered over UDP with TC and no record (over TCP
    in full); names in `silent` are never answered. `asked` records
    (transport, name, pid of the asking socket among `pids`)."""

    @staticmethod
    def free_port():
        """A loopback port free for both UDP and TCP."""
        for _ in range(50):
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                u.bind((sslib.LOOPBACK4, 0))
                t.bind((sslib.LOOPBACK4, u.getsockname()[1]))
                return u.getsockname()[1]
            except OSError:
                continue
            finally:
                u.close()
                t.close()
        raise sslib.SetupError("no port free for UDP and TCP")

    def __init__(self, address, ttl=300):
        self.address = address
        self.addresses = {}
        self.ttl = ttl
        self.truncate = set()
        self.silent = set()
        self.tcp_delay = 0  # seconds before each answer over TCP
        self.tcp_now = self.tcp_most = 0  # connections open, the most at once
        self.pids = []
        self.asked = []
        self.lock = threading.Lock()
        for _ in range(50):  # one port for both, free for TCP as well
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind((sslib.LOOPBACK4, 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind((sslib.LOOPBACK4, self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        self.tcp.listen(64)
        self.udp.settimeout(0.2)
        self.tcp.settimeout(0.2)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._udp_loop, daemon=True),
                        threading.Thread(target=self._tcp_loop, daemon=True)]
        for t in self.threads:
            t.start()

    @property
    def addr(self):
        return "%s:%d" % (sslib.LOOPBACK4, self.port)

    def names(self, transport=None):
        with self.lock:
            return [n for t, n, _ in self.asked if transport in (None, t)]

    def owners(self, name):
        with self.lock:
            return [p for _, n, p in self.asked if n == name]

    def _answer(self, q, tcp):
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
            i += q[i] + 1
        qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        if name in self.silent:
            return name, None
        if name in self.truncate and not tcp:
            return name, q[:2] + struct.pack("!HHHHH", 0x8380, 1, 0, 0, 0) + question
        rr = b""
        if qtype == 1:
            ip = socket.inet_aton(self.addresses.get(name, self.address))
            rr = struct.pack("!HHHIH4s", 0xC00C, 1, 1, self.ttl, 4, ip)
            if name in self.truncate:  # a long answer, as it would be
                rr += rr * 40
        count = len(rr) // 16
        return name, q[:2] + struct.pack("!HHHHH", 0x8180, 1, count, 0, 0) + question + rr

    def _note(self, transport, name, port):
        owner = socket_owner(port, transport, self.pids)
        with self.lock:
            self.asked.append((transport, name, owner))

    def _udp_loop(self):
        while not self.stop.is_set():
            try:
                q, peer = self.udp.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                name, a = self._answer(q, False)
            except (IndexError, struct.error, UnicodeDecodeError):
                continue
            self._note("udp", name, peer[1])
            if a is not None:
                self.udp.sendto(a, peer)

    def _tcp_loop(self):
        while not self.stop.is_set():
            try:
                conn, peer = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._tcp_conn, args=(conn, peer), daemon=True).start()

    def _tcp_conn(self, conn, peer):
        conn.settimeout(5)
        with self.lock:
            self.tcp_now += 1
            self.tcp_most = max(self.tcp_most, self.tcp_now)
        try:
            while True:
                n = struct.unpack("!H", sslib.recv_exact(conn, 2))[0]
                q = sslib.recv_exact(conn, n)
                name, a = self._answer(q, True)
                self._note("tcp", name, peer[1])
                time.sleep(self.tcp_delay)
                if a is not None:
                    conn.sendall(struct.pack("!H", len(a)) + a)
        except (OSError, AssertionError, struct.error, IndexError):
            pass
        finally:
            with self.lock:
                self.tcp_now -= 1
            conn.close()

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        self.udp.close()
        self.tcp.close()


@pytest.fixture
def servers():
    remote, local = NameServer("10.0.0.1"), NameServer("10.0.0.2")
    yield remote, local
    remote.close()
    local.close()


def start(ss, tmp_path, remote, local, acl=None, udp=True, extra=()):
    """ss-server and ss-local with the DNS relay; returns (dns address,
    server, client)."""
    mode = ["-u"] if udp else []
    server = ss.server(extra=mode)
    port = NameServer.free_port()
    args = ["--dns", "127.0.0.1:%d" % port, "--remote-dns", remote.addr,
            "--local-dns", local.addr] + mode + list(extra)
    if acl is not None:
        path = tmp_path / "dns.acl"
        path.write_text(acl)
        args += ["--acl", str(path)]
    client = ss.local(server, extra=args)
    for ns in (remote, local):
        ns.pids = [server.program.pid, client.program.pid]
    wait_relay(client.program.pid, port)
    return (sslib.LOOPBACK4, port), server, client


def wait_relay(pid, port):
    """Until process pid's relay has its sockets on port: the SOCKS5 port,
    which starting a program waits for, listens a moment before."""
    assert sslib.wait_for(lambda: port in ssudp.bound_ports(pid, "udp") and
                          port in ssudp.listening_tcp_ports(pid), sslib.T(10)), port


def ask(dns, name, qtype=1, timeout=None, qid=None):
    """Asks over UDP; the answer, parsed, with its size."""
    qid = qid if qid is not None else int.from_bytes(os.urandom(2), "big")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(sslib.T(6) if timeout is None else timeout)
    try:
        s.sendto(make_query(name, qid, qtype), dns)
        msg = s.recv(65536)
    finally:
        s.close()
    answer = parse_answer(msg)
    assert answer[0] == qid, "the answer keeps the query id"
    assert answer[2] == name.lower()
    return answer, len(msg)


def address_of(answer):
    return [socket.inet_ntoa(r[2]) for r in answer[3] if r[0] == 1]


ACL = "[proxy_all]\n[bypass_list]\n||bypass.test\n"


@pytest.mark.parametrize("udp", [True, False], ids=["tcp_and_udp", "tcp_only"])
def test_proxied_and_bypassed_names(ss, tmp_path, servers, udp):
    """A proxied name reaches the remote name server from ss-server's
    socket and never the local one; a bypassed name reaches the local one
    from ss-local's socket and never the remote one; each answer keeps its
    query id. Through the server, UDP with a mode that has it, else TCP."""
    remote, local = servers
    dns, server, client = start(ss, tmp_path, remote, local, acl=ACL, udp=udp)

    a, _ = ask(dns, "www.Proxied.test")
    assert address_of(a) == ["10.0.0.1"]
    a, _ = ask(dns, "a.bypass.test")
    assert address_of(a) == ["10.0.0.2"]

    assert remote.names() == ["www.proxied.test"]
    assert local.names() == ["a.bypass.test"]
    assert remote.names("udp" if udp else "tcp") == ["www.proxied.test"]
    assert remote.owners("www.proxied.test") == [server.program.pid]
    assert local.owners("a.bypass.test") == [client.program.pid]


def test_no_acl_proxies_every_name(ss, tmp_path, servers):
    remote, local = servers
    dns, _, _ = start(ss, tmp_path, remote, local)
    for name in ("one.test", "bypass.test", "three.example"):
        a, _ = ask(dns, name)
        assert address_of(a) == ["10.0.0.1"]
    assert sorted(remote.names()) == ["bypass.test", "one.test", "three.example"]
    assert local.names() == []


def test_server_names_go_direct(ss, tmp_path, servers):
    """The server's own host name is asked of the local name server, even
    with no ACL: it must be found without the tunnel it leads to."""
    remote, local = servers
    server = ss.server(extra=["-u"])
    by_name = sslib.Server(server.program, "localhost", server.port, server.method,
                           server.password)
    port = NameServer.free_port()
    client = ss.local(by_name, extra=["-u", "--dns", "127.0.0.1:%d" % port, "--remote-dns",
                                      remote.addr, "--local-dns", local.addr])
    wait_relay(client.program.pid, port)
    dns = (sslib.LOOPBACK4, port)
    assert address_of(ask(dns, "LocalHost")[0]) == ["10.0.0.2"]
    assert address_of(ask(dns, "other.test")[0]) == ["10.0.0.1"]
    assert local.names() == ["localhost"] and remote.names() == ["other.test"]


def test_address_rules_decide_by_the_local_answer(ss, tmp_path, servers):
    """A name no name rule decides, with address rules in the ACL: the
    local answer stands when the ACL bypasses its addresses, else the name
    is asked through the server (as a SOCKS5 CONNECT would look it up and
    decide by address)."""
    remote, local = servers
    local.addresses["inside.test"] = "10.9.1.1"
    dns, _, _ = start(ss, tmp_path, remote, local, acl="[proxy_all]\n[bypass_list]\n10.9.0.0/16\n")
    a, _ = ask(dns, "inside.test")
    assert address_of(a) == ["10.9.1.1"]
    a, _ = ask(dns, "outside.test")
    assert address_of(a) == ["10.0.0.1"]
    assert remote.names() == ["outside.test"]
    assert sorted(local.names()) == ["inside.test", "outside.test"]


def test_answers_are_cached_by_ttl(ss, tmp_path, servers):
    """A second query within the TTL is answered without asking again, its
    TTL lowered by the time kept; after the TTL it is asked again. Each
    path is its own key."""
    remote, local = servers
    remote.ttl = local.ttl = 3
    dns, _, _ = start(ss, tmp_path, remote, local, acl=ACL)
    a, _ = ask(dns, "cached.test")
    assert a[3][0][1] == 3
    ask(dns, "x.bypass.test")
    time.sleep(1.2)
    a, _ = ask(dns, "CACHED.test")
    assert address_of(a) == ["10.0.0.1"]
    assert a[3][0][1] <= 2
    ask(dns, "x.bypass.test")
    assert remote.names() == ["cached.test"]
    assert local.names() == ["x.bypass.test"]
    time.sleep(2.3)
    ask(dns, "cached.test")
    assert remote.names() == ["cached.test", "cached.test"]
    # Another type is another question.
    ask(dns, "cached.test", qtype=28)
    assert len(remote.names()) == 3


@pytest.mark.parametrize("name", ["big.test", "big.bypass.test"])
def test_truncated_answers_are_asked_again_over_tcp(ss, tmp_path, servers, name):
    """A name server answers with TC over UDP: the relay asks it again over
    TCP (through ss-server for a proxied name) and the client gets the whole
    answer, over UDP when it takes that much (EDNS), else truncated, to ask
    again over TCP."""
    remote, local = servers
    ns = local if "bypass" in name else remote
    ns.truncate.add(name)
    dns, server, client = start(ss, tmp_path, remote, local, acl=ACL)
    owner = client.program.pid if ns is local else server.program.pid

    # Plain DNS: 512 bytes at most over UDP; the answer (41 records) is more.
    a, size = ask(dns, name)
    assert a[1] & 0x0200 and size <= 512 and a[3] == []
    assert ns.names("udp") == [name] and ns.names("tcp") == [name]
    assert ns.owners(name) == [owner, owner]
    # Over TCP from the cache: the whole answer.
    answers = ask_tcp(dns, [name])
    assert len(answers[0][3]) == 41 and not answers[0][1] & 0x0200
    assert ns.names() == [name, name]


def ask_tcp(dns, names, together=True):
    """Asks each name over one TCP connection (all in one write when
    together); the answers, in order, ids checked."""
    ids = [int.from_bytes(os.urandom(2), "big") for _ in names]
    frames = [make_query(n, i) for n, i in zip(names, ids)]
    s = sslib.connect(*dns)
    try:
        data = b"".join(struct.pack("!H", len(f)) + f for f in frames)
        if together:
            s.sendall(data)
        out = []
        for k, f in enumerate(frames):
            if not together:
                s.sendall(struct.pack("!H", len(f)) + f)
            n = struct.unpack("!H", sslib.recv_exact(s, 2))[0]
            a = parse_answer(sslib.recv_exact(s, n))
            assert a[0] == ids[k] and a[2] == names[k].lower()
            out.append(a)
        return out
    finally:
        s.close()


def test_clients_over_tcp(ss, tmp_path, servers):
    """Queries over TCP, several in one write, are answered in order with
    their ids, whichever path each takes."""
    remote, local = servers
    dns, _, _ = start(ss, tmp_path, remote, local, acl=ACL)
    names = ["t1.test", "t2.bypass.test", "t1.test", "t3.test"]
    answers = ask_tcp(dns, names)
    assert [address_of(a) for a in answers] == [["10.0.0.1"], ["10.0.0.2"], ["10.0.0.1"],
                                               ["10.0.0.1"]]
    answers = ask_tcp(dns, ["t4.bypass.test", "t5.test"], together=False)
    assert [address_of(a) for a in answers] == [["10.0.0.2"], ["10.0.0.1"]]
    assert sorted(set(remote.names())) == ["t1.test", "t3.test", "t5.test"]


def test_malformed_queries_are_dropped(ss, tmp_path, servers):
    """What does not parse gets no answer and reaches no name server; the
    relay goes on answering."""
    remote, local = servers
    dns, _, client = start(ss, tmp_path, remote, local, acl=ACL)
    good = make_query("ok.test", 7)
    bad = [b"", b"\x00" * 5, good[:-1], good + b"\x00", os.urandom(300),
           good[:12] + b"\xc0\x0c" + good[-4:],  # a name that points at itself
           struct.pack("!HHHHHH", 9, 0x8180, 1, 0, 0, 0) + good[12:]]  # an answer
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    try:
        for b in bad:
            s.sendto(b, dns)
        with pytest.raises(socket.timeout):
            s.recv(65536)
    finally:
        s.close()
    assert remote.names() == [] and local.names() == []
    a, _ = ask(dns, "ok.test")
    assert address_of(a) == ["10.0.0.1"]
    assert client.program.alive()
    # Another opcode than QUERY: NOTIMP.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(sslib.T(3))
    try:
        s.sendto(make_query("ok.test", 11, opcode=2), dns)
        a = parse_answer(s.recv(65536))
        assert a[0] == 11 and a[1] & 0xF == 4
    finally:
        s.close()


def test_stray_answers_are_dropped(ss, tmp_path, servers):
    """An answer that matches no query in flight (another id, or from
    another address than the name server's) never reaches a client."""
    remote, local = servers
    local.silent.add("slow.bypass.test")
    dns, _, client = start(ss, tmp_path, remote, local, acl=ACL)
    qid = 0x4242
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    try:
        s.sendto(make_query("slow.bypass.test", qid), dns)
        sslib.wait_for(lambda: local.names() == ["slow.bypass.test"], sslib.T(3))
        # Forged answers to the relay's sockets from elsewhere, for every id.
        ports = relay_udp_ports(client.program.pid, dns[1])
        forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for port in ports:
            for fid in range(0, 65536, 97):
                forger.sendto(struct.pack("!HHHHHH", fid, 0x8180, 1, 0, 0, 0) +
                              make_query("slow.bypass.test", 0)[12:], (sslib.LOOPBACK4, port))
        forger.close()
        with pytest.raises(socket.timeout):
            s.recv(65536)
    finally:
        s.close()
    assert client.program.alive()


def relay_udp_ports(pid, skip):
    """The UDP ports pid's sockets are bound to, but skip."""
    return ssudp.bound_ports(pid, "udp") - {skip}


def test_queries_at_once(ss, tmp_path, servers):
    """Queries in flight together, over both paths, each answered with its
    own id and its own name's address; again once the association through
    the server has ended and another took its place."""
    remote, local = servers
    remote.ttl = local.ttl = 0
    for i in range(40):
        (local if i % 2 else remote).addresses["n%d.%s" % (i, "bypass.test" if i % 2 else
                                                           "test")] = "10.1.0.%d" % i
    dns, _, _ = start(ss, tmp_path, remote, local, acl=ACL, extra=["--udp-timeout", "1"])
    for _ in range(2):
        socks = []
        try:
            for i in range(40):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.settimeout(sslib.T(6))
                socks.append(s)
                name = "n%d.%s" % (i, "bypass.test" if i % 2 else "test")
                s.sendto(make_query(name, 100 + i), dns)
            for i, s in enumerate(socks):
                a = parse_answer(s.recv(65536))
                assert a[0] == 100 + i and address_of(a) == ["10.1.0.%d" % i]
        finally:
            for s in socks:
                s.close()
        time.sleep(2.5)
    assert len(remote.names()) == len(local.names()) == 40


def test_queries_wait_for_a_tcp_connection(ss, tmp_path, servers):
    """tcp_only: 100 queries at once, more than the 32 TCP connections to
    name servers the relay opens at once; those beyond wait their turn and
    every one is answered with its own id and address."""
    remote, local = servers
    remote.tcp_delay = 0.2
    names = ["q%d.test" % i for i in range(100)]
    for i, name in enumerate(names):
        remote.addresses[name] = "10.2.%d.%d" % (i // 250, i % 250 + 1)
    dns, _, client = start(ss, tmp_path, remote, local, acl=ACL, udp=False, extra=["-v"])
    remote.pids = []  # no owner looked up for each: that would slow the name server down
    socks = []
    try:
        for i, name in enumerate(names):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(sslib.T(10))
            socks.append(s)
            s.sendto(make_query(name, 1000 + i), dns)
        for i, s in enumerate(socks):
            a = parse_answer(s.recv(65536))
            assert a[0] == 1000 + i and a[1] & 0xF == 0, (i, a, client.program.describe())
            assert address_of(a) == [remote.addresses[names[i]]], (i, a)
    finally:
        for s in socks:
            s.close()
    assert sorted(remote.names("tcp")) == sorted(names)
    # Closes reach the name server a moment late: a few more seem open.
    assert 1 < remote.tcp_most <= 40, remote.tcp_most


def test_queries_in_flight_are_bounded(ss, tmp_path, servers):
    """A flood of queries no name server answers: at most the table's worth
    are asked (and answered SERVFAIL when time runs out), the rest dropped;
    the relay answers again once they are done, with its descriptors as
    before."""
    remote, local = servers
    flood = ["f%d.test" % i for i in range(600)]
    remote.silent.update(flood)
    dns, _, client = start(ss, tmp_path, remote, local, acl=ACL)
    ask(dns, "warm.test")
    fds = sslib.fd_count(client.program.pid)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    try:
        for i, name in enumerate(flood):
            s.sendto(make_query(name, i), dns)
        servfail = 0
        s.settimeout(sslib.T(9))
        deadline = time.monotonic() + sslib.T(9)
        while time.monotonic() < deadline:
            try:
                a = parse_answer(s.recv(65536))
            except socket.timeout:
                break
            assert a[1] & 0xF == 2  # SERVFAIL
            servfail += 1
            s.settimeout(1.5)
        assert 0 < servfail <= 256
        asked = set(remote.names()) - {"warm.test"}
        assert 0 < len(asked) <= 256
    finally:
        s.close()
    a, _ = ask(dns, "after.test")
    assert address_of(a) == ["10.0.0.1"]
    assert sslib.fd_count(client.program.pid) <= fds + 2


def test_settings_are_checked(ss, tmp_path):
    """--remote-dns without --dns, and an address that is not one, are
    refused with the setting named; the relay's options are ss-local's."""
    base = ["-s", "127.0.0.1", "-p", "8388", "-l", "1080", "-k", "pw"]
    rc, p = ss.run("ss-local", base + ["--remote-dns", "1.1.1.1"])
    assert rc == 1 and "--dns" in p.output()
    rc, p = ss.run("ss-local", base + ["--dns", "127.0.0.1:5353", "--local-dns", "dns.example"])
    assert rc == 1 and "--local-dns must be an IP address" in p.output()
    rc, p = ss.run("ss-tunnel", base + ["-L", "1.1.1.1:53", "--dns", "127.0.0.1:5353"])
    assert rc == 1 and "for ss-local" in p.output()
    rc, p = ss.run("ss-local", base + ["--dns", "127.0.0.1:5353", "--local-dns", "192.0.2.1",
                                       "--check"])
    assert rc == 0 and ("DNS relay: 127.0.0.1:5353, proxied names to 8.8.8.8:53, the others "
                        "to 192.0.2.1:53") in p.output()


def test_local_dns_that_is_the_relay_is_refused(ss):
    """--local-dns on the relay's port, the relay on a wildcard address and
    the name server on loopback: the relay would ask itself, refused at
    start (before anything binds the wildcard)."""
    port = NameServer.free_port()
    base = ["-s", "127.0.0.1", "-p", "8388", "-b", "127.0.0.1", "-l", str(sslib.free_port()),
            "-k", "pw"]
    for dns, local in (("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"),
                       ("0.0.0.0", "127.0.0.9"), ("[::]", "[::1]"), ("127.0.0.1", "0.0.0.0")):
        rc, p = ss.run("ss-local", base + ["--dns", "%s:%d" % (dns, port),
                                           "--local-dns", "%s:%d" % (local, port)])
        assert rc == 1, (dns, local, p.describe())
        assert "--local-dns is the DNS relay's own address" in p.output(), p.describe()


def test_workers_and_reload(ss, tmp_path, servers):
    """With --workers the relay runs on the first worker; a reload (SIGHUP)
    keeps its port answering, the new workers' relay taking its sockets."""
    import signal
    remote, local = servers
    dns, _, client = start(ss, tmp_path, remote, local, acl=ACL, udp=False,
                           extra=["--workers", "2"])
    assert address_of(ask(dns, "w1.test")[0]) == ["10.0.0.1"]
    assert address_of(ask_tcp(dns, ["w2.bypass.test"])[0]) == ["10.0.0.2"]
    os.kill(client.program.pid, signal.SIGHUP)
    sslib.wait_for(lambda: "configuration reloaded" in client.program.output(), sslib.T(10))
    for i in range(20):
        assert address_of(ask(dns, "after%d.test" % i)[0]) == ["10.0.0.1"]
    assert address_of(ask_tcp(dns, ["after.bypass.test"])[0]) == ["10.0.0.2"]
    assert client.program.output().count("DNS relay on") == 2
