# ernic - NVMe over Fabrics benchmark and conformance suite.
#
#   make             build libernic, ernicd, the tests and (with fio present) the fio engine;
#                    without the Debian packages it needs, it names them and stops: run make deps
#   make test        install what is missing, build, run every test, then again under ASan+UBSan
#   make bench       run every fio suite on the embedded default and print the tables
#
# Each part of the tree adds its targets from its own fragment (*.mk).

CC       ?= gcc
BUILD    ?= build
SAN      ?=
CFLAGS_BASE := -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-missing-field-initializers
ifeq ($(SAN),1)
CFLAGS_BASE += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS_SAN := -fsanitize=address,undefined
endif
CPPFLAGS += -Iemulator/include -Iemulator/src
# The MR table size the build defaults to (the backend string's max_mr overrides it per run).
ifdef ERNIC_MAX_MR
CPPFLAGS += -DERNIC_MAX_MR=$(ERNIC_MAX_MR)
endif
LDLIBS   += -lpthread

.PHONY: all test test-unit deps clean
all:

# On a machine without the build's Debian packages, stop with one line naming them and the command that installs
# them, rather than with the compiler's first missing header. Goals that install what they need first (make test,
# make bench, ...) run `make all` again afterwards, where this check passes.
BUILD_DEPS     := isa-l/crc.h:libisal-dev CUnit/Basic.h:libcunit1-dev
INSTALL_GOALS  := deps deps-fuzz clean clean-fuzz test bench bench-long bench-compare lad lane test-lane test-playbooks \
                  blktests test-blktests fuzz report test-regress test-report test-workflows
ifneq ($(filter-out $(INSTALL_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(shell command -v $(CC) 2>/dev/null),)
$(error ernic: no C compiler '$(CC)': missing Debian packages: gcc libc6-dev; run: make deps (or ci/deps.sh build))
endif
MISSING_DEBS := $(strip $(foreach d,$(BUILD_DEPS),$(if $(shell printf '\043include <%s>\n' $(firstword $(subst :, ,$(d))) | \
	$(CC) -E -x c - >/dev/null 2>&1 || echo no),$(lastword $(subst :, ,$(d))))))
ifneq ($(MISSING_DEBS),)
$(error ernic: missing Debian packages: $(MISSING_DEBS); run: make deps (or ci/deps.sh build))
endif
endif

include emulator/emulator.mk
-include emulator/bench/bench.mk
-include emulator/tools/tools.mk
-include engine/engine.mk
-include suites/lad/lad.mk
-include playbooks/playbooks.mk
-include suites/suites.mk
-include $(wildcard ci/*.mk)
-include emulator/fuzz/fuzz.mk

# `make test`: the README's test command. Installs missing Debian packages first.
# Each phase prints its time since the start, so the 20-minute budget has a breakdown;
# ci/tree-check fails the run if a test left a file in the checkout or changed a tracked one (the lane's
# LANE_CSV_DIR is where a caller asked for rows: ci/nightly's results/). Under `make -j test` only the builds
# run in parallel: the checks after them start ernicd and guests that share ports, build/lane and both CPUs.
TEST_T0 := $(shell date +%s)
test_phase_done = @echo "== make test: $(1) done at $$(( $$(date +%s) - $(TEST_T0) )) s"
test: deps
	@ci/tree-check snapshot $(BUILD)
	$(MAKE) all
	$(call test_phase_done,build)
	$(MAKE) test-unit
	$(call test_phase_done,unit tests)
	$(MAKE) BUILD=build-san SAN=1 test-unit
	$(call test_phase_done,unit tests under ASan+UBSan)
	$(MAKE) -j1 test-more
	$(call test_phase_done,test-more)
	$(MAKE) -j1 test-slow
	$(call test_phase_done,test-slow)
	@ci/tree-check check $(BUILD) $(LANE_CSV_DIR)

deps:
	ci/deps.sh build engine suites

clean:
	rm -rf build build-san

# Fragments add their own checks as prerequisites of test-more, and the QEMU guest lanes
# (minutes each) as prerequisites of test-slow, which make test runs last.
.PHONY: test-more test-slow
test-more:
test-slow:
