# SPDX-License-Identifier: MIT
"""The online configuration (SIP008): ss-local, ss-tunnel and ss-redir take
their servers from a document fetched over HTTPS, checked against a CA
this test makes with the openssl command; a refresh swaps the servers
while clients run; a fetch that fails keeps the last good list, and at
start with no server of its own the program exits 1 with the reason."""

import http.server
import json
import os
import signal
import ssl
import subprocess
import threading
import time

import pytest

import sslib
from sslib import T
from ssmulti import Srv, echo_traffic, out_ip, peers, ss_url, start_client, through

NAME = "sip008.test"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
            "-subj", "/CN=%s" % name, "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    return os.path.join(d, name + ".pem")


def make_cert(d, ca, name, cn, san):
    """A server certificate for cn with subjectAltName san, signed by ca."""
    (d / (name + ".ext")).write_text(
        "subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n" % san)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=%s" % cn, cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2",
            "-out", name + ".pem", "-extfile", name + ".ext", cwd=d)
    return str(d / (name + ".pem")), str(d / (name + ".key"))


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    d.mkdir()
    ca = make_ca(d, "ca")
    good = make_cert(d, "ca", "good", NAME, "DNS:%s,IP:127.0.0.1" % NAME)
    other_name = make_cert(d, "ca", "other", "other.test", "DNS:other.test")
    make_ca(d, "rogue_ca")
    rogue = make_cert(d, "rogue_ca", "rogue", NAME, "DNS:%s,IP:127.0.0.1" % NAME)
    return {"ca": ca, "good": good, "other_name": other_name, "rogue": rogue}


