# shellcheck shell=dash
# The lane's RDMA phase, sourced by /init (guest-init.sh): the kernel's nvme-rdma host over soft-RoCE (rdma_rxe)
# against ernicd --transport rdma and against the kernel's nvmet-rdma, the same sequence for both: discover
# (trtype rdma, the RDMA TSAS), connect -i 8 -W 8, id-ctrl, queue_count, the host's memory regions against the MR
# budget formula, suites/run cases on the namespace (crc32c verify included), disconnect; ernicd also has its
# id-ctrl fields checked (mdts 5, ioccsz 4 + its in-capsule data / 16, keyed SGL), nvmf_rdma_sgl's cases (keyed
# SGL, Disconnect, queue pairs serving no controller, what queue pairs pin in ernicd before and after their Connect,
# in-capsule data), a budget on the bounce buffers its queues pin (rdma_budget_check), 20 connect/disconnect
# rounds with its counters back at rest and every logged connect naming its host, and the MR count at a second
# number of I/O queues.
#
# The fabric: a veth pair with private addresses (10.0.0.1 and 10.0.0.2), rxe0 on veth0, everything in the
# guest's initial network namespace. Both hosts and both targets are there: the kernel's nvme-rdma host and
# nvmet-rdma only use that namespace, and 6.1's rxe receives RoCE (UDP 4791) only there too. The RDMA CM resolves
# a local address to the netdev that owns it (never to lo, which has no RDMA device: why 127.0.0.1 fails) and rxe
# loops the packets back. Nothing leaves the guest, which has no network device.
#
# ernicd in a network namespace of its own was tried (2026-12-01, kernel 6.1.0-57): a second veth pair, veth2
# (10.0.1.1, rxe2) in init_net and veth3 moved into netns ernic-tgt with 10.0.1.2, rxe3 created on it from inside
# the namespace (rdma link add works there; the device is shared), ping across the pair answered, and
# `ip netns exec ernic-tgt ernicd --transport rdma --listen
# 10.0.1.2:4420` bound and listened; but `nvme connect -t rdma -a 10.0.1.2` from init_net never got an answer to
# its CM request and was killed after 30 s ("rdma connection establishment failed (-512)"). 6.1's rxe opens its
# RoCEv2 UDP socket (port 4791) and routes its packets in init_net only (rxe_net.c: rxe_setup_udp_tunnel(&init_net,
# ...), ip_route_output_key(&init_net, ...)), so RoCE packets arriving on a veth end in another namespace find no
# receiver. The newest kernel Debian offers this release, bookworm-backports' 6.12.95-1~bpo12+1, is no different
# (checked 2026-12-01: its rdma_rxe.ko registers no pernet operations and its rxe_setup_udp_tunnel() is
# specialised to init_net); rxe gained a socket per network namespace only in later upstream kernels. Hence both
# ends stay in init_net until the lane's kernel has rxe with network namespace support.
#
# Both targets listen at once (ernicd on port 4420, nvmet-rdma on 4423) and, after each one's checks with only it
# connected (the host's MR count is of all its controllers), take turns at the suite cases round by round as the
# TCP phases do (rdma_paired_rounds), so that each round's ernicd / nvmet-rdma compares the same moment of a host
# whose speed drifts. CSV rows come out under the phases rdma-ernicd and rdma-nvmet (run.sh pairs them for the
# ratios and sets them beside the TCP phases' rows).

