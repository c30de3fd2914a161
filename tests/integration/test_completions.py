# SPDX-License-Identifier: MIT
"""-h, the man pages and the bash, zsh and fish completions name the same
options, per program, in both directions (-h and the parser are both
built from the settings table, src/config/config_table.c, and
tests/unit/test_config_usage.c holds them to each other); the
completions offer every method the program has and the SIP003 plugins
found in PATH."""

import os
import re
import stat
import subprocess

import pytest

PROGS = ("ss-server", "ss-local", "ss-tunnel", "ss-redir", "ss-manager")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BASH = os.path.join(ROOT, "completions", "bash")
ZSH = os.path.join(ROOT, "completions", "zsh")
FISH = os.path.join(ROOT, "completions", "fish", "shadowsocks-c.fish")
OPTION = r"(--[a-z][a-z-]*|-[a-zA-Z0-9])"


def run(argv, **kw):
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30, **kw)
    assert res.returncode == 0, "%s: %s" % (argv[:2], res.stderr)
    return res.stdout


def help_options(ss, prog):
    rc, p = ss.run(prog, ["-h"])
    assert rc == 0, p.describe()
    opts = set(re.findall(r"(?<![\w-])" + OPTION + r"(?![\w-])", p.stdout() + p.stderr()))
    assert "-s" in opts and "--version" in opts, p.stdout()
    assert ("--check" in opts) == (prog != "ss-manager"), p.stdout()
    return opts


def program_methods(ss, prog):
    """The methods --version lists, which is every one the program takes."""
    rc, p = ss.run(prog, ["--version"])
    assert rc == 0, p.describe()
    table = p.stdout().split("what seals each method on this CPU:\n")[1].split("\nlibraries:")[0]
    names = {line.split()[0] for line in table.splitlines() if line.startswith("  ")}
    assert {"aes-256-gcm", "2022-blake3-aes-128-gcm", "none"} <= names, p.stdout()
    return names


def man_options(prog):
    """Options in the headings (.TP) of the man page's OPTIONS section."""
    with open(os.path.join(ROOT, "docs", prog + ".1")) as f:
        text = f.read()
    section = text.split("\n.SH OPTIONS\n")[1].split("\n.SH ")[0]
    lines = section.splitlines()
    headings = [lines[i + 1] for i, line in enumerate(lines[:-1]) if line == ".TP"]
    opts = set()
    for h in headings:
        opts |= {o.replace("\\-", "-") for o in re.findall(r"\\fB((?:\\-){1,2}[\w\\-]+)\\fR", h)}
    return opts


def bash_complete(prog, words, env=None, cwd=None):
    """What completions/bash offers for the words after prog."""
    script = ("source %s; COMP_WORDS=(%s %s); COMP_CWORD=%d; _ss_complete %s; "
              "printf '%%s\\n' \"${COMPREPLY[@]}\"" % (
                  BASH, prog, " ".join(w or '""' for w in words), len(words), prog))
    return set(run(["bash", "--norc", "-c", script], env=env, cwd=cwd).split())


def fish_complete(prog, line, env=None, cwd=None):
    out = run(["fish", "--no-config", "-c", "source %s; complete -C '%s %s'" % (FISH, prog, line)],
              env=env, cwd=cwd)
    return {row.split("\t")[0] for row in out.splitlines() if row}


def zsh_spec():
    with open(ZSH) as f:
        return f.read()


def zsh_options(prog):
    """Options the zsh completion gives _arguments for prog: the common
    specs and those of prog's branch of the case."""
    text = zsh_spec()
    common = text.split("\ncommon=(\n")[1].split("\n)\n")[0]
    branches = text.split("\ncase $service in\n")[1].split("\nesac")[0]
    branch = re.search(r"(?ms)^%s\) (.*?);;" % re.escape(prog), branches) or \
        re.search(r"(?ms)^\*\) (.*?);;", branches)
    # ss-manager's branch names its options itself, without the common ones.
    spec = (common + "\n" if "$common" in branch.group(1) else "") + branch.group(1)
    return set(re.findall(r"['\"{,*]" + OPTION + r"(?=[\[',}])", spec))


