# SPDX-License-Identifier: MIT
"""The UDP relay end to end: ss-local (SOCKS5 UDP ASSOCIATE) and ss-tunnel -u
with ss-server -u, against a UDP echo server on loopback.

Whole datagrams of every size come back byte for byte; answers name their
real source; many clients at once each get only their own datagrams;
associations end on idle timeout, on the end of the SOCKS5 control
connection and on eviction, and their sockets are closed (counted in
/proc/PID/fd); FRAG != 0, --mtu, ICMP errors and hostile input are handled;
-U and the JSON keys work. Some tests talk to ss-server directly with
packets sealed by ssudp.Packets, an implementation written from the RFCs.
"""

import json
import os
import time

import pytest

import sslib
import ssudp
from sslib import T

VIAS = ("socks", "tunnel")
App, tagged, check_exchange = ssudp.App, ssudp.tagged, ssudp.check_exchange
IPV4_MAX_UDP = 65507  # largest UDP payload over IPv4
ADDR4_LEN = 7  # ATYP + IPv4 + port


def max_payload(method):
    """The largest payload whose sealed datagram (salt, IPv4 address header,
    payload, tag) still fits in one IPv4 UDP datagram."""
    return IPV4_MAX_UDP - sslib.SALT_LEN[method] - ADDR4_LEN - sslib.TAG_LEN


@pytest.fixture
def uecho():
    e = ssudp.UdpEcho()
    yield e
    e.close()


@pytest.fixture
def uecho6():
    e = ssudp.UdpEcho(host=sslib.LOOPBACK6)
    yield e
    e.close()


def server_u(ss, method=sslib.DEFAULT_METHOD, extra=(), **kw):
    return ss.server(method=method, extra=["-u"] + list(extra), **kw)


def client_u(ss, via, server, target, extra=()):
    if via == "socks":
        return ss.local(server, extra=["-u"] + list(extra))
    return ss.tunnel(server, target, extra=["-u"] + list(extra))


# ---------------------------------------------------------------------------
# Sizes, sources, many clients

@pytest.mark.parametrize("method", ["aes-128-gcm", "chacha20-ietf-poly1305"])
@pytest.mark.parametrize("via", VIAS)
def test_datagram_sizes(ss, uecho, via, method):
    """Every size from empty to the largest that fits in IPv4 after sealing
    comes back whole; small ones after large ones are not padded with stale
    bytes; one byte more than fits is dropped and the relay goes on."""
    server = server_u(ss, method=method)
    client = client_u(ss, via, server, uecho.addr)
    app = App(via, client, uecho.addr)
    big = max_payload(method)
    sizes = [0, 1, 512, 1200, 4096, 8000, 65000, big]
    for n in sizes + sizes[::-1]:
        check_exchange(app, os.urandom(n))
    # Too large to seal into one IPv4 datagram: nothing comes back.
    before = uecho.count()
    app.send(os.urandom(big + 1))
    app.nothing(0.5)
    assert uecho.count() == before, "an oversized datagram reached the target"
    check_exchange(app, os.urandom(1200))
    app.close()


