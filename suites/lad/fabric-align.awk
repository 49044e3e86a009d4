# suites/lad/fabric-align.awk - the target's times on the host's clock, for a target on another machine
# (suites/lad/fabric-align runs it, with tracefs.awk loaded first). Three passes, chosen by -v pass=:
#
#   intervals  host qdN.host, then the target's file: for each target record in the run and each host command
#              with its (qid, cid), the residual offsets d for which the record falls inside that command
#              (setup <= rx - d and queued - d <= cq, as fabric-join.awk joins): "LO 1" and "HI -1" lines,
#              clipped to [-win, win]; the count of records in the run goes to countfile
#   sweep      those lines sorted by LO/HI (opening before closing at one value): "BEST A B NEXT", the most
#              records any d fits, the range [A, B] of those d, and the most any d more than AGAP ns from that
#              range fits (an alias: a command id that came back, met by a hint that far off)
#   shift      the target's file with its times moved onto the host clock: ernicd's trace lines, or nvmet's
#              tracefs lines (nvmet events and the block events of backing_dev only, inside one of the rounds of
#              host_file, which is read first)
#
# A target record belongs to the run when it falls inside one of the host file's rounds (tracefs.awk:
# lad_round_line): the target's file spans every round of both depths, which alternate.
#
# The target's clock is modelled as host + off(h), off(h) = off0 + rate * (h - h0): the probes give off0, rate
# and h0 (intervals: the estimate; shift: the estimate plus the chosen d).
# Target files: ernicd's --trace lines "qid cid opc status rx exec storage_start storage_done storage_ns
# queued sent" (ns), or tracefs lines "SECONDS.USEC EVENT: FIELDS" with nvmet_req_init/nvmet_req_complete.

BEGIN {
	AGAP = 5000
}

# A target clock reading as host clock time: x = h + off0 + rate * (h - h0).
function tohost(x) {
	return (x - off0 + rate * h0) / (1 + rate)
}

# The first host command of key k whose setup is after h (commands of one key never overlap: a command id is
# used again only after its completion).
function after(k, h,    lo, hi, mid) {
	lo = 1
	hi = n_k[k] + 1
	while (lo < hi) {
		mid = int((lo + hi) / 2)
		if (setup[k, mid] > h)
			hi = mid
		else
			lo = mid + 1
	}
	return lo
}

function target_record(key, rx, q,    hrx, hq, i, lo, hi) {
	hrx = tohost(rx)
	hq = tohost(q)
	# Another run's record: the target's file spans all of them.
	if (!lad_round_of(hrx, win))
		return
	nrec++
	for (i = after(key, hrx + win) - 1; i >= 1; i--) {
		if (!((key, i) in cq))
			continue
		if (cq[key, i] < hq - win)
			break
		lo = hq - cq[key, i]
		hi = hrx - setup[key, i]
		if (lo < -win)
			lo = -win
		if (hi > win)
			hi = win
		if (lo <= hi)
			printf "%.0f 1\n%.0f -1\n", lo, hi
	}
}

pass == "intervals" && FILENAME == ARGV[1] {
	t = ns($1)
	if (lad_round_line(t))
		next
	if ($2 == "nvme_setup_cmd:") {
		qid = field("qid")
		if (qid == "" || qid == 0)
			next
		k = qid "," field("cmdid")
		open[k] = ++n_k[k]
		setup[k, n_k[k]] = t
	} else if ($2 == "nvme_complete_rq:") {
		k = field("qid") "," field("cmdid")
		if (k in open) {
			cq[k, open[k]] = t
			delete open[k]
		}
	}
	next
}

pass == "intervals" && /^#/ { next }

# ernicd's trace: qid cid opc status rx exec storage_start storage_done storage_ns queued sent, then (since the
# trace names its transport) data_start data_done send_done, 0 where the transport stamped nothing.
pass == "intervals" && NF >= 11 && $1 ~ /^[0-9]+$/ {
	target_record($1 "," $2, $5, $10)
	next
}

pass == "intervals" && $2 == "nvmet_req_init:" {
	qid = field("qid")
	if (qid == "" || qid == 0)
		next
	k = qid "," field("cmdid")
	t_open[k] = ns($1)
	next
}

pass == "intervals" && $2 == "nvmet_req_complete:" {
	k = field("qid") "," field("cmdid")
	if (k in t_open) {
		target_record(k, t_open[k], ns($1))
		delete t_open[k]
	}
	next
}

pass == "intervals" { next }

# Sorted events: count the records each d fits; each range between an opening and the next closing is a
# local peak.
pass == "sweep" {
	if ($2 > 0) {
		cur++
		top = $1
		rising = 1
		next
	}
	if (rising) {
		npeak++
		p_n[npeak] = cur
		p_lo[npeak] = top
		p_hi[npeak] = $1
	}
	rising = 0
	cur--
	next
}

pass == "shift" && FILENAME == host_file {
	lad_round_line(ns($1))
	next
}

pass == "shift" && /^#/ {
	print
	next
}

pass == "shift" && NF >= 11 && $1 ~ /^[0-9]+$/ {
	for (i = 5; i <= NF; i++)
		if (i != 9 && $i != 0)
			$i = sprintf("%.0f", tohost($i))
	print
	next
}

pass == "shift" && ($2 ~ /^nvmet_req_(init|complete):$/ ||
		    ($2 ~ /^block_(bio_queue|rq_complete):$/ && $3 == backing_dev)) {
	h = tohost(ns($1))
	# The run's own: tracefs on the target spans every run, and the join counts each nvmet_req_init it sees.
	if (!lad_round_of(h, 0))
		next
	$1 = sprintf("%.6f", h / 1000000000)
	# The target's device, tagged: merged with the initiator's events, its MAJ:MIN may be one of theirs too.
	if ($2 != "nvmet_req_init:" && $2 != "nvmet_req_complete:")
		$3 = "T" $3
	print
	next
}

END {
	if (pass == "intervals")
		print nrec + 0 > countfile
	else if (pass == "sweep") {
		best = 0
		for (i = 1; i <= npeak; i++)
			if (p_n[i] > p_n[best])
				best = i
		# The runner-up: a peak apart from the best by more than AGAP ns, as a wrong hint's alias would be.
		next_best = 0
		for (i = 1; i <= npeak; i++)
			if ((p_hi[i] < p_lo[best] - AGAP || p_lo[i] > p_hi[best] + AGAP) && p_n[i] > next_best)
				next_best = p_n[i]
		printf "%d %.0f %.0f %d\n", p_n[best], p_lo[best], p_hi[best], next_best
	}
}
