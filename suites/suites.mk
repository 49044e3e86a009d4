# The fio suites: job files under suites/<suite>/, run by suites/run.
#
#   make bench           every suite of "all" (suites/run --help lists them) on
#                        the embedded default (RAM namespace, queues=4),
#                        ERNIC_RUNTIME seconds per time-based case (default 2),
#                        then their tables
#   make bench-long      the same at 15 s per case, as the published figures
#   make bench-compare   ernic against fio's mmap (in-memory copy) and null
#                        engines, medians of 3 runs, with the targets
#   make test-suites     the runner writes a well-formed CSV row, and runs one
#                        case on two local fio servers through --clients
#                        (part of test-more)

ERNIC_RUNTIME ?= 2

.PHONY: bench bench-long bench-compare test-suites
bench:
	ci/deps.sh build engine suites
	$(MAKE) all
	suites/run all --runtime $(ERNIC_RUNTIME)

bench-long:
	$(MAKE) bench ERNIC_RUNTIME=15

bench-compare:
	ci/deps.sh build engine suites
	$(MAKE) all
	suites/compare-engines --runtime $(ERNIC_RUNTIME)

test-more: test-suites
test-suites:
	ci/deps.sh suites
	$(MAKE) all
	suites/test-run
	suites/test-clients
