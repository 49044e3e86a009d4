# The lane's passthru phase, sourced by /init (ci/lane/guest-init.sh): the ernic fio engine's device mode
# (NVMe passthrough on /dev/ng0n1) against the kernel's nvmet-tcp and against ernicd, one after the other on the
# same port.
#
# - The conformance suite (suites/conformance/, judged by NVMe status) on /dev/ng0n1 against nvmet-tcp and
#   ernicd (ci/lane/run.sh runs it in process on the host, where it takes seconds instead of minutes); the rows go
#   to the console between "ERNIC-LANE-TABLE-BEGIN conformance-status" and "ERNIC-LANE-TABLE-END
#   conformance-status" for run.sh's side-by-side table. An unexpected status fails the lane; a known difference
#   ("; expect-nvmet:", "; expect-device:" lines) does not.
# - The other ways into the device: ernic_passthru=ioctl and ernic_fixedbufs=1, each a crc32c write-then-verify.
# - 1 MiB I/O on pages that are not physically contiguous (passthru_unhuged), against both targets.
# - Throughput against nvmet-tcp: 4 KiB random reads at queue depth 1 and 32, the ernic engine in device mode,
#   fio's io_uring_cmd engine (cmd_type=nvme) on /dev/ng0n1 and libaio direct=1 on /dev/nvme0n1, 3 rounds each
#   (engines interleaved), medians and ratios between "ERNIC-LANE-TABLE-BEGIN passthru-perf" and
#   "ERNIC-LANE-TABLE-END passthru-perf". A ratio below 0.9 is marked, not failed: under TCG the absolute numbers
#   mean little, and one noisy round can move a median of 3.
# shellcheck shell=dash

ENGINE_SO=/ernic/build/ernic-fio.so
PASSTHRU_PERF_SECONDS=2
PASSTHRU_PERF_ROUNDS=3

passthru_conformance() { # passthru_conformance NAME TARGET: suites/run conformance, rows in $RESULTS/conformance
	local rc
	echo "$PHASE conformance $1" >/run/lane-step
	log "suites/run conformance --target $2 --target-name $1"
	rc=0
	ERNIC_COMMIT=$COMMIT /ernic/suites/run conformance --target "$2" --target-name "$1" --transport tcp \
		--runtime "$RUNTIME" --csv-dir "$RESULTS/conformance" --no-tables --batch || rc=$?
	[ "$rc" -eq 0 ] || fail "conformance on $1 ($2): suites/run exited $rc"
}

passthru_verify() { # passthru_verify NAME ENGINE-OPTION...: 4 MiB crc32c write-then-verify through the device mode
	local name err
	name=$1
	shift
	echo "$PHASE verify $name" >/run/lane-step
	fio --name="$name" --ioengine=external:"$ENGINE_SO" --filename="$NG" --rw=randwrite --bs=4k --size=4m \
		--iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--ernic_stats="$RESULTS/$name.stats.json" "$@" \
		--output-format=json --output="$RESULTS/$name.json" >"$RESULTS/$name.out" 2>&1 || true
	err=$(jq -r '.jobs[0].error' "$RESULTS/$name.json" 2>/dev/null || echo none)
	if [ "$err" != 0 ] || [ "$(jq -r '.jobs[0].read.io_bytes' "$RESULTS/$name.json")" != 4194304 ]; then
		cat "$RESULTS/$name.out"
		fail "$name: crc32c write-then-verify through the device mode ($*) failed: error $err"
	fi
	log "$name: 4 MiB written and verified through $NG ($*): $(jq -c '{passthru, fixedbufs, mdts_bytes, capsules}' "$RESULTS/$name.stats.json")"
}

# The same write-then-verify at 1 MiB on pages that are not physically contiguous. The kernel maps a passthrough
# buffer into a bio of at most 256 pages, and one that starts off a page boundary takes 257: the remainder goes in
# a second bio, which the virt boundary refuses to join (EINVAL, nothing sent). Contiguous pages merge into few
# segments, so this failed only when the guest had no huge page or run of free pages to give; here it has none:
# transparent huge pages off, and the free pages every other one of a tmpfs file whose other half stays.
passthru_unhuged() { # passthru_unhuged NAME
	local thp=/sys/kernel/mm/transparent_hugepage/enabled old="" frag=/tmp/passthru-fragments
	if [ -w "$thp" ]; then
		old=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
		echo never >"$thp"
	fi
	fio --name=fill --filename="$frag" --size=64m --bs=4k --rw=write --ioengine=psync >/dev/null 2>&1 &&
		fio --name=punch --filename="$frag" --size=64m --bs=4k --rw=trim:4k --ioengine=falloc >/dev/null 2>&1 ||
		fail "$1: cannot leave every other page of $frag free (fio's psync and falloc engines)"
	log "$1: $(du -k "$frag" | cut -f1) KiB of $frag's 65536 left (every other page free), transparent huge pages $([ -n "$old" ] && echo "off (were $old)" || echo "not in this kernel")"
	passthru_verify "$1" --bs=1m --iodepth=4
	rm -f "$frag"
	if [ -n "$old" ]; then echo "$old" >"$thp"; fi
}

