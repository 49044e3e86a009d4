/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mr_sgl.c - the memory-region table and keyed SGLs against a model.
 *
 * The input is a sequence of operations (alloc, destroy, fast_reg over one of
 * a few heap buffers with any access bits, invalidate, resolve, map a keyed
 * SGL, send with invalidate) on a small table shared by two protection
 * domains, each access made from one of them. A shadow copy of every entry
 * predicts each result; every pointer handed out must lie inside the region
 * its rkey names, with the access asked for, and is written through so ASan
 * sees any that leaves the buffer behind it.
 */
#include "fuzz.h"
#include "rdma.h"

#define FUZZ_MAX_MR 64
#define FUZZ_NR_BUFS 4
#define FUZZ_OP_LEN 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct shadow_mr {
	bool allocated, valid;
	uint8_t key;
	uint32_t pd;
	uint8_t *addr;
	uint64_t len;
	uint32_t access;
};

static struct {
	struct ernic_mr_table *tbl;
	uint32_t pd[2]; /* two host queue pairs' domains */
	struct shadow_mr mr[FUZZ_MAX_MR];
	uint8_t *buf[FUZZ_NR_BUFS];
	uint32_t buf_len[FUZZ_NR_BUFS];
	uint32_t nr_allocated;
} fx;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fuzz_mr_sgl: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An rkey: the live one of entry op[1] (op[2] odd), or a stale or arbitrary one built from the bytes. */
static uint32_t op_rkey(const uint8_t *op)
{
	uint32_t idx = op[1] % (FUZZ_MAX_MR + 2); /* a few past the table's end */
	uint8_t key = op[2] & 1 && idx < FUZZ_MAX_MR ? fx.mr[idx].key : op[3];

	return ERNIC_RKEY(idx, key);
}

/* The domain an access is made from: one of the two, chosen by op[7]. */
static uint32_t op_pd(const uint8_t *op)
{
	return fx.pd[op[7] & 1];
}

/* Is the model's entry for @rkey live in @pd with a matching key, and [p, p+len) inside it with @access? */
static bool model_allows(uint32_t pd, uint32_t rkey, uint64_t addr, uint32_t len, uint32_t access)
{
	uint32_t idx = ERNIC_RKEY_INDEX(rkey);
	const struct shadow_mr *m;
	uintptr_t base;

	if (idx >= FUZZ_MAX_MR)
		return false;
	m = &fx.mr[idx];
	if (!m->allocated || !m->valid || m->key != ERNIC_RKEY_KEY(rkey) || m->pd != pd)
		return false;
	base = (uintptr_t)m->addr;
	return addr >= base && addr - base <= m->len && len <= m->len - (addr - base) && !(access & ~m->access);
}

/* Any pointer the table gives out is inside a registered buffer: touch every byte. */
static void touch(void *p, uint32_t len)
{
	memset(p, 0x5a, len);
}

/* An address near the live region of entry op[1]: its base plus a signed delta. */
static uint64_t op_addr(const uint8_t *op)
{
	const struct shadow_mr *m = &fx.mr[op[1] % FUZZ_MAX_MR];

	return (uint64_t)(uintptr_t)m->addr + (uint64_t)(int64_t)(int16_t)(op[4] | op[5] << 8);
}

static void op_alloc(const uint8_t *op)
{
	uint32_t h;
	int rc = ernic_mr_alloc(fx.tbl, op_pd(op), &h);

	CHECK((rc == -ENOSPC) == (fx.nr_allocated == FUZZ_MAX_MR));
	if (rc)
		return;
	CHECK(h < FUZZ_MAX_MR && !fx.mr[h].allocated);
	fx.mr[h].allocated = true;
	fx.mr[h].valid = false;
	fx.mr[h].pd = op_pd(op);
	fx.nr_allocated++;
}

static void op_destroy(const uint8_t *op)
{
	uint32_t h = op[1] % (FUZZ_MAX_MR + 2);
	bool known = h < FUZZ_MAX_MR && fx.mr[h].allocated;
	int rc = ernic_mr_destroy(fx.tbl, h);

	CHECK(known ? rc == 0 : rc == -ENOENT);
	if (known) {
		fx.mr[h].allocated = fx.mr[h].valid = false;
		fx.nr_allocated--;
	}
}

static void op_fast_reg(const uint8_t *op)
{
	uint32_t h = op[1] % (FUZZ_MAX_MR + 2), b = op[2] % FUZZ_NR_BUFS, rkey = 0;
	uint32_t off = le32(op + 4) % (fx.buf_len[b] + 1);
	uint32_t len = le32(op + 8) % (fx.buf_len[b] - off + 1);
	uint32_t access = op[3] & 0x0f; /* bit 3 is no access right: refused */
	int rc = ernic_mr_fast_reg(fx.tbl, h, fx.buf[b] + off, len, access, &rkey);
	struct shadow_mr *m;

	if (h >= FUZZ_MAX_MR || !fx.mr[h].allocated) {
		CHECK(rc == -ENOENT);
		return;
	}
	m = &fx.mr[h];
	if (m->valid) {
		CHECK(rc == -EBUSY);
		return;
	}
	if (access & ~(uint32_t)(ERNIC_MR_LOCAL_WRITE | ERNIC_MR_REMOTE_WRITE | ERNIC_MR_REMOTE_READ)) {
		CHECK(rc == -EINVAL);
		return;
	}
	CHECK(rc == 0 && ERNIC_RKEY_INDEX(rkey) == h && ERNIC_RKEY_KEY(rkey) != m->key);
	m->valid = true;
	m->key = ERNIC_RKEY_KEY(rkey);
	m->addr = fx.buf[b] + off;
	m->len = len;
	m->access = access;
}

