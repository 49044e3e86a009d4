# libFuzzer targets (clang-14, ASan+UBSan), each with a committed seed corpus
# under emulator/fuzz/corpus/<target>/ and saved crash inputs under
# emulator/fuzz/crashes/<target>/ that are replayed as regression tests.
#
#   make fuzz            fuzz every target for FUZZ_SECONDS (default 60); print executions and edges
#   make test-fuzz       replay the saved crashes, fuzz each target FUZZ_TEST_SECONDS (default 20),
#                        and check that gen_corpus still writes the committed seeds
#   make fuzz-corpus     rewrite the committed seeds with gen_corpus
#
# libernic is built again with clang into $(FUZZ_BUILD) (instrumented for coverage, not linked
# with libFuzzer's main); the corpus each run grows stays under $(BUILD)/fuzz/<target>/.

FUZZ_CC           ?= clang-14
FUZZ_BUILD        ?= build-fuzz
FUZZ_SECONDS      ?= 60
FUZZ_TEST_SECONDS ?= 20
FUZZ_TARGETS      := $(patsubst emulator/fuzz/%.c,%,$(wildcard emulator/fuzz/fuzz_*.c))
FUZZ_BINS         := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/%)
FUZZ_LIB          := $(FUZZ_BUILD)/libernic.a
FUZZ_SAN          := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_GEN          := $(BUILD)/fuzz/gen_corpus

.PHONY: fuzz test-fuzz fuzz-bins fuzz-corpus fuzz-corpus-check deps-fuzz clean-fuzz
deps: deps-fuzz
deps-fuzz:
	ci/deps.sh fuzz

# The library's own rules (emulator.mk), with clang and the coverage instrumentation.
ifneq ($(BUILD),$(FUZZ_BUILD))
$(FUZZ_LIB): $(wildcard emulator/src/*.c emulator/src/*.h emulator/include/ernic/*.h)
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) SAN= CFLAGS="-O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)" $@
endif

$(FUZZ_BUILD)/fuzz/%: emulator/fuzz/%.c emulator/fuzz/fuzz.h $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS_BASE) -O1 -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_LIB) -lisal -lpthread

fuzz-bins: $(FUZZ_BINS)

# Run every target even after one fails, then fail. A libFuzzer run is one thread: the targets run
# side by side, one per CPU, each into its own log, printed in order when all are done.
define fuzz_run_all
	@mkdir -p $(BUILD)/fuzz; rc=0; \
	printf '%s\n' $(FUZZ_TARGETS) | xargs -P "$$(nproc)" -I{} sh -c 'emulator/fuzz/run.sh $(FUZZ_BUILD)/fuzz/{} \
		$(1) $(BUILD)/fuzz/{} emulator/fuzz/corpus/{} emulator/fuzz/crashes/{} >$(BUILD)/fuzz/{}.out 2>&1' || rc=1; \
	for t in $(FUZZ_TARGETS); do cat $(BUILD)/fuzz/$$t.out; done; exit $$rc
endef

fuzz: deps fuzz-bins
	$(call fuzz_run_all,$(FUZZ_SECONDS))

test-more: test-fuzz
test-fuzz: deps-fuzz fuzz-bins fuzz-corpus-check
	$(call fuzz_run_all,$(FUZZ_TEST_SECONDS))

$(FUZZ_GEN): emulator/fuzz/gen_corpus.c emulator/fuzz/fuzz.h $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iemulator/fuzz $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)

fuzz-corpus: $(FUZZ_GEN)
	$(FUZZ_GEN) emulator/fuzz/corpus

fuzz-corpus-check: $(FUZZ_GEN)
	@rm -rf $(BUILD)/fuzz/seeds && $(FUZZ_GEN) $(BUILD)/fuzz/seeds
	@diff -r $(BUILD)/fuzz/seeds emulator/fuzz/corpus >/dev/null || \
		{ echo "emulator/fuzz/corpus differs from what gen_corpus writes: make fuzz-corpus"; exit 1; }

clean: clean-fuzz
clean-fuzz:
	rm -rf $(FUZZ_BUILD)
