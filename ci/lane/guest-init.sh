#!/bin/sh
# /init of the lane's guest: the Linux NVMe/TCP initiator (nvme-tcp, nvme-cli, fio on a block device) against
# the kernel's nvmet-tcp target and, when /bin/ernicd is in the initramfs, against ernicd; they listen on the
# guest's 127.0.0.1:4422 and 127.0.0.1:4420 (the guest has no network device).
#
# Each target goes through the same sequence: discover, connect (-i 8 -W 8), nvme-cli identify and log pages,
# queue_count against min(2*min(C,cpus),C)+1 (a shortfall is logged), the same suites/run cases on its namespace 1
# (SUITE_CASES: the 512-byte and 1 KiB sub-block cases must fail with EINVAL, integrity/ram-8m is a crc32c
# verify; with both targets connected, taking turns round by round: paired_rounds), a reconnect with header and
# data digests and the integrity case again, disconnect. ernicd also has its
# id-ctrl fields checked against the emulator's, a file namespace checked, 20 connect/disconnect rounds with its
# counters back at rest, a second instance started with queues=8 for the queue_count check at C=8, and a third
# with a file namespace and --buffer-budget 1M under 128 KiB writes at depth 32 and their verify.
# When the initramfs also has /bin/ernicd-b (ci/lane/run.sh, LANE_ERNICD_B: a second build of ernicd), it serves
# namespace 1 alike on 127.0.0.1:4424 and joins the suite rounds as a third target (phase ernicd-b), so that two
# builds are compared in one guest, each round against the same nvmet-tcp round; it has no other checks.
#
# Then the faults phase (ernicd on a file namespace, the host connected with a recovery policy, crc32c
# write-then-verify fio jobs running through each fault): ernicd killed with SIGKILL and restarted, every
# connection reset with ss -K, and nvmf_tcp_load's connection churn, held controllers and discovery flood; each job
# must read back every block it wrote, and ernicd's counters must come back to rest.
#
# Then the ctl phase (ci/lane/phase-ctl.sh): namespaces added, resized and removed and ANA failover across two
# listeners, all through ernicctl while the host is connected.
#
# Then the lad phase (ci/lane/phase-lad.sh): the fabric LAD against the kernel target and ernicd over NVMe/TCP and
# NVMe/RDMA, its raw traces left in the outbox (outbox_write) as lad/<target>/<file>.
#
# Prints step lines "lane [uptime] <phase>: <what>", the suites' CSV files between
# "ERNIC-LANE-CSV-BEGIN <phase> <suite>" and "ERNIC-LANE-CSV-END <phase> <suite>", ernicd's exit counters as JSON
# between "ERNIC-LANE-JSON-BEGIN <name>" and "ERNIC-LANE-JSON-END <name>", and last exactly one line
# "ERNIC-LANE: PASS" or "ERNIC-LANE: FAIL <reason>", then powers off.
# Kernel command line: ernic.deadline=EPOCH-SECONDS (the guest watchdog's, before QEMU's own limit; default 270 s
# after boot), ernic.skip=PHASE[,PHASE] (nvmet, ernicd, faults, lad, rdma, passthru, ctl: ci/lane/phase-*.sh),
# ernic.runtime=SECONDS (per time-based suite case, default 1), ernic.commit=ID (the CSV rows' commit column),
# ernic.mdts=N|nvmet (mdts= of the ernicd instance the suite cases run against; default nvmet: the MDTS the
# nvmet phase's target reported, so the ratios compare targets that split requests alike, or ernicd's own 5
# when that phase did not run; the queues=8 instance keeps ernicd's default and its Identify is checked
# against it either way),
# ernic.b_opts=OPT[,OPT]|none (ernicd-b's options in place of ERNICD_TCP_OPTS: a second build, or the same
# build with other options, in the same guest; none: no options),
# ernic.cpus=LIST|all (ernicd --cpus of that instance and of the lad phase's; default all: unpinned, on the
# CPUs nvmet-tcp's work runs on too. Pinned to one of the guest's two CPUs, ernicd did every receive copy of
# a 1 MiB write on it while the other stayed 60-73% idle; results/NOTEBOOK.md, "One data PDU per 1 MiB, and ernicd
# unpinned").
# ernic.pairing=round|case (how the targets take turns at the suite cases in a round: paired_rounds; default round),
# ernic.perf=1 (profile each suite case with perf, cases one at a time as with ernic.cpusplit=1; the profiles go
# out on the outbox disk, perf.txt).
# Runs under busybox ash, which, like dash, has 'local'.
# shellcheck shell=dash
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

ADDR=127.0.0.1
PORT=4420 # the port connect, discover and wait_listen use: the current target's
PORT_MAIN=4420
PORT_Q8=4421
PORT_NVMET=4422 # nvmet-tcp's, while it and ernicd take turns at the suite cases (paired_rounds)
PORT_ERNICD_B=4424
PORT_BUDGET=4425 # ernicd with a file namespace and --buffer-budget 1M (ernicd_close)
NVMET_DEV=""    # namespace 1 of each target in the suite rounds; empty: that phase left out
ERNICD_DEV=""
ERNICD_B_DEV=""
NQN_NVMET=nqn.2024-01.org.ernic:lane-nvmet
NQN_ERNICD=nqn.2024-01.org.ernic:lane-ernicd
NQN_ERNICD_B=nqn.2024-01.org.ernic:lane-ernicd-b
NQN_ERNICD_Q8=nqn.2024-01.org.ernic:lane-ernicd-q8
NQN_ERNICD_BUDGET=nqn.2024-01.org.ernic:lane-ernicd-budget
QUEUES=4 # I/O queues each target is configured with (C)
NS_SIZE=128M # namespace 1 of both targets
# suites/run cases, identical for both targets; the ratios ernicd / nvmet-tcp are taken case by case.
SUITE_CASES="patterns/randread patterns/randwrite patterns/randrw-70-30 qdepth/qd1 qdepth/qd32 blocksize/256k
sequential/read sequential/write subblock/read-512-on-4k subblock/write-1k-on-4k integrity/ram-8m"
DIGEST_CASES="integrity/ram-8m" # after the reconnect with --hdr-digest --data-digest
DIGEST_LABEL=" +hdgst+ddgst"     # appended to the backend column of those rows
# Options of every ernicd the NVMe/TCP suite cases and the lad phase run against: none, ernicd's defaults. Reads
# are copied into socket buffers, as on a native loopback, where sending them by reference (--zero-copy-reads)
# costs more (README, "Zero-copy reads"). It won in this guest only while its CPU copied with an emulated byte
# loop (ci/lane/run.sh, LANE_CPU_MODEL).
ERNICD_TCP_OPTS=""
RESULTS=/results
SUITES_OUT=/run/suites-run.out # the last suites/run's report (suites_run), for fail()
OUTBOX=/dev/vda # the lane's virtio disk (ci/lane/run.sh): outbox_write
OUTBOX_DIR=$RESULTS/outbox
SUITES_TRANSPORT=tcp # the CSV rows' transport column
PHASE=init
WATCHDOG=""

# ---------------------------------------------------------------------------------------------------------------
# reporting

log() {
	read -r up _ </proc/uptime 2>/dev/null || up='?'
	echo "lane [$up] $PHASE: $*"
}

# The outbox: files too big for the console (the lad phase's raw traces) go under $OUTBOX_DIR, and at the end one
# tar archive of that directory is written over the whole of the lane's virtio disk, which ci/lane/run.sh
# unpacks into build/lane/results/files/. The emulated 8250 console moves about 66 KB/s: the traces took 2 of a
# lane's 7 minutes there.
outbox_write() {
	[ -b "$OUTBOX" ] || return 0
	tar -cf "$OUTBOX" -C "$OUTBOX_DIR" . && sync
}

finish() { # finish MARKER-TEXT: the single marker line, then power off
	trap - EXIT
	if [ -n "$WATCHDOG" ]; then kill "$WATCHDOG" 2>/dev/null || true; fi
	if [ -n "${ERNICD_PID:-}" ]; then kill -TERM "$ERNICD_PID" 2>/dev/null || true; fi
	if [ -n "${ERNICD_Q8_PID:-}" ]; then kill -TERM "$ERNICD_Q8_PID" 2>/dev/null || true; fi
	if [ -n "${ERNICD_BUDGET_PID:-}" ]; then kill -TERM "$ERNICD_BUDGET_PID" 2>/dev/null || true; fi
	if [ -n "${ERNICD_B_PID:-}" ]; then kill -TERM "$ERNICD_B_PID" 2>/dev/null || true; fi
	outbox_write || echo "lane: writing the outbox to $OUTBOX failed" >/dev/console
	sync
	# To the console itself: finish may run in a command substitution whose stdout is a pipe.
	echo "ERNIC-LANE: $*" >/dev/console
	poweroff -f
	sleep 5
	exit 1
}

# set -e ends /init on an unexpected failure: the EXIT trap still prints the verdict and powers off.
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
	rc=$?
	finish "FAIL $PHASE: /init stopped unexpectedly (exit $rc) at step '$(cat /run/lane-step 2>/dev/null || true)'"
}
trap on_exit EXIT

