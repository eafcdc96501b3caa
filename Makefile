# sonde — build, test, benchmark.
#
#   make                      build for the python3 on PATH into build/
#   make PYTHON=/path/python  build for another interpreter
#   make demo                 build and profile the bundled example (terminal
#                             report, and build/demo.html)
#   make test                 build and test against every installed CPython
#   make bench                overhead benchmarks -> docs/PERFORMANCE.md
#   make format               clang-format the tree
#
# One build directory serves one interpreter: build/bin/sonde (the command),
# build/lib/sonde/ (the package with the extension module and _boot/, the
# sitecustomize hook through which `sonde run` starts profiling).

PYTHON ?= python3
BUILD  ?= build
CC     ?= gcc

PY_EXE      := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null)
PY_INCLUDE  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
EXT_SUFFIX  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)

ifeq ($(PY_EXE),)
$(error cannot run PYTHON=$(PYTHON); pass PYTHON=/path/to/python3.X)
endif

SONDE_DEBUG ?= 0
WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS   ?= -O2 -g
ALLFLAGS := -std=gnu11 -fPIC -fvisibility=hidden -D_GNU_SOURCE \
            -DSONDE_DEBUG=$(SONDE_DEBUG) $(WARN) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS   := -lpthread -lm -ldl

# Parts only the command links: `sonde view` checks JSON files with cJSON
# (Debian's libcjson-dev), which the extension and the core never load.
CMD_ONLY_SRCS := src/cli/view.c src/report/html_json.c
CMD_ONLY_OBJS := $(CMD_ONLY_SRCS:%.c=$(BUILD)/obj/%.o)
CMD_LDLIBS    := -lcjson
# The shared core: no libpython, linked into the extension and the command.
CORE_SRCS := $(sort $(filter-out $(CMD_ONLY_SRCS),$(wildcard src/core/*.c src/prim/*.c \
                 src/pyread/*.c src/sample/*.c src/model/*.c src/report/*.c src/launch/*.c)))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
# The command-line tool (a separate process; never loads libpython). Its
# code is also linked into the extension so that `python3 -m sonde ...`
# runs the same dispatcher; only entry.c (main) and CMD_ONLY_SRCS are the
# command's alone.
CLI_ENTRY := src/cli/entry.c
CLI_SRCS  := $(sort $(filter-out $(CLI_ENTRY) $(CMD_ONLY_SRCS),$(wildcard src/cli/*.c src/attach/*.c)))
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
# The extension module (inside the profiled interpreter).
EXT_SRCS  := $(sort $(wildcard src/ext/*.c src/trace/*.c))
EXT_OBJS  := $(EXT_SRCS:%.c=$(BUILD)/obj/%.o)
# The allocator shim, preloaded by `sonde run --memory`: links neither
# libpython nor the core, and exports only the hooked libc names and its
# sonde_shim_* entry points (tests/e2e/test_memory_shim.py checks).
SHIM_SRCS := $(sort $(wildcard src/shim/*.c))
SHIM_OBJS := $(SHIM_SRCS:%.c=$(BUILD)/obj/%.o)
SHIM_LIB  := $(BUILD)/lib/sonde/libsonde_shim.so
# C unit tests: tests/unit/test_*.c, each a program linked with the core.
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
# The stand-in libnvidia-ml.so.1 the GPU tests load through LD_LIBRARY_PATH
# (tests/gpu/fake_nvml.c).
FAKE_NVML := $(BUILD)/tests/fakenvml/libnvidia-ml.so.1

SONDE_BIN := $(BUILD)/bin/sonde
EXT_MOD   := $(BUILD)/lib/sonde/_sonde$(EXT_SUFFIX)
PY_FILES  := $(BUILD)/lib/sonde/__init__.py $(BUILD)/lib/sonde/__main__.py \
             $(BUILD)/lib/sonde/_boot/sitecustomize.py
VIEWER    := $(wildcard viewer/*.js viewer/*.css)
# The HTML report's viewer, read at run time from <package>/viewer/.
VIEWER_DIR := $(BUILD)/lib/sonde/viewer

.PHONY: all demo test unit bench format clean
all: $(SONDE_BIN) $(EXT_MOD) $(SHIM_LIB) $(PY_FILES) $(VIEWER_DIR)/.copied $(UNIT_BINS) $(BUILD)/tests/pyread_dump \
     $(BUILD)/python $(FAKE_NVML)

$(BUILD)/obj/src/ext/%.o $(BUILD)/obj/src/trace/%.o: EXTRA_INC = -I$(PY_INCLUDE)
# Hooks: static TLS, and no loop may be turned into a call to the memcpy
# or memset it implements or runs under.
$(BUILD)/obj/src/shim/%.o: EXTRA_INC = -ftls-model=initial-exec -fno-tree-loop-distribute-patterns

$(BUILD)/obj/%.o: %.c $(BUILD)/python
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) $(EXTRA_INC) -MMD -MP -c $< -o $@

# Records which interpreter this build directory belongs to; a change of
# PYTHON rebuilds everything.
$(BUILD)/python: FORCE
	@mkdir -p $(BUILD)
	@echo '$(PY_EXE)' | cmp -s - $@ || echo '$(PY_EXE)' > $@
FORCE:

$(BUILD)/obj/src/cli/%.o: EXTRA_INC = -DSONDE_DEFAULT_PYTHON='"$(PY_EXE)"'

$(SONDE_BIN): $(BUILD)/obj/src/cli/entry.o $(CMD_ONLY_OBJS) $(CLI_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -o $@ $^ $(LDLIBS) $(CMD_LDLIBS)

$(EXT_MOD): $(EXT_OBJS) $(CLI_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -shared -o $@ $^ $(LDLIBS)

$(SHIM_LIB): $(SHIM_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -shared -Wl,-z,defs -o $@ $^ -ldl -lpthread -lm

$(BUILD)/lib/sonde/%.py: sonde/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# Copied as a whole, since the HTML writer inlines every .js and .css it
# finds there; depending on the directory itself catches removed files.
$(VIEWER_DIR)/.copied: viewer $(VIEWER)
	rm -rf $(VIEWER_DIR)
	mkdir -p $(VIEWER_DIR)
	cp $(VIEWER) $(VIEWER_DIR)/
	@touch $@

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -Isrc -o $@ $< $(CORE_OBJS) $(LDLIBS)

# The stand-in NVML of the GPU tests: tests only, never installed.
$(FAKE_NVML): tests/gpu/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

# A test tool: prints every thread's Python stack of a live process.
$(BUILD)/tests/pyread_dump: tests/pyread/pyread_dump.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -Isrc -o $@ $< $(CORE_OBJS) $(LDLIBS)

unit: $(UNIT_BINS)

demo:
	@tools/setup-deps.sh
	@$(MAKE) --no-print-directory all
	$(SONDE_BIN) run examples/demo.py
	@# the same program as an HTML report: $(BUILD)/demo.html
	$(SONDE_BIN) run --html -o $(BUILD)/demo.html examples/demo.py

test:
	@tools/setup-deps.sh --test
	@$(PYTHON) tests/run.py

bench: all
	$(PYTHON) bench/run.py --write docs/PERFORMANCE.md
	$(PYTHON) bench/attach.py --build $(BUILD) --append docs/PERFORMANCE.md
	$(PYTHON) bench/trace.py --append docs/PERFORMANCE.md

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
