#!/bin/sh
# Run one libFuzzer target: replay every saved crash input as a regression
# test, then fuzz for SECONDS from the committed seeds plus the corpus grown
# so far under WORKDIR, and print one line of executions and coverage.
#
# Usage: emulator/fuzz/run.sh BIN SECONDS WORKDIR SEEDS CRASHES
set -u
bin=$1 secs=$2 work=$3 seeds=$4 crashes=$5
name=$(basename "$bin")
mkdir -p "$work/corpus" "$work/artifacts"

set --
for f in "$crashes"/*; do
	[ -f "$f" ] && set -- "$@" "$f"
done
if [ $# -gt 0 ] && ! "$bin" -runs=1 "$@" >"$work/replay.log" 2>&1; then
	tail -40 "$work/replay.log"
	echo "$name: FAIL: a saved crash input under $crashes crashes again (log: $work/replay.log)"
	exit 1
fi
echo "$name: replayed $# saved crash input(s) from $crashes: pass"

"$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >"$work/fuzz.log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log")
last=$(grep -E '^#[0-9]+.*cov: ' "$work/fuzz.log" | tail -1)
cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
if [ $rc -ne 0 ]; then
	tail -60 "$work/fuzz.log"
	echo "$name: FAIL after ${execs:-?} execs: input saved in $work/artifacts/ (copy it to $crashes/ with the fix)"
	exit 1
fi
echo "$name: ${secs}s, ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?} edges, ft ${ft:-?} features, corpus ${corp:-?} inputs"