fail() {
	if { [ "$PHASE" = ernicd ] || [ "$PHASE" = faults ]; } && [ -s "$ERNICD_LOG" ]; then
		echo "lane: last lines of ernicd's stderr:" >/dev/console
		grep -v '^ *{' "$ERNICD_LOG" | tail -n 40 | sed 's/^/  ernicd: /' >/dev/console
		# The statuses it answered with other than success (not logged one by one): not ernicd_stats,
		# which would fail again.
		rm -f "$ERNICD_STATS"
		if kill -USR1 "$ERNICD_PID" 2>/dev/null; then
			sleep 1
			echo "lane: ernicd's error statuses: $(jq -r '[.. | objects | .errors? | objects | select(length > 0)] |
				if . == [] then "none" else tojson end' \
				"$ERNICD_STATS" 2>/dev/null || echo "no counters")" >/dev/console
		fi
	fi
	# A suite case's own verdict and fio's first error lines, from far above in a long console: what a
	# one-round lane on a CI runner that failed once has to be read from.
	if [ -s "$SUITES_OUT" ] && grep -q '  FAIL' "$SUITES_OUT"; then
		echo "lane: the failed suite cases:" >/dev/console
		awk '/^\[[0-9]+\/[0-9]+\]/ { f = / FAIL/ } /^$/ { f = 0 } f' "$SUITES_OUT" | head -n 30 | sed 's/^/  suites: /' >/dev/console
	fi
	echo "lane: the kernel's last nvme messages:" >/dev/console
	dmesg | grep -v -i 'command line' | grep -i -e nvme -e 'out of memory' -e oom | tail -n 20 | sed 's/^/  kernel: /' >/dev/console
	echo "lane: memory: $(awk '/^(MemTotal|MemAvailable|Shmem):/ { printf "%s %d MiB ", $1, $2 / 1024 }' /proc/meminfo)" >/dev/console
	if [ "$PHASE" = ernicd-b ] && [ -s "$ERNICD_B_LOG" ]; then
		echo "lane: last lines of ernicd-b's stderr:" >/dev/console
		tail -n 20 "$ERNICD_B_LOG" | sed 's/^/  ernicd-b: /' >/dev/console
	fi
	if [ "$PHASE" = ernicd ] && [ -s "$RESULTS/ernicd-q8.log" ]; then
		echo "lane: last lines of the queues=8 ernicd's stderr:" >/dev/console
		tail -n 20 "$RESULTS/ernicd-q8.log" | sed 's/^/  ernicd-q8: /' >/dev/console
	fi
	if [ "$PHASE" = ernicd ] && [ -s "$RESULTS/ernicd-budget.log" ]; then
		echo "lane: last lines of the --buffer-budget ernicd's stderr:" >/dev/console
		tail -n 20 "$RESULTS/ernicd-budget.log" | sed 's/^/  ernicd-budget: /' >/dev/console
	fi
	if [ "$(cat /run/lane-step 2>/dev/null)" = "rdma ernicd buffer budget" ] && [ -s "$RESULTS/ernicd-rdma-budget.log" ]; then
		echo "lane: last lines of the RDMA --buffer-budget ernicd's stderr:" >/dev/console
		grep -v '^ *{' "$RESULTS/ernicd-rdma-budget.log" | tail -n 20 | sed 's/^/  ernicd-rdma-budget: /' >/dev/console
	fi
	finish "FAIL $PHASE: $*"
}

run() { # run WHAT CMD...: show the command, fail the lane if it fails
	what=$1
	shift
	log "$what: $*"
	"$@" || fail "$what failed (exit $?)"
}

emit_json() { # emit_json NAME FILE
	echo "ERNIC-LANE-JSON-BEGIN $1"
	cat "$2"
	echo
	echo "ERNIC-LANE-JSON-END $1"
}

# Deadlines in centiseconds of uptime: polling loops are bounded in time, not in rounds (a round can take long
# under TCG).
now_cs() {
	local u f
	read -r u _ </proc/uptime
	f=${u#*.}
	echo $((${u%.*} * 100 + ${f#0}))
}
set_deadline() { DEADLINE=$(($(now_cs) + $1 * 100)); }
past_deadline() { [ "$(now_cs)" -ge "$DEADLINE" ]; }

cmdline_opt() { # cmdline_opt KEY DEFAULT
	local v w cl
	v=$2
	read -r cl </proc/cmdline
	for w in $cl; do
		case "$w" in "$1="*) v=${w#*=} ;; esac
	done
	echo "$v"
}

# ---------------------------------------------------------------------------------------------------------------
# system

setup_system() {
	mkdir -p /proc /sys /dev /tmp /run
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	exec </dev/console >/dev/console 2>&1
	mkdir -p /dev/pts /dev/shm
	# bash's process substitution (suites/run) opens /dev/fd/N; devtmpfs has no /dev/fd.
	ln -s /proc/self/fd /dev/fd
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs "$RESULTS"
	hostname lane

	deadline=$(cmdline_opt ernic.deadline 0)
	RUNTIME=$(cmdline_opt ernic.runtime 1)
	ROUNDS=$(cmdline_opt ernic.rounds 1)
	COMMIT=$(cmdline_opt ernic.commit unknown)
	ERNICD_MDTS=$(cmdline_opt ernic.mdts nvmet)
	# shellcheck disable=SC2034 # read by phase-rdma.sh, sourced
	ERNICD_RDMA_ICD=$(cmdline_opt ernic.rdma_icd nvmet)
	ERNICD_CPUS=$(cmdline_opt ernic.cpus all)
	if [ "$ERNICD_CPUS" = all ]; then ERNICD_CPUS=""; fi
	CPU_SPLIT=$(cmdline_opt ernic.cpusplit 0)
	PAIRING=$(cmdline_opt ernic.pairing round)
	case "$PAIRING" in round | case) ;; *) PAIRING=round ;; esac
	PERF=$(cmdline_opt ernic.perf 0)
	ERNICD_B_OPTS=$(cmdline_opt ernic.b_opts "")
	case "$ERNICD_B_OPTS" in
	"") ERNICD_B_OPTS=$ERNICD_TCP_OPTS ;;
	none) ERNICD_B_OPTS="" ;;
	*) ERNICD_B_OPTS=$(echo "$ERNICD_B_OPTS" | tr , " ") ;;
	esac
	# A subset of the suite cases, for a quicker look at a few (the lane's verdict still covers what ran).
	CASES=$(cmdline_opt ernic.cases "")
	SQFLOW=$(cmdline_opt ernic.sqflow on)
	if [ -n "$CASES" ]; then SUITE_CASES=$(echo "$CASES" | tr , " "); fi
	# The watchdog fires at the host's deadline (the guest's clock starts from QEMU's RTC, the host's time, and
	# its TSC follows the host's clock), before QEMU is killed: a boot slowed down by a loaded host shortens the
	# guest's time, never the margin in which it says where it was.
	now=$(date +%s)
	[ "$deadline" -gt "$now" ] 2>/dev/null || deadline=$((now + 270))
	timeout=$((deadline - now))
	(
		sleep "$timeout"
		echo "lane watchdog: processes:"
		ps -o pid,stat,args | sed 's/^/  /'
		echo "lane watchdog: the kernel's last messages:"
		dmesg | tail -n 15 | sed 's/^/  /'
		outbox_write || true
		echo "ERNIC-LANE: FAIL watchdog: no verdict after ${timeout}s, last step: $(cat /run/lane-step 2>/dev/null)"
		poweroff -f
	) &
	WATCHDOG=$!

	log "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpus, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)," \
		"watchdog in ${timeout} s"
	# How the kernel copies and clears pages, from the CPU's flags (ci/lane/run.sh, LANE_CPU_MODEL): under TCG a
	# rep movsb moves one byte per pass through its translation block, a rep movsq eight.
	log "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); string copies:" \
		"$(awk -F': ' '/^flags/ { f = " " $2 " "
			print (f ~ / erms /) ? "rep movsb (erms)" : (f ~ / rep_good /) ? "rep movsq (rep_good)" : "unrolled moves"
			exit }' /proc/cpuinfo)"
	# What a figure was measured under: every clock read and every system call costs far more under TCG when the
	# clocksource has no vDSO path or page-table isolation switches CR3 (a full soft-TLB flush) on each entry.
	# (ci/lane/run.sh asks for the TSC; the list says what else the guest had)
	# and whether an idle vCPU halts, which makes waking it dear (ci/lane/run.sh, LANE_IDLE).
	clocks=$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null)
	idle=halt
	case " $(cat /proc/cmdline) " in *" idle=poll "*) idle=poll ;; esac
	log "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" \
		"(of ${clocks% }), idle $idle," \
		"meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null)," \
		"spectre_v2: $(cat /sys/devices/system/cpu/vulnerabilities/spectre_v2 2>/dev/null)"
	echo /sbin/modprobe >/proc/sys/kernel/modprobe
	# Transparent huge pages off (the Debian kernel's default is "always"): over loopback the initiator sends fio's
	# buffer pages as skb fragments, and 6.1's hardened usercopy kills the receiver (nvmet-tcp's io_work, or
	# ernicd's recv) with "Kernel memory exposure attempt detected from page alloc" when a fragment runs from one
	# huge page into the next (seen with 1 MiB sequential writes).
	if [ -w /sys/kernel/mm/transparent_hugepage/enabled ]; then
		echo never >/sys/kernel/mm/transparent_hugepage/enabled || fail "cannot turn transparent huge pages off"
	fi

	ip link set lo up || fail "cannot bring up lo"
	ip -4 addr show dev lo | grep -q "inet $ADDR/" || ip addr add "$ADDR/8" dev lo || fail "cannot set $ADDR on lo"
	log "lo up: $(ip -4 -o addr show dev lo | awk '{ print $4 }')"

	for m in configfs crc32c_generic nvme-core nvme-fabrics nvme-tcp nvmet nvmet-tcp; do
		modprobe "$m" || fail "modprobe $m failed"
	done
	# The accelerated crc32c needs SSE4.2: welcome, not required.
	modprobe crc32c-intel 2>/dev/null || log "crc32c-intel not loaded, digests use crc32c_generic"
	grep -q ' /sys/kernel/config configfs ' /proc/mounts ||
		mount -t configfs configfs /sys/kernel/config || fail "cannot mount configfs"
	# The outbox disk (outbox_write): the lad phase's traces have no other way out.
	mkdir -p "$OUTBOX_DIR"
	for m in virtio_pci virtio_blk; do modprobe "$m" || fail "modprobe $m failed"; done
	set_deadline 10
	while [ ! -b "$OUTBOX" ]; do
		if past_deadline; then fail "no outbox disk $OUTBOX after 10 s"; fi
		sleep 0.1
	done
	log "modules: $(lsmod | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' ')"

	uuid=$(cat /proc/sys/kernel/random/uuid)
	mkdir -p /etc/nvme
	echo "nqn.2014-08.org.nvmexpress:uuid:$uuid" >/etc/nvme/hostnqn
	echo "$uuid" >/etc/nvme/hostid
	log "hostnqn $(cat /etc/nvme/hostnqn)"
}

# ---------------------------------------------------------------------------------------------------------------
# helpers on the host side of the fabric

listening() { # listening: 127.0.0.1:$PORT is in LISTEN (state 0A) in /proc/net/tcp
	awk -v a="$(printf '0100007F:%04X' "$PORT")" '$2 == a && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp
}

