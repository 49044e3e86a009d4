#!/bin/bash
# Usage: playbooks/tests/run.sh   (make test-playbooks runs it after the syntax check and ansible-lint)
#
# Runs the playbooks for real on localhost, through playbooks/inventory.example.yml. There is no
# systemd to manage here, so ernic_prefix installs into a temporary directory, which turns the
# systemd tasks off and leaves every other task as it runs on a lab host. It proves:
#  - host-setup.yml in check mode changes nothing;
#  - host-setup.yml installs build/ernicd, the unit and an env file equal to emulator/dist/ernicd.env
#    (so without ERNIC_BACKEND);
#  - backend.yml refuses a backend ernicd refuses, with ernicd's one line, and leaves the file alone;
#  - backend.yml writes a good one, once;
#  - host-setup.yml run again changes only ERNICD_OPTS (here: --allow-host added) and keeps the
#    backend line;
#  - with ernic_transport=rdma it installs the unit's NVMe/RDMA drop-in (systemd-analyze verify reads the
#    unit with it cleanly) and puts --transport rdma in ERNICD_OPTS, and back on tcp removes it;
#  - the installed ernicd, given the installed env file, serves that backend;
#  - roles/ernic/files/ernic-nvme-dev.sh finds the controller and block device in a sysfs tree laid
#    out as the kernel does, with and without native multipath;
#  - the parts of nvmeof.yml that need no initiator: the queue_count check, C from the backend,
#    the connect address, the suites/run and disconnect command lines, and the characters
#    backend.yml keeps out of the env file (tests/logic.yml);
#  - multihost.yml installs the fio server unit, and its sweep, through a fio server started as the unit
#    says, writes rows for the initiator and for all (and tests/logic.yml checks its suites/run line).
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
tmp=$(mktemp -d)
pfx=$tmp/root
ernicd_pid=""
cleanup() {
	if [ -n "$ernicd_pid" ]; then kill "$ernicd_pid" 2>/dev/null || true; fi
	if [ -n "${fio_pid:-}" ]; then kill "$fio_pid" 2>/dev/null || true; fi
	if [ -n "${clock_pid:-}" ]; then kill "$clock_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

export ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_ROLES_PATH=$top/playbooks/roles
env=$pfx/etc/ernic/ernicd.env

fail() {
	echo "playbooks/tests/run.sh: FAIL: $*" >&2
	exit 1
}
play() { # play NAME PLAYBOOK ARGS...: run it on localhost into $pfx, output in $tmp/NAME.log
	local name=$1 book=$2 rc=0
	shift 2
	ansible-playbook "playbooks/$book" -i playbooks/inventory.example.yml \
		-e ansible_python_interpreter=/usr/bin/python3 -e ansible_become=false -e "ernic_prefix=$pfx" \
		"$@" >"$tmp/$name.log" 2>&1 || rc=$?
	echo "== $name: ansible-playbook $book $* (exit $rc, $(recap "$name"))"
	return "$rc"
}
recap() { # recap NAME: the PLAY RECAP counters of $tmp/NAME.log
	sed -n 's/^localhost *: *//p' "$tmp/$1.log" | tr -s ' '
}
changed() { # changed NAME: the tasks of $tmp/NAME.log that changed something, one per line, but the
	# build: make runs whenever the checkout has changed since the last one, which is not the play's doing
	awk '/^TASK \[/ { t = $0; sub(/^TASK \[(ernic : )?/, "", t); sub(/\] \**$/, "", t) }
	     /^changed: / && t != last && t != "Build (make)" { print t; last = t }' "$tmp/$1.log"
}
show() {
	cat "$tmp/$1.log" >&2
}

# Host setup in check mode: nothing installed.
play check host-setup.yml --check || { show check; fail "host-setup.yml --check failed"; }
[ -z "$(find "$tmp" -mindepth 1 -not -name '*.log')" ] || fail "host-setup.yml --check created $(find "$tmp" -mindepth 1)"

# Host setup: the binary, the unit, the env file of emulator/dist/, no backend.
play setup host-setup.yml || { show setup; fail "host-setup.yml failed"; }
want_changed="Create the install directories
Install ernicd
Install the unit
Create the env file (no backend)"
[ "$(changed setup)" = "$want_changed" ] || { show setup; fail "host-setup.yml changed: $(changed setup)"; }
cmp build/ernicd "$pfx/usr/local/bin/ernicd" || fail "installed ernicd differs from build/ernicd"
[ -x "$pfx/usr/local/bin/ernicd" ] || fail "installed ernicd is not executable"
cmp emulator/dist/ernicd.service "$pfx/etc/systemd/system/ernicd.service" || fail "installed unit differs"
diff -u emulator/dist/ernicd.env "$env" || fail "installed env file differs from emulator/dist/ernicd.env"
if grep -q '^ERNIC_BACKEND' "$env"; then fail "host setup wrote a backend"; fi

# A backend ernicd refuses is refused with its line, and not written.
# Variables of ERNICD_OPTS and ERNIC_BACKEND that systemd and sh would read apart, or ernicd refuse only
# once running: each is refused by its play, naming the variable and the value.
if play badlisten host-setup.yml -e ernic_listen=127.0.0.1; then show badlisten; fail "host-setup.yml accepted ernic_listen=127.0.0.1"; fi
grep -q "ernic_listen=127.0.0.1 (ADDR:PORT" "$tmp/badlisten.log" || { show badlisten; fail "host-setup.yml did not name ernic_listen"; }
if play badhosts host-setup.yml -e ernic_allow_hosts=nqn.2014-08.org.nvmexpress:uuid:lab-a; then
	show badhosts; fail "host-setup.yml took a string for ernic_allow_hosts (one --allow-host per character)"
fi
badchars='nvmeof:size=64M,bs=4096,file=/tmp/ns.img;id'
if play badchars backend.yml -e "ernic_backend=$badchars"; then show badchars; fail "backend.yml accepted $badchars"; fi
grep -q "ernic_backend=$badchars: a backend string of letters" "$tmp/badchars.log" || { show badchars; fail "backend.yml did not name the backend"; }

bad=nvmeof:size=1G,bs=4096,queues=16
if play bad backend.yml -e "ernic_backend=$bad"; then show bad; fail "backend.yml accepted $bad"; fi
grep -q "ernicd: bad --backend value '$bad': Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a table of 2048 (got '16')" \
	"$tmp/bad.log" || { show bad; fail "backend.yml did not show ernicd's error for $bad"; }
diff -u emulator/dist/ernicd.env "$env" || fail "backend.yml changed the env file for a refused backend"

# A good backend is written as one ERNIC_BACKEND line.
good=nvmeof:size=64M,bs=4096,queues=2
play good backend.yml -e "ernic_backend=$good" || { show good; fail "backend.yml refused $good"; }
[ "$(changed good)" = "Set ERNIC_BACKEND in the env file" ] || { show good; fail "backend.yml changed: $(changed good)"; }
[ "$(grep -c '^ERNIC_BACKEND=' "$env")" -eq 1 ] || fail "not one ERNIC_BACKEND line in $env"
grep -qx "ERNIC_BACKEND=$good" "$env" || fail "no ERNIC_BACKEND=$good in $env"

# Host setup again: only ERNICD_OPTS follows the inventory, the backend stays.
play again host-setup.yml -e '{"ernic_allow_hosts": ["nqn.2014-08.org.nvmexpress:uuid:lab-a"]}' ||
	{ show again; fail "host-setup.yml failed on a second run"; }
[ "$(changed again)" = "Keep the env file's ERNICD_OPTS in line with the inventory" ] ||
	{ show again; fail "second host-setup.yml changed: $(changed again)"; }
grep -qx "ERNIC_BACKEND=$good" "$env" || fail "second host-setup.yml lost the backend line"
grep -qx 'ERNICD_OPTS="--listen 127.0.0.1:4420 --nqn nqn.2026-11.io.ernic:nvmeof --allow-host nqn.2014-08.org.nvmexpress:uuid:lab-a"' \
	"$env" || fail "ERNICD_OPTS without the --allow-host: $(grep ERNICD_OPTS "$env")"
diff <(grep -v '^ERNICD_OPTS=\|^ERNIC_BACKEND=' emulator/dist/ernicd.env) <(grep -v '^ERNICD_OPTS=\|^ERNIC_BACKEND=' "$env") ||
	fail "second host-setup.yml changed more of the env file than ERNICD_OPTS"

# Over NVMe/RDMA: --transport rdma in ERNICD_OPTS and the drop-in that gives the unit the RDMA device nodes,
# which systemd reads with the unit without a complaint; back over NVMe/TCP the drop-in goes again.
dropin=$pfx/etc/systemd/system/ernicd.service.d/rdma.conf
[ ! -e "$dropin" ] || fail "host-setup.yml over NVMe/TCP installed $dropin"
play rdma host-setup.yml -e ernic_transport=rdma -e '{"ernic_allow_hosts": ["nqn.2014-08.org.nvmexpress:uuid:lab-a"]}' ||
	{ show rdma; fail "host-setup.yml failed with ernic_transport=rdma"; }
[ "$(changed rdma)" = "Install the NVMe/RDMA drop-in
Keep the env file's ERNICD_OPTS in line with the inventory" ] || { show rdma; fail "host-setup.yml over NVMe/RDMA changed: $(changed rdma)"; }
cmp emulator/dist/ernicd-rdma.conf "$dropin" || fail "installed NVMe/RDMA drop-in differs"
grep -q '^ERNICD_OPTS="--transport rdma --listen ' "$env" || fail "ERNICD_OPTS over NVMe/RDMA: $(grep ERNICD_OPTS "$env")"
# Every line but the missing binary's (the unit names /usr/local/bin/ernicd, installed here under a prefix).
verify=$(cd "$pfx/etc/systemd/system" && systemd-analyze verify --man=no ./ernicd.service 2>&1 |
	grep -v 'Command /usr/local/bin/ernicd is not executable' || true)
[ -z "$verify" ] || fail "systemd-analyze verify of the unit with its NVMe/RDMA drop-in: $verify"
play tcp host-setup.yml -e '{"ernic_allow_hosts": ["nqn.2014-08.org.nvmexpress:uuid:lab-a"]}' ||
	{ show tcp; fail "host-setup.yml failed back over NVMe/TCP"; }
[ "$(changed tcp)" = "Remove the NVMe/RDMA drop-in over NVMe/TCP
Keep the env file's ERNICD_OPTS in line with the inventory" ] || { show tcp; fail "host-setup.yml back over NVMe/TCP changed: $(changed tcp)"; }
[ ! -e "$dropin" ] || fail "host-setup.yml back over NVMe/TCP left $dropin"
grep -qx "ERNIC_BACKEND=$good" "$env" || fail "host-setup.yml over NVMe/RDMA and back lost the backend line"

# The installed ernicd with the installed env file, as the unit starts it (on a free port of its own).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(
	set -a
	# shellcheck source=/dev/null
	. "$env"
	exec "$pfx/usr/local/bin/ernicd" --listen "127.0.0.1:$port" --stats "$tmp/stats.json"
) 2>"$tmp/ernicd.log" &
ernicd_pid=$!
for _ in $(seq 50); do
	grep -q 'listening on' "$tmp/ernicd.log" && break
	kill -0 "$ernicd_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q "ernicd: listening on 127.0.0.1:$port, subsystem nqn.2026-11.io.ernic:nvmeof, 1 namespace(s), backend nvmeof:size=64M,bs=4096,queues=2," \
	"$tmp/ernicd.log" || { cat "$tmp/ernicd.log" >&2; fail "ernicd did not serve the env file's backend"; }
kill -TERM "$ernicd_pid"
rc=0
wait "$ernicd_pid" || rc=$?
ernicd_pid=""
[ "$rc" -eq 0 ] || { cat "$tmp/ernicd.log" >&2; fail "ernicd exited $rc on SIGTERM"; }
echo "== ernicd from the installed files: $(grep 'listening on' "$tmp/ernicd.log")"

# ernic-nvme-dev.sh on a sysfs tree: controller nvme1 is ours (nvme0 is another target with the
# same NQN), subsystem 2, namespace 1; with multipath the device is the head nvme2n1.
sysfs=$tmp/sys
devfs=$tmp/dev
nqn=nqn.2026-11.io.ernic:nvmeof
ctrl_dir() { # ctrl_dir NAME ADDRESS STATE
	mkdir -p "$sysfs/class/nvme/$1"
	echo "$nqn" >"$sysfs/class/nvme/$1/subsysnqn"
	echo tcp >"$sysfs/class/nvme/$1/transport"
	echo "$2" >"$sysfs/class/nvme/$1/address"
	echo "$3" >"$sysfs/class/nvme/$1/state"
}
dev_of() {
	ERNIC_SYSFS=$sysfs ERNIC_DEVFS=$devfs playbooks/roles/ernic/files/ernic-nvme-dev.sh "$nqn" 10.0.0.2 4420 "$@"
}
cases=0
expect() { # expect WANT ARGS...: ernic-nvme-dev.sh ARGS prints WANT (exit 0), or exits 1 when WANT is ""
	local want=$1 want_rc=0 got rc=0
	shift
	if [ -z "$want" ]; then want_rc=1; fi
	got=$(dev_of "$@") || rc=$?
	if [ "$got" != "$want" ] || [ "$rc" -ne "$want_rc" ]; then
		fail "ernic-nvme-dev.sh $*: '$got' (exit $rc), expected '$want' (exit $want_rc)"
	fi
	cases=$((cases + 1))
}
mkdir -p "$sysfs/class/nvme" "$sysfs/class/nvme-subsystem" "$devfs"
expect "" # no controller at all
ctrl_dir nvme0 "traddr=10.0.0.3,trsvcid=4420,src_addr=10.0.0.9" live
expect ""
ctrl_dir nvme1 "traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.9" connecting
expect nvme1
expect "" 1 # not live yet
echo live >"$sysfs/class/nvme/nvme1/state"
expect "" 1 # no namespace yet
mkdir -p "$sysfs/class/nvme/nvme1/nvme2c1n1" "$sysfs/class/nvme-subsystem/nvme-subsys2/nvme2n1"
echo 1 >"$sysfs/class/nvme/nvme1/nvme2c1n1/nsid"
echo 1 >"$sysfs/class/nvme-subsystem/nvme-subsys2/nvme2n1/nsid"
ln -s ../../nvme/nvme1 "$sysfs/class/nvme-subsystem/nvme-subsys2/nvme1"
expect "" 1 # no block device yet
mknod "$devfs/nvme2n1" b 7 200 || fail "cannot make a block device node for the sysfs test"
expect "nvme1 $devfs/nvme2n1" 1
expect "" 2
# Without multipath: the namespace hangs off the controller as nvme1n1.
rm -rf "$sysfs/class/nvme-subsystem/nvme-subsys2" "$sysfs/class/nvme/nvme1/nvme2c1n1"
mkdir -p "$sysfs/class/nvme/nvme1/nvme1n1"
echo 1 >"$sysfs/class/nvme/nvme1/nvme1n1/nsid"
expect "" 1
mknod "$devfs/nvme1n1" b 7 201
expect "nvme1 $devfs/nvme1n1" 1
# ernic_transport rdma: an NVMe/TCP controller at the same address is not the one, an NVMe/RDMA one is.
got=$(ERNIC_TRANSPORT=rdma dev_of) && fail "ernic-nvme-dev.sh with ERNIC_TRANSPORT=rdma took the tcp controller ($got)"
cases=$((cases + 1))
echo rdma >"$sysfs/class/nvme/nvme1/transport"
expect "" 1
got=$(ERNIC_TRANSPORT=rdma dev_of 1) || fail "ernic-nvme-dev.sh with ERNIC_TRANSPORT=rdma missed the rdma controller"
[ "$got" = "nvme1 $devfs/nvme1n1" ] || fail "ernic-nvme-dev.sh with ERNIC_TRANSPORT=rdma: '$got'"
cases=$((cases + 1))
echo "== ernic-nvme-dev.sh: $cases cases"

play logic tests/logic.yml || { show logic; fail "tests/logic.yml failed"; }

# multihost.yml for real: the fio server unit installed into $pfx, a fio server started as its ExecStart
# says (on a free loopback port), then the controller's sweep through it: one case, 1 s, rows for the
# initiator and for all.
fio_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mh=(-e ernic_fio_server_addr=127.0.0.1 -e "ernic_fio_port=$fio_port")
play fio-server multihost.yml --tags fio_server "${mh[@]}" || { show fio-server; fail "multihost.yml --tags fio_server failed"; }
unit=$pfx/etc/systemd/system/ernic-fio-server.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$exec_start" = "/usr/bin/fio --server=ip:127.0.0.1,$fio_port" ] || fail "ernic-fio-server.service: ExecStart=$exec_start"
grep -qx "WorkingDirectory=$top" "$unit" || fail "ernic-fio-server.service does not run in the checkout: $(grep WorkingDirectory "$unit")"
# shellcheck disable=SC2086 # ExecStart is split into words as systemd does
(cd "$top" && exec $exec_start) >"$tmp/fio-server.log" 2>&1 &
fio_pid=$!
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $fio_port), 0.2)" 2>/dev/null && break
	sleep 0.1
done
play sweep multihost.yml --tags sweep "${mh[@]}" -e ernic_suites=qdepth/qd1 -e ernic_runtime=1 \
	-e "ernic_results_dir=$tmp/mh-results" || { show sweep; kill "$fio_pid"; fail "multihost.yml --tags sweep failed"; }
kill "$fio_pid"
wait "$fio_pid" 2>/dev/null || true
fio_pid=""
suites/check-csv "$tmp/mh-results/qdepth.csv" 2 || fail "multihost.yml wrote no initiator and aggregate rows"
grep -q "^\"[^\"]*\",\"[^\"]*\",\"localhost:$fio_port\"," "$tmp/mh-results/qdepth.csv" || fail "no row for localhost:$fio_port"
grep -q '^"[^"]*","[^"]*","all of 1",' "$tmp/mh-results/qdepth.csv" || fail "no aggregate row (host \"all of 1\")"
echo "== multihost.yml: fio server unit, rows for localhost:$fio_port and \"all of 1\""

# lad.yml: the target half for real, the report on a lane run's traces put on two clocks.
# shellcheck source=playbooks/tests/lad.sh
. playbooks/tests/lad.sh

echo "playbooks/tests/run.sh: all passed"
