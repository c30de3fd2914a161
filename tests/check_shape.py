#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The shape of src/, as docs/architecture.md describes it; fails on the first drift:

- no .c file over 900 lines, no function over 120 lines;
- no file under src/relay/ includes a crypto/ header (the relay sees codecs through codec.h);
- the generic core (pump.c, conn.h) knows no front end: no mention of HTTP;
- each ss-local front end names no other one.

Run as: check_shape.py SOURCE_DIR. Standard library only; works without git.
"""

import os
import re
import sys

FILE_MAX = 900
FUNCTION_MAX = 120
# The ss-local front ends and the words that name each one.
FRONT_ENDS = {
    # The proxy logins (proto/socks5_auth.h) serve SOCKS5 and HTTP alike.
    "relay/hs_socks5.c": re.compile(r"socks5(?!_login|_field_max|_auth\.h)", re.I),
    "relay/hs_socks4.c": re.compile(r"socks4", re.I),
    "relay/hs_http.c": re.compile(r"http", re.I),
}


def functions(lines):
    """(name, first line, length) of each top-level function body: from a line that is '{'
    alone at column 0 to the next '}' at column 0 (the project's style)."""
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            j = i - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j])
            start = (m.group(1) if m else "?", i)
        elif line.startswith("}") and start is not None:
            yield start[0], start[1] + 1, i - start[1] + 1
            start = None


def main(root):
    src = os.path.join(root, "src")
    problems = []
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            if not name.endswith((".c", ".h")):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = text.split("\n")
            if name.endswith(".c") and len(lines) - 1 > FILE_MAX:
                problems.append(f"src/{rel}: {len(lines) - 1} lines (at most {FILE_MAX})")
            for fn, first, n in functions(lines):
                if n > FUNCTION_MAX:
                    problems.append(f"src/{rel}:{first}: {fn} is {n} lines "
                                    f"(at most {FUNCTION_MAX})")
            if rel.startswith("relay/"):
                for m in re.finditer(r'^#\s*include\s+"(crypto/[^"]+)"', text, re.M):
                    problems.append(f"src/{rel}: includes {m.group(1)}")
            if rel in ("relay/pump.c", "relay/conn.h") and re.search(r"http", text, re.I):
                problems.append(f"src/{rel}: mentions HTTP, a front end's business")
            if rel in FRONT_ENDS:
                for other, word in FRONT_ENDS.items():
                    if other != rel and word.search(text):
                        problems.append(f"src/{rel}: names another front end "
                                        f"({word.pattern})")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) with the shape of src/")
        return 1
    print("src/ keeps its shape")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_shape.py SOURCE_DIR")
    sys.exit(main(sys.argv[1]))
