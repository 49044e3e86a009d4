#!/bin/bash
# Engine tests: short fio runs through build/ernic-fio.so, each check saying
# what it proves. Exits non-zero when any check fails.
#
# Usage: engine/tests/run.sh [path/to/ernic-fio.so]
set -u

here=$(cd "$(dirname "$0")" && pwd)
so=${1:-build/ernic-fio.so}
case "$so" in /*) ;; *) so="$(pwd)/$so" ;; esac
[ -f "$so" ] || { echo "engine/tests: $so not found (make engine)"; exit 1; }
for tool in fio jq; do
	command -v "$tool" >/dev/null 2>&1 || { echo "engine/tests: $tool is not installed"; exit 1; }
done

# fio's ioengine= for it, the job files' ${ERNIC_FIO_IOENGINE}.
. "$here/../../suites/lib.sh"
ioengine=$(fio_ioengine "$so")
ERNIC_FIO_IOENGINE=$ioengine
ERNIC_TEST_DIR=$(cd "$(dirname "$so")" && pwd)/engine-tests
# The file namespace's directory, the job files' ${ERNIC_NS_DIR}: a backend string's file= cannot hold a
# comma (a comma separates its keys), so under a path with one it is a directory of its own elsewhere.
case "$ERNIC_TEST_DIR" in
*,*) ERNIC_NS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ernic-engine-tests.XXXXXX") || exit 1
	trap 'rm -rf "$ERNIC_NS_DIR"' EXIT ;;
*) ERNIC_NS_DIR=$ERNIC_TEST_DIR ;;
esac
export ERNIC_FIO_IOENGINE ERNIC_TEST_DIR ERNIC_NS_DIR
rm -rf "$ERNIC_TEST_DIR"
mkdir -p "$ERNIC_TEST_DIR"
# A backend or stats file from the caller's environment would change what these jobs test.
unset ERNIC_BACKEND ERNIC_STATS
out=$ERNIC_TEST_DIR

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# fio prints "fio: pid=..., err=..." ahead of the JSON on failed jobs.
json() { sed -n '/^{/,$p' "$1"; }

# run NAME JOBFILE|-- [fio args...]: fio with JSON output in $out/NAME.json, stderr in $out/NAME.err.
run() {
	name=$1
	shift
	(cd "$out" && fio --output-format=json --output="$out/$name.json" "$@" 2>"$out/$name.err")
}

# jq_true FILE EXPR: EXPR holds on the JSON in FILE.
jq_true() {
	[ "$(json "$1" | jq -r "$2" 2>/dev/null)" = true ]
}

# --- option table
# From the engine's directory: --enghelp=ENGINE[,OPTION] would cut a path at a comma.
if (cd "$(dirname "$so")" && fio --enghelp="./$(basename "$so")") >"$out/enghelp.txt" 2>&1 &&
	grep -q '^ernic_backend ' "$out/enghelp.txt" && grep -q '^ernic_queues ' "$out/enghelp.txt" &&
	grep -q '^ernic_stats ' "$out/enghelp.txt" && grep -q '^ernic_stage_sample ' "$out/enghelp.txt" &&
	grep -q '^ernic_passthru ' "$out/enghelp.txt" && grep -q '^ernic_fixedbufs ' "$out/enghelp.txt" &&
	grep -q '^ernic_split ' "$out/enghelp.txt" && grep -q '^ernic_fua ' "$out/enghelp.txt" &&
	grep -q '^ernic_nsid ' "$out/enghelp.txt" && grep -q '^ernic_opcode ' "$out/enghelp.txt" &&
	grep -q '^ernic_size ' "$out/enghelp.txt"; then
	pass "enghelp: fio --enghelp lists the in-process options and the device mode's ernic_passthru," \
		"ernic_fixedbufs, ernic_split, ernic_fua, ernic_nsid, ernic_opcode, ernic_size"
else
	fail "enghelp: options missing from fio --enghelp=$so:"; cat "$out/enghelp.txt"
fi

# --- data integrity
if run verify-ram "$here/verify-ram.fio" &&
	jq_true "$out/verify-ram.json" '.jobs[0].error == 0 and .jobs[0].read.io_bytes == 67108864 and .jobs[0].write.io_bytes == 67108864'; then
	pass "verify-ram: 64 MiB of 4k..512k random writes read back with matching crc32c (RAM namespace)"
else
	fail "verify-ram: crc32c verify on the RAM backend"; cat "$out/verify-ram.err"
fi

if run verify-file "$here/verify-file.fio" &&
	jq_true "$out/verify-file.json" '.jobs[0].error == 0 and .jobs[0].read.io_bytes == 67108864'; then
	pass "verify-file: 64 MiB written and verified with crc32c on a file namespace"
else
	fail "verify-file: crc32c verify on the file backend"; cat "$out/verify-file.err"
fi

# A new target over the same file: the verify pass alone must find the data.
if run verify-file-again "$here/verify-file.fio" --verify_only=1 &&
	jq_true "$out/verify-file-again.json" '.jobs[0].error == 0 and .jobs[0].read.io_bytes == 67108864'; then
	pass "verify-file-persist: a second target on the same file verifies the first run's data"
else
	fail "verify-file-persist: data did not survive in the backing file"; cat "$out/verify-file-again.err"
fi

if run stonewall-ram "$here/stonewall-ram.fio" &&
	jq_true "$out/stonewall-ram.json" '.jobs[0].error == 0 and .jobs[1].error == 0 and .jobs[1].read.io_bytes == 4194304'; then
	pass "stonewall-ram: a group after a stonewall verifies what the first group wrote to the RAM namespace"
else
	fail "stonewall-ram: the RAM namespace did not outlive its group:"; cat "$out/stonewall-ram.err"
fi

if run shared-qpair "$here/shared-qpair.fio" &&
	jq_true "$out/shared-qpair.json" '.jobs[0].error == 0 and .jobs[0].read.io_bytes == 67108864'; then
	pass "shared-qpair: 4 jobs on 2 qpairs (2 threads per qpair) write and verify 4 x 16 MiB"
else
	fail "shared-qpair: jobs sharing a qpair"; cat "$out/shared-qpair.err"
fi

# --- splitting at MDTS
if run split-1m "$here/split-1m.fio" &&
	[ "$(jq -r '.capsules' "$out/split-1m.stats.json" 2>/dev/null)" = 8 ] &&
	[ "$(jq -r '.split_ios' "$out/split-1m.stats.json" 2>/dev/null)" = 1 ] &&
	[ "$(jq -r '.ios' "$out/split-1m.stats.json" 2>/dev/null)" = 1 ] &&
	[ "$(jq -r '.target.io_cmds.read' "$out/split-1m.stats.json" 2>/dev/null)" = 8 ]; then
	pass "split-1m: one 1 MiB read went out as exactly 8 capsules of 128 KiB and the controller ran 8 Reads (ernic_stats)"
else
	fail "split-1m: 1 MiB read not counted as 8 capsules:"; cat "$out/split-1m.stats.json" "$out/split-1m.err" 2>/dev/null
fi

# I/O buffers on a page (fio's memory debug lines say where each io_u's buffer is): off one, a 1 MiB
# passthrough spans one page more than the kernel maps into a bio, and fails with EINVAL (see the engine's flags).
if (cd "$out" && fio --name=aligned --ioengine="$ioengine" --thread=1 --filename=ernic0 --size=64M --rw=read \
	--bs=1m --iodepth=4 --number_ios=4 --debug=mem >"$out/aligned.out" 2>&1) &&
	grep -o 'io_u 0x[0-9a-f]*, mem 0x[0-9a-f]*' "$out/aligned.out" | sed 's/.* //' >"$out/aligned.bufs" &&
	n=$(grep -c . "$out/aligned.bufs") && [ "$n" -ge 4 ] && ! grep -qv '000$' "$out/aligned.bufs"; then
	pass "aligned: each of the $n I/O buffers starts on a page"
else
	fail "aligned: I/O buffers off a page boundary (or the job failed):"
	cat "$out/aligned.bufs" 2>/dev/null; grep -i err "$out/aligned.out" 2>/dev/null | head -5
fi

# Without ernic_stats= the engine writes to $ERNIC_STATS (how suites/run keeps every case's first failure);
# ernic_stats= in the job wins over it.
if ERNIC_STATS="$out/env.stats.json" run stats-env --name=stats-env --ioengine="$ioengine" --thread=1 \
	--filename=ernic0 --size=64M --rw=read --bs=4k --number_ios=4 &&
	[ "$(jq -r '.ios' "$out/env.stats.json" 2>/dev/null)" = 4 ] &&
	ERNIC_STATS="$out/env-unused.stats.json" run stats-option --name=stats-option --ioengine="$ioengine" \
		--thread=1 --ernic_stats="$out/option.stats.json" --filename=ernic0 --size=64M --rw=read --bs=4k \
		--number_ios=2 &&
	[ "$(jq -r '.ios' "$out/option.stats.json" 2>/dev/null)" = 2 ] && [ ! -e "$out/env-unused.stats.json" ]; then
	pass "stats-env: \$ERNIC_STATS receives the stats of a job without ernic_stats=, and ernic_stats= wins over it"
else
	fail "stats-env: the stats file default or its override:"; cat "$out/stats-env.err" "$out/stats-option.err"
fi

# The engine splits by the MDTS the controller reports in Identify, not by a built-in one.
if run split-mdts3 --name=split-mdts3 --ioengine="$ioengine" --ernic_backend=nvmeof:size=64M,bs=4096,mdts=3 \
	--ernic_stats="$out/split-mdts3.stats.json" --thread=1 --filename=ernic0 --size=64M --rw=read --bs=1M \
	--number_ios=1 &&
	[ "$(jq -r '.mdts_bytes' "$out/split-mdts3.stats.json" 2>/dev/null)" = 32768 ] &&
	[ "$(jq -r '.capsules' "$out/split-mdts3.stats.json" 2>/dev/null)" = 32 ] &&
	[ "$(jq -r '.target.io_cmds.read' "$out/split-mdts3.stats.json" 2>/dev/null)" = 32 ]; then
	pass "split-mdts3: with mdts=3 one 1 MiB read went out as exactly 32 capsules of 32 KiB"
else
	fail "split-mdts3: 1 MiB read at mdts=3 not 32 capsules:"
	cat "$out/split-mdts3.stats.json" "$out/split-mdts3.err" 2>/dev/null
fi

# --- per-stage latency sampling
if run stages --name=stages --ioengine="$ioengine" --ernic_backend=nvmeof:size=64M,bs=4096 \
	--ernic_stage_sample=1 --ernic_stats="$out/stages.stats.json" --thread=1 --filename=ernic0 --size=64M \
	--rw=randread --bs=4k --iodepth=4 --number_ios=400 &&
	[ "$(jq -r '.stages | .sample_every == 1 and .samples == 400 and .end_to_end_us > 0 and
		(.host_driver_us + .transport_to_target_us + .target_driver_us + .storage_us + .transport_to_host_us
		 - .end_to_end_us | fabs) < 0.01' "$out/stages.stats.json" 2>/dev/null)" = true ]; then
	pass "stages: ernic_stage_sample=1 stamps all 400 reads, and the five stage means in ernic_stats add up to end to end"
else
	fail "stages: expected 400 samples whose stages add up:"; cat "$out/stages.stats.json" "$out/stages.err" 2>/dev/null
fi

if [ "$(jq -r 'has("stages")' "$out/split-1m.stats.json" 2>/dev/null)" = false ]; then
	pass "stages-off: without ernic_stage_sample the stats JSON has no stages object"
else
	fail "stages-off: a run without ernic_stage_sample wrote stages:"; cat "$out/split-1m.stats.json"
fi

# --- trim and flush
if run trim-flush "$here/trim-flush.fio" &&
	jq_true "$out/trim-flush.json" '.jobs[0].error == 0 and .jobs[0].sync.total_ios >= 16 and .jobs[1].error == 0 and .jobs[1].trim.total_ios == 128' &&
	[ "$(jq -r '.target.io_cmds.dsm == 128 and .target.io_cmds.flush >= 16' "$out/trim-flush.stats.json" 2>/dev/null)" = true ]; then
	pass "trim-flush: 128 trims reached the controller as DSM and fio's fsyncs as Flush, all without error"
else
	fail "trim-flush: trim or flush failed"; cat "$out/trim-flush.err"
fi

# --- errors
if ! run misaligned "$here/misaligned.fio" && jq_true "$out/misaligned.json" '.jobs[0].error == 22' &&
	[ "$(jq -r '.capsules' "$out/misaligned.stats.json" 2>/dev/null)" = 0 ]; then
	pass "misaligned: a 512-byte read on a 4096-byte-block namespace fails with EINVAL (errno 22), no capsule sent"
else
	fail "misaligned: expected fio error 22:"; json "$out/misaligned.json" | jq '.jobs[0].error'
fi

if ! run misaligned-ctrlr --name=misaligned-ctrlr --ioengine="$ioengine" --ernic_host_checks=0 \
	--ernic_backend=nvmeof:size=64M,bs=4096 --ernic_stats="$out/misaligned-ctrlr.stats.json" --thread=1 \
	--filename=ernic0 --size=64M --rw=read --bs=512 --number_ios=1 &&
	jq_true "$out/misaligned-ctrlr.json" '.jobs[0].error == 22' &&
	[ "$(jq -r '.target.errors.SGL_INVALID_DATA_LEN' "$out/misaligned-ctrlr.stats.json" 2>/dev/null)" = 1 ]; then
	pass "misaligned-ctrlr: sent anyway, the controller answers Data SGL Length Invalid, seen as EINVAL"
else
	fail "misaligned-ctrlr: the controller accepted a 512-byte transfer for a 4096-byte block"
fi

# An offset off the block size cannot be encoded in an SLBA: with host checks off it still fails, and the
# bytes the rounded-down LBA holds stay as they were (the pattern 0xAA must not land at byte 0).
img="$ERNIC_NS_DIR/offset.img"
rm -f "$img"
if ! run misaligned-offset --name=misaligned-offset --ioengine="$ioengine" --ernic_host_checks=0 \
	--ernic_backend="nvmeof:size=1M,bs=4096,file=$img" --thread=1 --filename=ernic0 --rw=write --bs=4k \
	--offset=512 --size=4k --buffer_pattern=0xAA &&
	jq_true "$out/misaligned-offset.json" '.jobs[0].error == 22' &&
	[ "$(od -An -tx1 -N4 "$img" | tr -d ' ')" = 00000000 ]; then
	pass "misaligned-offset: with ernic_host_checks=0 a write at byte 512 of 4096-byte blocks fails with EINVAL and writes nothing"
else
	fail "misaligned-offset: expected EINVAL and block 0 untouched:"; od -An -tx1 -N8 "$img"; cat "$out/misaligned-offset.err"
fi

# A command without data has no SGL length for the controller to hold NLB against: with host checks off a
# 512-byte trim or Write Zeroes still fails with EINVAL, and the rest of block 0 keeps its 0xAA.
img="$ERNIC_NS_DIR/nodata.img"
aa_block() { [ "$(od -An -tx1 -v -N4096 "$img" | tr -d ' \n' | tr -d a | wc -c)" = 0 ] && [ "$(stat -c %s "$img")" -ge 4096 ]; }
nodata_ok=true
for args in "--rw=trim" "--rw=write --ernic_opcode=0x08"; do
	rm -f "$img"
	name=nodata-${args##*=}
	# shellcheck disable=SC2086 # $args is two fio options
	if ! run "$name-fill" --name=fill --ioengine="$ioengine" --ernic_backend="nvmeof:size=1M,bs=4096,file=$img" \
		--thread=1 --filename=ernic0 --rw=write --bs=4k --size=4k --buffer_pattern=0xAA || ! aa_block ||
		run "$name" --name="$name" --ioengine="$ioengine" --ernic_host_checks=0 \
			--ernic_backend="nvmeof:size=1M,bs=4096,file=$img" --thread=1 --filename=ernic0 $args --bs=512 \
			--size=512 || ! jq_true "$out/$name.json" '.jobs[0].error == 22' || ! aa_block; then
		nodata_ok=false
		echo "  $args:"; od -An -tx1 -N16 -j 512 "$img"; cat "$out/$name.err"
	fi
done
if $nodata_ok; then
	pass "misaligned-nodata: with ernic_host_checks=0 a 512-byte trim and Write Zeroes fail with EINVAL and leave the rest of the 4096-byte block as it was"
else
	fail "misaligned-nodata: a sub-block command without data was sent (above)"
fi

# What the engine cannot do is refused at init with one line, not left to misroute I/O or hang.
if ! run offload --name=offload --ioengine="$ioengine" --thread=1 --filename=ernic0 --size=4M --rw=randread \
	--bs=4k --iodepth=4 --io_submit_mode=offload &&
	grep -qx 'ernic: io_submit_mode=offload: not supported (use inline)' "$out/offload.err"; then
	pass "offload: io_submit_mode=offload is refused in one line (its workers' completions went to another ring, a hang)"
else
	fail "offload: got:"; cat "$out/offload.err"
fi
if ! run nrfiles --name=nrfiles --ioengine="$ioengine" --thread=1 --filename=a:b --size=4M --rw=randwrite \
	--bs=64k && grep -qx 'ernic: nrfiles=2: one namespace per job; give each namespace a job of its own' "$out/nrfiles.err"; then
	pass "nrfiles: filename=a:b is refused in one line (both files were the same LBAs)"
else
	fail "nrfiles: got:"; cat "$out/nrfiles.err"
fi
# The stats file is JSON whatever the backend string holds: a file= path with a quote in it.
qdir="$ERNIC_NS_DIR/q\"d"
mkdir -p "$qdir"
if run stats-quote --name=stats-quote --ioengine="$ioengine" --thread=1 --filename=ernic0 \
	--ernic_backend="nvmeof:size=1M,bs=4096,file=$qdir/ns.img" --ernic_stats="$out/quote.stats.json" \
	--rw=read --bs=4k --number_ios=2 &&
	[ "$(jq -r '.backend' "$out/quote.stats.json" 2>/dev/null)" = "nvmeof:size=1M,bs=4096,file=$qdir/ns.img" ]; then
	pass "stats-quote: a backend path with a quote is written as a JSON string that jq reads back"
else
	fail "stats-quote: the stats file is not JSON:"; cat "$out/quote.stats.json" "$out/stats-quote.err"
fi

budget='Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a table of 2048 (got '"'16'"')'
if ! run budget --name=budget --ioengine="$ioengine" --ernic_backend=nvmeof:size=64M,bs=4096,queues=16 \
	--thread=1 --filename=ernic0 --size=64M --rw=read --bs=4k &&
	grep -qxF "$budget" "$out/budget.err"; then
	pass "budget: queues=16 fails at init with the MR budget text"
else
	fail "budget: expected '$budget' on stderr, got:"; cat "$out/budget.err"
fi

if ! run no-thread --name=no-thread --ioengine="$ioengine" --filename=ernic0 --size=64M --rw=read --bs=4k &&
	grep -q 'thread=1 is required' "$out/no-thread.err"; then
	pass "no-thread: without thread=1 the engine refuses to start and says thread=1 is required"
else
	fail "no-thread: expected a 'thread=1 is required' failure, got:"; cat "$out/no-thread.err"
fi

# --- NVMe status, exactly, in ernic_stats
# status ARGS...: one 4 KiB read or write in process with ARGS, stats in $out/status.stats.json
status() {
	rm -f "$out/status.stats.json"
	run status --name=status --ioengine="$ioengine" --ernic_backend=nvmeof:size=64M,bs=4096 --thread=1 \
		--filename=ernic0 --ernic_size=128M --size=4k --bs=4k --ernic_stats="$out/status.stats.json" "$@"
}
first() { jq -r '.nvme_status.first | "\(.status) \(.dnr) \(.errno) \(.opc)"' "$out/status.stats.json" 2>/dev/null; }

if ! status --rw=read --offset=64M && [ "$(first)" = "0x0080 true 22 0x02" ] &&
	[ "$(jq -r '.nvme_status.failed["0x0080"]' "$out/status.stats.json")" = 1 ]; then
	pass "status-lba-range: a read past the last LBA is reported as status 0x0080 with DNR (and EINVAL to fio)"
else
	fail "status-lba-range: expected first failure '0x0080 true 22 0x02', got '$(first)'"
fi
if ! status --rw=read --ernic_nsid=7 && [ "$(first)" = "0x000b true 6 0x02" ]; then
	pass "status-invalid-ns: ernic_nsid=7 gets Invalid Namespace 0x000b with DNR (ENXIO to fio)"
else
	fail "status-invalid-ns: expected '0x000b true 6 0x02', got '$(first)'"
fi
if ! status --rw=read --ernic_opcode=0x7e && [ "$(first)" = "0x0001 true 5 0x7e" ]; then
	pass "status-opcode: ernic_opcode=0x7e gets Invalid Opcode 0x0001"
else
	fail "status-opcode: expected '0x0001 true 5 0x7e', got '$(first)'"
fi
if ! status --rw=read --bs=132k --size=132k --ernic_split=0 && [ "$(first)" = "0x0002 true 22 0x02" ] &&
	status --rw=read --bs=132k --size=132k && [ "$(jq -r '.capsules' "$out/status.stats.json")" = 2 ] &&
	[ "$(first)" = "null null null null" ]; then
	pass "status-mdts: 132 KiB unsplit (ernic_split=0) is Invalid Field 0x0002; split, it is 2 commands without error"
else
	fail "status-mdts: ernic_split=0 over MDTS: got '$(first)'"
fi
# NLB is 16 bits, 0's based: unsplit, a Write Zeroes (no SGL length to give a wrap away) of 65537+ blocks is
# refused before sending; 65536 blocks, the most one command can name, is one command.
nlb() {
	rm -f "$out/nlb.stats.json"
	run nlb --name=nlb --ioengine="$ioengine" --ernic_backend=nvmeof:size=64M,bs=512 --thread=1 --filename=ernic0 \
		--ernic_split=0 --ernic_opcode=0x08 --rw=write --ernic_stats="$out/nlb.stats.json" "$@"
}
if ! nlb --bs=33M --size=33M && jq_true "$out/nlb.json" '.jobs[0].error == 22' &&
	[ "$(jq -r '.capsules' "$out/nlb.stats.json" 2>/dev/null)" = 0 ] &&
	nlb --bs=32M --size=32M && [ "$(jq -r '.capsules' "$out/nlb.stats.json" 2>/dev/null)" = 1 ] &&
	[ "$(jq -r '.target.io_cmds.write_zeroes' "$out/nlb.stats.json" 2>/dev/null)" = 1 ]; then
	pass "nlb-max: with ernic_split=0, 33 MiB of 512-byte blocks fails with EINVAL unsent; 32 MiB (65536 blocks) is one Write Zeroes"
else
	fail "nlb-max: a command over 65536 blocks was sent, or one of 65536 was not:"
	cat "$out/nlb.stats.json" "$out/nlb.err" 2>/dev/null
fi
if status --rw=write --ernic_fua=1 && status --rw=write --ernic_opcode=0x08 &&
	[ "$(jq -r '.target.io_cmds.write_zeroes' "$out/status.stats.json")" = 1 ]; then
	pass "fua-write-zeroes: a FUA write and ernic_opcode=0x08 (Write Zeroes, no data) both succeed"
else
	fail "fua-write-zeroes: FUA write or Write Zeroes failed:"; cat "$out/status.stats.json" "$out/status.err"
fi
# Capacity Exceeded is ENOSPC, as Linux maps it (BLK_STS_NOSPC): fio's fill_device=1 stops there, without error.
if run fill --name=fill --ioengine="$ioengine" --ernic_backend=nvmeof:size=16M,bs=4096,fault=enospc@100 \
	--ernic_stats="$out/fill.stats.json" --thread=1 --filename=ernic0 --rw=write --bs=64k --fill_device=1 &&
	jq_true "$out/fill.json" '.jobs[0].error == 0 and .jobs[0].write.io_bytes > 0' &&
	[ "$(jq -r '.nvme_status.first | "\(.status) \(.errno)"' "$out/fill.stats.json" 2>/dev/null)" = "0x0081 28" ]; then
	pass "fill-enospc: Capacity Exceeded 0x0081 reaches fio as ENOSPC, and fill_device=1 ends there with error 0"
else
	fail "fill-enospc: expected error 0 and first failure '0x0081 28':"
	json "$out/fill.json" | jq -c '.jobs[0].error'; cat "$out/fill.stats.json" "$out/fill.err" 2>/dev/null
fi

# --- bad input: one line naming the option and the value
if ! status --rw=read --ernic_opcode=zz && grep -qx 'ernic: ernic_opcode=zz: not an opcode (0..255, decimal or 0x hex)' "$out/status.err"; then
	pass "bad-opcode: ernic_opcode=zz is refused with one line naming it"
else
	fail "bad-opcode: got:"; cat "$out/status.err"
fi
if ! status --rw=read --ernic_passthru=bogus && grep -q 'ernic_passthru=bogus' "$out/status.err"; then
	pass "bad-passthru: ernic_passthru=bogus is refused naming the option and value"
else
	fail "bad-passthru: got:"; cat "$out/status.err"
fi
# The stats file is written at exit; a path that cannot be created fails the job at init, not after the run.
if ! run stats-nodir --name=stats-nodir --ioengine="$ioengine" --thread=1 --filename=ernic0 --size=4M --rw=read \
	--bs=4k --ernic_stats="$out/nonexistent/dir/s.json" &&
	[ "$(grep -c '^ernic:' "$out/stats-nodir.err")" = 1 ] &&
	grep -qxF "ernic: ernic_stats=$out/nonexistent/dir/s.json: cannot create: No such file or directory" \
		"$out/stats-nodir.err"; then
	pass "stats-nodir: ernic_stats= in a directory that does not exist fails the job at init in one line"
else
	fail "stats-nodir: got:"; cat "$out/stats-nodir.err"
fi
# Device-mode options in process: the job runs, and one line says they are ignored.
if run devopts --name=devopts --ioengine="$ioengine" --thread=1 --filename=ernic0 --size=4M --rw=read --bs=4k \
	--number_ios=4 --ernic_passthru=ioctl --ernic_fixedbufs=1 && jq_true "$out/devopts.json" '.jobs[0].error == 0' &&
	cat "$out/devopts.err" "$out/devopts.json" | grep -qxF \
		'ernic: devopts: ernic_passthru=ioctl ernic_fixedbufs=1: device mode only (filename=/dev/ngXnY); ignored in process'; then
	pass "devopts: ernic_passthru=ioctl and ernic_fixedbufs=1 in process run the job and say in one line they are ignored"
else
	fail "devopts: got:"; cat "$out/devopts.err"
fi

# Each bad number or size fails the job with one line naming the option and its value. fio's own parser
# read ernic_queues=-1 as a range, said so, and ran with the default: the engine reads these itself.
bad_numbers_ok=true
for kv in ernic_nsid=4294967296 ernic_stage_sample=4294967296 ernic_queues=-1 ernic_queues=65 ernic_queues=1-2 \
	ernic_nsid=-1 ernic_size=-1 ernic_size=lots ernic_size=12abc ernic_size=4kk ernic_size=1G5 \
	ernic_size=20000000T ernic_fua=-1 ernic_split=1-0 ernic_host_checks=2; do
	if status --rw=read "--$kv" || ! grep -q "^ernic: $kv: not " "$out/status.err"; then
		bad_numbers_ok=false
		echo "  $kv:"; cat "$out/status.err"
	fi
done
if $bad_numbers_ok; then
	pass "bad-numbers: out of range, negative, range, trailing junk, doubled or overflowing suffix and non-0/1 values each fail the job naming the option and value"
else
	fail "bad-numbers: a value was taken or not named (above)"
fi

# --- device mode, as far as a machine without NVMe reaches
if ! run nodev --name=nodev --ioengine="$ioengine" --filename=/dev/nvme9n9 --rw=read --bs=4k --size=4k &&
	grep -qx 'ernic: filename=/dev/nvme9n9: cannot open /dev/ng9n9: No such file or directory' "$out/nodev.err" &&
	! grep -q 'thread=1' "$out/nodev.err"; then
	pass "nodev: filename=/dev/nvme9n9 is taken as its ng twin /dev/ng9n9 (without thread=1) and its absence named"
else
	fail "nodev: expected the /dev/ng9n9 open error, got:"; cat "$out/nodev.err"
fi
if ! run partition --name=partition --ioengine="$ioengine" --filename=/dev/nvme0n1p1 --rw=read --bs=4k --size=4k &&
	grep -qx 'ernic: filename=/dev/nvme0n1p1: not an NVMe namespace (/dev/ngXnY or /dev/nvmeXnY)' "$out/partition.err"; then
	pass "partition: a /dev path that is no namespace is refused with one line"
else
	fail "partition: got:"; cat "$out/partition.err"
fi

if [ "$failures" -ne 0 ]; then
	echo "engine tests: $failures failed"
	exit 1
fi
echo "engine tests: all passed"
