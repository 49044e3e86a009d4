# shellcheck shell=bash disable=SC2034 # LAD_*: read by the scripts that source it
# suites/lad/csv.sh - results/lad.csv, and the smallest baseline that has a LAD, for suites/lad/report
# (in-process) and suites/lad/fabric-report (/dev/nvme over a fabric): the CSV's header is suites/csv-columns'
# "lad" line. Sourced by bash after suites/lib.sh.
#
# target and transport came last: a file with the older seven-column header gets them appended, its rows
# filled with the only target and transport it could hold (ernic, inproc), so every row stays readable.

LAD_CSV_HEADER=$(csv_columns lad) || return 2
# A baseline stage under this many microseconds is too small for a ratio: its LAD is "n/a" in the table and
# empty in the CSV (suites/lad/table.awk applies it).
LAD_MIN_BASE_US=0.5
LAD_CSV_HEADER_V1="timestamp_utc,commit,host,stage,base_us,load_us,lad"

# lad_csv_ready FILE: FILE exists with LAD_CSV_HEADER, or say why not (exit status 1).
lad_csv_ready() {
	mkdir -p "$(dirname "$1")" || return 1
	csv_upgrade "$1" lad "$LAD_CSV_HEADER_V1" ',"ernic","inproc"' && csv_ready "$1" lad
}
