# SPDX-License-Identifier: MIT
"""ss-manager's figures from outside: --metrics serves every port's and
user's as ss-server does (the same names and labels, parsed by
prometheus_client), stat_users answers them per port and user over the
control socket, and both match the bytes the test sent through ports of
two users (SIP004 and SIP022), on two workers, across an add_user that
replaces a port's instance. The metrics endpoint is one of the manager's
doors: its ports never relay to it."""

import base64
import json
import os

import sslib
from sslib import T, wait_for
from ssmetrics import samples as scrape, scrape_through, value
from test_manager import Control, loopback_config, udp_control, user_client

SIP004 = "aes-256-gcm"
SIP022 = "2022-blake3-aes-256-gcm"


def b64(b):
    return base64.b64encode(b).decode()


def start(ss, tmp_path, mport):
    control = udp_control()
    args = ["--manager-address", control, "-s", sslib.LOOPBACK4, "-m", SIP004,
            "--workers", "2", "--metrics", "127.0.0.1:%d" % mport, "-v",
            "-c", loopback_config(tmp_path)]
    mgr = ss.procs.start(ss.exe("ss-manager"), args)
    assert wait_for(lambda: "started" in mgr.stderr(), T(10)), mgr.describe()
    return mgr, Control((sslib.LOOPBACK4, int(control.rsplit(":", 1)[1])))


def send(client, echo, blob, n, times=1):
    for _ in range(times):
        with sslib.socks5_connect(client.addr, *echo.addr) as s:
            data = blob(n)
            s.sendall(data)
            assert sslib.recv_exact(s, n) == data


def stat_users(c, port=None):
    cmd = "stat_users" if port is None else 'stat_users: {"server_port": %d}' % port
    return json.loads(c.ask(cmd))


