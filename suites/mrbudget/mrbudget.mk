# The MR-budget suite (suites/mrbudget/run). Included from emulator/bench/bench.mk.
#
#   make test-mrbudget      the make-test subset; `make test` runs it through test-more
#   make mrbudget-nightly   everything: 1000 cycles in the plain and the ASan build, full bench

.PHONY: test-mrbudget mrbudget-nightly
test-more: test-mrbudget

# test-unit has already run mrbudget_ut in both builds by the time test-more
# runs, so the make-test pass leaves the unit step out here. The engine is
# built by `all` when fio is installed; without it the run says it skipped.
test-mrbudget: $(MR_COST)
	suites/mrbudget/run --fast --build $(BUILD) --skip unit

mrbudget-nightly: all
	$(MAKE) BUILD=build-san SAN=1 build-san/tests/mrbudget_ut
	suites/mrbudget/run --build $(BUILD) --san-build build-san --csv $(MRBENCH_CSV) $(if $(MRBENCH_ARGS),--bench-args "$(MRBENCH_ARGS)")
