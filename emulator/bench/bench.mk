# Benchmarks of libernic itself (not fio suites): built with `make`, run by hand
# or by the nightly. None of them decides a build's outcome.
#
#   make mrbench                 per-I/O cost against a 90%-full MR table of
#                                256..65536 entries; rows to results/mrbudget.csv
#   make mrbench MRBENCH_ARGS="--rounds 3 --seconds 0.5"

MR_COST      := $(BUILD)/bench/mr_cost
MRBENCH_ARGS ?=
MRBENCH_CSV  ?= results/mrbudget.csv
# The commit column and the CSV header as every results script writes them (suites/lib.sh).
MRBENCH_COMMIT = $(shell bash -c '. suites/lib.sh && ernic_commit')

all: $(MR_COST)

$(MR_COST): emulator/bench/mr_cost.c $(wildcard emulator/src/*.h emulator/include/ernic/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)

.PHONY: mrbench
mrbench: $(MR_COST)
	@mkdir -p $(dir $(MRBENCH_CSV))
	bash -c '. suites/lib.sh && csv_ready $(MRBENCH_CSV) mrbudget'
	$(MR_COST) --csv $(MRBENCH_CSV) --commit $(MRBENCH_COMMIT) $(MRBENCH_ARGS)

-include suites/mrbudget/mrbudget.mk
