#!/bin/bash
# The blktests lane: blktests' nvme tests, with nvme_trtype=tcp, against the kernel's nvmet-tcp and against
# ernicd, in one QEMU guest (TCG, no network device); prints a table test | nvmet-tcp | ernicd with the reason for
# every test that did not pass.
#
# Usage: ci/blktests/run.sh [TEST...]      TEST as nvme/004, or "nvme" for the whole group (the default)
# Env:   BLKTESTS=DIR   an upstream blktests checkout (default ../shared/blktests beside the repository)
#        BLKTESTS_MISSING=skip  with no checkout, say so and exit 0 (the nightly's choice); otherwise exit 1
#        BLKT_TIMEOUT=SECONDS  QEMU's wall-clock limit (default: 240 + 150 per test and target, 90 min per target
#                       for "nvme": nvme/002-031 alone took 37 min on ernicd and 17 on nvmet-tcp under TCG)
#        BLKT_PER_TEST=SECONDS  the guest's limit for one test on one target (default 900)
#        BLKT_SILENCE_S=SECONDS  QEMU is stopped once its console has been silent that long (default 300; 0:
#                       never): the guest prints a line a minute while a test runs, so that only a guest whose
#                       kernel hung whole is silent that long
#        BLKT_GATE=1    exit 1 if a test that passes on nvmet-tcp does not pass on ernicd, except those that
#                       cannot pass against any external target (see EXTERNAL_CANNOT below)
#        BLKT_TARGETS=nvmet|ernicd  one target per boot (default both in one boot): the whole group in two runs
#                       of half the time each. A one-target run logs to console.<target>.log and its table takes
#                       the other target's column from console.<other>.log when there is one (it says so).
#        BLKT_TABLE_WITH="LOG..."  console logs of earlier boots whose rows join the table (a group run in parts)
# Out:   build/blktests/console.log (console.<target>.log), build/blktests/table.txt
set -euo pipefail

die() { echo "blktests: $*" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${BLKT_OUT:-$ROOT/build/blktests}
export BLKT_OUT=$OUT
SRC=${BLKTESTS:-$ROOT/../shared/blktests}
# shellcheck source=ci/console.sh
. "$ROOT/ci/console.sh"

# Tests no external target can pass as written (blktests 613b837), each with why. They are reported, never gated.
declare -A EXTERNAL_CANNOT=(
	[nvme/030]="adds subsystems and hosts in nvmet's configfs to watch the discovery generation counter (blktests marks it _require_kernel_nvme_target)"
	[nvme/048]="reads nvmet's configfs attr_qid_max to change the queue count"
	[nvme/051]="enables and disables namespaces through nvmet's configfs"
	[nvme/057]="sets ANA states through nvmet's configfs"
	[nvme/058]="remaps namespaces through nvmet's configfs"
)
# Tests the whole-group run leaves out, each with why (named on the command line they still run). They get a row.
# Device tests (test_device()) run only on a TEST_DEVS device, which the guest has none of; there `./check` of one
# (nvme/032, nvme/033) did not return, and timeout -k could not end it.
declare -A LEFT_OUT=()
# Features ernicd does not have; a test needing one is listed with it.
declare -A ERNICD_LACKS=(
	[nvme/041]="DH-HMAC-CHAP" [nvme/042]="DH-HMAC-CHAP" [nvme/043]="DH-HMAC-CHAP" [nvme/044]="DH-HMAC-CHAP"
	[nvme/045]="DH-HMAC-CHAP" [nvme/062]="TLS" [nvme/063]="DH-HMAC-CHAP and TLS"
)

if [ ! -x "$SRC/check" ]; then
	if [ "${BLKTESTS_MISSING:-}" = skip ]; then
		echo "blktests: SKIP: no blktests checkout at $SRC (set BLKTESTS=DIR)"
		exit 0
	fi
	die "no blktests checkout at $SRC (set BLKTESTS=DIR to an upstream blktests tree)"
fi
SRC=$(cd "$SRC" && pwd)
[ $# -gt 0 ] || set -- nvme
for t in "$@"; do
	[[ $t = nvme || $t =~ ^nvme/[0-9]{3}$ ]] || die "a test is nvme or nvme/NNN (got '$t')"
	[ "$t" = nvme ] || [ -f "$SRC/tests/$t" ] || die "no test $t in $SRC"
done
if [ "$*" = nvme ]; then
	set --
	for f in "$SRC"/tests/nvme/[0-9][0-9][0-9]; do
		if grep -q '^test_device()' "$f"; then
			LEFT_OUT[nvme/${f##*/}]="a device test: needs a TEST_DEVS device, which the guest has none of"
		else
			set -- "$@" "nvme/${f##*/}"
		fi
	done
	WHOLE=1
else
	WHOLE=0
fi
TESTS=$(IFS=,; echo "$*")
TARGETS=${BLKT_TARGETS:-nvmet,ernicd}
case "$TARGETS" in
nvmet,ernicd) LOG=$OUT/console.log; OTHER_LOG= ;;
nvmet) LOG=$OUT/console.nvmet.log; OTHER_LOG=$OUT/console.ernicd.log ;;
ernicd) LOG=$OUT/console.ernicd.log; OTHER_LOG=$OUT/console.nvmet.log ;;
*) die "BLKT_TARGETS is nvmet, ernicd or nvmet,ernicd (got '$TARGETS')" ;;
esac
NTARGETS=$(echo "$TARGETS" | tr , '\n' | wc -l)
NTESTS=$#
for f in ${BLKT_TABLE_WITH:-}; do
	[ -s "$f" ] || die "BLKT_TABLE_WITH: no log $f"
