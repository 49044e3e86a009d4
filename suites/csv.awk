# csv.awk - the awk helpers of the suites' scripts (suites/lib.sh sets CSV_AWK to this text).
# csvsplit: split one line of the results CSVs into fields.
# The CSVs quote every string (jq @csv) and the backend string contains
# commas, so a plain -F, is wrong. Doubled quotes inside a field are undone.
function csvsplit(line, f,   n, i, c, q, cur) {
	n = 0; cur = ""; q = 0
	for (i = 1; i <= length(line); i++) {
		c = substr(line, i, 1)
		if (q) {
			if (c != "\"") cur = cur c
			else if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ }
			else q = 0
		} else if (c == "\"") q = 1
		else if (c == ",") { f[++n] = cur; cur = "" }
		else cur = cur c
	}
	f[++n] = cur
	return n
}

# 1234567.8 -> "1,234,568"
function commas(x,   s, r) {
	s = sprintf("%d", x + 0.5); r = ""
	while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }
	return s r
}

# a byte count as the job files write it: 4096 -> "4 KiB"
function hb(b) {
	if (b >= 1048576 && b % 1048576 == 0) return b / 1048576 " MiB"
	if (b >= 1024 && b % 1024 == 0) return b / 1024 " KiB"
	return b " B"
}

# The ioengine column names the ernic engine by its path ("external:./build/ernic-fio.so"); reports and the gate
# call it "ernic", and every other engine by its own name.
function ernic_engine(e) { return e ~ /ernic-fio\.so$/ }
function engine_name(e) { return ernic_engine(e) ? "ernic" : e }

# median(a, n): the median of a[1..n], which it leaves as it was (it sorts a copy: n is a handful of rows).
# The copy is numeric: fields csvsplit() builds are strings, and "876144.8" > "1134020.8" as text.
function median(a, n,   i, j, t, s) {
	for (i = 1; i <= n; i++) s[i] = a[i] + 0
	for (i = 2; i <= n; i++) {
		t = s[i]
		for (j = i - 1; j >= 1 && s[j] > t; j--) s[j + 1] = s[j]
		s[j + 1] = t
	}
	return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
}

# median_abs_dev(a, n, med): the median absolute deviation of a[1..n] from med, their median.
function median_abs_dev(a, n, med,   i, d) {
	for (i = 1; i <= n; i++) d[i] = a[i] > med ? a[i] - med : med - a[i]
	return median(d, n)
}