@pytest.mark.parametrize("prog", PROGS)
def test_help_man_page_and_completions_agree(ss, prog):
    """-h, the man page, bash, zsh and fish name exactly the same options
    for prog; each program's own (-L, -T, --server-url, --print-url) only where
    they belong."""
    opts = help_options(ss, prog)
    others = {
        "man page": man_options(prog),
        "completions/bash": bash_complete(prog, ["-"]),
        "completions/zsh": zsh_options(prog),
        "completions/fish": fish_complete(prog, "-"),
    }
    for where, got in others.items():
        assert not opts - got, "%s: %s lacks %s" % (prog, where, sorted(opts - got))
        assert not got - opts, "%s: %s names %s, which -h does not" % (
            prog, where, sorted(got - opts))
    assert ("--print-url" in opts) == (prog == "ss-server")
    assert ("--server-url" in opts) == (prog not in ("ss-server", "ss-manager"))
    assert ("--state" in opts) == ("--executable" in opts) == (prog == "ss-manager")
    assert ("-L" in opts) == (prog == "ss-tunnel")
    assert ("-T" in opts) == ("--tcp-tproxy" in opts) == (prog == "ss-redir")


def test_zsh_completion_parses():
    run(["zsh", "-n", ZSH])


@pytest.mark.parametrize("prog", PROGS)
def test_completions_offer_every_method(ss, prog):
    methods = program_methods(ss, prog)
    zsh = set(re.search(r"(?s)\nmethods=\((.*?)\)", zsh_spec()).group(1).split())
    for where, got in (("bash", bash_complete(prog, ["-m", ""])),
                       ("fish", fish_complete(prog, "-m ")), ("zsh", zsh)):
        assert got == methods, "%s: %s offers %s, the program has %s" % (
            prog, where, sorted(got), sorted(methods))


@pytest.fixture
def plugin_path(tmp_path):
    """A PATH of SIP003 plugins by their usual names, and what must not be
    offered: a file that is not executable, a directory, another program.
    Returns (env, empty working directory, the plugins to offer)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    offer = {"obfs-local", "ss-v2ray-plugin", "v2ray-plugin", "kcptun-client", "ck-client"}
    for name in offer | {"not-executable-plugin", "curl"}:
        (bindir / name).write_text("#!/bin/sh\n")
        if name != "not-executable-plugin":
            (bindir / name).chmod(stat.S_IRWXU)
    (bindir / "dir-plugin").mkdir()
    empty = tmp_path / "cwd"
    empty.mkdir()
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % bindir)
    return env, str(empty), offer, str(bindir)


def test_completions_offer_plugins_in_path(plugin_path):
    env, cwd, offer, bindir = plugin_path
    mine = lambda got: {g for g in got if os.path.exists(os.path.join(bindir, g))}
    got = bash_complete("ss-local", ["--plugin", ""], env=env, cwd=cwd)
    assert mine(got) == offer, sorted(got)
    got = fish_complete("ss-server", "--plugin ", env=env, cwd=cwd)
    assert mine(got) == offer, sorted(got)
    # zsh: the glob of the completion, run over the same PATH.
    glob = re.search(r"\n\s*(names=\(.*\))\n", zsh_spec()).group(1)
    out = run(["zsh", "-fc", "path=(%s); %s; print -l $names" % (bindir, glob)], cwd=cwd)
    assert set(out.split()) == offer, out


def test_completions_offer_files_for_paths(tmp_path):
    (tmp_path / "rules.acl").write_text("[bypass_all]\n")
    (tmp_path / "conf.json").write_text("{}")
    for opt, word in (("--acl", "ru"), ("-c", "co")):
        want = {"rules.acl"} if word == "ru" else {"conf.json"}
        assert bash_complete("ss-local", [opt, word], cwd=str(tmp_path)) == want
        assert fish_complete("ss-local", "%s %s" % (opt, word), cwd=str(tmp_path)) == want
