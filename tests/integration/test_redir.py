# SPDX-License-Identifier: MIT
"""ss-redir, the transparent proxy, in network namespaces the test creates:

    cli  c0 10.99.1.2 fd99:1::2 --- r0 10.99.1.1 fd99:1::1  rtr  r1 10.99.2.1 fd99:2::1
                                                                  |
                               tgt  t0 10.99.2.5 fd99:2::5 -------+

rtr does not forward, so cli reaches tgt's addresses only through the
proxy: an nftables rule in rtr (REDIRECT, or TPROXY with its policy
routing) hands cli's traffic for 10.99.2.0/24 and fd99:2::/64 to ss-redir,
which sends it through ss-server (on rtr's loopback) to tgt. The echo
servers on tgt see rtr's address as their peer, and the client must get
its bytes back unchanged (for UDP from the very address it sent to)."""

import hashlib
import os
import socket
import threading

import pytest

import sslib
import ssnetns
from sslib import T
from ssnetns import TGT4, TGT6, RTR4, RTR6, redirect_rules, tproxy_rules


@pytest.fixture(scope="module")
def nets():
    n = ssnetns.make()
    yield n
    n.destroy()


@pytest.fixture(scope="module")
def policy_routing(nets):
    ssnetns.policy_routing(nets)
    return nets


def start_pair(ss, nets, extra=(), server_impl="ours", method=sslib.DEFAULT_METHOD,
               server_extra=()):
    """ss-server on rtr's loopback and ss-redir on rtr's every address."""
    with nets.enter("rtr"):
        server = ss.server(impl=server_impl, method=method, extra=list(server_extra))
        cred = ["-k", server.password] if server.password else []
        args = lambda port: (["-s", server.host, "-p", server.port, "-b", "::", "-l", port,
                              "-m", method] + cred + list(extra))
        if "-U" not in extra:
            p, port = ss.procs.start_listening(ss.exe("ss-redir"), args, host=sslib.LOOPBACK4)
            return server, p, port
        # UDP only: nothing to connect to; the log says when it listens.
        port = sslib.free_port()
        p = ss.procs.start(ss.exe("ss-redir"), args(port))
    assert sslib.wait_for(lambda: "listening on UDP [::]:%d" % port in p.stderr(), T(10)), \
        p.describe()
    return server, p, port


class _Targets:
    """Echo servers in tgt on both families; records who connected."""

    def __init__(self, nets):
        with nets.enter("tgt"):
            self.tcp = [sslib.EchoServer(host=TGT4), sslib.EchoServer(host=TGT6)]

    def close(self):
        for s in self.tcp:
            s.close()


@pytest.fixture
def targets(nets):
    t = _Targets(nets)
    yield t
    t.close()


def exchange(nets, host, port, payload, half_close=True):
    """From cli: connects to host:port, sends payload, half-closes, returns
    what came back. Without half_close (libev's ss-server ends both
    directions at the client's EOF) it reads len(payload) bytes first."""
    with nets.enter("cli"):
        s = socket.create_connection((host, port), timeout=T(10))
    with s:
        out = []
        limit = None if half_close else len(payload)
        t = threading.Thread(target=lambda: out.append(_read_all(s, limit)))
        t.start()
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        t.join(T(20))
    return out[0] if out else b""


def _read_all(s, limit=None):
    chunks, n = [], 0
    while limit is None or n < limit:
        d = s.recv(262144)
        if not d:
            break
        chunks.append(d)
        n += len(d)
    return b"".join(chunks)


def closed_unanswered(s):
    """Whether the peer closed without a byte (a reset counts: it closed
    with our bytes unread)."""
    try:
        return _read_all(s) == b""
    except ConnectionResetError:
        return True


def check_tcp(nets, targets, blob, size=1 << 20, half_close=True):
    data = blob(size)
    for echo, host in zip(targets.tcp, (TGT4, TGT6)):
        got = exchange(nets, host, echo.port, data, half_close)
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest(), \
            "%s: %d of %d bytes came back" % (host, len(got), len(data))
        if not half_close:
            continue
        recs = echo.wait_records(1, T(10))
        assert recs and recs[-1].get("received") == size
        # The target saw the router (ss-server), never the client.
        assert recs[-1]["peer"][0] in ("10.99.2.1", "fd99:2::1")