# iproute2's tools by path: busybox's shell runs its own applets (a busybox ip) before looking at PATH.
IPROUTE2=/usr/sbin/ip
RDMA_TOOL=/usr/bin/rdma
RDMA_ADDR=10.0.0.1
RDMA_PEER=10.0.0.2
RDMA_PORT_ERNICD=4420
RDMA_PORT_NVMET=4423
# A second ernicd, briefly, with room for ROOM_PLACES queue pairs: what a full target does (nvmf_rdma_sgl --room).
RDMA_PORT_ERNICD_ROOM=4424
ROOM_PLACES=3
# And a third, with --buffer-budget RDMA_BUDGET: the bounce buffers (2 x entries x 128 KiB) of the kernel host's
# 32-entry admin queue and one I/O queue of RDMA_BUDGET_QSIZE entries, so a second I/O queue's Connect does not fit
# (rdma_budget_check).
RDMA_PORT_ERNICD_BUDGET=4426
RDMA_BUDGET_QSIZE=32
RDMA_BUDGET_BYTES=$(((32 + RDMA_BUDGET_QSIZE) * 2 * 128 * 1024))
RDMA_BUDGET=$((RDMA_BUDGET_BYTES >> 20))M
RDMA_PORT=$RDMA_PORT_ERNICD # the current target's: what rdma_connect and rdma_check_discovery use
NQN_ERNICD_RDMA=nqn.2024-01.org.ernic:lane-ernicd-rdma
NQN_ERNICD_RDMA_BUDGET=nqn.2024-01.org.ernic:lane-ernicd-rdma-budget
NQN_NVMET_RDMA=nqn.2024-01.org.ernic:lane-nvmet-rdma
# Keep-alive timeout of the RDMA connects (nvme connect -k). ernic restarts its Keep Alive Timer on Keep Alive
# commands only (it reports no Traffic Based Keep Alive), nvmet on any command; under TCG on a loaded machine the
# host's Keep Alive over soft-RoCE came later than the default 5 s often enough (36 queues lost in one run, each
# loss a 10 s reconnect the suites see as a stall) that the phase connects with 30 s.
RDMA_KATO=30
# A few suites/run cases, identical for both targets: random and queue-depth cases and the crc32c verify.
RDMA_CASES="patterns/randread patterns/randwrite qdepth/qd1 qdepth/qd32 integrity/ram-8m"
# ernicd's --idle-timeout over RDMA: nvmf_rdma_sgl waits for its queue pairs that serve no controller to be
# closed, so shorter than the default 10 s; a kernel host Connects within milliseconds of its CM connection.
RDMA_IDLE_S=5
# NVME_AQ_DEPTH: the admin queue's size whatever the I/O queues' is.
RDMA_ADMIN_QUEUE_SIZE=32

rdma_fabric_up() {
	local m
	echo "rdma fabric" >/run/lane-step
	for m in crc32_generic veth rdma_rxe rdma_cm ib_uverbs rdma_ucm nvme-rdma nvmet-rdma; do
		modprobe "$m" || fail "modprobe $m failed"
	done
	$IPROUTE2 link add veth0 type veth peer name veth1 || fail "cannot create the veth pair"
	$IPROUTE2 addr add "$RDMA_ADDR/24" dev veth0 || fail "cannot set $RDMA_ADDR on veth0"
	$IPROUTE2 addr add "$RDMA_PEER/24" dev veth1 || fail "cannot set $RDMA_PEER on veth1"
	$IPROUTE2 link set veth0 up || fail "cannot bring veth0 up"
	$IPROUTE2 link set veth1 up || fail "cannot bring veth1 up"
	$RDMA_TOOL link add rxe0 type rxe netdev veth0 || {
		dmesg | tail -n 5
		fail "rdma link add rxe0 type rxe netdev veth0 failed"
	}
	set_deadline 10
	while [ ! -e /sys/class/infiniband/rxe0 ] || [ ! -e /dev/infiniband/rdma_cm ]; do
		if past_deadline; then fail "no /sys/class/infiniband/rxe0 or /dev/infiniband/rdma_cm after 10 s"; fi
		sleep 0.1
	done
	log "rdma: $($RDMA_TOOL link show | tr '\n' ' ')"
}

rdma_diagnose() { # what the kernel and ernicd said last, before a failure
	dmesg | tail -n 25 | sed 's/^/  dmesg: /'
	if [ -n "$ERNICD_PID" ]; then tail -n 15 "$ERNICD_LOG" | grep -v '^ *{' | sed 's/^/  ernicd: /'; fi
}

# Why ernicd's queues went, counted: a host's own disconnects, or a queue the target or the fabric lost.
rdma_disconnect_reasons() {
	grep ' disconnect host ' "$ERNICD_LOG" | sed 's/.*: //' | sort | uniq -c | sed 's/^/  /'
}

rdma_connect() { # rdma_connect NQN [EXTRA-ARGS...]: connect over RDMA, wait for a live controller and namespace 1
	local nqn
	nqn=$1
	shift
	log "connect: nvme connect -t rdma -a $RDMA_ADDR -s $RDMA_PORT -n $nqn -k $RDMA_KATO $*"
	nvme connect -t rdma -a "$RDMA_ADDR" -s "$RDMA_PORT" -n "$nqn" -k "$RDMA_KATO" "$@" >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		rdma_diagnose
		fail "nvme connect -t rdma to $nqn failed"
	}
	wait_ns1 "$nqn" rdma_diagnose
}

# The host's memory regions against the budget the emulator enforces (ernic_backend_check_queues: each queue
# holds one registered region per entry): nvme-rdma gives every queue a pool of queue_size fast-registration MRs,
# so with N I/O queues of Q entries and the 32-entry admin queue it holds N * Q + 32, which is (N + 1) * Q when
# the admin queue is counted at the I/O size. Kernel MRs are listed with comm [nvme_rdma].
# The kernel's listing resumes each netlink message at a position, not at an MR: MRs freed meanwhile (a target
# closing the queues of the association before) shift later ones out of it. So the listing is read until two in
# a row agree, at most ten times.
rdma_check_mrs() { # rdma_check_mrs WHAT: count $CTRL's host MRs, fail unless they match the formula
	local n q host tgt want prev i
	n=$(($(cat "/sys/class/nvme/$CTRL/queue_count") - 1))
	q=$(($(cat "/sys/class/nvme/$CTRL/sqsize") + 1))
	prev=x
	for i in 1 2 3 4 5 6 7 8 9 10; do
		$RDMA_TOOL resource show mr >"$RESULTS/$PHASE-mr-$n.txt" 2>&1 || {
			cat "$RESULTS/$PHASE-mr-$n.txt"
			fail "rdma resource show mr failed"
		}
		host=$(grep -c 'comm \[nvme_rdma\]' "$RESULTS/$PHASE-mr-$n.txt" || true)
		tgt=$(grep -c 'comm ernicd' "$RESULTS/$PHASE-mr-$n.txt" || true)
		[ "$host $tgt" = "$prev" ] && break
		[ "$i" -gt 1 ] && log "MR listings $((i - 1)) and $i differ (host and target MRs: $prev, then $host $tgt)"
		prev="$host $tgt"
		sleep 0.3
	done
	want=$((n * q + RDMA_ADMIN_QUEUE_SIZE))
	log "MR budget ($1): N=$n I/O queues of $q entries: host MRs $host, formula N*Q+32 = $want" \
		"((N+1)*Q = $(((n + 1) * q))); target MRs $tgt"
	echo "ERNIC-LANE-MR $PHASE N=$n Q=$q host_mrs=$host formula=$want target_mrs=$tgt"
	[ "$host" -eq "$want" ] || {
		head -n 5 "$RESULTS/$PHASE-mr-$n.txt"
		fail "host holds $host MRs with $n I/O queues of $q entries, the budget formula says $want"
	}
}

rdma_check_discovery() { # rdma_check_discovery NQN: the log entry for NQN says trtype rdma and the RDMA TSAS
	local f
	f=$RESULTS/$PHASE-discover.txt
	log "discover: nvme discover -t rdma -a $RDMA_ADDR -s $RDMA_PORT"
	nvme discover -t rdma -a "$RDMA_ADDR" -s "$RDMA_PORT" >"$f" 2>&1 || {
		cat "$f"
		fail "nvme discover -t rdma failed"
	}
	cat "$f"
	grep -q "subnqn: *$1\$" "$f" || fail "discovery log has no entry for $1"
	grep -q '^trtype: *rdma' "$f" || fail "discovery log entry is not trtype rdma"
	grep -q 'rdma_prtype: *not specified' "$f" || fail "discovery log: rdma_prtype is not 'not specified'"
	grep -q 'rdma_qptype: *connected' "$f" || fail "discovery log: rdma_qptype is not 'connected'"
	grep -q 'rdma_cms: *rdma-cm' "$f" || fail "discovery log: rdma_cms is not 'rdma-cm'"
}

