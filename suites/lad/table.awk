# suites/lad/table.awk - how seeds/002's table is drawn and judged, in one place for the in-process table
# (suites/lad/report), the fabric tables (fabric-table.awk) and the TCP-vs-RDMA comparison (fabric-compare.awk):
# the LAD of a stage, the rule that a baseline under `min` microseconds has none ("n/a"), the row layout, the
# "largest LAD" line, and the CSV row of results/lad.csv. Callers set -v min (LAD_MIN_BASE_US in csv.sh).

# lad_has(b): a stage whose baseline is b microseconds has a LAD (its baseline is not too small for a ratio).
function lad_has(b) { return b >= min }
# lad_of(b, l): LAD = loaded / baseline to 2 places, or "n/a".
function lad_of(b, l) { return lad_has(b) ? sprintf("%.2f", l / b) : "n/a" }

# lad_table_head(): the header row; it starts a table, so the largest LAD and the n/a count start afresh.
function lad_table_head() {
	lad_best_reset()
	printf "  %-38s%10s%10s%8s\n", "stage", "base us", "load us", "LAD"
}

# lad_table_row(label, b, l, judged): one stage's row. A judged stage (every one but end to end) competes for
# the largest LAD; an n/a row is counted for the footnote.
function lad_table_row(label, b, l, judged,    lad) {
	lad = lad_of(b, l)
	printf "  %-38s%10.2f%10.2f%8s\n", label, b, l, lad
	if (lad == "n/a")
		LAD_NA++
	if (judged)
		lad_judge(label, b, l)
}

# The largest LAD among the stages judged since lad_best_reset(): lad_largest() is "LABEL, LAD" or "n/a".
function lad_best_reset() { LAD_BEST = ""; LAD_BESTV = 0; LAD_NA = 0 }
function lad_judge(label, b, l) {
	if (lad_has(b) && (LAD_BEST == "" || l / b > LAD_BESTV)) {
		LAD_BEST = label; LAD_BESTV = l / b
	}
}
function lad_largest() { return LAD_BEST == "" ? "n/a" : sprintf("%s, %.2f", LAD_BEST, LAD_BESTV) }

# The footnote's first words, each caller saying the rest.
function lad_na_note() { return "(n/a: a stage under " min " us at the baseline is too small for a ratio" }

# lad_csv_row(file, ts, commit, host, key, b, l, target, transport): one row of results/lad.csv (suites/csv-columns'
# "lad" line); lad is empty where the table says n/a.
function lad_csv_row(file, ts, commit, host, key, b, l, target, transport) {
	printf "%s,%s,%s,%s,%.3f,%.3f,%s,%s,%s\n", lad_csv_q(ts), lad_csv_q(commit), lad_csv_q(host), lad_csv_q(key), b, l,
		(lad_has(b) ? sprintf("%.3f", l / b) : ""), lad_csv_q(target), lad_csv_q(transport) >> file
}
function lad_csv_q(s) { gsub(/"/, "\"\"", s); return "\"" s "\"" }
