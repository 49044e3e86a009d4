// SPDX-License-Identifier: MIT
/*
 * Description: the ernic engine's command layer (engine/ernic_cmd.h) alone,
 * without fio or a kernel NVMe device: the SQE both modes send, its
 * passthrough form, the status a passthrough completion carries, the
 * /dev/nvmeXnY -> /dev/ngXnY mapping, the ernic_opcode values and the
 * per-command transfer cap NLB sets.
 */
#include <CUnit/Basic.h>

#include "ernic_cmd.h"
#include "ut.h"

static void test_read_sqe_has_slba_split_over_cdw10_11_and_zero_based_nlb(void)
{
	struct ernic_cmd cmd = { .opc = NVME_CMD_READ, .nsid = 3, .slba = 0x123456789aULL, .nlb = 32 };
	struct nvme_sqe sqe;

	memset(&sqe, 0xA5, sizeof(sqe));
	ernic_cmd_sqe(&cmd, &sqe);
	CU_ASSERT_EQUAL(sqe.opc, NVME_CMD_READ);
	CU_ASSERT_EQUAL(sqe.nsid, 3);
	CU_ASSERT_EQUAL(sqe.cdw10, 0x3456789a);
	CU_ASSERT_EQUAL(sqe.cdw11, 0x12);
	CU_ASSERT_EQUAL(sqe.cdw12, 31);
	CU_ASSERT_EQUAL(sqe.cid, 0);
	CU_ASSERT_EQUAL(sqe.dptr.keyed.key, 0);
	CU_ASSERT_EQUAL(sqe.cdw13 | sqe.cdw14 | sqe.cdw15, 0);
}

static void test_fua_write_sets_cdw12_bit_30_only(void)
{
	struct ernic_cmd cmd = { .opc = NVME_CMD_WRITE, .nsid = 1, .slba = 8, .nlb = 1, .fua = true };
	struct nvme_sqe sqe;

	ernic_cmd_sqe(&cmd, &sqe);
	CU_ASSERT_EQUAL(sqe.cdw12, 1u << 30);
	cmd.fua = false;
	ernic_cmd_sqe(&cmd, &sqe);
	CU_ASSERT_EQUAL(sqe.cdw12, 0);
}

static void test_dsm_is_one_deallocate_range_and_flush_has_no_fields(void)
{
	struct ernic_cmd dsm = { .opc = NVME_CMD_DSM, .nsid = 1, .slba = 99, .nlb = 7, .dsm = true };
	struct ernic_cmd flush = { .opc = NVME_CMD_FLUSH, .nsid = 1, .slba = 99, .nlb = 7 };
	struct nvme_sqe sqe;

	ernic_cmd_sqe(&dsm, &sqe);
	CU_ASSERT_EQUAL(sqe.cdw10, 0);
	CU_ASSERT_EQUAL(sqe.cdw11, NVME_DSM_ATTR_DEALLOCATE);
	CU_ASSERT_EQUAL(sqe.cdw12, 0);
	ernic_cmd_sqe(&flush, &sqe);
	CU_ASSERT_EQUAL(sqe.opc, NVME_CMD_FLUSH);
	CU_ASSERT_EQUAL(sqe.cdw10 | sqe.cdw11 | sqe.cdw12, 0);
}

static void test_uring_and_ioctl_commands_carry_the_same_sqe_fields_and_buffer(void)
{
	struct ernic_cmd cmd = { .opc = NVME_CMD_WRITE, .nsid = 5, .slba = 1ULL << 33, .nlb = 256, .fua = true };
	struct nvme_passthru_cmd64 pc;
	struct nvme_uring_cmd uc;
	struct nvme_sqe sqe;
	char buf[16];

	ernic_cmd_sqe(&cmd, &sqe);
	ernic_cmd_uring(&sqe, buf, 1u << 20, &uc);
	ernic_cmd_ioctl(&sqe, buf, 1u << 20, &pc);
	CU_ASSERT_EQUAL(uc.opcode, NVME_CMD_WRITE);
	CU_ASSERT_EQUAL(uc.nsid, 5);
	CU_ASSERT_EQUAL(uc.addr, (uint64_t)(uintptr_t)buf);
	CU_ASSERT_EQUAL(uc.data_len, 1u << 20);
	CU_ASSERT_EQUAL(uc.cdw10, 0);
	CU_ASSERT_EQUAL(uc.cdw11, 2);
	CU_ASSERT_EQUAL(uc.cdw12, (1u << 30) | 255);
	CU_ASSERT_EQUAL(uc.metadata, 0);
	CU_ASSERT_EQUAL(uc.timeout_ms, 0);
	CU_ASSERT_EQUAL(pc.opcode, uc.opcode);
	CU_ASSERT_EQUAL(pc.nsid, uc.nsid);
	CU_ASSERT_EQUAL(pc.addr, uc.addr);
	CU_ASSERT_EQUAL(pc.data_len, uc.data_len);
	CU_ASSERT_EQUAL(pc.cdw12, uc.cdw12);
	CU_ASSERT_EQUAL(pc.result, 0);
}

