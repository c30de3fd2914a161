# SPDX-License-Identifier: MIT
"""ss-local's SOCKS5 username/password login (RFC 1929): with users
configured, a client must log in before any request, UDP ASSOCIATE
included; a failed login is refused and logged once, without the password."""

import json
import os
import socket
import subprocess
import time

import pytest

import sslib
import ssudp
from sslib import T, wait_for

USER, PASS = b"alice", b"s3cret:with-colon"


def auth_args(user=USER, password=PASS):
    return ["--socks-user", user.decode(), "--socks-pass", password.decode()]


@pytest.fixture
def authed(ss):
    server = ss.server(extra=["-u"])
    return ss.local(server, extra=auth_args() + ["-u"])


def curl(local, web, cred=None):
    """curl through ss-local (the proxy resolves names: socks5h); returns
    (exit code, body)."""
    auth = "%s:%s@" % cred if cred else ""
    proxy = "socks5h://%s127.0.0.1:%d" % (auth, local.port)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    r = subprocess.run(["curl", "-sS", "--max-time", str(T(10)), "-x", proxy,
                        "http://127.0.0.1:%d/" % web.server_port],
                       capture_output=True, env=env, timeout=T(20))
    return r.returncode, r.stdout


def warn_lines(program):
    return [ln for ln in program.output().splitlines() if " WARN: " in ln]


def login_open(local, name, password):
    """Greets offering method 2 and logs in; returns (socket, status)."""
    s = sslib.connect(*local.addr)
    assert sslib.socks5_greet(s, methods=(0, 2)) == 2
    return s, sslib.socks5_login(s, name, password)


def test_curl_with_login(authed, web):
    rc, body = curl(authed, web, ("alice", PASS.decode()))
    assert rc == 0 and body == web.blob, (rc, body)


def test_curl_wrong_password_fails_and_is_logged_once(authed, web):
    for _ in range(2):
        rc, body = curl(authed, web, ("alice", "not-the-password"))
        assert rc != 0 and body == b"", (rc, body)
    assert wait_for(lambda: warn_lines(authed.program), T(5)), authed.program.output()
    time.sleep(0.3)
    lines = warn_lines(authed.program)
    assert len(lines) == 1, lines
    assert "127.0.0.1:" in lines[0] and "SOCKS5 login failed" in lines[0], lines[0]
    assert "not-the-password" not in authed.program.output()
    assert PASS.decode() not in authed.program.output()


def test_curl_without_credentials_fails(authed, web):
    rc, body = curl(authed, web)
    assert rc != 0 and body == b"", (rc, body)
    assert wait_for(lambda: warn_lines(authed.program), T(5)), authed.program.output()
    assert "offers no username/password login" in warn_lines(authed.program)[0]


def test_only_no_auth_offered_gets_ff_and_close(authed, echo):
    with sslib.connect(*authed.addr) as s:
        assert sslib.socks5_greet(s, methods=(0,)) == 0xFF
        state, data = sslib.wait_closed(s, T(5))
        assert state != "open" and data == b""
    assert echo.accepted == 0


def test_request_without_login_is_refused(authed, echo):
    """Method 2 chosen, then a SOCKS5 request instead of the login: its
    first byte (5) is a wrong sub-negotiation version."""
    with sslib.connect(*authed.addr) as s:
        assert sslib.socks5_greet(s, methods=(2,)) == 2
        s.sendall(sslib.socks5_request_bytes(sslib.CMD_CONNECT, *echo.addr))
        assert sslib.recv_exact(s, 2) == b"\x01\x01"
        state, data = sslib.wait_closed(s, T(5))
        assert state != "open" and data == b""
    assert echo.accepted == 0


@pytest.mark.parametrize("msg", (b"\x05\x05alice\x03abc", b"\x01\x00\x03abc",
                                 b"\x01\x05alice\x00", b"\x00"),
                         ids=("version5", "empty_name", "empty_password", "version0"))
def test_malformed_login_refused(authed, echo, msg):
    with sslib.connect(*authed.addr) as s:
        assert sslib.socks5_greet(s, methods=(2,)) == 2
        s.sendall(msg)
        assert sslib.recv_exact(s, 2) == b"\x01\x01"
        state, _ = sslib.wait_closed(s, T(5))
        assert state != "open"
    with sslib.connect(*authed.addr) as s:
        assert sslib.socks5_greet(s, methods=(2,)) == 2
        assert sslib.socks5_login(s, USER, PASS) == 0


def test_login_split_across_reads_then_connect(authed, echo):
    msg = bytes([1, len(USER)]) + USER + bytes([len(PASS)]) + PASS
    with sslib.connect(*authed.addr) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert sslib.socks5_greet(s, methods=(2,)) == 2
        for i in range(len(msg)):
            s.sendall(msg[i:i + 1])
            time.sleep(0.005)
        assert sslib.recv_exact(s, 2) == b"\x01\x00"
        s.sendall(sslib.socks5_request_bytes(sslib.CMD_CONNECT, *echo.addr))
        rep, _ = sslib.socks5_read_reply(s)
        assert rep == 0
        sslib.small_exchange(s, 2000)


def test_pipelined_greeting_login_request(authed, echo):
    with sslib.connect(*authed.addr) as s:
        s.sendall(b"\x05\x01\x02" + bytes([1, len(USER)]) + USER + bytes([len(PASS)]) + PASS
                  + sslib.socks5_request_bytes(sslib.CMD_CONNECT, *echo.addr) + b"ping")
        assert sslib.recv_exact(s, 4) == b"\x05\x02\x01\x00"
        rep, _ = sslib.socks5_read_reply(s)
        assert rep == 0
        assert sslib.recv_exact(s, 4) == b"ping"


def test_wrong_name_right_password_refused(authed):
    s, status = login_open(authed, b"bob", PASS)
    with s:
        assert status != 0
        state, _ = sslib.wait_closed(s, T(5))
        assert state != "open"


def test_udp_associate_after_login(authed):
    with ssudp.UdpEcho() as uecho:
        with ssudp.Association(authed.addr, login=(USER, PASS)) as a:
            _, _, _, data = a.exchange(uecho.addr, b"datagram after login")
            assert data == b"datagram after login"


def test_udp_associate_without_login_refused(authed):
    with ssudp.UdpEcho() as uecho:
        for login in (None, (USER, b"wrong")):
            with pytest.raises(sslib.SocksError):
                ssudp.Association(authed.addr, login=login)
        # With method 2 chosen, an UDP ASSOCIATE request sent in place of
        # the login is a malformed login, never a request.
        with sslib.connect(*authed.addr) as s:
            assert sslib.socks5_greet(s, methods=(2,)) == 2
            s.sendall(sslib.socks5_request_bytes(sslib.CMD_UDP_ASSOCIATE, "127.0.0.1", 9))
            assert sslib.recv_exact(s, 2) == b"\x01\x01"
            state, data = sslib.wait_closed(s, T(5))
            assert state != "open" and data == b""
        assert uecho.count() == 0


def test_users_file(ss, web, tmp_path):
    users = tmp_path / "users"
    users.write_text("# SOCKS5 users\n\nalice:pw-one\r\nbob:pw:two\n")
    server = ss.server()
    local = ss.local(server, extra=["--socks-users", str(users)])
    assert curl(local, web, ("alice", "pw-one")) == (0, web.blob)
    assert curl(local, web, ("bob", "pw:two")) == (0, web.blob)
    assert curl(local, web, ("alice", "pw:two"))[0] != 0
    assert curl(local, web)[0] != 0