rdma_exercise() { # rdma_exercise NQN C: $PHASE's target alone on the host: discovery, Identify, queues, MRs
	local nqn c f n
	nqn=$1
	c=$2
	echo "$PHASE discover" >/run/lane-step
	rdma_check_discovery "$nqn"
	echo "$PHASE connect" >/run/lane-step
	rdma_connect "$nqn" -i 8 -W 8
	log "connected over RDMA: controller $CTRL ($(cat "/sys/class/nvme/$CTRL/transport")), namespace 1 is $DEV"
	f=$RESULTS/$PHASE-id-ctrl.txt
	nvme id-ctrl "/dev/$CTRL" >"$f" 2>&1 || {
		cat "$f"
		fail "nvme id-ctrl /dev/$CTRL failed"
	}
	grep -E '^(mdts|cntlid|maxcmd|sgls|ioccsz|iorcsz|subnqn) ' "$f" || true
	if [ "$PHASE" = rdma-ernicd ]; then check_id_ctrl "$f" 5 $((4 + ERNICD_RDMA_ICD / 16)) 1 "over RDMA"; fi
	check_queue_count "$c"
	rdma_check_mrs "connect -i 8 -W 8"
	disconnect "$nqn"
	# A second number of I/O queues for the MR count, connected as nvme connect-all does from the discovery log:
	# both targets' entries offer disabling SQ flow control, so the host asks for it (ernicd logs that per queue).
	echo "$PHASE connect-all -i 1" >/run/lane-step
	log "connect-all: nvme connect-all -t rdma -a $RDMA_ADDR -s $RDMA_PORT -k $RDMA_KATO -i 1"
	nvme connect-all -t rdma -a "$RDMA_ADDR" -s "$RDMA_PORT" -k "$RDMA_KATO" -i 1 >/tmp/connect.out 2>&1 || {
		cat /tmp/connect.out
		rdma_diagnose
		fail "nvme connect-all -t rdma to $nqn failed"
	}
	wait_ns1 "$nqn" rdma_diagnose
	if [ "$PHASE" = rdma-ernicd ]; then
		# The admin queue and the one I/O queue; the plain connect above asked for nothing.
		n=$(grep -c ' connect host .*(sq flow control disabled)' "$ERNICD_LOG" || true)
		[ "$n" -eq 2 ] || fail "connect-all over RDMA: ernicd logged $n queue connects with SQ flow control disabled, not 2"
		log "connect-all over RDMA: SQ flow control disabled on the admin queue and the I/O queue"
	fi
	rdma_check_mrs "connect-all -i 1"
	disconnect "$nqn"
}

nvmet_rdma_start() {
	local s p
	s=$NVMET/subsystems/$NQN_NVMET_RDMA
	mkdir "$s" || fail "cannot create nvmet subsystem"
	echo 1 >"$s/attr_allow_any_host"
	NVMET_RDMA_C=128
	if [ -e "$s/attr_qid_max" ]; then
		echo "$QUEUES" >"$s/attr_qid_max" || fail "cannot set attr_qid_max"
		NVMET_RDMA_C=$QUEUES
	fi
	truncate -s "$NS_SIZE" /tmp/nvmet-rdma-ns1.img || fail "cannot create namespace file"
	mkdir "$s/namespaces/1"
	printf %s /tmp/nvmet-rdma-ns1.img >"$s/namespaces/1/device_path"
	echo 1 >"$s/namespaces/1/buffered_io"
	echo 1 >"$s/namespaces/1/enable" || fail "cannot enable the file-backed namespace"
	p=$NVMET/ports/2
	mkdir "$p"
	echo rdma >"$p/addr_trtype"
	echo ipv4 >"$p/addr_adrfam"
	echo "$RDMA_ADDR" >"$p/addr_traddr"
	echo "$RDMA_PORT_NVMET" >"$p/addr_trsvcid"
	ln -s "$s" "$p/subsystems/$NQN_NVMET_RDMA" || fail "cannot bind the subsystem to the RDMA port"
	# Data up to this travels in the command's SEND, more by RDMA READ. Read once the port is enabled, which
	# replaces "not set" (-1) with the default. ernicd is given the same (ernic.rdma_icd=nvmet, the default), so
	# that a 4 KiB write is the same exchange with either target.
	NVMET_RDMA_ICD=$(cat "$p/param_inline_data_size" 2>/dev/null)
	case "$NVMET_RDMA_ICD" in
	'' | *[!0-9]*) fail "nvmet-rdma port: param_inline_data_size is '$NVMET_RDMA_ICD', not a number of bytes" ;;
	esac
	log "nvmet-rdma on $RDMA_ADDR:$RDMA_PORT_NVMET: $NQN_NVMET_RDMA, $NS_SIZE file namespace on tmpfs," \
		"$NVMET_RDMA_C I/O queues, in-capsule data $NVMET_RDMA_ICD"
}

nvmet_rdma_stop() {
	local s
	s=$NVMET/subsystems/$NQN_NVMET_RDMA
	rm -f "$NVMET/ports/2/subsystems/$NQN_NVMET_RDMA"
	rmdir "$NVMET/ports/2"
	echo 0 >"$s/namespaces/1/enable"
	rmdir "$s/namespaces/1" "$s"
	rm -f /tmp/nvmet-rdma-ns1.img
	log "nvmet-rdma target removed"
}

ernicd_rdma_wait_listen() { # [LOG PID]: until that ernicd's log (default the phase's) says it listens, or it exited
	local log pid
	log=${1:-$ERNICD_LOG}
	pid=${2:-$ERNICD_PID}
	set_deadline 10
	while ! grep -q 'listening on .* (NVMe/RDMA)' "$log"; do
		kill -0 "$pid" 2>/dev/null || {
			cat "$log"
			fail "ernicd --transport rdma exited before listening"
		}
		if past_deadline; then fail "ernicd --transport rdma not listening after 10 s"; fi
		sleep 0.1
	done
}

# A full target: a connection request takes the place of the oldest queue pair never Connected (whose Connect,
# sent at once, is not answered), and is rejected once every place is a queue. Against an ernicd of its own
# with --max-connections ROOM_PLACES, stopped after.
rdma_room_check() {
	local log pid
	log=$RESULTS/ernicd-rdma-room.log
	echo "rdma ernicd full target" >/run/lane-step
	ernicd --transport rdma --listen "$RDMA_ADDR:$RDMA_PORT_ERNICD_ROOM" --nqn "$NQN_ERNICD_RDMA" \
		--max-connections "$ROOM_PLACES" --backend "nvmeof:size=16M,bs=4096" 2>"$log" &
	pid=$!
	ernicd_rdma_wait_listen "$log" "$pid"
	log "a full target: nvmf_rdma_sgl --room $ROOM_PLACES $RDMA_ADDR $RDMA_PORT_ERNICD_ROOM $NQN_ERNICD_RDMA"
	if ! nvmf_rdma_sgl --room "$ROOM_PLACES" "$RDMA_ADDR" "$RDMA_PORT_ERNICD_ROOM" "$NQN_ERNICD_RDMA" \
		>"$RESULTS/room.txt" 2>&1; then
		cat "$RESULTS/room.txt"
		tail -n 20 "$log"
		fail "nvmf_rdma_sgl --room: a full target did not do what is expected (the lines marked 'differs' above)"
	fi
	cat "$RESULTS/room.txt"
	stop_ernicd "$pid" "ernicd --max-connections $ROOM_PLACES"
}

# rdma_buf_held_wait PID STATS LOG TAG WANT: until that ernicd holds WANT bytes of bounce buffers (10 s); prints
# its "rdma_buf" counters as "held budget refused"
rdma_buf_held_wait() {
	local m i
	i=0
	while :; do
		ernicd_stats "rdma-budget-$4" "$1" "$2" "$3"
		m=$(jq -r '"\(.rdma_buf.held) \(.rdma_buf.budget) \(.rdma_buf.refused)"' "$2")
		[ "${m%% *}" = "$5" ] && break
		i=$((i + 1))
		[ "$i" -le 20 ] || fail "--buffer-budget $RDMA_BUDGET ($4): ernicd holds ${m%% *} bytes of bounce buffers, not $5"
		sleep 0.5
	done
	echo "$m"
}

