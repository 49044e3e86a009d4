# The blktests lane: blktests' nvme group (nvme_trtype=tcp) against the kernel's nvmet-tcp and ernicd in one
# QEMU guest, with a table test | nvmet-tcp | ernicd and the reason for every test that did not pass.
# See ci/blktests/run.sh.
#
#   make blktests                 the whole nvme group, both targets in one boot (46 min under TCG on
#                                 2 cores: the nightly runs it)
#   make blktests BLKTESTS_RUN="nvme/004 nvme/029"   only these
#   make blktests BLKT_TARGETS=nvmet, then BLKT_TARGETS=ernicd   one target per boot (half the time each, the
#                                 second run's table has both columns); BLKT_TABLE_WITH="LOG..." joins earlier
#                                 boots' logs to the table, BLKT_PER_TEST=S limits each test (ci/blktests/run.sh)
#   BLKTESTS=DIR                  an upstream blktests checkout (default ../shared/blktests beside the repository,
#                                 which ci/blktests/fetch-upstream fills on a machine without one);
#                                 without one, `make blktests` fails saying so in one line, while `make test`
#                                 and the nightly (BLKTESTS_MISSING=skip) report SKIP in one line and go on
#
# `make test` runs the short subset BLKTESTS_QUICK, quick tests that pass on both targets, and fails if one that
# passes on nvmet-tcp does not on ernicd.

# ../shared/blktests beside the main checkout (a worktree's common git directory tells where that is).
BLKTESTS_HOME := $(shell git rev-parse --path-format=absolute --git-common-dir 2>/dev/null | sed 's|/\.git$$||')
BLKTESTS ?= $(or $(BLKTESTS_HOME),$(CURDIR))/../shared/blktests
BLKTESTS_RUN ?= nvme
BLKTESTS_QUICK ?= nvme/004 nvme/025 nvme/029
BLKTESTS_ERNICD := $(if $(wildcard emulator/ernicd/ernicd.c),$(BUILD)/ernicd $(BUILD)/ernicctl)

.PHONY: blktests test-blktests
blktests:
	ci/deps.sh lane blktests $(if $(BLKTESTS_ERNICD),build)
	$(if $(BLKTESTS_ERNICD)$(LOAD_TOOL),$(MAKE) $(BLKTESTS_ERNICD) $(LOAD_TOOL))
	BLKTESTS="$(BLKTESTS)" BLKT_GATE="$(BLKT_GATE)" BLKTESTS_MISSING="$(BLKTESTS_MISSING)" ERNICD="$(abspath $(BUILD)/ernicd)" ERNICCTL="$(abspath $(BUILD)/ernicctl)" LOAD_TOOL="$(abspath $(BUILD)/nvmf_tcp_load)" \
		ci/blktests/run.sh $(BLKTESTS_RUN)

# A guest lane: after every quick check (test-slow). A clone without the snapshot beside it says so in
# one line and skips rather than failing every other check's verdict with it.
test-slow: test-blktests
test-blktests:
	$(MAKE) blktests BLKTESTS_RUN="$(BLKTESTS_QUICK)" BLKT_GATE=1 BLKTESTS_MISSING=skip
