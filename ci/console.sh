# shellcheck shell=bash
# ci/console.sh - the QEMU guest lanes' console (ci/lane/run.sh, ci/blktests/run.sh). Source it from bash.

# follow_console RAW CMD...: run CMD (a QEMU with -serial file:RAW) in the background and print RAW as the
# guest writes it, CRs stripped, a line at a time, until CMD has gone (tail then reads to the end once more);
# CMD's own output goes to the same standard output, as it is. Returns CMD's exit status. The console goes to a file, which QEMU never
# waits on: with -serial stdio a slow reader of this output (a CI log) would hold up every console write of
# the guest, its watchdog's too. CMD runs in the background, where a ^C would not reach it: a ^C or TERM is
# passed on to it and to the follower.
follow_console() {
	local raw=$1 rc
	shift
	: >"$raw"
	"$@" </dev/null 2>&1 &
	FOLLOW_CMD_PID=$!
	trap 'kill -TERM "$FOLLOW_CMD_PID" "${FOLLOW_TAIL_PID:-}" 2>/dev/null || true' EXIT
	trap 'exit 130' INT TERM
	tail -s 0.5 -n +1 -F --pid="$FOLLOW_CMD_PID" "$raw" 2>/dev/null | stdbuf -oL tr -d '\r' &
	FOLLOW_TAIL_PID=$!
	wait "$FOLLOW_CMD_PID"
	rc=$?
	wait "$FOLLOW_TAIL_PID"
	trap - EXIT INT TERM
	return "$rc"
}
