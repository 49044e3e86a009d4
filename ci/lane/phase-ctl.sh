# shellcheck shell=dash
# The lane's ctl phase, sourced by /init (guest-init.sh): ernicd's run-time configuration as the kernel host sees
# it, every change made through ernicctl on ernicd's control socket while the host is connected.
#
# Namespaces: namespace 2 added (the host's scan after Namespace Attribute Changed makes its block device),
# resized (its /sys/block size follows), removed while a fio read job runs on it (the device goes, the job ends
# with an error instead of hanging, namespace 1 still serves I/O).
# ANA: a second listener (127.0.0.1:4421) for the subsystem and the host connected through both, one nvme-multipath
# node over two controllers; during a crc32c write-then-verify fio job on that node, `ana set 127.0.0.1:4420 all
# inaccessible`: the host reads the ANA log (ANA Change AEN), that path's ana_state becomes inaccessible, its I/O
# stops and the other path's goes on; then back to optimized. The job must read back every block it wrote.

NQN_CTL=nqn.2024-01.org.ernic:lane-ctl
CTL_SOCK=/run/ernicd-ctl.sock
CTL_PORT2=4421 # the second listener of the ANA case
CTL_NS2_MIB=16
CTL_NS2_RESIZE_MIB=24
CTL_SWITCH_AFTER=300 # writes on the path in use before it is made inaccessible

ctl() { # ctl ARGS...: one ernicctl request, its result logged; a refusal fails the lane
	local out
	out=$(ernicctl --control "$CTL_SOCK" "$@" 2>&1) || ctl_fail "ernicctl $* failed: $out"
	log "ernicctl $*: $out"
}

ctl_fail() { # ctl_fail REASON: ernicd's and the kernel's last words, then fail
	echo "lane: last lines of ernicd's stderr:" >/dev/console
	grep -v '^ *{' "$ERNICD_LOG" | tail -n 30 | sed 's/^/  ernicd: /' >/dev/console
	echo "lane: the kernel's last nvme messages:" >/dev/console
	dmesg | grep -i nvme | tail -n 20 | sed 's/^/  kernel: /' >/dev/console
	fail "$*"
}

ctl_wait() { # ctl_wait SECONDS WHAT CMD...: until CMD succeeds
	local s what
	s=$1
	what=$2
	shift 2
	set_deadline "$s"
	while ! "$@"; do
		if past_deadline; then ctl_fail "$what: not after $s s"; fi
		sleep 0.1
	done
}

ctl_ctrl_at() { # ctl_ctrl_at TRSVCID: the live controller of $NQN_CTL reached through 127.0.0.1:TRSVCID
	local d
	for d in /sys/class/nvme/nvme*; do
		[ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$NQN_CTL" ] || continue
		[ "$(cat "$d/state" 2>/dev/null)" = live ] || continue
		case ",$(cat "$d/address" 2>/dev/null)," in *,trsvcid=$1,*) basename "$d" && return 0 ;; esac
	done
	return 0
}

ctl_path() { # ctl_path CTRL: namespace 1's path under controller CTRL (nvmeXcYn1 with multipath)
	local p
	for p in "/sys/class/nvme/$1/"nvme*c*n1; do
		if [ -e "$p/ana_state" ]; then echo "$p" && return 0; fi
	done
	return 0
}

ctl_ana_is() { [ "$(cat "$1/ana_state" 2>/dev/null)" = "$2" ]; } # ctl_ana_is PATH STATE
ctl_gone() { [ ! -b "$1" ] && [ ! -e "/sys/class/block/$(basename "$1")" ]; }
ctl_size_is() { [ "$(cat "/sys/class/block/$(basename "$1")/size" 2>/dev/null)" = "$2" ]; }
ctl_ns2_there() { CTL_DEV2=$(ns_dev "$NQN_CTL" 2) && [ -n "$CTL_DEV2" ]; }
ctl_writes() { awk '{ print $5 }' "$1/stat"; } # ctl_writes PATH: writes completed on a path
ctl_writes_ge() { [ "$(ctl_writes "$1")" -ge "$2" ]; }   # ctl_writes_ge PATH N
ctl_idle() { [ "$(awk '{ print $1 + $2 }' "$1/inflight")" = 0 ]; } # ctl_idle PATH: no request in flight on it
ctl_has_ctrl() { [ -n "$(ctl_ctrl_at "$1")" ]; }         # ctl_has_ctrl TRSVCID
ctl_subsys_of() { # ctl_subsys_of CTRL: the /sys/class/nvme-subsystem directory holding controller CTRL
	local s
	for s in /sys/class/nvme-subsystem/nvme-subsys*; do
		if [ -e "$s/$1" ]; then echo "$s" && return 0; fi
	done
	return 0
}
ctl_has_path() { [ -n "$(ctl_path "$1")" ]; }            # ctl_has_path CTRL

