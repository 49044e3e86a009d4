# ernic - NVMe over Fabrics benchmark and conformance suite.
#
#   make             build libernic, ernicd, the tests and (with fio present) the fio engine
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
test: deps
	$(MAKE) all
	$(MAKE) test-unit
	$(MAKE) BUILD=build-san SAN=1 test-unit
	$(MAKE) test-more

deps:
	ci/deps.sh build engine suites

clean:
	rm -rf build build-san

# Fragments add their own checks as prerequisites of test-more.
.PHONY: test-more
test-more:
