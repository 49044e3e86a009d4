# suites/lad/tracefs.awk - reading tracefs lines ("SECONDS.USEC EVENT: key=value ..."), shared by
# fabric-join.awk and fabric-align.awk, which are run with it loaded first.

# A tracefs timestamp "SECONDS.USEC" in ns.
function ns(t,    p) {
	split(t, p, ".")
	return p[1] * 1000000000 + p[2] * 1000
}

# The value of "key=" in the event's fields, up to the next blank or comma, or "".
function word(key,    i, s) {
	i = index($0, " " key "=")
	if (!i)
		return ""
	s = substr($0, i + length(key) + 2)
	return match(s, /^[^ ,]+/) ? substr(s, 1, RLENGTH) : ""
}

# The decimal after "key=" in the event's fields, or "".
function field(key,    s) {
	s = word(key)
	return match(s, /^[0-9]+/) ? substr(s, 1, RLENGTH) : ""
}
