# suites/lad/fabric-join.awk - join one depth's host tracefs events and the target's records, command by command:
# host requests by (sector, time order), NVMe commands by (qid, cid, time order), the target's records by
# (qid, cid) inside the host command's lifetime, those outside every round's time span being another run's.
# Needs stages.awk and tracefs.awk loaded first.
#
#   awk -v host_major=259 -v backing_dev=252:0 -v lba_bytes=4096 \
#       -f suites/lad/stages.awk -f suites/lad/tracefs.awk -f suites/lad/fabric-join.awk qdN.host [qdN.target]
#
# host_major: the major of the host's namespace block devices (head and hidden paths);
# backing_dev set: the kernel target (nvmet events and its backing device's block events in qdN.host);
# otherwise qdN.target holds ernicd's --trace lines. Prints one line per joined command, "cmd", its round
# (tracefs.awk: lad_round_line) and the stage times in ns in lad_key order, then "summary target_records=N
# joined=M rounds=R".

# A sector as an array key: the decimal digits, whatever its size. (mawk turns a number above 2^31 into a key
# with CONVFMT, "2.14748e+09", which the trace's "2147483648" would never find.)
function skey(x) {
	return sprintf("%.0f", x)
}

# The start sector of a block event ("... SECTOR + NR ...").
function sector(    i) {
	for (i = 4; i <= NF; i++)
		if ($i == "+")
			return $(i - 1)
	return ""
}

BEGIN {
	lad_stages_init()
	backing = backing_dev
	gsub(":", ",", backing)
	spl = lba_bytes / 512 # 512-byte sectors per logical block
}

# ernicd's records: qid cid opc status rx exec storage_start storage_done storage_ns queued sent
FILENAME != ARGV[1] {
	if ($0 ~ /^#/ || NF < 11)
		next
	nrec++
	r_key[nrec] = $1 "," $2
	r_rx[nrec] = $5
	r_ss[nrec] = $7
	r_sd[nrec] = $8
	r_q[nrec] = $10
	next
}

{
	ev = $2
	sub(/:$/, "", ev)
	t = ns($1)
	if (lad_round_line(t))
		next
}

ev == "block_bio_queue" || ev == "block_rq_issue" || ev == "block_rq_complete" {
	dev = $3
	s = skey(sector())
	if (dev == backing) {
		if (ev == "block_bio_queue" && (s in wait_ss)) {
			t_ss[wait_ss[s]] = t
			wait_sd[s] = wait_ss[s]
			delete wait_ss[s]
		} else if (ev == "block_rq_complete" && (s in wait_sd)) {
			t_sd[wait_sd[s]] = t
			delete wait_sd[s]
		}
	} else if (substr(dev, 1, index(dev, ",") - 1) == host_major) {
		if (ev == "block_bio_queue") {
			last_q[s] = t
		} else if (ev == "block_rq_issue" && (s in wait_d)) {
			c_d[wait_d[s]] = t
			delete wait_d[s]
		} else if (ev == "block_rq_complete" && (s in wait_c)) {
			c_c[wait_c[s]] = t
			delete wait_c[s]
		}
	}
	next
}

ev == "nvme_setup_cmd" {
	qid = field("qid")
	if (qid == "" || qid == 0)
		next
	# "nvme0:": the join keys by (qid, cid), so commands of two controllers (two paths) could pair wrongly.
	if (!($3 in ctrls)) {
		ctrls[$3]
		nctrl++
	}
	k = ++ncmd
	key = qid "," field("cmdid")
	open[key] = k
	by_key[key] = by_key[key] " " k
	c_setup[k] = t
	c_round[k] = LAD_ROUND
	c_sector[k] = skey(field("slba") * spl)
	if (c_sector[k] in last_q)
		c_qt[k] = last_q[c_sector[k]]
	wait_d[c_sector[k]] = k
	next
}

ev == "nvme_complete_rq" {
	key = field("qid") "," field("cmdid")
	if (!(key in open))
		next
	k = open[key]
	delete open[key]
	c_cq[k] = t
	wait_c[c_sector[k]] = k
	next
}

ev == "nvmet_req_init" {
	qid = field("qid")
	if (qid == "" || qid == 0)
		next
	key = qid "," field("cmdid")
	x = ++nt
	t_open[key] = x
	t_host[x] = (key in open) ? open[key] : 0
	t_rx[x] = t
	wait_ss[skey(field("slba") * spl)] = x
	next
}

ev == "nvmet_req_complete" {
	key = field("qid") "," field("cmdid")
	if (!(key in t_open))
		next
	t_q[t_open[key]] = t
	delete t_open[key]
	next
}

function emit(k, trx, tss, tsd, tq,    b, i, line) {
	if (!k)
		return 0
	split("", b)
	b["Q"] = c_qt[k]
	b["D"] = c_d[k]
	b["cq"] = c_cq[k]
	b["C"] = c_c[k]
	b["trx"] = trx
	b["tss"] = tss
	b["tsd"] = tsd
	b["tq"] = tq
	if (!lad_complete(b))
		return 0
	line = "cmd " c_round[k]
	for (i = 1; i <= LAD_NSTAGE; i++)
		line = line " " sprintf("%.0f", lad_stage(b, i))
	print line
	return 1
}

END {
	joined = 0
	if (backing != "") {
		for (x = 1; x <= nt; x++)
			joined += emit(t_host[x], t_rx[x], t_ss[x], t_sd[x], t_q[x])
		print "summary target_records=" nt " joined=" joined " rounds=" LAD_NROUND " controllers=" nctrl + 0
		exit
	}
	nin = 0
	for (r = 1; r <= nrec; r++) {
		# Another run's record (the target's file spans every run of both depths).
		if (!lad_round_of(r_rx[r], 0))
			continue
		nin++
		# The host command with this (qid, cid) in flight when the capsule arrived.
		n = split(by_key[r_key[r]], ks, " ")
		k = 0
		for (i = 1; i <= n; i++)
			if (c_setup[ks[i]] <= r_rx[r] && (ks[i] in c_cq) && r_q[r] <= c_cq[ks[i]]) {
				k = ks[i]
				break
			}
		joined += emit(k, r_rx[r], r_ss[r], r_sd[r], r_q[r])
	}
	print "summary target_records=" nin " joined=" joined " rounds=" LAD_NROUND " controllers=" nctrl + 0
}