def test_no_direct_route(nets, targets):
    """Without a rule, cli cannot reach tgt: what the other tests carry went
    through the proxy."""
    nets.nft("rtr", "table inet ssredir\ndelete table inet ssredir\n")
    with nets.enter("cli"):
        with pytest.raises(OSError):
            socket.create_connection((TGT4, targets.tcp[0].port), timeout=1).close()


def test_redirect_tcp(ss, nets, targets, blob):
    server, redir, port = start_pair(ss, nets, extra=["-v"])
    nets.nft("rtr", redirect_rules(port))
    check_tcp(nets, targets, blob)
    assert "redir" in redir.stderr() and ("connect %s:%d" % (TGT4, targets.tcp[0].port)) \
        in redir.stderr()


def test_redirect_tcp_libev_server(ss, nets, targets, blob, libev_bin_dir):
    """Interop: shadowsocks-libev's ss-server behind our ss-redir."""
    server, redir, port = start_pair(ss, nets, server_impl="libev", method="aes-256-gcm")
    nets.nft("rtr", redirect_rules(port))
    check_tcp(nets, targets, blob, size=300000, half_close=False)
    for echo in targets.tcp:
        assert echo.wait_for(lambda r: r["peer"][0] in ("10.99.2.1", "fd99:2::1"), T(5))


def router_output_rules(port):
    """docs/router.md's rules for the router's own connections: the output
    hook, with the proxy's own user (nobody here) left out."""
    return """
table inet ssredir
delete table inet ssredir
table inet ssredir {
    chain out {
        type nat hook output priority -100;
        meta skuid != "nobody" ip daddr 10.99.2.0/24 meta l4proto tcp redirect to :%d
        meta skuid != "nobody" ip6 daddr fd99:2::/64 meta l4proto tcp redirect to :%d
    }
}
""" % (port, port)


def test_redirect_router_output(ss, nets, targets, blob):
    """The router's own connections to addresses behind the proxy, caught
    in the output hook as docs/router.md says; ss-redir and ss-server run
    as nobody (-a), whose connections the rule lets by."""
    server, redir, port = start_pair(ss, nets, extra=["-v", "-a", "nobody"],
                                     server_extra=["-a", "nobody"])
    nets.nft("rtr", router_output_rules(port))
    data = blob(200000)
    for echo, host in zip(targets.tcp, (TGT4, TGT6)):
        with nets.enter("rtr"):
            s = socket.create_connection((host, echo.port), timeout=T(10))
        with s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            assert _read_all(s) == data, host
        shown = "[%s]:%d" % (host, echo.port) if ":" in host else "%s:%d" % (host, echo.port)
        assert "connect %s" % shown in redir.stderr(), redir.stderr()[-2000:]
        recs = echo.wait_records(1, T(10))
        assert recs and recs[-1].get("received") == len(data)


def test_redirect_not_redirected(ss, nets, targets):
    """A client that connects to ss-redir's own port has no original
    destination: closed with a line that says so; ss-redir goes on."""
    server, redir, port = start_pair(ss, nets)
    nets.nft("rtr", redirect_rules(port))
    for host in (RTR4, RTR6):
        with nets.enter("cli"):
            s = socket.create_connection((host, port), timeout=T(10))
        with s:
            s.sendall(b"hello")
            assert closed_unanswered(s)
    for client in ("10.99.1.2", "fd99:1::2"):
        assert sslib.wait_for(lambda: any(
            client in line and "closed: not sent here by a REDIRECT rule" in line
            for line in redir.stderr().splitlines()), T(5)), redir.stderr()
    assert redir.alive()
    check_tcp(nets, targets, lambda n: os.urandom(n), size=1000)



def test_tproxy_tcp(ss, policy_routing, targets, blob):
    """-T: the listener is transparent and the target is the accepted
    socket's own address."""
    nets = policy_routing
    server, redir, port = start_pair(ss, nets, extra=["-T", "-v"])
    nets.nft("rtr", tproxy_rules(port, l4="tcp"))
    check_tcp(nets, targets, blob)
    assert ("redir (tproxy) " in redir.stderr()
            and "connect [%s]:%d" % (TGT6, targets.tcp[1].port) in redir.stderr()), \
        redir.stderr()


