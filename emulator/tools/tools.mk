# Tools that exercise a target from outside: built with the library, run by the lane (ci/lane/).
#
#   $(BUILD)/nvmf_tcp_load   NVMe/TCP connection, controller and discovery load (see its --help)

#   $(BUILD)/nvmf_rdma_sgl   the keyed SGL cases over real verbs (with rdma-core's headers only)
#   $(BUILD)/tcp_rtt         a bare request/response round trip over loopback TCP (see its --help)

LOAD_TOOL := $(BUILD)/nvmf_tcp_load
RDMA_SGL_TOOL := $(if $(ERNIC_HAVE_RDMA),$(BUILD)/nvmf_rdma_sgl)
RTT_TOOL := $(BUILD)/tcp_rtt

all: $(LOAD_TOOL) $(RDMA_SGL_TOOL) $(RTT_TOOL)

# No NVMe in it: libc only.
$(RTT_TOOL): emulator/tools/tcp_rtt.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(LDFLAGS_SAN)

.PHONY: test-tcp-rtt
test-more: test-tcp-rtt
test-tcp-rtt: $(RTT_TOOL)
	BUILD=$(BUILD) emulator/tools/test-tcp-rtt

# libernic only for its status names.
$(LOAD_TOOL): emulator/tools/nvmf_tcp_load.c $(wildcard emulator/include/ernic/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)

# The case table is the emulated engine's test's (emulator/tests/keyed_sgl_cases.h).
$(BUILD)/nvmf_rdma_sgl: emulator/tools/nvmf_rdma_sgl.c emulator/tests/keyed_sgl_cases.h $(wildcard emulator/include/ernic/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iemulator/tests $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)
