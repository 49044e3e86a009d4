#!/bin/bash
# The /dev/nvme lane: build the guest, boot it under QEMU (TCG, no network device), let its /init run the Linux
# NVMe/TCP initiator against the kernel's nvmet-tcp target (and ernicd when built), and judge by its marker line.
#
# Usage: ci/lane/run.sh
# Env:   LANE_TIMEOUT=SECONDS  QEMU's wall-clock limit (default 300; the guest's own watchdog fires 30 s earlier)
#        LANE_SKIP=nvmet|ernicd  leave one phase out
#        ERNICD=PATH  ernicd binary to put in the guest (default build/ernicd)
# Out:   build/lane/console.log, build/lane/results/<phase>-<job>.json (fio), build/lane/results/summary.txt
# Exit:  0 only if the guest printed "ERNIC-LANE: PASS".
set -euo pipefail

die() { echo "lane: $*" >&2; exit 1; }
START=$(date +%s)
elapsed() { echo "lane: elapsed $(($(date +%s) - START)) s"; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${LANE_OUT:-$ROOT/build/lane}
export LANE_OUT=$OUT
TIMEOUT=${LANE_TIMEOUT:-300}
[ "$TIMEOUT" -ge 60 ] 2>/dev/null || die "LANE_TIMEOUT must be a number of seconds >= 60 (got '$TIMEOUT')"

for c in qemu-system-x86_64 timeout jq; do
	command -v "$c" >/dev/null || die "missing command $c (run: ci/deps.sh lane)"
done

"$HERE/build-guest.sh" || die "building the guest failed"
elapsed

APPEND="console=ttyS0 panic=-1 loglevel=3 cryptomgr.notests ernic.timeout=$((TIMEOUT - 30))"
[ -n "${LANE_SKIP:-}" ] && APPEND="$APPEND ernic.skip=$LANE_SKIP"
LOG=$OUT/console.log
RES=$OUT/results
rm -rf "$RES"
mkdir -p "$RES"

echo "lane: booting $(cat "$OUT/kernel-release") under QEMU (TCG), limit ${TIMEOUT}s"
set +e
# KVM is not usable here (the kernel hangs or QEMU pauses on an emulation failure): TCG, always under timeout.
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -M pc -m 1G -smp 2 \
	-nic none -display none -nodefaults -no-reboot -serial stdio \
	-kernel "$OUT/vmlinux" -initrd "$OUT/initramfs.cpio" -append "$APPEND" \
	</dev/null 2>&1 | tr -d '\r' | tee "$LOG"
QRC=${PIPESTATUS[0]}
set -e
[ "$QRC" -ne 124 ] && [ "$QRC" -ne 137 ] || echo "lane: QEMU killed after ${TIMEOUT}s"

# fio JSON blocks printed between marker lines.
awk -v dir="$RES" '
	/^ERNIC-LANE-JSON-BEGIN / { name = $2; file = dir "/" name ".json"; printf "" > file; next }
	/^ERNIC-LANE-JSON-END /   { if (name != "") close(file); name = ""; next }
	name != ""                { print > file }
' "$LOG"
{
	printf '%-40s %10s %10s %12s %12s\n' job read-iops write-iops read-lat-us write-lat-us
	for f in "$RES"/*.json; do
		[ -e "$f" ] || continue
		if ! jq -e . "$f" >/dev/null 2>&1; then
			echo "lane: $(basename "$f"): not valid JSON (console noise?)" >&2
			continue
		fi
		jq -r --arg n "$(basename "$f" .json)" 'select(.jobs) | .jobs[0] |
			[$n, (.read.iops | floor), (.write.iops | floor),
			 (.read.lat_ns.mean / 1000 | floor), (.write.lat_ns.mean / 1000 | floor)] | @tsv' "$f" |
			awk -F'\t' '{ printf "%-40s %10s %10s %12s %12s\n", $1, $2, $3, $4, $5 }'
	done
	# ernicd against nvmet-tcp, job by job, where both ran.
	for f in "$RES"/ernicd-*.json; do
		[ -e "$f" ] || continue
		job=$(basename "$f" .json)
		job=${job#ernicd-}
		k=$RES/nvmet-$job.json
		[ -e "$k" ] || continue
		jq -r -n --arg j "$job" --slurpfile e "$f" --slurpfile k "$k" '
			def iops(x): x[0].jobs[0] | (.read.iops + .write.iops);
			if iops($k) > 0 then "ratio ernicd/nvmet \($j): \(iops($e) | floor) / \(iops($k) | floor) IOPS = \(iops($e) / iops($k) * 100 | round / 100)"
			else empty end' 2>/dev/null || true
	done
} >"$RES/summary.txt"
cat "$RES/summary.txt"

MARKS=$(grep -cE '^ERNIC-LANE: (PASS|FAIL)' "$LOG" || true)
VERDICT=$(grep -E '^ERNIC-LANE: (PASS|FAIL)' "$LOG" | tail -n 1 || true)
elapsed
if [ "$MARKS" -ne 1 ]; then
	echo "lane: FAIL: expected one marker line, found $MARKS (QEMU exit $QRC); console in $LOG"
	exit 1
fi
echo "lane: ${VERDICT#ERNIC-LANE: } (console: $LOG, results: $RES)"
[ "$VERDICT" = "ERNIC-LANE: PASS" ]