done
TIMEOUT=${BLKT_TIMEOUT:-$([ "$WHOLE" = 1 ] && echo $((5400 * NTARGETS)) || echo $((240 + 150 * NTARGETS * NTESTS)))}
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "blktests: BLKT_TIMEOUT must be a whole number of seconds, not '$TIMEOUT'" >&2; exit 2; }
FOLLOW_SILENCE_S=${BLKT_SILENCE_S:-300}
[[ $FOLLOW_SILENCE_S =~ ^[0-9]+$ ]] || { echo "blktests: BLKT_SILENCE_S must be a whole number of seconds, not '$FOLLOW_SILENCE_S'" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || die "missing qemu-system-x86_64 (run: ci/deps.sh lane blktests)"

"$HERE/build-guest.sh" "$SRC" || die "building the guest failed"

echo "blktests: $NTESTS test(s) on $TARGETS under QEMU (TCG), limit ${TIMEOUT}s"
# As the lane: TCG only, always under timeout; 2 GiB for the RAM namespaces and the xfs results disk. The log is
# written a line at a time, to be followed while the guest runs.
set +e
follow_console "$OUT/console.raw" timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -M pc -m 2G -smp 2 \
	-nic none -display none -nodefaults -no-reboot -serial "file:$OUT/console.raw" \
	-kernel "$OUT/vmlinux" -initrd "$OUT/initramfs.cpio" \
	-append "console=ttyS0 panic=-1 loglevel=3 cryptomgr.notests blkt.tests=$TESTS blkt.targets=$TARGETS blkt.timeout=${BLKT_PER_TEST:-900}" \
	>"$LOG"
QRC=$?
set -e
case $QRC in
124 | 137) echo "blktests: QEMU killed after ${TIMEOUT}s" ;;
143) echo "blktests: QEMU stopped: the guest printed nothing for ${FOLLOW_SILENCE_S}s" ;;
esac
grep -q '^BLKT-DONE' "$LOG" || echo "blktests: the guest did not finish (see $LOG)"

# The table, from the guest's BLKT lines: status per target, and the reason for each that did not pass.
TABLE_LOGS=("$LOG")
for f in ${BLKT_TABLE_WITH:-}; do
	echo "blktests: rows of an earlier boot from $f ($(date -r "$f" -u '+%F %H:%M UTC'))"
	TABLE_LOGS+=("$f")
done
if [ "$WHOLE" = 1 ]; then
	for t in "${!LEFT_OUT[@]}"; do
		printf 'BLKT|nvmet|%s|left out|%s\nBLKT|ernicd|%s|left out|%s\n' "$t" "${LEFT_OUT[$t]}" "$t" "${LEFT_OUT[$t]}"
	done >"$OUT/left-out.txt"
	TABLE_LOGS+=("$OUT/left-out.txt")
