#!/bin/bash
# The /dev/nvme lane: build the guest, boot it under QEMU (TCG, no network device), let its /init run the Linux
# NVMe/TCP initiator against the kernel's nvmet-tcp target (and ernicd when built), and judge by its marker line.
# The guest runs the same suites/run cases on namespace 1 of both targets, round by round in turns (see
# ci/lane/guest-init.sh, paired_rounds), and prints their CSV files on the console; this script takes them back,
# prints ernicd / nvmet-tcp per case (IOPS and mean latency: under TCG only the ratio means anything) and, if the
# lane passed, appends the rows to the results.
#
# Usage: ci/lane/run.sh
# Env:   LANE_TIMEOUT=SECONDS  QEMU's wall-clock limit (default 900; the guest's own watchdog fires 20 s earlier)
#        LANE_SILENCE_S=SECONDS QEMU is stopped once its console has been silent that long (default 300; 0: never)
#        LANE_RUNTIME=SECONDS  per time-based suite case in the guest (default 1)
#        LANE_ROUNDS=N  run the suite cases N times per target in the same guest (default 1; the nightly runs 3):
#                       the ratios are of the medians, and the QEMU limit grows by 300 s per extra round
#        LANE_ERNICD_MDTS=N|nvmet  mdts= of the ernicd the suite cases run against (default nvmet: the MDTS
#                       nvmet-tcp reported in the same guest, 0 = no limit, so both split requests alike; 5 is
#                       ernicd's own default); the ratio table prints both targets' MDTS either way
#        LANE_ERNICD_RDMA_ICD=BYTES|nvmet  --in-capsule-data of the RDMA phase's ernicd (default nvmet: the
#                       param_inline_data_size of the nvmet-rdma port beside it, 4096 unless set; 0 is
#                       ernicd's own default, IOCCSZ 4)
#        LANE_ERNICD_CPUS=LIST|all  ernicd --cpus of that ernicd and the lad phase's (default all: unpinned,
#                       as nvmet-tcp's work is; 1: the guest's last CPU, the default before 2026-12-03)
#        LANE_CASES=SUITE/CASE[,SUITE/CASE]  only these suite cases (default: all of ci/lane/guest-init.sh's)
#        LANE_CPU_SPLIT=1  run the suite cases one suites/run each and log where each vCPU's time went during
#                       each case, and ernicd's CPU ticks (default 0: one suites/run for all, quicker)
#        LANE_PERF=1  also profile each suite case in the guest (perf record -a, 499 Hz; implies LANE_CPU_SPLIT=1,
#                       needs ci/deps.sh perf): which processes and kernel functions the samples fell in, per target
#                       and case, in build/lane/perf.txt (default 0)
#        LANE_PAIRING=round|case  how the targets take turns in a round (default round: each runs the whole list of
#                       cases in turn; case: each case runs on every target before the next one, who goes first
#                       alternating case by case, so a case's figures for the targets are seconds apart)
#        LANE_SQFLOW=on|off  SQ flow control on the guest's NVMe/TCP connects (default on, as a plain nvme connect
#                       leaves it; off: each made by guest-init.sh's connect() but the lad phase's passes
#                       --disable-sqflow, as nvme connect-all does where a discovery log entry offers it,
#                       and both nvmet-tcp's and ernicd's do); the suite rows' backend column then ends ",sqflow=off",
#                       and lane-ratio.csv's sqflow column says "off": series of their own
#        LANE_CPU_MODEL=CPU  QEMU's -cpu for the guest (default max,-erms,-fsrm: copies by quadword; max: by byte,
#                       the default before 2026-12-05)
#        LANE_IDLE=poll|halt  how the guest's idle vCPUs wait (default poll: idle=poll; halt: the kernel's own
#                       HLT, the default before 2026-12-03)
#        LANE_KERNEL_ARGS="ARG..."  more guest kernel arguments, after the lane's own (the last of a key wins:
#                       clocksource=hpet restores the clock the guest picked by itself before 2026-12-03; not
#                       for idle=, where a later idle=halt leaves an earlier idle=poll on: use LANE_IDLE)
#        LANE_SKIP=PHASE[,PHASE]  leave phases out: nvmet, ernicd, faults, lad, rdma, passthru, ctl
#        LANE_CSV_DIR=DIR  where the rows are appended (default results/)
#        ERNICD=PATH  ernicd binary to put in the guest (default build/ernicd)
#        LANE_ERNICD_B=PATH  a second ernicd build (a change under test) to run beside ERNICD in the same guest:
#                       the suite rounds then rotate three targets, and the lane prints ernicd-b / ernicd per case,
#                       paired round by round as against nvmet-tcp. Two builds compared across two boots also
#                       compare the boots (the ratio to nvmet-tcp moved 0.90-1.10 between boots of one build on
#                       2026-12-05); in one guest they share its state. ernicd-b's rows are not appended.
#        LANE_ERNICD_B_OPTS="OPT..."  ernicd-b's options instead of the suite ernicd's (--zero-copy-reads; empty:
#                       none), to compare options of one build: LANE_ERNICD_B=build/ernicd LANE_ERNICD_B_OPTS=
#        ERNIC_COMMIT=ID  the rows' commit column (default: git rev-parse --short=12 HEAD, -dirty if a file
#                       outside results/ is modified)
# Out:   build/lane/console.log, build/lane/results/csv/<phase>/<suite>.csv (the guest's CSV files),
#        build/lane/results/summary.txt, build/lane/ratios.txt; on a pass, rows appended to
#        LANE_CSV_DIR/<suite>.csv (header written once, as suites/run does), LANE_CSV_DIR/lane-ratio.csv
#        (timestamp_utc,commit,case,ernicd_iops,nvmet_iops,ratio,...,paired_ratio,round_ratios) and
#        LANE_CSV_DIR/lane-rtt.csv (the guest's bare loopback TCP round trips, tcp_rtt); the lad phase's raw traces
#        (the guest's outbox disk, build/lane/outbox.img) in build/lane/results/files/lad/<target>/, its tables
#        in build/lane/lad.txt and, on a pass, rows appended to LANE_CSV_DIR/lad.csv (suites/lad/fabric-report).
# Exit:  0 only if the guest printed "ERNIC-LANE: PASS" and its CSV files came back whole; 3 when the guest's
#        kernel died before any verdict (a panic, or QEMU killed with the guest's own watchdog silent); else 1.
set -euo pipefail
# Settings come from the environment (above); an argument is a mistake, not a run of many minutes.
if [ $# -gt 0 ]; then
	sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
	case "$1" in -h | --help) exit 0 ;; *) echo "ci/lane/run.sh: takes no arguments (got '$1'); settings are LANE_* variables" >&2; exit 2 ;; esac
