# suites/lad/fabric-table.awk - seeds/002's table and seeds/004's split for one target, from the lines
# "base|load cmd NS..." and "base|load summary target_records=N joined=M" of fabric-join.awk. Needs stages.awk
# and table.awk loaded first; the -v variables are set by suites/lad/fabric-report. With -v cmp=FILE, each
# stage's means also go to FILE as one tab-separated line (target, transport, stage number, base, load, commands
# at each depth) for suites/lad/fabric-compare.awk.
BEGIN { lad_stages_init() }
$2 == "cmd" { n[$1]++; for (i = 1; i <= LAD_NSTAGE; i++) sum[$1, i] += $(i + 2); next }
$2 == "summary" {
	split($3, kv, "="); recs[$1] = kv[2]
	split($4, kv, "="); got[$1] = kv[2]
}
function mean(w, i) { return n[w] ? sum[w, i] / n[w] / 1000 : 0 }
END {
	tname = target
	lad_label[3] = "target driver (" tname ")"
	lad_label[4] = target == "ernicd" ? "storage (RAM namespace)" : "storage (backing block device)"
	printf "== read 4KiB %s, %s over NVMe/%s: baseline %d commands sampled, loaded %d\n", dev, tname,
		toupper(transport), n["base"], n["load"]
	printf "  (kernel %s; fio: %s IOPS, mean %s us at qd1; %s IOPS, mean %s us at qd32)\n", kernel, iops1, flat1,
		iops32, flat32
	if (emulated != "")
		printf "  (under %s the absolute numbers mean little; the shape and the ratios do)\n", emulated
	lad_table_head()
	for (i = 1; i <= LAD_NSTAGE; i++) {
		b = mean("base", i); l = mean("load", i)
		lad_table_row(lad_label[i], b, l, lad_key[i] != "end_to_end")
		if (cmp != "")
			printf "%s\t%s\t%d\t%.3f\t%.3f\t%d\t%d\n", tname, transport, i, b, l, n["base"], n["load"] >> cmp
		if (csv != "")
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
	bad = ""
	for (w in recs) {
		lost = recs[w] - got[w]
		printf "  join %s: %d of %d target records joined (%d lost)\n", w, got[w], recs[w], lost
		if (recs[w] == 0 || lost * 100 > maxlost * recs[w])
			bad = bad " " w ": lost " lost " of " recs[w]
	}
	if (over1 + over32 > 0)
		printf "  tracefs overruns: %d at qd1, %d at qd32 (events lost before the join)\n", over1, over32
	if (n["base"] == 0 || n["load"] == 0)
		bad = bad " a depth with no joined command"
	if (check && bad != "") {
		print "  INCOMPLETE:" bad
		exit 1
	}
}
