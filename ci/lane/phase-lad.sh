# shellcheck shell=dash
# The lane's lad phase, sourced by /init (guest-init.sh): the fabric LAD (suites/lad/fabric-collect) on
# /dev/nvme0n1 against the kernel's target (a null_blk namespace, its block events the storage stage) and against
# ernicd (its --trace of 1 command in LAD_SAMPLE), over NVMe/TCP on the guest's 127.0.0.1 (nvmet-tcp), then over
# NVMe/RDMA on the rdma phase's soft-RoCE veth pair (nvmet-rdma, ernicd --transport rdma; ci/lane/phase-rdma.sh,
# whose fabric is set up here when that phase was skipped). The raw traces go out through the outbox disk
# (guest-init.sh, outbox_write) as lad/<target>/<file>, <target> one of nvmet, ernicd, nvmet-rdma, ernicd-rdma;
# the host joins them (ci/lane/run.sh calls suites/lad/fabric-report --check, which also prints seeds/002's
# TCP-vs-RDMA comparison per target). Uses guest-init.sh's and phase-rdma.sh's helpers.

NQN_LAD_NVMET=nqn.2024-01.org.ernic:lane-lad-nvmet
NQN_LAD_ERNICD=nqn.2024-01.org.ernic:lane-lad-ernicd
NQN_LAD_NVMET_RDMA=nqn.2024-01.org.ernic:lane-lad-nvmet-rdma
NQN_LAD_ERNICD_RDMA=nqn.2024-01.org.ernic:lane-lad-ernicd-rdma
LAD_SAMPLE=2 # ernicd stamps 1 command in this many: tens to hundreds of samples per depth in 1 s under TCG
LAD_TRACE=/tmp/lad-ernicd.trace

lad_collect() { # lad_collect TARGET-NAME FABRIC-COLLECT-ARGS...: both depths on $DEV, then the files out
	local name out
	name=$1
	shift
	# Into the outbox (guest-init.sh, outbox_write): the host finds them in build/lane/results/files/lad/.
	out=$OUTBOX_DIR/lad/$name
	echo "lad $name fabric-collect" >/run/lane-step
	log "suites/lad/fabric-collect --target $DEV --runtime $LAD_RUNTIME --rounds $ROUNDS $*"
	/ernic/suites/lad/fabric-collect --target "$DEV" --out "$out" --runtime "$LAD_RUNTIME" --rounds "$ROUNDS" "$@" ||
		fail "suites/lad/fabric-collect on $DEV ($name) failed"
	# This lane runs QEMU with TCG: said beside the table.
	echo "emulated=QEMU TCG" >>"$out/meta"
	log "$name: traces in the outbox ($(du -sk "$out" | cut -f1) KiB)"
}

# The LAD's connects over NVMe/TCP are plain ones, SQ flow control on, whatever LANE_SQFLOW says: lad.csv's rows do
# not say how the host connected, so they all stand for one way.
lad_connect() { # lad_connect NQN: guest-init.sh's connect with SQ flow control left on
	local sqflow
	sqflow=$SQFLOW
	SQFLOW=on
	connect "$1"
	SQFLOW=$sqflow
}

lad_nvmet() { # lad_nvmet tcp|rdma: the kernel target on a null_blk namespace over that transport
	local s p trtype traddr trsvcid nqn name
	trtype=$1
	if [ "$trtype" = tcp ]; then
		nqn=$NQN_LAD_NVMET traddr=$ADDR trsvcid=$PORT p=$NVMET/ports/2 name=nvmet
	else
		nqn=$NQN_LAD_NVMET_RDMA traddr=$RDMA_ADDR trsvcid=$RDMA_PORT p=$NVMET/ports/3 name=nvmet-rdma
	fi
	[ -b /dev/nullb0 ] || modprobe null_blk nr_devices=1 gb=1 bs=4096 memory_backed=1 ||
		fail "modprobe null_blk failed"
	[ -b /dev/nullb0 ] || fail "null_blk gave no /dev/nullb0"
	s=$NVMET/subsystems/$nqn
	mkdir "$s" || fail "cannot create the nvmet subsystem"
	echo 1 >"$s/attr_allow_any_host"
	if [ -e "$s/attr_qid_max" ]; then echo "$QUEUES" >"$s/attr_qid_max"; fi
	mkdir "$s/namespaces/1"
	echo /dev/nullb0 >"$s/namespaces/1/device_path"
	echo 1 >"$s/namespaces/1/enable" || fail "cannot enable the null_blk namespace"
	mkdir "$p"
	echo "$trtype" >"$p/addr_trtype"
	echo ipv4 >"$p/addr_adrfam"
	echo "$traddr" >"$p/addr_traddr"
	echo "$trsvcid" >"$p/addr_trsvcid"
	ln -s "$s" "$p/subsystems/$nqn" || fail "cannot bind the subsystem to the $trtype port"
	if [ "$trtype" = tcp ]; then
		wait_listen ""
		lad_connect "$nqn"
	else
		rdma_connect "$nqn" -i 8 -W 8
	fi
	lad_collect "$name" --nvmet-backing /dev/nullb0
	disconnect "$nqn"
	rm -f "$p/subsystems/$nqn"
	rmdir "$p"
	echo 0 >"$s/namespaces/1/enable"
	rmdir "$s/namespaces/1" "$s"
	[ "$trtype" = tcp ] || return 0
	set_deadline 5
	while listening; do
		if past_deadline; then fail "nvmet-tcp still listens on $ADDR:$PORT after removing the port"; fi
		sleep 0.1
	done
}