static void test_passthru_result_decodes_status_dnr_and_errno(void)
{
	struct ernic_cmd_status st;

	st = ernic_cmd_passthru_status(0);
	CU_ASSERT(st.nvme && st.status == 0 && !st.dnr && st.err == 0);
	/* LBA Out of Range with DNR, as Linux hands it over: (SCT << 8 | SC) | 0x4000 */
	st = ernic_cmd_passthru_status(0x4080);
	CU_ASSERT(st.nvme);
	CU_ASSERT_EQUAL(st.status, NVME_SC_LBA_RANGE);
	CU_ASSERT(st.dnr);
	CU_ASSERT_EQUAL(st.err, EINVAL);
	/* Invalid Namespace without DNR; CRD and More bits do not leak into the status */
	st = ernic_cmd_passthru_status(0x000B | 0x2000 | 0x0800);
	CU_ASSERT_EQUAL(st.status, NVME_SC_INVALID_NS);
	CU_ASSERT(!st.dnr);
	CU_ASSERT_EQUAL(st.err, ENXIO);
	/* A command-specific status keeps its type */
	st = ernic_cmd_passthru_status(NVME_STATUS(1, 0x80) | 0x4000);
	CU_ASSERT_EQUAL(NVME_STATUS_SCT(st.status), 1);
	CU_ASSERT_EQUAL(NVME_STATUS_SC(st.status), 0x80);
	CU_ASSERT_EQUAL(st.err, EIO);
	/* Capacity Exceeded is ENOSPC, as Linux's BLK_STS_NOSPC: fio's fill_device=1 stops on it */
	st = ernic_cmd_passthru_status(NVME_SC_CAP_EXCEEDED | 0x4000);
	CU_ASSERT_EQUAL(st.status, NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_EQUAL(st.err, ENOSPC);
	/* The kernel refused: an errno and no status at all */
	st = ernic_cmd_passthru_status(-EINVAL);
	CU_ASSERT(!st.nvme);
	CU_ASSERT_EQUAL(st.status, 0);
	CU_ASSERT_EQUAL(st.err, EINVAL);
}

static void test_block_device_maps_to_its_ng_twin_and_controller(void)
{
	char ng[64], ctrl[64];

	CU_ASSERT_EQUAL(ernic_dev_names("/dev/nvme0n1", ng, sizeof(ng), ctrl, sizeof(ctrl)), 0);
	CU_ASSERT_STRING_EQUAL(ng, "/dev/ng0n1");
	CU_ASSERT_STRING_EQUAL(ctrl, "/dev/nvme0");
	CU_ASSERT_EQUAL(ernic_dev_names("/dev/ng12n34", ng, sizeof(ng), ctrl, sizeof(ctrl)), 0);
	CU_ASSERT_STRING_EQUAL(ng, "/dev/ng12n34");
	CU_ASSERT_STRING_EQUAL(ctrl, "/dev/nvme12");
}

static void test_labels_partitions_and_controllers_are_not_namespaces(void)
{
	static const char *const bad[] = { "ernic0",	     "/dev/nvme0",   "/dev/nvme0n1p1", "/dev/ng0n0",
					    "/dev/nvmen1",   "/dev/ng0n",    "/tmp/ng0n1",     "/dev/nvme0c0n1",
					    "/dev/ng-1n1",   "" };
	char ng[64], ctrl[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(ernic_dev_names(bad[i], ng, sizeof(ng), ctrl, sizeof(ctrl)), -EINVAL);
}

static void test_opcode_values_decimal_or_hex_up_to_255(void)
{
	CU_ASSERT_EQUAL(ernic_parse_opcode("0x08"), 8);
	CU_ASSERT_EQUAL(ernic_parse_opcode("127"), 127);
	CU_ASSERT_EQUAL(ernic_parse_opcode("0xff"), 255);
	CU_ASSERT_EQUAL(ernic_parse_opcode("0"), 0);
	CU_ASSERT_EQUAL(ernic_parse_opcode("256"), -1);
	CU_ASSERT_EQUAL(ernic_parse_opcode("-1"), -1);
	CU_ASSERT_EQUAL(ernic_parse_opcode("0x8g"), -1);
	CU_ASSERT_EQUAL(ernic_parse_opcode("write"), -1);
	CU_ASSERT_EQUAL(ernic_parse_opcode(""), -1);
	CU_ASSERT_EQUAL(ernic_parse_opcode(NULL), -1);
}

/* fio's own parser read ernic_queues=-1 as a range and ran with the default: these are read here. */
static void test_whole_number_options_refuse_signs_ranges_and_suffixes(void)
{
	uint64_t v = 7;

	CU_ASSERT(ernic_parse_u64("64", 64, &v) == 0 && v == 64);
	CU_ASSERT(ernic_parse_u64("0", 64, &v) == 0 && v == 0);
	CU_ASSERT(ernic_parse_u64("010", 64, &v) == 0 && v == 10);
	CU_ASSERT(ernic_parse_u64("0x10", 64, &v) == 0 && v == 16);
	CU_ASSERT(ernic_parse_u64("4294967295", UINT32_MAX, &v) == 0 && v == UINT32_MAX);
	v = 7;
	CU_ASSERT_EQUAL(ernic_parse_u64("65", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("4294967296", UINT32_MAX, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("99999999999999999999", UINT64_MAX, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("-1", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("+1", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64(" 1", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("1-2", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("1k", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("0x", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("0x-1", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64("", 64, &v), -1);
	CU_ASSERT_EQUAL(ernic_parse_u64(NULL, 64, &v), -1);
	CU_ASSERT_EQUAL(v, 7);
}

static void test_dev_max_xfer_honours_the_host_limit_and_zero_means_no_limit(void)
{
	CU_ASSERT_EQUAL(ernic_dev_max_xfer(5, 4096, 0), 128u * 1024);
	CU_ASSERT_EQUAL(ernic_dev_max_xfer(5, 4096, 64 * 1024), 64u * 1024);
	CU_ASSERT_EQUAL(ernic_dev_max_xfer(0, 4096, 512 * 1024), 512u * 1024);
	CU_ASSERT_EQUAL(ernic_dev_max_xfer(0, 4096, 0), 1u << 30);
}

/* NLB is 16 bits, 0's based: a command names 65536 blocks at most, whatever MDTS allows. */
static void test_max_xfer_never_exceeds_65536_blocks_and_the_largest_nlb_encodes_as_ffff(void)
{
	struct ernic_cmd cmd = { .opc = NVME_CMD_WRITE_ZEROES, .nsid = 1, .nlb = ERNIC_CMD_MAX_NLB };
	struct nvme_sqe sqe;

	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(1u << 30, 9), 32u << 20);
	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(UINT32_MAX, 12), 256u << 20);
	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(128u << 10, 9), 128u << 10);
	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(32u << 20, 9), 32u << 20);
	/* 65536 blocks of 64 KiB is 4 GiB, past any 32-bit limit: the limit stands */
	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(UINT32_MAX, 16), UINT32_MAX);
	CU_ASSERT_EQUAL(ernic_cmd_max_xfer(ernic_dev_max_xfer(0, 4096, 0), 9), 32u << 20);
	ernic_cmd_sqe(&cmd, &sqe);
	CU_ASSERT_EQUAL(sqe.cdw12, 0xFFFF);
}

UT_MAIN("engine_cmd", UT_CASE(test_read_sqe_has_slba_split_over_cdw10_11_and_zero_based_nlb),
	UT_CASE(test_fua_write_sets_cdw12_bit_30_only),
	UT_CASE(test_dsm_is_one_deallocate_range_and_flush_has_no_fields),
	UT_CASE(test_uring_and_ioctl_commands_carry_the_same_sqe_fields_and_buffer),
	UT_CASE(test_passthru_result_decodes_status_dnr_and_errno),
	UT_CASE(test_block_device_maps_to_its_ng_twin_and_controller),
	UT_CASE(test_labels_partitions_and_controllers_are_not_namespaces),
	UT_CASE(test_opcode_values_decimal_or_hex_up_to_255),
	UT_CASE(test_whole_number_options_refuse_signs_ranges_and_suffixes),
	UT_CASE(test_dev_max_xfer_honours_the_host_limit_and_zero_means_no_limit),
	UT_CASE(test_max_xfer_never_exceeds_65536_blocks_and_the_largest_nlb_encodes_as_ffff))