static void op_invalidate(const uint8_t *op)
{
	uint32_t rkey = op_rkey(op), idx = ERNIC_RKEY_INDEX(rkey);
	bool live = idx < FUZZ_MAX_MR && fx.mr[idx].allocated && fx.mr[idx].valid &&
		    fx.mr[idx].key == ERNIC_RKEY_KEY(rkey) && fx.mr[idx].pd == op_pd(op);
	int rc = ernic_mr_invalidate(fx.tbl, op_pd(op), rkey);

	CHECK(live ? rc == 0 : rc != 0);
	if (live)
		fx.mr[idx].valid = false;
}

static void op_resolve(const uint8_t *op)
{
	uint32_t rkey = op_rkey(op), len = le32(op + 8) % 70000, access = op[6] & 7;
	uint64_t addr = op_addr(op);
	void *p = NULL;
	int rc = ernic_mr_resolve(fx.tbl, op_pd(op), rkey, addr, len, access, &p);

	CHECK((rc == 0) == model_allows(op_pd(op), rkey, addr, len, access));
	if (rc == 0) {
		CHECK((uint64_t)(uintptr_t)p == addr);
		touch(p, len);
	}
}

/* A keyed SGL with any id byte and length, over the live region of op[1] or anywhere. */
static void op_map_sgl(const uint8_t *op, bool invalidate_after)
{
	static const uint32_t dir_access[] = {
		[NVME_DATA_NONE] = ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE,
		[NVME_DATA_HOST_TO_CTRL] = ERNIC_MR_REMOTE_READ,
		[NVME_DATA_CTRL_TO_HOST] = ERNIC_MR_REMOTE_WRITE,
		[NVME_DATA_BIDIR] = ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE,
	};
	enum nvme_data_dir dir = (enum nvme_data_dir)(op[6] & 3);
	uint32_t rkey = op_rkey(op), len = le32(op + 8) % 70000, sgl_len = len + (op[12] & 3) - 1;
	struct nvme_sgl_desc sgl;
	uint8_t id = op[13];
	bool keyed = NVME_SGL_ID_TYPE(id) == NVME_SGL_TYPE_KEYED_DATA_BLOCK &&
		     (NVME_SGL_ID_SUBTYPE(id) == NVME_SGL_SUBTYPE_ADDRESS ||
		      NVME_SGL_ID_SUBTYPE(id) == NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	void *p = NULL;
	uint16_t status;

	nvme_keyed_sgl_set(&sgl, op_addr(op), sgl_len & NVME_KEYED_SGL_MAX_LEN, rkey, 0);
	sgl.id = id;
	status = ernic_rdma_map_keyed_sgl(fx.tbl, op_pd(op), &sgl, len, dir, &p);
	if (status == NVME_SC_SUCCESS) {
		CHECK(keyed && nvme_keyed_sgl_len(&sgl) >= len);
		CHECK(model_allows(op_pd(op), rkey, sgl.addr, len, dir_access[dir]));
		touch(p, len);
	} else if (keyed && nvme_keyed_sgl_len(&sgl) >= len) {
		CHECK(status == NVME_SC_DATA_XFER_ERROR &&
		      !model_allows(op_pd(op), rkey, sgl.addr, len, dir_access[dir]));
	}
	if (invalidate_after) {
		uint32_t idx = ERNIC_RKEY_INDEX(rkey);
		bool want = NVME_SGL_ID_TYPE(id) == NVME_SGL_TYPE_KEYED_DATA_BLOCK &&
			    NVME_SGL_ID_SUBTYPE(id) == NVME_SGL_SUBTYPE_INVALIDATE_KEY && nvme_keyed_sgl_len(&sgl) &&
			    idx < FUZZ_MAX_MR && fx.mr[idx].allocated && fx.mr[idx].valid &&
			    fx.mr[idx].key == ERNIC_RKEY_KEY(rkey) && fx.mr[idx].pd == op_pd(op);

		CHECK(ernic_rdma_send_with_invalidate(fx.tbl, op_pd(op), &sgl) == want);
		if (want)
			fx.mr[idx].valid = false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t buf_len[FUZZ_NR_BUFS] = { 1, 512, 4096, 65536 };

	memset(&fx, 0, sizeof(fx));
	fx.tbl = ernic_mr_table_create(FUZZ_MAX_MR);
	if (!fx.tbl)
		abort();
	fx.pd[0] = ernic_mr_pd_alloc(fx.tbl);
	fx.pd[1] = ernic_mr_pd_alloc(fx.tbl);
	CHECK(fx.pd[0] && fx.pd[1] && fx.pd[0] != fx.pd[1]);
	for (int i = 0; i < FUZZ_NR_BUFS; i++) {
		fx.buf_len[i] = buf_len[i];
		fx.buf[i] = malloc(buf_len[i]);
		if (!fx.buf[i])
			abort();
	}
	for (; size >= FUZZ_OP_LEN; data += FUZZ_OP_LEN, size -= FUZZ_OP_LEN) {
		switch (data[0] % 7) {
		case 0:
			op_alloc(data);
			break;
		case 1:
			op_destroy(data);
			break;
		case 2:
			op_fast_reg(data);
			break;
		case 3:
			op_invalidate(data);
			break;
		case 4:
			op_resolve(data);
			break;
		case 5:
			op_map_sgl(data, false);
			break;
		case 6:
			op_map_sgl(data, true);
			break;
		}
	}
	ernic_mr_table_destroy(fx.tbl);
	for (int i = 0; i < FUZZ_NR_BUFS; i++)
		free(fx.buf[i]);
	return 0;
}