wait_listen() { # wait_listen PID-OR-EMPTY: until 127.0.0.1:$PORT is in LISTEN
	set_deadline 10
	while ! listening; do
		[ -z "$1" ] || kill -0 "$1" 2>/dev/null || fail "target exited before listening on $ADDR:$PORT"
		if past_deadline; then fail "nothing listens on $ADDR:$PORT after 10 s"; fi
		sleep 0.1
	done
}

ctrl_of() { # ctrl_of NQN: name of the live controller (nvmeN) connected to NQN, or nothing
	local d
	for d in /sys/class/nvme/nvme*; do
		[ -e "$d/subsysnqn" ] || continue
		[ "$(cat "$d/subsysnqn")" = "$1" ] || continue
		[ "$(cat "$d/state" 2>/dev/null)" = live ] || continue
		basename "$d"
		return 0
	done
	return 0
}

ns_dev() { # ns_dev NQN NSID: /dev path of the namespace's block device, or nothing
	local s b c
	for s in /sys/class/nvme-subsystem/nvme-subsys*; do
		[ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$1" ] || continue
		for b in "$s"/nvme*n*; do
			[ -e "$b/nsid" ] || continue
			[ "$(cat "$b/nsid")" = "$2" ] || continue
			if [ -b "/dev/$(basename "$b")" ]; then echo "/dev/$(basename "$b")"; fi
			return 0
		done
	done
	# Without native multipath the namespace hangs off the controller.
	c=$(ctrl_of "$1")
	[ -n "$c" ] || return 0
	for b in /sys/class/nvme/"$c"/nvme*n*; do
		if [ -e "$b/nsid" ] && [ "$(cat "$b/nsid")" = "$2" ] && [ -b "/dev/$(basename "$b")" ]; then
			echo "/dev/$(basename "$b")"
			return 0
		fi
	done
	return 0
}

connect() { # connect NQN [EXTRA-ARGS...]: connect and wait until the controller is live and namespace 1 is there
	local nqn i
	nqn=$1
	shift
	# ernic.sqflow=off (LANE_SQFLOW): as nvme connect-all connects from an entry that offers it
	[ "$SQFLOW" = on ] || set -- --disable-sqflow "$@"
	log "connect: nvme connect -t tcp -a $ADDR -s $PORT -n $nqn -i 8 -W 8 $*"
	nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$nqn" -i 8 -W 8 "$@" >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		fail "nvme connect to $nqn failed"
	}
	wait_ns1 "$nqn"
}

wait_ns1() { # wait_ns1 NQN [ON-TIMEOUT]: after a connect, until CTRL is NQN's live controller and DEV its namespace 1
	set_deadline 20
	CTRL=""
	DEV=""
	while :; do
		[ -n "$CTRL" ] || CTRL=$(ctrl_of "$1")
		[ -z "$CTRL" ] || DEV=$(ns_dev "$1" 1)
		if [ -n "$DEV" ]; then break; fi
		if past_deadline; then
			[ -z "${2:-}" ] || $2
			fail "no live controller with namespace 1 for $1 after 20 s (ctrl '${CTRL}')"
		fi
		sleep 0.1
	done
}

disconnect() { # disconnect NQN: disconnect and wait until no controller for NQN is left
	local i left d
	nvme disconnect -n "$1" >/tmp/disconnect.out 2>&1 || {
		cat /tmp/disconnect.out
		fail "nvme disconnect -n $1 failed"
	}
	set_deadline 10
	while :; do
		left=""
		for d in /sys/class/nvme/nvme*; do
			if [ -e "$d/subsysnqn" ] && [ "$(cat "$d/subsysnqn")" = "$1" ]; then left=$(basename "$d"); fi
		done
		if [ -z "$left" ]; then break; fi
		if past_deadline; then fail "controller $left for $1 still there 10 s after disconnect"; fi
		sleep 0.1
	done
}

cpu_ticks() { # cpu_ticks: per CPU "user+nice system irq+softirq idle+iowait" of /proc/stat, then ernicd's utime stime
	awk '$1 ~ /^cpu[0-9]+$/ { printf "%s %d %d %d %d ", $1, $2 + $3, $4, $7 + $8, $5 + $6 }' /proc/stat
	if [ -n "${ERNICD_PID:-}" ] && [ -r "/proc/$ERNICD_PID/stat" ]; then
		sed 's/.*) //' "/proc/$ERNICD_PID/stat" | awk '{ printf "ernicd %d %d", $12, $13 }'
	fi
	echo
}

cpu_report() { # cpu_report CASE BEFORE AFTER: where each CPU's time went during CASE, and ernicd's share
	awk -v c="$1" -v a="$2" -v b="$3" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); line = "cpu during " c ":"
		for (i = 1; i <= n; i += 5) {
			if (x[i] == "ernicd") {
				t = (y[i + 1] - x[i + 1]) + (y[i + 2] - x[i + 2])
				line = line sprintf(" | ernicd %d ticks (%d%% system)", t, t ? 100 * (y[i + 2] - x[i + 2]) / t : 0)
				break
			}
			tot = 0
			for (j = 1; j <= 4; j++) { d[j] = y[i + j] - x[i + j]; tot += d[j] }
			if (tot <= 0) tot = 1
			line = line sprintf(" | %s user %d%% sys %d%% irq %d%% idle %d%%", x[i], 100 * d[1] / tot,
				100 * d[2] / tot, 100 * d[3] / tot, 100 * d[4] / tot)
		}
		print line }'
}

suites_run() { # suites_run CASE...: one suites/run of them on $DEV, with run_suites' $backend and $dir
	local rc
	echo "$PHASE suites/run $*" >/run/lane-step
	# Its report also kept in SUITES_OUT, for fail() to repeat the failed cases' lines at the end.
	{
		rc=0
		ERNIC_COMMIT=$COMMIT /ernic/suites/run "$@" --target "$DEV" --transport "$SUITES_TRANSPORT" \
			--runtime "$RUNTIME" --backend "$backend" --csv-dir "$dir" || rc=$?
		echo "$rc" >"$SUITES_OUT.rc"
	} | tee "$SUITES_OUT"
	rc=$(cat "$SUITES_OUT.rc")
	[ "$rc" -eq 0 ] || fail "suites/run exited $rc on $DEV ($*)"
}

run_suites() { # run_suites BACKEND-LABEL CSV-DIR CASE...: suites/run on $DEV, fail the lane if a case fails
	local backend dir c before
	backend=$1
	dir=$2
	shift 2
	log "suites/run $* --target $DEV --transport $SUITES_TRANSPORT --runtime $RUNTIME --backend '$backend'"
	if [ "$CPU_SPLIT" != 1 ]; then
		suites_run "$@"
		return 0
	fi
	# One case at a time (a start-up of suites/run each, about 2 s under TCG), so the log says where the CPUs'
	# time went in each: a case bound by one CPU shows.
	for c in "$@"; do
		before=$(cpu_ticks)
		[ "$PERF" != 1 ] || perf_start
		suites_run "$c"
		[ "$PERF" != 1 ] || perf_report "$c"
		log "$(cpu_report "$c" "$before" "$(cpu_ticks)")"
	done
}

# perf_start, then perf_report CASE: every CPU sampled over the case (suites/run's start-up and its jq included,
# alike for every target), then in OUTBOX_DIR/perf.txt the processes the samples fell in and, for the busiest
# four, their hottest functions, each as a share of all samples: where a target's time goes against another's.
PERF_PID=""
ROUND="" # paired_rounds' round, while it runs
perf_start() {
	perf record -a -F 499 -o /tmp/perf.data >/tmp/perf.log 2>&1 &
	PERF_PID=$!
}
perf_report() {
	local procs cm out
	out=$OUTBOX_DIR/perf.txt
	kill -INT "$PERF_PID" 2>/dev/null || true
	wait "$PERF_PID" || true
	mkdir -p "$OUTBOX_DIR"
	{
		# One report by process and function; each process's share is the sum of its functions', so its kernel and
		# user shares below add up to it.
		perf report --stdio -i /tmp/perf.data --sort comm,sym 2>/dev/null | grep -v -e '^#' -e '^$' >/tmp/perf.sym
		procs=$(awk '$1 ~ /%$/ { s[$2] += $1 } END { for (c in s) printf "%9.2f%%  %s\n", s[c], c }' /tmp/perf.sym |
			sort -rn | head -n 10)
		echo "== $PHASE $1${ROUND:+ (round $ROUND)}: processes, % of all samples"
		echo "$procs"
		# The busiest four, by their share (swapper: the idle vCPUs).
		echo "$procs" | awk '$2 != "swapper" { print $2 }' | head -n 4 | while IFS= read -r cm; do
			[ -n "$cm" ] || continue
			echo "-- $cm: kernel and user space, then its hottest functions, % of all samples"
			awk -v c="$cm" '$2 == c && $3 == "[k]" { k += $1 } $2 == c && $3 == "[.]" { u += $1 }
				END { printf "    %.2f%% in the kernel, %.2f%% in user space\n", k, u }' /tmp/perf.sym
			awk -v c="$cm" '$2 == c && $1 + 0 >= 0.3 { $2 = ""; print "    " $0 }' /tmp/perf.sym | head -n 15
		done
	} >>"$out" 2>&1
	rm -f /tmp/perf.data /tmp/perf.sym
}