ctl_namespaces() {
	local rc sectors p f
	echo "ctl namespace add" >/run/lane-step
	ctl namespace add "$NQN_CTL" "size=${CTL_NS2_MIB}M,bs=4096" --nsid 2
	ctl_wait 20 "the host sees namespace 2" ctl_ns2_there
	sectors=$(cat "/sys/class/block/$(basename "$CTL_DEV2")/size")
	[ "$sectors" = $((CTL_NS2_MIB * 2048)) ] || ctl_fail "namespace 2 is $sectors sectors, not ${CTL_NS2_MIB} MiB"
	log "the host sees namespace 2 as $CTL_DEV2, $sectors sectors"

	echo "ctl namespace resize" >/run/lane-step
	ctl namespace resize "$NQN_CTL" 2 "${CTL_NS2_RESIZE_MIB}M"
	ctl_wait 20 "the host sees namespace 2 at ${CTL_NS2_RESIZE_MIB} MiB" \
		ctl_size_is "$CTL_DEV2" $((CTL_NS2_RESIZE_MIB * 2048))
	log "the host sees $CTL_DEV2 at $((CTL_NS2_RESIZE_MIB * 2048)) sectors"

	echo "ctl namespace remove" >/run/lane-step
	fio --name=ctl-removed --filename="$CTL_DEV2" --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=8 \
		--time_based --runtime=60 >"$RESULTS/fio-ctl-removed.out" 2>&1 &
	FIO_PID=$!
	# Removed under I/O, not under fio's setup: the path's reads first.
	p=""
	for f in "/sys/class/nvme/$CTRL/"nvme*c*n2; do
		if [ -e "$f/stat" ]; then p=$f; fi
	done
	[ -n "$p" ] || ctl_fail "no path of namespace 2 under $CTRL"
	set_deadline 30
	while [ "$(awk '{ print $1 }' "$p/stat")" -lt 100 ]; do
		kill -0 "$FIO_PID" 2>/dev/null || ctl_fail "the read job on $CTL_DEV2 ended before the removal"
		if past_deadline; then ctl_fail "fewer than 100 reads on $CTL_DEV2 in 30 s"; fi
		sleep 0.1
	done
	log "$(awk '{ print $1 }' "$p/stat") reads done on $CTL_DEV2; removing it under the job"
	ctl namespace remove "$NQN_CTL" 2
	ctl_wait 20 "$CTL_DEV2 gone from the host" ctl_gone "$CTL_DEV2"
	set_deadline 20
	while kill -0 "$FIO_PID" 2>/dev/null; do
		if past_deadline; then ctl_fail "the read job on the removed $CTL_DEV2 still runs 20 s later"; fi
		sleep 0.1
	done
	rc=0
	wait "$FIO_PID" || rc=$?
	FIO_PID=""
	if [ "$rc" -eq 0 ]; then
		cat "$RESULTS/fio-ctl-removed.out"
		ctl_fail "the read job on the removed $CTL_DEV2 ended without an error"
	fi
	log "$CTL_DEV2 gone; the read job on it ended with fio exit $rc:"
	grep -i 'err' "$RESULTS/fio-ctl-removed.out" | head -n 4 | sed 's/^/  fio: /'
	dd if="$DEV" of=/dev/null bs=4096 count=16 2>/dev/null || ctl_fail "namespace 1 ($DEV) unreadable after the removal"
	log "namespace 1 ($DEV) still reads"
}

