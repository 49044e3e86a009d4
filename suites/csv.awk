# csv.awk - split one line of the results CSVs into fields.
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