emit_csv() { # emit_csv DIR: each SUITE.csv of DIR between marker lines
	local f
	for f in "$1"/*.csv; do
		[ -e "$f" ] || continue
		echo "ERNIC-LANE-CSV-BEGIN $PHASE $(basename "$f" .csv)"
		cat "$f"
		echo "ERNIC-LANE-CSV-END $PHASE $(basename "$f" .csv)"
	done
}

check_queue_count() { # check_queue_count C: queue_count of $CTRL against min(2*min(C,cpus),C)+1; logged, not failed
	local c cpus m want got
	c=$1
	cpus=$(grep -c ^processor /proc/cpuinfo)
	m=$c
	if [ "$cpus" -lt "$m" ]; then m=$cpus; fi
	want=$((2 * m))
	if [ "$want" -gt "$c" ]; then want=$c; fi
	want=$((want + 1))
	got=$(cat "/sys/class/nvme/$CTRL/queue_count")
	if [ "$got" -eq "$want" ]; then
		log "queue_count $got (= min(2*min($c,$cpus),$c)+1)"
	else
		log "queue_count SHORTFALL: $got, expected min(2*min($c,$cpus),$c)+1 = $want"
	fi
}

id_ctrl_field() { # id_ctrl_field FILE KEY: the value of KEY in nvme id-ctrl output, nothing when it has none
	# No FILE (its phase skipped) is "none" too, not a failure that set -e would stop the lane on.
	[ -r "$1" ] || return 0
	awk -v k="$2" '$1 == k && $2 == ":" { print $3; exit }' "$1"
}

# check_id_ctrl FILE MDTS IOCCSZ KEYED [OVER]: nvme id-ctrl output against the emulator's controller parameters.
# IOCCSZ is the transport's: 8196 = 4 + 131072/16 over TCP (128 KiB of in-capsule data), 4 + --in-capsule-data / 16
# over RDMA. KEYED: whether SGLS bit 2 (Keyed SGL Data Block) is set: 1 over RDMA, 0 over TCP, which has none.
check_id_ctrl() {
	local want k v keyed
	for want in "mdts=$2" maxcmd=128 "ioccsz=$3"; do
		k=${want%=*}
		v=$(id_ctrl_field "$1" "$k")
		[ "$v" = "${want#*=}" ] || fail "id-ctrl${5:+ $5}: $k is '$v', the emulator reports ${want#*=}"
	done
	v=$(id_ctrl_field "$1" sgls)
	case "$v" in
	0x[0-9a-fA-F]* | [0-9]*) ;;
	*) fail "id-ctrl${5:+ $5} has no numeric sgls field (got '$v')" ;;
	esac
	keyed=$(((v >> 2) & 1))
	[ "$keyed" = "$4" ] || fail "id-ctrl${5:+ $5}: sgls $v: keyed SGL data block (bit 2) is $keyed, the emulator reports $4"
	log "id-ctrl${5:+ $5} as the emulator reports: mdts $2, maxcmd 128, ioccsz $3, sgls $v (keyed SGL, bit 2, $keyed)"
}

round_order() { # round_order R: the targets' turns in suite round R, nvmet first in odd rounds
	# With ernicd-b the three rotate, each taking each place once in three rounds.
	if [ -n "$ERNICD_B_DEV" ]; then
		case $(($1 % 3)) in
		1) echo "nvmet ernicd ernicd-b" ;;
		2) echo "ernicd ernicd-b nvmet" ;;
		0) echo "ernicd-b nvmet ernicd" ;;
		esac
	elif [ $(($1 % 2)) -eq 0 ]; then echo "ernicd nvmet"; else echo "nvmet ernicd"; fi
}

expect_einval_512() { # expect_einval_512 DEVICE: a 512-byte O_DIRECT read on a 4 KiB-block device must fail, EINVAL
	local lbs name err
	lbs=$(cat "/sys/block/$(basename "$1")/queue/logical_block_size")
	if [ "$lbs" -le 512 ]; then
		log "512-byte read: $1 has $lbs-byte blocks, nothing to check"
		return 0
	fi
	name=$PHASE-read-512-on-$lbs
	log "512-byte O_DIRECT read on $1 ($lbs-byte blocks) must fail with EINVAL"
	fio --name="$name" --filename="$1" --rw=read --bs=512 --size=4k --direct=1 --ioengine=psync \
		--output-format=json --output="$RESULTS/$name.json" >/tmp/fio.out 2>&1 || true
	err=$(jq -r '.jobs[0].error' "$RESULTS/$name.json" 2>/dev/null || echo none)
	[ "$err" = 22 ] || {
		cat /tmp/fio.out
		fail "512-byte read on $1: expected EINVAL (22), got error '$err'"
	}
	log "512-byte read on $1: EINVAL as required"
}

# ---------------------------------------------------------------------------------------------------------------
# the sequence every target goes through

exercise_setup() { # exercise_setup NQN C BACKEND-LABEL: C = I/O queues the target was started with; leaves
	# the controller connected, DEV its namespace 1 and SUITE_BACKEND the rows' backend column (with the MDTS)
	local nqn c backend cmd target v
	nqn=$1
	c=$2
	backend=$3
	echo "$PHASE discover" >/run/lane-step
	log "discover: nvme discover -t tcp -a $ADDR -s $PORT"
	nvme discover -t tcp -a "$ADDR" -s "$PORT" >"$RESULTS/$PHASE-discover.txt" 2>&1 || {
		cat "$RESULTS/$PHASE-discover.txt"
		fail "nvme discover failed"
	}
	cat "$RESULTS/$PHASE-discover.txt"
	grep -q "subnqn: *$nqn\$" "$RESULTS/$PHASE-discover.txt" || fail "discovery log has no entry for $nqn"

	echo "$PHASE connect" >/run/lane-step
	connect "$nqn"
	log "connected: controller $CTRL, namespace 1 is $DEV"
	run "list" nvme list
	for cmd in id-ctrl id-ns smart-log error-log; do
		target=/dev/$CTRL
		if [ "$cmd" = id-ns ]; then target=$DEV; fi
		echo "$PHASE $cmd" >/run/lane-step
		log "nvme $cmd $target"
		nvme "$cmd" "$target" >"$RESULTS/$PHASE-$cmd.txt" 2>&1 || {
			cat "$RESULTS/$PHASE-$cmd.txt"
			fail "nvme $cmd $target failed"
		}
		case "$cmd" in
		id-ctrl) grep -E '^(vid|sn|mn|fr|mdts|cntlid|ver|sqes|cqes|maxcmd|nn|sgls|ioccsz|iorcsz|subnqn) ' "$RESULTS/$PHASE-$cmd.txt" || true ;;
		id-ns) grep -E '^(nsze|ncap|nuse|nlbaf|flbas|lbaf)' "$RESULTS/$PHASE-$cmd.txt" || true ;;
		*) head -n 12 "$RESULTS/$PHASE-$cmd.txt" ;;
		esac
	done
	if [ "$PHASE" = ernicd ]; then check_id_ctrl "$RESULTS/$PHASE-id-ctrl.txt" "${ERNICD_MDTS:-5}" 8196 0; fi
	# The ratios compare targets that may split a large request differently: each row says what MDTS it had.
	v=$(id_ctrl_field "$RESULTS/$PHASE-id-ctrl.txt" mdts)
	backend="$backend,mdts=${v:-?}"
	[ "$SQFLOW" = on ] || backend="$backend,sqflow=off"
	log "nvme get-feature -f 7 /dev/$CTRL"
	nvme get-feature -f 7 "/dev/$CTRL" >"$RESULTS/$PHASE-feature-7.txt" 2>&1 || {
		cat "$RESULTS/$PHASE-feature-7.txt"
		fail "nvme get-feature -f 7 failed"
	}
	cat "$RESULTS/$PHASE-feature-7.txt"
	v=$(sed -n 's/.*Current value: *\(0x[0-9a-fA-F]*\).*/\1/p' "$RESULTS/$PHASE-feature-7.txt" | head -n 1)
	[ -n "$v" ] || fail "get-feature -f 7 printed no current value"
	log "number of queues: $((((v >> 16) & 0xffff) + 1)) completion, $(((v & 0xffff) + 1)) submission"
	check_queue_count "$c"
	SUITE_BACKEND=$backend
}

# The suite cases' rounds, with every target of the run connected at once (NVMET_DEV, ERNICD_DEV; an empty one
# is a phase left out) and the targets taking turns round by round, the order reversed every other round (nvmet,
# ernicd, ernicd, nvmet, ...). The machine under the guest is shared and its speed drifts over minutes: run
# back to back, 3 rounds of one target and then 3 of the other measured the drift as much as the targets. Each
# round appends its rows; ci/lane/run.sh takes the median per case.
# The targets take turns in each round: over the whole list of cases (ernic.pairing=round), or case by case
# (ernic.pairing=case), where each case runs on every target before the next case starts, so that a case's
# measurements on the targets lie seconds apart rather than a whole list of cases, and who goes first alternates
# from case to case as well as from round to round. ernicd's waits are summed over its turns in a round.
paired_rounds() {
	local r t g groups waits_before waits_sum i
	if [ "$PAIRING" = case ]; then groups=$SUITE_CASES; else groups=all; fi
	for r in $(seq "$ROUNDS"); do
		waits_sum="0 0 0 0 0 0 0"
		i=0
		for g in $groups; do
			for t in $(round_order $((r + i))); do
				case "$t" in
				nvmet) [ -n "$NVMET_DEV" ] || continue; DEV=$NVMET_DEV; SUITE_BACKEND=$NVMET_BACKEND ;;
				ernicd) [ -n "$ERNICD_DEV" ] || continue; DEV=$ERNICD_DEV; SUITE_BACKEND=$ERNICD_BACKEND ;;
				ernicd-b) DEV=$ERNICD_B_DEV; SUITE_BACKEND=$ERNICD_B_BACKEND ;;
				esac
				PHASE=$t
				ROUND=$r
				log "suite cases, round $r of $ROUNDS"
				[ "$t" != ernicd ] || waits_before="$(ernicd_waits "round-$r-before") $(ernicd_switches)"
				# shellcheck disable=SC2086 # word lists
				if [ "$g" = all ]; then run_suites "$SUITE_BACKEND" "$RESULTS/csv/$PHASE" $SUITE_CASES; else
					run_suites "$SUITE_BACKEND" "$RESULTS/csv/$PHASE" "$g"; fi
				[ "$t" = ernicd ] || continue
				waits_sum=$(waits_add "$waits_sum" "$waits_before" "$(ernicd_waits "round-$r-after") $(ernicd_switches)")
			done
			i=$((i + 1))
		done
		[ -n "$ERNICD_DEV" ] || continue
		echo "ERNIC-LANE-WAITS round $r: $(waits_report "0 0 0 0 0 0 0" "$waits_sum")"
		raised_check "0 0 0 0 0 0 0" "$waits_sum"
	done
	ROUND=""
}

waits_add() { # waits_add SUM BEFORE AFTER ("W S C R V N M" each): SUM + (AFTER - BEFORE), field by field
	echo "$1 $2 $3" | awk '{ for (i = 1; i <= 7; i++) printf "%s%d", (i > 1 ? " " : ""), $i + $(i + 14) - $(i + 7); print "" }'
}