def test_socks5_answers_name_their_source(ss, uecho, uecho6):
    """The SOCKS5 header of an answer names where it really came from: the
    IPv4 and IPv6 targets, the address "localhost" resolved to (ss-server
    resolves domain targets), and any third party that writes to the
    server's outbound socket (full cone)."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u"])
    with ssudp.Association(local.addr) as a:
        payload = tagged(b"v4", 300)
        assert a.exchange(uecho.addr, payload) == (sslib.ATYP_IPV4, "127.0.0.1", uecho.port,
                                                   payload)
        payload = tagged(b"v6", 301)
        assert a.exchange(uecho6.addr, payload) == (sslib.ATYP_IPV6, "::1", uecho6.port,
                                                    payload)
        # A name: the answer carries the address, not the name.
        payload = tagged(b"name", 302)
        a.send("localhost", uecho.port, payload, atyp=sslib.ATYP_DOMAIN)
        assert a.recv() == (sslib.ATYP_IPV4, "127.0.0.1", uecho.port, payload)
        # One association: both targets saw the same outbound socket port.
        out4 = uecho.source_of(b"v4")
        out6 = uecho6.source_of(b"v6")
        assert out4 is not None and out6 is not None
        assert out4[1] == out6[1], "the association used two sockets: %r %r" % (out4, out6)
        assert uecho.source_of(b"name") == out4
        # Full cone: a stranger writing to that socket reaches the client.
        with ssudp.udp_socket() as stranger:
            stranger.sendto(b"unsolicited", ("127.0.0.1", out4[1]))
            atyp, host, port, data = a.recv()
            assert (atyp, host, port, data) == (sslib.ATYP_IPV4, "127.0.0.1",
                                                stranger.getsockname()[1], b"unsolicited")


@pytest.mark.parametrize("via", VIAS)
def test_ipv6_everywhere(ss, uecho, uecho6, via):
    """ss-server and the client program on ::1, applications on ::1, to an
    IPv6 and an IPv4 target (which the server reaches from its dual-stack
    socket)."""
    server = server_u(ss, host=sslib.LOOPBACK6)
    for target in (uecho6, uecho):
        if via == "socks":
            client = ss.local(server, host=sslib.LOOPBACK6, extra=["-u"])
        else:
            client = ss.tunnel(server, target.addr, host=sslib.LOOPBACK6, extra=["-u"])
        app = App(via, client, target.addr)
        for n in (1, 1400, 20000, 65000):
            check_exchange(app, os.urandom(n))
        app.close()


@pytest.mark.parametrize("via", VIAS)
def test_concurrent_clients(ss, uecho, via):
    """20 clients, 200 datagrams each, at most 4 in flight per client, no
    retries: every datagram comes back, to the client that sent it."""
    clients, per_client = 20, 200
    server = server_u(ss)
    client = client_u(ss, via, server, uecho.addr)
    apps = [App(via, client, uecho.addr) for _ in range(clients)]
    errors = ssudp.run_clients(apps, per_client, window=4)
    assert not errors, "\n".join(errors)
    assert uecho.count() == clients * per_client
    # One association per client at the server: as many outbound sockets.
    assert len(uecho.sources()) == clients


# ---------------------------------------------------------------------------
# Association lifetime

def test_idle_timeout_closes_sockets(ss, uecho):
    """ss-tunnel and ss-server end an association after --udp-timeout idle
    seconds and close its socket; datagrams either way keep it (from the
    client with no answers, and from the target with no requests); the next
    datagram after the end starts a new one."""
    server = server_u(ss, extra=["--udp-timeout", "2"])
    tunnel = ss.tunnel(server, uecho.addr, extra=["-u", "--udp-timeout", "2"])
    spid, tpid = server.program.pid, tunnel.program.pid
    sbase, tbase = ssudp.settled_sockets(spid), ssudp.settled_sockets(tpid)
    sfds, tfds = sslib.fd_count(spid), sslib.fd_count(tpid)
    app = App("tunnel", tunnel, uecho.addr)
    check_exchange(app, tagged(b"first", 100))
    first_port = uecho.source_of(b"first")
    assert ssudp.wait_sockets(spid, sbase + 1, T(2)) == sbase + 1
    assert ssudp.wait_sockets(tpid, tbase + 1, T(2)) == tbase + 1

    def still_there():
        assert ssudp.socket_count(spid) == sbase + 1, "ss-server closed an active association"
        assert ssudp.socket_count(tpid) == tbase + 1, "ss-tunnel closed an active association"

    # Client to target only, one datagram a second: 3 s, past the timeout.
    uecho.mute = True
    for i in range(3):
        time.sleep(1.0)
        still_there()
        app.send(tagged(b"up%d" % i, 100))
        deadline = time.monotonic() + T(3)
        while uecho.source_of(b"up%d" % i) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert uecho.source_of(b"up%d" % i) == first_port, "association replaced while active"
    uecho.mute = False
    # Target to client only (full cone: any sender reaches the client).
    with ssudp.udp_socket() as peer:
        for i in range(3):
            time.sleep(1.0)
            still_there()
            peer.sendto(b"down%d" % i, first_port)
            assert app.recv() == b"down%d" % i
    still_there()
    # Idle: both sides close their sockets after about 2 s.
    t_idle = time.monotonic()
    assert ssudp.wait_sockets(spid, sbase, T(2) + 3) == sbase, "ss-server kept the socket"
    assert ssudp.wait_sockets(tpid, tbase, T(2) + 3) == tbase, "ss-tunnel kept the socket"
    assert time.monotonic() - t_idle >= 1.0, "closed long before --udp-timeout"
    assert (sslib.fd_count(spid), sslib.fd_count(tpid)) == (sfds, tfds)
    # A new association, with a new outbound socket.
    check_exchange(app, tagged(b"after", 100))
    assert uecho.source_of(b"after") != first_port
    assert ssudp.wait_sockets(spid, sbase + 1, T(2)) == sbase + 1
    app.close()


def test_socks5_control_close_ends_association(ss, uecho):
    """Closing the SOCKS5 control connection ends its UDP association at once
    (no waiting for --udp-timeout), also for an association started again
    after the first one expired while the control connection stayed."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u", "--udp-timeout", "2"])
    pid = local.program.pid
    base = ssudp.settled_sockets(pid)

    a = App("socks", local, uecho.addr)
    assert ssudp.wait_sockets(pid, base + 1, T(2)) == base + 1  # the control connection
    check_exchange(a, os.urandom(500))
    assert ssudp.wait_sockets(pid, base + 2, T(2)) == base + 2
    a.assoc.ctrl.close()
    assert ssudp.wait_sockets(pid, base, 1.0) == base, "association outlived its control"
    a.close()

    b = App("socks", local, uecho.addr)
    check_exchange(b, os.urandom(500))
    assert ssudp.wait_sockets(pid, base + 2, T(2)) == base + 2
    # It expires; the control connection stays.
    assert ssudp.wait_sockets(pid, base + 1, T(2) + 3) == base + 1
    check_exchange(b, os.urandom(500))
    assert ssudp.wait_sockets(pid, base + 2, T(2)) == base + 2
    b.assoc.ctrl.close()
    assert ssudp.wait_sockets(pid, base, 1.0) == base, \
        "a re-started association outlived its control connection"
    b.close()