fi

die() { echo "lane: $*" >&2; exit 1; }
START=$(date +%s)
elapsed() { echo "lane: elapsed $(($(date +%s) - START)) s"; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${LANE_OUT:-$ROOT/build/lane}
export LANE_OUT=$OUT
ROUNDS=${LANE_ROUNDS:-1}
[[ $ROUNDS =~ ^[1-9]$ ]] || die "LANE_ROUNDS must be a whole number 1..9 (got '$ROUNDS')"
TIMEOUT=${LANE_TIMEOUT:-$((900 + 300 * (ROUNDS - 1)))}
[ "$TIMEOUT" -ge 60 ] 2>/dev/null || die "LANE_TIMEOUT must be a number of seconds >= 60 (got '$TIMEOUT')"
# A guest silent for 300 s is dead (the longest quiet stretch of a passing lane was 42 s): QEMU is stopped then.
FOLLOW_SILENCE_S=${LANE_SILENCE_S:-300}
[[ $FOLLOW_SILENCE_S =~ ^[0-9]+$ ]] || die "LANE_SILENCE_S must be a whole number of seconds (got '$FOLLOW_SILENCE_S')"
RUNTIME=${LANE_RUNTIME:-1}
[[ $RUNTIME =~ ^[1-9][0-9]*$ ]] || die "LANE_RUNTIME must be a whole number of seconds (got '$RUNTIME')"
CSV_DIR=${LANE_CSV_DIR:-$ROOT/results}
# shellcheck source=suites/lib.sh
. "$ROOT/suites/lib.sh"
# shellcheck source=ci/lane/ratio-csv.sh
. "$HERE/ratio-csv.sh"
# shellcheck source=ci/console.sh
. "$ROOT/ci/console.sh"
CSV_HEADER=$(csv_columns suite)
COMMIT=$(ernic_commit)
[[ $COMMIT =~ ^[0-9A-Za-z._-]+$ ]] || die "commit id '$COMMIT' cannot go on the kernel command line"

for c in qemu-system-x86_64 timeout jq; do
	command -v "$c" >/dev/null || die "missing command $c (run: ci/deps.sh lane)"
done

# The TSC as clocksource, its watchdog off: left to itself the guest picks HPET under TCG, where every clock
# read (fio's per I/O, the TCP stack's per segment, ernicd's spin) is a system call and an emulated device
# access. TCG's TSC follows the host's monotonic clock, one count for every vCPU, so it is safe to trust here.
APPEND="console=ttyS0 panic=-1 loglevel=3 cryptomgr.notests clocksource=tsc tsc=reliable"
# A soft lockup panics the guest (which then stops QEMU: panic=-1 and -no-reboot) and replays the whole kernel log at
# full verbosity (panic_print=0x20), so that the locked CPU's stack and every other CPU's backtrace reach the console,
# which loglevel=3 otherwise keeps to the "BUG: soft lockup" line; left to itself a locked guest printed that line
# every 30 s until QEMU was killed, its own watchdog locked out too.
APPEND="$APPEND softlockup_panic=1 softlockup_all_cpu_backtrace=1 panic_print=0x20"
# The guest's CPU has no ERMS or FSRM. With them (QEMU's max) the kernel copies and clears pages with rep movsb and
# rep stosb, which QEMU 7.2's TCG runs one byte per pass through the instruction's translation block: 8 times the
# passes of the rep movsq it uses without them, where a real CPU with ERMS copies 4 KiB in about 100 ns. A 4 KiB
# copy then took as long as two system calls, and a target's ratio followed how many bytes it copied or
# cleared more than how it worked: on max, nvmet-tcp's large reads (pages it allocates, which this kernel zeroes,
# filled from a sparse file) ran 25-40% slower, ernicd's depth-1 reads (a 4 KiB copy into the socket) slower too
# (results/NOTEBOOK.md, "The guest's CPU model", 2026-12-05). LANE_CPU_MODEL=max: as before.
CPU_MODEL=${LANE_CPU_MODEL:-max,-erms,-fsrm}
[[ $CPU_MODEL =~ ^[a-zA-Z0-9_.-]+(,[-+]?[a-z0-9_.-]+)*$ ]] ||
	die "LANE_CPU_MODEL must be a QEMU -cpu value such as max,-erms (got '$CPU_MODEL')"
# Idle vCPUs poll instead of halting (idle=poll, as a host tuned for latency runs). Under TCG a halted vCPU is a
# host thread asleep on a condition variable, and waking it costs tens of microseconds where a real CPU leaves
# C1 in about one. A target whose reply wakes the host's CPU from another one pays that once per I/O: ernicd,
# whose reply makes the host queue its nvme-tcp io_work on the submitting CPU, where nvmet-tcp's whole exchange
# stays on that CPU in kernel workers (measured 2026-12-03: with halting idle ernicd's queue depth 1 took
# 418-524 us, with polling 279-342 us; nvmet-tcp's 318-355 us and 313-362 us).
IDLE=${LANE_IDLE:-poll}
case "$IDLE" in
poll) APPEND="$APPEND idle=poll" ;;
halt) ;;
*) die "LANE_IDLE must be poll or halt (got '$IDLE')" ;;
esac
APPEND="$APPEND ernic.runtime=$RUNTIME ernic.rounds=$ROUNDS ernic.commit=$COMMIT"
if [ -n "${LANE_KERNEL_ARGS:-}" ]; then
	if ! [[ $LANE_KERNEL_ARGS =~ ^[A-Za-z0-9_.,:=-]+( [A-Za-z0-9_.,:=-]+)*$ ]] || [[ " $LANE_KERNEL_ARGS" == *" ernic."* ]]; then
		die "LANE_KERNEL_ARGS must be kernel arguments such as clocksource=hpet, none of them ernic.* (got '$LANE_KERNEL_ARGS')"
	fi
	APPEND="$APPEND $LANE_KERNEL_ARGS"