ctl_ana() {
	local c0 c1 p0 p1 s heads w0 w1 w0b w1b
	echo "ctl ana: second path" >/run/lane-step
	[ "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)" = Y ] ||
		ctl_fail "nvme_core.multipath is not Y: the host would make no multipath node"
	ctl listener add "$NQN_CTL" "$ADDR:$CTL_PORT2"
	log "connect: nvme connect -t tcp -a $ADDR -s $CTL_PORT2 -n $NQN_CTL -i 8 -W 8"
	nvme connect -t tcp -a "$ADDR" -s "$CTL_PORT2" -n "$NQN_CTL" -i 8 -W 8 >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		ctl_fail "nvme connect to $NQN_CTL through $CTL_PORT2 failed"
	}
	ctl_wait 20 "a live controller through $CTL_PORT2" ctl_has_ctrl "$CTL_PORT2"
	c0=$(ctl_ctrl_at "$PORT")
	c1=$(ctl_ctrl_at "$CTL_PORT2")
	ctl_wait 20 "namespace 1 under $c1" ctl_has_path "$c1"
	p0=$(ctl_path "$c0")
	p1=$(ctl_path "$c1")
	[ -n "$p0" ] || ctl_fail "no namespace 1 path with an ana_state under $c0"
	s=$(ctl_subsys_of "$c0")
	if [ -z "$s" ] || [ "$s" != "$(ctl_subsys_of "$c1")" ]; then
		ctl_fail "$c0 and $c1 are not in one nvme-subsystem ('$s', '$(ctl_subsys_of "$c1")')"
	fi
	heads=$(find "$s/" -maxdepth 1 -name 'nvme*n*' | wc -l)
	[ "$heads" = 1 ] || ctl_fail "$heads block nodes in $(basename "$s"), expected one multipath node"
	[ "/dev/$(basename "$(find "$s/" -maxdepth 1 -name 'nvme*n*')")" = "$DEV" ] ||
		ctl_fail "the multipath node of $(basename "$s") is not $DEV"
	if ! ctl_ana_is "$p0" optimized || ! ctl_ana_is "$p1" optimized; then
		ctl_fail "ana_state: $(cat "$p0/ana_state") on $c0, $(cat "$p1/ana_state") on $c1; expected optimized"
	fi
	log "$DEV over $c0 (:$PORT, $(basename "$p0")) and $c1 (:$CTL_PORT2, $(basename "$p1")), both optimized"

	echo "ctl ana: failover under fio" >/run/lane-step
	fio_verify_start ctl-ana
	# The path the host sends to (both optimized: the first it found) is the one made inaccessible.
	set_deadline 60
	while :; do
		w0=$(ctl_writes "$p0")
		w1=$(ctl_writes "$p1")
		if [ "$w0" -ge "$CTL_SWITCH_AFTER" ] || [ "$w1" -ge "$CTL_SWITCH_AFTER" ]; then break; fi
		kill -0 "$FIO_PID" 2>/dev/null || ctl_fail "the fio job ended after $w0 + $w1 writes, before the switch"
		if past_deadline; then ctl_fail "$w0 + $w1 writes in 60 s, before the switch"; fi
		sleep 0.1
	done
	if [ "$w1" -gt "$w0" ]; then
		# The host chose the second path: swap, so p0 is always the one that goes.
		set -- "$c0" "$p0" "$PORT"
		c0=$c1 p0=$p1 c1=$1 p1=$2
		CTL_GOES=$CTL_PORT2 CTL_STAYS=$3
	else
		CTL_GOES=$PORT CTL_STAYS=$CTL_PORT2
	fi
	ctl ana set "$ADDR:$CTL_GOES" all inaccessible
	ctl_wait 20 "the host sees :$CTL_GOES inaccessible" ctl_ana_is "$p0" inaccessible
	# Writes sent on that path before the host saw the change may still complete (or fail over, which the path
	# counts as completed too): its count is taken once none is left in flight.
	ctl_wait 20 "no request in flight on :$CTL_GOES" ctl_idle "$p0"
	w0=$(ctl_writes "$p0")
	w1=$(ctl_writes "$p1")
	log "host: $(basename "$p0") (:$CTL_GOES) $(cat "$p0/ana_state"), $(basename "$p1") (:$CTL_STAYS)" \
		"$(cat "$p1/ana_state"); writes so far $w0 and $w1"
	ctl_wait 60 "writes on :$CTL_STAYS after the switch" ctl_writes_ge "$p1" $((w1 + CTL_SWITCH_AFTER))
	w0b=$(ctl_writes "$p0")
	w1b=$(ctl_writes "$p1")
	[ "$w0b" = "$w0" ] || ctl_fail "$((w0b - w0)) writes completed on the inaccessible path :$CTL_GOES"
	log "I/O moved: +$((w1b - w1)) writes on :$CTL_STAYS, +0 on :$CTL_GOES"
	ctl ana set "$ADDR:$CTL_GOES" all optimized
	ctl_wait 20 "the host sees :$CTL_GOES optimized again" ctl_ana_is "$p0" optimized
	log "host: $(basename "$p0") (:$CTL_GOES) optimized again"
	fio_verify_wait ctl-ana
}

phase_ctl() {
	local pid
	# shellcheck disable=SC2034 # guest-init.sh's log() and fail() name it
	PHASE=ctl
	ERNICD_LOG=$RESULTS/ernicd-ctl.log
	echo "ctl start" >/run/lane-step
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_CTL" --backend "nvmeof:size=32M,bs=4096,queues=$QUEUES" \
		--control "$CTL_SOCK" --stats "$ERNICD_STATS"
	log "ernicd $*"
	ernicd "$@" 2>"$ERNICD_LOG" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
	ctl_wait 10 "ernicd's control socket $CTL_SOCK" [ -S "$CTL_SOCK" ]
	connect "$NQN_CTL"
	log "connected: controller $CTRL, namespace 1 is $DEV"
	ctl_namespaces
	ctl_ana
	disconnect "$NQN_CTL"
	pid=$ERNICD_PID
	ERNICD_PID=""
	stop_ernicd "$pid" ernicd
}
