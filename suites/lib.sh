# shellcheck shell=bash disable=SC2034 # CSV_AWK, JOB_AWK: read by the scripts that source it
# suites/lib.sh - what every script that writes or checks the results CSVs shares.
#
# Source it from bash:  . "$REPO/suites/lib.sh"
# It sets ERNIC_ROOT (the checkout), CSV_AWK (suites/csv.awk, the awk
# helpers: csvsplit, commas, hb) and JOB_AWK (suites/job.awk: a job file's
# comment tags and the expectation that applies) and defines fio_ioengine, ernic_commit, csv_columns,
# csv_ready and csv_upgrade. Functions print one line naming the file and return 1 on error;
# the caller decides whether that ends the script.

# Every script that sources this reads and writes numbers with a decimal point whatever the caller's locale
# (mawk under a comma-decimal LC_NUMERIC reads "1.4" as 1 and prints 1,4): the C locale, for them and the
# tools they run.
export LC_ALL=C

ERNIC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CSV_AWK=$(cat "$ERNIC_ROOT/suites/csv.awk")
JOB_AWK=$(cat "$ERNIC_ROOT/suites/job.awk")

# fio_ioengine PATH: fio's ioengine= value that loads the engine at PATH. fio (3.33, parse.c opt_len())
# matches the "external:" prefix only up to the value's first comma, so a path with a comma would not
# load that way; fio dlopens a bare path just the same, and that is what such a path gets.
fio_ioengine() {
	case "$1" in
	*,*) printf '%s\n' "$1" ;;
	*) printf 'external:%s\n' "$1" ;;
	esac
}

# ernic_commit: the commit column as results/README.md defines it. ERNIC_COMMIT
# names it where there is no git checkout (a lane's guest); otherwise the short
# HEAD, with -dirty when tracked files outside results/ differ from it. The rows
# themselves go to results/: a run that appends to them (the nightly's first
# step, before the rest) measured the commit's code all the same.
ernic_commit() {
	local c
	if [ -n "${ERNIC_COMMIT:-}" ]; then
		echo "$ERNIC_COMMIT"
		return
	fi
	c=$(git -C "$ERNIC_ROOT" rev-parse --short=12 HEAD 2>/dev/null) || c=unknown
	if [ "$c" != unknown ] && ! git -C "$ERNIC_ROOT" diff --quiet HEAD -- . ':(exclude)results' 2>/dev/null; then
		c="$c-dirty"
	fi
	echo "$c"
}

# csv_columns NAME: the header line of CSV kind NAME (suites/csv-columns).
csv_columns() {
	local h
	h=$(awk -v n="$1" '$1 == n { print $2; exit }' "$ERNIC_ROOT/suites/csv-columns")
	[ -n "$h" ] || {
		echo "suites/lib.sh: no CSV kind '$1' in suites/csv-columns" >&2
		return 1
	}
	echo "$h"
}

# csv_ready FILE NAME: FILE starts with the header of kind NAME (written if FILE
# is missing or empty); never append under another header.
csv_ready() {
	local h
	h=$(csv_columns "$2") || return 1
	if [ ! -s "$1" ]; then
		echo "$h" >"$1"
	elif [ "$(head -n 1 "$1")" != "$h" ]; then
		echo "$1 has another header than suites/csv-columns gives for '$2'; move it away to start a new file" >&2
		return 1
	fi
}

# csv_upgrade FILE NAME OLD_HEADER FILL: one step of a header's history. A FILE
# still under OLD_HEADER, a header kind NAME had before columns came at its end,
# gets as many more of NAME's columns as FILL has fields (FILL: those fields,
# each after a comma) and FILL appended to every row; any other FILE is left as
# it is, for the next step or csv_ready to judge. Steps called oldest first take
# a file of any age to NAME's header with every row as wide as it.
csv_upgrade() {
	local h
	[ -s "$1" ] && [ "$(head -n 1 "$1")" = "$3" ] || return 0
	h=$(csv_columns "$2") || return 1
	h=$(awk -v h="$h" -v old="$3" -v fill="$4" 'BEGIN {
		n = split(h, col, ",")
		k = split(old, o, ",")
		want = k + gsub(/,/, ",", fill)
		if (want > n) exit 1
		out = col[1]
		for (i = 2; i <= k; i++) out = out "," col[i]
		if (out != old) exit 1
		for (; i <= want; i++) out = out "," col[i]
		print out
	}') || {
		echo "$1: '$3' and '$4' are not the start of '$2''s header and columns after it" >&2
		return 1
	}
	awk -v h="$h" -v fill="$4" 'NR == 1 { print h; next } { print $0 fill }' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}
