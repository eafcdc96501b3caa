# sonde — build, test, benchmark.
#
#   make                      build into build/, with the extension module for
#                             every CPython 3.8-3.15 found here (python3 first;
#                             tools/pythons.sh says which), side by side
#   make PYTHON=/path/python  build for that interpreter only (adding its module
#                             beside those already built)
#   make PYTHONS="a b"        build for these interpreters (paths or names)
#   make demo                 build what the demo needs and profile the bundled
#                             example (terminal report; its last line names the
#                             HTML report, build/demo.html)
#   make test                 build and test against every installed CPython:
#                             version-specific tests on each, version-independent
#                             ones on the oldest, /usr/bin/python3 and the newest
#                             (tests/run.py --all-versions: every test on each)
#   make stress               the stress suite (tests/stress/): hostile programs
#                             compared byte for byte with plain python, on the
#                             oldest interpreter, /usr/bin/python3 and the newest
#   make bench                overhead benchmarks -> docs/PERFORMANCE.md
#   make format               clang-format the tree
#   make format-check         list the files clang-format would change (fails if any)
#   make check-layers         the seams the compiler does not check: the OS only
#                             through src/prim/, core below prim below the rest
#                             (tools/check_layers.py; `make test` runs it first)
#   make install              install the command and the package (every
#                             interpreter's module) for packagers:
#                             $(DESTDIR)$(PREFIX)/bin/sonde and
#                             $(DESTDIR)$(PREFIX)/lib/sonde/sonde/ (PREFIX
#                             /usr/local); `make uninstall` removes both
#   make package              only what an install holds (the command, the
#                             modules, the shim, the Python files, the viewer);
#                             `pip install .` builds this for its interpreter
#                             (tools/sonde_backend.py)
#   make fuzz                 build the libFuzzer targets (tests/fuzz/, clang) into
#                             build/fuzz/ and run each for FUZZ_SECONDS over its corpus
#   make CC=clang             build with clang; WERROR=1 turns warnings into errors
#   make SAN=1 BUILD=build/asan
#                             build with AddressSanitizer and UBSan (every report
#                             fatal), the allocator shim excepted (see SAN below);
#                             `tests/run.py --sanitize` builds and tests so
#   make V=1                  show each command in full (by default one line per
#                             step: "CC src/x.c", "LD build/bin/sonde"; none with -s)
#
# One build directory serves every interpreter built for: build/bin/sonde
# (the command), build/lib/sonde/ (the package: one extension module per
# interpreter, _sonde.cpython-3XY-<arch>.so, which Python's import picks by
# name, and _boot/, the sitecustomize hook through which `sonde run` starts
# profiling). The objects of the core and the command use no Python header
# and are shared; each interpreter's extension objects sit in
# build/obj/<suffix>/. PYTHON is the first interpreter (the demo's).

PYTHON ?= python3
BUILD  ?= build
CC     ?= gcc

PY_EXE      := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null)
PY_INCLUDE  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
EXT_SUFFIX  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
# The extension's objects, per interpreter: build/obj/cpython-311-x86_64-linux-gnu/
EXT_TAG     := $(patsubst .%.so,%,$(EXT_SUFFIX))
# Its bytecode files' tag: __pycache__/NAME.cpython-311.pyc
PY_CACHE_TAG := $(shell $(PYTHON) -c 'import sys; print(sys.implementation.cache_tag or "")' 2>/dev/null)

ifeq ($(PY_EXE),)
$(error cannot run PYTHON=$(PYTHON); pass PYTHON=/path/to/python3.X)
endif

# Quiet steps: one line per step ("CC src/x.c") and the command itself
# hidden, unless V=1 (every command in full); `make -s` prints neither.
V ?= 0
ifeq ($(V),1)
Q    :=
step :=
else
Q    := @
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
step :=
else
step = @printf '%-4s %s\n' '$(1)' '$(2)';
endif
endif

