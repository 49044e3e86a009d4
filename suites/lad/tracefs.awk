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

# Rounds. fabric-collect runs each depth in rounds, the depths alternating, and writes "ernic_lad_round=R" through
# trace_marker as a round starts: a qdN.host holds that depth's rounds one after the other, with the other depth's
# rounds in the gaps between them. A file without the marks (one run) is round 1 from its first event.
# lad_round_line(t): called with every host line's time, in file order; keeps each round's span (LAD_ROUND_FIRST[R],
# LAD_ROUND_LAST[R], ns), LAD_ROUND (the line's round) and LAD_NROUND; returns 1 if the line is a round's mark.
function lad_round_line(t,    r) {
	if ($2 == "tracing_mark_write:" && $3 ~ /^ernic_lad_round=[1-9][0-9]*$/) {
		r = substr($3, 17) + 0
		LAD_ROUND = r
		LAD_ROUND_FIRST[r] = LAD_ROUND_LAST[r] = t
		if (r > LAD_NROUND)
			LAD_NROUND = r
		return 1
	}
	if (LAD_ROUND == "") {
		LAD_ROUND = LAD_NROUND = 1
		LAD_ROUND_FIRST[1] = t
	}
	LAD_ROUND_LAST[LAD_ROUND] = t
	return 0
}

# lad_round_of(t, slack): the round whose span, widened by slack ns each way, holds time t; 0 if none does (the
# other depth's runs, or before and after them all).
function lad_round_of(t, slack,    r) {
	for (r = 1; r <= LAD_NROUND; r++)
		if ((r in LAD_ROUND_FIRST) && t >= LAD_ROUND_FIRST[r] - slack && t <= LAD_ROUND_LAST[r] + slack)
			return r
	return 0
}
