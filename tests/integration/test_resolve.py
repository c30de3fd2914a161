# SPDX-License-Identifier: MIT
"""Names resolved by ss-server: the hosts file is followed while it runs."""

import time

import sslib


def _accepted(server):
    with server.lock:
        return server.accepted


def test_hosts_file_edits_apply_without_restart(ss, tmp_path):
    """A name answered from the hosts file follows an edit of the file
    within about a second, as the C library's lookups would, without a
    restart; a file replaced by rename counts as well."""
    first = sslib.EchoServer(host="127.0.0.1")
    second = sslib.EchoServer(host="127.0.0.2", port=first.port)
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 moving.test\n")
        server = ss.server(env={"SS_HOSTS_FILE": str(hosts)})
        tunnel = ss.tunnel(server, ("moving.test", first.port))

        def goes_to():
            """Which target one more connection reaches: 1 or 2."""
            before = (_accepted(first), _accepted(second))
            sock = sslib.connect(*tunnel.addr)
            try:
                sslib.small_exchange(sock, 300)
            finally:
                sock.close()
            after = (_accepted(first), _accepted(second))
            assert after[0] + after[1] == before[0] + before[1] + 1, (before, after)
            return 1 if after[0] > before[0] else 2

        time.sleep(0.5)  # the start-up probe's connection reaches a target too
        assert goes_to() == 1
        staged = tmp_path / "hosts.new"
        staged.write_text("# moved\n127.0.0.2 moving.test\n")
        staged.rename(hosts)
        time.sleep(1.3)
        assert goes_to() == 2, "the name still went to 127.0.0.1 after the hosts file changed"
        hosts.write_text("127.0.0.1 moving.test\n")
        time.sleep(1.3)
        assert goes_to() == 1, "an edit in place was not seen"
    finally:
        first.close()
        second.close()