SONDE_DEBUG ?= 0
# WERROR=1 turns every warning into an error (CI builds so, with gcc and clang).
WERROR   ?= 0
WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN     += -Werror
endif
CFLAGS   ?= -O2 -g
# SAN=1: AddressSanitizer and UBSan, every report fatal, in everything but
# the allocator shim. The shim is preloaded ahead of libasan and forwards to
# it (dlsym(RTLD_NEXT)); instrumented, its hooks would run ASan's checks
# inside malloc, before the runtime is initialised. It keeps frame pointers
# so that ASan's fast unwinder sees through it. tests/run.py --sanitize
# sets the environment such a build needs (LD_PRELOAD, ASAN_OPTIONS).
SAN      ?= 0
ifeq ($(SAN),1)
SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
# What each compile and link adds (the shim's own value below).
OBJ_SAN   = $(SAN_CFLAGS)
ALLFLAGS := -std=gnu11 -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections -D_GNU_SOURCE \
            -DSONDE_DEBUG=$(SONDE_DEBUG) $(WARN) $(CFLAGS) $(EXTRA_CFLAGS)
# gcc or clang (`make CC=clang`): the one flag they spell differently is the
# shim's "never turn a loop into a memcpy/memset call" (see SHIM_CFLAGS).
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -qi clang && echo 1)
LDLIBS   := -lpthread -lm -ldl

