# shellcheck shell=dash
# The lane's lad phase, sourced by /init (guest-init.sh): the fabric LAD (suites/lad/fabric-collect) on
# /dev/nvme0n1 against the kernel's nvmet-tcp (a null_blk namespace, its block events the storage stage) and
# against ernicd (its --trace of 1 command in LAD_SAMPLE), both over NVMe/TCP on the guest's 127.0.0.1. The raw
# traces go out gzipped and in base64 (the emulated serial console is the lane's slowest part) between
# "ERNIC-LANE-FILE-BEGIN lad <target>/<file>.gz.b64" and "ERNIC-LANE-FILE-END ..." lines; the host decodes and
# joins them (ci/lane/run.sh calls suites/lad/fabric-report --check). Uses guest-init.sh's helpers.

NQN_LAD_NVMET=nqn.2024-01.org.ernic:lane-lad-nvmet
NQN_LAD_ERNICD=nqn.2024-01.org.ernic:lane-lad-ernicd
LAD_SAMPLE=2 # ernicd stamps 1 command in this many: tens to hundreds of samples per depth in 1 s under TCG
LAD_TRACE=/tmp/lad-ernicd.trace

lad_emit() { # lad_emit DIR TARGET: each file of DIR between marker lines
	local f
	for f in "$1"/*; do
		[ -f "$f" ] || continue
		echo "ERNIC-LANE-FILE-BEGIN lad $2/$(basename "$f").gz.b64"
		gzip -c "$f" | base64
		echo "ERNIC-LANE-FILE-END lad $2/$(basename "$f").gz.b64"
	done
}

lad_collect() { # lad_collect TARGET-NAME FABRIC-COLLECT-ARGS...: both depths on $DEV, then the files out
	local name out
	name=$1
	shift
	out=$RESULTS/lad/$name
	echo "lad $name fabric-collect" >/run/lane-step
	log "suites/lad/fabric-collect --target $DEV --runtime $LAD_RUNTIME $*"
	/ernic/suites/lad/fabric-collect --target "$DEV" --out "$out" --runtime "$LAD_RUNTIME" "$@" ||
		fail "suites/lad/fabric-collect on $DEV ($name) failed"
	# This lane runs QEMU with TCG: said beside the table.
	echo "emulated=QEMU TCG" >>"$out/meta"
	lad_emit "$out" "$name"
	log "$name: traces sent"
}

lad_nvmet() {
	local s p
	[ -b /dev/nullb0 ] || modprobe null_blk nr_devices=1 gb=1 bs=4096 memory_backed=1 ||
		fail "modprobe null_blk failed"
	[ -b /dev/nullb0 ] || fail "null_blk gave no /dev/nullb0"
	s=$NVMET/subsystems/$NQN_LAD_NVMET
	mkdir "$s" || fail "cannot create the nvmet subsystem"
	echo 1 >"$s/attr_allow_any_host"
	if [ -e "$s/attr_qid_max" ]; then echo "$QUEUES" >"$s/attr_qid_max"; fi
	mkdir "$s/namespaces/1"
	echo /dev/nullb0 >"$s/namespaces/1/device_path"
	echo 1 >"$s/namespaces/1/enable" || fail "cannot enable the null_blk namespace"
	p=$NVMET/ports/2
	mkdir "$p"
	echo tcp >"$p/addr_trtype"
	echo ipv4 >"$p/addr_adrfam"
	echo "$ADDR" >"$p/addr_traddr"
	echo "$PORT" >"$p/addr_trsvcid"
	ln -s "$s" "$p/subsystems/$NQN_LAD_NVMET" || fail "cannot bind the subsystem to the port"
	wait_listen ""
	connect "$NQN_LAD_NVMET"
	lad_collect nvmet --nvmet-backing /dev/nullb0
	disconnect "$NQN_LAD_NVMET"
	rm -f "$p/subsystems/$NQN_LAD_NVMET"
	rmdir "$p"
	echo 0 >"$s/namespaces/1/enable"
	rmdir "$s/namespaces/1" "$s"
	set_deadline 5
	while listening; do
		if past_deadline; then fail "nvmet-tcp still listens on $ADDR:$PORT after removing the port"; fi
		sleep 0.1
	done
}

lad_ernicd() {
	local pid
	set -- --listen "$ADDR:$PORT" --nqn "$NQN_LAD_ERNICD" --backend "nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES" \
		--trace "$LAD_TRACE" --trace-sample "$LAD_SAMPLE" --stats "$ERNICD_STATS"
	log "ernicd $*"
	ernicd "$@" 2>"$ERNICD_LOG" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
	connect "$NQN_LAD_ERNICD"
	lad_collect ernicd --ernicd-trace "$LAD_TRACE"
	disconnect "$NQN_LAD_ERNICD"
	pid=$ERNICD_PID
	ERNICD_PID=""
	rm -f "$ERNICD_STATS"
	stop_ernicd "$pid" ernicd
	# Its own stage means (tcp_stages), beside the joined table.
	if [ -s "$ERNICD_STATS" ]; then emit_json lad-ernicd-stats "$ERNICD_STATS"; fi
}

phase_lad() {
	# shellcheck disable=SC2034 # guest-init.sh reads it
	PHASE=lad
	LAD_RUNTIME=$RUNTIME
	lad_nvmet
	if [ -x /bin/ernicd ]; then
		lad_ernicd
	else
		log "ernicd half skipped: no /bin/ernicd in this guest"
	fi
}
