# shellcheck shell=bash disable=SC2154 # tmp, pfx: run.sh's, which sources this
# playbooks/tests/lad.sh - lad.yml's checks, sourced by playbooks/tests/run.sh (its play, fail, show, $tmp, $pfx).
#
# This machine has no nvme-tcp, so no initiator connects and fabric-collect cannot run here (the QEMU lane runs
# it, ci/lane/phase-lad.sh). What runs for real:
#  - lad.yml --tags lad_target: the installed ernicd, from the installed env file, started with --trace, and the
#    clock-probe server; our own NVMe/TCP host (build/bench/tcp_bench) reads from it and clock-probe probes it;
#  - lad.yml --tags lad_target_stop: ernicd stopped (every sampled record written: the trace holds exactly the
#    counters' samples less their drops), the server stopped, trace and counters fetched to the controller;
#  - lad.yml --tags lad_report on fetched files: playbooks/tests/lad-lane.tar.xz holds a lane run's traces
#    (be455a2, kernel 6.1.0-57-amd64 under QEMU TCG, one clock: the ernicd trace as ernicd wrote it, the host's
#    tracefs lines, and nvmet-tcp's run with its target-side events split out; cut to 0.1-0.4 s of each run).
#    Here the target's times are moved onto another clock (+1 day 1.2345 ms, 25 ppm fast) and the probes made
#    from that with errors of +15 and -10 us: the report after fabric-align must equal the same-clock one, the
#    offset it prints must hold the true one, and without the alignment, or with a probe 1 s off, the join
#    must fail.

lad_fail() {
	fail "lad.yml: $*"
}