def test_json_keys(ss, web, tmp_path):
    server = ss.server()
    conf = tmp_path / "local.json"
    conf.write_text(json.dumps({"socks_user": "carol", "socks_pass": "json-pw"}))
    local = ss.local(server, extra=["-c", str(conf)])
    assert curl(local, web, ("carol", "json-pw")) == (0, web.blob)
    assert curl(local, web, ("carol", "other"))[0] != 0


def test_without_users_nothing_changes(ss, web, echo):
    server = ss.server()
    local = ss.local(server)
    assert curl(local, web) == (0, web.blob)
    with sslib.connect(*local.addr) as s:
        assert sslib.socks5_greet(s, methods=(2,)) == 0xFF


@pytest.mark.parametrize("args,needle", (
    (["--socks-user", "a"], "--socks-pass"),
    (["--socks-pass", "hidden-pw"], "--socks-user"),
    (["--socks-user", "x" * 256, "--socks-pass", "p"], "1 to 255 bytes"),
    (["--socks-users", "/nonexistent/users"], "/nonexistent/users"),
), ids=("user_only", "pass_only", "long_name", "missing_file"))
def test_bad_settings(ss, args, needle):
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "1", "-l", "1", "-k", "x"] + args)
    assert rc not in (None, 0)
    assert needle in p.output(), p.output()
    assert "hidden-pw" not in p.output()


def test_bad_users_file_names_line_not_password(ss, tmp_path):
    users = tmp_path / "users"
    users.write_text("alice:ok\nbob\ncarol:visible-secret\n")
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "1", "-l", "1", "-k", "x",
                                "--socks-users", str(users)])
    assert rc not in (None, 0)
    assert "line 2" in p.output(), p.output()
    assert "visible-secret" not in p.output()


def test_check_counts_users_without_names(ss, tmp_path):
    users = tmp_path / "users"
    users.write_text("alice:pw-one\nbob:pw-two\n")
    rc, p = ss.run("ss-local", ["-s", "127.0.0.1", "-p", "8388", "-l", "1080", "-k", "x",
                                "--socks-users", str(users), "--socks-user", "carol",
                                "--socks-pass", "pw-three", "--check"])
    assert rc == 0, p.output()
    assert "SOCKS5 login: 3 users" in p.output(), p.output()
    for secret in ("alice", "pw-one", "carol", "pw-three"):
        assert secret not in p.output()


def test_failed_logins_are_summed_up(ss):
    """Four failed logins within the interval: one WARN line at once, the
    other three in one summary when it ends."""
    server = ss.server()
    local = ss.local(server, extra=auth_args(), env={"SS_LOG_INTERVAL": "1.5"})
    for _ in range(4):
        s, status = login_open(local, USER, b"wrong")
        with s:
            assert status != 0
            sslib.wait_closed(s, T(5))
    assert wait_for(lambda: "more from" in local.program.output(), T(6)), \
        local.program.output()
    lines = warn_lines(local.program)
    assert len(lines) == 2, lines
    assert "refused: SOCKS5 login failed" in lines[0], lines[0]
    assert lines[1].endswith("refused logins and server answers: 3 more from 127.0.0.1 "
                             "in the last 1.5 s"), lines[1]


def test_socks4_is_refused_when_users_are_configured(authed, web):
    """SOCKS4 has no password: on a port with users it would go around
    them, so it gets 91 and the refusal is logged like a failed login."""
    s = sslib.connect(*authed.addr)
    with s:
        s.sendall(bytes([4, 1]) + web.server_port.to_bytes(2, "big") + socket.inet_aton(web.server_address[0]) + b"alice\0")
        rep = sslib.recv_exact(s, 8)
        assert rep[:2] == b"\0\x5b", rep
        state, data = sslib.wait_closed(s, T(5))
        assert data == b"" and state in ("eof", "reset"), (state, data)
    assert wait_for(lambda: any("refused: SOCKS4 has no login" in ln
                                for ln in warn_lines(authed.program)), T(5)), authed.program.output()