fi
if [ -n "${LANE_ERNICD_MDTS:-}" ]; then
	[[ $LANE_ERNICD_MDTS =~ ^([0-9]|1[0-9]|nvmet)$ ]] ||
		die "LANE_ERNICD_MDTS must be an MDTS 0..19 or nvmet (got '$LANE_ERNICD_MDTS')"
	APPEND="$APPEND ernic.mdts=$LANE_ERNICD_MDTS"
fi
if [ -n "${LANE_ERNICD_CPUS:-}" ]; then
	[[ $LANE_ERNICD_CPUS =~ ^(all|[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)$ ]] ||
		die "LANE_ERNICD_CPUS must be a CPU list such as 1 or 0-1, or all (got '$LANE_ERNICD_CPUS')"
	APPEND="$APPEND ernic.cpus=$LANE_ERNICD_CPUS"
fi
if [ -n "${LANE_ERNICD_RDMA_ICD:-}" ]; then
	[[ $LANE_ERNICD_RDMA_ICD =~ ^([0-9]{1,5}|nvmet)$ ]] ||
		die "LANE_ERNICD_RDMA_ICD must be a number of bytes or nvmet (got '$LANE_ERNICD_RDMA_ICD')"
	APPEND="$APPEND ernic.rdma_icd=$LANE_ERNICD_RDMA_ICD"
fi
PERF=${LANE_PERF:-0}
[[ $PERF =~ ^[01]$ ]] || die "LANE_PERF must be 0 or 1 (got '$PERF')"
if [ "$PERF" = 1 ]; then
	# A profile is taken case by case, so the cases run one suites/run each.
	[ "${LANE_CPU_SPLIT:-1}" = 1 ] || die "LANE_PERF=1 profiles case by case and needs LANE_CPU_SPLIT=1 (got '$LANE_CPU_SPLIT')"
	LANE_CPU_SPLIT=1
	GUEST_PERF=$(command -v perf) || die "LANE_PERF=1 needs perf (run: ci/deps.sh perf)"
	export GUEST_PERF
	APPEND="$APPEND ernic.perf=1"
else
	unset GUEST_PERF
fi
if [ -n "${LANE_CPU_SPLIT:-}" ]; then
	[[ $LANE_CPU_SPLIT =~ ^[01]$ ]] || die "LANE_CPU_SPLIT must be 0 or 1 (got '$LANE_CPU_SPLIT')"
	APPEND="$APPEND ernic.cpusplit=$LANE_CPU_SPLIT"
fi
PAIRING=${LANE_PAIRING:-round}
case "$PAIRING" in
round | case) APPEND="$APPEND ernic.pairing=$PAIRING" ;;
*) die "LANE_PAIRING must be round or case (got '$PAIRING')" ;;
esac
SQFLOW=${LANE_SQFLOW:-on}
case "$SQFLOW" in
on) ;;
off) APPEND="$APPEND ernic.sqflow=off" ;;
*) die "LANE_SQFLOW must be on or off (got '$SQFLOW')" ;;
esac
if [ -n "${LANE_CASES:-}" ]; then
	[[ $LANE_CASES =~ ^[a-z0-9-]+/[a-z0-9-]+(,[a-z0-9-]+/[a-z0-9-]+)*$ ]] ||
		die "LANE_CASES must be a comma list of suite/case such as qdepth/qd1 (got '$LANE_CASES')"
	APPEND="$APPEND ernic.cases=$LANE_CASES"
fi
if [ -n "${LANE_ERNICD_B:-}" ]; then
	if [ ! -f "$LANE_ERNICD_B" ] || [ ! -x "$LANE_ERNICD_B" ]; then
		die "LANE_ERNICD_B must be an executable ernicd (got '$LANE_ERNICD_B')"
	fi
	[[ ,${LANE_SKIP:-}, != *,ernicd,* ]] || die "LANE_ERNICD_B runs beside the ernicd phase, which LANE_SKIP leaves out"
	export ERNICD_B=$LANE_ERNICD_B
	if [ -n "${LANE_ERNICD_B_OPTS+set}" ]; then
		[[ $LANE_ERNICD_B_OPTS =~ ^(--[a-z0-9-]+(=[A-Za-z0-9_.:/-]+)?( +|$))*$ ]] ||
			die "LANE_ERNICD_B_OPTS must be ernicd options such as --zero-copy-reads (got '$LANE_ERNICD_B_OPTS')"
		B_OPTS=$(echo $LANE_ERNICD_B_OPTS | tr ' ' ,)
		APPEND="$APPEND ernic.b_opts=${B_OPTS:-none}"
	fi
else
	[ -z "${LANE_ERNICD_B_OPTS+set}" ] || die "LANE_ERNICD_B_OPTS is ernicd-b's, and LANE_ERNICD_B is not set"
	unset ERNICD_B
fi
if [ -n "${LANE_SKIP:-}" ]; then
	[[ $LANE_SKIP =~ ^(nvmet|ernicd|faults|lad|rdma|passthru|ctl)(,(nvmet|ernicd|faults|lad|rdma|passthru|ctl))*$ ]] ||
		die "LANE_SKIP must be a comma list of nvmet, ernicd, faults, lad, rdma, passthru, ctl (got '$LANE_SKIP')"
	APPEND="$APPEND ernic.skip=$LANE_SKIP"
