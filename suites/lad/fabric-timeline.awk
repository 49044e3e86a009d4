# suites/lad/fabric-timeline.awk - the depth-1 timeline's raw pass: from fabric-collect's qd1.timeline lines
# ("SECONDS.USEC CPU TASK EVENT: FIELDS"), for each command, the first time each event occurs after the command's
# nvme_setup_cmd, as "WHERE<TAB>TASK<TAB>EVENT<TAB>US" lines, and the command's cycle (its nvme_setup_cmd to the
# next one's) as "*<TAB>*<TAB>cycle<TAB>US", and "*<TAB>*<TAB>completed<TAB>0" if the host completed it on any CPU
# (nvme_complete_rq); suites/lad/fabric-timeline-table.awk takes their medians. Needs
# tracefs.awk loaded first.
#
# One job at queue depth 1 has one command in flight at a time, so every event between two I/O commands'
# nvme_setup_cmd belongs to the first of them (or to nothing: a timer, an ACK). WHERE is "submitting" for the CPU
# the command was submitted on, "other" for any other; TASK is the task the event ran in, its digits as N
# (kworker/N:NH), "idle" for the idle task. The last command, cut off by the end of the run, is left out.

function task_class(s) {
	if (s == "<idle>" || s ~ /^swapper/)
		return "idle"
	gsub(/[0-9]+/, "N", s)
	return s
}
function flush_cmd(t) {
	if (have)
		printf "%s*\t*\tcycle\t%.1f\n%s", buf, (t - t0) / 1000, completed ? "*\t*\tcompleted\t0\n" : ""
	buf = ""
	completed = 0
	delete seen
}
{
	t = ns($1)
	ev = $4
	sub(/:$/, "", ev)
}
ev == "nvme_setup_cmd" && word("qid") != "0" {
	flush_cmd(t)
	have = 1
	t0 = t
	c0 = $2 + 0
	key = "submitting\t" task_class($3) "\tnvme_setup_cmd"
	seen[key] = 1
	buf = key "\t0.0\n"
	next
}
!have { next }
ev == "nvme_complete_rq" { completed = 1 }
{
	if (ev == "sched_waking")
		ev = "wakes " task_class(word("comm"))
	else if (ev == "sched_switch")
		ev = "switches to " task_class(word("next_comm"))
	else if (ev == "softirq_entry")
		ev = "NET_RX softirq begins"
	else if (ev == "softirq_exit")
		ev = "NET_RX softirq ends"
	else if (ev == "nvme_setup_cmd")
		ev = "nvme_setup_cmd (admin queue)"
	key = ($2 + 0 == c0 ? "submitting" : "other") "\t" task_class($3) "\t" ev
	if (!(key in seen)) {
		seen[key] = 1
		buf = buf sprintf("%s\t%.1f\n", key, (t - t0) / 1000)
	}
}