class DocServer:
    """An HTTPS server on 127.0.0.1 that answers every GET with what
    answer holds: (status, body, framing), framing one of "length",
    "chunked", "close" (the body read to the end, then TLS close_notify)
    and "cut" (the same without close_notify: the TCP connection ends)."""

    def __init__(self, cert):
        self.answer = (200, b"{}", "length")
        self.gets = 0
        self.delay = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.gets += 1
                status, body, framing = outer.answer
                time.sleep(outer.delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if framing == "length":
                    self.send_header("Content-Length", str(len(body)))
                elif framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                if framing == "chunked":
                    for i in range(0, len(body), 1000):
                        part = body[i:i + 1000]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(body)
                self.wfile.flush()
                if framing == "close":
                    try:
                        self.connection.unwrap()
                    except OSError:
                        pass  # the client closed without its own close_notify
                self.close_connection = True

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*cert)
        self.httpd = http.server.ThreadingHTTPServer((sslib.LOOPBACK4, 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                            do_handshake_on_connect=False)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def serve(self, body, status=200, framing="length"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.answer = (status, body, framing)

    def url(self, host=NAME, scheme="https", path="/doc"):
        return "%s://%s:%d%s" % (scheme, host, self.port, path)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def docs(pki):
    made = []

    def make(cert="good"):
        d = DocServer(pki[cert])
        made.append(d)
        return d
    yield make
    for d in made:
        d.close()


@pytest.fixture
def env(tmp_path):
    """The name of the document server, in a hosts file: no lookup leaves
    the machine (and -d names a dead resolver on loopback besides)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 %s other.test\n" % NAME)
    return {"SS_HOSTS_FILE": str(hosts)}


def dead_dns():
    return ["-d", "127.0.0.1:%d" % sslib.free_port(kind=__import__("socket").SOCK_DGRAM)]


def sip008(*servers, **extra):
    doc = {"version": 1, "servers": [s.entry(id="id-%d" % s.index) for s in servers]}
    doc.update(extra)
    return doc


def count(p, text):
    return p.output().count(text)


def wait_log(p, text, n_before, timeout=10):
    assert sslib.wait_for(lambda: count(p, text) > n_before, T(timeout)), p.describe()


def test_local_relays_through_the_documents_server(ss, echo, docs, pki, tmp_path, env):
    """--online-config https://127.0.0.1:PORT/doc --ca-file: no server of
    its own, the document's (an address in the URL, checked against the
    certificate's IP addresses)."""
    srv = Srv(ss, 0).start()
    d = docs()
    d.serve(sip008(srv))
    local = start_client(ss, tmp_path, {},
                         extra=["--online-config", d.url(host="127.0.0.1"), "--ca-file",
                                pki["ca"]] + dead_dns(), env=env)
    for _ in range(5):
        assert through(local.addr, echo) == out_ip(0)
    assert d.gets == 1
    assert "online configuration: 1 servers" in local.program.output()


def test_ssconf_chunked_and_a_single_ss_url(ss, echo, docs, pki, tmp_path, env):
    """ssconf://NAME:PORT/... is the same document over HTTPS, here chunked;
    an answer of one ss:// URL (Outline's dynamic keys, read to the close)
    is one server; ss-tunnel takes it as well."""
    a, b = Srv(ss, 0).start(), Srv(ss, 1).start()
    d = docs()
    d.serve(sip008(a), framing="chunked")
    conf = {"online_config": {"url": d.url(scheme="ssconf")}, "ca_file": pki["ca"]}
    local = start_client(ss, tmp_path, conf, extra=dead_dns(), env=env)
    assert through(local.addr, echo) == out_ip(0)

    d2 = docs()
    d2.serve(b.url(tag="outline key") + "\n", framing="close")
    conf = {"online_config": {"url": d2.url(scheme="ssconf", path="/secretkey42#name")},
            "ca_file": pki["ca"]}
    tunnel = start_client(ss, tmp_path, conf, prog="ss-tunnel", target=echo.addr,
                          extra=dead_dns(), env=env)
    with sslib.connect(*tunnel.addr, timeout=T(5)) as s:
        sslib.small_exchange(s, 500)
    assert peers(echo).get(out_ip(1)) == 1
    # The path is the access key: the logs name the scheme and host only.
    assert "ssconf://%s:%d/..." % (NAME, d2.port) in tunnel.program.stderr(), \
        tunnel.program.stderr()
    assert "secretkey42" not in tunnel.program.output(), tunnel.program.output()


def test_refresh_swaps_servers_under_load(ss, echo, docs, pki, tmp_path, env):
    """update_interval 1: the document moves from one server to another
    while 4 clients run for ~10 s; no connection fails, the new server
    carries traffic, and none reaches the removed one after the swap."""
    a, b = Srv(ss, 0).start(), Srv(ss, 1).start()
    d = docs()
    d.serve(sip008(a))
    conf = {"online_config": {"url": d.url(), "update_interval": 1}, "ca_file": pki["ca"],
            "timeout": 30}
    local = start_client(ss, tmp_path, conf, extra=dead_dns(), env=env)
    after = {}

    def chaos(stats, lock):
        time.sleep(T(2))
        n = count(local.program, "online configuration: 1 servers now")
        d.serve(sip008(b))
        wait_log(local.program, "online configuration: 1 servers now", n)
        # Connections opened before the swap may still reach the old one.
        time.sleep(T(1))
        with echo.lock:
            after["from"] = len(echo.records)
        time.sleep(T(6))
        with echo.lock:
            after["peers"] = [r["peer"][0] for r in echo.records[after["from"]:]]

    stats = echo_traffic(local, echo, chaos, apps=4, size=1 << 14)
    assert stats["done"] > 20, stats
    assert after["peers"], "no connection after the swap"
    assert set(after["peers"]) == {out_ip(1)}, peers(echo)
    assert peers(echo).get(out_ip(0)), "the first server carried nothing"


def test_failed_fetches_keep_the_last_good_list(ss, echo, docs, pki, tmp_path, env):
    """HTTP 404, a document that does not parse, one over 1 MiB and one with
    a stream cipher: each is logged with its reason and the servers stay;
    SIGHUP fetches again."""
    a, b = Srv(ss, 0).start(), Srv(ss, 1).start()
    d = docs()
    d.serve(sip008(a))
    conf = {"online_config": {"url": d.url(), "update_interval": 1}, "ca_file": pki["ca"]}
    local = start_client(ss, tmp_path, conf, extra=dead_dns(), env=env)
    assert through(local.addr, echo) == out_ip(0)
    bad = [
        (dict(body="gone", status=404), "answered HTTP/1.1 404"),
        (dict(body="{\"version\": 1, \"servers\": ["), "not a JSON document"),
        (dict(body=b"x" * ((1 << 20) + 1)), "over 1048576"),
        (dict(body=b" " * ((1 << 20) + 10), framing="chunked"), "over 1048576"),
        (dict(body=sip008(b, servers=[b.entry(method="rc4-md5")])), "rc4-md5"),
        (dict(body={"version": 1, "servers": [b.entry(plugin="/bin/sh")]}), "program's name"),
    ]
    for kw, why in bad:
        n = count(local.program, why)
        d.serve(**kw)
        wait_log(local.program, why, n)
        assert through(local.addr, echo) == out_ip(0), why
    assert "the servers stay as they are" in local.program.output()
    # Good again, by SIGHUP (the interval would do it too).
    gets = d.gets
    d.serve(sip008(b))
    os.kill(local.program.pid, signal.SIGHUP)
    assert sslib.wait_for(lambda: through(local.addr, echo) == out_ip(1), T(10))
    assert d.gets > gets


@pytest.mark.parametrize("cert,why", [
    ("other_name", "does not match"),
    ("rogue", "not correctly signed"),
])
def test_a_certificate_refused_at_start_exits_1(ss, docs, pki, tmp_path, env, cert, why):
    d = docs(cert)
    d.serve({"version": 1, "servers": []})
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"online_config": d.url(), "ca_file": pki["ca"],
                                "local_port": sslib.free_port()}))
    rc, p = ss.run("ss-local", ["-c", str(conf)] + dead_dns(), env=env, timeout=T(30))
    assert rc == 1, p.describe()
    assert "certificate is refused" in p.stderr() and why in p.stderr(), p.stderr()
    assert d.gets == 0