def test_socks5_only_for_associated_clients(ss, uecho):
    """ss-local relays datagrams only for a client that holds a UDP
    ASSOCIATE: from the control connection's address and the port its
    request named; no one else, and not after the control connection
    ends, gets a datagram through (the relay would otherwise be open to
    anyone who can reach its port)."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u", "-v"])
    # Nobody has asked: nothing goes through.
    with ssudp.udp_socket() as stray:
        stray.sendto(ssudp.socks5_udp_header(*uecho.addr) + b"stray", local.addr)
        ssudp.recv_nothing(stray, 0.5)
    assert uecho.count() == 0, "a datagram with no UDP ASSOCIATE reached the target"
    with ssudp.Association(local.addr) as a:
        assert a.exchange(uecho.addr, b"mine")[3] == b"mine"
        # Another port of the same host, while the association stands.
        with ssudp.udp_socket() as other:
            other.sendto(ssudp.socks5_udp_header(*uecho.addr) + b"other", a.relay[:2])
            ssudp.recv_nothing(other, 0.5)
        assert uecho.count() == 1, "a datagram from a port the ASSOCIATE did not name went on"
        udp = a.udp
        a.ctrl.close()
        time.sleep(0.3)
        # The association ended with its control connection.
        udp.sendto(ssudp.socks5_udp_header(*uecho.addr) + b"late", a.relay[:2])
        ssudp.recv_nothing(udp, 0.5)
    assert uecho.count() == 1, "a datagram went through after its ASSOCIATE ended"
    assert "no UDP ASSOCIATE from this address" in local.program.stderr()


def test_socks5_control_kept_by_datagrams(ss, uecho):
    """Datagrams keep the control connection from its idle timeout (-t);
    when both go quiet, ss-local closes the control connection and the
    association with it."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u"], timeout=2)
    pid = local.program.pid
    base = ssudp.settled_sockets(pid)
    a = App("socks", local, uecho.addr)
    for _ in range(5):  # 3.5 s of traffic, the idle timeout is 2 s
        check_exchange(a, os.urandom(64))
        time.sleep(0.7)
    state, _ = sslib.wait_closed(a.assoc.ctrl, 0.05)
    assert state == "open", "control connection closed while datagrams flowed (%s)" % state
    state, _ = sslib.wait_closed(a.assoc.ctrl, T(2) + 3)
    assert state in ("eof", "reset"), "idle control connection not closed"
    assert ssudp.wait_sockets(pid, base, T(2)) == base
    a.close()