fi
# After the knobs: a wrong one is refused before the guest is built.
"$HERE/build-guest.sh" || die "building the guest failed"
elapsed
# The conformance suite's in-process column, on this machine (under TCG it takes minutes); the guest adds the
# device columns (ci/lane/phase-passthru.sh).
CONF=$OUT/conformance
rm -rf "$CONF"
CONF_OK=yes
if [[ ,${LANE_SKIP:-}, != *,passthru,* ]]; then
	echo "lane: conformance suite in process (suites/run conformance)"
	ERNIC_COMMIT=$COMMIT "$ROOT/suites/run" conformance --runtime 1 --csv-dir "$CONF" --no-tables --batch >"$OUT/conformance-inproc.log" 2>&1 ||
		{ CONF_OK=no; tail -n 20 "$OUT/conformance-inproc.log"; }
fi
LOG=$OUT/console.log
RES=$OUT/results
rm -rf "$RES"
mkdir -p "$RES"

# The outbox: the guest writes one tar archive of its bulk files (the lad phase's traces) over this disk at the
# end (guest-init.sh, outbox_write). Sparse: it costs what the guest wrote.
OUTBOX=$OUT/outbox.img
rm -f "$OUTBOX"
truncate -s 1G "$OUTBOX"
# The guest's watchdog fires at this wall-clock time, 20 s before QEMU is killed, whatever its boot took.
APPEND="$APPEND ernic.deadline=$(($(date +%s) + TIMEOUT - 20))"

echo "lane: booting $(cat "$OUT/kernel-release") under QEMU (TCG), limit ${TIMEOUT}s"
RAW=$OUT/console.raw
set +e
# KVM is not usable here (the kernel hangs or QEMU pauses on an emulation failure): TCG, always under timeout.
# -drive splits its value at commas, so a comma in the path is doubled; -serial file: takes the rest as the path.
follow_console "$RAW" timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu "$CPU_MODEL" -M pc -m 1G -smp 2 \
	-nic none -display none -nodefaults -no-reboot -serial "file:$RAW" \
	-drive "file=${OUTBOX//,/,,},format=raw,if=virtio" \
	-kernel "$OUT/vmlinux" -initrd "$OUT/initramfs.cpio" -append "$APPEND"
QRC=$?
set -e
tr -d '\r' <"$RAW" >"$LOG"
# 124 and 137: timeout's limit (TERM, then KILL); 143: stopped for silence (follow_console).
case "$QRC" in
124 | 137) echo "lane: QEMU killed after ${TIMEOUT}s" ;;
143) echo "lane: QEMU stopped: the guest printed nothing for ${FOLLOW_SILENCE_S}s" ;;
esac
# An archive the guest never wrote is all zeros, which tar reads as an empty one.
mkdir -p "$RES/files"
tar -xf "$OUTBOX" -C "$RES/files" || echo "lane: the outbox disk holds no readable archive"
rm -f "$OUT/perf.txt"
if [ "$PERF" = 1 ]; then
	cp "$RES/files/perf.txt" "$OUT/perf.txt" 2>/dev/null || echo "lane: LANE_PERF=1, but the guest left no profiles"
fi

# JSON blocks (ernicd's exit counters) and the suites' CSV files, printed between marker lines on the console.
awk -v dir="$RES" '
	/^ERNIC-LANE-JSON-BEGIN / { name = $2; file = dir "/" name ".json"; printf "" > file; next }
	/^ERNIC-LANE-JSON-END /   { if (name != "") close(file); name = ""; next }
	/^ERNIC-LANE-CSV-BEGIN [a-z0-9-]+ [a-z0-9-]+$/ {
		system("mkdir -p \"" dir "/csv/" $2 "\""); name = $3; file = dir "/csv/" $2 "/" $3 ".csv"
		printf "" > file; next
	}
	/^ERNIC-LANE-CSV-END /    { if (name != "") close(file); name = ""; next }
	name != ""                { print > file }
' "$LOG"

# Every extracted file must be the runner's header and whole rows: a console line broken by a kernel message
# would otherwise land in the results.
CSV_OK=yes
for f in "$RES"/csv/*/*.csv; do
	[ -e "$f" ] || continue
	bad=$(awk -v header="$CSV_HEADER" "$CSV_AWK"'
		BEGIN { nh = split(header, h, ",") }
		NR == 1 { if ($0 != header) print "line 1 is not the suites/run header"; next }
		{ n = csvsplit($0, f); if (n != nh) print "line " NR " has " n " fields, not " nh }
		END { if (NR < 2) print "no rows" }' "$f")
	if [ -n "$bad" ]; then
		echo "lane: ${f#"$RES"/}: $bad" | head -n 5 >&2
		CSV_OK=no
	fi
done

# One tab-separated line per row: phase, key (suite/case, "+digests" for the rows after the digest reconnect),
# iops, mean latency (us), errors.
rows_tsv() {
	local f phase
	for f in "$RES"/csv/*/*.csv; do
		[ -e "$f" ] || continue
		phase=$(basename "$(dirname "$f")")
		awk -v phase="$phase" "$CSV_AWK"'
			NR == 1 { nh = split($0, h, ","); next }
			{
				if (csvsplit($0, f) != nh) next
				for (i = 1; i <= nh; i++) v[h[i]] = f[i]
				key = v["suite"] "/" v["case"] (v["backend"] ~ / \+hdgst\+ddgst$/ ? "+digests" : "")
				printf "%s\t%s\t%s\t%s\t%s\n", phase, key, v["iops"], v["lat_mean_us"], v["errors"]
			}' "$f"
	done
}
ROWS=$(rows_tsv)

