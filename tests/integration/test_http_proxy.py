# SPDX-License-Identifier: MIT
"""ss-local's port answers HTTP proxy requests too: CONNECT tunnels and
forwarded requests (GET, HEAD, POST with Content-Length, chunked and
Expect: 100-continue bodies) with real clients (curl, wget, urllib) and raw
sockets, Basic proxy logins against the SOCKS users, and the refusals: 400
for what does not parse, 431 for a head too long, 407 without a login."""

import base64
import hashlib
import json
import urllib.request
import os
import socket
import subprocess
import threading

import pytest

import sslib
from ssfixtures import named_server
from sslib import T, wait_for

NAME = "web.http.test"
USER, PASS = "alice", "s3cret:with-colon"


@pytest.fixture
def server(ss, tmp_path):
    return named_server(ss, tmp_path, NAME)


@pytest.fixture
def local(ss, server):
    return ss.local(server)


@pytest.fixture
def authed(ss, server):
    return ss.local(server, extra=["--socks-user", USER, "--socks-pass", PASS])


def run_curl(args, timeout=20):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return subprocess.run(["curl", "-q", "-sS", "--max-time", str(T(timeout))] + args,
                          capture_output=True, env=env, timeout=T(timeout + 10))


def proxy_url(local):
    return "http://%s:%d" % local.addr


def basic(user, password):
    return b"Proxy-Authorization: Basic %s\r\n" % base64.b64encode(
        ("%s:%s" % (user, password)).encode())


def refused_with(s, status, what):
    """A whole response with status and Connection: close, then the end."""
    got, head = sslib.http_head(s)
    assert got == status, "%s: %r" % (what, head)
    assert b"\r\nConnection: close\r\n" in head and b"\r\nContent-Length: 0\r\n" in head, head
    state, data = sslib.wait_closed(s, T(5))
    assert data == b"" and state != "open", "after %d to %s: %s, %r" % (status, what, state, data)
    return head


def test_curl_connect_tunnel(local, web):
    r = run_curl(["-p", "-x", proxy_url(local), "http://127.0.0.1:%d/" % web.server_port])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob


def test_curl_connect_name_resolved_by_server(local, web):
    r = run_curl(["-p", "-x", proxy_url(local), "http://%s:%d/" % (NAME, web.server_port)])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob


def test_one_port_speaks_socks5_socks4a_and_http(local, web):
    url = "http://%s:%d/" % (NAME, web.server_port)
    hp = "%s:%d" % local.addr
    for args in (["--socks5-hostname", hp], ["--socks4a", hp], ["-p", "-x", "http://" + hp]):
        r = run_curl(args + [url])
        assert r.returncode == 0, "%s: %s" % (args, r.stderr.decode())
        assert r.stdout == web.blob, args


def test_early_data_after_the_head(local, echo):
    """Head and first payload in one write: the payload is relayed."""
    with sslib.http_connect(local.addr, "127.0.0.1", echo.port, early=b"early data") as s:
        assert sslib.recv_exact(s, 10) == b"early data"
        sslib.small_exchange(s, 100000)


