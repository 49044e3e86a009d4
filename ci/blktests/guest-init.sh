#!/bin/bash
# /init of the blktests guest (ci/blktests/build-guest.sh): runs blktests' tests against the kernel's nvmet-tcp
# (blktests drives configfs itself) and against ernicd (through NVME_TARGET_CONTROL=/blktests-ctl/ernicd-target),
# one `./check` per test, and prints one line per test and target for ci/blktests/run.sh:
#   BLKT|<target>|<test>|<pass|fail|not run>|<reason>
# then BLKT-DONE. Kernel command line: blkt.tests=nvme/004,nvme/008 (or "nvme": the whole group)
# blkt.targets=nvmet,ernicd blkt.timeout=SECONDS (per test).
export PATH=/usr/sbin:/usr/bin
export HOME=/root LANG=C LC_ALL=C

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /root /boot
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t tmpfs shm /dev/shm
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe
hostname blktests
# Both targets listen on 127.0.0.1; the guest has no other network.
ip link set lo up

say() { echo "blktests-guest: $*"; }
bye() { sync; echo o >/proc/sysrq-trigger 2>/dev/null; poweroff -f; }

arg() { # NAME DEFAULT: the value of NAME= on the kernel command line
	local a
	for a in $(cat /proc/cmdline); do
		case "$a" in "$1"=*) echo "${a#*=}"; return ;; esac
	done
	echo "$2"
}
TESTS=$(arg blkt.tests nvme | tr , ' ')
TARGETS=$(arg blkt.targets nvmet,ernicd | tr , ' ')
PER_TEST=$(arg blkt.timeout 900)

for m in configfs loop brd xfs null_blk nvme-tcp nvmet nvmet-tcp crc32c_generic; do
	modprobe "$m" 2>/dev/null || say "modprobe $m failed"
done
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
# Results on xfs: nvmet's file backend opens its image with O_DIRECT, which tmpfs refuses on 6.1.
modprobe -r brd 2>/dev/null
modprobe brd rd_nr=1 rd_size=$((1200 * 1024)) || { say "no brd"; bye; }
mkdir -p /results
mkfs.xfs -q -f /dev/ram0 && mount /dev/ram0 /results || { say "cannot make xfs on /dev/ram0"; bye; }

cd /blktests || { say "no /blktests"; bye; }
say "results on xfs over /dev/ram0; each test at most ${PER_TEST} s"
if [ "$TESTS" = nvme ]; then
	TESTS=$(cd tests && ls -1 nvme/[0-9][0-9][0-9] | tr '\n' ' ')
fi

common_env=(NVMET_TRTYPES=tcp NVMET_BLKDEV_TYPES=device NVME_IMG_SIZE=350m NVME_NUM_ITER=10)

# The reason for a test that did not pass, from check's output and its results/ files.
reason_of() { # OUTDIR TEST LOG STATUS
	local res
	res=$(find "$1" -path "*/$2" -type f 2>/dev/null | head -n 1)
	case "$4" in
	"not run")
		# check prints the skip reasons indented under the test's line, after its runtime.
		awk '/\[not run\]/ { on = 1; next } on && /^    / && !/^ +runtime / { sub(/^ +/, ""); print; exit }' "$3"
		return
		;;
	fail) ;;
	*) return ;;
	esac
	[ -n "$res" ] || { echo "no results file"; return; }
	case "$(awk -F'\t' '$1 == "reason" { print $2 }' "$res")" in
	output)
		# The first line the test printed that its .out does not have.
		diff "tests/$2.out" "$res.out.bad" 2>/dev/null | awk '/^>/ { sub(/^> /, ""); print "output: " $0; exit }'
		;;
	exit) echo "exit status $(awk -F'\t' '$1 == "exit_status" { print $2 }' "$res")" ;;
	dmesg) echo "dmesg: $(grep -m1 -v '^$' "$res.dmesg" 2>/dev/null | cut -c1-120)" ;;
	*) echo "fail" ;;
	esac
}

# Each test on every target before the next test, so that a run cut short still gives whole rows.
for t in $TESTS; do
	for target in $TARGETS; do
		out=/results/$target
		mkdir -p "$out"
		env_t=("${common_env[@]}")
		if [ "$target" = ernicd ]; then
			env_t+=(NVME_TARGET_CONTROL=/blktests-ctl/ernicd-target ERNICD=/usr/bin/ernicd)
		fi
		log=$out/${t//\//-}.log
		say "$target $t: running"
		start=$(date +%s)
		# A line a minute while the test runs: the host stops a guest silent for longer (BLKT_SILENCE_S), one
		# whose kernel hung whole, where a quiet test must not look like one.
		(while sleep 60; do say "$target $t: still running after $(($(date +%s) - start)) s"; done) &
		alive=$!
		# Not the console as stdin: timeout runs check in a process group of its own, which the console's job
		# control would stop (SIGTTIN) at a read from it.
		env "${env_t[@]}" timeout -k 10 "$PER_TEST" ./check -o "$out" "$t" </dev/null >"$log" 2>&1
		rc=$?
		kill "$alive" 2>/dev/null
		wait "$alive" 2>/dev/null
		res=$(find "$out" -path "*/$t" -type f 2>/dev/null | head -n 1)
		status=$(awk -F'\t' '$1 == "status" { print $2 }' "$res" 2>/dev/null)
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			status=fail
			reason="timed out after ${PER_TEST}s"
		elif [ -z "$status" ]; then
			status=$(grep -q '\[not run\]' "$log" && echo "not run" || echo fail)
			reason=$(reason_of "$out" "$t" "$log" "$status")
		else
			reason=$(reason_of "$out" "$t" "$log" "$status")
		fi
		say "$target $t: $status in $(($(date +%s) - start)) s"
		if [ "$status" = fail ]; then
			# The evidence, on the console: what check printed for the test.
			grep -v '^\s*$' "$log" | tail -n 12 | sed "s|^|blktests-guest:   |"
			# ... what the test's commands printed (blktests keeps their stderr in the .full file), and the target's
			# last words.
			f=$(find "$out" -path "*/$t.full" -type f 2>/dev/null | head -n 1)
			[ -z "$f" ] || grep -v '^\s*$' "$f" | tail -n 12 | sed "s|^|blktests-guest:   full: |"
			if [ "$target" = ernicd ]; then
				tail -n 8 /run/ernic-blktests/ernicd.log 2>/dev/null | sed "s|^|blktests-guest:   ernicd: |"
			fi
		fi
		echo "BLKT|$target|$t|$status|$(echo "$reason" | tr '|\n' '/ ' | cut -c1-160)"
		# A test that failed may leave its target behind: nothing of it may reach the next one.
		if [ "$target" = ernicd ]; then
			/blktests-ctl/ernicd-target stop >/dev/null 2>&1
		fi
		for c in /sys/class/nvme/nvme*; do
			[ -e "$c" ] && echo 1 >"$c/delete_controller" 2>/dev/null
		done
	done
done
echo BLKT-DONE
bye