# Per phase and case: the median IOPS and mean latency over the rounds (LANE_ROUNDS), and how many rounds ran.
# med(a, n): the median of a[1..n] (sorts a).
MED_AWK='
	function med(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
'
MEDIANS=$(printf '%s\n' "$ROWS" | awk -F'\t' "$MED_AWK"'
	NF == 5 {
		k = $1 "\t" $2
		if (!(k in cnt)) order[++nk] = k
		cnt[k]++
		iops[k, cnt[k]] = $3
		lat[k, cnt[k]] = $4
	}
	END {
		for (x = 1; x <= nk; x++) {
			k = order[x]
			delete a; delete b
			for (i = 1; i <= cnt[k]; i++) { a[i] = iops[k, i]; b[i] = lat[k, i] }
			printf "%s\t%s\t%s\t%d\n", k, med(a, cnt[k]), med(b, cnt[k]), cnt[k]
		}
	}')

{
	printf '%-8s %-34s %10s %12s %7s\n' target case IOPS lat-mean-us errors
	printf '%s\n' "$ROWS" | awk -F'\t' 'NF == 5 { printf "%-8s %-34s %10s %12s %7s\n", $1, $2, $3, $4, $5 }'
} >"$RES/summary.txt"

# The MDTS a phase's target reported (Identify Controller, which the guest adds to the rows' backend column as
# mdts=N): a target with a smaller one splits a large request into more commands.
phase_mdts() {
	cat "$RES"/csv/"$1"/*.csv 2>/dev/null | awk "$CSV_AWK"'
		NR == 1 { nh = split($0, h, ","); for (i = 1; i <= nh; i++) if (h[i] == "backend") b = i; next }
		b && csvsplit($0, f) == nh && match(f[b], /,mdts=[0-9]+/) { print substr(f[b], RSTART + 6, RLENGTH - 6); exit }'
}

# Round by round, ernicd / nvmet-tcp of the two rows the targets made one after the other (the guest runs them in
# turns): "case<TAB>median<TAB>r1 r2 ...". The median of these paired ratios is the lane's verdict on a case: a
# pair shares the machine's state of the moment, where the two targets' medians may come from different rounds
# (under a host whose speed drifts by half within minutes, one of ernicd's slow rounds against one of
# nvmet-tcp's fast ones). A case whose rounds disagree by more than the distance of the median from 1.0 has not
# been decided by this run.
# round_ratios ERNICD-PHASE NVMET-PHASE: those lines for one transport's two phases.
round_ratios() {
	printf '%s\n' "$ROWS" | awk -F'\t' -v e="$1" -v n="$2" "$MED_AWK"'
	NF == 5 && ($1 == n || $1 == e) {
		c[$1, $2]++
		v[$1, $2, c[$1, $2]] = $3
		if ($1 == n && !($2 in seen)) { seen[$2] = 1; order[++k] = $2 }
	}
	END {
		for (i = 1; i <= k; i++) {
			key = order[i]
			r = c[n, key] < c[e, key] ? c[n, key] : c[e, key]
			line = ""
			m = 0
			delete a
			for (j = 1; j <= r; j++) {
				if (v[n, key, j] + 0 > 0 && v[e, key, j] + 0 > 0) {
					a[++m] = v[e, key, j] / v[n, key, j]
					line = line (j > 1 ? " " : "") sprintf("%.2f", a[m])
				} else {
					line = line (j > 1 ? " " : "") "n/a"
				}
			}
			if (r) printf "%s\t%s\t%s\n", key, (m == r ? sprintf("%.6f", med(a, m)) : ""), line
		}
	}'
}
ROUND_RATIOS=$(round_ratios ernicd nvmet)

# level_line TARGET KERNEL-TARGET: from round_ratios lines on stdin, one line saying how many cases were at or above
# 1.0 paired and which were below, with their rounds. Printed, not judged: a TCG ratio is too noisy for a gate
# (ci/regress judges the trend in the nightly).
level_line() {
	awk -F'\t' -v t="$1" -v k="$2" '
		$2 != "" { n++; if ($2 + 0 >= 1.0) up++; else below = below sprintf("%s %s %.2f (rounds %s)", (below == "" ? "" : ";"), $1, $2, $3) }
		END { if (n) printf "%s / %s at or above 1.0, paired: %d of %d cases%s\n", t, k, up, n, (below == "" ? "" : "; below:" below) }'
}

# ernicd / nvmet-tcp, case by case, where both ran and nvmet-tcp moved data: medians over the rounds.
# Both kinds of line, for the table and the CSV rows: "phase<TAB>case<TAB>..." and "rounds<TAB>case<TAB>...".
PER_CASE=$(printf '%s\n' "$MEDIANS"; printf '%s\n' "$ROUND_RATIOS" | sed 's/^/rounds\t/')
RATIOS=$OUT/ratios.txt
ERNICD_MDTS=$(phase_mdts ernicd || true)
NVMET_MDTS=$(phase_mdts nvmet || true)
# The string copies the guest's kernel uses, as it logged them (guest-init.sh): they decide what a copy costs.
COPIES=$(sed -n 's/.* init: cpu: .*; string copies: //p' "$LOG" | head -n 1)
# The machine QEMU emulates on: its CPU sets what each emulated instruction costs, so ratios of runs on different
# machines differ by more than their rounds do.
HOST_CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) CPUs"
printf '%s\n' "$PER_CASE" | awk -F'\t' -v rounds="$ROUNDS" -v emdts="$ERNICD_MDTS" -v nmdts="$NVMET_MDTS" \
	-v gcpu="$CPU_MODEL" -v copies="${COPIES:-?}" -v sqflow="$SQFLOW" -v hcpu="$HOST_CPU" -v pairing="$PAIRING" '
	$1 == "nvmet"  { n[$2] = $3; nl[$2] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
	$1 == "ernicd" { e[$2] = $3; el[$2] = $4 }
	$1 == "rounds" { pr[$2] = $3; rr[$2] = $4 }
	END {
		printf "medians of %d round%s per target, same guest%s\n", rounds, (rounds > 1 ? "s" : ""),
			(pairing == "case" ? ", the targets taking turns case by case" :
			 rounds > 1 ? ", the targets taking turns round by round" : "")
		printf "MDTS (Identify Controller; 0: no limit): ernicd %s, nvmet-tcp %s\n", (emdts == "" ? "?" : emdts),
			(nmdts == "" ? "?" : nmdts)
		printf "guest CPU: %s, the kernel copying by %s; QEMU TCG on %s\n", gcpu, copies, hcpu
		if (sqflow == "off")
			print "SQ flow control: disabled on every connect (--disable-sqflow, as nvme connect-all asks)"
		printf "%-34s %11s %11s %8s %14s %14s %8s %8s  %s\n", "case", "ernicd IOPS", "nvmet IOPS", "ratio",
			"ernicd lat us", "nvmet lat us", "ratio", "paired", "IOPS ratio per round"
		for (i = 1; i <= k; i++) {
			c = order[i]
			if (!(c in e)) continue
			if (n[c] + 0 <= 0 || e[c] + 0 <= 0) {
				printf "%-34s %11s %11s %8s %14s %14s %8s %8s\n", c, e[c], n[c], "n/a", "-", "-", "n/a", "n/a"
				continue
			}
			printf "%-34s %11s %11s %8.2f %14s %14s %8.2f %8s  %s\n", c, e[c], n[c], e[c] / n[c], el[c], nl[c],
				(nl[c] + 0 > 0 ? el[c] / nl[c] : 0), (pr[c] == "" ? "-" : sprintf("%.2f", pr[c])), rr[c]
		}
		print "ratio: of the two medians; paired: the median of the rounds\047 ernicd / nvmet-tcp IOPS, each round the"
		print "two targets one after the other"
	}' >"$RATIOS"
printf '%s\n' "$ROUND_RATIOS" | level_line ernicd nvmet-tcp >>"$RATIOS"
# The guest's bare loopback round trip between two processes (tcp_rtt_report in guest-init.sh), beside qdepth/qd1.
if grep -q '^ERNIC-LANE-RTT ' "$LOG"; then
	{
		echo "a bare loopback TCP exchange between two processes in this guest, no NVMe in it: a queue depth 1"
		echo "I/O to ernicd is one such exchange plus the NVMe work of host and target; to nvmet-tcp it never"
		echo "leaves fio's process (compare with qdepth/qd1's latencies):"
		grep '^ERNIC-LANE-RTT ' "$LOG" | sed 's/^ERNIC-LANE-RTT /  /'
	} >>"$RATIOS"
fi
# Two builds of ernicd (LANE_ERNICD_B): ernicd-b / ernicd per case, paired round by round, and each against
# nvmet-tcp the same way.
if printf '%s\n' "$ROWS" | grep -q '^ernicd-b	'; then
	{
		echo
		echo "ernicd-b ($(basename "$LANE_ERNICD_B")${LANE_ERNICD_B_OPTS+, options '$LANE_ERNICD_B_OPTS'}) against ernicd ($(basename "${ERNICD:-$ROOT/build/ernicd}")), same guest, medians of the rounds' paired IOPS ratios"
		printf '%-34s %10s %10s %10s  %s\n' case "b/ernicd" "b/nvmet" "ernicd/nvmet" "b/ernicd per round"
		join -t '	' -j 1 <(round_ratios ernicd-b ernicd | sort) \
			<(join -t '	' -j 1 <(round_ratios ernicd-b nvmet | cut -f 1,2 | sort) \
				<(printf '%s\n' "$ROUND_RATIOS" | cut -f 1,2 | sort)) |
			awk -F'\t' '{ printf "%-34s %10s %10s %10s  %s\n", $1, ($2 == "" ? "n/a" : sprintf("%.3f", $2)),
				($4 == "" ? "n/a" : sprintf("%.3f", $4)), ($5 == "" ? "n/a" : sprintf("%.3f", $5)), $3 }'
	} >>"$RATIOS"
fi
# ernicd's waits for the host in each of its suite rounds (waits_report in guest-init.sh).
if grep -q '^ERNIC-LANE-WAITS ' "$LOG"; then
	{
		echo "ernicd's waits for the host (tcp_waits in its counters) over each round's cases: at queue depth 1 each"
		echo "command is one, and one the busy-poll did not catch cost a sleep and a wake-up; and its sends of"
		echo "64 KiB or more made at --send-nice (tcp_tx.raised_sends):"
		grep '^ERNIC-LANE-WAITS ' "$LOG" | sed 's/^ERNIC-LANE-WAITS /  /'
	} >>"$RATIOS"
fi

cat "$RES/summary.txt"
echo
echo "lane: ernicd / nvmet-tcp per case (TCG: only the ratios mean anything; n/a: a case that must fail)"
cat "$RATIOS"

# The fabric LAD (lad phase): the guest's raw traces joined here, the table checked complete.
LAD_OK=yes
LAD_DIRS=()
for t in nvmet ernicd nvmet-rdma ernicd-rdma; do
	d=$RES/files/lad/$t
	[ -s "$d/meta" ] && LAD_DIRS+=("$d")
done
if [ ${#LAD_DIRS[@]} -gt 0 ]; then
	echo
	echo "lane: per-stage latency over NVMe/TCP and NVMe/RDMA (suites/lad/fabric-report ${LAD_DIRS[*]#"$ROOT"/})"
	"$ROOT/suites/lad/fabric-report" --check --no-csv "${LAD_DIRS[@]}" | tee "$OUT/lad.txt" || LAD_OK=no
	for t in tcp rdma; do
		f=$RES/lad-ernicd$([ $t = tcp ] || echo -rdma)-stats.json
		if [ -s "$f" ]; then
			echo "lane: ernicd's own stage means over $t (us): $(jq -c ".${t}_stages.mean_us" "$f")" |
				tee -a "$OUT/lad.txt"
		fi
	done
elif [[ ,${LANE_SKIP:-}, != *,lad,* ]] && grep -q '^ERNIC-LANE: PASS' "$LOG"; then
	echo "lane: the lad phase printed no traces"
	LAD_OK=no
fi

# The RDMA phase (phase-rdma.sh): ernicd / nvmet-rdma per case, then each target's RDMA / TCP per case, and the
# host's memory regions per number of I/O queues.
# Medians over the rounds, and paired as for NVMe/TCP: the two targets take turns there too.
RATIOS_RDMA=$OUT/ratios-rdma.txt
ROUND_RATIOS_RDMA=$(round_ratios rdma-ernicd rdma-nvmet)
PER_CASE_RDMA=$(printf '%s\n' "$MEDIANS"; printf '%s\n' "$ROUND_RATIOS_RDMA" | sed 's/^/rounds\t/')
if printf '%s\n' "$ROWS" | grep -q '^rdma-'; then
	printf '%s\n' "$PER_CASE_RDMA" | awk -F'\t' -v rounds="$ROUNDS" '
		$1 == "rounds" { pr[$2] = $3; rr[$2] = $4; next }
		{ iops[$1, $2] = $3; lat[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
		function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "n/a" }
		END {
			printf "ernicd / nvmet-rdma, medians of %d round%s per target%s\n", rounds, (rounds > 1 ? "s" : ""),
				(rounds > 1 ? ", the targets taking turns round by round" : "")
			printf "%-34s %11s %11s %8s %14s %14s %8s %8s  %s\n", "case", "ernicd IOPS", "nvmet IOPS",
				"ratio", "ernicd lat us", "nvmet lat us", "ratio", "paired", "IOPS ratio per round"
			for (i = 1; i <= k; i++) {
				c = order[i]
				if (!(("rdma-ernicd", c) in iops) || !(("rdma-nvmet", c) in iops)) continue
				printf "%-34s %11s %11s %8s %14s %14s %8s %8s  %s\n", c, iops["rdma-ernicd", c], iops["rdma-nvmet", c],
					ratio(iops["rdma-ernicd", c], iops["rdma-nvmet", c]), lat["rdma-ernicd", c],
					lat["rdma-nvmet", c], ratio(lat["rdma-ernicd", c], lat["rdma-nvmet", c]),
					(pr[c] == "" ? "-" : sprintf("%.2f", pr[c])), rr[c]
			}
			printf "\nRDMA / TCP, IOPS (medians)\n%-34s %11s %11s %8s %11s %11s %8s\n", "case", "ernicd tcp", "ernicd rdma",
				"ratio", "nvmet tcp", "nvmet rdma", "ratio"
			for (i = 1; i <= k; i++) {
				c = order[i]
				if (!(("rdma-ernicd", c) in iops) && !(("rdma-nvmet", c) in iops)) continue
				printf "%-34s %11s %11s %8s %11s %11s %8s\n", c, iops["ernicd", c], iops["rdma-ernicd", c],
					ratio(iops["rdma-ernicd", c], iops["ernicd", c]), iops["nvmet", c], iops["rdma-nvmet", c],
					ratio(iops["rdma-nvmet", c], iops["nvmet", c])
			}
		}' >"$RATIOS_RDMA"
	printf '%s\n' "$ROUND_RATIOS_RDMA" | level_line ernicd nvmet-rdma >>"$RATIOS_RDMA"
	grep '^ERNIC-LANE-MR ' "$LOG" | sed 's/^ERNIC-LANE-MR /MR budget: /' >>"$RATIOS_RDMA" || true
	echo
	echo "lane: RDMA phase (TCG: only the ratios mean anything)"
	cat "$RATIOS_RDMA"
fi

# Tables the guest printed whole (the passthru phase: conformance, passthru-perf), kept as build/lane/<name>.txt.
awk '$0 == "ERNIC-LANE-TABLE-BEGIN conformance-status" { p = 1; next }
	$0 == "ERNIC-LANE-TABLE-END conformance-status" { p = 0 } p' "$LOG" >"$OUT/conformance-lane.status.tsv"
STATUS_TSV=()
# Only this run's table is printed: a lane without the passthru phase leaves none.
rm -f "$OUT/conformance.txt"
for f in "$CONF/conformance.status.tsv" "$OUT/conformance-lane.status.tsv"; do
	[ ! -s "$f" ] || STATUS_TSV+=("$f")
done
if [ ${#STATUS_TSV[@]} -gt 0 ]; then
	"$ROOT/suites/conformance/report" "${STATUS_TSV[@]}" >"$OUT/conformance.txt" || CONF_OK=no
fi
for t in passthru-perf conformance; do
	[ "$t" = conformance ] || awk -v t="$t" '$0 == "ERNIC-LANE-TABLE-BEGIN " t { p = 1; next } $0 == "ERNIC-LANE-TABLE-END " t { p = 0 } p' \
		"$LOG" >"$OUT/$t.txt"
	if [ -s "$OUT/$t.txt" ]; then
		echo
		echo "lane: $t (also in ${OUT#"$ROOT"/}/$t.txt)"
		cat "$OUT/$t.txt"
	fi
done
[ "$CONF_OK" = yes ] || echo "lane: FAIL: the conformance suite had unexpected results (${OUT#"$ROOT"/}/conformance.txt)"

MARKS=$(grep -cE '^ERNIC-LANE: (PASS|FAIL)' "$LOG" || true)
VERDICT=$(grep -E '^ERNIC-LANE: (PASS|FAIL)' "$LOG" | tail -n 1 || true)
elapsed
# The guest's last words (its last steps, ernicd's stderr, the kernel's nvme messages, the watchdog's process
# list): a log that keeps only its end, as a CI run's does, still says why.
last_words() {
	local n=40
	# A panic's replayed log ends with the lockup's registers, its stack and the other CPUs' backtraces.
	if grep -q 'Kernel panic - not syncing' "$LOG"; then n=200; fi
	echo "lane: the console's last lines:"
	awk '/^ERNIC-LANE-[A-Z]+-BEGIN / { block = 1; next } /^ERNIC-LANE-[A-Z]+-END / { block = 0; next }
		!block && !/^ERNIC-LANE/' "$LOG" | tail -n "$n" | sed 's/^/  /'
}
if [ "$MARKS" -ne 1 ]; then
	last_words
	echo "lane: FAIL: expected one marker line, found $MARKS (QEMU exit $QRC); console in $LOG"
	# Not even the guest's watchdog spoke: its kernel panicked (a soft lockup does, above) or hung whole until
	# QEMU was killed. Exit 3 says so to the caller (ci/lane.mk boots once more).
	if [ "$MARKS" -eq 0 ] && { grep -q 'Kernel panic - not syncing' "$LOG" || [[ $QRC =~ ^(124|137|143)$ ]]; }; then
		echo "lane: the guest's kernel died before any verdict"
		exit 3
	fi
	exit 1
fi
if [ "$VERDICT" != "ERNIC-LANE: PASS" ]; then
	last_words
	echo "lane: ${VERDICT#ERNIC-LANE: } (console: $LOG, results: $RES); nothing appended to ${CSV_DIR#"$ROOT"/}"
	exit 1
fi
if [ "$CONF_OK" != yes ]; then
	echo "lane: FAIL: conformance (in process or on a device) had unexpected results; nothing appended"
	exit 1
fi
# No rows is a failure unless both phases that run the suites were skipped.
if [ "$CSV_OK" != yes ] || { [ -z "$ROWS" ] && [[ ! ,${LANE_SKIP:-}, =~ ,nvmet,(.*,)?ernicd,|,ernicd,(.*,)?nvmet, ]]; }; then
	echo "lane: FAIL: the guest passed but its CSV files did not come back whole (console: $LOG)"
	exit 1
fi
if [ "$LAD_OK" != yes ]; then
	echo "lane: FAIL: the fabric LAD table is incomplete (a stage without samples, or the join lost over 1%)"
	exit 1
fi

# The rows, appended as suites/run appends them: header once, never under another header.
mkdir -p "$CSV_DIR"
n=0
for f in "$RES"/csv/*/*.csv; do
	[ -e "$f" ] || continue
	# A build under test (LANE_ERNICD_B) is no point of the trend.
	[[ $f != "$RES"/csv/ernicd-b/* ]] || continue
	csv_ready "$CSV_DIR/$(basename "$f")" suite || die "nothing more appended"
	tail -n +2 "$f" >>"$CSV_DIR/$(basename "$f")"
	n=$((n + $(tail -n +2 "$f" | wc -l)))
done
if [ ${#LAD_DIRS[@]} -gt 0 ]; then
	ERNIC_COMMIT=$COMMIT "$ROOT/suites/lad/fabric-report" --csv-dir "$CSV_DIR" "${LAD_DIRS[@]}" >/dev/null ||
		die "appending the fabric LAD rows to $CSV_DIR/lad.csv failed"
fi
lane_ratio_csv_ready "$CSV_DIR/lane-ratio.csv" || die "no ratios appended"
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# ratio_rows TRANSPORT ERNICD-PHASE NVMET-PHASE CPUS SQFLOW: lane-ratio.csv's rows of one transport's two phases, from
# per-case lines as in PER_CASE.
ratio_rows() {
	awk -F'\t' -v ts="$NOW" -v commit="$COMMIT" -v rounds="$ROUNDS" -v emdts="$(phase_mdts "$2" || true)" \
		-v nmdts="$(phase_mdts "$3" || true)" -v tr="$1" -v ep="$2" -v np="$3" -v cpus="$4" -v gcpu="$CPU_MODEL" -v sqflow="$5" '
	$1 == np { n[$2] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
	$1 == ep { e[$2] = $3 }
	$1 == "rounds" { pr[$2] = $3; rr[$2] = $4 }
	END {
		for (i = 1; i <= k; i++) {
			c = order[i]
			if ((c in e) && n[c] + 0 > 0 && e[c] + 0 > 0)
				printf "\"%s\",\"%s\",\"%s\",%s,%s,%.3f,%d,%s,%s,\"%s\",%s,\"%s\",\"%s\",\"%s\",\"%s\"\n", ts, commit, c,
					e[c], n[c], e[c] / n[c], rounds, emdts, nmdts, cpus, (pr[c] == "" ? "" : sprintf("%.3f", pr[c])), rr[c],
					tr, gcpu, sqflow
		}
	}'
}
# ernicd's --cpus in the ernicd phase, as the guest started it ("all" without one; nothing when the phase was
# skipped, and then there are no ratios either). The RDMA phase's ernicd runs without --cpus.
ERNICD_CPUS=$(grep -m 1 ' ernicd: ernicd --listen' "$LOG" | sed -n 's/.* --cpus \([^ ]*\).*/\1/p' || true)
{
	printf '%s\n' "$PER_CASE" | ratio_rows tcp ernicd nvmet "${ERNICD_CPUS:-all}" "$SQFLOW"
	# LANE_SQFLOW is of the NVMe/TCP connects; the RDMA phase's leave SQ flow control on.
	printf '%s\n' "$PER_CASE_RDMA" | ratio_rows rdma rdma-ernicd rdma-nvmet all on
} >>"$CSV_DIR/lane-ratio.csv"
# The guest's bare round trips (tcp_rtt), a row per placement: a change of the machine under the lane (QEMU, the
# host's load) shows here before it is read as a change of ernicd in the ratios.
if grep -q '^ERNIC-LANE-RTT tcp_rtt: .*: median ' "$LOG"; then
	csv_ready "$CSV_DIR/lane-rtt.csv" lane-rtt || die "no round trips appended"
	grep '^ERNIC-LANE-RTT tcp_rtt: .*: median ' "$LOG" | sed -E -n \
		's/^ERNIC-LANE-RTT tcp_rtt: (.*): median ([0-9.]+) us, p90 ([0-9.]+) us \(([0-9]+) exchanges, ([0-9]+) B out, ([0-9]+) B back\)$/\1\t\2\t\3\t\4\t\5\t\6/p' |
		awk -F'\t' -v ts="$NOW" -v commit="$COMMIT" '
			{ printf "\"%s\",\"%s\",\"%s\",%s,%s,%s,%s,%s\n", ts, commit, $1, $2, $3, $4, $5, $6 }' \
			>>"$CSV_DIR/lane-rtt.csv"
fi
echo "lane: PASS: $n rows appended under ${CSV_DIR#"$ROOT"/}, ratios in $RATIOS and ${CSV_DIR#"$ROOT"/}/lane-ratio.csv"
[ "$PERF" != 1 ] || echo "lane: profiles per case (LANE_PERF=1): $OUT/perf.txt"
echo "lane: console $LOG, results $RES"
