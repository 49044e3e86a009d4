# suites/lad/csv.sh - results/lad.csv for suites/lad/report (in-process) and suites/lad/fabric-report
# (/dev/nvme over a fabric): its header is suites/csv-columns' "lad" line. Sourced by bash after suites/lib.sh.
#
# target and transport came last: a file with the older seven-column header gets them appended, its rows
# filled with the only target and transport it could hold (ernic, inproc), so every row stays readable.

LAD_CSV_HEADER=$(csv_columns lad) || return 2
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
