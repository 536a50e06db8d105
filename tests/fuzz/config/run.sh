#!/bin/sh
# Builds the config.json fuzzer (libFuzzer, AddressSanitizer with its leak check, UBSan) in
# build-fuzz/config and runs it for SECONDS (default 60) from the seeds in
# tests/fuzz/config/seeds. Exits non-zero when it finds a crash or a leak; the input that caused
# it is left in build-fuzz/config/ (crash-*, leak-*), the corpus in build-fuzz/config/corpus.
#   tests/fuzz/config/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/config
cc=${CC:-clang}
mkdir -p "$out/corpus"

"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/config/fuzz_config.c" "$src/oci-spec/config.c" "$src/oci-spec/seccomp.c" \
	"$src/oci-spec/spec.c" $(pkg-config --cflags --libs jansson libseccomp) \
	-o "$out/fuzz-config"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} exec "$out/fuzz-config" -max_total_time="$secs" \
	-max_len=65536 -detect_leaks=1 -artifact_prefix="$out/" -print_final_stats=1 \
	"$out/corpus" "$src/tests/fuzz/config/seeds"