# ernicd runs on the CPUs the suite cases' ernicd had (ernic.cpus), so the table explains those ratios.
lad_ernicd() { # lad_ernicd tcp|rdma: ernicd sampling 1 command in LAD_SAMPLE over that transport
	local pid trtype nqn name
	trtype=$1
	rm -f "$LAD_TRACE"
	if [ "$trtype" = tcp ]; then
		nqn=$NQN_LAD_ERNICD name=ernicd
		# shellcheck disable=SC2086 # options, split as written
		set -- --listen "$ADDR:$PORT" $ERNICD_TCP_OPTS
	else
		nqn=$NQN_LAD_ERNICD_RDMA name=ernicd-rdma
		set -- --transport rdma --listen "$RDMA_ADDR:$RDMA_PORT"
	fi
	set -- "$@" --nqn "$nqn" --backend "nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES" \
		--trace "$LAD_TRACE" --trace-sample "$LAD_SAMPLE" --stats "$ERNICD_STATS" ${ERNICD_CPUS:+--cpus "$ERNICD_CPUS"}
	log "ernicd $*"
	ernicd "$@" 2>"$ERNICD_LOG" &
	ERNICD_PID=$!
	if [ "$trtype" = tcp ]; then
		wait_listen "$ERNICD_PID"
		lad_connect "$nqn"
	else
		ernicd_rdma_wait_listen
		rdma_connect "$nqn" -i 8 -W 8
	fi
	lad_collect "$name" --ernicd-trace "$LAD_TRACE"
	disconnect "$nqn"
	pid=$ERNICD_PID
	ERNICD_PID=""
	rm -f "$ERNICD_STATS"
	stop_ernicd "$pid" "$name"
	# Its own stage means (tcp_stages, rdma_stages), beside the joined table.
	if [ -s "$ERNICD_STATS" ]; then emit_json "lad-$name-stats" "$ERNICD_STATS"; fi
}

# Each depth runs in as many rounds as the suite cases (LANE_ROUNDS): one in make test's lane, whose check is that
# the table is complete, three in the nightly's, whose medians are the figures.
phase_lad() {
	local held e
	# shellcheck disable=SC2034 # guest-init.sh reads it
	PHASE=lad
	LAD_RUNTIME=$RUNTIME
	# Each collect turns its events on and off around its runs, while the scheduler's sites run on the other vCPU;
	# under TCG, patching those sites hung the guest (results/NOTEBOOK.md, "A guest locked by text patching").
	# Held registered from here, while no target runs, the events are turned on and off without a patch. Only the
	# timeline's kprobes are still armed and disarmed, before and after its run, with no I/O running.
	held=$(/ernic/suites/lad/fabric-collect --hold-events on) || fail "suites/lad/fabric-collect --hold-events on failed"
	log "$held"
	# The scheduler's are the sites every CPU runs all the time: the hold is no hold without them.
	for e in sched/sched_switch sched/sched_waking; do
		case "$held " in *" $e "*) ;; *) fail "$e was not held: $held" ;; esac
	done
	lad_nvmet tcp
	if [ -x /bin/ernicd ]; then
		lad_ernicd tcp
	else
		log "ernicd half skipped: no /bin/ernicd in this guest"
	fi
	# NVMe/RDMA: the rdma phase's fabric, set up now if that phase did not run.
	if [ ! -e /sys/class/infiniband/rxe0 ]; then rdma_fabric_up; fi
	lad_nvmet rdma
	if [ -x /bin/ernicd ]; then lad_ernicd rdma; fi
	held=$(/ernic/suites/lad/fabric-collect --hold-events off) || fail "suites/lad/fabric-collect --hold-events off failed"
	log "$held"
}
