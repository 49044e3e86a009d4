# suites/lad/inproc-table.awk - seeds/002's table for the in-process path, from suites/lad/report's lines
# "KEY BASE-MEAN BASE-SAMPLES KEY LOAD-MEAN LOAD-SAMPLES", one per stage of enum ernic_stage in table order, and
# its rows of results/lad.csv when -v csv=FILE. Needs table.awk loaded first; the -v variables are set by
# suites/lad/report.
BEGIN {
	label["host_driver"] = "host driver (ernic host)"
	label["transport_to_target"] = "transport to target (SQ ring)"
	label["target_driver"] = "target driver (ernic target)"
	label["storage"] = "storage (" storage ")"
	label["transport_to_host"] = "transport to host (CQ ring)"
	label["end_to_end"] = "end to end"
}
{
	n++; key[n] = $1; b[n] = $2; l[n] = $5; bs = $3; ls = $6
	if ($2 !~ /^[0-9.]+$/ || $5 !~ /^[0-9.]+$/) { bad = 1; exit }
}
END {
	if (bad || n != 6) { print "suites/lad/report: the stats files have no stage means" > "/dev/stderr"; exit 1 }
	if (bs == 0 || ls == 0) { print "suites/lad/report: no command was sampled (baseline " bs ", loaded " ls "): run longer" > "/dev/stderr"; exit 1 }
	printf "== read 4KiB ernic0: baseline %d commands sampled, loaded %d\n", bs, ls
	lad_table_head()
	for (i = 1; i <= n; i++) {
		lad_table_row(label[key[i]], b[i], l[i], key[i] != "end_to_end")
		if (csv != "")
			lad_csv_row(csv, ts, commit, host, key[i], b[i], l[i], "ernic", "inproc")
	}
	print "  largest LAD: " lad_largest()
	if (LAD_NA)
		print "  " lad_na_note() ", as seeds/002 has it)"
}
