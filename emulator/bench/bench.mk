# Benchmarks of libernic itself (not fio suites): built with `make`, run by hand
# or by the nightly. None of them decides a build's outcome.
#
#   make mrbench                 per-I/O cost against a 90%-full MR table of
#                                256..65536 entries; rows to results/mrbudget.csv
#   make mrbench MRBENCH_ARGS="--rounds 3 --seconds 0.5"

MR_COST      := $(BUILD)/bench/mr_cost
MRBENCH_ARGS ?=
MRBENCH_CSV  ?= results/mrbudget.csv
# The commit column as results/README.md defines it: short=12, -dirty, ERNIC_COMMIT overrides.
MRBENCH_COMMIT = $(or $(ERNIC_COMMIT),$(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && \
	{ git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c-dirty; } || echo unknown))

all: $(MR_COST)

$(MR_COST): emulator/bench/mr_cost.c $(wildcard emulator/src/*.h emulator/include/ernic/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)

.PHONY: mrbench
mrbench: $(MR_COST)
	$(MR_COST) --csv $(MRBENCH_CSV) --commit $(MRBENCH_COMMIT) $(MRBENCH_ARGS)

-include suites/mrbudget/mrbudget.mk
