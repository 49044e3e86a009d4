# suites/lad/stages.awk - the stages of the fabric LAD, defined here and nowhere else, named as seeds/002 names
# them. A command's boundaries are event times in CLOCK_MONOTONIC ns, from stock kernel events (tracefs,
# trace_clock=mono) and, for ernicd, its own --trace stamps:
#
#   Q    block_bio_queue on the host's namespace          the block layer has the bio
#   D    block_rq_issue on the host's path device         the request goes to nvme-tcp / nvme-rdma
#                                                         (after nvme_setup_cmd)
#   trx  ernicd: capsule received / nvmet_req_init        the target has the command (ernicd over RDMA: its
#                                                         receive completion polled)
#   tss  ernicd: storage_start / block_bio_queue on nvmet's backing device
#   tsd  ernicd: storage_done / block_rq_complete on the backing device
#   tq   ernicd: queued / nvmet_req_complete              the completion reaches the target's transport
#   cq   nvme_complete_rq (qid, cid)                      the host driver has handled the response
#   C    block_rq_complete on the host's path device      the block layer completes the request
#
# The same boundaries over NVMe/TCP and NVMe/RDMA: nvme_setup_cmd, nvme_complete_rq, nvmet_req_init and
# nvmet_req_complete are the core's events, whatever the transport.
#
# Merged, because no stock event separates them: the host driver's send and receive work and the network in both
# directions, and the target's response send (after tq: over TCP the C2HData and response PDUs, over RDMA the RDMA
# WRITE of a read's data and the response SEND). nvme-tcp's send and receive functions in 6.1
# (nvme_tcp_try_send, nvme_tcp_io_work, nvme_tcp_recv_skb, nvme_tcp_data_ready) work on a queue, not on a
# command, and the ones that see a command (nvme_tcp_process_nvme_cqe, nvme_tcp_handle_c2h_data) are inlined:
# a kprobe on them could not be joined by (qid, cid). nvme-rdma's in 6.1: nvme_rdma_post_send (the capsule's
# SEND) takes the queue and a queue entry whose data is the SQE; nvme_rdma_send_done and nvme_rdma_recv_done are
# completion callbacks that take a work completion; nvme_rdma_process_nvme_rsp, which takes the response, is
# inlined into nvme_rdma_recv_done. The command identifier sits one or two pointers behind their arguments, which
# kprobe fetch arguments could follow (not done here: no stock event marks these moments). fabric-collect
# records which of these this kernel has as symbols (meta kallsyms_<transport>). Nothing is estimated: the five
# stages add up to end to end.

function lad_stages_init() {
	LAD_NSTAGE = 5
	lad_key[1] = "host_block_layer"
	lad_key[2] = "host_driver_network"
	lad_key[3] = "target_driver"
	lad_key[4] = "storage"
	lad_key[5] = "end_to_end"
	lad_label[1] = "host block layer"
	lad_label[2] = "host driver + network (merged)"
	lad_label[3] = "target driver"
	lad_label[4] = "storage"
	lad_label[5] = "end to end"
}

# lad_stage(b, i): stage i of the command whose boundaries are b["Q"], b["D"], ..., b["C"].
function lad_stage(b, i) {
	if (i == 1) return (b["D"] - b["Q"]) + (b["C"] - b["cq"])
	if (i == 2) return (b["trx"] - b["D"]) + (b["cq"] - b["tq"])
	if (i == 3) return (b["tss"] - b["trx"]) + (b["tq"] - b["tsd"])
	if (i == 4) return b["tsd"] - b["tss"]
	return b["C"] - b["Q"]
}

# lad_complete(b): every boundary is there.
function lad_complete(b,    k, n, names) {
	n = split("Q D trx tss tsd tq cq C", names, " ")
	for (k = 1; k <= n; k++)
		if (!((names[k]) in b) || b[names[k]] == "")
			return 0
	return 1
}