def test_a_stream_cipher_document_is_refused_at_start(ss, docs, pki, tmp_path, env):
    srv = Srv(ss, 0)
    d = docs()
    d.serve({"version": 1, "servers": [srv.entry(method="aes-256-cfb")]})
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"online_config": d.url(), "ca_file": pki["ca"],
                                "local_port": sslib.free_port()}))
    rc, p = ss.run("ss-redir", ["-c", str(conf)] + dead_dns(), env=env, timeout=T(30))
    assert rc == 1, p.describe()
    assert "online server 1" in p.stderr() and "aes-256-cfb" in p.stderr(), p.stderr()


def test_check_and_bad_urls(ss, docs, pki, tmp_path, env):
    """--check names the URL and fetches nothing; a URL that is not
    https:// or ssconf://, or "online_config" with a key it does not take,
    is refused at once."""
    d = docs()
    rc, p = ss.run("ss-local", ["--check", "-l", str(sslib.free_port()), "--online-config",
                                d.url(), "--ca-file", pki["ca"]] + dead_dns(), env=env)
    assert rc == 0, p.describe()
    shown = "https://%s:%d/..." % (NAME, d.port)
    assert "online configuration: %s, fetched at start and every 3600 s" % shown in \
        p.stdout(), p.stdout()
    assert "/doc" not in p.output(), p.output()
    assert d.gets == 0
    rc, p = ss.run("ss-tunnel", ["-l", "1", "-L", "127.0.0.1:1", "--online-config",
                                 "http://%s/doc" % NAME])
    assert rc == 1 and "must start with https:// or ssconf://" in p.stderr(), p.describe()
    assert "'http://%s/...'" % NAME in p.stderr(), p.stderr()
    conf = tmp_path / "bad.json"
    conf.write_text(json.dumps({"local_port": 1, "online_config": {"url": d.url(), "every": 5}}))
    rc, p = ss.run("ss-local", ["-c", str(conf)])
    assert rc == 1 and 'unknown key "every"' in p.stderr(), p.describe()
    rc, p = ss.run("ss-server", ["-p", "1", "-k", "x", "--online-config", d.url()])
    assert rc == 1 and "--online-config is for ss-local, ss-tunnel and ss-redir" in p.stderr(), \
        p.describe()