def test_tproxy_not_redirected(ss, policy_routing, targets):
    """-T: a connection to the proxy's own address and port is closed."""
    nets = policy_routing
    server, redir, port = start_pair(ss, nets, extra=["-T"])
    nets.nft("rtr", tproxy_rules(port, l4="tcp"))
    with nets.enter("cli"):
        s = socket.create_connection((RTR4, port), timeout=T(10))
    with s:
        s.sendall(b"hello")
        assert closed_unanswered(s)
    assert sslib.wait_for(lambda: "closed: not sent here by a TPROXY rule" in redir.stderr(),
                          T(5)), redir.stderr()
    check_tcp(nets, targets, lambda n: os.urandom(n), size=1000)


def test_tproxy_needs_privilege(ss, nets):
    """Without CAP_NET_ADMIN (or CAP_NET_RAW) a transparent listener cannot
    be had: ss-redir says so and exits. Run as nobody, which has neither."""
    with nets.enter("rtr"):
        p = ss.procs.start("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", ss.exe("ss-redir"),
            "-s", "127.0.0.1", "-p", "8388", "-k", "pw", "-b", "0.0.0.0",
            "-l", str(sslib.free_port()), "-T"])
    p.expect_exit = True
    assert p.wait_exit(T(5)) == 1
    assert "Operation not permitted (a TPROXY listener needs CAP_NET_ADMIN or CAP_NET_RAW)" \
        in p.stderr(), p.stderr()


def udp_exchange(nets, family, dests, payloads):
    """From one cli socket of family: each payload to each destination in
    turn; returns [(payload, data, source)] of the answers."""
    out = []
    with nets.enter("cli"):
        s = socket.socket(family, socket.SOCK_DGRAM)
    with s:
        s.settimeout(T(5))
        for payload in payloads:
            for dest in dests:
                s.sendto(payload, dest)
                data, src = s.recvfrom(65536)
                out.append((dest, payload, data, src[:2]))
    return out


@pytest.mark.parametrize("method", [sslib.DEFAULT_METHOD, "2022-blake3-aes-256-gcm", "none"])
def test_tproxy_udp(ss, policy_routing, blob, method):
    """-u -T: datagrams to addresses behind the proxy, over IPv4 and IPv6,
    to two ports on each, from one client socket per family: every answer
    comes back whole and from the address and port the client sent to.
    With each kind of codec: SIP004, SIP022 and none."""
    import ssudp
    nets = policy_routing
    server, redir, port = start_pair(ss, nets, extra=["-u", "-T", "-v"], method=method,
                                     server_extra=["-u"])
    nets.nft("rtr", tproxy_rules(port))
    with nets.enter("tgt"):
        echoes = [ssudp.UdpEcho(host=h) for h in (TGT4, TGT4, TGT6, TGT6)]
    try:
        payloads = [blob(n) for n in (1, 100, 1400, 8000, 60000)]
        for family, group in ((socket.AF_INET, echoes[:2]), (socket.AF_INET6, echoes[2:])):
            dests = [e.addr for e in group]
            for dest, payload, data, src in udp_exchange(nets, family, dests, payloads):
                assert data == payload, "%s: %d bytes back of %d" % (dest, len(data),
                                                                     len(payload))
                assert src == dest, "answer from %s, sent to %s" % (src, dest)
            for e in group:
                # The target heard the router, never the client.
                assert e.records and all(r[0][0] in ("10.99.2.1", "fd99:2::1")
                                         for r in e.records), e.records
        # TCP through the same listener port, by TPROXY too.
        check_tcp(nets, _Targets(nets), lambda n: os.urandom(n), size=5000)
    finally:
        for e in echoes:
            e.close()
    assert "udp" in redir.stderr() and "new association" in redir.stderr()


