#!/bin/sh
# Builds the gofer dispatcher fuzzer (libFuzzer, AddressSanitizer, UBSan) in build-fuzz/gofer
# and runs it for SECONDS (default 60). Exits non-zero when it finds a crash; the input that
# caused it is left in build-fuzz/gofer/ (crash-*), the corpus in build-fuzz/gofer/corpus.
#   tests/fuzz/gofer/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/gofer
cc=${CC:-clang}
mkdir -p "$out/corpus"

"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/gofer/fuzz_gofer.c" "$src/gofer/proto.c" "$src/gofer/server.c" \
	"$src/common/log.c" "$src/common/idmap.c" -o "$out/fuzz-gofer"

GOFER_FUZZ_SEEDS="$out/corpus" exec "$out/fuzz-gofer" -max_total_time="$secs" \
	-artifact_prefix="$out/" -print_final_stats=1 "$out/corpus"
