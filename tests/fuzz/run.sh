#!/bin/sh
# SPDX-License-Identifier: MIT
# One short fuzz run, for ctest: TARGET over a scratch copy of its seed
# corpus (so the tree is never written) for SECONDS, with its dictionary
# when it has one. libFuzzer exits non-zero on a crash, a leak, a timeout,
# an out-of-memory or a sanitizer report, and so does this; the input that
# did it is left in SCRATCH/artifacts.
# Usage: run.sh TARGET SOURCE_DIR SCRATCH SECONDS
set -eu
bin=$1 src=$2 scratch=$3 secs=$4
name=$(basename "$bin")
seeds=$src/corpus/$name
if [ -z "$(ls -A "$seeds" 2>/dev/null)" ]; then
	echo "$name: no seed corpus in $seeds" >&2
	exit 1
fi
rm -rf "$scratch"
mkdir -p "$scratch/corpus" "$scratch/artifacts"
# Absolute paths: a target may change its working directory.
src=$(cd "$src" && pwd)
scratch=$(cd "$scratch" && pwd)
seeds=$src/corpus/$name
cp "$seeds"/* "$scratch/corpus/"
# libFuzzer's own exit code for a finding is 77, which ctest takes for a
# skip (SKIP_RETURN_CODE, for a target the CPU cannot run): use 1.
set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$scratch/artifacts/"
if [ -f "$src/dict/$name.dict" ]; then
	set -- "$@" -dict="$src/dict/$name.dict"
fi
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exec "$bin" "$@" "$scratch/corpus"
