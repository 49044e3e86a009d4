#!/bin/bash
# tcpbench.sh BUILD_DIR [ROUNDS]: ernicd's CPU time per I/O, measured by tcp_bench.
#
# Starts ernicd on a free loopback port pinned to core 0 (taskset), runs
# tcp_bench pinned to core 1 for each case, ROUNDS times interleaved (default
# 3), appends every run to results/tcpbench.csv and prints the median per case.
# TCPBENCH_SECONDS (default 5) is each run's measured time; TCPBENCH_CASES
# overrides the case list ("rw:bs:qd ...").
set -euo pipefail
build=${1:?usage: tcpbench.sh BUILD_DIR [ROUNDS]}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/suites/lib.sh"
csv=${TCPBENCH_CSV:-$root/results/tcpbench.csv}
secs=${TCPBENCH_SECONDS:-5}
cases=${TCPBENCH_CASES:-"randread:4096:32 randwrite:4096:32 randread:4096:1 randwrite:4096:1 randread:131072:32 randwrite:131072:32"}
commit=$(ernic_commit)
case "$rounds" in '' | *[!0-9]* | 0) echo "tcpbench.sh: bad ROUNDS value '$rounds': expected a whole number 1.." >&2; exit 2 ;; esac
ncpu=$(nproc)
pin_t=(); pin_c=()
if [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null; then
	pin_t=(taskset -c 0); pin_c=(taskset -c 1)
else
	echo "tcpbench.sh: fewer than 2 CPUs or no taskset: target and client share CPUs" >&2
fi
mkdir -p "$(dirname "$csv")"
csv_ready "$csv" tcpbench
port=$((20000 + RANDOM % 20000))
log=$(mktemp)
"${pin_t[@]}" "$build/ernicd" --listen "127.0.0.1:$port" --backend nvmeof:size=1G,bs=4096 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log" "$log.runs"' EXIT
# ernicd says so on stderr once its port is open; a loaded machine may take seconds.
for _ in $(seq 300); do
	grep -q "listening on" "$log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
grep -q "listening on" "$log" || { echo "tcpbench.sh: ernicd did not start listening within 30 s:" >&2; cat "$log" >&2; exit 1; }
: >"$log.runs"
for r in $(seq "$rounds"); do
	for c in $cases; do
		IFS=: read -r rw bs qd <<<"$c"
		line=$("${pin_c[@]}" "$build/bench/tcp_bench" --pid "$pid" --port "$port" --rw "$rw" --bs "$bs" --qd "$qd" \
			--seconds "$secs" --csv "$csv" --commit "$commit")
		echo "round $r: $line"
		echo "$rw $bs $qd $(tail -n 1 "$csv" | cut -d, -f8,9)" >>"$log.runs"
	done
done
echo "median of $rounds (commit $commit): case, IOPS, target CPU-us per I/O"
for c in $cases; do
	IFS=: read -r rw bs qd <<<"$c"
	awk -v rw="$rw" -v bs="$bs" -v qd="$qd" 'BEGIN { n = 0 } $1 == rw && $2 == bs && $3 == qd { split($4, f, ","); i[n] = f[1]; u[n] = f[2]; n++ }
		function med(a, n,   k, j, t) { for (k = 0; k < n; k++) for (j = k + 1; j < n; j++) if (a[j] < a[k]) { t = a[k]; a[k] = a[j]; a[j] = t }
			return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2 }
		END { printf "  %-9s bs=%-6s qd=%-3s %9.0f IOPS %7.2f CPU-us/IO\n", rw, bs, qd, med(i, n), med(u, n) }' "$log.runs"
done
