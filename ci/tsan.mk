# ThreadSanitizer: libernic and the CUnit programs that run threads (in-process
# pollers and rings, NVMe/TCP connection threads, the trace writer, MR-table cycles, faulted
# namespaces under two pollers, the I/O Connect racing an admin queue close, namespaces
# and subsystems removed under a write loop) built with
# clang -fsanitize=thread into $(TSAN_BUILD), run with any report fatal.
#
#   make test-tsan       (in test-more) zero reports, or it fails
#
# A suppression goes in ci/tsan.supp only with the reason written beside it.

TSAN_CC    ?= clang-14
TSAN_BUILD ?= build-tsan
TSAN_UT    := inproc_ut tcp_ut trace_ut mrbudget_ut stages_ut rdma_ut io_ut storage_ut ctrlr_ut nvmf_ut
TSAN_BINS  := $(patsubst emulator/tests/%.c,$(TSAN_BUILD)/tests/%,\
	$(filter $(TSAN_UT:%=emulator/tests/%.c),$(wildcard emulator/tests/*_ut.c)))
# The path in single quotes: the sanitizers split their options at commas too.
TSAN_ENV   := TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions='$(abspath ci/tsan.supp)'"

.PHONY: test-tsan tsan-bins
test-more: test-tsan

# The tests' own rules (emulator.mk), with clang and -fsanitize=thread.
tsan-bins:
	$(MAKE) BUILD=$(TSAN_BUILD) CC=$(TSAN_CC) SAN= CFLAGS="-O1 -fsanitize=thread" \
		LDFLAGS_SAN=-fsanitize=thread $(TSAN_BINS)

test-tsan: deps-fuzz tsan-bins
	@set -e; for t in $(TSAN_BINS); do echo "== tsan $$t"; $(TSAN_ENV) $$t; done