ernicd_waits() { # ernicd_waits TAG: "waits spun caught raised" from ernicd's counters (tcp_waits, tcp_tx)
	ernicd_stats "$1"
	jq -r '"\(.tcp_waits.waits) \(.tcp_waits.spun) \(.tcp_waits.caught) \(.tcp_tx.raised_sends)"' "$ERNICD_STATS" |
		grep -E '^[0-9]+ [0-9]+ [0-9]+ [0-9]+$' ||
		fail "ernicd's counters have no tcp_waits or tcp_tx.raised_sends: $(cat "$ERNICD_STATS")"
}

# The lane's ernicd runs with its default --send-nice (-20) as root: a round with large reads (256 KiB, 1 MiB)
# that raised none of its sends did not do what the ratios of those cases are taken with.
raised_check() { # raised_check "W S C R V N M" "W S C R V N M" (ernicd_waits, ernicd_switches)
	# shellcheck disable=SC2086 # word lists
	set -- $1 $2
	case " $SUITE_CASES " in
	*" blocksize/256k "* | *" sequential/read "*)
		[ $((${11} - $4)) -gt 0 ] || fail "ernicd raised none of a round's large sends to its --send-nice" ;;
	esac
}

ernicd_switches() { # ernicd_switches: "voluntary involuntary migrations", summed over ernicd's threads
	local m
	# se.nr_migrations: how often the scheduler moved a thread to another CPU (CONFIG_SCHED_DEBUG; 0 without it)
	m=$(cat /proc/"$ERNICD_PID"/task/*/sched 2>/dev/null | awk '$1 == "se.nr_migrations" { m += $3 } END { print m + 0 }')
	cat /proc/"$ERNICD_PID"/task/*/status 2>/dev/null |
		awk -v m="$m" '/^voluntary_ctxt_switches:/ { v += $2 } /^nonvoluntary_ctxt_switches:/ { n += $2 } END { print v + 0, n + 0, m }'
}

# What ernicd's waits for the host in one round were: at queue depth 1 each command is one, and one not caught
# by the busy-poll cost a sleep and a wake-up (results/NOTEBOOK.md, "What queue depth 1 costs a target in
# userspace"). Its threads' involuntary context switches say whether they shared a CPU with another task that
# wanted it: a round of depth-1 reads has hundreds with ernicd on its own CPU (the kernel's threads there),
# thousands with ernicd on fio's, and far fewer waits, each command being in before ernicd runs again
# (results/NOTEBOOK.md, "Where ernicd runs at depth 1"); their migrations, whether
# the scheduler moved them between CPUs, as a wake-up beside its waker can (tens a round when a thread keeps its
# CPU). Then how many sends of 64 KiB or more it made at --send-nice. The waits, switches and migrations are
# logged, not judged (raised_check judges the sends): "ERNIC-LANE-WAITS round R: <line>", which run.sh puts under
# the ratio table.
waits_report() { # waits_report "W S C R V N M" "W S C R V N M": waits, spun, caught, raised sends, switches, migrations
	# shellcheck disable=SC2086 # word lists
	set -- $1 $2
	echo "ernicd waited for the host $(($8 - $1)) times in this round: $(($9 - $2)) busy-polled, $((${10} - $3)) caught" \
		"($(($8 - $1 ? 100 * (${10} - $3) / ($8 - $1) : 0))% of the waits); its threads were switched out" \
		"$((${12} - $5)) times sleeping, $((${13} - $6)) times preempted, moved to another CPU $((${14} - $7)) times;" \
		"$((${11} - $4)) sends raised to --send-nice"
}

exercise_finish() { # exercise_finish NQN BACKEND: disconnect, the digest cases over a reconnect, the CSV files out
	local nqn backend
	nqn=$1
	backend=$2
	echo "$PHASE reconnect with digests" >/run/lane-step
	log "disconnect"
	disconnect "$nqn"
	connect "$nqn" --hdr-digest --data-digest
	log "reconnected with header and data digests: controller $CTRL, namespace 1 is $DEV"
	# shellcheck disable=SC2086
	run_suites "$backend$DIGEST_LABEL" "$RESULTS/csv/$PHASE" $DIGEST_CASES
	log "disconnect"
	disconnect "$nqn"
	emit_csv "$RESULTS/csv/$PHASE"
}

# ---------------------------------------------------------------------------------------------------------------
# target 1: the kernel's nvmet-tcp, configured through configfs

NVMET=/sys/kernel/config/nvmet
nvmet_start() {
	local s p
	s=$NVMET/subsystems/$NQN_NVMET
	mkdir "$s" || fail "cannot create nvmet subsystem"
	echo 1 >"$s/attr_allow_any_host"
	NVMET_C=128
	if [ -e "$s/attr_qid_max" ]; then
		echo "$QUEUES" >"$s/attr_qid_max" || fail "cannot set attr_qid_max"
		NVMET_C=$QUEUES
	fi
	truncate -s "$NS_SIZE" /tmp/nvmet-ns1.img || fail "cannot create namespace file"
	mkdir "$s/namespaces/1"
	printf %s /tmp/nvmet-ns1.img >"$s/namespaces/1/device_path"
	echo 1 >"$s/namespaces/1/buffered_io" # tmpfs has no O_DIRECT
	echo 1 >"$s/namespaces/1/enable" || fail "cannot enable the file-backed namespace"
	p=$NVMET/ports/1
	mkdir "$p"
	echo tcp >"$p/addr_trtype"
	echo ipv4 >"$p/addr_adrfam"
	echo "$ADDR" >"$p/addr_traddr"
	echo "$PORT" >"$p/addr_trsvcid"
	ln -s "$s" "$p/subsystems/$NQN_NVMET" || fail "cannot bind the subsystem to the port"
	wait_listen ""
	log "nvmet-tcp listening on $ADDR:$PORT: $NQN_NVMET, $NS_SIZE file namespace on tmpfs, $NVMET_C I/O queues"
}

nvmet_stop() {
	local s i
	s=$NVMET/subsystems/$NQN_NVMET
	rm -f "$NVMET/ports/1/subsystems/$NQN_NVMET"
	rmdir "$NVMET/ports/1"
	echo 0 >"$s/namespaces/1/enable"
	rmdir "$s/namespaces/1" "$s"
	rm -f /tmp/nvmet-ns1.img
	set_deadline 5
	while listening; do
		if past_deadline; then fail "nvmet-tcp still listens on $ADDR:$PORT after removing the port"; fi
		sleep 0.1
	done
	log "nvmet-tcp target removed"
}

# nvmet-tcp listens on a port of its own, so that it can stay up through ernicd's part of the suite rounds.
nvmet_open() {
	PHASE=nvmet
	PORT=$PORT_NVMET
	nvmet_start
	exercise_setup "$NQN_NVMET" "$NVMET_C" "nvmet-tcp:file:size=$NS_SIZE,bs=4096,qid_max=$NVMET_C"
	NVMET_DEV=$DEV
	NVMET_BACKEND=$SUITE_BACKEND
	PORT=$PORT_MAIN
}

nvmet_close() {
	PHASE=nvmet
	PORT=$PORT_NVMET
	exercise_finish "$NQN_NVMET" "$NVMET_BACKEND"
	nvmet_stop
	PORT=$PORT_MAIN
}

# What a bare exchange between two processes over this guest's loopback costs, with no NVMe in it: the least a
# target in userspace pays per command at queue depth 1, printed beside the ratios (nvmet-tcp, in the kernel, does
# not pay it). Logged, not judged: "ERNIC-LANE-RTT <tcp_rtt's line>".
tcp_rtt_report() {
	PHASE=rtt
	local out line
	[ -x /bin/tcp_rtt ] || { log "no /bin/tcp_rtt in this guest: no bare round trip measured"; return 0; }
	log "tcp_rtt"
	out=$(tcp_rtt 2>&1) || { log "tcp_rtt failed: $out"; return 0; }
	printf '%s\n' "$out" | while IFS= read -r line; do echo "ERNIC-LANE-RTT $line"; done
}

# ---------------------------------------------------------------------------------------------------------------
# target 2: ernicd, when the initramfs has it

ERNICD_STATS=$RESULTS/ernicd-stats.json
ERNICD_LOG=$RESULTS/ernicd.log # stderr of the ernicd that ERNICD_PID names
ERNICD_PID=""
ERNICD_Q8_PID=""
ERNICD_BUDGET_PID=""

# ernicd_stats TAG [PID STATS LOG]: SIGUSR1, then ernicd's counters JSON in STATS; by default the phase's ernicd
# ($ERNICD_PID, $ERNICD_STATS, $ERNICD_LOG), else the one given
ernicd_stats() {
	# The JSON is read from the --stats file, or else from a new one-line JSON object on ernicd's stderr.
	local pid stats elog n j
	pid=${2:-$ERNICD_PID}
	stats=${3:-$ERNICD_STATS}
	elog=${4:-$ERNICD_LOG}
	rm -f "$stats"
	n=$(wc -l <"$elog")
	kill -USR1 "$pid" 2>/dev/null || fail "ernicd is not running (counters $1)"
	set_deadline 5
	while :; do
		# -s: jq -e takes an empty file for a true result
		if [ -s "$stats" ] && jq -e 'type == "object"' "$stats" >/dev/null 2>&1; then break; fi
		j=$(tail -n +"$((n + 1))" "$elog" | grep '^ *{.*} *$' | tail -n 1)
		if [ -n "$j" ] && printf '%s\n' "$j" | jq -e 'type == "object"' >/dev/null 2>&1; then
			printf '%s\n' "$j" >"$stats"
			break
		fi
		if past_deadline; then fail "ernicd printed no counters JSON (--stats file or stderr) within 5 s of SIGUSR1 ($1)"; fi
		sleep 0.1
	done
	cp "$stats" "$RESULTS/ernicd-stats-$1.json"
}

ernicd_counters() { # ernicd_counters TAG: SIGUSR1, then "mr_in_use controllers io_queues" (each summed over the JSON)
	ernicd_stats "$1"
	jq -r 'def total(k): if (.[k] | type) == "number" then .[k] else [.. | objects | .[k]? | numbers] | add // -1 end;
		"\(total("mr_in_use")) \(total("controllers")) \(total("io_queues"))"' "$ERNICD_STATS"
}

stop_ernicd() { # stop_ernicd PID NAME: SIGTERM, wait up to 10 s, fail unless it exits 0
	local pid rc
	pid=$1
	kill -TERM "$pid"
	set_deadline 10
	while [ -e "/proc/$pid/stat" ] && [ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -c1)" != Z ]; do
		if past_deadline; then
			kill -KILL "$pid"
			fail "$2 still running 10 s after SIGTERM"
		fi
		sleep 0.1
	done
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || fail "$2 exited $rc on SIGTERM"
	log "$2 exited 0 on SIGTERM"
}

ernicd_open() {
	PHASE=ernicd
	echo "ernicd start" >/run/lane-step
	if [ "$ERNICD_MDTS" = nvmet ]; then
		# Like for like: one 1 MiB read is one command on each target, or eight on each.
		ERNICD_MDTS=$(id_ctrl_field "$RESULTS/nvmet-id-ctrl.txt" mdts)
		log "ernicd takes nvmet-tcp's MDTS: ${ERNICD_MDTS:-none reported (nvmet phase skipped), its own 5}"
	fi
	truncate -s 64M /tmp/ernicd-ns2.img || fail "cannot create namespace file"
	# Namespace 1, the suite rounds' (ernicd-b's too).
	ERNICD_NS1="nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES${ERNICD_MDTS:+,mdts=$ERNICD_MDTS}"
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD" --backend "$ERNICD_NS1" \
		--backend "nvmeof:size=64M,bs=4096,file=/tmp/ernicd-ns2.img" \
		--stats "$ERNICD_STATS" ${ERNICD_CPUS:+--cpus "$ERNICD_CPUS"} $ERNICD_TCP_OPTS
	log "ernicd $*"
	ernicd "$@" 2>"$ERNICD_LOG" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
	log "ernicd listening on $ADDR:$PORT (pid $ERNICD_PID)"

	ERNICD_AT_REST=$(ernicd_counters baseline)
	log "counters at rest (mr_in_use controllers io_queues): $ERNICD_AT_REST"
	case "$ERNICD_AT_REST" in
	*-1*) fail "ernicd counters lack mr_in_use, controllers or io_queues: $(cat "$ERNICD_STATS")" ;;
	esac

	exercise_setup "$NQN_ERNICD" "$QUEUES" "ernicd:nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES"
	ERNICD_DEV=$DEV
	ERNICD_BACKEND=$SUITE_BACKEND
}