def test_figures_per_port_and_user(ss, tmp_path, echo, blob):
    mport = sslib.free_port()
    mgr, c = start(ss, tmp_path, mport)
    # A SIP022 port of two users (identity PSK, one PSK each).
    p22 = sslib.free_port()
    ipsk, k1, k2 = (os.urandom(32) for _ in range(3))
    assert c.ask("add: " + json.dumps({"server_port": p22, "method": SIP022,
                                       "password": b64(ipsk),
                                       "users": [{"name": "dee", "password": b64(k1)},
                                                 {"name": 'e"v\\e', "password": b64(k2)}]})) \
        == "ok"

    # A SIP004 port of two users, each with a method of its own, on
    # the second worker's thread (the other has p22).
    p4 = sslib.free_port()
    pw = {"ann": sslib.random_password(), "bo": sslib.random_password(),
          "cy": sslib.random_password()}
    meth = {"ann": SIP004, "bo": "chacha20-ietf-poly1305", "cy": SIP004}
    users = [{"name": n, "password": pw[n], "method": meth[n]} for n in ("ann", "bo")]
    assert c.ask("add: " + json.dumps({"server_port": p4, "method": SIP004,
                                       "users": users})) == "ok"
    assert "port %d added, on worker 1" % p4 in mgr.stderr(), mgr.describe()

    local = {n: user_client(ss, p4, meth[n], pw[n]) for n in pw}
    send(local["ann"], echo, blob, 2222, times=2)
    send(local["bo"], echo, blob, 33333)
    dee = user_client(ss, p22, SIP022, "%s:%s" % (b64(ipsk), b64(k1)))
    eve = user_client(ss, p22, SIP022, "%s:%s" % (b64(ipsk), b64(k2)))
    send(dee, echo, blob, 4444)
    send(eve, echo, blob, 555, times=3)

    m = scrape(mport)
    assert value(m, "ss_bytes_total", port=p4, user="ann", direction="up") == 2 * 2222
    assert value(m, "ss_bytes_total", port=p4, user="ann", direction="down") == 2 * 2222
    assert value(m, "ss_bytes_total", port=p4, user="bo", direction="up") == 33333
    assert value(m, "ss_connections_total", port=p4, user="ann") == 2
    assert value(m, "ss_connections_total", port=p4, user="") == 0
    assert value(m, "ss_bytes_total", port=p22, user="dee", direction="down") == 4444
    assert value(m, "ss_bytes_total", port=p22, user='e"v\\e', direction="up") == 3 * 555
    assert value(m, "ss_connections_total", port=p22, user='e"v\\e') == 3
    for port in (p4, p22):
        assert value(m, "ss_refused_total", port=port, reason="auth") == 0
        assert value(m, "ss_udp_associations", port=port) == 0
    assert [k for k in m if k[0] == "ss_build_info"]
    # The connections have ended; the gauge says so once the server saw it.
    assert wait_for(lambda: value(scrape(mport), "ss_connections_active", port=p4,
                                  user="ann") == 0, T(5))

    # The same through the control socket.
    st = stat_users(c)
    assert set(st) == {str(p4), str(p22)}
    assert st[str(p4)]["ann"] == {"bytes_up": 4444, "bytes_down": 4444, "connections": 0,
                                  "connections_total": 2}, st
    assert st[str(p4)]["bo"]["bytes_down"] == 33333
    assert st[str(p22)]['e"v\\e']["connections_total"] == 3
    assert set(stat_users(c, p22)) == {str(p22)}
    assert c.ask('stat_users: {"server_port": %d}' % sslib.free_port()) == "err"
    # ping is libev's, unchanged: each port's bytes both ways.
    assert c.ping() == {p4: 2 * (2 * 2222 + 33333), p22: 2 * (4444 + 3 * 555)}

    # add_user serves the port with a new instance: the counters go on from
    # where they were, the new user gets a row, and a removed user's row stays.
    assert c.ask("add_user: " + json.dumps({"server_port": p4, "name": "cy",
                                            "password": pw["cy"]})) == "ok"
    send(local["cy"], echo, blob, 777)
    send(local["ann"], echo, blob, 1000)
    assert c.ask('remove_user: {"server_port": %d, "name": "bo"}' % p4) == "ok"
    m = scrape(mport)
    assert value(m, "ss_bytes_total", port=p4, user="ann", direction="up") == 2 * 2222 + 1000
    assert value(m, "ss_connections_total", port=p4, user="ann") == 3
    assert value(m, "ss_bytes_total", port=p4, user="cy", direction="down") == 777
    assert value(m, "ss_bytes_total", port=p4, user="bo", direction="up") == 33333
    st = stat_users(c, p4)[str(p4)]
    assert st["ann"]["bytes_up"] == 2 * 2222 + 1000 and st["cy"]["bytes_up"] == 777, st
    assert c.ping()[p4] == 2 * (2 * 2222 + 33333 + 777 + 1000)
    # Once the replaced instances have ended and are freed, what they
    # counted stays, the removed user's row included.
    assert wait_for(lambda: mgr.stderr().count("port %d: the instance of its earlier settings "
                                               "has ended" % p4) == 2, T(10)), mgr.describe()
    m = scrape(mport)
    assert value(m, "ss_bytes_total", port=p4, user="bo", direction="down") == 33333
    assert value(m, "ss_bytes_total", port=p4, user="ann", direction="up") == 2 * 2222 + 1000
    assert value(m, "ss_connections_total", port=p4, user="ann") == 3
    assert stat_users(c, p4)[str(p4)]["bo"]["connections_total"] == 1
    assert c.ping()[p4] == 2 * (2 * 2222 + 33333 + 777 + 1000)

    # A removed port leaves the page.
    assert c.remove(p22) == "ok"
    assert not [k for k in scrape(mport) if ("port", str(p22)) in k[1]]
    assert mgr.alive()


def test_metrics_endpoint_is_no_target(ss, tmp_path, echo):
    """A port's client cannot scrape the manager's metrics through the relay,
    even with private targets allowed; the try counts as blocked."""
    mport = sslib.free_port()
    mgr, c = start(ss, tmp_path, mport)
    port, pw = sslib.free_port(), sslib.random_password()
    assert c.add(port, pw, SIP004) == "ok"
    client = user_client(ss, port, SIP004, pw)
    for host in (sslib.LOOPBACK4, "0.0.0.0"):
        scrape_through(client.addr, host, mport)
    assert wait_for(lambda: value(scrape(mport), "ss_refused_total", port=port,
                                  reason="blocked") == 2, T(5)), mgr.describe()
    assert "refused" in mgr.stderr()
    # Other loopback targets still go.
    with sslib.socks5_connect(client.addr, *echo.addr) as s:
        sslib.echo_check(s, b"still relays")
