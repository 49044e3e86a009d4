# The fio external engine, build/ernic-fio.so, and its tests.
#
# fio ships no headers, so the engine compiles against the source of exactly
# the installed fio (engine/fio-src.sh fetches and configures it once and
# keeps it under $(BUILD)/fio-src). config-host.h must be force-included:
# it decides the layout of thread_data and io_u.

FIO_BIN       := $(shell command -v fio 2>/dev/null)
FIO_SRC       := $(BUILD)/fio-src
FIO_SRC_STAMP := $(FIO_SRC)/.ernic-fio-version
ENGINE_SO     := $(BUILD)/ernic-fio.so
ENGINE_OBJ    := $(BUILD)/engine/ernic.o

# fio's own build flags for engines; no sanitizers: the .so is loaded into
# an uninstrumented fio. fio's headers leave parameters unused in static
# inlines (debug.h, os-linux.h, arch-x86-common.h), hence the one -Wno- flag.
ENGINE_CFLAGS := -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-unused-parameter \
	-include $(FIO_SRC)/config-host.h -I$(FIO_SRC) -Iemulator/include

.PHONY: engine test-engine
ifneq ($(FIO_BIN),)
all: $(ENGINE_SO)
engine: $(ENGINE_SO)
else
all: engine
engine:
	@echo "engine: fio is not installed, skipping $(ENGINE_SO) (install it with: ci/deps.sh engine)"
endif

# Rerun when fio is upgraded; the script itself is a no-op while its stamp matches.
$(FIO_SRC_STAMP): engine/fio-src.sh $(FIO_BIN)
	engine/fio-src.sh $(FIO_SRC)
	@touch $@

$(ENGINE_OBJ): engine/ernic.c engine/ernic_cmd.h $(FIO_SRC_STAMP) $(wildcard emulator/include/ernic/*.h) emulator/src/json.h
	@mkdir -p $(dir $@)
	$(CC) $(ENGINE_CFLAGS) -c -o $@ $<

# The whole of libernic goes in. Only `ioengine` is exported: the engine's and
# libernic's own symbols must bind inside the .so, never to a same-named
# symbol of the fio binary. fio's symbols (log_err, io_u_queued, ...) stay
# undefined here and resolve from the executable, so no -z defs.
$(BUILD)/engine/ernic.map:
	@mkdir -p $(dir $@)
	@printf '{\n\tglobal: ioengine;\n\tlocal: *;\n};\n' >$@

$(ENGINE_SO): $(ENGINE_OBJ) $(EMU_LIB) $(BUILD)/engine/ernic.map
	$(CC) -shared -o $@ $(ENGINE_OBJ) -Wl,--whole-archive $(EMU_LIB) -Wl,--no-whole-archive \
		-Wl,--version-script=$(BUILD)/engine/ernic.map $(EMU_LIBS) -luring

# The command layer alone (SQE, passthrough form, status, device names): no fio, no NVMe device needed.
ENGINE_CMD_UT := $(BUILD)/tests/engine_cmd_ut
$(ENGINE_CMD_UT): engine/tests/cmd_ut.c engine/ernic_cmd.h $(wildcard emulator/include/ernic/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(LDFLAGS_SAN) -Iemulator/include -Iemulator/tests -Iengine -o $@ $< -lcunit

test-more: test-engine
ifneq ($(FIO_BIN),)
test-engine: $(ENGINE_SO) $(ENGINE_CMD_UT)
	$(ENGINE_CMD_UT)
	engine/tests/run.sh $(ENGINE_SO)
else
test-engine: $(ENGINE_CMD_UT)
	$(ENGINE_CMD_UT)
	@echo "test-engine: fio is not installed, skipping the engine tests (install it with: ci/deps.sh engine)"
endif