passthru_perf() { # the throughput table against the connected target
	local qd r e
	echo "$PHASE throughput" >/run/lane-step
	# One fio run, every measurement a stonewalled job of its own (fio starts once, not 18 times), the engines
	# interleaved within each round so that a slow stretch of the guest hits all three.
	{
		printf '[global]\nrw=randread\nbs=4k\nsize=64m\nnorandommap\ntime_based\nruntime=%s\nstonewall\n' \
			"$PASSTHRU_PERF_SECONDS"
		for qd in 1 32; do
			r=1
			while [ "$r" -le "$PASSTHRU_PERF_ROUNDS" ]; do
				for e in ernic io_uring_cmd libaio; do
					printf '[%s-qd%s-r%s]\niodepth=%s\n' "$e" "$qd" "$r" "$qd"
					case "$e" in
					ernic) printf 'ioengine=external:%s\nfilename=%s\n' "$ENGINE_SO" "$NG" ;;
					io_uring_cmd) printf 'ioengine=io_uring_cmd\ncmd_type=nvme\nfilename=%s\n' "$NG" ;;
					libaio) printf 'ioengine=libaio\ndirect=1\nfilename=%s\n' "$DEV" ;;
					esac
				done
				r=$((r + 1))
			done
		done
	} >"$RESULTS/perf.fio"
	fio --output-format=json --output="$RESULTS/perf.json" "$RESULTS/perf.fio" >"$RESULTS/perf.out" 2>&1 || {
		cat "$RESULTS/perf.out"
		fail "throughput runs failed (fio exited non-zero)"
	}
	jq -r '.jobs[] | (.jobname | capture("^(?<e>.+)-qd(?<q>[0-9]+)-r[0-9]+$")) as $c
		| if .error != 0 then error("\(.jobname): error \(.error)") else [$c.q, $c.e, (.read.iops | floor)] | @tsv end' \
		"$RESULTS/perf.json" >"$RESULTS/perf.tsv" || fail "throughput runs: a job failed or left no report ($RESULTS/perf.json)"
	log "throughput rounds: $(tr '\t\n' ' ;' <"$RESULTS/perf.tsv")"
	echo "ERNIC-LANE-TABLE-BEGIN passthru-perf"
	sort -k1,1n -k2,2 -k3,3n "$RESULTS/perf.tsv" | awk -F'\t' -v secs="$PASSTHRU_PERF_SECONDS" '
		{ k = $1 SUBSEP $2; v[k, ++n[k]] = $3; if (!($1 in sq)) { sq[$1] = 1; qds[++nq] = $1 } }
		function med(k) { return n[k] == 0 ? 0 : v[k, int((n[k] + 1) / 2)] }
		END {
			printf "4 KiB random read on /dev/ng0n1 (nvmet-tcp), median IOPS of %d runs of %d s (TCG: the ratios mean something, the absolute numbers little)\n", n[qds[1] SUBSEP "ernic"], secs
			printf "%-4s %14s %14s %14s %12s %12s\n", "qd", "ernic device", "io_uring_cmd", "libaio", "vs uring_cmd", "vs libaio"
			for (i = 1; i <= nq; i++) {
				q = qds[i]; e = med(q SUBSEP "ernic"); u = med(q SUBSEP "io_uring_cmd"); l = med(q SUBSEP "libaio")
				ru = u > 0 ? e / u : 0; rl = l > 0 ? e / l : 0
				printf "%-4s %14d %14d %14d %11.2f%s %11.2f%s\n", q, e, u, l, ru, (ru < 0.9 ? "!" : " "), rl, (rl < 0.9 ? "!" : " ")
			}
			print "(! below the 0.9 target)"
		}'
	echo "ERNIC-LANE-TABLE-END passthru-perf"
}

passthru_ernicd_start() {
	log "ernicd --listen $ADDR:$PORT --nqn $NQN_ERNICD --backend nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES"
	ernicd --listen "$ADDR:$PORT" --nqn "$NQN_ERNICD" --backend "nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES" \
		2>"$RESULTS/ernicd-passthru.log" &
	ERNICD_PID=$!
	wait_listen "$ERNICD_PID"
}

phase_passthru() {
	local pid rc
	PHASE=passthru
	[ -f "$ENGINE_SO" ] || fail "no $ENGINE_SO in this guest: the passthru phase needs the ernic engine"
	mkdir -p "$RESULTS/conformance"

	nvmet_start
	connect "$NQN_NVMET"
	NG=/dev/ng${DEV#/dev/nvme}
	[ -c "$NG" ] || fail "no $NG next to $DEV"
	log "connected to nvmet-tcp: $DEV, passthrough on $NG"
	passthru_conformance nvmet "$DEV"
	passthru_verify passthru-ioctl --ernic_passthru=ioctl
	passthru_verify passthru-fixedbufs --ernic_fixedbufs=1
	passthru_unhuged passthru-1m-unhuged
	passthru_perf
	disconnect "$NQN_NVMET"
	nvmet_stop

	if [ -x /bin/ernicd ]; then
		passthru_ernicd_start
		connect "$NQN_ERNICD"
		NG=/dev/ng${DEV#/dev/nvme}
		log "connected to ernicd: $DEV, passthrough on $NG"
		passthru_conformance ernicd "$DEV"
		passthru_verify passthru-ernicd-fixedbufs --ernic_fixedbufs=1
		passthru_unhuged passthru-ernicd-1m-unhuged
		disconnect "$NQN_ERNICD"
		pid=$ERNICD_PID
		ERNICD_PID=""
		stop_ernicd "$pid" ernicd
	else
		log "no /bin/ernicd: conformance against nvmet-tcp and in process only"
	fi

	echo "ERNIC-LANE-TABLE-BEGIN conformance-status"
	cat "$RESULTS/conformance/conformance.status.tsv"
	echo "ERNIC-LANE-TABLE-END conformance-status"
	rc=0
	/ernic/suites/conformance/report "$RESULTS/conformance/conformance.status.tsv" >"$RESULTS/conformance.txt" || rc=$?
	[ "$rc" -eq 0 ] || {
		cat "$RESULTS/conformance.txt"
		fail "conformance: unexpected statuses (table above)"
	}
	log "conformance: every status as expected on both targets"
}
