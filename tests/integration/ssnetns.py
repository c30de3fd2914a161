# SPDX-License-Identifier: MIT
"""Network namespaces for the transparent-proxy tests (test_redir.py and
the allocation suite):

    cli  c0 10.99.1.2 fd99:1::2 --- r0 10.99.1.1 fd99:1::1  rtr  r1 10.99.2.1 fd99:2::1
                                                                  |
                               tgt  t0 10.99.2.5 fd99:2::5 -------+

rtr does not forward, so cli reaches tgt's addresses only through a proxy
in rtr that an nftables rule there hands the traffic to."""

import ctypes
import os
import subprocess

import pytest

TGT4, TGT6 = "10.99.2.5", "fd99:2::5"
RTR4, RTR6 = "10.99.1.1", "fd99:1::1"
CLI4, CLI6 = "10.99.1.2", "fd99:1::2"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def sh(*cmd, ok=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stdout.strip()))
    return r


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: %s" % os.strerror(e))


class Netns:
    """The three namespaces; enter(name) moves the calling thread into one
    (sockets and programs it creates there stay there)."""

    def __init__(self):
        tag = "%d" % os.getpid()
        self.names = {n: "ssredir-%s-%s" % (n, tag) for n in ("cli", "rtr", "tgt")}
        self.made = []

    def ip(self, ns, *args):
        return sh("ip", "-n", self.names[ns], *args)

    def nft(self, ns, rules):
        r = subprocess.run(["ip", "netns", "exec", self.names[ns], "nft", "-f", "-"],
                           input=rules, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise RuntimeError("nft in %s: %s\n%s" % (ns, r.stdout, rules))

    def create(self):
        for ns in ("cli", "rtr", "tgt"):
            sh("ip", "netns", "add", self.names[ns])
            self.made.append(self.names[ns])
            self.ip(ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "c0", "netns", self.names["cli"], "type", "veth",
           "peer", "name", "r0", "netns", self.names["rtr"])
        sh("ip", "link", "add", "t0", "netns", self.names["tgt"], "type", "veth",
           "peer", "name", "r1", "netns", self.names["rtr"])
        for ns, dev, v4, v6 in (("cli", "c0", "10.99.1.2/24", "fd99:1::2/64"),
                                ("rtr", "r0", "10.99.1.1/24", "fd99:1::1/64"),
                                ("rtr", "r1", "10.99.2.1/24", "fd99:2::1/64"),
                                ("tgt", "t0", "10.99.2.5/24", "fd99:2::5/64")):
            self.ip(ns, "addr", "add", v4, "dev", dev)
            self.ip(ns, "-6", "addr", "add", v6, "dev", dev, "nodad")
            self.ip(ns, "link", "set", dev, "up")
        self.ip("cli", "route", "add", "default", "via", RTR4)
        self.ip("cli", "-6", "route", "add", "default", "via", RTR6)
        self.ip("tgt", "route", "add", "default", "via", "10.99.2.1")
        self.ip("tgt", "-6", "route", "add", "default", "via", "fd99:2::1")
        # rtr routes nothing through: only the proxy carries cli's traffic.
        for key in ("net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"):
            sh("ip", "netns", "exec", self.names["rtr"], "sysctl", "-qw", key)

    def destroy(self):
        for n in reversed(self.made):
            sh("ip", "netns", "del", n, ok=False)
        self.made = []

    def enter(self, ns):
        return _Inside(self, ns)


class _Inside:
    def __init__(self, nets, ns):
        self.path = "/run/netns/" + nets.names[ns]

    def __enter__(self):
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            _setns(fd)
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            _setns(self.home)
        finally:
            os.close(self.home)




def make():
    """The namespaces, created; pytest.fail (never a skip) where they cannot
    be: CI runs as root."""
    n = Netns()
    try:
        n.create()
    except (RuntimeError, OSError) as e:
        n.destroy()
        pytest.fail("cannot create the network namespaces ss-redir is tested in "
                    "(root and iproute2 are needed): %s" % e, pytrace=False)
    return n


def policy_routing(n):
    """TPROXY's half outside nftables: marked packets are delivered in rtr."""
    n.ip("rtr", "rule", "add", "fwmark", "1", "lookup", "100")
    n.ip("rtr", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100")
    n.ip("rtr", "-6", "rule", "add", "fwmark", "1", "lookup", "100")
    n.ip("rtr", "-6", "route", "add", "local", "::/0", "dev", "lo", "table", "100")


def redirect_rules(port):
    return """
table inet ssredir
delete table inet ssredir
table inet ssredir {
    chain pre {
        type nat hook prerouting priority dstnat;
        iifname "r0" ip daddr 10.99.2.0/24 meta l4proto tcp redirect to :%d
        iifname "r0" ip6 daddr fd99:2::/64 meta l4proto tcp redirect to :%d
    }
}
""" % (port, port)


def tproxy_rules(port, l4="{ tcp, udp }"):
    return """
table inet ssredir
delete table inet ssredir
table inet ssredir {
    chain pre {
        type filter hook prerouting priority mangle;
        iifname "r0" ip daddr 10.99.2.0/24 meta l4proto %s tproxy ip to :%d meta mark set 1 accept
        iifname "r0" ip6 daddr fd99:2::/64 meta l4proto %s tproxy ip6 to :%d meta mark set 1 accept
    }
}
""" % (l4, port, l4, port)
