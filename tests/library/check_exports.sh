#!/bin/sh
# SPDX-License-Identifier: MIT
# check_exports.sh LIB HEADER: the shared library exports exactly the
# functions HEADER declares with SS_API, no more (an internal symbol that
# leaked) and no fewer (a declared function that is not there).
set -eu
lib=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u >"$tmp/exported"
# Prototypes may wrap: join the header into one line, then take the name
# before the "(" of each SS_API declaration.
grep -v '^[[:space:]]*#' "$header" | tr '\n' ' ' | grep -o 'SS_API[^;(]*(' | sed 's/($//; s/.*[ *]//' |
	sort -u >"$tmp/declared"

if [ ! -s "$tmp/declared" ]; then
	echo "no SS_API declaration found in $header" >&2
	exit 1
fi
status=0
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$extra" ]; then
	echo "exported by $lib but not declared in $header:" $extra >&2
	status=1
fi
if [ -n "$missing" ]; then
	echo "declared in $header but not exported by $lib:" $missing >&2
	status=1
fi
[ $status -eq 0 ] && echo "$(wc -l <"$tmp/declared") functions exported, as declared"
exit $status
