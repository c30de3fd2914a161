# SPDX-License-Identifier: MIT
"""MemoryDenyWriteExecute=yes in the units forbids mappings both writable and
executable, and making memory executable later. The installed ss-server and
the SIP003 plugins it starts (/bin/sh -c "exec PLUGIN": simple-obfs in C,
v2ray-plugin in Go) are traced here for any such call."""

import os
import re
import signal
import subprocess

import pytest

import sslib

PLUGINS = (("obfs-server", "obfs=http"), ("ss-v2ray-plugin", "server"))


@pytest.mark.parametrize("plugin,opts", PLUGINS)
def test_server_and_plugin_never_map_writable_code(root, root_env, procs, tmp_path, plugin, opts):
    trace = str(tmp_path / "trace")
    exe = os.path.join(root, "usr", "bin", "ss-server")
    p, port = procs.start_listening(
        "/usr/bin/strace",
        lambda port: ["-f", "-qq", "-o", trace, "-e",
                      "trace=execve,mmap,mprotect,pkey_mprotect,shmat", exe,
                      "-s", sslib.LOOPBACK4, "-p", port, "-m", sslib.DEFAULT_METHOD,
                      "-k", sslib.random_password(), "--plugin", plugin,
                      "--plugin-opts", opts],
        env=root_env, name="strace-ss-server")
    # Signal ss-server, strace's child: strace would detach on SIGTERM and
    # leave it running. ss-server stops its plugin and exits, then strace.
    traced = [pid for pid, _ in sslib.children(p.pid)]
    assert len(traced) == 1, traced
    os.kill(traced[0], signal.SIGTERM)
    p.expect_exit = True
    assert p.wait_exit(sslib.T(10)) == 0, p.describe()
    with open(trace) as f:
        lines = f.read().splitlines()
    assert any(re.search(r'execve\("[^"]*%s"' % re.escape(plugin), x) for x in lines), \
        "the plugin was not started:\n" + "\n".join(lines[:40])
    bad = [x for x in lines
           if (re.search(r"\bmmap\(", x) and "PROT_WRITE" in x and "PROT_EXEC" in x)
           or (re.search(r"mprotect\(", x) and "PROT_EXEC" in x)
           or (re.search(r"\bshmat\(", x) and "SHM_EXEC" in x)]
    assert not bad, "writable or late executable mappings:\n" + "\n".join(bad)
