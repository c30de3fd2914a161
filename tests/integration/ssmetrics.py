# SPDX-License-Identifier: MIT
"""The metrics endpoint (--metrics) from a test's side: a request, a scrape
parsed with prometheus_client (the exposition format's reference parser),
and a scrape tried through the relay, which must get nothing."""

import socket

from prometheus_client import parser

import sslib
from sslib import T

GET = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


def get(port, path="/metrics", method="GET", timeout=5):
    """(status code, headers text, body) of one request."""
    with socket.create_connection((sslib.LOOPBACK4, port), timeout=T(timeout)) as s:
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\n\r\n" % (method, path)).encode())
        data = sslib.recv_all(s, timeout=T(timeout))
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head.decode(), body


def samples(port):
    """{(name, frozenset(labels)): value} of one scrape."""
    status, head, body = get(port)
    assert status == 200, head
    assert "Content-Type: text/plain; version=0.0.4" in head, head
    out = {}
    for fam in parser.text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(m, name, **labels):
    return m[(name, frozenset((k, str(v)) for k, v in labels.items()))]


def scrape_through(socks, host, port):
    """A GET of host:port's metrics through the SOCKS5 proxy socks: asserts
    that not a byte of an answer comes back."""
    s, rep = sslib.socks5_open(socks, host, port)
    with s:
        if rep != 0:
            return
        try:
            s.sendall(GET)
        except OSError:
            pass
        _, data = sslib.wait_closed(s, T(3))
        assert data == b"", data
