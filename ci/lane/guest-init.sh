#!/bin/sh
# /init of the lane's guest: the Linux NVMe/TCP initiator (nvme-tcp, nvme-cli, fio on a block device) against
# the kernel's nvmet-tcp target and, when /bin/ernicd is in the initramfs, against ernicd; both listen on the
# guest's 127.0.0.1:4420 (the guest has no network device).
#
# Each target goes through the same sequence: discover, connect (-i 8 -W 8), nvme-cli identify and log pages,
# queue_count against min(2*min(C,cpus),C)+1 (a shortfall is logged), the same suites/run cases on /dev/nvme0n1
# (SUITE_CASES: the 512-byte and 1 KiB sub-block cases must fail with EINVAL, integrity/ram-8m is a crc32c
# verify), a reconnect with header and data digests and the integrity case again, disconnect. ernicd also has its
# id-ctrl fields checked against the emulator's, a file namespace checked, 20 connect/disconnect rounds with its
# counters back at rest, and a second instance started with queues=8 for the queue_count check at C=8.
#
# Prints step lines "lane [uptime] <phase>: <what>", the suites' CSV files between
# "ERNIC-LANE-CSV-BEGIN <phase> <suite>" and "ERNIC-LANE-CSV-END <phase> <suite>", ernicd's exit counters as JSON
# between "ERNIC-LANE-JSON-BEGIN <name>" and "ERNIC-LANE-JSON-END <name>", and last exactly one line
# "ERNIC-LANE: PASS" or "ERNIC-LANE: FAIL <reason>", then powers off.
# Kernel command line: ernic.timeout=SECONDS (guest watchdog, default 270), ernic.skip=nvmet|ernicd,
# ernic.runtime=SECONDS (per time-based suite case, default 1), ernic.commit=ID (the CSV rows' commit column).
# Runs under busybox ash, which, like dash, has 'local'.
# shellcheck shell=dash
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

ADDR=127.0.0.1
PORT=4420 # the port connect, discover and wait_listen use: the current target's
PORT_Q8=4421
NQN_NVMET=nqn.2024-01.org.ernic:lane-nvmet
NQN_ERNICD=nqn.2024-01.org.ernic:lane-ernicd
NQN_ERNICD_Q8=nqn.2024-01.org.ernic:lane-ernicd-q8
QUEUES=4 # I/O queues each target is configured with (C)
NS_SIZE=128M # namespace 1 of both targets
# suites/run cases, identical for both targets; the ratios ernicd / nvmet-tcp are taken case by case.
SUITE_CASES="patterns/randread patterns/randwrite patterns/randrw-70-30 qdepth/qd1 qdepth/qd32 blocksize/256k
sequential/read sequential/write subblock/read-512-on-4k subblock/write-1k-on-4k integrity/ram-8m"
DIGEST_CASES="integrity/ram-8m" # after the reconnect with --hdr-digest --data-digest
DIGEST_LABEL=" +hdgst+ddgst"     # appended to the backend column of those rows
RESULTS=/results
PHASE=init
WATCHDOG=""

# ---------------------------------------------------------------------------------------------------------------
# reporting

log() {
	read -r up _ </proc/uptime 2>/dev/null || up='?'
	echo "lane [$up] $PHASE: $*"
}