def test_tproxy_udp_libev_server(ss, policy_routing, blob, libev_bin_dir):
    """Interop: UDP from our ss-redir through shadowsocks-libev's
    ss-server, both families, answers from the address asked (libev gets
    --mtu 65535, or it cuts datagrams over about 2 x 1397 bytes)."""
    import ssudp
    nets = policy_routing
    server, redir, port = start_pair(ss, nets, extra=["-u", "-T"], server_impl="libev",
                                     method="aes-256-gcm", server_extra=["-u", "--mtu", "65535"])
    nets.nft("rtr", tproxy_rules(port))
    with nets.enter("tgt"):
        echoes = [ssudp.UdpEcho(host=h) for h in (TGT4, TGT6)]
    try:
        # libev's sockets toward targets do not fragment: datagrams fit
        # the veth's MTU of 1500.
        payloads = [blob(n) for n in (1, 700, 1400)]
        for family, e in ((socket.AF_INET, echoes[0]), (socket.AF_INET6, echoes[1])):
            for dest, payload, data, src in udp_exchange(nets, family, [e.addr], payloads):
                assert data == payload and src == dest, (dest, len(data), src)
            assert e.records and all(r[0][0] in ("10.99.2.1", "fd99:2::1") for r in e.records)
    finally:
        for e in echoes:
            e.close()


def test_tproxy_udp_not_redirected(ss, policy_routing):
    """A datagram sent to the proxy's own address and port is dropped with a
    line that says why; the proxy goes on."""
    nets = policy_routing
    server, redir, port = start_pair(ss, nets, extra=["-U"], server_extra=["-u"])
    nets.nft("rtr", tproxy_rules(port, l4="udp"))
    with nets.enter("cli"):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with s:
        s.sendto(b"loop?", (RTR4, port))
    assert sslib.wait_for(lambda: "sent to the proxy's own address and port" in redir.stderr(),
                          T(5)), redir.stderr()
    assert redir.alive()


@pytest.mark.parametrize("max_assoc", [4096, 2])
def test_tproxy_udp_answer_sockets(ss, policy_routing, max_assoc):
    """The sockets answers go back from are kept per address, bounded (with
    --udp-max-associations 2 there is one: each new address takes it over)
    and closed after --udp-timeout, with the associations."""
    import ssudp
    nets = policy_routing
    server, redir, port = start_pair(
        ss, nets, extra=["-U", "--udp-timeout", "1", "--udp-max-associations", str(max_assoc)],
        server_extra=["-u"])
    nets.nft("rtr", tproxy_rules(port, l4="udp"))
    base = sslib.fd_count(redir.pid)
    with nets.enter("tgt"):
        echoes = [ssudp.UdpEcho(host=TGT4) for _ in range(3)]
    try:
        dests = [e.addr for e in echoes]
        for dest, payload, data, src in udp_exchange(nets, socket.AF_INET, dests,
                                                  [b"a", b"bb", b"ccc"]):
            assert (data, src) == (payload, dest)
        # One association, and a socket per target address (or the one).
        want = 1 + (3 if max_assoc > 2 else 1)
        assert sslib.fd_count(redir.pid) == base + want
        assert sslib.wait_for(lambda: sslib.fd_count(redir.pid) == base, T(5)), \
            "sockets still open %d s after the timeout" % T(5)
    finally:
        for e in echoes:
            e.close()

@pytest.mark.parametrize("args,message", [
    (["-s", "127.0.0.1", "-p", "8388", "-k", "pw"], "missing local port (-l or \"local_port\")"),
    (["-s", "127.0.0.1", "-p", "8388", "-l", "1080", "-k", "pw", "-m", "no-such-method"],
     "no-such-method"),
    (["-s", "127.0.0.1", "-p", "8388", "-l", "1080", "-k", "pw", "-L", "1.2.3.4:5"],
     "-L is only for ss-tunnel"),
], ids=["no-local-port", "unknown-method", "tunnel-flag"])
def test_bad_settings(ss, args, message):
    rc, p = ss.run("ss-redir", args)
    assert rc == 1
    assert message in p.stderr(), p.stderr()


def test_tproxy_flag_only_for_redir(ss):
    rc, p = ss.run("ss-tunnel", ["-s", "127.0.0.1", "-p", "8388", "-l", "1080", "-k", "pw",
                                 "-L", "1.2.3.4:5", "-T"])
    assert rc == 1 and "-T/--tcp-tproxy is only for ss-redir" in p.stderr()