# A budget on what queues pin: an ernicd whose --buffer-budget holds the bounce buffers of an admin queue and one
# I/O queue of RDMA_BUDGET_QSIZE entries. The kernel host asking for two such I/O queues gets the second's Connect
# answered Controller Busy, and its connect fails with nothing left held; asking for one, it connects, holds the
# whole budget, and a crc32c write-and-verify passes; after its disconnect nothing is held again. Then
# nvmf_rdma_sgl --budget checks the statuses Connect by Connect.
rdma_budget_check() {
	local log stats pid m
	log=$RESULTS/ernicd-rdma-budget.log
	stats=/tmp/ernicd-rdma-budget-stats.json
	echo "rdma ernicd buffer budget" >/run/lane-step
	set -- --transport rdma --listen "$RDMA_ADDR:$RDMA_PORT_ERNICD_BUDGET" --nqn "$NQN_ERNICD_RDMA_BUDGET" \
		--buffer-budget "$RDMA_BUDGET" --idle-timeout "$RDMA_IDLE_S" --backend "nvmeof:size=16M,bs=4096" \
		--stats "$stats"
	log "ernicd $*"
	ernicd "$@" 2>"$log" &
	pid=$!
	ernicd_rdma_wait_listen "$log" "$pid"
	RDMA_PORT=$RDMA_PORT_ERNICD_BUDGET
	log "connect: nvme connect -t rdma -a $RDMA_ADDR -s $RDMA_PORT -n $NQN_ERNICD_RDMA_BUDGET -i 2" \
		"-Q $RDMA_BUDGET_QSIZE (expected to fail: two I/O queues' buffers do not fit)"
	if nvme connect -t rdma -a "$RDMA_ADDR" -s "$RDMA_PORT" -n "$NQN_ERNICD_RDMA_BUDGET" -k "$RDMA_KATO" -i 2 \
		-Q "$RDMA_BUDGET_QSIZE" >/tmp/connect.out 2>&1; then
		cat /tmp/connect.out
		fail "--buffer-budget $RDMA_BUDGET: a host connected with two I/O queues of $RDMA_BUDGET_QSIZE entries"
	fi
	grep -q 'connect refused host nqn[^ ]* qid 2 .*do not fit the buffer budget' "$log" || {
		tail -n 10 "$log"
		fail "--buffer-budget $RDMA_BUDGET: ernicd logged no refused Connect of I/O queue 2"
	}
	log "  $(grep -m 1 'connect refused host .* qid 2 ' "$log")"
	log "  nvme connect: $(head -n 1 /tmp/connect.out); kernel: $(dmesg | grep -i 'connect command failed' | tail -n 1)"
	m=$(rdma_buf_held_wait "$pid" "$stats" "$log" refused 0)
	case "$m" in
	"0 $RDMA_BUDGET_BYTES "[1-9]*) ;;
	*) fail "--buffer-budget $RDMA_BUDGET after the refused connect: held, budget, refused: $m" ;;
	esac
	rdma_connect "$NQN_ERNICD_RDMA_BUDGET" -i 1 -Q "$RDMA_BUDGET_QSIZE"
	m=$(rdma_buf_held_wait "$pid" "$stats" "$log" connected "$RDMA_BUDGET_BYTES")
	log "--buffer-budget $RDMA_BUDGET: one I/O queue of $RDMA_BUDGET_QSIZE entries connected; held, budget, refused: $m"
	fio_verify_start rdma-budget 64k 8 8
	fio_verify_wait rdma-budget
	disconnect "$NQN_ERNICD_RDMA_BUDGET"
	m=$(rdma_buf_held_wait "$pid" "$stats" "$log" disconnected 0)
	log "--buffer-budget $RDMA_BUDGET: 8 MiB written and verified; after the disconnect held, budget, refused: $m"
	# The same rule Connect by Connect, with the status itself: as many 8-entry admin queues (2 MiB of buffers
	# each) as fit, one more Controller Busy, and that one accepted once another queue has closed.
	if [ -x /bin/nvmf_rdma_sgl ]; then
		log "nvmf_rdma_sgl --budget $RDMA_BUDGET_BYTES $RDMA_ADDR $RDMA_PORT $NQN_ERNICD_RDMA_BUDGET"
		nvmf_rdma_sgl --budget "$RDMA_BUDGET_BYTES" "$RDMA_ADDR" "$RDMA_PORT" "$NQN_ERNICD_RDMA_BUDGET" \
			>"$RESULTS/budget.txt" 2>&1 || {
			cat "$RESULTS/budget.txt"
			fail "nvmf_rdma_sgl --budget: the buffer budget did not do what is expected (the lines marked 'differs' above)"
		}
		cat "$RESULTS/budget.txt"
		m=$(rdma_buf_held_wait "$pid" "$stats" "$log" sgl-closed 0)
		log "--buffer-budget $RDMA_BUDGET: after nvmf_rdma_sgl's queues closed held, budget, refused: $m"
	fi
	RDMA_PORT=$RDMA_PORT_ERNICD
	stop_ernicd "$pid" "ernicd --transport rdma --buffer-budget $RDMA_BUDGET"
}

