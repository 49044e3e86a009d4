# suites/lad/csv.sh - results/lad.csv for suites/lad/report (in-process) and suites/lad/fabric-report
# (/dev/nvme over a fabric): its header is suites/csv-columns' "lad" line. Sourced by bash after suites/lib.sh.
#
# target and transport came last: a file with the older seven-column header gets them appended, its rows
# filled with the only target and transport it could hold (ernic, inproc), so every row stays readable.

LAD_CSV_HEADER=$(csv_columns lad) || return 2
LAD_CSV_HEADER_V1="timestamp_utc,commit,host,stage,base_us,load_us,lad"

# lad_csv_ready FILE: FILE exists with LAD_CSV_HEADER, or say why not (exit status 1).
lad_csv_ready() {
	mkdir -p "$(dirname "$1")" || return 1
	csv_upgrade "$1" lad "$LAD_CSV_HEADER_V1" ',"ernic","inproc"' && csv_ready "$1" lad
}
