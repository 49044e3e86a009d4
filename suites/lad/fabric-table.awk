# suites/lad/fabric-table.awk - seeds/002's table and seeds/004's split for one target, from the lines
# "base|load cmd ROUND NS..." and "base|load summary target_records=N joined=M rounds=R" of fabric-join.awk. Needs
# stages.awk and table.awk loaded first; the -v variables are set by suites/lad/fabric-report. With -v cmp=FILE,
# each stage's means also go to FILE as one tab-separated line (target, transport, stage number, base, load,
# commands at each depth) for suites/lad/fabric-compare.awk.
#
# A depth run in rounds is shown by its median round: the one whose end-to-end mean is the median of the rounds'
# (the lower one of an even count). One round in a slow stretch of the machine then moves no LAD, where a mean
# over all rounds would carry a third of it; and the stages shown still add up to end to end, which medians taken
# stage by stage from different rounds would not.
BEGIN { lad_stages_init() }
$2 == "cmd" {
	n[$1, $3]++
	for (i = 1; i <= LAD_NSTAGE; i++) sum[$1, $3, i] += $(i + 3)
	next
}
$2 == "summary" {
	split($3, kv, "="); recs[$1] = kv[2]
	split($4, kv, "="); got[$1] = kv[2]
	split($5, kv, "="); rounds[$1] = kv[2] + 0
	split($6, kv, "="); ctrls[$1] = kv[2] + 0
}
# pick(w): the median round of depth w (see above) into shown[w]; its rounds' end-to-end means, in round order,
# into e2e_list[w]; 0 when no round joined a command.
function pick(w,    r, m, i, e, order) {
	m = 0
	e2e_list[w] = ""
	for (r = 1; r <= rounds[w]; r++) {
		if (!n[w, r]) {
			e2e_list[w] = e2e_list[w] (r > 1 ? ", " : "") "-"
			continue
		}
		e[r] = sum[w, r, LAD_NSTAGE] / n[w, r] # end to end, the last stage
		e2e_list[w] = e2e_list[w] (r > 1 ? ", " : "") sprintf("%.2f", e[r] / 1000)
		# Insertion into order[1..m], by end-to-end mean.
		for (i = ++m; i > 1 && e[order[i - 1]] > e[r]; i--)
			order[i] = order[i - 1]
		order[i] = r
	}
	shown[w] = m ? order[int((m + 1) / 2)] : 0
	return shown[w]
}
function mean(w, i,    r) { r = shown[w]; return n[w, r] ? sum[w, r, i] / n[w, r] / 1000 : 0 }
# The reasons the table is incomplete, "" when it is not: what --check fails on, and what keeps its rows out of
# lad.csv.
function incomplete(    w, r, lost, bad) {
	bad = ""
	for (w in recs) {
		lost = recs[w] - got[w]
		if (recs[w] == 0 || lost * 100 > maxlost * recs[w])
			bad = bad " " w ": lost " lost " of " recs[w]
	}
	# An overrun loses the oldest events first, a round's marker among them: rounds merge and records go
	# uncounted, so no count above can be trusted.
	if (over1 + over32 > 0)
		bad = bad " tracefs overran (" over1 " at qd1, " over32 " at qd32)"
	for (w in rounds) {
		if (want_rounds != "" && rounds[w] != want_rounds + 0)
			bad = bad " " w ": " rounds[w] " of the " want_rounds " rounds marked"
		for (r = 1; r <= rounds[w]; r++)
			if (!n[w, r])
				bad = bad " " w ": round " r " of " rounds[w] " with no joined command"
		if (ctrls[w] > 1)
			bad = bad " " w ": commands of " ctrls[w] " controllers (the join keys by queue and command id: trace one path)"
	}
	if (nb == 0 || nl == 0)
		bad = bad " a depth with no joined command"
	return bad
}
END {
	pick("base")
	pick("load")
	nb = n["base", shown["base"]]
	nl = n["load", shown["load"]]
	tname = target
	lad_label[3] = "target driver (" tname ")"
	lad_label[4] = target == "ernicd" ? "storage (RAM namespace)" : "storage (backing block device)"
	printf "== read 4KiB %s, %s over NVMe/%s: baseline %d commands sampled, loaded %d\n", dev, tname,
		toupper(transport), nb, nl
	printf "  (kernel %s; fio: %s IOPS, mean %s us at qd1; %s IOPS, mean %s us at qd32)\n", kernel, iops1, flat1,
		iops32, flat32
	if (emulated != "")
		printf "  (under %s the absolute numbers mean little; the shape and the ratios do)\n", emulated
	if (rounds["base"] > 1 || rounds["load"] > 1)
		printf "  (rounds alternating between the depths; each depth's median end to end shown: qd1 round %d of %d\n" \
			"  (%s us), qd32 round %d of %d (%s us))\n", shown["base"], rounds["base"], e2e_list["base"],
			shown["load"], rounds["load"], e2e_list["load"]
	bad = incomplete()
	lad_table_head()
	for (i = 1; i <= LAD_NSTAGE; i++) {
		b = mean("base", i); l = mean("load", i)
		lad_table_row(lad_label[i], b, l, lad_key[i] != "end_to_end")
		# Unrounded: the comparison applies the 0.5 us rule to these, as the table does.
		if (cmp != "")
			printf "%s\t%s\t%d\t%.6f\t%.6f\t%d\t%d\n", tname, transport, i, b, l, nb, nl >> cmp
		# lad.csv holds complete tables only.
		if (csv != "" && bad == "")
			lad_csv_row(csv, ts, commit, host, lad_key[i], b, l, tname, transport)
	}
	print "  largest LAD: " lad_largest()
	print "  " lad_na_note() "; host driver and network are one"
	print "  stage because no stock event marks a capsule leaving or reaching the host by its command id)"
	for (w = 1; w <= 2; w++) {
		ww = w == 1 ? "base" : "load"
		e2e = mean(ww, 5); st = mean(ww, 4)
		printf "  %s: host side %.2f us (block_bio_queue -> block_rq_complete), target side %.2f us (storage);\n",
			(w == 1 ? "qd1 " : "qd32"), e2e, st
		printf "        the other %.2f us: host block layer %.2f, host driver + network %.2f, target driver %.2f\n",
			e2e - st, mean(ww, 1), mean(ww, 2), mean(ww, 3)
	}
	for (w in recs)
		printf "  join %s: %d of %d target records joined (%d lost)\n", w, got[w], recs[w], recs[w] - got[w]
	if (over1 + over32 > 0)
		printf "  tracefs overruns: %d at qd1, %d at qd32 (events lost before the join)\n", over1, over32
	if (csv != "" && bad != "")
		print "  no rows written to lad.csv: the table is incomplete"
	if (check && bad != "") {
		print "  INCOMPLETE:" bad
		exit 1
	}
}
