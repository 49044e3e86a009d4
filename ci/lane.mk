# The /dev/nvme lane: the Linux NVMe/TCP initiator (nvme-tcp, nvme-cli, fio on /dev/nvme0n1) in a QEMU guest,
# against the kernel's nvmet-tcp target and, when ernicd is built, against ernicd. See ci/lane/run.sh.
#
#   make lane     install the lane's packages, build ernicd (when its source is there), run the lane

LANE_ERNICD := $(if $(wildcard emulator/src/ernicd.c),$(BUILD)/ernicd)

.PHONY: lane
lane:
	ci/deps.sh lane $(if $(LANE_ERNICD),build)
	$(if $(LANE_ERNICD),$(MAKE) $(LANE_ERNICD))
	ERNICD=$(abspath $(BUILD)/ernicd) ci/lane/run.sh
