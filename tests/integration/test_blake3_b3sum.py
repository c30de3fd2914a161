# SPDX-License-Identifier: MIT
"""ss_blake3 against Debian's b3sum (the BLAKE3 team's own implementation):
ss_b3 (tests/tools/ss_b3.c) takes b3sum's options, so both run on the same
files with the same arguments and must print the same lines."""

import os
import random
import shutil
import subprocess

import pytest

import sslib

SEED = 20191227
SIP022_CONTEXT = "shadowsocks 2022 session subkey"
BATCH = 400  # files per command line


def find_ss_b3():
    """$SS_B3, else ss_b3 where the build puts it under $SS_BIN_DIR."""
    if os.environ.get("SS_B3"):
        return os.environ["SS_B3"]
    d = sslib.bin_dir()
    for rel in ("tests/ss_b3", "ss_b3", "tests/tools/ss_b3"):
        path = os.path.join(d, rel)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise sslib.SetupError("no ss_b3 under %s (tests/ss_b3): build the ss_b3 target" % d)


@pytest.fixture(scope="module")
def tools():
    try:
        ours = find_ss_b3()
    except sslib.SetupError as e:
        pytest.fail("cannot run: %s" % e, pytrace=False)
    theirs = shutil.which("b3sum")
    if not theirs:
        pytest.fail("b3sum is not installed (scripts/deps.sh installs it)", pytrace=False)
    return ours, theirs


def lengths():
    """Every length up to a chunk and a bit, the lengths around each 64-byte
    block boundary up to 20000, and random ones in between."""
    rng = random.Random(SEED)
    s = set(range(0, 1100))
    for k in range(1, 20000 // 64 + 1):
        s.update((k * 64 - 1, k * 64, k * 64 + 1))
    s.update(rng.randrange(0, 20001) for _ in range(300))
    s.add(20000)
    return sorted(n for n in s if n <= 20000)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(length, path) for each length: prefixes of one random buffer."""
    d = tmp_path_factory.mktemp("b3")
    data = random.Random(SEED).randbytes(20000)
    out = []
    for n in lengths():
        path = d / ("in-%05d" % n)
        path.write_bytes(data[:n])
        out.append((n, str(path)))
    return out


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("b3big")
    rng = random.Random(SEED + 1)
    out = []
    for n in (2**20 + 1, 2 * 2**20, 3 * 2**20 - 1):
        path = d / ("big-%d" % n)
        path.write_bytes(rng.randbytes(n))
        out.append((n, str(path)))
    return out


def run(argv, stdin=b""):
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=sslib.T(120))
    assert p.returncode == 0, "%s: exit %d: %s" % (argv[0], p.returncode, p.stderr.decode())
    return p.stdout.decode().splitlines()


def compare(tools, files, args, stdin=b"", ours_extra=()):
    """Runs both tools over files in batches; asserts equal lines, naming the
    first input length that differs."""
    ours, theirs = tools
    for i in range(0, len(files), BATCH):
        batch = files[i:i + BATCH]
        paths = [p for _, p in batch]
        want = run([theirs, "--no-names"] + args + paths, stdin)
        got = run([ours] + list(ours_extra) + args + paths, stdin)
        assert len(want) == len(batch) and len(got) == len(batch)
        for (n, _), w, g in zip(batch, want, got):
            assert g == w, "input length %d, args %s" % (n, args)


def key():
    return random.Random(SEED + 2).randbytes(32)


@pytest.mark.parametrize("args", [[], ["--length", "131"]], ids=["32", "131"])
def test_hash(tools, files, args):
    compare(tools, files, args)


@pytest.mark.parametrize("args", [[], ["--length", "131"]], ids=["32", "131"])
def test_keyed(tools, files, args):
    compare(tools, files, ["--keyed"] + args, stdin=key())


@pytest.mark.parametrize("context", ["BLAKE3 2019-12-27 16:29:52 test vectors context",
                                     SIP022_CONTEXT, "x"])
def test_derive_key(tools, files, context):
    compare(tools, files, ["--derive-key", context, "--length", "131"])


@pytest.mark.parametrize("length", [0, 1, 31, 33, 63, 64, 65, 1000, 4097])
def test_output_lengths(tools, files, length):
    sample = [f for f in files if f[0] in (0, 1, 64, 1024, 1025, 2049, 20000)]
    compare(tools, sample, ["--length", str(length)])
    compare(tools, sample, ["--keyed", "--length", str(length)], stdin=key())


@pytest.mark.parametrize("piece", [1, 7, 63, 65, 1023, 1025])
def test_update_pieces(tools, files, piece):
    """ss_b3 feeds the hasher piece bytes per update; b3sum is unchanged."""
    sample = [f for f in files if f[0] % 7 == 0 or f[0] % 64 in (0, 1, 63)]
    compare(tools, sample, ["--length", "131"], ours_extra=["--piece", str(piece)])


@pytest.mark.parametrize("args", [[], ["--length", "131"], ["--derive-key", SIP022_CONTEXT],
                                  ["--keyed"]], ids=["hash", "131", "derive", "keyed"])
def test_megabytes(tools, big_files, args):
    compare(tools, big_files, args, stdin=key() if "--keyed" in args else b"")


def test_megabytes_in_pieces(tools, big_files):
    compare(tools, big_files, ["--length", "131"], ours_extra=["--piece", "100003"])


def test_stdin(tools, big_files):
    ours, theirs = tools
    data = open(big_files[0][1], "rb").read()
    for args in ([], ["--length", "131"], ["--derive-key", SIP022_CONTEXT]):
        assert run([ours] + args, data) == run([theirs, "--no-names"] + args, data)
