#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the Debian packages from a copy of the source tree, so that neither
# the build output nor ../*.deb lands in or beside the checkout.
# Usage: scripts/build-deb.sh OUTDIR   (the .deb files end up in OUTDIR)
set -e
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
rm -rf "$out/src"
mkdir "$out/src"
# The tracked files plus new ones not ignored: what the next commit would hold.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" -cf - --no-recursion --ignore-failed-read --null -T - |
		tar -xf - -C "$out/src"
else
	tar -C "$src" -cf - --exclude=./.git --exclude='./build*' --exclude=__pycache__ . |
		tar -xf - -C "$out/src"
fi
cd "$out/src"
DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" dpkg-buildpackage -us -uc -b