rxe_counters() { # rxe_counters: rxe0's hardware counters, "name value ..." on one line
	$RDMA_TOOL statistic show link rxe0/1 2>/dev/null | tr -s ' \n' ' ' | sed 's/^link rxe0\/1 //'
}

rxe_report() { # rxe_report WHAT BEFORE AFTER: the rxe0 counters that moved during WHAT
	awk -v w="$1" -v a="$2" -v b="$3" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); line = ""
		for (i = 1; i < n; i += 2)
			if (y[i + 1] != x[i + 1]) line = line " " x[i] " " (y[i + 1] - x[i + 1])
		print "rxe0 during " w ":" (line == "" ? " no counter moved" : line) }'
}

# Both targets connected -i 8 -W 8, the suite cases in turns round by round (round_order in guest-init.sh,
# as the TCP phases take them), both disconnected again.
rdma_paired_rounds() {
	local edev ndev emdts nmdts ebackend nbackend r t before
	# Each row says the MDTS its target reported (rdma_exercise kept the Identify), as the TCP phases' rows do.
	emdts=$(id_ctrl_field "$RESULTS/rdma-ernicd-id-ctrl.txt" mdts)
	nmdts=$(id_ctrl_field "$RESULTS/rdma-nvmet-id-ctrl.txt" mdts)
	ebackend="ernicd-rdma:nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES,mdts=${emdts:-?}"
	nbackend="nvmet-rdma:file:size=$NS_SIZE,bs=4096,qid_max=$NVMET_RDMA_C,mdts=${nmdts:-?}"
	PHASE=rdma-ernicd RDMA_PORT=$RDMA_PORT_ERNICD
	rdma_connect "$NQN_ERNICD_RDMA" -i 8 -W 8
	edev=$DEV
	PHASE=rdma-nvmet RDMA_PORT=$RDMA_PORT_NVMET
	rdma_connect "$NQN_NVMET_RDMA" -i 8 -W 8
	ndev=$DEV
	log "both connected over RDMA for the suite rounds: ernicd $edev, nvmet-rdma $ndev"
	SUITES_TRANSPORT=rdma
	for r in $(seq "$ROUNDS"); do
		for t in $(round_order "$r"); do
			PHASE=rdma-$t
			echo "$PHASE suite cases, round $r" >/run/lane-step
			log "suite cases, round $r of $ROUNDS"
			before=$(rxe_counters)
			if [ "$t" = ernicd ]; then
				DEV=$edev
				# shellcheck disable=SC2086 # word list
				run_suites "$ebackend" "$RESULTS/csv/$PHASE" $RDMA_CASES
			else
				DEV=$ndev
				# shellcheck disable=SC2086 # word list
				run_suites "$nbackend" "$RESULTS/csv/$PHASE" $RDMA_CASES
			fi
			# Retransmissions, RNR NAKs or sequence errors in one target's rounds and not the other's say the
			# fabric, not the target, set that round's pace.
			log "$(rxe_report "round $r" "$before" "$(rxe_counters)")"
		done
	done
	# shellcheck disable=SC2034 # read by run_suites (guest-init.sh)
	SUITES_TRANSPORT=tcp
	disconnect "$NQN_ERNICD_RDMA"
	disconnect "$NQN_NVMET_RDMA"
	RDMA_PORT=$RDMA_PORT_ERNICD
}