finish() { # finish MARKER-TEXT: the single marker line, then power off
	trap - EXIT
	if [ -n "$WATCHDOG" ]; then kill "$WATCHDOG" 2>/dev/null || true; fi
	if [ -n "${ERNICD_PID:-}" ]; then kill -TERM "$ERNICD_PID" 2>/dev/null || true; fi
	if [ -n "${ERNICD_Q8_PID:-}" ]; then kill -TERM "$ERNICD_Q8_PID" 2>/dev/null || true; fi
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
	if [ "$PHASE" = ernicd ] && [ -s "$RESULTS/ernicd.log" ]; then
		echo "lane: last lines of ernicd's stderr:" >/dev/console
		tail -n 40 "$RESULTS/ernicd.log" | sed 's/^/  ernicd: /' >/dev/console
	fi
	if [ "$PHASE" = ernicd ] && [ -s "$RESULTS/ernicd-q8.log" ]; then
		echo "lane: last lines of the queues=8 ernicd's stderr:" >/dev/console
		tail -n 20 "$RESULTS/ernicd-q8.log" | sed 's/^/  ernicd-q8: /' >/dev/console
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

	timeout=$(cmdline_opt ernic.timeout 270)
	RUNTIME=$(cmdline_opt ernic.runtime 1)
	COMMIT=$(cmdline_opt ernic.commit unknown)
	(
		sleep "$timeout"
		echo "ERNIC-LANE: FAIL watchdog: no verdict after ${timeout}s, last step: $(cat /run/lane-step 2>/dev/null)"
		poweroff -f
	) &
	WATCHDOG=$!

	log "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpus, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)"
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
	log "connect: nvme connect -t tcp -a $ADDR -s $PORT -n $nqn -i 8 -W 8 $*"
	nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$nqn" -i 8 -W 8 "$@" >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		fail "nvme connect to $nqn failed"
	}
	set_deadline 20
	CTRL=""
	DEV=""
	while :; do
		[ -n "$CTRL" ] || CTRL=$(ctrl_of "$nqn")
		[ -z "$CTRL" ] || DEV=$(ns_dev "$nqn" 1)
		if [ -n "$DEV" ]; then break; fi
		if past_deadline; then fail "no live controller with namespace 1 for $nqn after 20 s (ctrl '${CTRL}')"; fi
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

run_suites() { # run_suites BACKEND-LABEL CSV-DIR CASE...: suites/run on $DEV, fail the lane if a case fails
	local backend dir rc
	backend=$1
	dir=$2
	shift 2
	echo "$PHASE suites/run $*" >/run/lane-step
	log "suites/run $* --target $DEV --transport tcp --runtime $RUNTIME --backend '$backend'"
	rc=0
	ERNIC_COMMIT=$COMMIT /ernic/suites/run "$@" --target "$DEV" --transport tcp --runtime "$RUNTIME" \
		--backend "$backend" --csv-dir "$dir" || rc=$?
	[ "$rc" -eq 0 ] || fail "suites/run exited $rc on $DEV ($*)"
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

check_id_ctrl() { # check_id_ctrl FILE: nvme id-ctrl output against the emulator's controller parameters
	local want k v
	# ioccsz 516 = 4 + 8192/16: ernicd accepts 8 KiB of in-capsule data over TCP.
	for want in mdts=5 maxcmd=128 ioccsz=516; do
		k=${want%=*}
		v=$(awk -v k="$k" '$1 == k && $2 == ":" { print $3; exit }' "$1")
		[ "$v" = "${want#*=}" ] || fail "id-ctrl $k is '$v', the emulator reports ${want#*=}"
	done
	v=$(awk '$1 == "sgls" && $2 == ":" { print $3; exit }' "$1")
	case "$v" in
	0x[0-9a-fA-F]* | [0-9]*) ;;
	*) fail "id-ctrl has no numeric sgls field (got '$v')" ;;
	esac
	[ $((v & 4)) -ne 0 ] || fail "id-ctrl sgls $v: keyed SGL data block (bit 2) is not set"
	log "id-ctrl as the emulator reports: mdts 5, maxcmd 128, ioccsz 516, sgls $v (keyed SGL, bit 2, set)"
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

