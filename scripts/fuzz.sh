#!/bin/sh
# The long fuzz campaign: every libFuzzer target of a fuzz build in turn, for
# SECONDS or RUNS inputs each, whichever ends first, over a corpus under DIR
# that starts as a copy of its seeds and is kept between campaigns. Findings
# (crash-*, leak-*, timeout-*, oom-*) go to DIR/<target>/artifacts, the
# output to DIR/<target>/log. Ends with a table: target, runs, time,
# findings; exits 1 when any target found something or failed to run.
# Usage: fuzz.sh BUILD DIR [SECONDS] [RUNS]   (`make fuzz` runs it)
set -u
build=$1 dir=$2 secs=${3:-3600} runs=${4:-10000000}
src=$(cd "$(dirname "$0")/../tests/fuzz" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
table=$dir/summary.txt
status=0

printf '%-28s %12s %9s %9s\n' target runs seconds findings >"$table"
for bin in "$build"/tests/fuzz/fuzz_*; do
	[ -x "$bin" ] || continue
	bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
	name=$(basename "$bin")
	out=$dir/$name
	mkdir -p "$out/corpus" "$out/artifacts"
	cp -n "$src/corpus/$name"/* "$out/corpus/" 2>/dev/null
	set -- -max_total_time="$secs" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/"
	[ -f "$src/dict/$name.dict" ] && set -- "$@" -dict="$src/dict/$name.dict"
	echo "$name: up to $secs s or $runs runs, log in $out/log"
	start=$(date +%s)
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$bin" "$@" "$out/corpus" >"$out/log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
	found=$(find "$out/artifacts" -type f | wc -l)
	if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
		# It did not run (e.g. a CPU without what it tests): say so.
		found="failed: $(grep -m 1 -v '^INFO' "$out/log" | cut -c1-60)"
	fi
	[ "$rc" -eq 0 ] || status=1
	printf '%-28s %12s %9s %9s\n' "$name" "${done_runs:-?}" "$took" "$found" >>"$table"
done
echo
cat "$table"
exit $status