def test_split_head_and_ipv6_literal_target(local, echo6):
    """A head arriving one byte at a time, naming an IPv6 literal."""
    with sslib.connect(*local.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for b in b"CONNECT [::1]:%d HTTP/1.1\r\nHost: x\r\n\r\n" % echo6.port:
            s.sendall(bytes([b]))
        status, head = sslib.http_head(s)
        assert status == 200 and head == b"HTTP/1.1 200 Connection established\r\n\r\n", head
        sslib.small_exchange(s)


@pytest.mark.parametrize("msg", [
    b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
    b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET https://x/ HTTP/1.1\r\n\r\n",
    b"CONNECT x:1 HTTP/1.1\nHost: x\n\n",
    b"CONNECT x:1 HTTP/1.1\r\n folded: no\r\n\r\n",
    b"CONNECT x:1 HTTP/2.0\r\n\r\n",
    b"hello there\r\n\r\n",
    b"POST http://x/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
], ids=["no-port", "bad-port", "origin-form", "https-scheme", "bare-lf", "folding",
        "http2", "garbage", "two-framings"])
def test_malformed_request_gets_400(local, echo, msg):
    with sslib.connect(*local.addr) as s:
        s.sendall(msg)
        refused_with(s, 400, msg)
    # The port still serves.
    with sslib.http_connect(local.addr, "127.0.0.1", echo.port) as s:
        sslib.small_exchange(s)


def test_head_too_long_gets_431(local, echo):
    with sslib.connect(*local.addr) as s:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n" % echo.port)
        try:
            for _ in range(200):
                s.sendall(b"X-Filler: " + b"y" * 100 + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        refused_with(s, 431, "a long head")


def test_login_required(authed, web):
    url = "http://127.0.0.1:%d/" % web.server_port
    r = run_curl(["-p", "-x", proxy_url(authed), url])
    assert r.returncode != 0 and b"407" in r.stderr, (r.returncode, r.stderr)
    r = run_curl(["-p", "-x", proxy_url(authed), "--proxy-user", "%s:%s" % (USER, PASS), url])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob


@pytest.mark.parametrize("cred", [
    None,
    basic(USER, "wrong"),
    basic("bob", PASS),
    b"Proxy-Authorization: Bearer abc\r\n",
    b"Proxy-Authorization: Basic !!!\r\n",
], ids=["none", "wrong-password", "wrong-name", "other-scheme", "bad-base64"])
def test_407_with_challenge_and_refusal_log(authed, echo, cred):
    with sslib.connect(*authed.addr) as s:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n%s\r\n" % (echo.port, cred or b""))
        head = refused_with(s, 407, cred)
        assert b'\r\nProxy-Authenticate: Basic realm="shadowsocks"\r\n' in head, head
    want = "refused: HTTP client sent no proxy login" if cred is None \
        else "refused: HTTP proxy login failed"
    assert wait_for(lambda: want in authed.program.output(), T(5)), authed.program.output()
    assert PASS not in authed.program.output() and "wrong" not in authed.program.output()


def test_login_accepted_raw(authed, echo):
    with sslib.http_connect(authed.addr, "127.0.0.1", echo.port,
                            headers=basic(USER, PASS), early=b"x" * 5000) as s:
        assert sslib.recv_exact(s, 5000) == b"x" * 5000
        sslib.small_exchange(s)


def test_udp_only_gets_403(ss, server, echo):
    local = ss.local(server, extra=["-U"])
    with sslib.connect(*local.addr) as s:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port)
        refused_with(s, 403, "CONNECT under -U")


def test_unreachable_bypassed_target_gets_502(ss, server, tmp_path):
    """An ACL bypass connects straight to the target: a closed port there
    is a 502."""
    acl = tmp_path / "bypass.acl"
    acl.write_text("[bypass_all]\n")
    local = ss.local(server, extra=["--acl", str(acl)])
    closed = sslib.free_port()
    with sslib.connect(*local.addr) as s:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % closed)
        refused_with(s, 502, "a closed port")


# Forwarded requests: kept alive to the same origin; another origin ends
# the connection once the origin has answered what it has.

def post_answer(body):
    return b"%d %s" % (len(body), hashlib.sha256(body).hexdigest().encode())


def http_response(s):
    """A response with Content-Length: (status, head, body)."""
    status, head = sslib.http_head(s)
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    return status, head, sslib.recv_exact(s, n)


def test_curl_get_and_head(local, web):
    url = "http://%s:%d/" % (NAME, web.server_port)
    r = run_curl(["-x", proxy_url(local), url])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob
    r = run_curl(["-I", "-x", proxy_url(local), url])
    assert r.returncode == 0, r.stderr.decode()
    assert b"Content-Length: %d" % len(web.blob) in r.stdout, r.stdout


def test_request_reaches_origin_in_origin_form(authed, web):
    """The request line in origin form, Host from the URI, no proxy fields
    (the login included)."""
    url = "http://%s:%d/headers?x=1" % (NAME, web.server_port)
    r = run_curl(["-x", proxy_url(authed), "--proxy-user", "%s:%s" % (USER, PASS),
                  "-H", "Host: elsewhere", "-H", "X-Kept: yes", url])
    assert r.returncode == 0, r.stderr.decode()
    got = json.loads(r.stdout)
    assert got["line"] == "GET /headers?x=1 HTTP/1.1", got
    fields = {k.lower(): v for k, v in got["fields"]}
    assert fields["host"] == "%s:%d" % (NAME, web.server_port), fields
    assert fields["x-kept"] == "yes" and "connection" not in fields, fields
    assert not [k for k in fields if k.startswith("proxy-")], fields


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_curl_post(local, web, tmp_path, chunked):
    body = os.urandom(200000)
    f = tmp_path / "body"
    f.write_bytes(body)
    extra = ["-H", "Transfer-Encoding: chunked"] if chunked else []
    r = run_curl(["-x", proxy_url(local), "--data-binary", "@%s" % f] + extra
                 + ["http://127.0.0.1:%d/up" % web.server_port])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == post_answer(body)


