# SPDX-License-Identifier: MIT
"""ss-server --print-url: the URLs a client needs, and their QR codes."""

import json
import re
import subprocess
import urllib.parse

import pytest

import sslib
import ssudp
from ssmulti import out_ip, through


def qr_text_decoded(art, tmp_path):
    """Decodes a QR code drawn in half blocks (light modules as ink) with
    zbarimg, an independent reader; returns the text it holds."""
    cells = {" ": (0, 0), "\u2584": (0, 1), "\u2580": (1, 0), "\u2588": (1, 1)}
    rows = []
    for line in art:
        top, bottom = zip(*(cells[ch] for ch in line))
        rows += [top, bottom]
    scale = 4
    img = tmp_path / "qr.pbm"
    with open(img, "w") as f:
        f.write("P1\n%d %d\n" % (len(rows[0]) * scale, len(rows) * scale))
        for r in rows:
            line = " ".join("0" if light else "1" for light in r for _ in range(scale))
            for _ in range(scale):
                f.write(line + "\n")
    res = subprocess.run(["zbarimg", "-q", "--raw", str(img)], capture_output=True, timeout=30)
    assert res.returncode == 0, res.stderr.decode()[-500:]
    return res.stdout.decode().strip()


def build_draws_qr(ss):
    """Whether this build draws QR codes, from the build line of --version:
    "qrencode VERSION" or "qrencode no" (configured without libqrencode)."""
    rc, p = ss.run("ss-server", ["--version"])
    found = re.search(r"^build: .*\bqrencode ([^,\s]+)", p.stdout(), re.M)
    assert rc == 0 and found, p.describe()
    return found.group(1) != "no"


NO_QR = "ss-server: --print-url: this build has no QR codes (built without libqrencode)"


def print_url(ss, args):
    rc, p = ss.run("ss-server", args + ["--print-url"])
    assert rc == 0, p.describe()
    lines = p.stdout().split("\n")
    return lines, p.stderr()


@pytest.mark.parametrize("method", ("aes-256-gcm", "2022-blake3-aes-128-gcm", "none"))
def test_print_url_round_trip(ss, tmp_path, method):
    """ss-server --print-url prints the URL of its configuration and a QR
    code of it that a reader decodes to the same URL (a build without
    libqrencode says it has no QR codes); a client started with that URL
    relays traffic through the server."""
    password = sslib.random_psk(method) if sslib.is_sip022(method) else "pass word:1"
    port = ssudp.free_udp_port()
    cred = ["-k", password] if method != "none" else []
    args = ["-s", "127.0.0.1", "-p", str(port), "-m", method] + cred
    lines, err = print_url(ss, args)
    url = lines[0]
    assert url.startswith("ss://") and url.endswith("@127.0.0.1:%d/" % port), url
    art = [l for l in lines[1:] if l.strip()]
    if build_draws_qr(ss):
        assert len(art) > 10 and qr_text_decoded(art, tmp_path) == url
        assert err == ""
    else:
        # The URL alone, and why there is no QR code.
        assert art == [] and err.strip() == NO_QR, (lines, err)
    server = ss.procs.start(ss.exe("ss-server"), args + ["-b", out_ip(0)])
    server.wait_listening(sslib.LOOPBACK4, port)
    with sslib.EchoServer() as echo:
        program, lport = ss.procs.start_listening(ss.exe("ss-local"),
                                                  lambda p: ["--server-url", url, "-l", p])
        assert through((sslib.LOOPBACK4, lport), echo, 5000) == out_ip(0)


def test_print_url_wildcard_users_and_key(ss, tmp_path):
    """A server on every address prints a placeholder and says so, with no
    QR code; a 2022 server with users prints one URL per user, each usable;
    a SIP004 server given a key cannot print one (a URL needs the
    password)."""
    lines, err = print_url(ss, ["-p", "8388", "-k", "pw"])
    assert lines[0].endswith("@SERVER-ADDRESS:8388/"), lines
    assert not any("\u2588" in l for l in lines)
    assert "replace SERVER-ADDRESS in the URL" in err

    method = "2022-blake3-aes-128-gcm"
    ipsk, alice, bob = (sslib.random_psk(method) for _ in range(3))
    port = ssudp.free_udp_port()
    conf = tmp_path / "users.json"
    conf.write_text(json.dumps({
        "server": "127.0.0.1", "server_port": port, "method": method, "password": ipsk,
        "users": [{"name": "alice", "password": alice}, {"name": "bob", "password": bob}]}))
    lines, _ = print_url(ss, ["-c", str(conf)])
    urls = [l for l in lines if l.startswith("ss://")]
    assert len(urls) == 2 and urls[0].endswith("#alice") and urls[1].endswith("#bob"), lines
    assert ["user alice:", "user bob:"] == [l for l in lines if l.startswith("user ")]
    server = ss.procs.start(ss.exe("ss-server"), ["-c", str(conf), "-b", out_ip(0), "-v"])
    server.wait_listening(sslib.LOOPBACK4, port)
    with sslib.EchoServer() as echo:
        for u in urls:
            program, lport = ss.procs.start_listening(ss.exe("ss-local"),
                                                      lambda p: ["--server-url", u, "-l", p])
            assert through((sslib.LOOPBACK4, lport), echo) == out_ip(0)
    out = server.output()
    assert "user alice: connect" in out and "user bob: connect" in out

    rc, p = ss.run("ss-server", ["-p", "1", "--key", sslib.random_key_b64("aes-256-gcm"),
                                 "-m", "aes-256-gcm", "--print-url"])
    assert rc == 1 and "a URL carries the password" in p.stderr()


@pytest.mark.parametrize("plugin,opts,want", (
    ("/usr/bin/obfs-server", "obfs=http;failover=192.0.2.1:80", "obfs-local;obfs=http"),
    ("v2ray-plugin", "server;tls;host=a.example;cert=/etc/c.pem;key=/etc/k.pem",
     "v2ray-plugin;tls;host=a.example"),
    ("/usr/bin/ss-v2ray-plugin", "server;path=/ws", "v2ray-plugin;path=/ws"),
    ("/opt/my-plugin", "a=1;server", "my-plugin;a=1;server"),
))
def test_print_url_names_the_clients_plugin(ss, plugin, opts, want):
    """With a plugin, the URL's plugin= is what the client runs: the file's
    name, obfs-server's client half, without the options only a server
    takes; a plugin it does not know goes with its options as they are."""
    args = ["-s", "127.0.0.1", "-p", "8388", "-m", "aes-128-gcm", "-k", "pw",
            "--plugin", plugin, "--plugin-opts", opts]
    lines, _ = print_url(ss, args)
    query = urllib.parse.urlsplit(lines[0]).query
    assert urllib.parse.parse_qs(query) == {"plugin": [want]}, lines[0]


@pytest.mark.parametrize("plugin", ("obfs-server --fast-open", "/usr/bin/obfs-server -v",
                                    "/opt/my plugin"))
def test_print_url_refuses_a_plugin_command_line(ss, plugin):
    """A client takes nothing but a program's name from a URL, so a server
    whose plugin is a command line prints no URL: it says why and exits 1
    rather than print one every client refuses."""
    rc, p = ss.run("ss-server", ["-s", "127.0.0.1", "-p", "8388", "-m", "aes-128-gcm", "-k",
                                 "pw", "--plugin", plugin, "--print-url"])
    assert rc == 1, p.describe()
    assert "ss://" not in p.stdout()
    assert ("--print-url: a URL names its plugin by a program name alone, and '%s' is not one"
            % plugin.rsplit("/", 1)[-1]) in p.stderr(), p.describe()
