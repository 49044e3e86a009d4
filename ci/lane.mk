# The /dev/nvme lane: the Linux NVMe/TCP initiator (nvme-tcp, nvme-cli, fio on /dev/nvme0n1) in a QEMU guest,
# against the kernel's nvmet-tcp target and, when ernicd is built, against ernicd. See ci/lane/run.sh.
# The guest runs the same suites/run cases on /dev/nvme0n1 against both targets; a passing lane appends their
# rows to results/<suite>.csv and the ernicd / nvmet-tcp IOPS ratios to results/lane-ratio.csv.
#
#   make lane     install the lane's packages, build ernicd (when its source is there), run the lane
#                 (LANE_RUNTIME=S seconds per time-based case, default 1; LANE_TIMEOUT=S QEMU's limit, default 900;
#                 LANE_SILENCE_S=S stops QEMU after S s of a silent console, default 300;
#                 LANE_SKIP=nvmet,ernicd,faults,lad,rdma,passthru,ctl leaves phases out; LANE_ROUNDS=N runs the suite cases N times
#                 per target and takes the ratios of the medians: 1 here, 3 in ci/nightly)

LANE_ERNICD := $(if $(wildcard emulator/ernicd/ernicd.c),$(BUILD)/ernicd)
LANE_ERNICCTL := $(if $(wildcard emulator/ernicctl/ernicctl.c),$(BUILD)/ernicctl)

.PHONY: lane
lane:
	ci/deps.sh lane $(if $(LANE_ERNICD),build) engine
	$(if $(LANE_ERNICD)$(LOAD_TOOL)$(RDMA_SGL_TOOL),$(MAKE) $(LANE_ERNICD) $(LANE_ERNICCTL) $(LOAD_TOOL) $(RDMA_SGL_TOOL))
	$(MAKE) engine
	$(LANE_RUN) || { rc=$$?; [ $$rc -eq 3 ] || exit $$rc; \
		echo "lane: the guest's kernel died with no verdict (its last lines above): one more boot"; $(LANE_RUN); }

# Exit status 3: the guest's kernel died before any verdict (ci/lane/run.sh). QEMU's TCG can lock a guest whose
# kernel patches text another vCPU runs (results/NOTEBOOK.md, "A guest locked by text patching"), as the lad
# phase's tracefs writes do: one more boot then, and a second death fails.
LANE_RUN = ERNICD="$(abspath $(BUILD)/ernicd)" ERNICCTL="$(abspath $(BUILD)/ernicctl)" \
	LOAD_TOOL="$(abspath $(BUILD)/nvmf_tcp_load)" RDMA_SGL_TOOL="$(abspath $(BUILD)/nvmf_rdma_sgl)" \
	ENGINE_SO="$(abspath $(BUILD)/ernic-fio.so)" ci/lane/run.sh

# `make test` runs the lane last, after every check of test-more (the QEMU guest is the slow part:
# a quick check that fails should say so first). Its rows stay under build/ unless LANE_CSV_DIR says
# otherwise (ci/nightly points it at results/ to keep the trend).
.PHONY: test-lane
test-slow: test-lane
#
# make test runs every phase (ci/nightly as well, with LANE_ROUNDS=3); a caller's LANE_SKIP still leaves
# phases out. The passthru phase takes about 90 s of guest time under TCG, the ctl phase about 5 s in one boot
# with the others.
LANE_TEST_SKIP = $(if $(filter undefined,$(origin LANE_SKIP)),,$(LANE_SKIP))
test-lane:
	$(MAKE) lane LANE_CSV_DIR="$(or $(LANE_CSV_DIR),$(abspath $(BUILD))/lane/csv)" LANE_SKIP="$(LANE_TEST_SKIP)"
