# shellcheck shell=bash
# ci/console.sh - the QEMU guest lanes' console (ci/lane/run.sh, ci/blktests/run.sh). Source it from bash.

# follow_console RAW CMD...: run CMD (a QEMU with -serial file:RAW) in the background and print RAW as the
# guest writes it, CRs stripped, a line at a time, until CMD has gone (tail then reads to the end once more);
# CMD's own output goes to the same standard output, as it is. Returns CMD's exit status. The console goes to a file, which QEMU never
# waits on: with -serial stdio a slow reader of this output (a CI log) would hold up every console write of
# the guest, its watchdog's too. CMD runs in the background, where a ^C would not reach it: a ^C or TERM is
# passed on to it and to the follower.
#
# With FOLLOW_SILENCE_S set, CMD is sent TERM once RAW has not grown for that many seconds, and the status is 143
# whatever CMD's (QEMU exits 0 on TERM): a guest whose kernel hung whole (its own watchdog with it) prints nothing
# more, and waiting out QEMU's time limit says no more.
follow_console() {
	local raw=$1 rc watch=""
	shift
	: >"$raw"
	rm -f "$raw.silent"
	"$@" </dev/null 2>&1 &
	FOLLOW_CMD_PID=$!
	trap 'kill -TERM "$FOLLOW_CMD_PID" "${FOLLOW_TAIL_PID:-}" 2>/dev/null || true' EXIT
	trap 'exit 130' INT TERM
	tail -s 0.5 -n +1 -F --pid="$FOLLOW_CMD_PID" "$raw" 2>/dev/null | stdbuf -oL tr -d '\r' &
	FOLLOW_TAIL_PID=$!
	if [ "${FOLLOW_SILENCE_S:-0}" -gt 0 ]; then
		(
			size=-1 quiet=0
			while sleep 5 && kill -0 "$FOLLOW_CMD_PID" 2>/dev/null; do
				now=$(stat -c %s "$raw" 2>/dev/null || echo 0)
				if [ "$now" = "$size" ]; then quiet=$((quiet + 5)); else quiet=0 size=$now; fi
				if [ "$quiet" -ge "$FOLLOW_SILENCE_S" ]; then
					echo "console: nothing from the guest for $quiet s: stopping it"
					: >"$raw.silent"
					kill -TERM "$FOLLOW_CMD_PID" 2>/dev/null
					break
				fi
			done
		) &
		watch=$!
	fi
	wait "$FOLLOW_CMD_PID"
	rc=$?
	[ -z "$watch" ] || { kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null; } || true
	if [ -e "$raw.silent" ]; then
		rm -f "$raw.silent"
		rc=143
	fi
	wait "$FOLLOW_TAIL_PID"
	trap - EXIT INT TERM
	return "$rc"
}
