# The control plane end to end: ernicd --control driven by ernicctl (ci/test-control), and ernicd's own command
# line (ci/test-ernicd-options), in make test.
#
#   make test-control    every ernicctl command, its refusals, --config, on loopback; every ernicd option's
#                        refusals, and what a refused start leaves behind

.PHONY: test-control
test-more: test-control
test-control: $(BUILD)/ernicd $(BUILD)/ernicctl $(TCP_BENCH)
	ci/deps.sh control
	BUILD=$(BUILD) ci/test-control
	BUILD=$(BUILD) ci/test-ernicd-options