def test_expect_100_continue(local, web):
    """The head goes first; the origin's 100 comes back; then the body."""
    body = os.urandom(5000)
    with sslib.connect(*local.addr) as s:
        s.sendall(b"PUT http://127.0.0.1:%d/up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                  b"Expect: 100-continue\r\n\r\n" % (web.server_port, len(body)))
        status, head = sslib.http_head(s)
        assert status == 100, head
        s.sendall(body)
        status, head, got = http_response(s)
        assert status == 200 and got == post_answer(body), (head, got)


def test_chunked_body_split_with_trailer(local, web):
    """A chunked body sent in small pieces, extensions and a trailer."""
    chunks = [os.urandom(n) for n in (1, 300, 4096, 17)]
    wire = b"".join(b"%x;e=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-T: 1\r\n\r\n"
    with sslib.connect(*local.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  % web.server_port)
        for i in range(0, len(wire), 97):
            s.sendall(wire[i:i + 97])
        status, head, got = http_response(s)
        assert status == 200 and got == post_answer(b"".join(chunks)), (head, got)


def test_another_origin_gets_a_new_outbound_connection(local, web):
    """Kept alive, requests for two origins (the same server by address and
    by name) one after the other: each answered, the origin switched for
    each, the outbound connection new each time."""
    a_url = b"http://127.0.0.1:%d/headers" % web.server_port
    b_url = b"http://%s:%d/headers" % (NAME.encode(), web.server_port)
    peers = []
    with sslib.connect(*local.addr) as s:
        for url in (a_url, b_url, b_url, a_url):
            s.sendall(b"GET %s HTTP/1.1\r\nX-U: %s\r\n\r\n" % (url, url))
            status, head, got = http_response(s)
            j = json.loads(got)
            assert status == 200 and ["X-U", url.decode()] in j["fields"], (head, j)
            peers.append(j["peer"])
    assert peers[0] != peers[1] == peers[2] != peers[3], peers


def test_pipelined_post_to_another_origin_is_not_lost(local, web):
    """A GET to one origin, a POST with a large body to another and a GET
    to the first again, in one write: the POST waits for the first answer,
    goes out on a new outbound connection, and every answer comes back in
    order."""
    body = os.urandom(200000)
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n"
                  b"POST http://%s:%d/up HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\nX-N: 3\r\n\r\n"
                  % (web.server_port, NAME.encode(), web.server_port, len(body), body,
                     web.server_port))
        a = json.loads(http_response(s)[2])
        status, head, got = http_response(s)
        assert status == 200 and got == post_answer(body), (head, got)
        c = json.loads(http_response(s)[2])
        assert a["line"] == c["line"] == "GET /headers HTTP/1.1" and ["X-N", "3"] in c["fields"]
        assert a["peer"] != c["peer"]


def _origin_answer(method, path):
    """The scripted origin's answer to one request: each framing a response
    can have."""
    tag = b"%s %s" % (method, path)
    head = method == b"HEAD"
    if path == b"/chunked":
        pieces = [b"%s|" % tag, hashlib.sha512(tag).digest() * 50, b"end"]
        return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                + (b"" if head else
                   b"".join(b"%X;x=y\r\n%s\r\n" % (len(p), p) for p in pieces)
                   + b"0\r\nX-Trailer: t\r\n\r\n"))
    if path == b"/204":
        return b"HTTP/1.1 204 No Content\r\nX-Tag: %s\r\n\r\n" % tag
    if path == b"/304":
        return b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5000\r\n\r\n"
    if path == b"/103":
        return (b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s"
                % (len(tag), b"" if head else tag))
    if path == b"/close":
        return b"HTTP/1.0 200 OK\r\n\r\n" + tag + b" until the close"
    return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
            % ((1000, b"") if head else (len(tag), tag)))