@pytest.mark.parametrize("where", ["server", "tunnel"])
def test_max_associations_evicts_oldest(ss, uecho, where):
    """--udp-max-associations 2 and three clients: the third evicts the
    oldest (its socket is closed: never more than two); the other two keep
    their associations; the evicted one gets a new one when it returns."""
    limit = ["--udp-max-associations", "2"]
    # One worker: with more, each keeps its share of the limit, and its own
    # least recently used.
    server = server_u(ss, extra=limit + ["--workers", "1"] if where == "server" else [])
    tunnel = ss.tunnel(server, uecho.addr, extra=["-u"] + (limit if where == "tunnel" else []))
    pid = (server if where == "server" else tunnel).program.pid
    base = ssudp.settled_sockets(pid)
    apps = [App("tunnel", tunnel, uecho.addr) for _ in range(3)]
    ports = {}
    for i, tag in ((0, b"A"), (1, b"B")):
        check_exchange(apps[i], tagged(tag + b"1", 200))
        ports[tag] = uecho.source_of(tag + b"1")
    assert ssudp.wait_sockets(pid, base + 2, T(2)) == base + 2
    check_exchange(apps[2], tagged(b"C1", 200))
    ports[b"C"] = uecho.source_of(b"C1")
    assert ssudp.socket_count(pid) == base + 2, "more associations than the limit"
    assert len({ports[b"A"], ports[b"B"], ports[b"C"]}) == 3
    # B and C keep theirs.
    for i, tag in ((1, b"B"), (2, b"C")):
        for k in range(3):
            check_exchange(apps[i], tagged(tag + b"2%d" % k, 200))
            assert uecho.source_of(tag + b"2%d" % k) == ports[tag], "%r lost its association" % tag
    # A was evicted: it comes back through a new association (evicting B).
    check_exchange(apps[0], tagged(b"A3", 200))
    assert uecho.source_of(b"A3") not in (ports[b"A"], ports[b"B"], ports[b"C"])
    check_exchange(apps[2], tagged(b"C3", 200))
    assert uecho.source_of(b"C3") == ports[b"C"]
    assert ssudp.socket_count(pid) == base + 2
    for a in apps:
        a.close()


# ---------------------------------------------------------------------------
# Dropped datagrams

