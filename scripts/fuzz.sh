#!/bin/sh
# SPDX-License-Identifier: MIT
# The long fuzz campaign: every libFuzzer target of a fuzz build, for SECONDS
# or RUNS inputs each, whichever ends first, over a corpus under DIR that
# starts as a copy of its seeds and is kept between campaigns. Findings
# (crash-*, leak-*, timeout-*, oom-*) go to DIR/<target>/artifacts, the
# output to DIR/<target>/log. JOBS targets run at once (each on one core).
# Ends with a table: target, runs, time, findings; exits 1 when any target
# found something or failed to run.
# One input that runs longer than FUZZ_TIMEOUT seconds (10) counts as a hang;
# on a machine that other work can stall for seconds, raise it.
# Usage: fuzz.sh BUILD DIR [SECONDS] [RUNS] [JOBS]   (`make fuzz` runs it)
set -u
build=$1 dir=$2 secs=${3:-3600} runs=${4:-10000000} jobs=${5:-1}
timeout=${FUZZ_TIMEOUT:-10}
src=$(cd "$(dirname "$0")/../tests/fuzz" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
table=$dir/summary.txt

# One target: its row of the table in $dir/<target>/row.
run_one() {
	bin=$1
	name=$(basename "$bin")
	out=$dir/$name
	mkdir -p "$out/corpus" "$out/artifacts"
	rm -f "$out/row"
	cp -n "$src/corpus/$name"/* "$out/corpus/" 2>/dev/null
	# libFuzzer's own exit code for a finding is 77, the one a target
	# that cannot run here uses: findings exit 1.
	set -- -max_total_time="$secs" -runs="$runs" -timeout="$timeout" -rss_limit_mb=2048 \
		-error_exitcode=1 -timeout_exitcode=1 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/"
	[ -f "$src/dict/$name.dict" ] && set -- "$@" -dict="$src/dict/$name.dict"
	echo "$name: up to $secs s or $runs runs, log in $out/log"
	start=$(date +%s)
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$bin" "$@" "$out/corpus" >"$out/log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
	found=$(find "$out/artifacts" -type f | wc -l)
	if [ "$rc" -eq 77 ]; then
		found="skipped: $(grep -m 1 SKIPPED "$out/log" | cut -c1-60)"
	elif [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
		# It did not run: say so.
		found="failed: $(grep -m 1 -v '^INFO' "$out/log" | cut -c1-60)"
	fi
	printf '%-28s %12s %9s %9s\n' "$name" "${done_runs:-?}" "$took" "$found" >"$out/row"
}

targets=""
for bin in "$build"/tests/fuzz/fuzz_*; do
	[ -x "$bin" ] && targets="$targets $(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
done

# JOBS lanes, each taking every JOBS-th target.
lane=0
while [ "$lane" -lt "$jobs" ]; do
	(
		i=0
		for bin in $targets; do
			[ $((i % jobs)) -eq "$lane" ] && run_one "$bin"
			i=$((i + 1))
		done
	) &
	lane=$((lane + 1))
done
wait
status=0

printf '%-28s %12s %9s %9s\n' target runs seconds findings >"$table"
for bin in $targets; do
	row=$dir/$(basename "$bin")/row
	if [ -f "$row" ]; then
		cat "$row" >>"$table"
	else
		printf '%-28s %12s %9s %9s\n' "$(basename "$bin")" "?" "?" "no result" >>"$table"
		status=1
	fi
done
echo
cat "$table"
# Any finding, or a target that failed to run, fails the campaign.
awk 'NR > 1 && $4 != "0" && $4 != "skipped:" { bad = 1 } END { exit bad }' "$table" || status=1
exit $status
