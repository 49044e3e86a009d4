# The per-stage latency suite (suites/lad/): 4 KiB random reads at queue depth
# 1 and 32 with 1 command in 1000 stamped at each stage by the emulator, and
# the table of loaded / baseline means per stage (LAD).
#
#   make lad        both runs, LAD_RUNTIME seconds each (default 15), the table,
#                   rows appended to results/lad.csv
#   make test-lad   the report's checks and a 1 s run of each (part of test-more)
#
# Include it after engine/engine.mk: test-lad needs FIO_BIN and ENGINE_SO.

LAD_RUNTIME ?= 15

.PHONY: lad test-lad
lad:
	ci/deps.sh build engine suites
	$(MAKE) all
	suites/lad/report --runtime $(LAD_RUNTIME)

test-more: test-lad
ifneq ($(FIO_BIN),)
test-lad: $(ENGINE_SO)
	suites/lad/test-report
else
test-lad:
	@echo "test-lad: fio is not installed, skipping the stage-latency checks (install it with: ci/deps.sh engine)"
endif