@pytest.fixture
def scripted():
    """A loopback origin whose answers to GET/HEAD /chunked, /204, /304, /103
    and /close each use another framing (all written at once, so the proxy
    sees them in one piece as well as split); it closes after /close."""
    lst = socket.socket()
    lst.bind((sslib.LOOPBACK4, 0))
    lst.listen(16)
    stop = threading.Event()

    def serve(conn):
        buf = b""
        with conn:
            while not stop.is_set():
                while b"\r\n\r\n" not in buf:
                    more = conn.recv(65536)
                    if not more:
                        return
                    buf += more
                head, buf = buf.split(b"\r\n\r\n", 1)
                method, path = head.split(b" ")[:2]
                conn.sendall(_origin_answer(method, path))
                if path == b"/close":
                    return

    def accept():
        while not stop.is_set():
            try:
                conn, _ = lst.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield lst.getsockname()[1]
    stop.set()
    lst.close()


def read_answer(s, method, path):
    """Reads exactly the scripted origin's answer to (method, path)."""
    want = _origin_answer(method, path)
    if path == b"/close":
        state, got = sslib.wait_closed(s, T(5))
        assert state == "eof", state
        return got == want
    return sslib.recv_exact(s, len(want)) == want


@pytest.mark.parametrize("path", [b"/chunked", b"/204", b"/304", b"/103", b"/len"])
@pytest.mark.parametrize("method", [b"GET", b"HEAD"])
@pytest.mark.parametrize("pipelined", [False, True], ids=["apart", "pipelined"])
def test_switch_after_each_answer_framing(local, web, scripted, path, method, pipelined):
    """An answer of each framing (chunked with a trailer, 204, 304 with a
    Content-Length, an interim 103, HEAD's head alone), then a request for
    another origin: the answer arrives whole and exactly, then the other
    origin's."""
    first = b"%s http://127.0.0.1:%d%s HTTP/1.1\r\n\r\n" % (method, scripted, path)
    second = b"GET http://%s:%d/headers HTTP/1.1\r\n\r\n" % (NAME.encode(), web.server_port)
    with sslib.connect(*local.addr) as s:
        s.sendall(first + second if pipelined else first)
        assert read_answer(s, method, path)
        if not pipelined:
            s.sendall(second)
        status, head, got = http_response(s)
        assert status == 200 and json.loads(got)["line"] == "GET /headers HTTP/1.1", head


def test_answer_until_close_ends_the_connection(local, web, scripted):
    """An answer whose end is the origin's close: the client gets it whole,
    then the close; the request held behind it goes nowhere."""
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d/close HTTP/1.1\r\n\r\n"
                  b"GET http://%s:%d/headers HTTP/1.1\r\n\r\n"
                  % (scripted, NAME.encode(), web.server_port))
        assert read_answer(s, b"GET", b"/close")


def test_many_pipelined_requests(local, web, scripted):
    """More requests in one write than the proxy follows at once (32): the
    rest wait their turn, all answered in order."""
    paths = [(b"GET", b"/chunked"), (b"HEAD", b"/len"), (b"GET", b"/204"), (b"GET", b"/103")] * 12
    wire = b"".join(b"%s http://127.0.0.1:%d%s HTTP/1.1\r\n\r\n" % (m, scripted, p)
                    for m, p in paths)
    with sslib.connect(*local.addr) as s:
        s.sendall(wire + b"GET http://%s:%d/headers HTTP/1.1\r\n\r\n"
                  % (NAME.encode(), web.server_port))
        for m, p in paths:
            assert read_answer(s, m, p), (m, p)
        assert http_response(s)[0] == 200


def test_later_connect_opens_a_tunnel(local, web, echo):
    """A CONNECT after a forwarded request on the same connection: the
    answer first, then 200 and the tunnel."""
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n"
                  b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nearly" % (web.server_port, echo.port))
        assert http_response(s)[0] == 200
        status, head = sslib.http_head(s)
        assert status == 200 and b"Connection established" in head, head
        data = os.urandom(50000)
        s.sendall(data)
        assert sslib.recv_exact(s, 5 + len(data)) == b"early" + data


@pytest.mark.parametrize("bad,status", [
    (b"GET /relative HTTP/1.1\r\n\r\n", 400),
    (b"BREW coffee://pot HTTP/1.1\r\n\r\n", 400),
    (b"GET http://127.0.0.1:%%d/%s HTTP/1.1\r\n\r\n" % (b"a" * 9000), 431),
])
def test_later_bad_request_is_answered(local, web, bad, status):
    """A later request that does not parse: the answers before it, then
    the refusal, then the end."""
    if b"%d" in bad:
        bad = bad % web.server_port
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n" % web.server_port)
        s.sendall(bad)
        assert http_response(s)[0] == 200
        refused_with(s, status, bad[:40])


