# Tools that exercise a target from outside: built with the library, run by the lane (ci/lane/).
#
#   $(BUILD)/nvmf_tcp_load   NVMe/TCP connection, controller and discovery load (see its --help)

LOAD_TOOL := $(BUILD)/nvmf_tcp_load

all: $(LOAD_TOOL)

# libernic only for its status names.
$(LOAD_TOOL): emulator/tools/nvmf_tcp_load.c $(wildcard emulator/include/ernic/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)
