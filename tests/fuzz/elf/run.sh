#!/bin/sh
# Builds the ELF loader fuzzer (libFuzzer, AddressSanitizer, UBSan) in build-fuzz/elf and runs it
# for SECONDS (default 60) from the seeds in tests/fuzz/elf/seeds (real binaries and hand-made
# images). Exits non-zero when it finds a crash; the input that caused it is left in
# build-fuzz/elf/ (crash-*), the corpus in build-fuzz/elf/corpus.
#   tests/fuzz/elf/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/elf
cc=${CC:-clang}
mkdir -p "$out/corpus"

"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/elf/fuzz_elf.c" "$src/sentry/loader/load.c" "$src/sentry/loader/elf.c" \
	"$src/sentry/loader/shebang.c" "$src/sentry/loader/stack.c" -lpthread -o "$out/fuzz-elf"

exec "$out/fuzz-elf" -max_total_time="$secs" -max_len=1100000 -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus" "$src/tests/fuzz/elf/seeds"