exercise() { # exercise NQN C BACKEND-LABEL: C = I/O queues the target was started with
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
	if [ "$PHASE" = ernicd ]; then check_id_ctrl "$RESULTS/$PHASE-id-ctrl.txt"; fi
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

	# shellcheck disable=SC2086 # word lists
	run_suites "$backend" "$RESULTS/csv/$PHASE" $SUITE_CASES

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

phase_nvmet() {
	PHASE=nvmet
	nvmet_start
	exercise "$NQN_NVMET" "$NVMET_C" "nvmet-tcp:file:size=$NS_SIZE,bs=4096,qid_max=$NVMET_C"
	nvmet_stop
}

# ---------------------------------------------------------------------------------------------------------------
# target 2: ernicd, when the initramfs has it

ERNICD_STATS=$RESULTS/ernicd-stats.json
ERNICD_PID=""
ERNICD_Q8_PID=""

ernicd_counters() { # ernicd_counters TAG: SIGUSR1, then "mr_in_use controllers io_queues" (each summed over the JSON)
	# The JSON is read from the --stats file, or else from a new one-line JSON object on ernicd's stderr.
	local n j
	rm -f "$ERNICD_STATS"
	n=$(wc -l <"$RESULTS/ernicd.log")
	kill -USR1 "$ERNICD_PID" 2>/dev/null || fail "ernicd is not running (counters $1)"
	set_deadline 5
	while :; do
		if jq -e 'type == "object"' "$ERNICD_STATS" >/dev/null 2>&1; then break; fi
		j=$(tail -n +"$((n + 1))" "$RESULTS/ernicd.log" | grep '^ *{.*} *$' | tail -n 1)
		if [ -n "$j" ] && printf '%s\n' "$j" | jq -e 'type == "object"' >/dev/null 2>&1; then
			printf '%s\n' "$j" >"$ERNICD_STATS"
			break
		fi
		if past_deadline; then fail "ernicd printed no counters JSON (--stats file or stderr) within 5 s of SIGUSR1 ($1)"; fi
		sleep 0.1
	done
	cp "$ERNICD_STATS" "$RESULTS/ernicd-stats-$1.json"
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

phase_ernicd() {
	local base dev2 busy n i now pid port_main
	PHASE=ernicd
	echo "ernicd start" >/run/lane-step
	truncate -s 64M /tmp/ernicd-ns2.img || fail "cannot create namespace file"
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD" \
		--backend "nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES" \
		--backend "nvmeof:size=64M,bs=4096,file=/tmp/ernicd-ns2.img,queues=$QUEUES" \
		--stats "$ERNICD_STATS"
	log "ernicd $*"
	ernicd "$@" 2>"$RESULTS/ernicd.log" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
	log "ernicd listening on $ADDR:$PORT (pid $ERNICD_PID)"

	base=$(ernicd_counters baseline)
	log "counters at rest (mr_in_use controllers io_queues): $base"
	case "$base" in *-1*) fail "ernicd counters lack mr_in_use, controllers or io_queues: $(cat "$ERNICD_STATS")" ;; esac

	exercise "$NQN_ERNICD" "$QUEUES" "ernicd:nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES"

	# Namespace 2 is file-backed: the sub-block read and the integrity case on it too. Its rows stay in the guest
	# (the lane's CSV rows are /dev/nvme0n1's, with an nvmet-tcp counterpart).
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
	connect "$NQN_ERNICD_Q8"
	log "connected to the queues=8 instance: controller $CTRL, namespace 1 is $DEV"
	nvme get-feature -f 7 "/dev/$CTRL" 2>&1 | grep 'Current value' || fail "nvme get-feature -f 7 on the queues=8 instance failed"
	check_queue_count 8
	disconnect "$NQN_ERNICD_Q8"
	pid=$ERNICD_Q8_PID
	ERNICD_Q8_PID=""
	stop_ernicd "$pid" "ernicd (queues=8)"
	PORT=$port_main

	echo "ernicd stop" >/run/lane-step
	pid=$ERNICD_PID
	ERNICD_PID=""
	rm -f "$ERNICD_STATS"
	log "ernicd logged $(grep -c ' connect ' "$RESULTS/ernicd.log") connects and" \
		"$(grep -c ' disconnect ' "$RESULTS/ernicd.log") disconnects; its last lines:"
	stop_ernicd "$pid" ernicd
	grep -v '^ *{' "$RESULTS/ernicd.log" | tail -n 6 | sed 's/^/  ernicd: /'
	if [ -s "$ERNICD_STATS" ]; then emit_json ernicd-stats-exit "$ERNICD_STATS"; fi
}

# ---------------------------------------------------------------------------------------------------------------

setup_system
skip=$(cmdline_opt ernic.skip none)
if [ "$skip" = nvmet ]; then
	log "nvmet phase skipped (ernic.skip=nvmet)"
else
	phase_nvmet
fi
PHASE=ernicd
if [ "$skip" = ernicd ]; then
	log "ernicd phase skipped (ernic.skip=ernicd)"
elif [ -x /bin/ernicd ]; then
	phase_ernicd
else
	log "ernicd phase skipped: no /bin/ernicd in this guest"
fi
PHASE=end
log "all phases done"
finish PASS
