# osmeter - build the probes, run the suite, run the tests.
#   make          build every probe into build/bin
#   make run      set up .venv, build, run the quick suite, write results/ and the report
#   make report   the report of the newest results directory, with the PDF
#   make notebook the newest results' executed notebook, opened in Jupyter
#   make test     build, then every test (what CI runs); skips say why, counted by reason at the end
#   make mutants  small wrong programs (tests/mutants.py) that the tests must reject, every one
#   make mutants-ci  all but those marked slow; CI runs it after make test (whose quick run it
#                 reuses), within a few minutes
#   make fuzz     the parsers fuzzed under ASan and UBSan (FUZZ_SECONDS in all, default 60)
#   make clean    remove build/ (results/ and .venv/ stay)

CC      ?= cc
CFLAGS  ?= -O2
CFLAGS  += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -Ibench/common
LDFLAGS += -pthread
LDLIBS  += -lm

BUILD   := build
BIN     := $(BUILD)/bin
OBJ     := $(BUILD)/obj

COMMON_SRC := $(wildcard bench/common/*.c)
COMMON_OBJ := $(COMMON_SRC:bench/%.c=$(OBJ)/%.o)
COMMON_LIB := $(BUILD)/lib/libosmcommon.a

# One binary per probe source: bench/<area>/<name>.c -> build/bin/<area>_<name>,
# except the programs of parts: bench/iogen (build/bin/iogen), bench/iotrace
# (build/bin/iotrace, build/lib/libiotrace.so) and bench/vtimer.
PROBE_SRC  := $(filter-out bench/common/% bench/iogen/% bench/iotrace/% bench/net/netpeer.c bench/vtimer/%,$(wildcard bench/*/*.c))
VTIMER_LIB := $(BUILD)/lib/libvtimer.a
# iogen: its main (bench/iogen/iogen.c) over one folder per part (bench/iogen/README.md);
# every part's headers are found by name (-I each part)
IOGEN_PARTS := spec target engines measure options run output
IOGEN_INC  := $(addprefix -Ibench/iogen/,$(IOGEN_PARTS))
IOGEN_HDR  := $(wildcard $(IOGEN_PARTS:%=bench/iogen/%/*.h))
IOGEN_SRC  := $(wildcard $(IOGEN_PARTS:%=bench/iogen/%/*.c))
IOGEN_OBJ  := $(IOGEN_SRC:bench/%.c=$(OBJ)/%.o)
IOGEN_LIB  := $(BUILD)/lib/libiogen.a
PROBES     := $(foreach s,$(PROBE_SRC),$(BIN)/$(word 2,$(subst /, ,$(s)))_$(basename $(notdir $(s))))

TEST_SRC   := $(wildcard tests/c/*.c)
TEST_BINS  := $(TEST_SRC:tests/c/%.c=$(BUILD)/test/%)

PY ?= .venv/bin/python

.PHONY: all run test clean venv test-deps report fuzz notebook mutants mutants-ci
# iotrace: the command's main (bench/iotrace/iotrace.c) over its parts (bench/iotrace/README.md,
# lowest first): the trace format, what the command's parts share, a replay's preparation, the MPI
# launch, the POSIX recorder, the replayer, show, import, and the MPI-IO recorder and replayer
IOTRACE_PARTS := format base prepare launch posix replay show import mpiio
IOTRACE_INC := -Ibench/iotrace $(addprefix -Ibench/iotrace/,$(IOTRACE_PARTS))
IOTRACE_SRC := $(wildcard bench/iotrace/*.c $(IOTRACE_PARTS:%=bench/iotrace/%/*.c))
IOTRACE_HDR := $(wildcard bench/iotrace/*.h $(IOTRACE_PARTS:%=bench/iotrace/%/*.h))
IOTRACE_LIB_SRC := bench/iotrace/posix/preload.c bench/iotrace/format/trace.c
# the MPI-IO recorder (bench/iotrace/mpiio/mpi_record.c with the POSIX one), one build per MPI found
# (their ABIs differ), each by that MPI's own compiler wrapper; none where no MPI is installed
MPI_IMPLS := $(foreach m,openmpi mpich,$(if $(shell command -v mpicc.$(m) 2>/dev/null),$(m)))
MPI_REC_SRC := $(addprefix bench/iotrace/mpiio/,mpi_record.c mpi_record_large.c complete.c describe.c start.c)
# the MPI-IO replayer's parts (bench/iotrace/mpiio/replayer.h), an MPI program of its own
MPI_REPLAYER_SRC := $(addprefix bench/iotrace/mpiio/,mpi_replay.c rebuild.c watch.c report.c)
MPI_RECORDERS := $(MPI_IMPLS:%=$(BUILD)/lib/libiotrace-mpi-%.so) $(MPI_IMPLS:%=$(BIN)/iotrace-mpi-replay-%)

all: $(VTIMER_LIB) $(BUILD)/include/vtimer.h $(BIN)/cpu_vtimer $(BIN)/vtimer_example $(PROBES) $(BIN)/iogen $(BIN)/netpeer $(if $(IOTRACE_SRC),$(BIN)/iotrace $(BUILD)/lib/libiotrace.so $(MPI_RECORDERS)) $(TEST_BINS) $(BUILD)/buildinfo.json $(BUILD)/syscalls.tsv

$(OBJ)/%.o: bench/%.c $(wildcard bench/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(COMMON_LIB): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(OBJ)/iogen/%.o: bench/iogen/%.c $(wildcard bench/common/*.h) $(IOGEN_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(IOGEN_INC) -c -o $@ $<

$(IOGEN_LIB): $(IOGEN_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

# vtimer: a library for users (header in build/include), its example, and
# the probe that measures its cost
$(OBJ)/vtimer/vtimer.o: bench/vtimer/vtimer.c bench/vtimer/vtimer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(VTIMER_LIB): $(OBJ)/vtimer/vtimer.o
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/include/vtimer.h: bench/vtimer/vtimer.h
	@mkdir -p $(dir $@)
	cp $< $@

$(BIN)/cpu_vtimer: bench/vtimer/probe.c $(VTIMER_LIB) $(COMMON_LIB) $(wildcard bench/common/*.h) bench/vtimer/vtimer.h
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -Ibench/vtimer $(LDFLAGS) -o $@ $< $(VTIMER_LIB) $(COMMON_LIB) $(LDLIBS)

$(BIN)/vtimer_example: bench/vtimer/example.c $(VTIMER_LIB) bench/vtimer/vtimer.h
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -Ibench/vtimer $(LDFLAGS) -o $@ $< $(VTIMER_LIB) $(LDLIBS)

# iotrace: the command (record, replay, show) and the LD_PRELOAD recorder
# (position-independent, libc and libdl only: it runs inside other programs)
# (one object per source, build/obj/iotrace/<part>/<name>.o: the part order is checked on them)
IOTRACE_CMD_OBJ := $(patsubst bench/%.c,$(OBJ)/%.o,$(filter-out bench/iotrace/posix/preload.c $(MPI_REC_SRC) \
                   $(MPI_REPLAYER_SRC),$(IOTRACE_SRC)))
$(OBJ)/iotrace/%.o: bench/iotrace/%.c $(IOTRACE_HDR) $(wildcard bench/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(IOTRACE_INC) -c -o $@ $<

$(BIN)/iotrace: $(IOTRACE_CMD_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(IOTRACE_CMD_OBJ) $(COMMON_LIB) $(LDLIBS)

$(BUILD)/lib/libiotrace.so: $(IOTRACE_LIB_SRC) $(IOTRACE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(IOTRACE_INC) -fPIC -shared -o $@ $(IOTRACE_LIB_SRC) -ldl

$(BUILD)/lib/libiotrace-mpi-%.so: $(IOTRACE_LIB_SRC) $(MPI_REC_SRC) $(IOTRACE_HDR)
	@mkdir -p $(dir $@)
	mpicc.$* $(CFLAGS) $(IOTRACE_INC) -fPIC -shared -o $@ $(IOTRACE_LIB_SRC) $(MPI_REC_SRC) -ldl

# the MPI-IO replayer, an MPI program, one per MPI (iotrace replay --launcher starts it)
MPI_REPLAY_SRC := $(MPI_REPLAYER_SRC) bench/iotrace/format/trace.c bench/common/hist.c bench/common/json.c \
                  bench/common/confine.c bench/common/opts.c bench/common/msg.c
$(BIN)/iotrace-mpi-replay-%: $(MPI_REPLAY_SRC) $(IOTRACE_HDR) $(wildcard bench/common/*.h)
	@mkdir -p $(BIN)
	mpicc.$* $(CFLAGS) $(IOTRACE_INC) -o $@ $(MPI_REPLAY_SRC) -lm

$(BIN)/netpeer: bench/net/netpeer.c $(COMMON_LIB) $(wildcard bench/common/*.h)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(COMMON_LIB) $(LDLIBS)

$(BIN)/iogen: $(OBJ)/iogen/iogen.o $(IOGEN_LIB) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# a probe depends on the shared headers and on its own area's (bench/net/common_net.h): a pattern
# rule without a recipe would add nothing to these explicit rules
define probe_rule
$(BIN)/$(1)_$(2): bench/$(1)/$(2).c $(COMMON_LIB) $(wildcard bench/common/*.h bench/$(1)/*.h)
	@mkdir -p $(BIN)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$< $(COMMON_LIB) $$(LDLIBS)
endef
$(foreach s,$(PROBE_SRC),$(eval $(call probe_rule,$(word 2,$(subst /, ,$(s))),$(basename $(notdir $(s))))))

$(BUILD)/test/%: tests/c/%.c tests/c/check.h $(IOGEN_LIB) $(VTIMER_LIB) $(COMMON_LIB) $(wildcard bench/common/*.h bench/vtimer/*.h) $(IOGEN_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(IOGEN_INC) -Ibench/vtimer $(LDFLAGS) -o $@ $< $(IOGEN_LIB) $(VTIMER_LIB) $(COMMON_LIB) $(LDLIBS)

# System call numbers and names of the target (the C library's headers), for
# naming the raw system calls of a kernel-path trace (harness/osmeter/ktrace/kpaths.py).
$(BUILD)/syscalls.tsv: Makefile
	@mkdir -p $(BUILD)
	@$(CC) -dM -E -include sys/syscall.h -x c /dev/null | \
	  sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$$/\2\t\1/p' | sort -n > $@.tmp && mv $@.tmp $@

# What the probes were built with, for the run's conditions.
$(BUILD)/buildinfo.json: Makefile $(PROBES) $(BIN)/iogen
	@mkdir -p $(BUILD)
	@printf '{"cc": "%s", "cc_version": "%s", "cflags": "%s"}\n' \
	  "$(CC)" "$$($(CC) --version | head -n 1)" "$(CFLAGS)" > $@

venv:
	./osmeter --setup

run: all venv
	./osmeter run --preset quick

# the report (and PDF when LaTeX is there) of the newest results directory
report: venv
	./osmeter report "$$(ls -td results/*/ | head -n 1)"

notebook: venv
	./osmeter notebook

# PyDarshan (PyPI darshan), which iotrace import reads Darshan logs with: optional for osmeter (the import
# says how to get it), installed for the tests of the import; pyperf and junitparser, the clients the tests
# read the exports with (tests/test_analysis_export.py), pinned to the versions checked: never osmeter's own
test-deps: venv
	@$(PY) -c 'import darshan' 2>/dev/null || $(PY) -m pip install --quiet --disable-pip-version-check 'darshan>=3.4'
	@$(PY) -c 'import pyperf, junitparser' 2>/dev/null || \
		$(PY) -m pip install --quiet --disable-pip-version-check 'pyperf==2.11.0' 'junitparser==5.0.3'

# -rs: every skip's reason; --durations: the 30 slowest steps, where CI's time goes; the quick run
# the tests make is kept for make mutants
test: all venv test-deps
	OSMETER_TEST_QUICK_RUN_SAVE=$(BUILD)/quick-run $(PY) -m pytest -q -rs --durations=30 tests

mutants: all venv test-deps
	$(PY) tests/mutants.py

mutants-ci: all venv test-deps
	$(PY) tests/mutants.py --ci

FUZZ_SECONDS ?= 60
fuzz: all venv
	$(PY) tests/fuzz/run_fuzzers.py $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