free_port() { # free_port tcp|udp
	python3 -c "import socket; s = socket.socket(type=socket.SOCK_$([ "$1" = udp ] && echo DGRAM || echo STREAM)); \
s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

lad_port=$(free_port tcp)
clock_port=$(free_port udp)
lad_results=$tmp/lad
lad_dir=$pfx/var/tmp/ernic-lad
lad=(-e "ernic_listen=127.0.0.1:$lad_port" -e "ernic_lad_clock_port=$clock_port" -e ernic_lad_trace_sample=4
	-e "ernic_lad_results=$lad_results" -e "ernic_lad_csv_dir=$tmp/lad-csv")

# The target half, for real: the installed ernicd listens on its own port (host setup writes it into ERNICD_OPTS).
play lad-setup host-setup.yml -e "ernic_listen=127.0.0.1:$lad_port" || { show lad-setup; lad_fail "host-setup.yml failed"; }
play lad-target lad.yml --tags lad_target "${lad[@]}" || { show lad-target; lad_fail "--tags lad_target failed"; }
grep -q "ernicd: listening on 127.0.0.1:$lad_port, subsystem nqn.2026-11.io.ernic:nvmeof," "$tmp/lad-target.log" ||
	{ show lad-target; lad_fail "the traced ernicd did not say where it listens"; }
ernicd_pid=$(cat "$lad_dir/ernicd.pid")
clock_pid=$(cat "$lad_dir/clock-probe.pid")
tr '\0' ' ' <"/proc/$ernicd_pid/cmdline" | grep -q -- "--listen 127.0.0.1:$lad_port .*--trace $lad_dir/ernicd.trace --trace-sample 4 " ||
	lad_fail "ernicd runs without the env file's options and --trace: $(tr '\0' ' ' <"/proc/$ernicd_pid/cmdline")"
build/bench/tcp_bench --pid "$ernicd_pid" --port "$lad_port" --qd 8 --seconds 1 --warmup 0 --span 33554432 \
	>"$tmp/lad-bench.log" 2>&1 || { cat "$tmp/lad-bench.log" >&2; lad_fail "tcp_bench against the traced ernicd failed"; }
# One machine, one clock: the offset measured must be 0 within the error it states.
read -r probe_off probe_err _ probe_rtt probe_n <<<"$(suites/lad/clock-probe probe --to "127.0.0.1:$clock_port" --count 50)" ||
	lad_fail "no answer from the clock-probe server"
[ "$probe_n" -eq 50 ] && [ "${probe_off#-}" -le "$probe_err" ] ||
	lad_fail "clock-probe on one machine: offset $probe_off ns, error $probe_err ns, $probe_n of 50 answered"
echo "== lad.yml --tags lad_target: $(cat "$tmp/lad-bench.log"); clock-probe: offset $probe_off ns +- $probe_err (rtt $probe_rtt ns)"

play lad-stop lad.yml --tags lad_target_stop "${lad[@]}" || { show lad-stop; lad_fail "--tags lad_target_stop failed"; }
# A zombie has exited: whoever inherited it reaps it in its own time.
alive() { [ -e "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
! alive "$ernicd_pid" || lad_fail "the traced ernicd ($ernicd_pid) still runs"
! alive "$clock_pid" || lad_fail "the clock-probe server ($clock_pid) still runs"
ernicd_pid="" clock_pid=""
trace=$lad_results/target/ernicd.trace
head -n 1 "$trace" | grep -q '^# ernic-trace transport=tcp clock=CLOCK_MONOTONIC unit=ns columns=qid cid opc status rx exec ' ||
	lad_fail "the fetched $trace has no trace header"
records=$(awk '!/^#/ { n++; if (NF != 14 || $1 < 1 || $3 != "0x02" || $4 != "0x0" || !($5 <= $6 && $6 <= $7 && $7 <= $8 &&
	$8 <= $10 && $10 <= $11)) { print "bad record: " $0 > "/dev/stderr"; bad = 1 } } END { print bad ? -1 : n + 0 }' "$trace")
kept=$(jq '.tcp_stages.samples - .tcp_stages.dropped - .tcp_stages.over_limit' "$lad_results/target/ernicd-stats.json") ||
	lad_fail "the fetched counters have no tcp_stages"
[ "$records" -gt 0 ] && [ "$records" -eq "$kept" ] ||
	lad_fail "the fetched trace holds $records good read records, the counters say $kept were written"
echo "== lad.yml --tags lad_target_stop: $records records fetched, as many as ernicd's counters sampled and kept"

# The report on fetched files, two clocks: the lane's traces, the target's moved onto another clock.
mkdir -p "$tmp/lane"
tar -xJf playbooks/tests/lad-lane.tar.xz -C "$tmp/lane"
theta=86400001234500 rho=0.000025
other_clock() { # other_clock: ernicd's records, or tracefs lines, with their times t as t * (1 + rho) + theta
	awk -v th=$theta -v r=$rho '
		function other(x) { return sprintf("%.0f", x * (1 + r) + th) }
		/^#/ { print; next }
		NF == 11 { for (i = 5; i <= 11; i++) if (i != 9) $i = other($i); print; next }
		{ split($1, p, "."); x = other(p[1] * 1000000000 + p[2] * 1000)
		  $1 = sprintf("%d.%06d", int(x / 1000000000), int(x % 1000000000 / 1000 + 0.5)); print }'
}
initiator_dir() { # initiator_dir SRC DEST: what fabric-collect and lad_collect.yml leave for a target elsewhere
	mkdir -p "$2"
	cp "$1"/qd1.host "$1"/qd32.host "$2"/
	sed '/^target=/d; /^backing_dev=/d' "$1/meta" >"$2/meta"
	awk -v th=$theta -v r=$rho -v f="$(head -n 1 "$1/qd1.host")" -v l="$(tail -n 1 "$1/qd32.host")" 'BEGIN {
		print "target=ernicd\nbacking_dev=\ntransport=tcp"
		split(f, p, "[. ]"); h = p[1] * 1e9 + p[2] * 1e3 - 1e9
		printf "clock_probe=%.0f 30000 %.0f 60000 200\n", th + r * h + 15000, h
		split(l, p, "[. ]"); h = p[1] * 1e9 + p[2] * 1e3 + 1e9
		printf "clock_probe=%.0f 30000 %.0f 60000 200\n", th + r * h - 10000, h }' >>"$2/meta"
}
# The same-clock tables: the lane's files as fabric-collect left them in the guest.
same=$tmp/lane-same
mkdir -p "$same/ernicd" "$same/nvmet"
cp "$tmp"/lane/ernicd/{meta,qd1.host,qd32.host} "$same/ernicd/"
for qd in 1 32; do
	grep -v '^#' "$tmp/lane/ernicd/ernicd.trace" >"$same/ernicd/qd$qd.target"
