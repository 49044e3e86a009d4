# suites/lad/fabric-timeline-table.awk - the depth-1 timeline of one target: from fabric-timeline.awk's lines,
# sorted by key and then by time (sort -t TAB -k1,3 -k4,4n), each event's median time after nvme_setup_cmd over
# the commands that had it, in time order, for the events at least half of the commands had. -v: target,
# transport, iops, lat (fio's of the timeline run), probes (the kprobe events it had), overrun, check (1: exit 1 unless
# the timeline has at least MIN_CMDS commands and nvme_complete_rq, on whichever CPU, in each).
BEGIN {
	FS = "\t"
	MIN_CMDS = 100
}
function close_key(    m) {
	if (nv == 0)
		return
	m = nv % 2 ? v[(nv + 1) / 2] : (v[nv / 2] + v[nv / 2 + 1]) / 2
	if (cur_label == "cycle") {
		ncmd = nv
		cycle = m
	} else if (cur_label == "completed") {
		ncompleted = nv
	} else {
		nrow++
		r_med[nrow] = m
		r_cnt[nrow] = nv
		r_where[nrow] = cur_where
		r_task[nrow] = cur_task
		r_label[nrow] = cur_label
	}
	nv = 0
}
{
	k = $1 "\t" $2 "\t" $3
	if (k != cur_key) {
		close_key()
		cur_key = k
		cur_where = $1
		cur_task = $2
		cur_label = $3
	}
	v[++nv] = $4 + 0
}
END {
	close_key()
	# Rows by median time (insertion sort: a few dozen rows).
	for (i = 1; i <= nrow; i++)
		ord[i] = i
	for (i = 2; i <= nrow; i++)
		for (j = i; j > 1 && r_med[ord[j - 1]] > r_med[ord[j]]; j--) {
			a = ord[j - 1]
			ord[j - 1] = ord[j]
			ord[j] = a
		}
	printf "== depth-1 timeline, %s over NVMe/%s: %d commands, one at a time; median cycle %.1f us", target,
		toupper(transport), ncmd, cycle
	printf " (fio: %s IOPS, mean %s us)\n", iops, lat
	print "  each event's first time after the command's nvme_setup_cmd, the median over the commands that had it;"
	print "  submitting: the CPU fio submitted on; events in fewer than half of the commands are left out"
	printf "  %9s %6s  %-10s %-14s %s\n", "after us", "share", "CPU", "task", "event"
	for (i = 1; i <= nrow; i++) {
		r = ord[i]
		if (ncmd == 0 || r_cnt[r] * 2 < ncmd)
			continue
		printf "  %9.1f %5d%%  %-10s %-14s %s\n", r_med[r], int(r_cnt[r] * 100 / ncmd), r_where[r], r_task[r],
			r_label[r]
	}
	printf "  (kprobe events: %s)\n", probes == "" ? "none: this kernel has no kprobe events" : probes
	if (overrun + 0 > 0)
		printf "  (the trace buffer overran: %d events lost; the shares above count only what was kept)\n", overrun
	if (check && (ncmd < MIN_CMDS || ncompleted < ncmd)) {
		printf "  INCOMPLETE: %d commands (at least %d needed), %d of them with nvme_complete_rq\n", ncmd,
			MIN_CMDS, ncompleted
		exit 1
	}
}