ernicd_close() {
	local base dev2 busy n m a i now pid port_main
	PHASE=ernicd
	base=$ERNICD_AT_REST
	exercise_finish "$NQN_ERNICD" "$ERNICD_BACKEND"

	# Namespace 2 is file-backed: the sub-block read and the integrity case on it too. Its rows stay in the guest
	# (the lane's CSV rows are namespace 1's, with an nvmet-tcp counterpart).
	echo "ernicd file namespace" >/run/lane-step
	connect "$NQN_ERNICD"
	dev2=$(ns_dev "$NQN_ERNICD" 2)
	[ -n "$dev2" ] || fail "namespace 2 (file backend) did not appear"
	log "namespace 2 (file backend) is $dev2"
	expect_einval_512 "$dev2"
	DEV=$dev2
	run_suites "ernicd:nvmeof:size=64M,bs=4096,file=tmpfs,queues=$QUEUES" "$RESULTS/csv-ns2" \
		integrity/ram-8m
	busy=$(ernicd_counters connected)
	log "counters while connected: $busy"
	# shellcheck disable=SC2086 # three numbers
	set -- $busy
	[ "$2" -ge 1 ] || fail "ernicd reports $2 controllers while one is connected"
	[ "$3" -ge 1 ] || fail "ernicd reports $3 I/O queues while a controller is connected"
	disconnect "$NQN_ERNICD"

	echo "ernicd connect/disconnect loop" >/run/lane-step
	log "20 x connect/disconnect"
	n=1
	while [ "$n" -le 20 ]; do
		connect "$NQN_ERNICD"
		disconnect "$NQN_ERNICD"
		n=$((n + 1))
	done
	i=0
	while :; do
		now=$(ernicd_counters after-loop)
		if [ "$now" = "$base" ]; then break; fi
		i=$((i + 1))
		[ "$i" -le 10 ] || fail "counters after 20 connect/disconnect: $now, at rest before: $base"
		sleep 0.5
	done
	log "counters back to rest after 20 connect/disconnect: $now"

	# A second instance started with queues=8, on its own port: queue_count at C=8.
	echo "ernicd queues=8" >/run/lane-step
	port_main=$PORT
	PORT=$PORT_Q8
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD_Q8" --backend "nvmeof:size=8M,bs=4096,queues=8"
	log "ernicd $*"
	ernicd "$@" 2>"$RESULTS/ernicd-q8.log" &
	ERNICD_Q8_PID=$!
	wait_listen "$ERNICD_Q8_PID"
	# Connected from its discovery log, as nvme connect-all does: the entry offers disabling SQ flow control
	# (TREQ), which ernicd honours over TCP, so the host asks for it on every queue, as it does of nvmet-tcp.
	log "connect-all: nvme connect-all -t tcp -a $ADDR -s $PORT -i 8 -W 8"
	nvme connect-all -t tcp -a "$ADDR" -s "$PORT" -i 8 -W 8 >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		fail "nvme connect-all to the queues=8 instance failed"
	}
	wait_ns1 "$NQN_ERNICD_Q8"
	# The discovery controller's own association comes first, with SQ flow control on: nothing told the host.
	n=$(grep -c ' connect host .* qid [1-9][0-9]* ' "$RESULTS/ernicd-q8.log" || true)
	m=$(grep -c ' connect host .* qid [1-9][0-9]* .*(sq flow control disabled)' "$RESULTS/ernicd-q8.log" || true)
	a=$(grep -c ' connect host .* qid 0 .*(sq flow control disabled)' "$RESULTS/ernicd-q8.log" || true)
	[ "$n" -gt 0 ] || fail "connect-all from ernicd's discovery log: ernicd logged no I/O queue connect"
	if [ "$m" -ne "$n" ] || [ "$a" -ne 1 ]; then
		fail "connect-all from ernicd's discovery log: SQ flow control disabled on $m of $n I/O queues and $a admin queues"
	fi
	log "connected to the queues=8 instance by connect-all: controller $CTRL, namespace 1 is $DEV;" \
		"SQ flow control disabled on its admin queue and all $n I/O queues"
	nvme get-feature -f 7 "/dev/$CTRL" 2>&1 | grep 'Current value' || fail "nvme get-feature -f 7 on the queues=8 instance failed"
	# Started with ernicd's defaults whatever mdts= the main instance has: its Identify is the emulator's own.
	nvme id-ctrl "/dev/$CTRL" >"$RESULTS/$PHASE-q8-id-ctrl.txt" 2>&1 || fail "nvme id-ctrl on the queues=8 instance failed"
	check_id_ctrl "$RESULTS/$PHASE-q8-id-ctrl.txt" 5 8196 0
	check_queue_count 8
	disconnect "$NQN_ERNICD_Q8"
	pid=$ERNICD_Q8_PID
	ERNICD_Q8_PID=""
	stop_ernicd "$pid" "ernicd (queues=8)"

	# A third instance, its namespace a file and its --buffer-budget 1M (eight 128 KiB buffers), under 128 KiB
	# writes at depth 32, every block then read back and checked: the Linux host sends each write in its
	# capsule, which finds no buffer once the budget is held and is gathered in the receive buffer; the reads
	# wait for buffers before they execute. Every block must come back as written, and ernicd must count waits.
	echo "ernicd buffer budget" >/run/lane-step
	PORT=$PORT_BUDGET
	truncate -s 64M /tmp/ernicd-budget.img || fail "cannot create namespace file"
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD_BUDGET" \
		--backend "nvmeof:size=64M,bs=4096,file=/tmp/ernicd-budget.img" --buffer-budget 1M \
		--stats "$RESULTS/ernicd-budget-stats.json"
	log "ernicd $*"
	ernicd "$@" 2>"$RESULTS/ernicd-budget.log" &
	ERNICD_BUDGET_PID=$!
	wait_listen "$ERNICD_BUDGET_PID"
	connect "$NQN_ERNICD_BUDGET"
	fio_verify_start budget 128k 32 32
	fio_verify_wait budget
	disconnect "$NQN_ERNICD_BUDGET"
	pid=$ERNICD_BUDGET_PID
	ERNICD_BUDGET_PID=""
	stop_ernicd "$pid" "ernicd (--buffer-budget 1M)"
	m=$(jq -r '"\(.tcp_buf.waits) \(.tcp_buf.budget)"' "$RESULTS/ernicd-budget-stats.json" 2>/dev/null || echo none)
	case "$m" in
	"0 "* | none | null* | *" null") fail "--buffer-budget 1M: no command waited for a buffer (tcp_buf: $m)" ;;
	esac
	log "--buffer-budget 1M: 32 MiB of 128 KiB writes at depth 32 and their verify passed;" \
		"commands that waited for a buffer, and the budget: $m"
	PORT=$port_main

	echo "ernicd stop" >/run/lane-step
	pid=$ERNICD_PID
	ERNICD_PID=""
	rm -f "$ERNICD_STATS"
	log "ernicd logged $(grep -c ' connect ' "$ERNICD_LOG") connects and" \
		"$(grep -c ' disconnect ' "$ERNICD_LOG") disconnects; its last lines:"
	stop_ernicd "$pid" ernicd
	grep -v '^ *{' "$ERNICD_LOG" | tail -n 6 | sed 's/^/  ernicd: /'
	if [ -s "$ERNICD_STATS" ]; then emit_json ernicd-stats-exit "$ERNICD_STATS"; fi
}

# ---------------------------------------------------------------------------------------------------------------
# ernicd under faults and load, with the kernel host's recovery policy and a crc32c write-then-verify fio job
# running through each fault: ernicd killed and restarted, its connections reset, connection and controller load.

