#!/bin/sh
# Builds the checkpoint image fuzzer (libFuzzer, AddressSanitizer, UBSan) in build-fuzz/state
# and runs it for SECONDS (default 60) from the seed images in tests/fuzz/state/seeds. Exits
# non-zero when it finds a crash; the input that caused it is left in build-fuzz/state/
# (crash-*), the corpus in build-fuzz/state/corpus.
#   tests/fuzz/state/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/state
cc=${CC:-clang}
mkdir -p "$out/corpus" "$out/gen/sentry/state"

# The image's messages, as meson makes them (sentry/state/meson.build).
protoc-c --proto_path="$src" --c_out="$out/gen" \
	"$src/sentry/state/image.proto" "$src/sentry/state/fs.proto" "$src/sentry/state/net.proto"

"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" -I"$out/gen" \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/state/fuzz_state.c" "$src/sentry/state/image.c" \
	"$src/sentry/state/validate.c" "$out/gen/sentry/state/image.pb-c.c" \
	"$out/gen/sentry/state/fs.pb-c.c" "$out/gen/sentry/state/net.pb-c.c" $(pkg-config --cflags --libs libprotobuf-c) \
	-o "$out/fuzz-state"

exec "$out/fuzz-state" -max_total_time="$secs" -max_len=65536 -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus" "$src/tests/fuzz/state/seeds"
