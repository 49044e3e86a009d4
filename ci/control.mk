# The control plane end to end: ernicd --control driven by ernicctl (ci/test-control), in make test.
#
#   make test-control    every ernicctl command, its refusals, --config, on loopback

.PHONY: test-control
test-more: test-control
test-control: $(BUILD)/ernicd $(BUILD)/ernicctl $(TCP_BENCH)
	ci/deps.sh control
	BUILD=$(BUILD) ci/test-control