NQN_FAULTS=nqn.2024-01.org.ernic:lane-faults
FAULTS_IMG=/tmp/faults-ns1.img
# The host keeps a lost controller for 10 minutes and retries every second: while ernicd is gone its I/O waits and
# is sent again on the new association instead of failing.
RECOVERY="--ctrl-loss-tmo=600 --reconnect-delay=1"
VERIFY_MIB=16 # each verify job writes this many MiB once, in 4 KiB blocks, then reads all of it back
VERIFY_BLOCKS=$((VERIFY_MIB * 256))
FAULT_AFTER=500 # blocks the job has written (or read back) before a fault is injected
LOAD_CONNECTIONS=1000
LOAD_DISCOVERY=64
LOAD_CONTROLLERS=64
LOAD_HOLD=3
FIO_PID=""

faults_ernicd_start() {
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_FAULTS" \
		--backend "nvmeof:size=64M,bs=4096,file=$FAULTS_IMG,queues=$QUEUES" --stats "$ERNICD_STATS"
	log "ernicd $*"
	ernicd "$@" 2>>"$ERNICD_LOG" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
}

ernicd_io() { # ernicd_io OPC: I/O commands OPC (write, read) ernicd has executed since it started
	ernicd_stats "io-$1"
	jq -r --arg o "$1" '.io_cmds[$o] // 0' "$ERNICD_STATS"
}

# A write-then-verify job: every block of the region (4 KiB unless BS says) written once with a crc32c header
# (offset, seed, checksum), then every block read back and checked; verify_fatal stops at the first bad block.
# fio_verify_start NAME [BS MIB DEPTH]: the job on $DEV in the background, FIO_PID; MIB (default VERIFY_MIB) in
# FIO_VERIFY_MIB for the check
fio_verify_start() {
	FIO_VERIFY_MIB=${3:-$VERIFY_MIB}
	fio --name="$1" --filename="$DEV" --rw=randwrite --bs="${2:-4k}" --size="${FIO_VERIFY_MIB}m" --direct=1 \
		--ioengine=libaio --iodepth="${4:-16}" --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--output-format=json --output="$RESULTS/fio-$1.json" >"$RESULTS/fio-$1.out" 2>&1 &
	FIO_PID=$!
}

fio_verify_check() { # fio_verify_check NAME RC: exit 0, no error, all FIO_VERIFY_MIB written and all read back
	local err w r want
	want=$((FIO_VERIFY_MIB * 1024 * 1024))
	err=$(jq -r '.jobs[0].error' "$RESULTS/fio-$1.json" 2>/dev/null || echo none)
	w=$(jq -r '.jobs[0].write.io_bytes' "$RESULTS/fio-$1.json" 2>/dev/null || echo none)
	r=$(jq -r '.jobs[0].read.io_bytes' "$RESULTS/fio-$1.json" 2>/dev/null || echo none)
	if [ "$2" -ne 0 ] || [ "$err" != 0 ] || [ "$w" != "$want" ] || [ "$r" != "$want" ]; then
		cat "$RESULTS/fio-$1.out"
		fail "fio verify job $1: exit $2, error $err, $w bytes written and $r read back of $want"
	fi
}

fio_verify_wait() { # fio_verify_wait NAME
	local rc
	rc=0
	wait "$FIO_PID" || rc=$?
	FIO_PID=""
	fio_verify_check "$1" "$rc"
	log "fio $1: $FIO_VERIFY_MIB MiB written and read back, crc32c verify clean"
}

# The path's block device counts completed I/O (6.1's multipath head node does not account it); the controller
# keeps its namespaces, and their counts, across reconnects. Polled instead of ernicd's counters: a SIGUSR1 and jq
# per poll would take the CPU the job runs on.
dev_io() { # dev_io OPC: reads or writes completed on $CTRL's namespace 1 since it appeared
	local stat p
	stat=/sys/class/block/$(basename "$DEV")
	for p in "/sys/class/nvme/$CTRL/"nvme*c*n1; do
		if [ -e "$p/stat" ]; then stat=$p; fi
	done
	case "$1" in
	read) awk '{ print $1 }' "$stat/stat" ;;
	write) awk '{ print $5 }' "$stat/stat" ;;
	esac
}

wait_io() { # wait_io OPC COUNT WHAT: until the namespace has completed COUNT I/Os OPC while the fio job runs
	local n
	set_deadline 60
	while :; do
		n=$(dev_io "$1")
		if [ "$n" -ge "$2" ]; then break; fi
		kill -0 "$FIO_PID" 2>/dev/null || fail "the fio job ended before $3 ($n of $2 $1 commands)"
		if past_deadline; then fail "$n of $2 $1 commands completed in 60 s, before $3"; fi
		sleep 0.1
	done
	echo "$n"
}

wait_not_live() { # wait_not_live WHAT: until $CTRL leaves live, the host having seen the fault
	set_deadline 10
	while [ "$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null)" = live ]; do
		if past_deadline; then fail "$CTRL still live 10 s after $1: the host did not see it"; fi
		sleep 0.05
	done
	log "$CTRL is $(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null || echo gone) after $1"
}

wait_live() { # wait_live WHAT [OLD-CNTLID]: until $CTRL is live again (on a new controller if OLD-CNTLID is given)
	local t0
	t0=$(now_cs)
	set_deadline 60
	while [ "$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null)" != live ] ||
		[ "$(cat "/sys/class/nvme/$CTRL/cntlid" 2>/dev/null)" = "${2:-none}" ]; do
		if past_deadline; then
			fail "$CTRL not live on a new controller 60 s after $1" \
				"(state $(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null), cntlid $(cat "/sys/class/nvme/$CTRL/cntlid"))"
		fi
		sleep 0.1
	done
	log "$CTRL live again, cntlid $(cat "/sys/class/nvme/$CTRL/cntlid"), $((($(now_cs) - t0) * 10)) ms after $1"
}

# kill -9 mid-write-phase, restart on the same file, NQN and port. A write ernicd acknowledged is in the page cache
# of the guest's tmpfs, which the process's death does not touch (the guest's kernel stays up), so every
# acknowledged write must read back; writes in flight at the kill were never acknowledged and the host sends them
# again after it reconnects. The job survives the crash (its I/O waits in the host), so its own verify phase
# checks every block: no verify_state file is needed.
faults_crash() {
	local w pid
	echo "faults crash" >/run/lane-step
	w=$(dev_io write)
	fio_verify_start crash
	w=$(($(wait_io write $((w + FAULT_AFTER)) "ernicd was killed") - w))
	[ "$w" -lt "$VERIFY_BLOCKS" ] || fail "the write phase was over ($w writes) before ernicd could be killed"
	pid=$ERNICD_PID
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	log "ernicd (pid $pid) killed with SIGKILL after $w of the job's $VERIFY_BLOCKS writes"
	wait_not_live "ernicd's SIGKILL"
	faults_ernicd_start
	log "ernicd restarted (pid $ERNICD_PID) on $FAULTS_IMG"
	wait_live "ernicd's restart"
	fio_verify_wait crash
	# The job's writes spanned the crash only if the new instance executed some of them.
	w=$(ernicd_io write)
	[ "$w" -gt 0 ] || fail "the restarted ernicd executed no write of the job"
	log "the restarted ernicd executed $w of the job's writes"
}

drop_connections() { # drop_connections WHAT: reset every established TCP connection to or from $PORT, both ends
	local n cntlid
	cntlid=$(cat "/sys/class/nvme/$CTRL/cntlid")
	n=$(ss -K -t -n -H state established "( sport = :$PORT or dport = :$PORT )" | wc -l)
	# How many ends ss resets varies: once the first one goes, the host tears its other queues down itself.
	[ "$n" -ge 1 ] || fail "ss -K found no connection to reset $1"
	log "ss -K reset $n socket ends $1"
	wait_live "the connection reset $1" "$cntlid"
}

# Only ernicd's end of the admin queue's connection (its host port from ernicd's connect line): ernicd's controller
# is fatal at once while the host, which learns of it a moment later, keeps sending on the I/O queues. Those
# commands must go unanswered and the queues close (an error status there makes the host resend at once and fail
# the I/O with EIO after 5 tries).
drop_admin_connection() { # drop_admin_connection WHAT
	local cntlid hport n
	cntlid=$(cat "/sys/class/nvme/$CTRL/cntlid")
	hport=$(grep -o "qid 0 cntlid $cntlid peer [^ ]*" "$ERNICD_LOG" | tail -n 1 | sed 's/.*://')
	[ -n "$hport" ] || fail "no connect line of cntlid $cntlid's admin queue in ernicd's log $1"
	n=$(ss -K -t -n -H state established "( sport = :$PORT and dport = :$hport )" | wc -l)
	[ "$n" -eq 1 ] || fail "ss -K reset $n sockets of the admin queue (host port $hport) $1, not 1"
	log "ss -K reset ernicd's end of the admin queue's connection (host port $hport) $1"
	wait_live "the admin queue's reset $1" "$cntlid"
}

# The host's and ernicd's sockets are reset with ss -K (SOCK_DESTROY: the kernel config has
# CONFIG_INET_DIAG_DESTROY=y; tcp_diag is a module of the lane). Unlike an iptables REJECT rule, which needs
# x_tables, conntrack and their modules and a rule to take away again, it cuts exactly the connections that exist
# and leaves the port open for the reconnect. Every connection while the job writes and while it reads back, then
# ernicd's end of the admin queue's alone while it still reads back.
faults_link() {
	local w r
	echo "faults link" >/run/lane-step
	w=$(dev_io write)
	fio_verify_start link
	wait_io write $((w + FAULT_AFTER)) "the connections were reset during writes" >/dev/null
	drop_connections "during the write phase"
	# Counted from here: a reconnect may give the path a new block device whose counters start again at 0.
	r=$(dev_io read)
	wait_io read $((r + FAULT_AFTER)) "the connections were reset during verify reads" >/dev/null
	drop_connections "during the verify phase"
	r=$(dev_io read)
	wait_io read $((r + FAULT_AFTER)) "the admin queue's connection was reset during verify reads" >/dev/null
	drop_admin_connection "during the verify phase"
	fio_verify_wait link
}

load_field() { # load_field LINE MODE KEY: the number KEY=N in MODE's part of nvmf_tcp_load's line (0 if absent)
	printf '%s\n' "$1" | tr ';' '\n' | awk -v m="$2:" -v k="$3=" '
		index($0, m) { n = split($0, w, /[ (),]+/); for (i = 1; i <= n; i++) if (index(w[i], k) == 1) v = substr(w[i], length(k) + 1) }
		END { print v == "" ? 0 : v }'
}

