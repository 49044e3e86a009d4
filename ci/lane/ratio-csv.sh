# shellcheck shell=bash
# ci/lane/ratio-csv.sh - results/lane-ratio.csv for ci/lane/run.sh: its header is suites/csv-columns'
# "lane-ratio" line. Sourced by bash after suites/lib.sh.
#
# The conditions a ratio was measured under came last, a few columns at a time. A file under any older header
# goes through every later step, oldest first, so each of its rows gets every column: empty where nobody
# recorded it, and where only one value was possible then, that value.

# lane_ratio_csv_ready FILE: FILE exists with the lane-ratio header, its older rows widened; or say why not
# (exit status 1).
lane_ratio_csv_ready() {
	local h=timestamp_utc,commit,case,ernicd_iops,nvmet_iops,ratio
	csv_upgrade "$1" lane-ratio "$h" ,,,, || return 1
	h=$h,rounds,ernicd_mdts,nvmet_mdts,ernicd_cpus
	csv_upgrade "$1" lane-ratio "$h" ,, || return 1
	h=$h,paired_ratio,round_ratios
	# Every row before the transport column was of NVMe/TCP.
	csv_upgrade "$1" lane-ratio "$h" ',"tcp"' || return 1
	h=$h,transport
	# Every row before the guest_cpu column was measured on QEMU's max.
	csv_upgrade "$1" lane-ratio "$h" ',"max"' || return 1
	h=$h,guest_cpu
	# Every row before the sqflow column was measured over plain connects, SQ flow control on.
	csv_upgrade "$1" lane-ratio "$h" ',"on"' || return 1
	csv_ready "$1" lane-ratio
}
