# suites/lad/fabric-compare.awk - seeds/002's TCP-vs-RDMA comparison, per target that was measured over both: the
# end-to-end latency at queue depth 1 and 32 and each stage's base, load and LAD side by side, with the largest LAD
# of each. Reads the lines fabric-table.awk wrote with -v cmp=FILE; needs stages.awk and table.awk loaded first.
#
#   awk -v min=0.5 -f suites/lad/stages.awk -f suites/lad/table.awk -f suites/lad/fabric-compare.awk CMP-FILE

BEGIN { FS = "\t"; lad_stages_init() }
# The kernel target is nvmet-tcp over one and nvmet-rdma over the other: one target, named by both.
{
	t = $1
	sub(/-(tcp|rdma)$/, "", t)
	if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
	tname[t, $2] = $1
	base[t, $2, $3] = $4; load[t, $2, $3] = $5; nb[t, $2] = $6; nl[t, $2] = $7; has[t, $2] = 1
}
function stage_lad(t, tr, i) { return lad_of(base[t, tr, i], load[t, tr, i]) }
function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
function largest(t, tr,    i) {
	lad_best_reset()
	for (i = 1; i < LAD_NSTAGE; i++)
		lad_judge(lad_label[i], base[t, tr, i], load[t, tr, i])
	return lad_largest()
}
END {
	for (k = 1; k <= nt; k++) {
		t = order[k]
		if (!has[t, "tcp"] || !has[t, "rdma"])
			continue
		printf "== TCP vs RDMA, %s: read 4KiB from one job, queue depth 1 and 32 (seeds/002)\n", tname[t, "tcp"] == tname[t, "rdma"] ? t : tname[t, "tcp"] " / " tname[t, "rdma"]
		for (w = 1; w <= 2; w++) {
			tr = w == 1 ? "tcp" : "rdma"
			printf "  %-5s qd1 %8.2f us, qd32 %8.2f us end to end (%d and %d commands joined)\n", toupper(tr) ",",
				base[t, tr, LAD_NSTAGE], load[t, tr, LAD_NSTAGE], nb[t, tr], nl[t, tr]
		}
		printf "  %-34s%9s%9s%8s%10s%10s%9s\n", "stage", "TCP base", "TCP load", "TCP LAD", "RDMA base",
			"RDMA load", "RDMA LAD"
		for (i = 1; i <= LAD_NSTAGE; i++)
			printf "  %-34s%9.2f%9.2f%8s%10.2f%10.2f%9s\n", lad_label[i], base[t, "tcp", i], load[t, "tcp", i],
				stage_lad(t, "tcp", i), base[t, "rdma", i], load[t, "rdma", i], stage_lad(t, "rdma", i)
		printf "  largest LAD: TCP: %s; RDMA: %s\n", largest(t, "tcp"), largest(t, "rdma")
		printf "  RDMA / TCP end to end: %s at qd1, %s at qd32\n", ratio(base[t, "rdma", LAD_NSTAGE], base[t, "tcp", LAD_NSTAGE]),
			ratio(load[t, "rdma", LAD_NSTAGE], load[t, "tcp", LAD_NSTAGE])
	}
}