def test_head_that_grows_when_rewritten(local, web):
    """No Host and an empty path: the head toward the origin is longer than
    the client's."""
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d?q HTTP/1.1\r\n\r\n" % web.server_port)
        status, head, got = http_response(s)
        assert status == 200 and got == web.blob, head
        assert get_headers(s, web.server_port)["line"] == "GET /headers HTTP/1.1"


def get_headers(s, port, extra=b""):
    s.sendall(b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n%s\r\n" % (port, extra))
    status, head, got = http_response(s)
    assert status == 200, head
    return json.loads(got)


def test_keep_alive_reuses_the_outbound_connection(local, web):
    """Three requests one after the other on one client connection: the
    origin sees them on one connection; Connection: close from the client
    reaches the origin and ends it after the answer."""
    with sslib.connect(*local.addr) as s:
        a = get_headers(s, web.server_port)
        b = get_headers(s, web.server_port, b"X-N: 2\r\n")
        c = get_headers(s, web.server_port, b"Connection: close\r\n")
        assert a["peer"] == b["peer"] == c["peer"], (a, b, c)
        assert ["X-N", "2"] in b["fields"] and ["Connection", "close"] in c["fields"], (b, c)
        assert sslib.wait_closed(s, T(5)) == ("eof", b"")


def test_pipelined_requests_to_one_origin(local, web):
    """A POST with a body and two GETs in one write: three answers, in
    order, from one origin connection."""
    body = os.urandom(3000)
    with sslib.connect(*local.addr) as s:
        s.sendall(b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n"
                  b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n"
                  % (web.server_port, len(body), body, web.server_port, web.server_port))
        assert http_response(s)[2] == post_answer(body)
        assert json.loads(http_response(s)[2])["line"] == "GET /headers HTTP/1.1"
        assert http_response(s)[2] == web.blob


def test_keep_alive_after_a_chunked_body(local, web):
    with sslib.connect(*local.addr) as s:
        s.sendall(b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"3\r\nabc\r\n0\r\n\r\n" % web.server_port)
        assert http_response(s)[2] == post_answer(b"abc")
        assert get_headers(s, web.server_port)["line"] == "GET /headers HTTP/1.1"


def test_curl_two_urls_one_connection(local, web):
    """curl fetching twice through the proxy in one run, both bodies whole."""
    url = "http://127.0.0.1:%d/" % web.server_port
    r = run_curl(["-x", proxy_url(local), url, url])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob + web.blob


def test_urllib_proxy_handler(local, web):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(
        {"http": proxy_url(local)}))
    with opener.open("http://%s:%d/" % (NAME, web.server_port), timeout=T(10)) as r:
        assert r.status == 200 and r.read() == web.blob


def test_wget_http_proxy_env(local, web, tmp_path):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["http_proxy"] = proxy_url(local)
    out = tmp_path / "got"
    r = subprocess.run(["wget", "-q", "-O", str(out), "--tries=1", "--timeout=%d" % T(10),
                        "http://%s:%d/" % (NAME, web.server_port)],
                       capture_output=True, env=env, timeout=T(30))
    assert r.returncode == 0, r.stderr.decode()
    assert out.read_bytes() == web.blob


def test_plain_request_needs_login(authed, web):
    url = "http://127.0.0.1:%d/" % web.server_port
    r = run_curl(["-x", proxy_url(authed), "-o", "/dev/null", "-w", "%{http_code}", url])
    assert r.stdout == b"407", r.stdout
    r = run_curl(["-x", proxy_url(authed), "--proxy-user", "%s:%s" % (USER, PASS), url])
    assert r.returncode == 0 and r.stdout == web.blob, r.stderr.decode()


@pytest.mark.parametrize("body", [
    b"zz\r\n",
    b"5\r\nhelloXX",
    b"5\nhello\r\n",
], ids=["not-hex", "no-crlf-after-data", "bare-lf"])
def test_malformed_chunked_body_closes(local, web, echo, body):
    with sslib.connect(*local.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  % web.server_port)
        s.sendall(body)
        state, data = sslib.wait_closed(s, T(5))
        assert state != "open" and not data.startswith(b"HTTP/1.1 200"), (state, data)
    with sslib.http_connect(local.addr, "127.0.0.1", echo.port) as s:
        sslib.small_exchange(s)


