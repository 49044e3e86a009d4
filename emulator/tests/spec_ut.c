/* SPDX-License-Identifier: MIT */
/*
 * spec_ut.c - the wire-format helpers of nvme_spec.h.
 *
 * Proves that a completion's status is read without the bits around it
 * (phase, CRD, More, DNR), that DNR is read on its own, and that an Error
 * Information log entry's status field reads the same way; that an SQE's data
 * direction comes from its opcode, or from the fctype of a Fabrics command.
 */
#include <string.h>

#include "ernic/nvme_spec.h"
#include "ut.h"

/* A CQE status word for @status with the phase tag, CRD, More and DNR as given. */
static uint16_t sf(uint16_t status, unsigned phase, unsigned crd, unsigned more, unsigned dnr)
{
	return (uint16_t)(phase | (unsigned)status << 1 | crd << 12 | more << 14 | dnr << 15);
}

static void test_cqe_status_drops_phase_crd_more_and_dnr(void)
{
	struct nvme_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.status = sf(NVME_SC_INVALID_FIELD, 1, 3, 1, 1);
	CU_ASSERT_EQUAL(nvme_cqe_status(&cqe), NVME_SC_INVALID_FIELD);
	CU_ASSERT_TRUE(nvme_cqe_dnr(&cqe));

	cqe.status = sf(NVME_SC_CONNECT_INVALID_HOST, 1, 0, 0, 1);
	CU_ASSERT_EQUAL(nvme_cqe_status(&cqe), 0x184);
	CU_ASSERT_EQUAL(NVME_STATUS_SCT(nvme_cqe_status(&cqe)), NVME_SCT_CMD_SPECIFIC);
}

static void test_cqe_status_of_a_success_with_the_phase_set_is_zero(void)
{
	struct nvme_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.status = sf(NVME_SC_SUCCESS, 1, 0, 0, 0);
	CU_ASSERT_EQUAL(nvme_cqe_status(&cqe), NVME_SC_SUCCESS);
	CU_ASSERT_FALSE(nvme_cqe_dnr(&cqe));
}

static void test_cqe_status_keeps_every_sct_and_sc_bit(void)
{
	struct nvme_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.status = sf(0x7FF, 0, 0, 0, 0);
	CU_ASSERT_EQUAL(nvme_cqe_status(&cqe), 0x7FF);
	CU_ASSERT_FALSE(nvme_cqe_dnr(&cqe));
	cqe.status = sf(0, 1, 3, 1, 1);
	CU_ASSERT_EQUAL(nvme_cqe_status(&cqe), 0);
	CU_ASSERT_TRUE(nvme_cqe_dnr(&cqe));
}

static void test_error_log_status_field_reads_as_the_cqe_status(void)
{
	struct nvme_error_log_entry e;

	memset(&e, 0, sizeof(e));
	e.status_field = sf(NVME_SC_LBA_RANGE, 0, 0, 0, 1);
	CU_ASSERT_EQUAL(nvme_sf_status(e.status_field), NVME_SC_LBA_RANGE);
	CU_ASSERT_TRUE(nvme_sf_dnr(e.status_field));
}

static enum nvme_data_dir dir_of(uint8_t opc, uint8_t fctype)
{
	struct nvme_sqe sqe;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = opc;
	((struct nvmf_fabrics_cmd *)&sqe)->fctype = fctype;
	return nvme_sqe_data_dir(&sqe);
}

static void test_sqe_data_dir_of_io_and_admin_commands_follows_the_opcode(void)
{
	/* A stray fctype byte (CDW1 of a non-Fabrics command) must not matter. */
	CU_ASSERT_EQUAL(dir_of(NVME_CMD_READ, NVMF_FCTYPE_CONNECT), NVME_DATA_CTRL_TO_HOST);
	CU_ASSERT_EQUAL(dir_of(NVME_CMD_WRITE, NVMF_FCTYPE_PROPERTY_GET), NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(dir_of(NVME_CMD_FLUSH, 3), NVME_DATA_NONE);
	CU_ASSERT_EQUAL(dir_of(NVME_CMD_DSM, 0), NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(dir_of(NVME_ADMIN_IDENTIFY, 0), NVME_DATA_CTRL_TO_HOST);
	CU_ASSERT_EQUAL(dir_of(NVME_ADMIN_GET_LOG_PAGE, 0), NVME_DATA_CTRL_TO_HOST);
	CU_ASSERT_EQUAL(dir_of(NVME_ADMIN_SET_FEATURES, 0), NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(dir_of(NVME_ADMIN_KEEP_ALIVE, 0), NVME_DATA_NONE);
}

static void test_sqe_data_dir_of_a_fabrics_command_follows_its_fctype(void)
{
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_CONNECT), NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_PROPERTY_GET), NVME_DATA_NONE);
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_PROPERTY_SET), NVME_DATA_NONE);
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_AUTH_SEND), NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_AUTH_RECV), NVME_DATA_CTRL_TO_HOST);
	CU_ASSERT_EQUAL(dir_of(NVME_FABRICS_COMMAND, NVMF_FCTYPE_DISCONNECT), NVME_DATA_NONE);
}

/* IPO in bits 15:0, IATTR in 23:16: a host reading the Connect data's SUBNQN offset (256) finds 256, not 1. */
static void test_connect_invalid_param_dw0_puts_ipo_low_and_iattr_in_bits_23_16(void)
{
	uint32_t dw0 = NVMF_CONNECT_INVALID_PARAM_DW0(NVMF_CONNECT_IATTR_DATA, 256);

	CU_ASSERT_EQUAL(dw0 & 0xFFFF, 256);
	CU_ASSERT_EQUAL((dw0 >> 16) & 0xFF, NVMF_CONNECT_IATTR_DATA);
	CU_ASSERT_EQUAL(dw0 >> 24, 0);
	CU_ASSERT_EQUAL(NVMF_CONNECT_INVALID_PARAM_DW0(NVMF_CONNECT_IATTR_CMD, 44), 44);
}

UT_MAIN("spec", UT_CASE(test_connect_invalid_param_dw0_puts_ipo_low_and_iattr_in_bits_23_16), UT_CASE(test_cqe_status_drops_phase_crd_more_and_dnr),
	UT_CASE(test_cqe_status_of_a_success_with_the_phase_set_is_zero),
	UT_CASE(test_cqe_status_keeps_every_sct_and_sc_bit), UT_CASE(test_error_log_status_field_reads_as_the_cqe_status),
	UT_CASE(test_sqe_data_dir_of_io_and_admin_commands_follows_the_opcode),
	UT_CASE(test_sqe_data_dir_of_a_fabrics_command_follows_its_fctype))