def test_socks5_frag_and_malformed_dropped(ss, uecho):
    """Fragments (FRAG != 0) and malformed SOCKS5 UDP headers are dropped
    without reaching the target; the association keeps working."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u"])
    a = App("socks", local, uecho.addr)
    check_exchange(a, os.urandom(100))
    relay = a.assoc.relay
    for frag in (1, 2, 0x7F, 0x80, 0xFF):
        a.assoc.send(uecho.host, uecho.port, tagged(b"frag", 100), frag=frag)
    hdr = ssudp.socks5_udp_header(uecho.host, uecho.port)
    for bad in (b"", b"\0", b"\0\0\0", b"\0\0\0\x01\x7f\0", hdr[:-1],
                b"\0\0\0\x09" + hdr[4:] + b"data", b"\0\0\0\x03\x00\x00\x50data",
                b"\0\0\0\x03\x40abc"):
        a.sock.sendto(bad, relay[:2])
    a.nothing(0.5)
    assert uecho.count() == 1, "a dropped datagram reached the target"
    check_exchange(a, os.urandom(100))
    assert local.program.alive()
    a.close()


@pytest.mark.parametrize("via", VIAS)
def test_mtu_on_client(ss, uecho, via):
    """ss-local / ss-tunnel --mtu 1500 drop larger datagrams from
    applications and pass smaller ones."""
    server = server_u(ss)
    client = client_u(ss, via, server, uecho.addr, extra=["--mtu", "1500"])
    app = App(via, client, uecho.addr)
    for n in (1, 1000, 1400):
        check_exchange(app, os.urandom(n))
    seen = uecho.count()
    for n in (1700, 8000, 65000):
        app.send(os.urandom(n))
    app.nothing(0.5)
    assert uecho.count() == seen, "a datagram over --mtu reached the target"
    check_exchange(app, os.urandom(1000))
    app.close()


def test_mtu_on_server(ss, uecho):
    """ss-server --mtu 1500 drops larger datagrams both ways (to targets and
    from them) and passes smaller ones."""
    server = server_u(ss, extra=["--mtu", "1500"])
    local = ss.local(server, extra=["-u"])
    a = App("socks", local, uecho.addr)
    for n in (1, 1000, 1400):
        check_exchange(a, tagged(b"ok", n))
    seen = uecho.count()
    for n in (1700, 8000, 65000):
        a.send(os.urandom(n))
    a.nothing(0.5)
    assert uecho.count() == seen, "a datagram over --mtu reached the target"
    # From a target: a large answer is dropped, a small one passes.
    out = uecho.source_of(b"ok")
    with ssudp.udp_socket() as stranger:
        stranger.sendto(os.urandom(1700), ("127.0.0.1", out[1]))
        a.nothing(0.5)
        stranger.sendto(b"small", ("127.0.0.1", out[1]))
        assert a.assoc.recv()[3] == b"small"
    check_exchange(a, os.urandom(1000))
    a.close()


def test_closed_target_port_keeps_association(ss, uecho):
    """A datagram to a port where nobody listens (ICMP port unreachable)
    does not break the association: the next one to the echo server goes
    out through the same socket and comes back."""
    server = server_u(ss)
    local = ss.local(server, extra=["-u"])
    pid = server.program.pid
    base = ssudp.settled_sockets(pid)
    a = App("socks", local, uecho.addr)
    check_exchange(a, tagged(b"before", 100))
    out = uecho.source_of(b"before")
    closed = ssudp.free_udp_port()
    for _ in range(3):
        a.assoc.send("127.0.0.1", closed, b"nobody home")
        a.nothing(0.2)
    check_exchange(a, tagged(b"after", 100))
    assert uecho.source_of(b"after") == out, "the association was replaced"
    assert ssudp.socket_count(pid) == base + 1
    a.close()


def test_tunnel_survives_server_down(ss, procs, uecho):
    """ss-tunnel's socket to the server gets ECONNREFUSED while no server
    listens; once the server is up the same association carries datagrams."""
    password = sslib.random_password()
    port = ssudp.free_udp_port()
    fake = sslib.Server(None, "127.0.0.1", port, sslib.DEFAULT_METHOD, password)
    tunnel = ss.tunnel(fake, uecho.addr, extra=["-u"])
    tpid = tunnel.program.pid
    tbase = ssudp.settled_sockets(tpid)
    app = App("tunnel", tunnel, uecho.addr)
    for _ in range(3):
        app.send(b"into the void")
        app.nothing(0.2)
    assert ssudp.socket_count(tpid) == tbase + 1
    exe = ss.exe("ss-server")
    procs.start_listening(exe, lambda p: ["-s", "127.0.0.1", "-p", p, "-m", sslib.DEFAULT_METHOD,
                                          "-k", password, "-u"], port=port)
    check_exchange(app, os.urandom(700))
    assert ssudp.socket_count(tpid) == tbase + 1, "the association was replaced"
    app.close()


def test_server_drops_hostile_input(ss, uecho):
    """Random bytes of many lengths, every truncation of a valid packet,
    flipped bits, a wrong key and well-sealed packets with bad address
    headers: nothing reaches a target and no association is opened. Valid
    packets then work, a replayed one is dropped, and a real client still
    works."""
    server = server_u(ss)
    pid = server.program.pid
    base = ssudp.settled_sockets(pid)
    pk = ssudp.Packets(server.password)
    valid = pk.request(uecho.host, uecho.port, b"hello")
    hostile = [os.urandom(n) for n in list(range(0, 81)) + [100, 200, 1000, 1500, 4096, 65000]]
    hostile += [valid[:k] for k in range(len(valid))]
    hostile += [valid[:i] + bytes([valid[i] ^ 0x01]) + valid[i + 1:]
                for i in range(0, len(valid), 3)]
    hostile.append(valid + b"\0")
    hostile.append(ssudp.Packets(server.password + "x").request(uecho.host, uecho.port, b"hi"))
    hostile += [pk.seal(p) for p in (
        b"",                                # no address at all
        b"\x01\x7f\x00",                    # IPv4 cut short
        b"\x04" + b"\0" * 10,               # IPv6 cut short
        b"\x09\x7f\0\0\x01\x30\x39data",    # unknown ATYP
        b"\x03\x00\x30\x39data",            # empty name
        b"\x03\x09localhost",               # name without a port
    )]
    with ssudp.udp_socket() as raw:
        for i, p in enumerate(hostile):
            raw.sendto(p, server.addr)
            if i % 32 == 31:
                time.sleep(0.01)  # keep the receive queue short
        ssudp.recv_nothing(raw, 0.5)
        assert uecho.count() == 0, "hostile input reached a target"
        assert ssudp.socket_count(pid) == base, "hostile input opened an association"
        assert server.program.alive()

        raw.sendto(valid, server.addr)
        raw.settimeout(T(5))
        answer, _ = raw.recvfrom(ssudp.MAX_DGRAM)
        assert pk.answer(answer) == (sslib.ATYP_IPV4, uecho.host, uecho.port, b"hello")
        assert ssudp.socket_count(pid) == base + 1
        # The same packet again is a replay.
        raw.sendto(valid, server.addr)
        ssudp.recv_nothing(raw, 0.5)
        assert uecho.count() == 1, "a replayed packet reached the target"
        # A fresh one works, to a name too.
        raw.sendto(pk.request("localhost", uecho.port, b"again", atyp=sslib.ATYP_DOMAIN),
                   server.addr)
        answer, _ = raw.recvfrom(ssudp.MAX_DGRAM)
        assert pk.answer(answer) == (sslib.ATYP_IPV4, "127.0.0.1", uecho.port, b"again")
    tunnel = ss.tunnel(server, uecho.addr, extra=["-u"])
    app = App("tunnel", tunnel, uecho.addr)
    check_exchange(app, os.urandom(3000))
    app.close()


def test_tunnel_against_reference_packets(ss):
    """ss-tunnel's packets open with the reference codec and carry the -L
    target; answers that do not open or have a bad address header are
    dropped; a good answer is delivered."""
    password = sslib.random_password()
    with ssudp.udp_socket() as fake_server:
        fs = sslib.Server(None, "127.0.0.1", fake_server.getsockname()[1],
                          ssudp.Packets.METHOD, password)
        target = ("127.0.0.1", 9)  # never contacted: the fake server answers
        tunnel = ss.tunnel(fs, target, extra=["-u"])
        pk = ssudp.Packets(password)
        app = App("tunnel", tunnel, target)
        payload = os.urandom(333)
        app.send(payload)
        fake_server.settimeout(T(5))
        packet, tsrc = fake_server.recvfrom(ssudp.MAX_DGRAM)
        plain = pk.open(packet)
        assert plain is not None, "ss-tunnel's packet does not open"
        assert plain == b"\x01\x7f\0\0\x01\0\x09" + payload
        for bad in (b"", os.urandom(47), os.urandom(48), os.urandom(1000),
                    ssudp.Packets(password + "x").request("127.0.0.1", 9, b"wrong key"),
                    pk.seal(b""), pk.seal(b"\x07garbage"), pk.seal(b"\x01\x7f")):
            fake_server.sendto(bad, tsrc)
        app.nothing(0.5)
        fake_server.sendto(pk.request("127.0.0.1", 9, b"good answer"), tsrc)
        assert app.recv() == b"good answer"
        app.close()


# ---------------------------------------------------------------------------
# Modes and configuration

def test_udp_associate_without_u(ss, uecho):
    """Without -u, UDP ASSOCIATE is answered with 0x07 (command not
    supported); with -u it succeeds and names the relay address."""
    server = server_u(ss)
    plain = ss.local(server)
    s, rep = sslib.socks5_open(plain.addr, "0.0.0.0", 0, cmd=sslib.CMD_UDP_ASSOCIATE)
    s.close()
    assert rep == 0x07
    # Nothing listens on UDP there.
    assert plain.port not in ssudp.bound_ports(plain.program.pid, "udp")
    with_u = ss.local(server, extra=["-u"])
    s = sslib.connect(*with_u.addr)
    try:
        assert sslib.socks5_greet(s) == 0
        s.sendall(sslib.socks5_request_bytes(sslib.CMD_UDP_ASSOCIATE, "0.0.0.0", 0))
        rep, bnd = sslib.socks5_read_reply(s)
        assert rep == 0 and tuple(bnd) == with_u.addr
    finally:
        s.close()


def test_udp_only_mode(ss, procs, uecho):
    """-U: ss-server and ss-tunnel have no TCP listener, UDP works; ss-local
    keeps its SOCKS5 port for UDP ASSOCIATE but refuses CONNECT."""
    password = sslib.random_password()
    method = sslib.DEFAULT_METHOD
    sproc, sport = ssudp.start_udp_listening(
        procs, ss.exe("ss-server"),
        lambda p: ["-s", "127.0.0.1", "-p", p, "-m", method, "-k", password, "-U"])
    server = sslib.Server(sproc, "127.0.0.1", sport, method, password)
    tproc, tport = ssudp.start_udp_listening(
        procs, ss.exe("ss-tunnel"),
        lambda p: ["-s", "127.0.0.1", "-p", sport, "-b", "127.0.0.1", "-l", p,
                   "-L", "%s:%d" % uecho.addr, "-m", method, "-k", password, "-U"])
    tunnel = sslib.Client(tproc, "127.0.0.1", tport)
    for prog, port in ((sproc, sport), (tproc, tport)):
        assert not ssudp.listening_tcp_ports(prog.pid), "%s listens on TCP" % prog.name
        with pytest.raises(OSError):
            sslib.connect("127.0.0.1", port, timeout=2).close()
    app = App("tunnel", tunnel, uecho.addr)
    for n in (1, 1200, 30000):
        check_exchange(app, os.urandom(n))
    app.close()

    local = ss.local(server, extra=["-U"])
    a = App("socks", local, uecho.addr)
    check_exchange(a, os.urandom(1200))
    s, rep = sslib.socks5_open(local.addr, *uecho.addr)
    s.close()
    assert rep != 0, "CONNECT succeeded with -U"
    a.close()


def test_json_mode_and_udp_keys(ss, procs, tmp_path, uecho):
    """JSON "mode": "udp_only", "udp_max_associations" and "udp_timeout"
    take effect in ss-server."""
    password = sslib.random_password()
    method = "aes-256-gcm"

    def args(port):
        cfg = tmp_path / ("server-%d.json" % port)
        cfg.write_text(json.dumps({
            "server": "127.0.0.1", "server_port": port, "password": password,
            "method": method, "mode": "udp_only", "udp_max_associations": 1,
            "udp_timeout": 1, "workers": 1}))
        return ["-c", str(cfg)]

    sproc, sport = ssudp.start_udp_listening(procs, ss.exe("ss-server"), args)
    assert not ssudp.listening_tcp_ports(sproc.pid)
    server = sslib.Server(sproc, "127.0.0.1", sport, method, password)
    base = ssudp.settled_sockets(sproc.pid)
    tunnel = ss.tunnel(server, uecho.addr, extra=["-u"])
    a, b = App("tunnel", tunnel, uecho.addr), App("tunnel", tunnel, uecho.addr)
    check_exchange(a, tagged(b"a1", 100))
    check_exchange(b, tagged(b"b1", 100))
    assert ssudp.socket_count(sproc.pid) == base + 1
    check_exchange(a, tagged(b"a2", 100))
    assert uecho.source_of(b"a2") != uecho.source_of(b"a1"), "a was not evicted"
    assert ssudp.wait_sockets(sproc.pid, base, T(1) + 3) == base, "udp_timeout 1 not applied"
    a.close()
    b.close()
