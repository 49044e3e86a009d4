# libernic, ernicd and their CUnit tests.

# The NVMe/RDMA port is built whenever rdma-core's headers are there (ci/deps.sh build installs them).
ERNIC_HAVE_RDMA := $(and $(wildcard /usr/include/rdma/rdma_cma.h),$(wildcard /usr/include/infiniband/verbs.h))
EMU_LIB_SRCS := $(filter-out $(if $(ERNIC_HAVE_RDMA),,emulator/src/transport_rdma.c),$(wildcard emulator/src/*.c))
EMU_LIB_OBJS := $(EMU_LIB_SRCS:emulator/src/%.c=$(BUILD)/emulator/%.o)
EMU_LIB      := $(BUILD)/libernic.a
EMU_LIBS     := -lisal -lpthread $(if $(ERNIC_HAVE_RDMA),-lrdmacm -libverbs)
CPPFLAGS     += $(if $(ERNIC_HAVE_RDMA),-DERNIC_HAVE_RDMA)
EMU_TESTS    := $(patsubst emulator/tests/%.c,$(BUILD)/tests/%,$(wildcard emulator/tests/*_ut.c))
ERNICD       := $(BUILD)/ernicd

all: $(EMU_LIB) $(EMU_TESTS) $(if $(wildcard emulator/ernicd/ernicd.c),$(ERNICD))

$(BUILD)/emulator/%.o: emulator/src/%.c $(wildcard emulator/src/*.h emulator/include/ernic/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -c -o $@ $<

$(EMU_LIB): $(EMU_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The daemon sees the public headers only: it is built as any user of libernic would be.
$(ERNICD): emulator/ernicd/ernicd.c $(wildcard emulator/include/ernic/*.h) $(EMU_LIB)
	$(CC) $(filter-out -Iemulator/src,$(CPPFLAGS)) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)

# Tests may include emulator/tests/ut.h (shared CUnit helpers) and any src header.
$(BUILD)/tests/%: emulator/tests/%.c $(wildcard emulator/tests/*.h) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iemulator/tests $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) -lcunit $(EMU_LIBS)

.PHONY: test-unit
test-unit: $(EMU_TESTS)
	@set -e; for t in $(EMU_TESTS); do echo "== $$t"; $$t; done

# The control socket's command line: the JSON string writer and reader are libernic's (src/json.h).
ERNICCTL := $(BUILD)/ernicctl
all: $(ERNICCTL)
$(ERNICCTL): emulator/ernicctl/ernicctl.c emulator/src/json.h $(EMU_LIB)
	$(CC) $(CPPFLAGS) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(EMU_LIB) $(LDFLAGS_SAN) $(EMU_LIBS)