def test_a_reload_without_url_replaces_a_waiting_online_reload(ss, echo, docs, pki, tmp_path,
                                                               env):
    """SIGHUP with an online configuration whose document is slow, then
    SIGHUP with a configuration of one server and no URL: that one serves,
    and the late document changes nothing."""
    a, b, c = Srv(ss, 0).start(), Srv(ss, 1).start(), Srv(ss, 2).start()
    d = docs()
    d.serve(sip008(a))
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"online_config": d.url(), "ca_file": pki["ca"]}))
    port = sslib.free_port()
    p = ss.procs.start(ss.exe("ss-local"), ["-c", str(path), "-l", str(port), "-b",
                                            sslib.LOOPBACK4, "-v"] + dead_dns(), env=env)
    p.wait_listening(sslib.LOOPBACK4, port)
    addr = (sslib.LOOPBACK4, port)
    assert through(addr, echo) == out_ip(0)
    d.serve(sip008(b))
    d.delay = T(3)
    os.kill(p.pid, signal.SIGHUP)
    assert sslib.wait_for(lambda: d.gets == 2, T(10)), p.describe()
    n = count(p, "configuration reloaded")
    path.write_text(json.dumps({k: v for k, v in c.entry().items() if k != "remarks"}))
    os.kill(p.pid, signal.SIGHUP)
    wait_log(p, "configuration reloaded", n)
    assert through(addr, echo) == out_ip(2)
    time.sleep(T(4))
    assert through(addr, echo) == out_ip(2)
    assert count(p, "configuration reloaded") == n + 1, p.output()


def test_sighup_during_the_first_fetch_is_dropped(ss, echo, docs, pki, tmp_path, env):
    """A SIGHUP while the start waits for the document neither ends the
    process nor reloads: the document, when it comes, serves."""
    srv = Srv(ss, 0).start()
    d = docs()
    d.serve(sip008(srv))
    d.delay = T(2)
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"online_config": d.url(), "ca_file": pki["ca"]}))
    port = sslib.free_port()
    p = ss.procs.start(ss.exe("ss-local"), ["-c", str(conf), "-l", str(port), "-b",
                                            sslib.LOOPBACK4, "-v"] + dead_dns(), env=env)
    assert sslib.wait_for(lambda: d.gets == 1, T(10)), p.describe()
    os.kill(p.pid, signal.SIGHUP)
    p.wait_listening(sslib.LOOPBACK4, port)
    assert through((sslib.LOOPBACK4, port), echo) == out_ip(0)
    assert "SIGHUP" not in p.output(), p.output()



def test_a_body_cut_without_close_notify_is_refused(ss, echo, docs, pki, tmp_path, env):
    """A body with no length ends with the server's TLS close_notify; a
    bare end of the connection could be a truncation: refused at start
    (exit 1), and later the last good list stays."""
    a, b = Srv(ss, 0).start(), Srv(ss, 1).start()
    d = docs()
    d.serve(b.url() + "\n", framing="cut")
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"online_config": d.url(), "ca_file": pki["ca"],
                                "local_port": sslib.free_port()}))
    rc, p = ss.run("ss-local", ["-c", str(conf)] + dead_dns(), env=env, timeout=T(30))
    assert rc == 1, p.describe()
    assert "without TLS close_notify" in p.stderr(), p.stderr()
    d.serve(sip008(a), framing="close")
    conf = {"online_config": {"url": d.url(), "update_interval": 1}, "ca_file": pki["ca"]}
    local = start_client(ss, tmp_path, conf, extra=dead_dns(), env=env)
    assert through(local.addr, echo) == out_ip(0)
    n = count(local.program, "without TLS close_notify")
    d.serve(sip008(b), framing="cut")
    wait_log(local.program, "without TLS close_notify", n)
    assert through(local.addr, echo) == out_ip(0)