def test_keep_alive_with_login_each_time(authed, web):
    """Each request carries the login; one without it is answered 407
    (after the answers before it) and the connection ends."""
    cred = basic(USER, PASS)
    with sslib.connect(*authed.addr) as s:
        a = get_headers(s, web.server_port, cred)
        b = get_headers(s, web.server_port, cred)
        assert a["peer"] == b["peer"]
        s.sendall(b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n%s\r\n"
                  b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n"
                  % (web.server_port, cred, web.server_port))
        assert http_response(s)[0] == 200
        head = refused_with(s, 407, "a later request without a login")
        assert b"Proxy-Authenticate: Basic" in head
    assert wait_for(lambda: "refused: HTTP client sent no proxy login" in authed.program.output(),
                    T(5)), authed.program.output()


def test_keep_alive_bypassed(ss, server, web, scripted, tmp_path):
    """Bypassed by the ACL (copied, never spliced, while framed): kept alive
    the same way, and a new direct connection for another origin."""
    acl = tmp_path / "bypass.acl"
    acl.write_text("[bypass_all]\n")
    local = ss.local(server, extra=["--acl", str(acl)])
    body = os.urandom(100000)
    with sslib.connect(*local.addr) as s:
        a = get_headers(s, web.server_port)
        s.sendall(b"PUT http://127.0.0.1:%d/up HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (web.server_port, len(body), body))
        assert http_response(s)[2] == post_answer(body)
        b = get_headers(s, web.server_port)
        assert a["peer"] == b["peer"]
        s.sendall(b"GET http://127.0.0.1:%d/204 HTTP/1.1\r\n\r\n" % scripted)
        assert read_answer(s, b"GET", b"/204")
        c = get_headers(s, web.server_port)
        assert c["peer"] != b["peer"]


def test_upgrade_passes_everything_after(local, echo):
    """After a request that asks to upgrade, the bytes that follow are not
    HTTP requests: they all go on (here to an echo server)."""
    with sslib.connect(*local.addr) as s:
        s.sendall(b"GET http://127.0.0.1:%d/ws HTTP/1.1\r\nConnection: Upgrade\r\n"
                  b"Upgrade: websocket\r\n\r\n" % echo.port)
        want = (b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\n"
                b"Upgrade: websocket\r\n\r\n" % echo.port)
        assert sslib.recv_exact(s, len(want)) == want
        frames = b"\x81\x05hello GET http://elsewhere/ HTTP/1.1\r\n\r\n" + os.urandom(20000)
        s.sendall(frames)
        assert sslib.recv_exact(s, len(frames)) == frames


@pytest.mark.parametrize("method", ["none", "2022-blake3-aes-256-gcm", "chacha20-ietf-poly1305", sslib.DEFAULT_METHOD])
def test_forwarded_requests_with_every_codec(ss, web, scripted, method):
    """Pipelined and kept-alive forwarded requests, a body of several reads
    and a CONNECT tunnel, with each kind of codec behind the proxy (none
    holds the whole relay buffer as one slot, over the handshake area)."""
    kw = {"password": ""} if method == "none" else {}
    server = ss.server(method=method, **kw)
    local = ss.local(server, **kw)
    body = os.urandom(200000)
    with sslib.connect(*local.addr) as s:
        s.sendall(b"POST http://127.0.0.1:%d/up HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  b"GET http://127.0.0.1:%d/headers HTTP/1.1\r\n\r\n"
                  % (web.server_port, len(body), body, web.server_port))
        status, head, got = http_response(s)
        assert status == 200 and got == post_answer(body), (head, got)
        assert json.loads(http_response(s)[2])["line"] == "GET /headers HTTP/1.1"
        assert get_headers(s, web.server_port, b"X-N: 3\r\n")["line"] == "GET /headers HTTP/1.1"
        # Another origin and back: each time a new outbound leg, codec
        # state and all.
        s.sendall(b"GET http://127.0.0.1:%d/chunked HTTP/1.1\r\n\r\n" % scripted)
        assert read_answer(s, b"GET", b"/chunked")
        assert get_headers(s, web.server_port)["line"] == "GET /headers HTTP/1.1"
    r = run_curl(["-p", "-x", proxy_url(local), "http://127.0.0.1:%d/" % web.server_port])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == web.blob
