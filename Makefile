# husk: the two commands are `make run` and `make check` (see README.md).
# Everything is built with meson in build/ (warnings as errors) and, for the sanitizer run of the
# unit tests, build-asan/.

BUILD ?= build
ASAN_BUILD ?= build-asan
CMD ?= echo "hello from husk: $$(uname -sr) pid $$$$"; ls / | head -n 5
MESON_OPTS ?= -Dwerror=true

.PHONY: all deps build run check check-loaded check-programs format format-check fuzz soak bench clean

all: build

deps:
	./tools/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The main job: a shell command in a sandbox over the host's root (read-only).
run: build
	./$(BUILD)/husk do -- /bin/sh -c '$(CMD)'

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) $(MESON_OPTS) -Db_sanitize=address,undefined -Db_lundef=false \
		--buildtype=debug

# Every test: unit, conformance (native and in husk), integration; then the unit tests again
# under AddressSanitizer + UBSan. The last line is the summary of all of them, after one line per
# platform of the in-husk tests (MESON_OPTS='-Dwerror=true -Dtest_platforms=ptrace' at the first
# setup of $(BUILD) runs them on ptrace only).
# The sanitizer build compiles only what the unit tests need.
check: build $(ASAN_BUILD)/build.ninja
	@echo "== [$$(date -u +%H:%M:%S)] the sanitizer build of the unit tests"
	ninja -C $(ASAN_BUILD) $$(./tools/unit-targets.py $(ASAN_BUILD))
	./tools/check.sh $(BUILD) $(ASAN_BUILD)

# `make check` three times in a row beside `stress-ng --cpu 4` (issue 18; about an hour).
check-loaded: deps
	./tools/check-under-load.sh 3

# Real programs in husk (tests/programs: Chromium with its sandbox, ...), alone; `make check`
# runs them too.
check-programs: build
	meson test -C $(BUILD) --suite programs --print-errorlogs

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

format-check:
	git ls-files '*.c' '*.h' | xargs clang-format --dry-run -Werror

fuzz: build
	./tests/fuzz/gofer/run.sh 60
	./tests/fuzz/state/run.sh 60
	BUILD=$(BUILD) ./tests/fuzz/syscalls/run.sh 60
	BUILD=$(BUILD) SYSFUZZ_THREADS=4 ./tests/fuzz/syscalls/run.sh 60
	./tests/fuzz/elf/run.sh 60
	./tests/fuzz/config/run.sh 60
	./tests/fuzz/control/run.sh 60
	./tests/fuzz/goferclient/run.sh 60

# Churn and load (tests/soak/README.md), not part of `make check` (which runs a short version):
# SOAK_ROUNDS sandboxes created, run and deleted, then SOAK_SANDBOXES at once for SOAK_SECONDS,
# the load's sandboxes niced (the machine may be shared).
SOAK_ROUNDS ?= 1000
SOAK_SANDBOXES ?= 100
SOAK_SECONDS ?= 600
soak: build
	./tests/soak/soak.py --husk $(BUILD)/husk churn --rounds $(SOAK_ROUNDS)
	./tests/soak/soak.py --husk $(BUILD)/husk load --sandboxes $(SOAK_SANDBOXES) \
		--seconds $(SOAK_SECONDS) --nice 19

bench: build
	./bench/run

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