fi
if [ -n "$OTHER_LOG" ] && [ -s "$OTHER_LOG" ]; then
	echo "blktests: the other target's column from $OTHER_LOG ($(date -r "$OTHER_LOG" -u '+%F %H:%M UTC'))"
	TABLE_LOGS+=("$OTHER_LOG")
fi
awk -F'|' -v lacks="$(for k in "${!ERNICD_LACKS[@]}"; do printf '%s=%s;' "$k" "${ERNICD_LACKS[$k]}"; done)" \
	-v cannot="$(for k in "${!EXTERNAL_CANNOT[@]}"; do printf '%s=%s;' "$k" "${EXTERNAL_CANNOT[$k]}"; done)" '
	BEGIN {
		n = split(lacks, a, ";"); for (i = 1; i <= n; i++) if (split(a[i], kv, "=") == 2) lack[kv[1]] = kv[2]
		n = split(cannot, a, ";"); for (i = 1; i <= n; i++) if (split(a[i], kv, "=") == 2) cant[kv[1]] = kv[2]
	}
	# The first row of a test and target wins: this boot'"'"'s log comes first, earlier boots'"'"' after it.
	$1 == "BLKT" {
		if (!($3 in seen)) { seen[$3] = 1; order[++nt] = $3 }
		if (!(($2, $3) in st)) { st[$2, $3] = $4; why[$2, $3] = $5 }
	}
	function cell(tg, t) { return ((tg, t) in st) ? st[tg, t] : "missing" }
	END {
		for (i = 2; i <= nt; i++) # by test name, whichever log a row came from
			for (j = i; j > 1 && order[j - 1] > order[j]; j--) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
		printf "%-9s | %-9s | %-9s | %s\n", "test", "nvmet-tcp", "ernicd", "reason"
		printf "%-9s-|-%-9s-|-%-9s-|-%s\n", "---------", "---------", "---------", "------"
		for (i = 1; i <= nt; i++) {
			t = order[i]; r = ""
			if (cell("nvmet", t) == "left out") r = "left out: " why["nvmet", t]
			else if (cell("nvmet", t) != "pass" && why["nvmet", t] != "") r = r "nvmet-tcp: " why["nvmet", t]
			if (cell("ernicd", t) != "pass" && cell("ernicd", t) != "left out") {
				w = why["ernicd", t]
				if (t in cant) w = "writes nvmet configfs: " cant[t] (w != "" ? " (" w ")" : "")
				else if (t in lack) w = "needs " lack[t] (w != "" ? " (" w ")" : "")
				if (w != "") r = r (r != "" ? "; " : "") "ernicd: " w
			}
			printf "%-9s | %-9s | %-9s | %s\n", t, cell("nvmet", t), cell("ernicd", t), r
			if (cell("nvmet", t) == "pass") np_n++
			if (cell("ernicd", t) == "pass") np_e++
			if (cell("nvmet", t) == "pass" && cell("ernicd", t) != "pass" && !(t in cant)) gate[++ng] = t
		}
		printf "passed: nvmet-tcp %d, ernicd %d of %d\n", np_n, np_e, nt
		for (i = 1; i <= ng; i++) printf "GATE %s\n", gate[i]
	}' "${TABLE_LOGS[@]}" >"$OUT/table.txt"
grep -v '^GATE ' "$OUT/table.txt"

if grep -q '^GATE ' "$OUT/table.txt"; then
	echo "blktests: passes on nvmet-tcp, not on ernicd: $(awk '/^GATE / { printf "%s ", $2 }' "$OUT/table.txt")"
	[ "${BLKT_GATE:-0}" = 1 ] && exit 1
fi
# With the gate or without, a guest that did not finish, or could run nothing, is no result.
grep -q '^BLKT-DONE' "$LOG" || exit 1
if [ "${BLKT_GATE:-0}" = 1 ]; then
	grep -q '^passed: nvmet-tcp 0,' "$OUT/table.txt" && { echo "blktests: nothing passed on nvmet-tcp"; exit 1; }
fi
grep -q ' of 0$' "$OUT/table.txt" && { echo "blktests: no test ran"; exit 1; }
exit 0
