# suites/lad/csv.sh - results/lad.csv's columns, in one place for suites/lad/report (in-process) and
# suites/lad/fabric-report (/dev/nvme over a fabric). Sourced by bash.
#
# target and transport came last: a file with the older seven-column header gets them appended, its rows
# filled with the only target and transport it could hold (ernic, inproc), so every row stays readable.

LAD_CSV_HEADER="timestamp_utc,commit,host,stage,base_us,load_us,lad,target,transport"
LAD_CSV_HEADER_V1="timestamp_utc,commit,host,stage,base_us,load_us,lad"

# lad_csv_ready FILE: FILE exists with LAD_CSV_HEADER, or say why not (exit status 1).
lad_csv_ready() {
	local f=$1 head
	mkdir -p "$(dirname "$f")" || return 1
	if [ ! -s "$f" ]; then
		echo "$LAD_CSV_HEADER" >"$f"
		return
	fi
	head=$(head -n 1 "$f")
	[ "$head" != "$LAD_CSV_HEADER" ] || return 0
	if [ "$head" = "$LAD_CSV_HEADER_V1" ]; then
		awk -v h="$LAD_CSV_HEADER" 'NR == 1 { print h; next } { print $0 ",\"ernic\",\"inproc\"" }' "$f" >"$f.tmp" &&
			mv "$f.tmp" "$f"
		return
	fi
	echo "$f has another header; move it away to start a new file" >&2
	return 1
}

# lad_commit REPO: the commit column (ERNIC_COMMIT, else the checkout's short id, -dirty if modified).
lad_commit() {
	local c
	if [ -n "${ERNIC_COMMIT:-}" ]; then
		echo "$ERNIC_COMMIT"
		return
	fi
	c=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || c=unknown
	if [ "$c" != unknown ] && ! git -C "$1" diff --quiet HEAD -- 2>/dev/null; then
		c="$c-dirty"
	fi
	echo "$c"
}