# Parts of the report writers only the command links: `sonde view` checks
# JSON files with cJSON (Debian's libcjson-dev), which the extension and the
# core never load (and reads JSON profiles back: json_load.c); the command
# gzips pprof with zlib (zlib1g-dev, src/cli/gzip.c), which the extension
# never links (it calls the interpreter's own zlib module, src/ext/gzip.c);
# `--period --upload` posts profiles with libcurl, which the command loads
# with dlopen only then (src/fleet/curl_load.c: linked, libcurl and its
# thirty libraries cost every start ~5 ms); the build needs its header
# (libcurl4-openssl-dev), the extension, the shim and the core never load
# it. The live view of `sonde top` and `sonde run --live` draws with
# ncurses (Debian's libncurses-dev; src/live/), in the command only.
# --as-needed: the command records no library it does not call.
CMD_ONLY_SRCS := src/report/html_json.c src/report/json_load.c
CMD_ONLY_OBJS := $(CMD_ONLY_SRCS:%.c=$(BUILD)/obj/%.o)
CMD_LDLIBS    := -lcjson -lz -lncursesw -ltinfo
CMD_LDFLAGS   := -Wl,--as-needed
# The tracer's writers (pstats file and cProfile's text) use no Python API:
# they are built with the core, without Python's headers, so unit tests
# link them.
TRACE_PURE_SRCS := src/trace/pstats_file.c src/trace/pstats_text.c src/trace/pstats_model.c
# The shared core: no libpython, linked into the extension and the command.
CORE_SRCS := $(sort $(filter-out $(CMD_ONLY_SRCS),$(wildcard src/core/*.c src/prim/*.c \
                 src/pyread/*.c src/sample/*.c src/model/*.c src/handover/*.c src/report/*.c \
                 src/launch/*.c)) $(TRACE_PURE_SRCS))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
# The command-line tool (a separate process; never loads libpython): the
# dispatcher and the attach reader. The extension links neither;
# `python3 -m sonde ...` execs this command (tests/e2e/test_module_symbols.py
# checks the module's symbols).
CLI_SRCS  := $(sort $(wildcard src/cli/*.c src/attach/*.c src/collect/*.c src/fleet/*.c \
                 src/live/*.c))
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
# The extension module (inside the profiled interpreter).
EXT_SRCS  := $(sort $(filter-out $(TRACE_PURE_SRCS),$(wildcard src/ext/*.c src/trace/*.c)))
EXT_OBJS  := $(EXT_SRCS:%.c=$(BUILD)/obj/$(EXT_TAG)/%.o)
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
# The package's Python files: every sonde/*.py and sonde/_boot/*.py.
PY_FILES  := $(patsubst %,$(BUILD)/lib/%,$(sort $(wildcard sonde/*.py sonde/_boot/*.py)))
VIEWER    := $(wildcard viewer/*.js viewer/*.css)
# The HTML report's viewer, read at run time from <package>/viewer/.
VIEWER_DIR := $(BUILD)/lib/sonde/viewer
# The bytecode of the two files every `sonde run` imports as it starts
# (_boot/sitecustomize.py, __init__.py), made for each interpreter built
# for: without it, an install Python may not write to, or a run with
# PYTHONDONTWRITEBYTECODE, compiles them at every start (~1.5 ms). Unchecked
# hashes: Python loads them without looking at the sources, which only make
# changes (and then makes these again).
BOOT_PYCS := $(if $(PY_CACHE_TAG),$(BUILD)/lib/sonde/__pycache__/__init__.$(PY_CACHE_TAG).pyc \
                 $(BUILD)/lib/sonde/_boot/__pycache__/sitecustomize.$(PY_CACHE_TAG).pyc)

.PHONY: all demo test stress unit bench format format-check check-layers clean fuzz fuzz-build \
        fuzz-seeds other-exts ext-module demo-deps package install uninstall
all: $(SONDE_BIN) $(EXT_MOD) $(BOOT_PYCS) $(SHIM_LIB) $(PY_FILES) $(VIEWER_DIR)/.copied $(UNIT_BINS) $(BUILD)/tests/pyread_dump \
     $(FAKE_NVML) $(BUILD)/python other-exts

# The other interpreters' modules: those of PYTHONS when given, else every
# one found unless PYTHON was given. One make each, with PYTHON set, once the
# shared objects exist. Discovery runs here, not when the Makefile is read,
# so that other targets do not pay for it.
ifneq ($(strip $(PYTHONS)),)
OTHER_PYTHONS_CMD := tools/pythons.sh $(PYTHONS)
else ifeq ($(origin PYTHON),file)
OTHER_PYTHONS_CMD := tools/pythons.sh
else
OTHER_PYTHONS_CMD := true
endif
other-exts: $(EXT_MOD) $(CORE_OBJS)
	@for p in $$($(OTHER_PYTHONS_CMD)); do \
	    s=$$("$$p" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null); \
	    [ -n "$$s" ] && [ "$$s" != '$(EXT_SUFFIX)' ] || continue; \
	    $(MAKE) --no-print-directory PYTHON="$$p" ext-module || exit 1; \
	done

ext-module: $(EXT_MOD) $(BOOT_PYCS)

$(BUILD)/obj/$(EXT_TAG)/%.o: EXTRA_INC = -I$(PY_INCLUDE)
# Hooks: static TLS, and no loop may be turned into a call to the memcpy
# or memset it implements or runs under.
ifeq ($(CC_IS_CLANG),1)
SHIM_NO_LOOP_CALLS := -fno-builtin-memcpy -fno-builtin-memmove -fno-builtin-memset
else
SHIM_NO_LOOP_CALLS := -fno-tree-loop-distribute-patterns
endif
$(BUILD)/obj/src/shim/%.o: EXTRA_INC = -ftls-model=initial-exec $(SHIM_NO_LOOP_CALLS)
# SAN=1 leaves the shim uninstrumented (see SAN above).
$(SHIM_LIB) $(SHIM_OBJS): OBJ_SAN = $(if $(SAN_CFLAGS),-fno-omit-frame-pointer)

$(BUILD)/obj/%.o: %.c $(BUILD)/compiler
	@mkdir -p $(dir $@)
	$(call step,CC,$<)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) $(EXTRA_INC) -MMD -MP -c $< -o $@

# An extension object: the interpreter's headers (its stamp: another
# interpreter with the same module suffix, or its headers moved, rebuilds).
$(BUILD)/obj/$(EXT_TAG)/%.o: %.c $(BUILD)/compiler $(BUILD)/obj/$(EXT_TAG)/python
	@mkdir -p $(dir $@)
	$(call step,CC,$< [$(EXT_TAG)])
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) $(EXTRA_INC) -MMD -MP -c $< -o $@

# The first interpreter (PYTHON), which the benchmarks run.
$(BUILD)/python: FORCE
	@mkdir -p $(BUILD)
	@echo '$(PY_EXE)' | cmp -s - $@ || echo '$(PY_EXE)' > $@

$(BUILD)/obj/$(EXT_TAG)/python: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PY_EXE) $(PY_INCLUDE)' | cmp -s - $@ || echo '$(PY_EXE) $(PY_INCLUDE)' > $@
# The same for the compiler and its flags (CC=clang, WERROR=1, CFLAGS, SAN=1).
$(BUILD)/compiler: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(ALLFLAGS)$(if $(SAN_CFLAGS), $(SAN_CFLAGS))' | cmp -s - $@ || \
	    echo '$(CC) $(ALLFLAGS)$(if $(SAN_CFLAGS), $(SAN_CFLAGS))' > $@
FORCE:

$(SONDE_BIN): $(CLI_OBJS) $(CMD_ONLY_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -o $@ $^ $(CMD_LDFLAGS) $(LDLIBS) $(CMD_LDLIBS)

# --gc-sections: the core parts only the command calls (another process's
# threads, the process tree) stay out of the module.
$(EXT_MOD): $(EXT_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -shared -Wl,--gc-sections -o $@ $^ $(LDLIBS)

$(SHIM_LIB): $(SHIM_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -shared -Wl,-z,defs -o $@ $^ -ldl -lpthread -lm

$(BUILD)/lib/sonde/%.py: sonde/%.py
	@mkdir -p $(dir $@)
	$(call step,CP,$@)
	$(Q)cp $< $@

# (the interpreter's stamp: another interpreter with the same tag remakes them)
BOOT_PYC_CMD = $(PY_EXE) -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], \
    doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)' $(abspath $<) $@
$(BUILD)/lib/sonde/__pycache__/%.$(PY_CACHE_TAG).pyc: $(BUILD)/lib/sonde/%.py $(BUILD)/obj/$(EXT_TAG)/python
	$(call step,PYC,$@)
	$(Q)$(BOOT_PYC_CMD)
$(BUILD)/lib/sonde/_boot/__pycache__/%.$(PY_CACHE_TAG).pyc: $(BUILD)/lib/sonde/_boot/%.py \
                                                           $(BUILD)/obj/$(EXT_TAG)/python
	$(call step,PYC,$@)
	$(Q)$(BOOT_PYC_CMD)

# Copied as a whole, since the HTML writer inlines every .js and .css it
# finds there; depending on the directory itself catches removed files.
$(VIEWER_DIR)/.copied: viewer $(VIEWER)
	$(call step,CP,$(VIEWER_DIR)/)
	$(Q)rm -rf $(VIEWER_DIR)
	$(Q)mkdir -p $(VIEWER_DIR)
	$(Q)cp $(VIEWER) $(VIEWER_DIR)/
	@touch $@

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJS) $(BUILD)/compiler
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) $(UNIT_EXTRA) -Isrc -o $@ $< $(CORE_OBJS) $(LDLIBS)
# The shim's test calls malloc/free/memcpy for their side effects on the
# hooks: the compiler must not drop an unused malloc/free pair or merge
# repeated copies (clang does, at -O2).
$(BUILD)/tests/test_shim: UNIT_EXTRA = -fno-builtin

# Unit tests of the command's pure parts (its option parsers) link the
# command's objects too (test_fleet: the fleet module).
CLI_UNIT_BINS := $(BUILD)/tests/test_attach_options $(BUILD)/tests/test_json_load \
                 $(BUILD)/tests/test_live_table \
                 $(BUILD)/tests/test_fleet
CLI_LIB_OBJS  := $(filter-out $(BUILD)/obj/src/cli/entry.o,$(CLI_OBJS)) $(CMD_ONLY_OBJS)
$(CLI_UNIT_BINS): $(BUILD)/tests/%: tests/unit/%.c $(CLI_LIB_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -Isrc -o $@ $< $(CLI_LIB_OBJS) $(CORE_OBJS) $(LDLIBS) $(CMD_LDLIBS)

# The stand-in NVML of the GPU tests: tests only, never installed.
$(FAKE_NVML): tests/gpu/fake_nvml.c
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

# A test tool: prints every thread's Python stack of a live process.
$(BUILD)/tests/pyread_dump: tests/pyread/pyread_dump.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -Isrc -o $@ $< $(CORE_OBJS) $(LDLIBS)

unit: $(UNIT_BINS)

# Fuzzing: one libFuzzer target per parser of outside input,
# tests/fuzz/fuzz_<name>.c, each linked with the command's objects and the
# core, all built by clang with ASan and UBSan (every report fatal) in
# their own build directory (build/fuzz/obj, targets in build/fuzz/bin).
# `make fuzz` builds them and runs each for FUZZ_SECONDS over its checked-in
# corpus (tests/fuzz/corpus/<name>/); it fails when a target crashes, leaks
# or breaks an invariant (tests/fuzz/run.py saves the input under
# build/fuzz/crashes/). The targets of the remote readers serve the
# platform calls that reach another process from their input: they link
# with -Wl,--wrap on them (FUZZ_LDFLAGS; tests/fuzz/fakeproc.h).
FUZZ_SECONDS ?= 10
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/bin/%)
FUZZ_WRAP_MEM  := -Wl,--wrap=sonde_prim_mem_read
FUZZ_WRAP_PROC := $(FUZZ_WRAP_MEM) -Wl,--wrap=sonde_prim_proc_open -Wl,--wrap=sonde_prim_proc_exe
$(BUILD)/bin/fuzz_pyread: FUZZ_LDFLAGS = $(FUZZ_WRAP_MEM)
$(BUILD)/bin/fuzz_pyread_open: FUZZ_LDFLAGS = $(FUZZ_WRAP_PROC)

fuzz:
	@$(MAKE) --no-print-directory -s -j2 BUILD=build/fuzz CC=clang \
	    EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SANITIZE)" fuzz-build
	$(PYTHON) tests/fuzz/run.py --bin build/fuzz/bin --seconds $(FUZZ_SECONDS)

fuzz-build: $(FUZZ_BINS)

# Rewrites the seeds that the targets build themselves (gen-* files: ELF
# files, well-formed interpreters of every version, a process to attach
# to, hand-over files); run after a layout change in
# src/pyread/pyoffsets_gen.h or a new version of the hand-over. The other
# files of those corpora (inputs that found a bug) stay.
FUZZ_SEEDED := elf pyread pyread_open handover
fuzz-seeds:
	@$(MAKE) --no-print-directory -s -j2 BUILD=build/fuzz CC=clang \
	    EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SANITIZE)" fuzz-build
	@for t in $(FUZZ_SEEDED); do \
	    mkdir -p tests/fuzz/corpus/$$t; rm -f tests/fuzz/corpus/$$t/gen-*; \
	    SONDE_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/$$t build/fuzz/bin/fuzz_$$t || exit 1; \
	done

$(FUZZ_BINS): $(BUILD)/bin/%: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(CLI_LIB_OBJS) $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(call step,LD,$@)
	$(Q)$(CC) $(ALLFLAGS) $(OBJ_SAN) -fsanitize=fuzzer -Isrc -o $@ $< $(CLI_LIB_OBJS) $(CORE_OBJS) \
	    $(FUZZ_LDFLAGS) $(LDLIBS) $(CMD_LDLIBS)

# What `sonde run` needs (the demo: no unit tests, test tools or shim).
DEMO_DEPS := $(SONDE_BIN) $(EXT_MOD) $(PY_FILES) $(VIEWER_DIR)/.copied

# (A recipe, even empty, keeps make from saying "is up to date" when it is.)
demo-deps: $(DEMO_DEPS)
	@:

# Builds what the demo needs, profiles examples/demo.py on the terminal,
# then writes the same program's HTML report (its output not shown again)
# and names it on the last line. The demo runs the interpreter it was
# built for (PYTHON), not whichever python3 comes first on PATH.
demo:
	@tools/setup-deps.sh
	@$(MAKE) --no-print-directory demo-deps
	@echo '$$ $(SONDE_BIN) run examples/demo.py'
	@SONDE_PYTHON='$(PY_EXE)' $(SONDE_BIN) run examples/demo.py
	@SONDE_PYTHON='$(PY_EXE)' $(SONDE_BIN) run --html -o $(BUILD)/demo.html examples/demo.py >/dev/null
	@echo 'demo: the HTML report is $(BUILD)/demo.html (open it in a browser)'


# What an installed sonde holds: the command, the extension module of every
# interpreter built for (as `all`), the allocator shim, the Python files and
# the viewer; no tests or test tools. The PEP 517 backend of `pip install .`
# (tools/sonde_backend.py) makes this with PYTHON=<its interpreter> PYTHONS=
# (that interpreter only) and packs the wheel from $(BUILD)/bin and
# $(BUILD)/lib/sonde.
package: $(SONDE_BIN) $(EXT_MOD) $(BOOT_PYCS) $(SHIM_LIB) $(PY_FILES) $(VIEWER_DIR)/.copied other-exts
	@:

# For packagers: the command in $(PREFIX)/bin and the package in
# $(PREFIX)/lib/sonde/sonde, where the command looks for it (src/cli/main.c)
# and which `PYTHONPATH=$(PREFIX)/lib/sonde python3 -m sonde` imports (the
# extra level keeps the rest of $(PREFIX)/lib off Python's path). A
# reinstall replaces the package directory as a whole, so no module of an
# interpreter no longer built stays behind.
PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL_BIN := $(DESTDIR)$(PREFIX)/bin
INSTALL_PKG := $(DESTDIR)$(PREFIX)/lib/sonde/sonde
install: package
	$(call step,INST,$(INSTALL_BIN)/sonde)
	$(Q)install -d $(INSTALL_BIN)
	$(Q)install -m 755 $(SONDE_BIN) $(INSTALL_BIN)/sonde
	$(call step,INST,$(INSTALL_PKG)/)
	$(Q)rm -rf $(INSTALL_PKG)
	$(Q)install -d $(INSTALL_PKG)/_boot $(INSTALL_PKG)/viewer $(INSTALL_PKG)/__pycache__ \
	    $(INSTALL_PKG)/_boot/__pycache__
	$(Q)install -m 755 $(wildcard $(BUILD)/lib/sonde/_sonde.*.so) $(SHIM_LIB) $(INSTALL_PKG)/
	$(Q)install -m 644 $(filter $(BUILD)/lib/sonde/%.py,$(filter-out %/_boot/sitecustomize.py,$(PY_FILES))) \
	    $(INSTALL_PKG)/
	$(Q)install -m 644 $(filter $(BUILD)/lib/sonde/_boot/%,$(PY_FILES)) $(INSTALL_PKG)/_boot/
	$(Q)install -m 644 $(wildcard $(BUILD)/lib/sonde/__pycache__/__init__.*.pyc) $(INSTALL_PKG)/__pycache__/
	$(Q)install -m 644 $(wildcard $(BUILD)/lib/sonde/_boot/__pycache__/sitecustomize.*.pyc) \
	    $(INSTALL_PKG)/_boot/__pycache__/
	$(Q)install -m 644 $(VIEWER:viewer/%=$(VIEWER_DIR)/%) $(INSTALL_PKG)/viewer/

uninstall:
	rm -f $(INSTALL_BIN)/sonde
	rm -rf $(INSTALL_PKG)
	rmdir $(DESTDIR)$(PREFIX)/lib/sonde 2>/dev/null || true

test: check-layers
	@tools/setup-deps.sh --test
	@$(PYTHON) tests/run.py

stress:
	@tools/setup-deps.sh --test
	@$(PYTHON) tests/stress/run.py $(if $(filter 1,$(WERROR)),--werror)

bench: all
	$(PYTHON) bench/run.py --write docs/PERFORMANCE.md
	$(PYTHON) bench/attach.py --build $(BUILD) --append docs/PERFORMANCE.md
	$(PYTHON) bench/live.py --build $(BUILD) --append docs/PERFORMANCE.md
	$(PYTHON) bench/trace.py --append docs/PERFORMANCE.md
	@# against 3.15's own sampling profiler, in the chroot (root only)
	@if tools/chroot.sh ensure; then \
	  tools/chroot.sh run 'make -s -j2 BUILD=build/bench-3.15 PYTHON=/usr/bin/python3.15 all >/dev/null && \
	    python3.15 bench/tachyon.py --build build/bench-3.15 --append docs/PERFORMANCE.md'; \
	  tools/chroot.sh umount; \
	else echo "bench: no chroot, so no comparison with 3.15's profiling.sampling"; fi

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# Fails, listing them, when a file outside src/prim/ calls the OS functions
# prim wraps or reads /proc, or a lower folder (core, prim) includes a higher
# one (docs/ARCHITECTURE.md, "Layers"). Under a second; its rules test
# themselves first.
check-layers:
	@$(PYTHON) tools/check_layers.py --self-test

# Fails, listing them, when files differ from what `make format` would write.
format-check:
	@bad=0; for f in $$(git ls-files '*.c' '*.h'); do \
	    clang-format "$$f" | cmp -s - "$$f" || { echo "$$f"; bad=1; }; \
	done; \
	if [ $$bad = 1 ]; then echo "these files differ from .clang-format; run 'make format'"; exit 1; fi

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