# While the host keeps write-then-verify jobs going: LOAD_CONNECTIONS connections opened and closed, then
# LOAD_DISCOVERY discovery controllers and LOAD_CONTROLLERS controllers (distinct host NQNs) held at once. Checks:
# every churned Connect succeeds; discovery controllers never take the slots of the subsystem's controllers, so
# all LOAD_CONTROLLERS succeed but for the slots real hosts hold; every refusal is Controller Busy; the host's
# controller keeps its association and its jobs verify; afterwards ernicd's counters are as before.
faults_load() {
	local before cntlid line rounds bad ok tried busy want now i
	echo "faults load" >/run/lane-step
	before=$(ernicd_counters before-load)
	cntlid=$(cat "/sys/class/nvme/$CTRL/cntlid")
	log "counters before the load (mr_in_use controllers io_queues): $before; host cntlid $cntlid"
	rm -f /run/load-stop /run/load-failed /run/load-rounds
	(
		n=0
		while [ ! -e /run/load-stop ]; do
			n=$((n + 1))
			rc=0
			fio --name="load-$n" --filename="$DEV" --rw=randwrite --bs=4k --size=4m --direct=1 \
				--ioengine=libaio --iodepth=4 --verify=crc32c --do_verify=1 --verify_fatal=1 \
				--output-format=json --output="$RESULTS/fio-load.json" >"$RESULTS/fio-load.out" 2>&1 || rc=$?
			if [ "$rc" -ne 0 ] || [ "$(jq -r '.jobs[0].error' "$RESULTS/fio-load.json")" != 0 ]; then
				echo "round $n: exit $rc, $(tail -n 3 "$RESULTS/fio-load.out" | tr '\n' ' ')" >/run/load-failed
				break
			fi
		done
		echo "$n" >/run/load-rounds
	) &
	FIO_PID=$!
	wait_io write $(($(dev_io write) + 100)) "the load started" >/dev/null

	bad=""
	line=$(nvmf_tcp_load --addr "$ADDR" --port "$PORT" --nqn "$NQN_FAULTS" --enable \
		--connections "$LOAD_CONNECTIONS" 2>"$RESULTS/load-churn.err") || true
	log "$line"
	ok=$(load_field "$line" connections ok)
	[ "$ok" = "$LOAD_CONNECTIONS" ] || bad="$bad; $ok of $LOAD_CONNECTIONS connections succeeded"
	[ "$(load_field "$line" connections cc_en_refused)" = 0 ] || bad="$bad; CC.EN refused after a Connect"

	line=$(nvmf_tcp_load --addr "$ADDR" --port "$PORT" --nqn "$NQN_FAULTS" --enable --hold "$LOAD_HOLD" \
		--discovery "$LOAD_DISCOVERY" --controllers "$LOAD_CONTROLLERS" 2>"$RESULTS/load-held.err") || true
	log "$line"
	# shellcheck disable=SC2086 # three numbers
	set -- $before
	want=$((LOAD_CONTROLLERS - $2))
	for m in discovery controllers; do
		tried=$(load_field "$line" $m tried)
		ok=$(load_field "$line" $m ok)
		busy=$(load_field "$line" $m CONNECT_CTRL_BUSY)
		if [ "$tried" -eq 0 ] || [ $((ok + busy)) -ne "$tried" ]; then
			bad="$bad; $m: $tried tried, $ok ok, $busy refused Controller Busy, the rest failed otherwise"
		fi
		[ "$(load_field "$line" $m cc_en_refused)" = 0 ] || bad="$bad; $m: CC.EN refused after a Connect"
	done
	[ "$(load_field "$line" discovery ok)" -ge 1 ] || bad="$bad; no discovery controller was accepted"
	ok=$(load_field "$line" controllers ok)
	if [ "$ok" -lt "$want" ]; then
		bad="$bad; $ok of $LOAD_CONTROLLERS controllers accepted while discovery controllers were held,"
		bad="$bad expected at least $want ($LOAD_CONTROLLERS less the $2 the host holds)"
	fi

	touch /run/load-stop
	wait "$FIO_PID" || true
	FIO_PID=""
	rounds=$(cat /run/load-rounds 2>/dev/null || echo 0)
	if [ -e /run/load-failed ]; then bad="$bad; the host's fio job failed: $(cat /run/load-failed)"; fi
	log "the host ran $rounds write-then-verify jobs of 4 MiB during the load"
	if [ "$(cat "/sys/class/nvme/$CTRL/state")" != live ] || [ "$(cat "/sys/class/nvme/$CTRL/cntlid")" != "$cntlid" ]; then
		bad="$bad; the host's controller $CTRL lost its association (cntlid $cntlid) during the load"
	fi

	i=0
	while :; do
		now=$(ernicd_counters after-load)
		if [ "$now" = "$before" ]; then break; fi
		i=$((i + 1))
		if [ "$i" -gt 20 ]; then
			bad="$bad; counters after the load: $now, before: $before"
			break
		fi
		sleep 0.5
	done
	log "counters after the load: $now"
	[ -z "$bad" ] || fail "load:${bad#;}"
}

phase_faults() {
	local base now i pid
	PHASE=faults
	ERNICD_LOG=$RESULTS/ernicd-faults.log
	echo "faults start" >/run/lane-step
	for m in inet_diag tcp_diag; do modprobe "$m" || fail "modprobe $m failed"; done
	truncate -s 64M "$FAULTS_IMG" || fail "cannot create $FAULTS_IMG"
	faults_ernicd_start
	base=$(ernicd_counters baseline-faults)
	# shellcheck disable=SC2086 # word list
	connect "$NQN_FAULTS" $RECOVERY
	log "connected with $RECOVERY: controller $CTRL, namespace 1 is $DEV"
	faults_crash
	faults_link
	faults_load
	disconnect "$NQN_FAULTS"
	i=0
	while :; do
		now=$(ernicd_counters after-faults)
		if [ "$now" = "$base" ]; then break; fi
		i=$((i + 1))
		[ "$i" -le 10 ] || fail "counters after the faults and the disconnect: $now, at rest before: $base"
		sleep 0.5
	done
	log "counters back to rest: $now"
	pid=$ERNICD_PID
	ERNICD_PID=""
	stop_ernicd "$pid" ernicd
	rm -f "$FAULTS_IMG"
}

# ---------------------------------------------------------------------------------------------------------------
# target 3: ernicd-b, a second build of ernicd, when the initramfs has one (ci/lane/run.sh, LANE_ERNICD_B)

ERNICD_B_LOG=$RESULTS/ernicd-b.log
ERNICD_B_PID=""

# Started as the suite rounds' ernicd is, namespace 1 only, after ernicd_open (whose MDTS it takes).
ernicd_b_open() {
	PHASE=ernicd-b
	PORT=$PORT_ERNICD_B
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD_B" --backend "$ERNICD_NS1" \
		${ERNICD_CPUS:+--cpus "$ERNICD_CPUS"} $ERNICD_B_OPTS
	log "ernicd-b $*"
	ernicd-b "$@" 2>"$ERNICD_B_LOG" &
	ERNICD_B_PID=$!
	wait_listen "$ERNICD_B_PID"
	exercise_setup "$NQN_ERNICD_B" "$QUEUES" "ernicd-b:nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES"
	ERNICD_B_DEV=$DEV
	ERNICD_B_BACKEND=$SUITE_BACKEND
	PORT=$PORT_MAIN
}

# As the other two targets close: the digest cases over a reconnect with header and data digests, so that the
# ernicd-b / ernicd table has that case too.
ernicd_b_close() {
	local pid
	PHASE=ernicd-b
	PORT=$PORT_ERNICD_B
	exercise_finish "$NQN_ERNICD_B" "$ERNICD_B_BACKEND"
	PORT=$PORT_MAIN
	pid=$ERNICD_B_PID
	ERNICD_B_PID=""
	stop_ernicd "$pid" ernicd-b
}

# ---------------------------------------------------------------------------------------------------------------

# Phases kept in files of their own (ci/lane/phase-*.sh, copied next to /init as /lane/).
for f in /lane/phase-*.sh; do
	# shellcheck disable=SC1090
	[ -e "$f" ] && . "$f"
done

setup_system
skip=,$(cmdline_opt ernic.skip none),
tcp_rtt_report
run_nvmet=1
run_ernicd=1
case "$skip" in *,nvmet,*) log "nvmet phase skipped (ernic.skip)"; run_nvmet=0 ;; esac
if [ ! -x /bin/ernicd ]; then
	log "ernicd phases skipped: no /bin/ernicd in this guest"
	run_ernicd=0
fi
case "$skip" in *,ernicd,*) log "ernicd phase skipped (ernic.skip)"; run_ernicd=0 ;; esac
# The nvmet and ernicd phases: each target set up and checked, then the suite rounds taken in turns with both
# connected, then each target's digest cases and the rest of its checks.
if [ "$run_nvmet" = 1 ]; then nvmet_open; fi
if [ "$run_ernicd" = 1 ]; then ernicd_open; fi
if [ "$run_ernicd" = 1 ] && [ -x /bin/ernicd-b ]; then ernicd_b_open; fi
paired_rounds
if [ -n "$ERNICD_B_DEV" ]; then ernicd_b_close; fi
if [ "$run_nvmet" = 1 ]; then nvmet_close; fi
if [ "$run_ernicd" = 1 ]; then ernicd_close; fi
PHASE=ernicd
if [ -x /bin/ernicd ]; then
	case "$skip" in
	*,faults,*) log "faults phase skipped (ernic.skip)" ;;
	*)
		[ -x /bin/nvmf_tcp_load ] || fail "no /bin/nvmf_tcp_load in this guest: the faults phase needs it"
		phase_faults
		;;
	esac
	case "$skip" in
	*,rdma,*) log "rdma phase skipped (ernic.skip)" ;;
	*) phase_rdma ;;
	esac
	case "$skip" in
	*,ctl,*) log "ctl phase skipped (ernic.skip)" ;;
	*) phase_ctl ;;
	esac
fi
case "$skip" in
*,lad,*) log "lad phase skipped (ernic.skip)" ;;
*) phase_lad ;;
esac
case "$skip" in
*,passthru,*) log "passthru phase skipped (ernic.skip)" ;;
*) phase_passthru ;;
esac
PHASE=end
log "all phases done"
finish PASS