done
suites/lad/fabric-report --check --no-csv "$same/ernicd" >"$tmp/lad-same.txt" || { cat "$tmp/lad-same.txt" >&2; lad_fail "the lane's own ernicd table fails --check"; }

mv "$trace" "$lad_results/target/ernicd-local.trace"
other_clock <"$tmp/lane/ernicd/ernicd.trace" >"$trace"
rm -rf "${lad_results:?}/localhost"
initiator_dir "$tmp/lane/ernicd" "$lad_results/localhost/ernicd"
# nvmet-tcp's side as target-trace records it on the target machine: its events and its device's, one file.
initiator_dir "$tmp/lane/nvmet" "$lad_results/localhost/nvmet"
other_clock <"$tmp/lane/nvmet/target.events" >"$lad_results/target/nvmet.events"
echo 254:0 >"$lad_results/target/nvmet.events.dev"
# Unaligned, the target's records fall outside every host command: the join must lose them and --check fail.
mkdir -p "$tmp/lad-raw"
cp "$lad_results"/localhost/ernicd/* "$tmp/lad-raw/"
for qd in 1 32; do grep -v '^#' "$trace" >"$tmp/lad-raw/qd$qd.target"; done
if suites/lad/fabric-report --check --no-csv "$tmp/lad-raw" >"$tmp/lad-raw.txt" 2>&1; then
	cat "$tmp/lad-raw.txt" >&2
	lad_fail "fabric-report --check passed on a target trace of another clock, unaligned"
fi
# ernic_lad_nvmet_backing names the kernel target (no nvmet here: only the report runs).
play lad-report lad.yml --tags lad_report "${lad[@]}" -e ernic_lad_nvmet_backing=/dev/nullb0 ||
	{ show lad-report; lad_fail "--tags lad_report failed"; }
sed -n 's/^ *"\(  .*\)",\{0,1\}$/\1/p; s/^ *"\(== .*\)",\{0,1\}$/\1/p' "$tmp/lad-report.log" >"$tmp/lad-two.txt"
awk '/^== / { n++ } n == 1' "$tmp/lad-two.txt" >"$tmp/lad-two-ernicd.txt"
awk '/^== / { n++ } n == 2' "$tmp/lad-two.txt" >"$tmp/lad-two-nvmet.txt"
diff -u "$tmp/lad-same.txt" "$tmp/lad-two-ernicd.txt" >&2 ||
	lad_fail "ernicd's report from two clocks differs from the same-clock one (above)"
# The offset fabric-align settled on and the range it gives must hold the true one at that run's time.
for run in ernicd nvmet; do
	for qd in 1 32; do
		awk -v th=$theta -v r=$rho -v qd="$qd" -v host="$lad_results/localhost/$run/qd$qd.host" -F= '
			$1 == "qd" qd "_clock_offset_range_ns" { split($2, b, " ") }
			END {
				getline l <host; split(l, p, "[. ]"); truth = th + r * (p[1] * 1e9 + p[2] * 1e3)
				if (!(b[1] <= truth && truth <= b[2])) { printf "qd%s: true offset %.0f outside [%s, %s]\n", qd, truth, b[1], b[2]; exit 1 }
			}' "$lad_results/localhost/$run/meta" || lad_fail "fabric-align's range for $run misses the true offset"
	done
done
for t in ernicd nvmet-tcp; do
	rows=$(grep -c '^"[^"]*","[^"]*","[^"]*","[a-z_]*",[0-9.]*,[0-9.]*,[0-9.]*,"'$t'","tcp"$' "$tmp/lad-csv/lad.csv")
	[ "$rows" -eq 5 ] || lad_fail "lad.csv has $rows rows for target $t and transport tcp, not 5: $(cat "$tmp/lad-csv/lad.csv")"
done
echo "== lad.yml --tags lad_report: ernicd's two-clock table equals the same-clock one; $(grep -o 'qd1: target clock - initiator clock = [^;]*' "$tmp/lad-report.log" | head -n 1)"

# A probe 1 s off: no record fits within the window, fabric-align says so and the join loses them all.
initiator_dir "$tmp/lane/ernicd" "$tmp/lad-off"
if suites/lad/fabric-align --offset "$((theta + 1000000000)):30000" --ernicd-trace "$trace" "$tmp/lad-off" >"$tmp/lad-off.txt" 2>&1; then
	cat "$tmp/lad-off.txt" >&2
	lad_fail "fabric-align took a probe 1 s off"
fi
grep -q 'qd1: .*no target record fits a host command within +-80.0 us of the probes' "$tmp/lad-off.txt" ||
	{ cat "$tmp/lad-off.txt" >&2; lad_fail "fabric-align did not say that nothing fits"; }
if suites/lad/fabric-report --check --no-csv "$tmp/lad-off" >"$tmp/lad-off-report.txt" 2>&1; then
	lad_fail "fabric-report --check passed after an alignment that fit nothing"
fi

# nvmet-tcp's table from the report above against the one the guest's single clock gives.
mkdir -p "$same/nvmet"
cp "$tmp/lane/nvmet/meta" "$same/nvmet/"
for qd in 1 32; do
	# In the guest, tracefs recorded the run's nvmet events beside the host's: the lines within the run's span.
	awk -v f="$(head -n 1 "$tmp/lane/nvmet/qd$qd.host" | cut -d' ' -f1)" -v l="$(tail -n 1 "$tmp/lane/nvmet/qd$qd.host" | cut -d' ' -f1)" \
		'$1 + 0 >= f + 0 && $1 + 0 <= l + 0' "$tmp/lane/nvmet/target.events" |
		LC_ALL=C sort -m -s -k1,1n "$tmp/lane/nvmet/qd$qd.host" - >"$same/nvmet/qd$qd.host"
done
suites/lad/fabric-report --check --no-csv "$same/nvmet" >"$tmp/lad-nvmet-same.txt" ||
	lad_fail "the lane's own nvmet table fails --check"
# tracefs times are whole microseconds on both machines: each event moves by up to half of one when it is put on
# the other clock and back, so the means may differ in the second decimal, by no more than 0.02 us.
paste -d'|' "$tmp/lad-nvmet-same.txt" "$tmp/lad-two-nvmet.txt" | awk -F'|' '
	function near(x, y) { return x ~ /^[0-9.]+$/ && y ~ /^[0-9.]+$/ && x - y <= 0.02 && y - x <= 0.02 }
	{
		na = split($1, a, " ")
		nb = split($2, b, " ")
		for (i = 1; i <= na || i <= nb; i++)
			if (a[i] != b[i] && !near(a[i], b[i])) {
				print "differs: " $0
				bad = 1
				next
			}
	}
	END { exit bad }' >&2 || lad_fail "the two-clock nvmet table differs from the same-clock one by more than 0.02 us"
echo "== lad.yml --tags lad_report: nvmet-tcp's two-clock table (fabric-align --nvmet-events) is the same-clock one within 0.02 us"

# target-trace refuses a kernel without nvmet's events, before it creates its tracefs instance.
if [ -b /dev/loop0 ]; then
	if suites/lad/target-trace start --out "$tmp/nvmet.events" --nvmet-backing /dev/loop0 >"$tmp/target-trace.txt" 2>&1; then
		suites/lad/target-trace stop --out "$tmp/nvmet.events" >/dev/null 2>&1 || true
		[ -d /sys/kernel/tracing/events/nvmet ] || lad_fail "target-trace started without nvmet's events"
	else
		grep -qx 'suites/lad/target-trace: tracefs event nvmet/nvmet_req_init is missing (is nvmet loaded?)' "$tmp/target-trace.txt" ||
			{ cat "$tmp/target-trace.txt" >&2; lad_fail "target-trace did not name the missing event"; }
		[ ! -e /sys/kernel/tracing/instances/ernic-lad ] || lad_fail "target-trace left its tracefs instance behind"
		echo "== target-trace without nvmet: $(cat "$tmp/target-trace.txt")"
	fi
fi