phase_rdma() {
	local base now n i pid
	PHASE=rdma
	rdma_fabric_up
	PHASE=rdma-nvmet
	echo "rdma nvmet start" >/run/lane-step
	nvmet_rdma_start

	PHASE=rdma-ernicd
	echo "rdma ernicd start" >/run/lane-step
	if [ "$ERNICD_RDMA_ICD" = nvmet ]; then ERNICD_RDMA_ICD=$NVMET_RDMA_ICD; fi
	set -- --transport rdma --listen "$RDMA_ADDR:$RDMA_PORT" --nqn "$NQN_ERNICD_RDMA" \
		--in-capsule-data "$ERNICD_RDMA_ICD" --idle-timeout "$RDMA_IDLE_S" \
		--backend "nvmeof:size=$NS_SIZE,bs=4096,queues=$QUEUES" --stats "$ERNICD_STATS"
	log "ernicd $*"
	ERNICD_LOG=$RESULTS/ernicd-rdma.log
	ernicd "$@" 2>"$ERNICD_LOG" &
	ERNICD_PID=$!
	ernicd_rdma_wait_listen
	log "$(grep 'listening on' "$ERNICD_LOG")"
	base=$(ernicd_counters rdma-baseline)
	log "counters at rest (mr_in_use controllers io_queues): $base"

	rdma_exercise "$NQN_ERNICD_RDMA" "$QUEUES"
	PHASE=rdma-nvmet RDMA_PORT=$RDMA_PORT_NVMET
	rdma_exercise "$NQN_NVMET_RDMA" "$NVMET_RDMA_C"
	rdma_paired_rounds
	PHASE=rdma-ernicd

	# The real engine's half of the keyed SGL comparison (the emulated half is rdma_ut in the unit tests).
	echo "rdma ernicd nvmf_rdma_sgl cases" >/run/lane-step
	if [ -x /bin/nvmf_rdma_sgl ]; then
		log "keyed SGL, Disconnect, idle, pinned memory and in-capsule data cases over real verbs:" \
			"nvmf_rdma_sgl $RDMA_ADDR $RDMA_PORT $NQN_ERNICD_RDMA $RDMA_IDLE_S $ERNICD_PID"
		nvmf_rdma_sgl "$RDMA_ADDR" "$RDMA_PORT" "$NQN_ERNICD_RDMA" "$RDMA_IDLE_S" "$ERNICD_PID" \
			>"$RESULTS/ksgl.txt" 2>&1 || {
			cat "$RESULTS/ksgl.txt"
			tail -n 20 "$ERNICD_LOG"
			fail "nvmf_rdma_sgl: the real engine differs from what is expected (the lines marked 'differs' above)"
		}
		cat "$RESULTS/ksgl.txt"
		rdma_room_check
	else
		log "nvmf_rdma_sgl cases skipped: no /bin/nvmf_rdma_sgl in this guest"
	fi
	rdma_budget_check

	echo "rdma ernicd connect/disconnect loop" >/run/lane-step
	log "20 x connect/disconnect over RDMA"
	n=1
	while [ "$n" -le 20 ]; do
		rdma_connect "$NQN_ERNICD_RDMA" -i 8 -W 8
		disconnect "$NQN_ERNICD_RDMA"
		n=$((n + 1))
	done
	i=0
	while :; do
		now=$(ernicd_counters rdma-after-loop)
		if [ "$now" = "$base" ]; then break; fi
		i=$((i + 1))
		[ "$i" -le 10 ] || fail "counters after 20 RDMA connect/disconnect: $now, at rest before: $base"
		sleep 0.5
	done
	log "counters back to rest after 20 RDMA connect/disconnect: $now"
	pid=$ERNICD_PID
	ERNICD_PID=""
	rm -f "$ERNICD_STATS"
	log "ernicd logged $(grep -c ' connect ' "$ERNICD_LOG") connects and $(grep -c ' disconnect ' "$ERNICD_LOG")" \
		"disconnects over RDMA"
	# Each Connect's data names its host, in the capsule or behind a keyed SGL (the kernel host's admin queue);
	# nvmf_rdma_sgl's refused second Connect (naming another host) renames no queue.
	if grep -q ' connect host  \| connect host ? ' "$ERNICD_LOG"; then
		grep ' connect host  \| connect host ? ' "$ERNICD_LOG" | head -n 3 | sed 's/^/  ernicd: /'
		fail "ernicd logged a connect without the host's NQN"
	fi
	if grep -q 'disconnect host nqn.2014-08.org.example:nvmf-rdma-sgl-other-host ' "$ERNICD_LOG"; then
		fail "a refused Connect renamed the queue it came on: $(grep -m 1 'disconnect host nqn.2014-08.org.example:nvmf-rdma-sgl-other-host ' "$ERNICD_LOG")"
	fi
	log "ernicd's queues went because:"
	rdma_disconnect_reasons
	stop_ernicd "$pid" "ernicd --transport rdma"
	grep -v '^ *{' "$ERNICD_LOG" | grep -v ' connect \| disconnect ' | tail -n 6 | sed 's/^/  ernicd: /'
	emit_csv "$RESULTS/csv/$PHASE"

	PHASE=rdma-nvmet
	nvmet_rdma_stop
	emit_csv "$RESULTS/csv/$PHASE"
}
